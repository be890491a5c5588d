"""IAM principals shared by the constructs."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam

from hyperpod_tenancy.constructs._private.memo import attribute


def pod_identity_principal(cluster: eks.ICluster) -> iam.IPrincipal:
    """EKS Pod Identity, limited to associations of ``cluster`` in this account (confused-deputy guard)."""
    return iam.ServicePrincipal(
        "pods.eks.amazonaws.com",
        conditions={
            "StringEquals": {"aws:SourceAccount": cdk.Aws.ACCOUNT_ID},
            "ArnEquals": {"aws:SourceArn": attribute(cluster, "cluster_arn")},
        },
    ).with_session_tags()
