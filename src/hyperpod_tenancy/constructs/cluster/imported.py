"""A HyperPod/EKS cluster deployed by another app or account, imported by its attributes to add tenants to it."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_tenancy.constructs._private.sso_role_provider import SsoRoleProvider
from hyperpod_tenancy.constructs.cluster.network import (
    admit_cidr_to_api_endpoint,
    admit_to_api_endpoint,
)
from hyperpod_tenancy.constructs.encryption import PlatformKey
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.policy.plan import TenancyPlan

__all__ = ["ImportedHyperPodCluster", "import_cluster"]


class ImportedHyperPodCluster(Construct):
    """An existing HyperPod/EKS cluster, imported by :meth:`SharedHyperPodCluster.from_attributes`."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        eks_cluster_name: str,
        kubectl_provider_service_token: str,
        kubectl_role_arn: str | None,
        cluster_security_group_id: str | None,
        hyperpod_cluster_arn: str,
        vpc_id: str,
        private_subnet_ids: Sequence[str],
        api_endpoint_security_group_id: str,
        data_bucket_name: str,
        file_system_id: str,
        file_system_dns_name: str,
        file_system_mount_name: str,
        network_policy_enforced: bool,
        service_cidr: str,
        sso_role_service_token: str | None,
        kms_key_arn: str | None,
        api_client_security_group_id: str | None = None,
        vpc_cidr_blocks: Sequence[str] | None = None,
        private_subnet_route_table_ids: Sequence[str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        #: The policy resolved (:class:`~hyperpod_tenancy.policy.plan.TenancyPlan`): what tenants read.
        self.plan: TenancyPlan = TenancyPlan.resolve(platform, where=self.node.path)
        self._sso_role_service_token = sso_role_service_token
        #: Every IPv4 CIDR block of the cluster's VPC (excluded from team egress).
        self.vpc_cidr_blocks: tuple[str, ...] = tuple(vpc_cidr_blocks or (platform.cluster.vpc_cidr,))
        #: The cluster's API client security group (``None``: tenants add a rule to the endpoint group each).
        self.api_client_security_group_id: str | None = api_client_security_group_id
        #: The platform's customer-managed key (``None`` without ``encryption.kmsKey``).
        self.platform_key: PlatformKey | None = (
            PlatformKey(self, "PlatformKey", platform=platform, key_arn=kms_key_arn, imported_cluster=True)
            if platform.encryption.kms_key
            else None
        )
        zones = list(platform.cluster.availability_zones)
        if len(private_subnet_ids) != len(zones):
            raise TenancyError(
                f"{self.node.path}: private_subnet_ids has {len(private_subnet_ids)} subnet(s) but "
                f"cluster.availabilityZones has {len(zones)} zone(s) {zones}; give one private subnet per zone, "
                "in that order."
            )
        kubectl_role = (
            iam.Role.from_role_arn(self, "KubectlRole", kubectl_role_arn) if kubectl_role_arn else None
        )
        kubernetes = eks.Cluster.from_cluster_attributes(
            self,
            "Eks",
            cluster_name=eks_cluster_name,
            cluster_security_group_id=cluster_security_group_id,
            kubectl_provider=eks.KubectlProvider.from_kubectl_provider_attributes(
                self, "KubectlProvider", service_token=kubectl_provider_service_token, role=kubectl_role
            ),
        )
        if private_subnet_route_table_ids is not None and len(private_subnet_route_table_ids) != len(zones):
            raise TenancyError(
                f"{self.node.path}: private_subnet_route_table_ids has {len(private_subnet_route_table_ids)} "
                f"route table(s) but private_subnet_ids has {len(zones)} subnet(s); give the route table of each "
                "subnet, in the same order."
            )
        vpc = ec2.Vpc.from_vpc_attributes(
            self,
            "Vpc",
            vpc_id=vpc_id,
            availability_zones=zones,
            private_subnet_ids=list(private_subnet_ids),
            private_subnet_route_table_ids=(
                list(private_subnet_route_table_ids) if private_subnet_route_table_ids is not None else None
            ),
        )
        data_bucket = s3.Bucket.from_bucket_name(self, "DataBucket", data_bucket_name)
        self.platform: Platform = platform
        self.kubernetes: eks.ICluster = kubernetes
        self.eks_cluster_name: str = kubernetes.cluster_name
        self.eks_cluster_arn: str = kubernetes.cluster_arn
        self.hyperpod_cluster_arn: str = hyperpod_cluster_arn
        self.vpc: ec2.IVpc = vpc
        self.data_bucket: s3.IBucket = data_bucket
        self.file_system_id: str = file_system_id
        self.file_system_dns_name: str = file_system_dns_name
        self.file_system_mount_name: str = file_system_mount_name
        self.service_cidr: str = service_cidr
        self.network_policy_enforced: bool = network_policy_enforced
        # the cluster-level fairness objects and the platform chart exist already
        self.fairness_ready: Construct | None = None
        self.platform_chart_manifest: Construct | None = None
        self._api_endpoint_security_group_id = api_endpoint_security_group_id

    @property
    def sso_role_service_token(self) -> str:
        """The given provider's service token, or that of one provider created beside the import on first use."""
        if self._sso_role_service_token is None:
            self._sso_role_service_token = SsoRoleProvider(
                self, "SsoRoleProvider", team_accounts=bool(self.platform.teams_in_own_accounts)
            ).service_token
        return self._sso_role_service_token

    def allow_api_access_from(self, scope: Construct, id: str, *, peer: ec2.ISecurityGroup) -> None:
        """Admit ``peer`` to the private EKS API endpoint (TCP 443) through the imported endpoint group."""
        admit_to_api_endpoint(scope, id, group_id=self._api_endpoint_security_group_id, peer=peer)

    def allow_api_access_from_cidr(
        self, scope: Construct, id: str, *, cidr: str
    ) -> ec2.CfnSecurityGroupIngress:
        """Admit the IPv4 block ``cidr`` to the private EKS API endpoint (TCP 443) through the imported group."""
        return admit_cidr_to_api_endpoint(scope, id, group_id=self._api_endpoint_security_group_id, cidr=cidr)


def import_cluster(
    scope: Construct,
    id: str,
    *,
    platform: Platform,
    eks_cluster_name: str,
    kubectl_provider_service_token: str,
    kubectl_role_arn: str | None = None,
    cluster_security_group_id: str | None = None,
    hyperpod_cluster_arn: str,
    vpc_id: str,
    private_subnet_ids: Sequence[str],
    api_endpoint_security_group_id: str,
    data_bucket_name: str,
    file_system_id: str,
    file_system_dns_name: str,
    file_system_mount_name: str,
    network_policy_enforced: bool,
    service_cidr: str | None = None,
    sso_role_service_token: str | None = None,
    kms_key_arn: str | None = None,
    api_client_security_group_id: str | None = None,
    vpc_cidr_blocks: Sequence[str] | None = None,
    private_subnet_route_table_ids: Sequence[str] | None = None,
) -> IHyperPodCluster:
    """Import an existing HyperPod/EKS cluster (another app or account) to add tenants to it.

    Nothing is looked up at synth time: every attribute is given (plain values or tokens, e.g. from
    ``Fn.import_value`` or SSM parameters). The cluster-level objects (fairness backend, platform chart)
    are expected to exist; tenants are created without a dependency on them.

    Args:
        scope: parent construct.
        id: construct ID.
        platform: the policy the cluster was deployed from (the tenants' teams come from it).
        eks_cluster_name: name of the EKS cluster.
        kubectl_provider_service_token: service token of the cluster's kubectl provider (the
            ``ServiceToken`` of its ``Custom::AWSCDK-EKS-KubernetesResource`` resources).
        kubectl_role_arn: role the kubectl provider assumes. Default: the provider's own role.
        cluster_security_group_id: the EKS cluster security group. Default: not imported.
        hyperpod_cluster_arn: ARN of the HyperPod cluster.
        vpc_id: the cluster's VPC.
        private_subnet_ids: its private subnets with egress, one per zone of
            ``platform.cluster.availability_zones``, in that order.
        api_endpoint_security_group_id: the additional security group of the EKS API endpoint ENIs
            (``SharedHyperPodCluster.api_endpoint_security_group``), where Studio peers are admitted.
        data_bucket_name: the shared team-data bucket.
        file_system_id: ID of the shared FSx for Lustre file system.
        file_system_dns_name: its DNS name.
        file_system_mount_name: its Lustre mount name.
        network_policy_enforced: whether the cluster's CNI enforces NetworkPolicy; no default: a tenant
            relies on it for isolation, so state what the cluster does (``False`` stops synthesis).
        service_cidr: the EKS Service CIDR. Default: the policy's ``cluster.serviceCidr``.
        sso_role_service_token: service token of the Identity Center role-lookup provider of the cluster's
            stack (``SharedHyperPodCluster.sso_role_service_token``), to share it. Default: one provider is
            created beside the import, shared by the tenants added to it.
        kms_key_arn: ARN of the platform key the cluster's app created (``encryption.kmsKey: create``;
            ``SharedHyperPodCluster.platform_key``). Default: the policy's key ARN, or none.
        api_client_security_group_id: the cluster's API client security group
            (``SharedHyperPodCluster.api_client_security_group``), which tenants join to reach the API
            endpoint. Default: none; each tenant then adds an inbound rule to ``api_endpoint_security_group_id``
            (60 inbound rules by default: Service Quotas vpc L-0EA8095F).
        vpc_cidr_blocks: every IPv4 CIDR block of the cluster's VPC, secondary blocks included (team egress
            excludes them). Default: the policy's ``cluster.vpcCidr``.
        private_subnet_route_table_ids: the route table of each of ``private_subnet_ids``, in the same order: a
            team's Studio domain in its own account is routed through them. Default: none (such a team is
            refused).

    Raises:
        TenancyError: ``private_subnet_ids`` does not have one subnet per availability zone, or
            ``private_subnet_route_table_ids`` not one route table per subnet.

    """
    return ImportedHyperPodCluster(
        scope,
        id,
        platform=platform,
        eks_cluster_name=eks_cluster_name,
        kubectl_provider_service_token=kubectl_provider_service_token,
        kubectl_role_arn=kubectl_role_arn,
        cluster_security_group_id=cluster_security_group_id,
        hyperpod_cluster_arn=hyperpod_cluster_arn,
        vpc_id=vpc_id,
        private_subnet_ids=private_subnet_ids,
        api_endpoint_security_group_id=api_endpoint_security_group_id,
        data_bucket_name=data_bucket_name,
        file_system_id=file_system_id,
        file_system_dns_name=file_system_dns_name,
        file_system_mount_name=file_system_mount_name,
        network_policy_enforced=network_policy_enforced,
        service_cidr=service_cidr or platform.cluster.service_cidr,
        sso_role_service_token=sso_role_service_token,
        kms_key_arn=kms_key_arn,
        api_client_security_group_id=api_client_security_group_id,
        vpc_cidr_blocks=vpc_cidr_blocks,
        private_subnet_route_table_ids=private_subnet_route_table_ids,
    )
