"""A HyperPod/EKS cluster deployed by another app or account, imported by its attributes to add tenants to it."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_tenancy.constructs._private.sso_role_provider import SsoRoleProvider
from hyperpod_tenancy.constructs.backends import checked_policy
from hyperpod_tenancy.constructs.cluster_network import (
    admit_to_api_endpoint,
)
from hyperpod_tenancy.constructs.encryption import PlatformKey
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform

__all__ = ["ImportedHyperPodCluster"]


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
    ) -> None:
        super().__init__(scope, id)
        checked_policy(platform, where=self.node.path)
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
        vpc = ec2.Vpc.from_vpc_attributes(
            self, "Vpc", vpc_id=vpc_id, availability_zones=zones, private_subnet_ids=list(private_subnet_ids)
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
            self._sso_role_service_token = SsoRoleProvider(self, "SsoRoleProvider").service_token
        return self._sso_role_service_token

    def allow_api_access_from(self, scope: Construct, id: str, *, peer: ec2.ISecurityGroup) -> None:
        """Admit ``peer`` to the private EKS API endpoint (TCP 443) through the imported endpoint group."""
        admit_to_api_endpoint(scope, id, group_id=self._api_endpoint_security_group_id, peer=peer)
