"""The fairness-backend protocol and what its hooks return."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from constructs import Construct

from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import Platform, Team
from hyperpod_tenancy.policy.fairness import Fairness

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


class Backend(Fairness, abc.ABC):
    """A fairness backend: the scheduler that enforces quotas, lending and borrowing.

    One module per backend implements these hooks and registers an instance under its policy key
    (:func:`hyperpod_tenancy.constructs.backends.register`); the constructs call only these hooks. What the
    layers below ask of a backend (its key, its wording, whether the team chart creates the namespace...) is
    the jsii-free :class:`~hyperpod_tenancy.policy.fairness.Fairness` this class extends.
    """

    #: Codes of the policy rules whose checks this backend answers (``Fairness.*_problems``).
    policy_rule_codes: tuple[str, ...] = ()

    @abc.abstractmethod
    def validate(self, platform: Platform) -> Sequence[PolicyIssue]:
        """Check the policy beyond ``policy/validation.py``; any issue returned stops synthesis."""
        ...

    @abc.abstractmethod
    def cluster_manifests(self, platform: Platform) -> list[Manifest]:
        """Cluster-scoped objects the backend adds to the platform chart."""
        ...

    @abc.abstractmethod
    def team_manifests(self, platform: Platform, team: Team) -> list[Manifest]:
        """Objects the backend adds to a team's chart (right after its Namespace)."""
        ...

    @abc.abstractmethod
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

    @abc.abstractmethod
    def build_team(self, scope: Construct, cluster: IHyperPodCluster, team: Team) -> TeamFairness:
        """Create a team's objects in ``scope`` (the tenant) and return what the team chart waits for."""
        ...
