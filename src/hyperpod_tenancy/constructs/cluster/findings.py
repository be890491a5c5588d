"""The findings the shared cluster's resources are acknowledged for, each with its reason; and its synth-time warnings."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_cdk_handlers,
    acknowledge_role,
    warn,
)
from hyperpod_tenancy.constructs._private.feature_flags import warn_flags_off
from hyperpod_tenancy.constructs.backends import Backend, backend_for
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.errors import PolicyError, TenancyError
from hyperpod_tenancy.policy import policy_warnings

__all__ = ["acknowledge_cluster_findings", "checked_backend", "warn_cluster_at_synth"]


def checked_backend(shared: ClusterBuild) -> Backend:
    """Return the fairness backend of the cluster's policy, once it and the stack's Region accept the policy.

    Raises:
        PolicyError: the backend's own problems with the policy.
        TenancyError: the stack's Region is not the policy's ``region``.

    """
    platform = shared.platform
    backend = backend_for(platform)
    issues = list(backend.validate(platform))
    if issues:
        raise PolicyError(issues, source=f"{shared.node.path} (fairness backend)")
    stack = cdk.Stack.of(shared)
    if not cdk.Token.is_unresolved(stack.region) and stack.region != platform.region:
        raise TenancyError(
            f"{shared.node.path}: the stack is in {stack.region} but platform.region is {platform.region}; "
            "create the stack with env=Environment(region=platform.region)."
        )
    return backend


def warn_cluster_at_synth(shared: ClusterBuild) -> None:
    """Emit the policy's warnings and the one naming the app's feature flags the templates depend on."""
    for issue in policy_warnings(shared.platform):
        warn(shared, issue.code, f"{issue.path}: {issue.message} {issue.fix}")
    warn_flags_off(shared)


def acknowledge_cluster_findings(shared: ClusterBuild) -> None:
    """Acknowledge the nag findings the cluster's resources are built to have, each with its reason."""
    acknowledge(
        shared._buckets.access_logs,
        "AwsSolutions-S1",
        "this is the access-log bucket of the other buckets; logging it to itself would loop",
        checkov="CKV_AWS_18",
    )
    acknowledge_role(
        shared.execution_role,
        managed_policies="AmazonSageMakerClusterInstanceRolePolicy is the policy HyperPod requires on instance roles",
        wildcards="VPC CNI manages ENIs created at run time (network-interface/*, instance/*); Describe* and "
        "ecr:GetAuthorizationToken do not support resource scoping; nodes pull images (ECR pull actions on *) from "
        "AWS-owned registry accounts that differ per region (EKS add-ons, HyperPod health-monitoring agent) as "
        "the reference HyperPod execution role does, and from the teams' own registries; lifecycle scripts are read under the bucket's lifecycle/ prefix",
    )
    acknowledge_role(
        shared.training_operator_role,
        managed_policies="AmazonSageMakerHyperPodTrainingOperatorAccess is the policy the HyperPod training "
        "operator add-on documents for its Pod Identity role",
    )
    if isinstance(shared.eks_cluster.role, iam.Role):
        acknowledge_role(
            shared.eks_cluster.role, managed_policies="AmazonEKSClusterPolicy is the policy EKS requires"
        )
    for nodegroup in shared.eks_cluster.node.find_all():
        if isinstance(nodegroup, eks.Nodegroup) and isinstance(nodegroup.role, iam.Role):
            acknowledge_role(
                nodegroup.role,
                managed_policies="the worker-node, CNI and ECR read-only policies EKS managed node groups require",
            )
    if shared.observability_role is not None:
        acknowledge_role(
            shared.observability_role,
            wildcards="the collector writes to the log groups HyperPod creates per cluster under "
            "/aws/sagemaker/Clusters/",
        )
    stack = cdk.Stack.of(shared)
    handlers = [shared.eks_cluster.node.try_find_child("KubectlProvider")] + [
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
