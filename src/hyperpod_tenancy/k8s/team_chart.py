"""``TeamChart``: the namespaced Kubernetes (and fairness-backend) objects of one team."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s._manifest_chart import ManifestChart
from hyperpod_tenancy.k8s.fairness_objects import team_fairness_objects
from hyperpod_tenancy.k8s.team_manifests import (
    FsxVolume,
    checkpoint_scanner,
    fsx_directory_job,
    team_manifests,
)
from hyperpod_tenancy.policy import Platform, Team
from hyperpod_tenancy.policy.fairness import fairness_of

__all__ = ["TeamChart"]


class TeamChart(ManifestChart):
    """A team's namespaced objects, rendered from the policy.

    RBAC, default-deny NetworkPolicies, LimitRange, ResourceQuotas, ServiceAccount, the FSx directory job and
    PV/PVC, the checkpoint scanner (a CronJob in the platform namespace and its Role on the team's Workloads:
    :func:`~hyperpod_tenancy.k8s.team_manifests.checkpoint_scanner`); the fairness backend's objects right after the Namespace (Kueue: the Namespace, ClusterQueue and
    LocalQueue).

    With Task Governance the service owns the namespace and the queues: the chart leaves them alone and must
    be applied after the team's ``ComputeQuota`` (``TeamTenant`` adds that dependency).

    ``TeamTenant`` applies the chart as one ``eks.KubernetesManifest`` and exposes it as ``TeamTenant.chart``;
    objects of a user's own go to ``TeamTenant.add_manifest``, not into the chart.

    Args:
        platform: the tenancy policy.
        team: the team to render.
        fsx: the shared file system (values may be CDK tokens).
        service_account: name of the workloads' ServiceAccount.
        service_cidr: the cluster's Service CIDR, kept out of team egress. Default: the policy's
            ``cluster.service_cidr``.
        vpc_cidrs: every IPv4 CIDR block of the cluster's VPC, kept out of team egress. Default: the policy's
            ``cluster.vpc_cidr``.
        fairness_objects: the fairness backend's objects of the team (``Backend.team_manifests``). Default:
            those of the built-in backends (the Kueue queues with the ``kueue`` backend, none otherwise).
        include_namespace: render the team's Namespace (``Backend.creates_team_namespace``). Default: as the
            platform's fairness backend says.

    """

    def __init__(
        self,
        platform: Platform,
        team: Team,
        *,
        fsx: FsxVolume,
        service_account: str,
        service_cidr: str | None = None,
        vpc_cidrs: Sequence[str] | None = None,
        fairness_objects: Sequence[dict[str, Any]] | None = None,
        include_namespace: bool | None = None,
    ) -> None:
        if fairness_objects is None:
            fairness_objects = team_fairness_objects(platform, team)
        if include_namespace is None:
            include_namespace = fairness_of(platform).creates_team_namespace
        manifests = team_manifests(
            platform,
            team,
            fsx=fsx,
            service_account=service_account,
            service_cidr=service_cidr,
            vpc_cidrs=vpc_cidrs,
            include_namespace=include_namespace,
        )
        # Namespace first (when the chart renders it), then the backend's objects that live in it.
        head = 1 if include_namespace else 0
        manifests = manifests[:head] + list(fairness_objects) + manifests[head:]
        manifests += fsx_directory_job(platform, team, fsx=fsx)
        manifests += checkpoint_scanner(team)
        super().__init__(team.name, manifests=manifests)
        #: The team the chart was rendered for.
        self.team: Team = team
