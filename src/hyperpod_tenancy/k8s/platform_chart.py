"""``PlatformChart``: the cluster-scoped Kubernetes objects of the platform."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.fairness_objects import cluster_fairness_objects
from hyperpod_tenancy.k8s.operator_guards import operator_guard_policies
from hyperpod_tenancy.k8s.posix_identity import posix_identity_policies
from hyperpod_tenancy.k8s.team_manifests import system_namespace
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.policy import Platform, SupplementalGroupsPolicy

__all__ = ["PlatformChart"]


class PlatformChart(ManifestChart):
    """Cluster-scoped objects of the platform.

    The platform's system namespace, the admission policies for team namespaces (workload labels and
    checkpoints, :mod:`~hyperpod_tenancy.k8s.admission`; Services and Secrets,
    :mod:`~hyperpod_tenancy.k8s.tenant_guards`; the POSIX identity of pods, :mod:`~hyperpod_tenancy.k8s.posix_identity`), then the fairness backend's cluster-scoped objects (Kueue: the
    ResourceFlavors, the Cohort and the WorkloadPriorityClasses; Task Governance creates those itself).
    Exposed as ``SharedHyperPodCluster.platform_chart``; objects of a user's own go to its ``add_manifest``.

    Args:
        platform: the tenancy policy.
        fairness_objects: the fairness backend's cluster-scoped objects (``Backend.cluster_manifests``).
            Default: those of the built-in backends (Kueue's with the ``kueue`` backend, none otherwise).

    """

    def __init__(
        self,
        platform: Platform,
        *,
        fairness_objects: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        if fairness_objects is None:
            fairness_objects = cluster_fairness_objects(platform)
        manifests = [
            system_namespace(),
            *admission_policies(platform),
            *tenant_guard_policies(),
            *operator_guard_policies(),
            *posix_identity_policies(
                strict_groups=platform.cluster.posix_identity.supplemental_groups_policy
                is SupplementalGroupsPolicy.STRICT
            ),
        ]
        manifests += fairness_objects
        super().__init__("platform", manifests=manifests)
        #: The policy the chart was rendered from.
        self.platform: Platform = platform
