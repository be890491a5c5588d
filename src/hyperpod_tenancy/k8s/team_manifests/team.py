"""Every namespaced object of one team, in the order the team chart applies them."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_tenancy.k8s.team_manifests._common import DEFAULT_SERVICE_ACCOUNT, Manifest
from hyperpod_tenancy.k8s.team_manifests.network import _network_policies
from hyperpod_tenancy.k8s.team_manifests.quotas import _limit_range, _resource_quotas
from hyperpod_tenancy.k8s.team_manifests.rbac import (
    _namespace,
    _rbac,
    _service_account,
)
from hyperpod_tenancy.k8s.team_manifests.storage import FsxVolume, _team_fsx
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.model import (
    Platform,
    Team,
)

__all__ = ["team_manifests"]


def team_manifests(
    platform: Platform,
    team: Team,
    *,
    fsx: FsxVolume,
    service_account: str = DEFAULT_SERVICE_ACCOUNT,
    service_cidr: str | None = None,
    vpc_cidrs: Sequence[str] | None = None,
    include_namespace: bool | None = None,
) -> list[Manifest]:
    """Every Kubernetes object of ``team``, in apply order.

    Order: Namespace (``kueue`` backend only), ServiceAccount, Role, RoleBinding, ClusterRole,
    ClusterRoleBinding, NetworkPolicies ``default-deny``, ``allow-dns``, ``allow-same-namespace``,
    ``allow-internet-egress``, LimitRange ``container-defaults``, ResourceQuotas ``accelerator-ceiling`` and
    ``compute-ceiling`` (when the cluster's instance shapes are known) and ``no-system-priority``, PersistentVolume
    ``hyperpod-tenancy-fsx-<team>`` and PersistentVolumeClaim ``fsx``.

    With ``fairness_backend`` Task Governance the namespace is created by the service; apply
    :func:`namespace_label_patch` to it and apply these objects only after the team's ``ComputeQuota``.

    Args:
        platform: the tenancy policy.
        team: the team to render.
        fsx: the shared FSx for Lustre file system (values may be CDK tokens).
        service_account: name of the workloads' ServiceAccount; associate it with the team's S3 role
            through EKS Pod Identity. Default: :data:`DEFAULT_SERVICE_ACCOUNT`.
        service_cidr: the cluster's Kubernetes Service CIDR, excluded from internet egress so that no
            ClusterIP is reachable through it: other teams' Services, the API server's ``kubernetes``
            Service, the webhooks and metrics endpoints of Kueue and the operators. DNS stays reachable
            (``allow-dns`` admits the kube-dns pods by selector, which is what the kube-dns ClusterIP is
            translated to before policy applies). Default: the policy's ``cluster.service_cidr`` (what the
            cluster construct sets as the EKS ``serviceIpv4Cidr``). Used verbatim; may be a CDK token.
        vpc_cidrs: every IPv4 CIDR block of the cluster's VPC, excluded from internet egress (pods take VPC
            addresses). Default: the policy's ``cluster.vpc_cidr`` (the VPC the cluster construct creates).
        include_namespace: render the Namespace (the fairness backend's ``creates_team_namespace``). Default:
            as the platform's fairness backend says.

    Returns:
        Plain manifest dicts (``apiVersion``, ``kind``, ``metadata``...), valid for Kubernetes 1.33.

    """
    objects: list[Manifest] = []
    if include_namespace is None:
        include_namespace = fairness_of(platform).creates_team_namespace
    if include_namespace:
        objects.append(_namespace(platform, team))
    objects.append(_service_account(team, service_account))
    objects += _rbac(team)
    cidr = platform.cluster.service_cidr if service_cidr is None else service_cidr
    blocks = (platform.cluster.vpc_cidr,) if vpc_cidrs is None else tuple(vpc_cidrs)
    objects += _network_policies(platform, team, cidr, blocks)
    objects.append(_limit_range(team))
    objects += _resource_quotas(platform, team)
    objects += _team_fsx(platform, team, fsx)
    return objects
