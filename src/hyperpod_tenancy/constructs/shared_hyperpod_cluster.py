"""``SharedHyperPodCluster``: the EKS + SageMaker HyperPod cluster that teams share.

Deploy order is enforced with CloudFormation dependencies, not documentation::

    EKS -> base add-ons -> HyperPod Helm chart -> HyperPod cluster -> Task Governance add-on
        -> Kueue webhook ready -> scheduler config -> POSIX identity webhook ready
        -> platform chart, (per team) compute quota -> team chart
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import aws_cdk as cdk
import cdk8s
import jsii
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3_deployment
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer
from constructs import Construct, IValidation

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_cdk_handlers,
    acknowledge_role,
    warn,
)
from hyperpod_tenancy.constructs._private.extensions import ChartExtensions, chart_objects
from hyperpod_tenancy.constructs._private.feature_flags import warn_flags_off
from hyperpod_tenancy.constructs._private.inference_operator import (
    InferenceOperator,
    install_inference_operator,
)
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT, eks_addon
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs._private.sso_role_provider import SsoRoleProvider
from hyperpod_tenancy.constructs.backends import Backend, ClusterFairness, backend_for, checked_policy
from hyperpod_tenancy.constructs.encryption import PlatformKey, encrypt_platform_resources
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.posix_identity_webhook import PosixIdentityWebhook
from hyperpod_tenancy.constructs.team_tenant import TeamTenant
from hyperpod_tenancy.constructs.vpc import (
    VpcAttributes,
    blocks_of_vpc,
    check_service_cidr,
    refuse_foreign_stage,
)
from hyperpod_tenancy.errors import PolicyError, TenancyError
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.k8s.workloads import CONTROLLERS, KUBERAY_NAMESPACE, Installer
from hyperpod_tenancy.policy import InstanceGroup, Platform, names, policy_warnings
from hyperpod_tenancy.policy.model import WorkloadKind

__all__ = ["HYPERPOD_HELM_RELEASE", "KUBECTL_WAIT", "NODE_BOOTSTRAP_ADDONS", "SharedHyperPodCluster"]

_LIFECYCLE_ASSETS = Path(__file__).parent / "assets" / "lifecycle"
#: EKS add-ons that are DaemonSets a node needs before it is Ready (the CNI, kube-proxy, the Pod Identity agent):
#: created with the cluster, not after its nodes. Every other add-on runs a Deployment and waits for the system
#: node group (``SharedHyperPodCluster._addons_after_the_system_nodes``).
NODE_BOOTSTRAP_ADDONS = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})
#: Release name and namespace the HyperPod documentation uses for the dependencies chart.
HYPERPOD_HELM_RELEASE = "dependencies"
_OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"
#: The CloudWatch Logs actions of the observability collector's role, as the reference role grants them.
_OBSERVABILITY_LOGS_ACTIONS = (
    "CreateLogGroup",
    "CreateLogStream",
    "DescribeLogGroups",
    "DescribeLogStreams",
    "PutLogEvents",
    "GetLogEvents",
    "FilterLogEvents",
    "GetLogRecord",
    "StartQuery",
    "StopQuery",
    "GetQueryResults",
)
_OBSERVABILITY_SERVICE_ACCOUNT = "hyperpod-observability-operator-otel-collector"
_TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
_KUBERNETES_VERSIONS = {
    "1.30": eks.KubernetesVersion.V1_30,
    "1.31": eks.KubernetesVersion.V1_31,
    "1.32": eks.KubernetesVersion.V1_32,
    "1.33": eks.KubernetesVersion.V1_33,
}
_LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))
#: Managed policy the HyperPod training operator's Pod Identity role needs (research/hyperpod.md section 2.2;
#: awsome-distributed-training ``modules/hyperpod_training_operator/main.tf``).
_TRAINING_OPERATOR_POLICY = "AmazonSageMakerHyperPodTrainingOperatorAccess"


#: First Kubernetes version for which EKS publishes no Amazon Linux 2 AMIs
#: (https://docs.aws.amazon.com/eks/latest/userguide/al2023.html; research/hyperpod.md section 21).
_FIRST_VERSION_WITHOUT_AL2 = (1, 33)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@jsii.implements(IValidation)
class _RejectAl2OnNewKubernetes:
    """A managed node group with an ``AL2_*`` AMI type on Kubernetes >= 1.33 fails to create: refuse it at synth."""

    def __init__(self, cluster: SharedHyperPodCluster) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        version = self._cluster.platform.cluster.kubernetes_version
        if _version_tuple(version) < _FIRST_VERSION_WITHOUT_AL2:
            return []
        errors = []
        eks_path = self._cluster.eks_cluster.node.path
        for construct in self._cluster.node.root.node.find_all():
            if not isinstance(construct, eks.Nodegroup) or construct.cluster.node.path != eks_path:
                continue
            cfn = construct.node.default_child
            ami_type = cfn.ami_type if isinstance(cfn, eks.CfnNodegroup) else None
            if isinstance(ami_type, str) and ami_type.startswith("AL2_"):
                errors.append(
                    f"[HPT-NODEGROUP-AMI] node group {construct.node.path} has AMI type {ami_type} on Kubernetes "
                    f"{version}; EKS publishes no Amazon Linux 2 AMIs after 1.32, so the node group would fail to "
                    "create. Pass ami_type=NodegroupAmiType.AL2023_* (or BOTTLEROCKET_*) matching the instance "
                    "architecture."
                )
        return errors


def _admit_to_api_endpoint(scope: Construct, id: str, *, group_id: str, peer: ec2.ISecurityGroup) -> None:
    ec2.CfnSecurityGroupIngress(
        scope,
        id,
        group_id=group_id,
        source_security_group_id=peer.security_group_id,
        ip_protocol="tcp",
        from_port=443,
        to_port=443,
        description="EKS private API endpoint from an admitted peer",
    )


#: Subcharts of the HyperPod dependencies chart that grant RBAC to team groups; always rendered disabled.
HYPERPOD_CHART_RBAC_SUBCHARTS = (
    "team-role-and-bindings",
    "namespaced-role-and-bindings",
    "cluster-role-and-bindings",
)


class _ImportedHyperPodCluster(Construct):
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
        _admit_to_api_endpoint(scope, id, group_id=self._api_endpoint_security_group_id, peer=peer)


class SharedHyperPodCluster(Construct):
    """One SageMaker HyperPod cluster on EKS, shared by the teams of a :class:`Platform`.

    Creates: a VPC (unless ``vpc`` is given) with private subnets in the platform's availability zones and one
    NAT gateway per zone; a security group for HyperPod nodes and FSx (all traffic within the group for EFA,
    TCP 988 and 1018-1023 for Lustre, Lustre also to and from the system nodes); HyperPod nodes also carry the
    EKS cluster security group, so they and the system nodes reach each other (DNS, kubelet, webhooks) and the
    API endpoint; the endpoint's ENIs get a group of their own for :meth:`allow_api_access_from`; an EKS
    cluster (authentication mode API, managed node group capacity on AL2023, explicit Service CIDR,
    control-plane logging, secrets encryption) with the add-ons HyperPod needs (vpc-cni with network policy
    enforcement, kube-proxy, coredns, eks-pod-identity-agent, aws-fsx-csi-driver, cert-manager); the HyperPod
    dependencies Helm chart; a lifecycle-script bucket and a least-privilege execution role (trust limited to
    this account, ECR pulls from the AWS-owned registries); the ``AWS::SageMaker::Cluster`` (retained on
    delete, automatic node recovery, deep health checks); the HyperPod training operator add-on and the KubeRay
    operator chart (the operators of the kinds teams may submit); with a ``workload: inference`` team, the
    HyperPod inference operator add-on with its IRSA roles (the cluster's IAM OIDC provider), its TLS
    certificate bucket (retained) and the S3 Mountpoint CSI and metrics-server add-ons; FSx for Lustre (retained); the team data
    bucket (retained); the fairness backend (Task Governance add-on + ``ClusterSchedulerConfig``, or upstream
    Kueue); the POSIX identity webhook (:class:`~hyperpod_tenancy.constructs.posix_identity_webhook.PosixIdentityWebhook`,
    ``failurePolicy`` from ``cluster.posixIdentity``), ready before any team object; and the observability
    add-on with an Amazon Managed Prometheus workspace. Synthesis fails when a
    managed node group of the cluster has an ``AL2_*`` AMI type on Kubernetes 1.33 or later
    (``HPT-NODEGROUP-AMI``).

    Args:
        scope: parent construct.
        id: construct ID.
        platform: the tenancy policy; the cluster renders everything from it. One built or changed in code is
            validated here (:class:`~hyperpod_tenancy.errors.PolicyError`, every problem listed).
        vpc: an existing VPC. Default: a VPC is created with ``cluster.vpcCidr`` in ``cluster.availabilityZones``
            (one NAT gateway per zone, flow logs on). An imported VPC must have private subnets with egress in
            those zones. Team NetworkPolicies exclude every IPv4 block of the VPC in use (its primary block and
            the ``AWS::EC2::VPCCidrBlock`` associations in its stack), not ``cluster.vpcCidr``. A VPC of another
            stage of the app cannot be referenced (synthesis stops naming this prop): give its
            :class:`~hyperpod_tenancy.constructs.vpc.VpcAttributes` (ID, CIDR blocks, a private subnet per zone),
            imported in the cluster's stack.
        vpc_cidr_blocks: every IPv4 CIDR block of ``vpc``. Default: what the VPC tells at synth; synthesis stops
            naming this prop when a block is not known then (an imported VPC without ``vpc_cidr_block``, an IPAM
            allocation). Blocks found on the VPC are added to the ones given.
        endpoint_access: EKS API endpoint access. Default: private only; reach the API through your network.
        kubectl_layer: Lambda layer with kubectl/helm for the cluster's handlers. Default: kubectl v1.33.
        posix_identity_image_uri: the POSIX identity webhook's server image, pinned by tag or digest. Default:
            the policy's ``cluster.posixIdentity.imageUri``; without one, ``cdk deploy`` builds it from the
            ``Dockerfile`` shipped inside the installed package (Docker is needed where you deploy, not to
            synthesize).

    Attributes:
        platform: the policy the cluster was built from.
        vpc, security_group, api_endpoint_security_group, eks_cluster, hyperpod_cluster, file_system,
        data_bucket, lifecycle_bucket, execution_role, hyperpod_helm_chart, training_operator_addon,
        kuberay_chart: the created resources (see each attribute's type).
        inference_operator: the inference operator add-on, its roles and bucket (``None`` without an
            inference team).
        service_cidr: the EKS Service CIDR (``cluster.serviceCidr``).
        vpc_cidr_blocks: every IPv4 CIDR block of the VPC in use (team egress excludes them).
        fairness_backend: the registered fairness backend serving ``platform.fairness_backend``.
        fairness: what that backend built (:class:`~hyperpod_tenancy.constructs.backends.ClusterFairness`).
        fairness_ready: the construct team objects must depend on before creating quotas or queues.
        scheduler_config: the Task Governance ``ClusterSchedulerConfig`` (``None`` with the Kueue backend).
        posix_identity: the POSIX identity webhook (its DynamoDB table, image, Deployment and configuration).
        observability_workspace, observability_role: ``None`` when ``cluster.observability`` is off.

    The class implements :class:`~hyperpod_tenancy.constructs.interfaces.IHyperPodCluster`;
    :meth:`from_attributes` imports an existing cluster as one.

    """

    # Attributes set while __init__ builds the add-ons (declared here, typed, always present):
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

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        vpc: ec2.IVpc | VpcAttributes | None = None,
        endpoint_access: eks.EndpointAccess | None = None,
        kubectl_layer: lambda_.ILayerVersion | None = None,
        posix_identity_image_uri: str | None = None,
        vpc_cidr_blocks: Sequence[str] | None = None,
    ) -> None:
        super().__init__(scope, id)
        #: The policy the cluster was built from.
        self.platform: Platform = checked_policy(platform, where=self.node.path)
        self._teams: dict[str, TeamTenant] = {}
        self._sso_role_provider: SsoRoleProvider | None = None
        #: The fairness backend registered for ``platform.fairness_backend``.
        self.fairness_backend: Backend = backend_for(platform)
        backend_issues = list(self.fairness_backend.validate(platform))
        if backend_issues:
            raise PolicyError(backend_issues, source=f"{self.node.path} (fairness backend)")
        spec = platform.cluster
        stack = cdk.Stack.of(self)
        if not cdk.Token.is_unresolved(stack.region) and stack.region != platform.region:
            raise TenancyError(
                f"{self.node.path}: the stack is in {stack.region} but platform.region is {platform.region}; "
                "create the stack with env=Environment(region=platform.region)."
            )
        self._warn_at_synth()
        #: The platform's customer-managed key (``encryption.kmsKey``; ``None``: AWS-managed keys).
        self.platform_key: PlatformKey | None = (
            PlatformKey(self, "PlatformKey", platform=platform) if platform.encryption.kms_key else None
        )
        encrypt_platform_resources(self, self.platform_key)

        self.vpc, self.vpc_cidr_blocks = self._use_vpc(vpc, vpc_cidr_blocks)
        self._subnets_by_az = self._private_subnets_by_az()
        #: Security group of the HyperPod nodes and FSx (EFA and Lustre traffic within the group).
        self.security_group = self._create_security_group()
        #: Additional security group of the EKS control-plane ENIs (the private API endpoint); only the
        #: callers of :meth:`allow_api_access_from` are admitted through it.
        self.api_endpoint_security_group = ec2.SecurityGroup(
            self,
            "ApiEndpointSecurityGroup",
            vpc=self.vpc,
            description="EKS control plane ENIs (private API endpoint): TCP 443 from admitted peers",
            allow_all_outbound=False,
        )
        #: Members of this group reach the private API endpoint (TCP 443): one rule, whatever the number of teams
        #: whose Studio apps join it (a rule per team would meet the 60-rule default of the endpoint's group).
        self.api_client_security_group = ec2.SecurityGroup(
            self,
            "ApiClientSecurityGroup",
            vpc=self.vpc,
            description="Clients of the private EKS API endpoint (Studio apps): membership admits to TCP 443",
            allow_all_outbound=False,
        )
        self.api_client_security_group.add_egress_rule(
            self.api_endpoint_security_group, ec2.Port.tcp(443), "EKS private API endpoint"
        )
        _admit_to_api_endpoint(
            self,
            "ApiClientAccess",
            group_id=self.api_endpoint_security_group.security_group_id,
            peer=self.api_client_security_group,
        )
        #: The EKS cluster (authentication mode API, NODEGROUP capacity).
        self.eks_cluster = self._create_eks(endpoint_access, kubectl_layer)
        self._connect_node_security_groups()
        base_addons = self._create_base_addons()
        #: Shared bucket for team data under ``teams/<team>/`` (retained on delete).
        self.data_bucket, self.lifecycle_bucket, lifecycle_upload = self._create_buckets()
        #: Execution role of every HyperPod instance group.
        self.execution_role = self._create_execution_role()
        #: HyperPod dependencies Helm chart (device plugins, health monitoring, training operators).
        self.hyperpod_helm_chart = self._create_hyperpod_helm_chart()
        for addon in base_addons:
            self.hyperpod_helm_chart.node.add_dependency(addon)
        #: The HyperPod cluster (retained on delete).
        self.hyperpod_cluster = self._create_hyperpod_cluster()
        self.hyperpod_cluster.node.add_dependency(self.hyperpod_helm_chart, lifecycle_upload)
        #: FSx for Lustre shared by the teams (retained on delete).
        self.file_system = self._create_file_system()
        #: The HyperPod training operator add-on (serves ``HyperPodPyTorchJob``).
        self.training_operator_addon = self._create_training_operator()
        #: The KubeRay operator chart (serves ``RayJob`` and ``RayCluster``).
        self.kuberay_chart = self._create_kuberay()
        #: The HyperPod inference operator add-on and its roles (serves ``InferenceEndpointConfig`` and
        #: ``JumpStartModel``); ``None`` when no team has ``workload: inference``.
        self.inference_operator: InferenceOperator | None = self._create_inference_operator(base_addons)
        #: What the fairness backend built (add-on, scheduler config, or the Kueue chart).
        self.fairness: ClusterFairness = self.fairness_backend.build_cluster(
            self, self, after=self.hyperpod_cluster
        )
        #: The POSIX identity webhook (every pod of a team runs as its submitter's UID and the team's GID).
        self.posix_identity: PosixIdentityWebhook = self._create_posix_identity(posix_identity_image_uri)
        #: Team quotas, queues and charts depend on this construct: the fairness backend is ready and the POSIX
        #: identity webhook serves (with its CA injected), so no team workload is ever admitted unstamped.
        self.fairness_ready: Construct = self.posix_identity.ready
        policy = self.fairness.scheduling_policy
        #: The Task Governance ``ClusterSchedulerConfig`` (``None`` with the Kueue backend).
        self.scheduler_config: sagemaker.CfnClusterSchedulerConfig | None = (
            policy if isinstance(policy, sagemaker.CfnClusterSchedulerConfig) else None
        )
        #: The platform's own cluster-scoped Kubernetes objects (a copy of them: ``platform_chart.to_json()``).
        #: Read-only: add objects of your own with :meth:`add_manifest` or :meth:`add_cdk8s_chart`.
        self.platform_chart: PlatformChart = PlatformChart(
            self.platform, fairness_objects=self.fairness_backend.cluster_manifests(self.platform)
        )
        #: The platform chart (cluster-scoped objects) applied to the cluster.
        self.platform_chart_manifest: eks.KubernetesManifest = self._create_platform_chart()
        self._extensions = ChartExtensions(
            self, cluster=self.kubernetes, chart=self.platform_chart, after=self.platform_chart_manifest
        )
        #: Amazon Managed Prometheus workspace of the observability add-on (``None`` without observability).
        self.observability_workspace: aps.CfnWorkspace | None = None
        #: Pod Identity role of the observability collector (``None`` without observability).
        self.observability_role: iam.Role | None = None
        if spec.observability:
            self.observability_workspace = self._create_observability()
        self._acknowledge_findings()
        self._addons_after_the_system_nodes()
        self.node.add_validation(_RejectAl2OnNewKubernetes(self))

    # ------------------------------------------------------------------ import
    @classmethod
    def from_attributes(
        cls,
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

        Raises:
            TenancyError: ``private_subnet_ids`` does not have one subnet per availability zone.

        """
        return _ImportedHyperPodCluster(
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
        )

    # ------------------------------------------------------------------ attributes
    @property
    def kubernetes(self) -> eks.ICluster:
        """The EKS cluster as the ``ICluster`` that Kubernetes manifests, patches and charts take."""
        return cast("eks.ICluster", self.eks_cluster)

    @property
    def hyperpod_cluster_arn(self) -> str:
        """ARN of the HyperPod cluster."""
        return self.hyperpod_cluster.attr_cluster_arn

    @property
    def eks_cluster_name(self) -> str:
        """Name of the EKS cluster."""
        return self.eks_cluster.cluster_name

    @property
    def eks_cluster_arn(self) -> str:
        """ARN of the EKS cluster."""
        return self.eks_cluster.cluster_arn

    @property
    def file_system_id(self) -> str:
        """ID of the shared FSx for Lustre file system."""
        return self.file_system.ref

    @property
    def file_system_dns_name(self) -> str:
        """DNS name of the shared FSx for Lustre file system."""
        return self.file_system.attr_dns_name

    @property
    def file_system_mount_name(self) -> str:
        """Lustre mount name of the shared file system."""
        return self.file_system.attr_lustre_mount_name

    @property
    def sso_role_service_token(self) -> str:
        """Service token of the one provider that resolves every team's Identity Center role.

        Created in this construct on first use (a tenant in another stack imports the token), so the team stacks
        of the account and region share one provider instead of carrying one each.
        """
        if self._sso_role_provider is None:
            self._sso_role_provider = SsoRoleProvider(self, "SsoRoleProvider")
        return self._sso_role_provider.service_token

    @property
    def teams(self) -> dict[str, TeamTenant]:
        """Tenants added with :meth:`add_team`, by team name (a copy)."""
        return dict(self._teams)

    def subnet_for(self, group: InstanceGroup) -> ec2.ISubnet:
        """Private subnet an instance group runs in (its availability zone, default the first zone)."""
        zone = group.availability_zone or self.platform.cluster.availability_zones[0]
        return self._subnets_by_az[zone]

    @property
    def service_cidr(self) -> str:
        """The EKS Service CIDR (ClusterIPs, set explicitly from ``cluster.serviceCidr``)."""
        return self.platform.cluster.service_cidr

    @property
    def cluster_security_group_id(self) -> str:
        """ID of the security group EKS creates for the cluster (on the control-plane ENIs and system nodes)."""
        return self.eks_cluster.cluster_security_group_id

    @property
    def api_client_security_group_id(self) -> str:
        """ID of :attr:`api_client_security_group` (members reach the private API endpoint)."""
        return self.api_client_security_group.security_group_id

    def allow_api_access_from(self, scope: Construct, id: str, *, peer: ec2.ISecurityGroup) -> None:
        """Admit ``peer`` to the private EKS API endpoint (TCP 443).

        The endpoint's ENIs carry the EKS-created cluster security group and this construct's
        :attr:`api_endpoint_security_group` ("Amazon EKS associates the cluster security group and any additional
        security groups to the cross-account ENIs": https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html).
        The rule goes on the additional group, which nothing else uses, so ``peer`` reaches the API endpoint and not
        the nodes. It is created in ``scope`` (the caller's stack) so that a team stack references the cluster stack
        and never the other way round.

        Args:
            scope: where the ingress rule is created, normally a construct in the caller's stack.
            id: construct ID of the rule within ``scope``.
            peer: the security group admitted, for example a team's Studio domain security group.

        """
        _admit_to_api_endpoint(
            scope, id, group_id=self.api_endpoint_security_group.security_group_id, peer=peer
        )

    def add_team(
        self,
        id: str,
        *,
        team: str,
        scope: Construct | None = None,
        sso_role_timeout: cdk.Duration | None = None,
        sso_start_url: str | None = None,
    ) -> TeamTenant:
        """Create the :class:`TeamTenant` for the policy's team ``team``.

        Args:
            id: construct ID of the tenant.
            team: name of a team of the platform policy.
            scope: where to create it. Default: inside this construct (use a separate stack per team to keep
                templates far from CloudFormation's limits).
            sso_role_timeout: as for :class:`TeamTenant`. Default: 15 minutes.
            sso_start_url: as for :class:`TeamTenant`. Default: the ``hyperpod-tenancy:ssoStartUrl`` context.

        Raises:
            TenancyError: no such team, or the team was already added.

        """
        if team in self._teams:
            raise TenancyError(f"{self.node.path}: team {team!r} was already added.")
        tenant = TeamTenant(
            scope or self,
            id,
            cluster=self,
            team=team,
            sso_role_timeout=sso_role_timeout,
            sso_start_url=sso_start_url,
        )
        self._teams[team] = tenant
        return tenant

    # ------------------------------------------------------------------ network
    def _create_vpc(self) -> ec2.Vpc:
        spec = self.platform.cluster
        vpc = ec2.Vpc(
            self,
            "Vpc",
            ip_addresses=ec2.IpAddresses.cidr(spec.vpc_cidr),
            availability_zones=list(spec.availability_zones),
            # one NAT gateway per zone (the default): with one, the other zone's instance group sends all its
            # egress (image pulls, S3 without the endpoint) across zones and loses it when that zone fails
            # (https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-basics.html).
            nat_gateways=len(spec.availability_zones),
            # set, not left to the app's @aws-cdk/aws-ec2:restrictDefaultSecurityGroup flag (Security Hub EC2.2)
            restrict_default_security_group=True,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                # HyperPod nodes and pods take VPC IPs (VPC CNI): give them large subnets.
                ec2.SubnetConfiguration(
                    name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=19
                ),
            ],
        )
        vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(
                logs.LogGroup(self, "FlowLogs", retention=logs.RetentionDays.ONE_YEAR)
            ),
        )
        vpc.add_gateway_endpoint("S3Endpoint", service=ec2.GatewayVpcEndpointAwsService.S3)
        acknowledge(
            vpc,
            "CloudFormation-Validate::W3010",
            "the platform names its zones on purpose: GPU capacity (reservations, training plans) is per zone",
        )
        return vpc

    def _warn_at_synth(self) -> None:
        """Emit the policy's warnings and the one naming the app's feature flags the templates depend on."""
        for issue in policy_warnings(self.platform):
            warn(self, issue.code, f"{issue.path}: {issue.message} {issue.fix}")
        warn_flags_off(self)

    def _use_vpc(
        self, given: ec2.IVpc | VpcAttributes | None, given_blocks: Sequence[str] | None
    ) -> tuple[ec2.IVpc, tuple[str, ...]]:
        """Return the VPC in use (created without one given) and its IPv4 blocks, checked against the Service CIDR."""
        spec = self.platform.cluster
        if given is None:
            return self._create_vpc(), (spec.vpc_cidr,)
        if isinstance(given, VpcAttributes):
            given_vpc = given.to_vpc(self, "Vpc", zones=spec.availability_zones)
            given_blocks = [*given.cidr_blocks, *(given_blocks or ())]
        else:
            refuse_foreign_stage(given, self)
            given_vpc = given
        blocks = blocks_of_vpc(given_vpc, given=given_blocks, where=f"{self.node.path} (vpc)")
        check_service_cidr(spec.service_cidr, blocks, where=self.node.path)
        if spec.vpc_cidr not in blocks:
            warn(
                self,
                "HPT-VPC-CIDR-GIVEN",
                f"cluster.vpcCidr is {spec.vpc_cidr!r} but the VPC given has {list(blocks)}; team NetworkPolicies "
                "exclude the VPC's blocks. Set cluster.vpcCidr to the VPC's primary block so that the policy "
                "describes the cluster.",
            )
        return given_vpc, blocks

    def _private_subnets_by_az(self) -> dict[str, ec2.ISubnet]:
        selected = self.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnets
        by_az = {subnet.availability_zone: subnet for subnet in selected}
        missing = [z for z in self.platform.cluster.availability_zones if z not in by_az]
        if missing:
            raise TenancyError(
                f"{self.node.path}: the VPC has no private subnet with egress in {missing}; "
                "add subnets in every zone of cluster.availabilityZones or pass a VPC that has them."
            )
        return by_az

    def _create_security_group(self) -> ec2.SecurityGroup:
        sg = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=self.vpc,
            description="HyperPod nodes and FSx for Lustre (EFA within the group, Lustre)",
            allow_all_outbound=True,
        )
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "all traffic within the group (EFA, node-to-node)")
        for port in _LUSTRE_PORTS:
            sg.add_ingress_rule(sg, port, "FSx for Lustre")
        return sg

    @property
    def node_security_group_ids(self) -> list[str]:
        """Security groups of the HyperPod nodes: this construct's group and the EKS cluster security group.

        The EKS cluster security group admits all traffic from itself and is on the system nodes (CoreDNS, Kueue,
        operators) and the API endpoint ENIs (https://docs.aws.amazon.com/eks/latest/userguide/sec-group-reqs.html);
        with it, pods on HyperPod nodes reach CoreDNS and the API, and the control plane and system nodes reach
        the kubelets and webhooks on HyperPod nodes. The reference HyperPod templates likewise give HyperPod the
        EKS cluster's own security group (aws/sagemaker-hyperpod-cluster-setup
        ``eks/cloudformation/security-group-template.yaml``, ``SecurityGroupId`` of an existing EKS cluster).
        """
        return [self.security_group.security_group_id, self.cluster_security_group_id]

    def _connect_node_security_groups(self) -> None:
        # FSx uses this construct's group only; Lustre clients on system nodes (EKS cluster group) need the Lustre
        # ports both ways: client -> file servers, and file servers -> client
        # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html).
        cluster_sg = self.eks_cluster.cluster_security_group
        for port in _LUSTRE_PORTS:
            self.security_group.add_ingress_rule(cluster_sg, port, "FSx for Lustre from system nodes")
            cluster_sg.add_ingress_rule(
                self.security_group, port, "FSx for Lustre servers to system-node clients"
            )

    # ------------------------------------------------------------------ EKS
    def _create_eks(
        self, endpoint_access: eks.EndpointAccess | None, kubectl_layer: lambda_.ILayerVersion | None
    ) -> eks.Cluster:
        spec = self.platform.cluster
        private = list(self._subnets_by_az.values())
        key = kms.Key(self, "SecretsKey", enable_key_rotation=True, description=f"EKS secrets of {spec.name}")
        cluster = eks.Cluster(
            self,
            "Eks",
            cluster_name=spec.name,
            version=_KUBERNETES_VERSIONS[spec.kubernetes_version],
            # eks_v2 defaults to Auto Mode, which HyperPod does not support: use managed node groups.
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            default_capacity=0,
            vpc=self.vpc,
            vpc_subnets=[ec2.SubnetSelection(subnets=private)],
            security_group=self.api_endpoint_security_group,
            service_ipv4_cidr=spec.service_cidr,
            endpoint_access=endpoint_access or eks.EndpointAccess.PRIVATE,
            secrets_encryption_key=key,
            cluster_logging=[
                eks.ClusterLoggingTypes.API,
                eks.ClusterLoggingTypes.AUDIT,
                eks.ClusterLoggingTypes.AUTHENTICATOR,
                eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
                eks.ClusterLoggingTypes.SCHEDULER,
            ],
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=kubectl_layer or KubectlV33Layer(self, "KubectlLayer"),
                private_subnets=private,
            ),
        )
        system = spec.system_node_group
        instance_type = ec2.InstanceType(system.instance_type)
        self.system_node_group = cluster.add_nodegroup_capacity(
            "SystemNodes",
            instance_types=[instance_type],
            # EKS publishes no AL2 AMIs after Kubernetes 1.32, and CDK picks AL2 unless told otherwise
            # (https://docs.aws.amazon.com/eks/latest/userguide/al2023.html): name the AL2023 type explicitly.
            ami_type=(
                eks.NodegroupAmiType.AL2023_ARM_64_STANDARD
                if instance_type.architecture == ec2.InstanceArchitecture.ARM_64
                else eks.NodegroupAmiType.AL2023_X86_64_STANDARD
            ),
            min_size=system.count,
            desired_size=system.count,
            max_size=max(system.count, 2) * 2,
            subnets=ec2.SubnetSelection(subnets=private),
            labels={labels.NODE_ROLE_LABEL: labels.SYSTEM_NODE_ROLE},
        )
        return cluster

    def _addon(self, id: str, name: str, **props: Any) -> eks.CfnAddon:
        return eks_addon(self, id, cluster_name=self.eks_cluster.cluster_name, addon_name=name, **props)

    def _create_base_addons(self) -> list[eks.CfnAddon]:
        # VPC CNI enforces NetworkPolicy only with its network policy agent switched on.
        vpc_cni = self._addon(
            "VpcCni", "vpc-cni", configuration_values=json.dumps({"enableNetworkPolicy": "true"})
        )
        self.pod_identity_addon = self._addon("PodIdentityAgent", "eks-pod-identity-agent")
        self.cert_manager_addon = self._addon("CertManager", "cert-manager")
        addons = [
            vpc_cni,
            self._addon("KubeProxy", "kube-proxy"),
            self._addon("CoreDns", "coredns"),
            self.pod_identity_addon,
            self._addon("FsxCsiDriver", "aws-fsx-csi-driver"),
            self.cert_manager_addon,
        ]
        self.vpc_cni_addon = vpc_cni
        return addons

    def _addons_after_the_system_nodes(self) -> None:
        """Create every add-on whose pods need a node after the system node group.

        An add-on whose Deployment is created before any node can schedule stays ``DEGRADED`` and fails the stack
        (terraform-aws-modules/terraform-aws-eks#1801, fixed by ordering add-ons after node groups in #1840;
        aws/containers-roadmap#1389). The DaemonSets a node needs to become Ready (:data:`NODE_BOOTSTRAP_ADDONS`)
        stay unordered: the nodes wait for them, not the other way round.
        """
        for child in self.node.find_all():
            if isinstance(child, eks.CfnAddon) and child.addon_name not in NODE_BOOTSTRAP_ADDONS:
                child.node.add_dependency(self.system_node_group)

    @property
    def network_policy_enforced(self) -> bool:
        """Whether the cluster's CNI enforces NetworkPolicy (VPC CNI with ``enableNetworkPolicy``)."""
        values = self.vpc_cni_addon.configuration_values
        return isinstance(values, str) and json.loads(values).get("enableNetworkPolicy") == "true"

    # ------------------------------------------------------------------ storage
    def _bucket(
        self, id: str, *, access_logs: s3.IBucket | None, key: PlatformKey | None = None
    ) -> s3.Bucket:
        return s3.Bucket(
            self._storage,
            id,
            encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
            encryption_key=key.use("AWS::S3::Bucket") if key else None,
            bucket_key_enabled=True if key else None,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            versioned=True,
            removal_policy=cdk.RemovalPolicy.RETAIN,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix=f"{id.lower()}/" if access_logs else None,
        )

    def _create_buckets(self) -> tuple[s3.Bucket, s3.Bucket, s3_deployment.BucketDeployment]:
        self._storage = Construct(self, "Storage")
        # log delivery through a bucket policy, not the legacy AccessControl ACL
        self._storage.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        access_logs = self._bucket("AccessLogs", access_logs=None)
        # the team data bucket uses the platform key; the access-log target bucket must keep SSE-S3
        # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html)
        data = self._bucket("DataBucket", access_logs=access_logs, key=self.platform_key)
        lifecycle = self._bucket("LifecycleBucket", access_logs=access_logs)
        upload = s3_deployment.BucketDeployment(
            self,
            "LifecycleScripts",
            sources=[s3_deployment.Source.asset(str(_LIFECYCLE_ASSETS))],
            destination_bucket=lifecycle,
            destination_key_prefix="lifecycle",
            prune=True,
        )
        self._access_logs_bucket = access_logs
        return data, lifecycle, upload

    def _create_file_system(self) -> fsx.CfnFileSystem:
        spec = self.platform.cluster.fsx
        first_group = self.platform.cluster.instance_groups[0]
        lustre: dict[str, Any] = {
            "deployment_type": spec.deployment_type,
            "data_compression_type": "LZ4",
        }
        if spec.deployment_type.startswith("PERSISTENT"):
            lustre["per_unit_storage_throughput"] = spec.per_unit_storage_throughput
        file_system = fsx.CfnFileSystem(
            self,
            "FileSystem",
            file_system_type="LUSTRE",
            file_system_type_version="2.15",
            storage_capacity=spec.storage_capacity_gib,
            subnet_ids=[self.subnet_for(first_group).subnet_id],
            security_group_ids=[self.security_group.security_group_id],
            lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(**lustre),
            # PERSISTENT_1/2 take a customer-managed key (HPT-KMS-KEY refuses SCRATCH with one)
            kms_key_id=self.platform_key.use("AWS::FSx::FileSystem").key_arn if self.platform_key else None,
        )
        file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        return file_system

    # ------------------------------------------------------------------ HyperPod
    def _create_execution_role(self) -> iam.Role:
        stack = cdk.Stack.of(self)
        role = iam.Role(
            self,
            "ExecutionRole",
            # Confused-deputy guard: only SageMaker acting for this account assumes the role. No aws:SourceArn:
            # no source found states that HyperPod passes one, and the cluster ARN (random suffix) does not exist
            # before the role, so a wrong SourceArn condition would leave every node without credentials.
            assumed_by=iam.ServicePrincipal(
                "sagemaker.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
            ),
            description=f"HyperPod instance groups of {self.platform.cluster.name}",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerClusterInstanceRolePolicy")
            ],
        )
        eni_resources = [
            stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
            stack.format_arn(service="ec2", resource="instance", resource_name="*"),
            stack.format_arn(service="ec2", resource="vpc", resource_name=self.vpc.vpc_id),
            *(
                stack.format_arn(service="ec2", resource="security-group", resource_name=group_id)
                for group_id in self.node_security_group_ids
            ),
            *(
                stack.format_arn(service="ec2", resource="subnet", resource_name=s.subnet_id)
                for s in self._subnets_by_az.values()
            ),
        ]
        statements = [
            iam.PolicyStatement(
                sid="VpcCniEni",
                actions=[
                    "ec2:AssignPrivateIpAddresses",
                    "ec2:AttachNetworkInterface",
                    "ec2:CreateNetworkInterface",
                    "ec2:CreateNetworkInterfacePermission",
                    "ec2:DeleteNetworkInterface",
                    "ec2:DeleteNetworkInterfacePermission",
                    "ec2:DetachNetworkInterface",
                    "ec2:ModifyNetworkInterfaceAttribute",
                    "ec2:UnassignPrivateIpAddresses",
                ],
                resources=eni_resources,
            ),
            iam.PolicyStatement(
                sid="VpcCniTagEni",
                actions=["ec2:CreateTags"],
                resources=[stack.format_arn(service="ec2", resource="network-interface", resource_name="*")],
            ),
            iam.PolicyStatement(
                sid="Describe",
                actions=[
                    "ec2:DescribeDhcpOptions",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeInstances",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSubnets",
                    "ec2:DescribeTags",
                    "ec2:DescribeVpcs",
                    "cloudwatch:DescribeAlarms",
                    "ecr:GetAuthorizationToken",
                ],
                resources=["*"],
            ),
            # EKS add-on images (vpc-cni, kube-proxy, pod identity agent, FSx CSI, EFA plugin) and the HyperPod
            # health-monitoring agent come from AWS-owned registry accounts that differ per region
            # (https://docs.aws.amazon.com/eks/latest/userguide/add-ons-images.html; HyperPod CLI chart
            # charts/health-monitoring-agent/templates/_helpers.tpl), and AmazonSageMakerClusterInstanceRolePolicy
            # grants no ECR actions. Pull from any repository, as the reference
            # aws/sagemaker-hyperpod-cluster-setup eks/cloudformation/sagemaker-iam-role-template.yaml does.
            iam.PolicyStatement(
                sid="PullImages",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=["*"],
            ),
            iam.PolicyStatement(
                sid="PodIdentity",
                actions=["eks-auth:AssumeRoleForPodIdentity"],
                resources=[self.eks_cluster.cluster_arn],
            ),
        ]
        for statement in statements:
            role.add_to_policy(statement)
        self.lifecycle_bucket.grant_read(role, "lifecycle/*")
        return role

    def _create_hyperpod_helm_chart(self) -> eks.HelmChart:
        source = self.platform.cluster.hyperpod_helm_chart
        values = {
            "health-monitoring-agent": {"region": self.platform.region},
            # Allocated GPUs reach the container as /dev/null mounts under /var/run/nvidia-container-devices,
            # not as NVIDIA_VISIBLE_DEVICES, so the lifecycle script can make the NVIDIA runtime ignore that
            # variable in unprivileged pods (a pod without a GPU request then sees no GPU). Value and key:
            # NVIDIA/k8s-device-plugin v0.16.1 README "DEVICE_LIST_STRATEGY" and
            # deployments/helm/nvidia-device-plugin/values.yaml; the HyperPod chart vendors that subchart
            # as `nvidia-device-plugin` (aws/sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/Chart.yaml).
            "nvidia-device-plugin": {"deviceListStrategy": "volume-mounts"},
            # Pinned off, not left to the chart's default: these subcharts bind RBAC (``pods create``, Kueue
            # ``workloads/status patch``) to a team group of the name the team access entries map to
            # (helm_chart/HyperPodHelmChart/Chart.yaml ``dependencies`` conditions, values.yaml
            # ``team-role-and-bindings.enabled: false`` at aws/sagemaker-hyperpod-cli 011ca927).
            **{chart: {"enabled": False} for chart in HYPERPOD_CHART_RBAC_SUBCHARTS},
        }
        common: dict[str, Any] = {
            "cluster": self.kubernetes,
            "release": HYPERPOD_HELM_RELEASE,
            "namespace": "kube-system",
            "values": values,
            "wait": True,
            "timeout": KUBECTL_WAIT,
        }
        if source.directory:
            path = Path(source.directory)
            if not path.is_dir():
                raise TenancyError(
                    f"{self.node.path}: cluster.hyperpodHelmChart.directory {source.directory!r} is not a directory; "
                    "vendor helm_chart/HyperPodHelmChart (after `helm dependency build`) there, or use ociRepository."
                )
            asset = s3_assets.Asset(self, "HyperPodChartAsset", path=str(path))
            return eks.HelmChart(self, "HyperPodDependencies", chart_asset=asset, **common)
        if source.oci_repository is None:  # the policy validation guarantees one of the two
            raise TenancyError(
                f"{self.node.path}: cluster.hyperpodHelmChart needs ociRepository or directory."
            )
        return eks.HelmChart(
            self,
            "HyperPodDependencies",
            repository=source.oci_repository,
            chart=source.oci_repository.rstrip("/").rsplit("/", 1)[-1],
            version=source.version,
            **common,
        )

    def _create_hyperpod_cluster(self) -> sagemaker.CfnCluster:
        spec = self.platform.cluster
        groups = []
        for group in spec.instance_groups:
            subnet = self.subnet_for(group)
            groups.append(
                sagemaker.CfnCluster.ClusterInstanceGroupProperty(
                    instance_group_name=group.name,
                    instance_type=group.instance_type,
                    instance_count=group.count,
                    execution_role=self.execution_role.role_arn,
                    threads_per_core=group.threads_per_core,
                    life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                        source_s3_uri=self.lifecycle_bucket.s3_url_for_object("lifecycle"),
                        on_create="on_create.sh",
                    ),
                    instance_storage_configs=[
                        sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                            ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                                volume_size_in_gb=group.ebs_volume_gib
                            )
                        )
                    ],
                    on_start_deep_health_checks=[c.value for c in group.deep_health_checks] or None,
                    training_plan_arn=group.training_plan_arn,
                    override_vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                        security_group_ids=self.node_security_group_ids, subnets=[subnet.subnet_id]
                    ),
                )
            )
        cluster = sagemaker.CfnCluster(
            self,
            "Resource",  # the primary child: node.default_child is the CfnCluster
            cluster_name=spec.name,
            orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
                eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                    cluster_arn=self.eks_cluster.cluster_arn
                )
            ),
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=self.node_security_group_ids,
                subnets=[s.subnet_id for s in self._subnets_by_az.values()],
            ),
            node_recovery="Automatic",
            node_provisioning_mode="Continuous",
            instance_groups=groups,
        )
        cluster.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        return cluster

    # ------------------------------------------------------------------ operators
    def _create_training_operator(self) -> eks.CfnAddon:
        # HyperPodPyTorchJob's CRD comes with the add-on; the operator needs cert-manager (webhook certificates)
        # and Pod Identity, and runs on the HyperPod nodes (research/hyperpod.md section 2.2; awsome-distributed-
        # training terraform-modules/hyperpod-eks-tf/modules/hyperpod_training_operator/main.tf).
        controller = next(c for c in CONTROLLERS if c.service_account == _TRAINING_OPERATOR_SERVICE_ACCOUNT)
        role = iam.Role(
            self,
            "TrainingOperatorRole",
            assumed_by=pod_identity_principal(self.kubernetes),
            description="HyperPod training operator (EKS Pod Identity)",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(_TRAINING_OPERATOR_POLICY)],
        )
        addon = self._addon(
            "TrainingOperator",
            Installer.HYPERPOD_TRAINING_OPERATOR_ADDON.value,
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=role.role_arn, service_account=controller.service_account
                )
            ],
        )
        addon.node.add_dependency(self.cert_manager_addon, self.pod_identity_addon, self.hyperpod_cluster)
        self.training_operator_role = role
        return addon

    def _create_inference_operator(self, base_addons: Sequence[eks.CfnAddon]) -> InferenceOperator | None:
        if not any(t.workload is WorkloadKind.INFERENCE for t in self.platform.teams):
            return None
        # needs cert-manager and the FSx CSI driver (base add-ons) and the HyperPod cluster it watches
        dependencies = [a for a in base_addons if a.addon_name in ("cert-manager", "aws-fsx-csi-driver")]
        operator = install_inference_operator(
            self,
            cluster=self.eks_cluster,
            vpc=self.vpc,
            hyperpod_cluster_arn=self.hyperpod_cluster.attr_cluster_arn,
            tls_bucket=self._bucket(
                "InferenceTlsBucket", access_logs=self._access_logs_bucket, key=self.platform_key
            ),
            data_bucket=self.data_bucket,
            after=[*dependencies, self.hyperpod_cluster],
        )
        if self.platform_key is not None:
            # both buckets are SSE-KMS under the platform key: the operator writes certificates, the S3 driver
            # reads model weights, each through S3 only
            for role in (operator.execution_role, operator.s3_csi_role):
                self.platform_key.grant_data(role, service="s3")
        return operator

    def _create_kuberay(self) -> eks.HelmChart:
        # RayJob/RayCluster (ray.io/v1) come with the KubeRay operator chart (k8s/workloads.py KUBERAY_CHART).
        source = self.platform.cluster.kuberay_chart
        controller = next(c for c in CONTROLLERS if c.namespace == KUBERAY_NAMESPACE)
        chart = eks.HelmChart(
            self,
            "KubeRay",
            cluster=self.kubernetes,
            repository=source.repository,
            chart=Installer.KUBERAY_CHART.value,
            version=source.version,
            release=Installer.KUBERAY_CHART.value,
            namespace=controller.namespace,
            create_namespace=True,
            # the service account admission exempts by name (k8s/workloads.py CONTROLLERS); the operator runs on
            # the system nodes, not on GPU capacity
            values={
                "serviceAccount": {"create": True, "name": controller.service_account},
                "nodeSelector": {labels.NODE_ROLE_LABEL: labels.SYSTEM_NODE_ROLE},
            },
            wait=True,
            timeout=KUBECTL_WAIT,
        )
        chart.node.add_dependency(self.hyperpod_cluster)
        return chart

    # ------------------------------------------------------------------ POSIX identity
    def _create_posix_identity(self, image_uri: str | None) -> PosixIdentityWebhook:
        spec = self.platform.cluster.posix_identity
        if spec.failure_policy is None:  # the policy validation reports it as HPT-POSIX-FAILURE-POLICY
            raise TenancyError(
                f"{self.node.path}: cluster.posixIdentity.failurePolicy is not set; choose Fail (no workload starts "
                "in a team namespace while the webhook or DynamoDB is down) or Ignore (pods may run with the wrong "
                "identity): there is no default."
            )
        webhook = PosixIdentityWebhook(
            self,
            "PosixIdentity",
            cluster=self,
            failure_policy=spec.failure_policy,
            image_uri=image_uri,
            after=[self.cert_manager_addon],
        )
        # after the fairness backend (the Task Governance add-on brings Kueue's own webhooks and CRDs)
        webhook.objects.node.add_dependency(self.fairness.ready)
        return webhook

    # ------------------------------------------------------------------ platform chart
    def _create_platform_chart(self) -> eks.KubernetesManifest:
        # in the EKS cluster's scope, where Cluster.add_cdk8s_chart put it (its construct path is its logical ID)
        manifest = eks.KubernetesManifest(
            self.eks_cluster, "PlatformChart", cluster=self.kubernetes, manifest=self.platform_chart.to_json()
        )
        manifest.node.add_dependency(self.fairness_ready)
        return manifest

    def add_manifest(self, id: str, *manifests: Mapping[str, Any]) -> eks.KubernetesManifest:
        """Apply Kubernetes objects of your own to the cluster, after the platform chart.

        For cluster-wide objects (a ``PriorityClass``, a ``StorageClass``, an operator's namespace): the platform
        chart, the fairness backend and everything before them exist first (``DependsOn``). Objects of one team
        belong to that team: add them with ``TeamTenant.add_manifest`` (team namespaces are refused here, they
        do not exist before the team stack). Each call is one ``eks.KubernetesManifest`` with construct ID ``id``.

        Args:
            id: construct ID of the manifest (in this construct).
            manifests: the objects (dicts as ``kubectl apply`` takes them).

        Returns:
            The manifest applying the objects.

        Raises:
            TenancyError: listing every refused object: in a team's namespace, unnamed, or named like an object
                of the platform chart or of an earlier addition.

        """
        team_namespaces = {
            names.namespace(t.name): f"it belongs to team {t.name!r}: use TeamTenant.add_manifest"
            for t in self.platform.teams
        }
        return self._extensions.add(id, manifests, refused_namespaces=team_namespaces)

    def add_cdk8s_chart(self, id: str, chart: cdk8s.Chart) -> eks.KubernetesManifest:
        """Apply the objects of a cdk8s chart of your own to the cluster, after the platform chart.

        As :meth:`add_manifest`. The chart is rendered now, as ``eks.Cluster.add_cdk8s_chart`` does: build it
        completely first (objects added to it afterwards are not applied).

        Args:
            id: construct ID of the manifest (in this construct).
            chart: the cdk8s chart (in its own ``cdk8s.App``).

        Returns:
            The manifest applying the chart's objects.

        Raises:
            TenancyError: as :meth:`add_manifest`.

        """
        return self.add_manifest(id, *chart_objects(chart))

    # ------------------------------------------------------------------ observability
    def _create_observability(self) -> aps.CfnWorkspace:
        workspace = aps.CfnWorkspace(
            self, "Prometheus", alias=names.prometheus_workspace(self.platform.cluster.name)
        )
        role = iam.Role(
            self,
            "ObservabilityRole",
            assumed_by=pod_identity_principal(self.kubernetes),
            description="HyperPod observability collector (EKS Pod Identity)",
        )
        role.add_to_policy(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.attr_arn]))
        stack = cdk.Stack.of(self)
        # the logs actions the reference role grants (aws/sagemaker-hyperpod-cluster-setup
        # eks/cloudformation/observability-template.yaml, HyperPodObservabilityAddonRole, CloudwatchLogsAccess) and
        # the add-on's troubleshooting page asks for ("Verify Pod Identity association"); a trailing `*` of the
        # log-group ARN also matches its log streams (IAM User Guide, "Resource" element)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[f"logs:{action}" for action in _OBSERVABILITY_LOGS_ACTIONS],
                resources=[
                    stack.format_arn(
                        service="logs",
                        resource="log-group",
                        resource_name="/aws/sagemaker/Clusters/*",
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                ],
            )
        )
        service_account = _OBSERVABILITY_SERVICE_ACCOUNT
        addon = self._addon(
            "Observability",
            _OBSERVABILITY_ADDON,
            configuration_values=cdk.Fn.sub(
                json.dumps(
                    {
                        # the add-on wants the workspace endpoint without the trailing "/"
                        "ampWorkspace": {
                            "prometheusEndpoint": "https://aps-workspaces.${AWS::Region}.amazonaws.com/workspaces/${Id}",
                            "arn": "${Arn}",
                        },
                        "metricsProvider": {
                            "trainingMetrics": {"level": "BASIC", "scrapeInterval": 30},
                            # DISABLED or ADVANCED, the only levels the reference template allows for
                            # this provider (observability-template.yaml, TaskGovernanceMetricLevel)
                            "taskGovernanceMetrics": {"level": "ADVANCED", "scrapeInterval": 30},
                            "nodeMetrics": {"level": "BASIC", "scrapeInterval": 30},
                            "acceleratedComputeMetrics": {"level": "BASIC", "scrapeInterval": 30},
                        },
                        "logging": {"enabled": True},
                    }
                ),
                {"Id": workspace.attr_workspace_id, "Arn": workspace.attr_arn},
            ),
            pod_identity_associations=[
                eks.CfnAddon.PodIdentityAssociationProperty(
                    role_arn=role.role_arn, service_account=service_account
                )
            ],
        )
        addon.node.add_dependency(self.hyperpod_cluster)
        self.observability_role = role
        return workspace

    # ------------------------------------------------------------------ compliance
    def _acknowledge_findings(self) -> None:
        acknowledge(
            self._access_logs_bucket,
            "AwsSolutions-S1",
            "this is the access-log bucket of the other buckets; logging it to itself would loop",
            checkov="CKV_AWS_18",
        )
        acknowledge_role(
            self.execution_role,
            managed_policies="AmazonSageMakerClusterInstanceRolePolicy is the policy HyperPod requires on instance roles",
            wildcards="VPC CNI manages ENIs created at run time (network-interface/*, instance/*); Describe* and "
            "ecr:GetAuthorizationToken do not support resource scoping; nodes pull images (ECR pull actions on *) from "
            "AWS-owned registry accounts that differ per region (EKS add-ons, HyperPod health-monitoring agent) as "
            "the reference HyperPod execution role does, and from the teams' own registries; lifecycle scripts are read under the bucket's lifecycle/ prefix",
        )
        acknowledge_role(
            self.training_operator_role,
            managed_policies="AmazonSageMakerHyperPodTrainingOperatorAccess is the policy the HyperPod training "
            "operator add-on documents for its Pod Identity role",
        )
        if isinstance(self.eks_cluster.role, iam.Role):
            acknowledge_role(
                self.eks_cluster.role, managed_policies="AmazonEKSClusterPolicy is the policy EKS requires"
            )
        for nodegroup in self.eks_cluster.node.find_all():
            if isinstance(nodegroup, eks.Nodegroup) and isinstance(nodegroup.role, iam.Role):
                acknowledge_role(
                    nodegroup.role,
                    managed_policies="the worker-node, CNI and ECR read-only policies EKS managed node groups require",
                )
        if self.observability_role is not None:
            acknowledge_role(
                self.observability_role,
                wildcards="the collector writes to the log groups HyperPod creates per cluster under "
                "/aws/sagemaker/Clusters/",
            )
        stack = cdk.Stack.of(self)
        handlers = [self.eks_cluster.node.try_find_child("KubectlProvider")] + [
            c
            for c in stack.node.children
            if c.node.id.startswith(
                ("Custom::CDKBucketDeployment", "Custom::VpcRestrictDefaultSG", "AWSCDKCfnUtilsProvider")
            )
        ]
        for handler in handlers:
            if handler is not None:
                acknowledge_cdk_handlers(
                    handler,
                    "handler created and maintained by aws-cdk-lib (kubectl/helm provider, bucket deployment, "
                    "default security group restriction, the CfnJson utility of the IRSA trust conditions): "
                    "its managed Lambda policies, runtime and invoke wildcards are CDK's",
                )
