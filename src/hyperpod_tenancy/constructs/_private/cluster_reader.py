"""A scheduled function's read-only way into the cluster's Kubernetes API: access entry, ClusterRole, binding.

The function's role gets an EKS access entry (type ``STANDARD``, no access policy) mapping it to a Kubernetes group
of its own; the group is bound to a ClusterRole with only the ``rules`` given. The eviction collector and the
drift audit use it, each with its own group and role.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels

__all__ = ["grant_cluster_reads"]


def grant_cluster_reads(
    scope: Construct,
    id: str,
    *,
    cluster: IHyperPodCluster,
    function: lambda_.Function,
    group: str,
    role_name: str,
    rules: Sequence[dict[str, Any]],
) -> tuple[eks.CfnAccessEntry, eks.KubernetesManifest]:
    """Let ``function`` read what ``rules`` allow, cluster-wide; return the access entry and the RBAC manifest.

    Also grants ``eks:DescribeCluster`` (the endpoint and its CA). Whatever runs the function should depend on
    both returned constructs.
    """
    role = function.role
    if role is None:  # pragma: no cover - a Function always has a role here
        raise TenancyError(f"{function.node.path}: the function has no role")
    function.add_to_role_policy(
        iam.PolicyStatement(actions=["eks:DescribeCluster"], resources=[cluster.eks_cluster_arn])
    )
    access_entry = eks.CfnAccessEntry(
        scope,
        f"{id}Access",
        cluster_name=cluster.eks_cluster_name,
        principal_arn=role.role_arn,
        type="STANDARD",
        # no access policy: the group below is bound to a read-only ClusterRole
        kubernetes_groups=[group],
    )
    metadata = {"name": role_name, "labels": labels.object_labels()}
    rbac = eks.KubernetesManifest(
        scope,
        f"{id}Rbac",
        cluster=cluster.kubernetes,
        manifest=[
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": metadata,
                "rules": list(rules),
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": metadata,
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role_name,
                },
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
            },
        ],
    )
    if cluster.platform_chart_manifest is not None:
        rbac.node.add_dependency(cluster.platform_chart_manifest)
    return access_entry, rbac
