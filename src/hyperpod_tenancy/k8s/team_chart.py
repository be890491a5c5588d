"""``TeamChart``: the namespaced Kubernetes (and Kueue) objects of one team."""

from __future__ import annotations

import cdk8s
from constructs import Construct

from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.kueue import team_objects
from hyperpod_tenancy.k8s.team_manifests import FsxVolume, fsx_directory_job, team_manifests
from hyperpod_tenancy.policy import FairnessBackend, Platform, Team

__all__ = ["TeamChart"]


class TeamChart(ManifestChart):
    """A team's namespaced objects, rendered from the policy.

    RBAC, default-deny NetworkPolicies, LimitRange, ResourceQuotas, ServiceAccount, the FSx directory job and PV/PVC; with the
    Kueue backend also its Namespace, ClusterQueue and LocalQueue.

    With Task Governance the service owns the namespace and the queues: the chart leaves them alone and must
    be applied after the team's ``ComputeQuota`` (``TeamTenant`` adds that dependency).

    Args:
        scope: a cdk8s App.
        id: chart ID.
        platform: the tenancy policy.
        team: the team to render.
        fsx: the shared file system (values may be CDK tokens).
        service_account: name of the workloads' ServiceAccount.
        service_cidr: the cluster's Service CIDR, kept out of team egress. Default: the policy's
            ``cluster.service_cidr``.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        team: Team,
        fsx: FsxVolume,
        service_account: str,
        service_cidr: str | None = None,
    ) -> None:
        manifests = team_manifests(
            platform, team, fsx=fsx, service_account=service_account, service_cidr=service_cidr
        )
        if platform.fairness_backend is FairnessBackend.KUEUE:
            # Namespace first (it is the first team manifest), then the queues that live in it.
            manifests = manifests[:1] + team_objects(platform, team) + manifests[1:]
        manifests += fsx_directory_job(platform, team, fsx=fsx)
        super().__init__(scope, id, manifests=manifests)
        #: The team the chart was rendered for.
        self.team = team

    @classmethod
    def build(
        cls,
        platform: Platform,
        team: Team,
        *,
        fsx: FsxVolume,
        service_account: str,
        service_cidr: str | None = None,
    ) -> TeamChart:
        """Render the chart in its own cdk8s App."""
        return cls(
            cdk8s.App(),
            team.name,
            platform=platform,
            team=team,
            fsx=fsx,
            service_account=service_account,
            service_cidr=service_cidr,
        )
