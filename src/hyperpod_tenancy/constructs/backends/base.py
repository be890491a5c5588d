"""The fairness-backend protocol and what its hooks return."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from constructs import Construct

from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import Platform, Team
from hyperpod_tenancy.policy.changes import FairnessWording

__all__ = ["Backend", "ClusterFairness", "Manifest", "TeamFairness"]

#: A Kubernetes object as a plain dict (what the renderers return).
Manifest = dict[str, Any]


@dataclass(frozen=True)
class ClusterFairness:
    """What a backend built for the cluster.

    Attributes:
        ready: the construct team quotas, queues and charts must be created after.
        scheduling_policy: the cluster-wide scheduling policy resource, when the backend has one (Task
            Governance: the ``ClusterSchedulerConfig``). Default: none (Kueue keeps it in its configuration).

    """

    ready: Construct
    scheduling_policy: Construct | None = None


@dataclass(frozen=True)
class TeamFairness:
    """What a backend built for one team.

    Attributes:
        chart_after: the constructs the team chart is applied after.
        quota: the team's quota resource, when it is a resource of its own (Task Governance: the
            ``ComputeQuota``). Default: none (Kueue: the ClusterQueue is in the team chart).

    """

    chart_after: tuple[Construct, ...]
    quota: Construct | None = None


class Backend(Protocol):
    """A fairness backend: the scheduler that enforces quotas, lending and borrowing.

    One module per backend implements this protocol and registers an instance under its policy key
    (:func:`hyperpod_tenancy.constructs.backends.register`); the constructs call only these hooks.
    """

    @property
    def key(self) -> Hashable:
        """Registry key: the ``Platform.fairness_backend`` value this backend serves."""
        ...

    @property
    def policy_rule_codes(self) -> tuple[str, ...]:
        """Codes of the policy-layer rules (``policy/validation.py``) with checks specific to this backend."""
        ...

    @property
    def replacement_wording(self) -> FairnessWording:
        """How replacement warnings name the team objects this backend deletes with a team."""
        ...

    @property
    def creates_team_namespace(self) -> bool:
        """Whether the team chart creates the team's Namespace (else the backend provides it)."""
        ...

    def validate(self, platform: Platform) -> Sequence[PolicyIssue]:
        """Check the policy beyond ``policy/validation.py``; any issue returned stops synthesis."""
        ...

    def cluster_manifests(self, platform: Platform) -> list[Manifest]:
        """Cluster-scoped objects the backend adds to the platform chart."""
        ...

    def team_manifests(self, platform: Platform, team: Team) -> list[Manifest]:
        """Objects the backend adds to a team's chart (right after its Namespace)."""
        ...

    def build_cluster(
        self, scope: Construct, cluster: IHyperPodCluster, *, after: Construct
    ) -> ClusterFairness:
        """Create the cluster-level objects in ``scope`` (the cluster construct), after ``after``.

        Args:
            scope: where to create them (construct IDs are part of the logical IDs).
            cluster: the cluster being built.
            after: the HyperPod cluster resource; the backend's objects are created after it.

        """
        ...

    def build_team(self, scope: Construct, cluster: IHyperPodCluster, team: Team) -> TeamFairness:
        """Create a team's objects in ``scope`` (the tenant) and return what the team chart waits for."""
        ...
