"""What every fairness backend tells the layers below the constructs: the jsii-free part of a backend."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass

from hyperpod_tenancy.policy.model import InstanceGroup, Platform

__all__ = ["Fairness", "FairnessWording", "Problem"]

#: A problem a backend finds in a policy: ``(path, message, fix)``; the rule that asked adds its code.
Problem = tuple[str, str, str]


@dataclass(frozen=True)
class FairnessWording:
    """How the replacement warnings name what a fairness backend deletes with a team.

    Attributes:
        team_objects_deleted: clause naming the team's fairness objects that are deleted with the team,
            e.g. ``"its AWS::SageMaker::ComputeQuota is deleted"``.
        rename_cause: why renaming a team replaces those objects (the createOnly property behind it).

    """

    team_objects_deleted: str
    rename_cause: str


class Fairness:
    """A fairness backend as the policy, the Kubernetes renderers and the tools see it (no jsii).

    Code outside the backend modules never asks which backend a platform has: it asks this object (through
    :func:`hyperpod_tenancy.policy.fairness.fairness_of`) what differs. The defaults describe a scheduler that
    needs nothing special; each backend overrides what it does differently. The CDK half of a backend
    (:class:`hyperpod_tenancy.constructs.backends.Backend`) extends this class.
    """

    #: Registry key: the ``Platform.fairness_backend`` value this backend serves.
    key: Hashable = ""
    #: How replacement warnings name the team objects this backend deletes with a team.
    replacement_wording: FairnessWording = FairnessWording(
        team_objects_deleted="its fairness objects are deleted",
        rename_cause="the team's fairness objects are keyed by the team name, so they are replaced",
    )
    #: Whether the team chart creates the team's Namespace (else the backend's service creates it).
    creates_team_namespace: bool = True
    #: Whether ``hyp create hyp-pytorch-job`` is admitted: the backend queues a HyperPodPyTorchJob as one workload.
    admits_hyp_pytorch_job: bool = True
    #: Admission message refusing a team-written kind the backend cannot queue as one workload (``{kind}``
    #: names it); ``None`` when the backend queues every kind it is given.
    unintegrated_kind_refusal: str | None = None
    #: Whether a job on a topology-aware type must ask for a topology while other types are not topology-aware
    #: (upstream Kueue 0.19: ``checkPodSetAndFlavorMatchForTAS``).
    needs_topology_request_beside_other_types: bool = False

    def resource_figure_problems(
        self, platform: Platform, index: int, group: InstanceGroup
    ) -> Iterator[Problem]:
        """Problems with the per-instance resource figures of one instance group (none by default)."""
        return iter(())

    def flavor_shape_problems(self, platform: Platform) -> Iterator[Problem]:
        """Problems with instance groups the backend's quota shapes cannot describe (none by default)."""
        return iter(())

    def region_problems(self, platform: Platform) -> Iterator[Problem]:
        """Warnings about the platform's Region (none by default)."""
        return iter(())

    def upgrade_problems(self, old: Platform, new: Platform) -> Iterator[Problem]:
        """Yield what upgrading the backend's own scheduler from ``old`` to ``new`` interrupts (none by default)."""
        return iter(())
