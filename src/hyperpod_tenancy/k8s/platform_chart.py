"""``PlatformChart``: the cluster-scoped Kubernetes objects of the platform."""

from __future__ import annotations

import cdk8s
from constructs import Construct

from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.kueue import cluster_objects
from hyperpod_tenancy.k8s.team_manifests import system_namespace
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.policy import FairnessBackend, Platform

__all__ = ["PlatformChart"]


class PlatformChart(ManifestChart):
    """Cluster-scoped objects of the platform.

    The platform's system namespace, the admission policies for team namespaces (workload labels and
    checkpoints, :mod:`~hyperpod_tenancy.k8s.admission`; Services and Secrets,
    :mod:`~hyperpod_tenancy.k8s.tenant_guards`); with the Kueue backend
    also the ResourceFlavors, the Cohort and the WorkloadPriorityClasses (Task Governance creates those itself).

    Args:
        scope: a cdk8s App (or another chart scope).
        id: chart ID.
        platform: the tenancy policy.

    """

    def __init__(self, scope: Construct, id: str, *, platform: Platform) -> None:
        manifests = [system_namespace(), *admission_policies(platform), *tenant_guard_policies()]
        if platform.fairness_backend is FairnessBackend.KUEUE:
            manifests += cluster_objects(platform)
        super().__init__(scope, id, manifests=manifests)
        #: The policy the chart was rendered from.
        self.platform = platform

    @classmethod
    def build(cls, platform: Platform) -> PlatformChart:
        """Render the chart in its own cdk8s App (what ``Cluster.add_cdk8s_chart`` expects)."""
        return cls(cdk8s.App(), "platform", platform=platform)
