"""What the builders of the shared cluster read and set on the cluster construct they build it for."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3_deployment
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from hyperpod_tenancy.constructs.backends import ClusterFairness
from hyperpod_tenancy.constructs.encryption import PlatformKey
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.policy import InstanceGroup, Platform

__all__ = ["ClusterBuckets", "ClusterBuild"]


@dataclass(frozen=True)
class ClusterBuckets:
    """What :func:`create_buckets` created."""

    #: The construct holding the buckets (``Storage``), where later buckets go too.
    storage: Construct
    #: The access-log bucket of every other bucket.
    access_logs: s3.Bucket
    #: The team data bucket (``teams/<team>/``).
    data: s3.Bucket
    #: The HyperPod lifecycle scripts' bucket.
    lifecycle: s3.Bucket
    #: The upload of the lifecycle scripts.
    upload: s3_deployment.BucketDeployment


class ClusterBuild(Construct):
    """The shared cluster as its builders (the ``cluster_*`` modules) see it: the parts built before them.

    :class:`~hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster.SharedHyperPodCluster` extends it; each part is set
    by its constructor, in the order the builders need them.
    """

    #: The policy the cluster was built from.
    platform: Platform
    #: VPC of the cluster.
    vpc: ec2.IVpc
    #: Every IPv4 CIDR block of the VPC in use, secondary blocks included: team NetworkPolicies exclude them all.
    vpc_cidr_blocks: tuple[str, ...]
    #: The managed node group of the cluster's own pods (add-on controllers, the webhook, coredns).
    system_node_group: eks.Nodegroup
    #: The vpc-cni add-on (network policy enforcement switched on).
    vpc_cni_addon: eks.CfnAddon
    #: The EKS Pod Identity agent add-on.
    pod_identity_addon: eks.CfnAddon
    #: The cert-manager add-on (the HyperPod training operator and the POSIX identity webhook need it).
    cert_manager_addon: eks.CfnAddon
    #: Pod Identity role of the HyperPod training operator (``AmazonSageMakerHyperPodTrainingOperatorAccess``).
    training_operator_role: iam.Role
    #: The platform's customer-managed key (``None``: AWS-managed keys).
    platform_key: PlatformKey | None
    security_group: ec2.SecurityGroup
    api_endpoint_security_group: ec2.SecurityGroup
    _subnets_by_az: dict[str, ec2.ISubnet]
    eks_cluster: eks.Cluster
    #: The platform's buckets and the construct that holds them.
    _buckets: ClusterBuckets
    data_bucket: s3.Bucket
    lifecycle_bucket: s3.Bucket
    execution_role: iam.Role
    hyperpod_cluster: sagemaker.CfnCluster
    observability_role: iam.Role | None
    fairness: ClusterFairness
    fairness_ready: Construct
    platform_chart: PlatformChart

    @property
    def kubernetes(self) -> eks.ICluster:
        """The EKS cluster as an ``ICluster``."""
        raise NotImplementedError

    @property
    def node_security_group_ids(self) -> list[str]:
        """Security groups of the HyperPod nodes."""
        raise NotImplementedError

    def subnet_for(self, group: InstanceGroup) -> ec2.ISubnet:
        """Private subnet an instance group runs in."""
        raise NotImplementedError
