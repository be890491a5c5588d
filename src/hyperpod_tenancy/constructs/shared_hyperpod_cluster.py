"""``SharedHyperPodCluster``: the EKS + SageMaker HyperPod cluster that teams share.

Deploy order is enforced with CloudFormation dependencies, not documentation::

    EKS -> base add-ons -> HyperPod Helm chart -> HyperPod cluster -> Task Governance add-on
        -> Kueue webhook ready -> scheduler config -> (per team) compute quota -> team chart
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import aws_cdk as cdk
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
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_cdk_handlers,
    acknowledge_role,
    warn,
)
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs._private.task_governance import scheduler_config_properties
from hyperpod_tenancy.constructs.team_tenant import TeamTenant
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.kueue import kueue_helm_values
from hyperpod_tenancy.k8s.platform_chart import PlatformChart
from hyperpod_tenancy.policy import FairnessBackend, InstanceGroup, Platform, policy_warnings

__all__ = ["HYPERPOD_HELM_RELEASE", "SharedHyperPodCluster"]

_LIFECYCLE_ASSETS = Path(__file__).parent / "assets" / "lifecycle"
#: Release name and namespace the HyperPod documentation uses for the dependencies chart.
HYPERPOD_HELM_RELEASE = "dependencies"
_TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
_OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"
_OBSERVABILITY_SERVICE_ACCOUNT = "hyperpod-observability-operator-otel-collector"
_KUBERNETES_VERSIONS = {
    "1.30": eks.KubernetesVersion.V1_30,
    "1.31": eks.KubernetesVersion.V1_31,
    "1.32": eks.KubernetesVersion.V1_32,
    "1.33": eks.KubernetesVersion.V1_33,
}
_LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))


class SharedHyperPodCluster(Construct):
    """One SageMaker HyperPod cluster on EKS, shared by the teams of a :class:`Platform`.

    Creates: a VPC (unless ``vpc`` is given) with private subnets in the platform's availability zones and a
    security group for EKS, HyperPod and FSx (all traffic within the group for EFA, TCP 988 and 1018-1023 for
    Lustre); an EKS cluster (authentication mode API, managed node group capacity, control-plane logging,
    secrets encryption) with the add-ons HyperPod needs (vpc-cni with network policy enforcement, kube-proxy,
    coredns, eks-pod-identity-agent, aws-fsx-csi-driver, cert-manager); the HyperPod dependencies Helm chart;
    a lifecycle-script bucket and a least-privilege execution role; the ``AWS::SageMaker::Cluster`` (retained
    on delete, automatic node recovery, deep health checks); FSx for Lustre (retained); the team data bucket
    (retained); the fairness backend (Task Governance add-on + ``ClusterSchedulerConfig``, or upstream Kueue);
    and the observability add-on with an Amazon Managed Prometheus workspace.

    Args:
        scope: parent construct.
        id: construct ID.
        platform: the validated tenancy policy; the cluster renders everything from it.
        vpc: an existing VPC. Default: a VPC is created with ``cluster.vpcCidr`` in ``cluster.availabilityZones``
            (one NAT gateway, flow logs on). An imported VPC must have private subnets with egress in those zones.
        endpoint_access: EKS API endpoint access. Default: private only; reach the API through your network.
        kubectl_layer: Lambda layer with kubectl/helm for the cluster's handlers. Default: kubectl v1.33.

    Attributes:
        platform: the policy the cluster was built from.
        vpc, security_group, eks_cluster, hyperpod_cluster, file_system, data_bucket, lifecycle_bucket,
        execution_role, hyperpod_helm_chart: the created resources (see each attribute's type).
        scheduler_config: the Task Governance ``ClusterSchedulerConfig`` (``None`` with the Kueue backend).
        fairness_ready: the construct team objects must depend on before creating quotas or queues.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        vpc: ec2.IVpc | None = None,
        endpoint_access: eks.EndpointAccess | None = None,
        kubectl_layer: lambda_.ILayerVersion | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.platform = platform
        self._teams: dict[str, TeamTenant] = {}
        spec = platform.cluster
        stack = cdk.Stack.of(self)
        if not cdk.Token.is_unresolved(stack.region) and stack.region != platform.region:
            raise TenancyError(
                f"{self.node.path}: the stack is in {stack.region} but platform.region is {platform.region}; "
                "create the stack with env=Environment(region=platform.region)."
            )
        for issue in policy_warnings(platform):
            warn(self, issue.code, f"{issue.path}: {issue.message} {issue.fix}")

        #: VPC of the cluster.
        self.vpc: ec2.IVpc = vpc or self._create_vpc()
        self._subnets_by_az = self._private_subnets_by_az()
        #: Security group shared by the EKS control plane ENIs, HyperPod nodes and FSx.
        self.security_group = self._create_security_group()
        #: The EKS cluster (authentication mode API, NODEGROUP capacity).
        self.eks_cluster = self._create_eks(endpoint_access, kubectl_layer)
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
        self.scheduler_config: sagemaker.CfnClusterSchedulerConfig | None = None
        #: Team quotas, queues and charts depend on this construct.
        self.fairness_ready: Construct
        if platform.fairness_backend is FairnessBackend.TASK_GOVERNANCE:
            self.fairness_ready = self._create_task_governance()
        else:
            self.fairness_ready = self._create_kueue()
        self.platform_chart_manifest = self._create_platform_chart()
        self.observability_workspace: aps.CfnWorkspace | None = None
        if spec.observability:
            self.observability_workspace = self._create_observability()
        self._acknowledge_findings()

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
    def teams(self) -> dict[str, TeamTenant]:
        """Tenants added with :meth:`add_team`, by team name (a copy)."""
        return dict(self._teams)

    def subnet_for(self, group: InstanceGroup) -> ec2.ISubnet:
        """Private subnet an instance group runs in (its availability zone, default the first zone)."""
        zone = group.availability_zone or self.platform.cluster.availability_zones[0]
        return self._subnets_by_az[zone]

    def add_team(self, id: str, *, team: str, scope: Construct | None = None) -> TeamTenant:
        """Create the :class:`TeamTenant` for the policy's team ``team``.

        Args:
            id: construct ID of the tenant.
            team: name of a team of the platform policy.
            scope: where to create it. Default: inside this construct (use a separate stack per team to keep
                templates far from CloudFormation's limits).

        Raises:
            TenancyError: no such team, or the team was already added.

        """
        if team in self._teams:
            raise TenancyError(f"{self.node.path}: team {team!r} was already added.")
        tenant = TeamTenant(scope or self, id, cluster=self, team=team)
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
            nat_gateways=1,
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
            description="HyperPod nodes, EKS control plane ENIs and FSx for Lustre",
            allow_all_outbound=True,
        )
        sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "all traffic within the group (EFA, node-to-node)")
        for port in _LUSTRE_PORTS:
            sg.add_ingress_rule(sg, port, "FSx for Lustre")
        return sg

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
            security_group=self.security_group,
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
        cluster.add_nodegroup_capacity(
            "SystemNodes",
            instance_types=[ec2.InstanceType(system.instance_type)],
            min_size=system.count,
            desired_size=system.count,
            max_size=max(system.count, 2) * 2,
            subnets=ec2.SubnetSelection(subnets=private),
            labels={"hyperpod-tenancy.io/node-role": "system"},
        )
        return cluster

    def _addon(self, id: str, name: str, **props: Any) -> eks.CfnAddon:
        return eks.CfnAddon(
            self,
            id,
            addon_name=name,
            cluster_name=self.eks_cluster.cluster_name,
            resolve_conflicts="OVERWRITE",
            **props,
        )

    def _create_base_addons(self) -> list[eks.CfnAddon]:
        # VPC CNI enforces NetworkPolicy only with its network policy agent switched on.
        vpc_cni = self._addon(
            "VpcCni", "vpc-cni", configuration_values=json.dumps({"enableNetworkPolicy": "true"})
        )
        addons = [
            vpc_cni,
            self._addon("KubeProxy", "kube-proxy"),
            self._addon("CoreDns", "coredns"),
            self._addon("PodIdentityAgent", "eks-pod-identity-agent"),
            self._addon("FsxCsiDriver", "aws-fsx-csi-driver"),
            self._addon("CertManager", "cert-manager"),
        ]
        self.vpc_cni_addon = vpc_cni
        return addons

    @property
    def network_policy_enforced(self) -> bool:
        """Whether the cluster's CNI enforces NetworkPolicy (VPC CNI with ``enableNetworkPolicy``)."""
        values = self.vpc_cni_addon.configuration_values
        return isinstance(values, str) and json.loads(values).get("enableNetworkPolicy") == "true"

    # ------------------------------------------------------------------ storage
    def _bucket(self, id: str, *, access_logs: s3.IBucket | None) -> s3.Bucket:
        return s3.Bucket(
            self._storage,
            id,
            encryption=s3.BucketEncryption.S3_MANAGED,
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
        data = self._bucket("DataBucket", access_logs=access_logs)
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
        )
        file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        return file_system

    # ------------------------------------------------------------------ HyperPod
    def _create_execution_role(self) -> iam.Role:
        stack = cdk.Stack.of(self)
        role = iam.Role(
            self,
            "ExecutionRole",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description=f"HyperPod instance groups of {self.platform.cluster.name}",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerClusterInstanceRolePolicy")
            ],
        )
        eni_resources = [
            stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
            stack.format_arn(service="ec2", resource="instance", resource_name="*"),
            stack.format_arn(service="ec2", resource="vpc", resource_name=self.vpc.vpc_id),
            stack.format_arn(
                service="ec2", resource="security-group", resource_name=self.security_group.security_group_id
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
            iam.PolicyStatement(
                sid="PullImages",
                actions=[
                    "ecr:BatchCheckLayerAvailability",
                    "ecr:BatchGetImage",
                    "ecr:GetDownloadUrlForLayer",
                ],
                resources=[stack.format_arn(service="ecr", resource="repository", resource_name="*")],
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
        values = {"health-monitoring-agent": {"region": self.platform.region}}
        common: dict[str, Any] = {
            "cluster": self.kubernetes,
            "release": HYPERPOD_HELM_RELEASE,
            "namespace": "kube-system",
            "values": values,
            "wait": True,
            "timeout": cdk.Duration.minutes(15),
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
                        security_group_ids=[self.security_group.security_group_id], subnets=[subnet.subnet_id]
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
                security_group_ids=[self.security_group.security_group_id],
                subnets=[s.subnet_id for s in self._subnets_by_az.values()],
            ),
            node_recovery="Automatic",
            node_provisioning_mode="Continuous",
            instance_groups=groups,
        )
        cluster.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
        return cluster

    # ------------------------------------------------------------------ fairness
    def _create_task_governance(self) -> Construct:
        addon = self._addon("TaskGovernance", _TASK_GOVERNANCE_ADDON)
        addon.node.add_dependency(self.hyperpod_cluster)
        # Kueue's webhook must serve before the scheduler config and quotas create Kueue objects.
        kueue_ready = eks.KubernetesObjectValue(
            self,
            "KueueReady",
            cluster=self.kubernetes,
            object_type="deployment",
            object_name="kueue-controller-manager",
            object_namespace="kueue-system",
            json_path=".status.readyReplicas",
            timeout=cdk.Duration.minutes(15),
        )
        kueue_ready.node.add_dependency(addon)
        props = scheduler_config_properties(
            self.platform, cluster_arn=self.hyperpod_cluster_arn, name=f"{self.platform.cluster.name}-policy"
        )
        sched = props["SchedulerConfig"]
        config = sagemaker.CfnClusterSchedulerConfig(
            self,
            "SchedulerConfig",
            name=props["Name"],
            cluster_arn=props["ClusterArn"],
            scheduler_config=sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty(
                priority_classes=[
                    sagemaker.CfnClusterSchedulerConfig.PriorityClassProperty(
                        name=p["Name"], weight=p["Weight"]
                    )
                    for p in sched["PriorityClasses"]
                ],
                fair_share=sched["FairShare"],
                idle_resource_sharing=sched.get("IdleResourceSharing"),
            ),
        )
        config.node.add_dependency(kueue_ready)
        self.task_governance_addon = addon
        self.kueue_ready = kueue_ready
        self.scheduler_config = config
        return config

    def _create_kueue(self) -> Construct:
        chart = self.platform.cluster.kueue_chart
        kueue = eks.HelmChart(
            self,
            "Kueue",
            cluster=self.kubernetes,
            repository=chart.repository,
            chart="kueue",
            version=chart.version,
            release="kueue",
            namespace="kueue-system",
            create_namespace=True,
            values=kueue_helm_values(self.platform),
            wait=True,
            timeout=cdk.Duration.minutes(15),
        )
        kueue.node.add_dependency(self.hyperpod_cluster)
        self.kueue_chart = kueue
        return kueue

    def _create_platform_chart(self) -> eks.KubernetesManifest:
        chart = PlatformChart.build(self.platform)
        manifest = self.eks_cluster.add_cdk8s_chart("PlatformChart", chart)
        manifest.node.add_dependency(self.fairness_ready)
        return manifest

    # ------------------------------------------------------------------ observability
    def _create_observability(self) -> aps.CfnWorkspace:
        workspace = aps.CfnWorkspace(self, "Prometheus", alias=f"{self.platform.cluster.name}-metrics")
        role = iam.Role(
            self,
            "ObservabilityRole",
            assumed_by=pod_identity_principal(self.kubernetes),
            description="HyperPod observability collector (EKS Pod Identity)",
        )
        role.add_to_policy(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.attr_arn]))
        stack = cdk.Stack.of(self)
        role.add_to_policy(
            iam.PolicyStatement(
                actions=[
                    "logs:CreateLogGroup",
                    "logs:CreateLogStream",
                    "logs:DescribeLogStreams",
                    "logs:PutLogEvents",
                ],
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
                            "taskGovernanceMetrics": {"level": "BASIC", "scrapeInterval": 30},
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
        )
        acknowledge_role(
            self.execution_role,
            managed_policies="AmazonSageMakerClusterInstanceRolePolicy is the policy HyperPod requires on instance roles",
            wildcards="VPC CNI manages ENIs created at run time (network-interface/*, instance/*); Describe* and "
            "ecr:GetAuthorizationToken do not support resource scoping; nodes pull AWS-owned images from "
            "repositories of this account and region; lifecycle scripts are read under the bucket's lifecycle/ prefix",
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
        if self.observability_workspace is not None:
            acknowledge_role(
                self.observability_role,
                wildcards="the collector writes to the log groups HyperPod creates per cluster under "
                "/aws/sagemaker/Clusters/",
            )
        stack = cdk.Stack.of(self)
        handlers = [self.eks_cluster.node.try_find_child("KubectlProvider")] + [
            c for c in stack.node.children if c.node.id.startswith("Custom::CDKBucketDeployment")
        ]
        for handler in handlers:
            if handler is not None:
                acknowledge_cdk_handlers(
                    handler,
                    "handler created and maintained by aws-cdk-lib (kubectl/helm provider, bucket deployment): "
                    "its managed Lambda policies, runtime and invoke wildcards are CDK's",
                )
