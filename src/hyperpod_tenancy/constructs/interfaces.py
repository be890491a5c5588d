"""``IHyperPodCluster``: what a tenant, a chargeback pipeline or a webhook needs from the shared cluster.

In the spirit of aws-eks-v2's ``ICluster``: constructs take this interface, never the concrete
:class:`~hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster.SharedHyperPodCluster`, so they work on a cluster
created in the same app and on one imported with ``SharedHyperPodCluster.from_attributes`` (another app or
account), and no construct module imports the cluster module.
"""

from __future__ import annotations

from typing import Protocol

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_tenancy.constructs.encryption import PlatformKey
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.policy.plan import TenancyPlan

__all__ = ["IHyperPodCluster"]


class IHyperPodCluster(Protocol):
    """A SageMaker HyperPod cluster on EKS that teams share (created here or imported)."""

    @property
    def platform(self) -> Platform:
        """The tenancy policy the cluster was built from."""
        ...

    @property
    def plan(self) -> TenancyPlan:
        """The policy resolved once: every team's names, quotas and classes, the cluster's shapes and backend."""
        ...

    @property
    def kubernetes(self) -> eks.ICluster:
        """The EKS cluster, as the ``ICluster`` that Kubernetes manifests, patches and charts take."""
        ...

    @property
    def eks_cluster_name(self) -> str:
        """Name of the EKS cluster (access entries, Pod Identity associations, add-ons)."""
        ...

    @property
    def eks_cluster_arn(self) -> str:
        """ARN of the EKS cluster."""
        ...

    @property
    def hyperpod_cluster_arn(self) -> str:
        """ARN of the HyperPod cluster (compute quotas, describe permissions)."""
        ...

    @property
    def vpc(self) -> ec2.IVpc:
        """VPC of the cluster (private subnets with egress in the platform's zones)."""
        ...

    @property
    def data_bucket(self) -> s3.IBucket:
        """Shared bucket of team data under ``teams/<team>/``."""
        ...

    @property
    def file_system_id(self) -> str:
        """ID of the shared FSx for Lustre file system."""
        ...

    @property
    def file_system_dns_name(self) -> str:
        """DNS name of the shared FSx for Lustre file system."""
        ...

    @property
    def file_system_mount_name(self) -> str:
        """Lustre mount name of the shared file system."""
        ...

    @property
    def service_cidr(self) -> str:
        """The EKS Service CIDR (ClusterIPs), kept out of team egress."""
        ...

    @property
    def vpc_cidr_blocks(self) -> tuple[str, ...]:
        """Every IPv4 CIDR block of the cluster's VPC, secondary blocks included (excluded from team egress)."""
        ...

    @property
    def network_policy_enforced(self) -> bool:
        """Whether the cluster's CNI enforces NetworkPolicy."""
        ...

    @property
    def fairness_ready(self) -> Construct | None:
        """What team quotas and queues must be created after (``None`` on an imported cluster: it exists)."""
        ...

    @property
    def platform_chart_manifest(self) -> Construct | None:
        """The platform chart team charts are applied after (``None`` on an imported cluster: it is applied)."""
        ...

    @property
    def platform_key(self) -> PlatformKey | None:
        """The platform's customer-managed key (``encryption.kmsKey``; ``None``: AWS-managed keys)."""
        ...

    @property
    def sso_role_service_token(self) -> str:
        """Service token of the provider that resolves the teams' Identity Center roles (one for all teams).

        Created on first use, beside the cluster (its stack), unless an imported cluster was given one.
        """
        ...

    @property
    def api_client_security_group_id(self) -> str | None:
        """The security group whose members may reach the private EKS API endpoint (TCP 443).

        Tenants put their Studio apps in it instead of adding a rule per team to the endpoint's group (whose
        inbound rules are limited, 60 by default). ``None`` for an imported cluster without one: tenants then
        call :meth:`allow_api_access_from`.
        """
        ...

    def allow_api_access_from(self, scope: Construct, id: str, *, peer: ec2.ISecurityGroup) -> None:
        """Admit ``peer`` to the private EKS API endpoint (TCP 443), with the rule created in ``scope``."""
        ...

    def allow_api_access_from_cidr(
        self, scope: Construct, id: str, *, cidr: str
    ) -> ec2.CfnSecurityGroupIngress:
        """Admit the IPv4 block ``cidr`` (a peered VPC) to the private EKS API endpoint (TCP 443), in ``scope``."""
        ...
