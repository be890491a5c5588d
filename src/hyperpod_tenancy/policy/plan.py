"""The tenancy plan: a policy resolved once, with every fact the stacks, charts, tools and chargeback derive.

:meth:`TenancyPlan.resolve` validates a policy (every rule, as ``load_platform`` does for a file) and derives,
once, what the rest of the library reads: per cluster the resources of one instance of each type, the
instances kept in reserve, the GPUs of one instance, the fairness backend object and the chargeback
configuration; per hosted team its namespace, queues, Kubernetes group, permission set, cost center, the
priority classes it may use and its guarantee in instances and in GPUs.

A user's app changes the plan in code with :meth:`TenancyPlan.with_team` and :meth:`TenancyPlan.without_team`;
each returns a new plan whose policy passed every rule again, so a team added in code is held to what a team
written in ``platform.yaml`` is.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from hyperpod_tenancy.chargeback.model import ChargebackConfig
from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.chargeback import chargeback_config, gpus_per_instance, team_borrows
from hyperpod_tenancy.policy.fairness import Fairness, fairness_of, registered_keys
from hyperpod_tenancy.policy.grains import guaranteed, instances_by_type
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import Platform, PriorityClass, ResourceShape, Team
from hyperpod_tenancy.policy.validation import ensure_valid

__all__ = ["ClusterPlan", "TeamPlan", "TenancyPlan"]


@dataclass(frozen=True, kw_only=True)
class ClusterPlan:
    """The shared cluster, resolved."""

    #: The cluster's name.
    name: str
    #: Resources of one instance, per instance type (the groups' ``resources`` or the built-in catalogue).
    shapes: Mapping[str, ResourceShape]
    #: Instances outside every quota, per instance type (the groups' ``reserved`` summed).
    reserved: Mapping[str, int]
    #: Instances teams may be promised, per instance type (``count - reserved`` summed over its groups).
    promisable: Mapping[str, int]
    #: Accelerators of one instance, per instance type that has any.
    gpus_per_instance: Mapping[str, int]
    #: The fairness backend: ask it what differs, never which backend it is.
    fairness: Fairness


@dataclass(frozen=True, kw_only=True)
class TeamPlan:
    """One hosted team, resolved."""

    #: The team as the policy states it.
    team: Team
    #: Its namespace (``hyperpod-ns-<team>``).
    namespace: str
    #: Its ClusterQueue and LocalQueue.
    cluster_queue: str
    local_queue: str
    #: The Kubernetes group its members are mapped to.
    kubernetes_group: str
    #: Its Identity Center permission set.
    permission_set: str
    #: The cost center it is billed to.
    cost_center: str
    #: The priority classes it may use, highest weight first.
    classes: tuple[PriorityClass, ...]
    #: Its guarantee of accelerators per instance type, in instances (a fraction where its quota is an amount).
    quotas: Mapping[str, int | Fraction]
    #: Its guarantee in GPUs, per instance type with accelerators.
    guaranteed_gpus: Mapping[str, int]
    #: Whether it may borrow idle capacity (its sharing in force is ``lend-and-borrow``).
    borrows: bool
    #: Its stack's construct ID under ``PlatformStage`` (``Team-<PascalCase>``).
    stack_id: str

    @property
    def name(self) -> str:
        """The team's name."""
        return self.team.name


