"""The HyperPod cluster: its execution role, the HyperPod Helm chart and the cluster itself (retained)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sagemaker as sagemaker

from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.mig import MIG_CONFIG_LABEL

__all__ = [
    "HYPERPOD_CHART_RBAC_SUBCHARTS",
    "HYPERPOD_HELM_RELEASE",
    "create_execution_role",
    "create_hyperpod_cluster",
    "create_hyperpod_helm_chart",
    "gpu_operator_values",
]

#: Subcharts of the HyperPod dependencies chart that grant RBAC to team groups; always rendered disabled.
HYPERPOD_CHART_RBAC_SUBCHARTS = (
    "team-role-and-bindings",
    "namespaced-role-and-bindings",
    "cluster-role-and-bindings",
)
#: Release name and namespace the HyperPod documentation uses for the dependencies chart.
HYPERPOD_HELM_RELEASE = "dependencies"


def create_execution_role(shared: ClusterBuild) -> iam.Role:
    """Create the execution role of every HyperPod instance group."""
    stack = cdk.Stack.of(shared)
    role = iam.Role(
        shared,
        "ExecutionRole",
        # Confused-deputy guard: only SageMaker acting for this account assumes the role. No aws:SourceArn:
        # no source found states that HyperPod passes one, and the cluster ARN (random suffix) does not exist
        # before the role, so a wrong SourceArn condition would leave every node without credentials.
        assumed_by=iam.ServicePrincipal(
            "sagemaker.amazonaws.com", conditions={"StringEquals": {"aws:SourceAccount": stack.account}}
        ),
        description=f"HyperPod instance groups of {shared.platform.cluster.name}",
        managed_policies=[
            iam.ManagedPolicy.from_aws_managed_policy_name("AmazonSageMakerClusterInstanceRolePolicy")
        ],
    )
    eni_resources = [
        stack.format_arn(service="ec2", resource="network-interface", resource_name="*"),
        stack.format_arn(service="ec2", resource="instance", resource_name="*"),
        stack.format_arn(service="ec2", resource="vpc", resource_name=shared.vpc.vpc_id),
        *(
            stack.format_arn(service="ec2", resource="security-group", resource_name=group_id)
            for group_id in shared.node_security_group_ids
        ),
        *(
            stack.format_arn(service="ec2", resource="subnet", resource_name=s.subnet_id)
            for s in shared._subnets_by_az.values()
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
            resources=[shared.eks_cluster.cluster_arn],
        ),
    ]
    for statement in statements:
        role.add_to_policy(statement)
    shared.lifecycle_bucket.grant_read(role, "lifecycle/*")
    return role


def gpu_operator_values() -> dict[str, Any]:
    """Return the HyperPod chart values that install its GPU operator for MIG layouts, hardened as the default plugin.

    The chart's ``gpu-operator`` subchart (aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/
    gpu-operator``, off by default) wraps NVIDIA's chart under the key ``gpu-operator`` and runs its MIG manager,
    which applies each node's ``nvidia.com/mig.config`` layout, and its own device plugin with
    ``mig.strategy: mixed``. Three things are set here rather than left to defaults:

    * the chart's own ``nvidia-device-plugin`` is turned off (its node affinity lists the partitioned types too:
      two plugins would advertise one node's GPUs);
    * the operator's device plugin hands GPUs over as volume mounts (``DEVICE_LIST_STRATEGY``, which the
      operator applies after its own settings: ``TransformDevicePlugin`` in NVIDIA/gpu-operator
      ``controllers/object_controls.go``), and CDI stays off, so no other strategy is chosen for it;
    * the operator's toolkit, which configures the container runtime on every GPU node, ignores
      ``NVIDIA_VISIBLE_DEVICES`` in unprivileged containers and accepts the volume mounts: its installer defaults
      ``accept-nvidia-visible-devices-envvar-when-unprivileged`` to true (NVIDIA/nvidia-container-toolkit v1.19.0,
      the version the subchart pins, ``cmd/nvidia-ctk-installer/toolkit/toolkit.go``), which would undo the
      lifecycle script's hardening.
    """
    return {
        "nvidia-device-plugin": {"devicePlugin": {"enabled": False}, "deviceListStrategy": "volume-mounts"},
        "gpu-operator": {
            "enabled": True,
            "gpu-operator": {
                "cdi": {"enabled": False},
                "devicePlugin": {"env": [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]},
                "toolkit": {
                    "env": [
                        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
                        {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS", "value": "true"},
                    ]
                },
            },
        },
    }


def create_hyperpod_helm_chart(shared: ClusterBuild) -> eks.HelmChart:
    """Install the HyperPod dependencies Helm chart (its team RBAC subcharts off)."""
    source = shared.platform.cluster.hyperpod_helm_chart
    values = {
        "health-monitoring-agent": {"region": shared.platform.region},
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
    if any(g.mig_config is not None for g in shared.platform.cluster.instance_groups):
        values.update(gpu_operator_values())
    common: dict[str, Any] = {
        "cluster": shared.kubernetes,
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
                f"{shared.node.path}: cluster.hyperpodHelmChart.directory {source.directory!r} is not a directory; "
                "vendor helm_chart/HyperPodHelmChart (after `helm dependency build`) there, or use ociRepository."
            )
        asset = s3_assets.Asset(shared, "HyperPodChartAsset", path=str(path))
        return eks.HelmChart(shared, "HyperPodDependencies", chart_asset=asset, **common)
    if source.oci_repository is None:  # the policy validation guarantees one of the two
        raise TenancyError(f"{shared.node.path}: cluster.hyperpodHelmChart needs ociRepository or directory.")
    return eks.HelmChart(
        shared,
        "HyperPodDependencies",
        repository=source.oci_repository,
        chart=source.oci_repository.rstrip("/").rsplit("/", 1)[-1],
        version=source.version,
        **common,
    )


def create_hyperpod_cluster(shared: ClusterBuild) -> sagemaker.CfnCluster:
    """Create the HyperPod cluster (retained) with its instance groups."""
    spec = shared.platform.cluster
    groups = []
    for group in spec.instance_groups:
        subnet = shared.subnet_for(group)
        groups.append(
            sagemaker.CfnCluster.ClusterInstanceGroupProperty(
                instance_group_name=group.name,
                instance_type=group.instance_type,
                instance_count=group.count,
                execution_role=shared.execution_role.role_arn,
                threads_per_core=group.threads_per_core,
                life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                    source_s3_uri=shared.lifecycle_bucket.s3_url_for_object("lifecycle"),
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
                    security_group_ids=shared.node_security_group_ids, subnets=[subnet.subnet_id]
                ),
                # HyperPod's "managed" way to partition a group's GPUs: the label its GPU operator applies
                kubernetes_config=sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
                    labels={MIG_CONFIG_LABEL: group.mig_config}
                )
                if group.mig_config is not None
                else None,
            )
        )
    cluster = sagemaker.CfnCluster(
        shared,
        "Resource",  # the primary child: node.default_child is the CfnCluster
        cluster_name=spec.name,
        orchestrator=sagemaker.CfnCluster.OrchestratorProperty(
            eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                cluster_arn=shared.eks_cluster.cluster_arn
            )
        ),
        vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
            security_group_ids=shared.node_security_group_ids,
            subnets=[s.subnet_id for s in shared._subnets_by_az.values()],
        ),
        node_recovery="Automatic",
        node_provisioning_mode="Continuous",
        instance_groups=groups,
    )
    cluster.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    return cluster
