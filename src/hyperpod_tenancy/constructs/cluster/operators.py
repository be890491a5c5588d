"""The shared cluster's operators: training, inference, KubeRay, the platform chart and observability."""

from __future__ import annotations

import json
from collections.abc import Sequence

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from hyperpod_tenancy.constructs._private.inference_operator import (
    InferenceOperator,
    install_inference_operator,
)
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.constructs.cluster.kubernetes import (
    add_addon,
)
from hyperpod_tenancy.constructs.cluster.storage import bucket
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.workloads import CONTROLLERS, KUBERAY_NAMESPACE, Installer
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import WorkloadKind

__all__ = [
    "create_inference_operator",
    "create_kuberay",
    "create_observability",
    "create_platform_chart",
    "create_training_operator",
]

_TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
#: Managed policy the HyperPod training operator's Pod Identity role needs (research/hyperpod.md section 2.2;
#: awsome-distributed-training ``modules/hyperpod_training_operator/main.tf``).
_TRAINING_OPERATOR_POLICY = "AmazonSageMakerHyperPodTrainingOperatorAccess"
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
_OBSERVABILITY_ADDON = "amazon-sagemaker-hyperpod-observability"


def create_training_operator(shared: ClusterBuild) -> tuple[eks.CfnAddon, iam.Role]:
    """Install the HyperPod training operator add-on and its Pod Identity role."""
    # HyperPodPyTorchJob's CRD comes with the add-on; the operator needs cert-manager (webhook certificates)
    # and Pod Identity, and runs on the HyperPod nodes (research/hyperpod.md section 2.2; awsome-distributed-
    # training terraform-modules/hyperpod-eks-tf/modules/hyperpod_training_operator/main.tf).
    controller = next(c for c in CONTROLLERS if c.service_account == _TRAINING_OPERATOR_SERVICE_ACCOUNT)
    role = iam.Role(
        shared,
        "TrainingOperatorRole",
        assumed_by=pod_identity_principal(shared.kubernetes),
        description="HyperPod training operator (EKS Pod Identity)",
        managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(_TRAINING_OPERATOR_POLICY)],
    )
    addon = add_addon(
        shared,
        "TrainingOperator",
        Installer.HYPERPOD_TRAINING_OPERATOR_ADDON.value,
        pod_identity_associations=[
            eks.CfnAddon.PodIdentityAssociationProperty(
                role_arn=role.role_arn, service_account=controller.service_account
            )
        ],
    )
    addon.node.add_dependency(shared.cert_manager_addon, shared.pod_identity_addon, shared.hyperpod_cluster)
    return addon, role


def create_inference_operator(
    shared: ClusterBuild, base_addons: Sequence[eks.CfnAddon]
) -> InferenceOperator | None:
    """Install the HyperPod inference operator when a team runs inference, else nothing."""
    if not any(t.workload is WorkloadKind.INFERENCE for t in shared.platform.teams):
        return None
    # needs cert-manager and the FSx CSI driver (base add-ons) and the HyperPod cluster it watches
    dependencies = [a for a in base_addons if a.addon_name in ("cert-manager", "aws-fsx-csi-driver")]
    operator = install_inference_operator(
        shared,
        cluster=shared.eks_cluster,
        vpc=shared.vpc,
        hyperpod_cluster_arn=shared.hyperpod_cluster.attr_cluster_arn,
        tls_bucket=bucket(
            shared._buckets.storage,
            "InferenceTlsBucket",
            access_logs=shared._buckets.access_logs,
            key=shared.platform_key,
        ),
        data_bucket=shared.data_bucket,
        after=[*dependencies, shared.hyperpod_cluster],
    )
    if shared.platform_key is not None:
        # both buckets are SSE-KMS under the platform key: the operator writes certificates, the S3 driver
        # reads model weights, each through S3 only
        for role in (operator.execution_role, operator.s3_csi_role):
            shared.platform_key.grant_data(role, service="s3")
    return operator


def create_kuberay(shared: ClusterBuild) -> eks.HelmChart:
    """Install the KubeRay operator chart."""
    # RayJob/RayCluster (ray.io/v1) come with the KubeRay operator chart (k8s/workloads.py KUBERAY_CHART).
    source = shared.platform.cluster.kuberay_chart
    controller = next(c for c in CONTROLLERS if c.namespace == KUBERAY_NAMESPACE)
    chart = eks.HelmChart(
        shared,
        "KubeRay",
        cluster=shared.kubernetes,
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
    chart.node.add_dependency(shared.hyperpod_cluster)
    return chart


def create_platform_chart(shared: ClusterBuild) -> eks.KubernetesManifest:
    """Apply the platform chart (cluster-scoped objects) after the fairness backend and the webhook."""
    # in the EKS cluster's scope, where Cluster.add_cdk8s_chart put it (its construct path is its logical ID)
    manifest = eks.KubernetesManifest(
        shared.eks_cluster,
        "PlatformChart",
        cluster=shared.kubernetes,
        manifest=shared.platform_chart.to_json(),
    )
    manifest.node.add_dependency(shared.fairness_ready)
    return manifest


def create_observability(shared: ClusterBuild) -> tuple[aps.CfnWorkspace, iam.Role]:
    """Create the Prometheus workspace and install the HyperPod observability add-on; return both and its role."""
    workspace = aps.CfnWorkspace(
        shared, "Prometheus", alias=names.prometheus_workspace(shared.platform.cluster.name)
    )
    role = iam.Role(
        shared,
        "ObservabilityRole",
        assumed_by=pod_identity_principal(shared.kubernetes),
        description="HyperPod observability collector (EKS Pod Identity)",
    )
    role.add_to_policy(iam.PolicyStatement(actions=["aps:RemoteWrite"], resources=[workspace.attr_arn]))
    stack = cdk.Stack.of(shared)
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
    addon = add_addon(
        shared,
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
    addon.node.add_dependency(shared.hyperpod_cluster)
    return workspace, role
