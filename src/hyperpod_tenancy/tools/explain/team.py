"""What ``explain`` knows of the team whose job it explains: from ``platform.yaml``, or from the cluster alone.

A team member may not have the platform's policy. Everything the diagnosis needs of the team is in
:class:`TeamFacts`, built by :func:`from_policy` (the policy: entitled classes, the queue as rendered, and the
``platform.yaml`` field behind each figure, for fixes that name it) or by :func:`from_cluster` (the namespace and
the team's ClusterQueue, which the team's Role lets a member read: the guarantee, the borrowing limit and whether
the team's higher classes preempt its lower ones). What the cluster does not tell a member (which priority
classes the team is entitled to: namespace labels, which a member cannot read) is left unknown, and no advice is
built on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, PreemptTeamTasks, Team
from hyperpod_tenancy.tools.explain.objects import ExplainInputError

__all__ = ["PolicyPlace", "TeamFacts", "from_cluster", "from_policy", "team_of_queue"]


@dataclass(frozen=True, kw_only=True)
class PolicyPlace:
    """The team in the policy: the loaded ``platform.yaml``, the team and its index under ``teams``."""

    platform: Platform
    team: Team
    index: int


@dataclass(frozen=True, kw_only=True)
class TeamFacts:
    """What the diagnosis knows of the team, whatever it was read from."""

    #: The team's name (its namespace without ``hyperpod-ns-``).
    name: str
    #: The WorkloadPriorityClasses the team may use, each with its value; ``None`` when not known.
    classes: Mapping[str, int] | None
    #: Whether the team's higher classes preempt its lower ones (``preemptTeamTasks``); ``None`` when not known.
    preempts_own_work: bool | None
    #: The team's ClusterQueue as the policy renders it (no status); ``None`` without the policy.
    policy_queue: dict[str, Any] | None
    #: Where the team is in ``platform.yaml``; ``None`` without the policy.
    policy: PolicyPlace | None

    def field(self, path: str) -> str:
        """Name the field ``teams[<i>].<path>`` of ``platform.yaml`` (without it: the team's ``<path>``) for a fix."""
        if self.policy is None:
            return f"the team's {path} in the platform's policy"
        return f"teams[{self.policy.index}].{path}"


def _class_values(platform: Platform, team: Team) -> dict[str, int]:
    return {
        (pc := platform.priority_class(c)).workload_priority_class: pc.weight
        for c in team.allowed_priority_classes
    }


def from_policy(platform: Platform, namespace: str) -> TeamFacts:
    """Return the facts of the team whose namespace is ``namespace``, from the policy.

    Raises:
        ExplainInputError: it is no team namespace of the policy.

    """
    from hyperpod_tenancy.errors import TenancyError  # noqa: PLC0415
    from hyperpod_tenancy.k8s.kueue import team_objects  # noqa: PLC0415

    for index, team in enumerate(platform.teams):
        if names.namespace(team.name) != namespace:
            continue
        try:
            # both backends give the team these numbers (Task Governance's ComputeQuota and the Kueue rendering
            # express the same policy, flavors named by instance type)
            rendered: dict[str, Any] | None = next(
                (o for o in team_objects(platform, team) if o.get("kind") == "ClusterQueue"), None
            )
        except TenancyError:  # a team not hosted here
            rendered = None
        return TeamFacts(
            name=team.name,
            classes=_class_values(platform, team),
            preempts_own_work=team.compute.preempt_team_tasks is PreemptTeamTasks.LOWER_PRIORITY,
            policy_queue=rendered,
            policy=PolicyPlace(platform=platform, team=team, index=index),
        )
    known = ", ".join(names.namespace(t.name) for t in platform.teams)
    raise ExplainInputError(
        f"namespace {namespace} is not a team namespace of this platform.yaml (teams: {known})"
    )


def from_cluster(namespace: str, cluster_queue: Mapping[str, Any] | None) -> TeamFacts:
    """Return the facts of the team of ``namespace`` from what a member reads: its name and ClusterQueue.

    Raises:
        ExplainInputError: ``namespace`` is not a team namespace (``hyperpod-ns-<team>``).

    """
    team = namespace.removeprefix(names.NAMESPACE_PREFIX)
    if team == namespace or not team:
        raise ExplainInputError(
            f"namespace {namespace} is not a team namespace ({names.namespace('<team>')}); pass -n with yours"
        )
    within = (((cluster_queue or {}).get("spec") or {}).get("preemption") or {}).get("withinClusterQueue")
    return TeamFacts(
        name=team,
        classes=None,
        preempts_own_work=None if within is None else within == "LowerPriority",
        policy_queue=None,
        policy=None,
    )


def team_of_queue(cluster_queue: str) -> str | None:
    """Return the team whose ClusterQueue is ``cluster_queue`` (the naming contract), or ``None``."""
    team = cluster_queue.removeprefix(names.NAMESPACE_PREFIX).removesuffix(names.CLUSTER_QUEUE_SUFFIX)
    return team if names.cluster_queue(team) == cluster_queue and team else None
