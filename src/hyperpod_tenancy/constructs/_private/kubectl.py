"""Limits and helpers shared by every construct that runs kubectl/helm through the cluster's provider."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

__all__ = ["KUBECTL_WAIT", "eks_addon"]

#: Longest wait (Helm ``--timeout``, ``KubernetesObjectValue``) a kubectl-provider resource may have. CDK's
#: kubectl provider handler and its provider-framework Lambda time out at 15 minutes
#: (aws-cdk-lib ``aws-eks-v2/lib/kubectl-provider.ts``); a wait that long is killed with the Lambda and
#: CloudFormation hangs instead of reporting the handler's error. Keep two minutes of headroom.
KUBECTL_WAIT = cdk.Duration.minutes(13)


def eks_addon(scope: Construct, id: str, *, cluster_name: str, addon_name: str, **props: Any) -> eks.CfnAddon:
    """Create an EKS add-on of ``cluster_name`` that overwrites conflicting fields (``resolve_conflicts: OVERWRITE``)."""
    return eks.CfnAddon(
        scope,
        id,
        addon_name=addon_name,
        cluster_name=cluster_name,
        resolve_conflicts="OVERWRITE",
        **props,
    )
