"""``SharedHyperPodCluster``: the EKS + SageMaker HyperPod cluster that teams share.

Deploy order is enforced with CloudFormation dependencies, not documentation::

    EKS -> base add-ons -> HyperPod Helm chart -> HyperPod cluster -> Task Governance add-on
        -> Kueue webhook ready -> scheduler config -> POSIX identity webhook ready
        -> platform chart, (per team) compute quota -> team chart
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

import aws_cdk as cdk
import cdk8s
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct

from hyperpod_tenancy.constructs._private.extensions import ChartExtensions, chart_objects
from hyperpod_tenancy.constructs._private.inference_operator import (
    InferenceOperator,
)
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs._private.sso_role_provider import SsoRoleProvider
from hyperpod_tenancy.constructs.backends import Backend, ClusterFairness
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.constructs.cluster.findings import (
    acknowledge_cluster_findings,
    checked_backend,
    warn_cluster_at_synth,
)
from hyperpod_tenancy.constructs.cluster.hyperpod import (
    HYPERPOD_HELM_RELEASE,
    create_execution_role,
    create_hyperpod_cluster,
    create_hyperpod_helm_chart,
)
from hyperpod_tenancy.constructs.cluster.imported import import_cluster
from hyperpod_tenancy.constructs.cluster.kubernetes import (
    NODE_BOOTSTRAP_ADDONS,
    RejectAl2OnNewKubernetes,
    addons_after_the_system_nodes,
    create_base_addons,
    create_eks,
)
from hyperpod_tenancy.constructs.cluster.network import (
    admit_cidr_to_api_endpoint,
    admit_to_api_endpoint,
    connect_node_security_groups,
    create_api_endpoint_groups,
    create_security_group,
    private_subnets_by_az,
    use_vpc,
)
from hyperpod_tenancy.constructs.cluster.operators import (
    create_inference_operator,
    create_kuberay,
    create_observability,
    create_platform_chart,
    create_training_operator,
)
from hyperpod_tenancy.constructs.cluster.storage import create_buckets, create_file_system
from hyperpod_tenancy.constructs.cluster.vpc import (
    VpcAttributes,
)
from hyperpod_tenancy.constructs.encryption import PlatformKey, encrypt_platform_resources
from hyperpod_tenancy.constructs.posix_identity_webhook import PosixIdentityWebhook
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant, tenants_of
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.policy import InstanceGroup, Platform, names
from hyperpod_tenancy.policy.plan import TenancyPlan

__all__ = ["HYPERPOD_HELM_RELEASE", "KUBECTL_WAIT", "NODE_BOOTSTRAP_ADDONS", "SharedHyperPodCluster"]


class SharedHyperPodCluster(ClusterBuild):
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
            :class:`~hyperpod_tenancy.constructs.cluster.vpc.VpcAttributes` (ID, CIDR blocks, a private subnet per zone),
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
        #: The policy resolved (:class:`~hyperpod_tenancy.policy.plan.TenancyPlan`): what tenants read.
        self.plan: TenancyPlan = TenancyPlan.resolve(platform, where=self.node.path)
        #: The policy the cluster was built from.
        self.platform: Platform = self.plan.platform
        self._sso_role_provider: SsoRoleProvider | None = None
        #: The fairness backend registered for ``platform.fairness_backend``.
        self.fairness_backend: Backend = checked_backend(self)
        warn_cluster_at_synth(self)
        #: The platform's customer-managed key (``encryption.kmsKey``; ``None``: AWS-managed keys).
        self.platform_key: PlatformKey | None = (
            PlatformKey(self, "PlatformKey", platform=platform) if platform.encryption.kms_key else None
        )
        encrypt_platform_resources(self, self.platform_key)

        self.vpc, self.vpc_cidr_blocks = use_vpc(self, vpc, vpc_cidr_blocks)
        self._subnets_by_az = private_subnets_by_az(self)
        #: Security group of the HyperPod nodes and FSx (EFA and Lustre traffic within the group).
        self.security_group = create_security_group(self)
        groups = create_api_endpoint_groups(self)
        #: Additional security group of the EKS control-plane ENIs (the private API endpoint); only the
        #: callers of :meth:`allow_api_access_from` are admitted through it.
        self.api_endpoint_security_group: ec2.SecurityGroup = groups[0]
        #: Members of this group reach the private API endpoint (TCP 443): one rule, whatever the number of teams
        #: whose Studio apps join it (a rule per team would meet the 60-rule default of the endpoint's group).
        self.api_client_security_group: ec2.SecurityGroup = groups[1]
        #: The EKS cluster (authentication mode API, NODEGROUP capacity).
        self.eks_cluster, nodes = create_eks(self, endpoint_access, kubectl_layer)
        #: The managed node group of the cluster's own pods (add-on controllers, the webhook, coredns).
        self.system_node_group: eks.Nodegroup = nodes
        connect_node_security_groups(self)
        base = create_base_addons(self)
        base_addons = list(base.all)
        #: The vpc-cni add-on (network policy enforcement switched on).
        self.vpc_cni_addon: eks.CfnAddon = base.vpc_cni
        #: The EKS Pod Identity agent add-on.
        self.pod_identity_addon: eks.CfnAddon = base.pod_identity
        #: The cert-manager add-on (the HyperPod training operator and the POSIX identity webhook need it).
        self.cert_manager_addon: eks.CfnAddon = base.cert_manager
        self._buckets = buckets = create_buckets(self)
        #: Shared bucket for team data under ``teams/<team>/`` (retained on delete).
        self.data_bucket = buckets.data
        #: The bucket of the HyperPod lifecycle scripts (retained on delete).
        self.lifecycle_bucket = buckets.lifecycle
        #: Execution role of every HyperPod instance group.
        self.execution_role = create_execution_role(self)
        #: HyperPod dependencies Helm chart (device plugins, health monitoring, training operators).
        self.hyperpod_helm_chart = create_hyperpod_helm_chart(self)
        for addon in base_addons:
            self.hyperpod_helm_chart.node.add_dependency(addon)
        #: The HyperPod cluster (retained on delete).
        self.hyperpod_cluster = create_hyperpod_cluster(self)
        self.hyperpod_cluster.node.add_dependency(self.hyperpod_helm_chart, buckets.upload)
        #: FSx for Lustre shared by the teams (retained on delete).
        self.file_system = create_file_system(self)
        #: The HyperPod training operator add-on (serves ``HyperPodPyTorchJob``).
        self.training_operator_addon, role = create_training_operator(self)
        #: Pod Identity role of the HyperPod training operator (``AmazonSageMakerHyperPodTrainingOperatorAccess``).
        self.training_operator_role: iam.Role = role
        #: The KubeRay operator chart (serves ``RayJob`` and ``RayCluster``).
        self.kuberay_chart = create_kuberay(self)
        #: The HyperPod inference operator add-on and its roles (serves ``InferenceEndpointConfig`` and
        #: ``JumpStartModel``); ``None`` when no team has ``workload: inference``.
        self.inference_operator: InferenceOperator | None = create_inference_operator(self, base_addons)
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
        self.platform_chart_manifest: eks.KubernetesManifest = create_platform_chart(self)
        self._extensions = ChartExtensions(
            self, cluster=self.kubernetes, chart=self.platform_chart, after=self.platform_chart_manifest
        )
        observability = create_observability(self) if platform.cluster.observability else (None, None)
        #: Amazon Managed Prometheus workspace of the observability add-on (``None`` without observability).
        self.observability_workspace: aps.CfnWorkspace | None = observability[0]
        #: Pod Identity role of the observability collector (``None`` without observability).
        self.observability_role: iam.Role | None = observability[1]
        acknowledge_cluster_findings(self)
        addons_after_the_system_nodes(self)
        self.node.add_validation(RejectAl2OnNewKubernetes(self))

    # ------------------------------------------------------------------ import
    #: Import an existing HyperPod/EKS cluster (another app or account) to add tenants to it
    #: (:func:`~hyperpod_tenancy.constructs.cluster.imported.import_cluster`).
    from_attributes = staticmethod(import_cluster)

    # ------------------------------------------------------------------ attributes
    @property
    def kubernetes(self) -> eks.ICluster:
        """The EKS cluster as the ``ICluster`` that Kubernetes manifests, patches and charts take."""
        return cast("eks.ICluster", self.eks_cluster)

    @functools.cached_property  # a token: read once, not once per team
    def hyperpod_cluster_arn(self) -> str:
        """ARN of the HyperPod cluster."""
        return self.hyperpod_cluster.attr_cluster_arn

    @functools.cached_property
    def eks_cluster_name(self) -> str:
        """Name of the EKS cluster."""
        return self.eks_cluster.cluster_name

    @functools.cached_property
    def eks_cluster_arn(self) -> str:
        """ARN of the EKS cluster."""
        return self.eks_cluster.cluster_arn

    @functools.cached_property
    def file_system_id(self) -> str:
        """ID of the shared FSx for Lustre file system."""
        return self.file_system.ref

    @functools.cached_property
    def file_system_dns_name(self) -> str:
        """DNS name of the shared FSx for Lustre file system."""
        return self.file_system.attr_dns_name

    @functools.cached_property
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
            self._sso_role_provider = SsoRoleProvider(
                self, "SsoRoleProvider", team_accounts=bool(self.platform.teams_in_own_accounts)
            )
        return self._sso_role_provider.service_token

    @property
    def teams(self) -> dict[str, TeamTenant]:
        """Tenants created on this cluster (with :meth:`add_team`, a ``TeamStack`` or ``TeamTenant``), by team name."""
        return tenants_of(self)

    def subnet_for(self, group: InstanceGroup) -> ec2.ISubnet:
        """Private subnet an instance group runs in (its availability zone, default the first zone)."""
        zone = group.availability_zone or self.platform.cluster.availability_zones[0]
        return self._subnets_by_az[zone]

    @property
    def service_cidr(self) -> str:
        """The EKS Service CIDR (ClusterIPs, set explicitly from ``cluster.serviceCidr``)."""
        return self.platform.cluster.service_cidr

    @functools.cached_property
    def cluster_security_group_id(self) -> str:
        """ID of the security group EKS creates for the cluster (on the control-plane ENIs and system nodes)."""
        return self.eks_cluster.cluster_security_group_id

    @functools.cached_property
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
        admit_to_api_endpoint(
            scope, id, group_id=self.api_endpoint_security_group.security_group_id, peer=peer
        )

    def allow_api_access_from_cidr(
        self, scope: Construct, id: str, *, cidr: str
    ) -> ec2.CfnSecurityGroupIngress:
        """Admit the IPv4 block ``cidr`` (a peered VPC) to the API endpoint (TCP 443), as :meth:`allow_api_access_from`."""
        return admit_cidr_to_api_endpoint(
            scope, id, group_id=self.api_endpoint_security_group.security_group_id, cidr=cidr
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
        return TeamTenant(
            scope or self,
            id,
            cluster=self,
            team=team,
            sso_role_timeout=sso_role_timeout,
            sso_start_url=sso_start_url,
        )

    # ------------------------------------------------------------------ network

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

    # ------------------------------------------------------------------ EKS

    @property
    def network_policy_enforced(self) -> bool:
        """Whether the cluster's CNI enforces NetworkPolicy (VPC CNI with ``enableNetworkPolicy``)."""
        values = self.vpc_cni_addon.configuration_values
        return isinstance(values, str) and json.loads(values).get("enableNetworkPolicy") == "true"

    # ------------------------------------------------------------------ storage

    # ------------------------------------------------------------------ HyperPod

    # ------------------------------------------------------------------ operators

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

    # ------------------------------------------------------------------ compliance