@dataclass(frozen=True, kw_only=True)
class TenancyPlan:
    """A validated policy and everything derived from it (see the module docstring)."""

    #: The policy, as validated.
    platform: Platform
    #: The shared cluster.
    cluster: ClusterPlan
    #: The teams the cluster hosts, in the policy's order.
    teams: tuple[TeamPlan, ...]
    #: The chargeback configuration, when the policy has a ``chargeback:`` section.
    chargeback: ChargebackConfig | None

    @classmethod
    def resolve(cls, platform: Platform, *, where: str = "TenancyPlan.resolve") -> TenancyPlan:
        """Validate ``platform`` and derive the plan, once per policy object while its plan is in use.

        The stage, the cluster, its tenants and the chargeback pipeline built from one policy object share one
        plan: resolving it again returns the same plan.

        Args:
            platform: the policy.
            where: what is resolving it, named in the error.

        Raises:
            PolicyError: every problem of the policy, listed together.

        """
        known = _PLANS.get(id(platform))
        plan = known() if known is not None else None
        if plan is not None and plan.platform is platform:
            return plan
        ensure_valid(platform, where=where, registered_backends=registered_keys())
        gpus = gpus_per_instance(platform)
        cluster = ClusterPlan(
            name=platform.cluster.name,
            shapes=_shapes(platform),
            reserved=_summed(platform, reserved=True),
            promisable=_summed(platform, reserved=False),
            gpus_per_instance=gpus,
            fairness=fairness_of(platform),
        )
        teams = tuple(_team_plan(platform, t, gpus) for t in platform.hosted_teams)
        config = chargeback_config(platform) if platform.chargeback is not None else None
        plan = cls(platform=platform, cluster=cluster, teams=teams, chargeback=config)
        key = id(platform)
        _PLANS[key] = weakref.ref(plan, lambda _ref: _PLANS.pop(key, None))
        return plan

    def team(self, name: str) -> TeamPlan:
        """Return the hosted team called ``name``.

        Raises:
            KeyError: no hosted team has that name.

        """
        return self._by_name[name]

    @functools.cached_property
    def _by_name(self) -> dict[str, TeamPlan]:
        return {plan.name: plan for plan in self.teams}

    def with_team(self, team: Team) -> TenancyPlan:
        """Return the plan with ``team`` added, or replacing the team of its name; every rule runs on the result.

        Raises:
            PolicyError: the changed policy breaks a rule (a quota above what the cluster can promise, a GID
                already taken...), naming the team's fields.

        """
        teams = [t for t in self.platform.teams if t.name != team.name]
        index = next((i for i, t in enumerate(self.platform.teams) if t.name == team.name), len(teams))
        teams.insert(index, team)
        return TenancyPlan.resolve(
            dataclasses.replace(self.platform, teams=tuple(teams)),
            where=f"TenancyPlan.with_team({team.name!r})",
        )

    def without_team(self, name: str) -> TenancyPlan:
        """Return the plan without the team called ``name``.

        Raises:
            PolicyError: no team has that name, or the policy without it breaks a rule.

        """
        if all(t.name != name for t in self.platform.teams):
            known = ", ".join(t.name for t in self.platform.teams)
            raise PolicyError(
                [
                    PolicyIssue(
                        "teams",
                        f"no team is called {name!r} (teams: {known}).",
                        "name a team of the policy.",
                        "HPT-TEAM-SELECTION",
                    )
                ],
                source="TenancyPlan.without_team",
            )
        return TenancyPlan.resolve(
            dataclasses.replace(self.platform, teams=tuple(t for t in self.platform.teams if t.name != name))
        )


#: The plan resolved for each policy object still in use, by the object's ``id`` (checked with ``is``).
_PLANS: dict[int, weakref.ref[TenancyPlan]] = {}


def _shapes(platform: Platform) -> dict[str, ResourceShape]:
    shapes: dict[str, ResourceShape] = {}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None:
            shapes.setdefault(group.instance_type, shape)
    return shapes


def _summed(platform: Platform, *, reserved: bool) -> dict[str, int]:
    totals: dict[str, int] = {}
    for group in platform.cluster.instance_groups:
        value = group.reserved if reserved else group.quota_capacity
        totals[group.instance_type] = totals.get(group.instance_type, 0) + value
    return totals


def _team_plan(platform: Platform, team: Team, gpus: Mapping[str, int]) -> TeamPlan:
    classes = sorted(
        (platform.priority_class(name) for name in team.allowed_priority_classes), key=lambda pc: -pc.weight
    )
    return TeamPlan(
        team=team,
        namespace=names.namespace(team.name),
        cluster_queue=names.cluster_queue(team.name),
        local_queue=names.local_queue(team.name),
        kubernetes_group=names.kubernetes_group(team.name),
        permission_set=team.permission_set,
        cost_center=team.effective_cost_center,
        classes=tuple(classes),
        quotas=instances_by_type(platform, team),
        guaranteed_gpus={t: guaranteed(platform, team, t, gpus[t]) for t in team.compute.quotas if t in gpus},
        borrows=team_borrows(platform, team),
        stack_id=names.team_stack_id(team.name),
    )
