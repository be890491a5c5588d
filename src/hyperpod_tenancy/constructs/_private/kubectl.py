"""Limits and helpers shared by every construct that runs kubectl/helm through the cluster's provider."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

__all__ = ["KUBECTL_WAIT", "eks_addon", "kubernetes_manifest"]

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


#: The label ``KubernetesManifest`` puts on every object of a pruned manifest, followed by the construct's address
#: (aws-cdk-lib ``aws-eks-v2/lib/k8s-manifest.ts``, ``PRUNE_LABEL_PREFIX`` and ``injectPruneLabel``).
PRUNE_LABEL_PREFIX = "aws.cdk.eks/prune-"


def kubernetes_manifest(
    scope: Construct, id: str, *, cluster: eks.ICluster, objects: list[dict[str, Any]], overwrite: bool
) -> eks.KubernetesManifest:
    """Create ``eks.KubernetesManifest(scope, id, cluster=cluster, manifest=objects, overwrite=overwrite)``, faster.

    The same resource, byte for byte: the objects reach the CDK as one JSON string (the ``Manifest`` property
    ``KubernetesManifest`` renders with ``stack.to_json_string``), where handing them over as nested values costs
    the CDK's runtime a conversion of every value (milliseconds for a team's chart, once per team). What that
    conversion does is done here: ``None`` is left out (a dictionary's value, a list's item), and the prune label comes first
    among each object's labels. Objects holding a fraction or an integer beyond 2^53 take the CDK's own path (Python
    and JavaScript write such numbers differently).
    """
    plain = _plain(objects)
    if plain is None:
        return eks.KubernetesManifest(scope, id, cluster=cluster, manifest=objects, overwrite=overwrite)
    manifest = eks.KubernetesManifest(scope, id, cluster=cluster, manifest=[], overwrite=overwrite)
    resource = manifest.node.default_child
    if not isinstance(
        resource, cdk.CfnResource
    ):  # pragma: no cover - KubernetesManifest's child is its resource
        raise TypeError(f"{manifest.node.path}: expected a CfnResource default child")
    if cluster.prune:
        label = PRUNE_LABEL_PREFIX + manifest.node.addr
        plain = [_labelled(o, label) if isinstance(o, dict) and o.get("kind") else o for o in plain]
    resource.add_property_override("Manifest", json.dumps(plain, separators=(",", ":"), ensure_ascii=False))
    return manifest


def _labelled(obj: dict[str, Any], label: str) -> dict[str, Any]:
    metadata = dict(obj.get("metadata") or {})
    metadata["labels"] = {label: "", **(metadata.get("labels") or {})}
    return {**obj, "metadata": metadata}


def _plain(value: Any) -> Any:
    """Return ``value`` as the CDK renders it, or ``None`` if it holds a fraction or an integer beyond 2^53.

    As the CDK renders it: ``None`` is left out, as a dictionary's value and as a list's item.
    """
    if isinstance(value, dict):
        items = [(key, _plain(item)) for key, item in value.items() if item is not None]
        return None if any(plain is None for _, plain in items) else dict(items)
    if isinstance(value, list):
        plain = [_plain(item) for item in value if item is not None]
        return None if any(item is None for item in plain) else plain
    if isinstance(value, float) or (type(value) is int and abs(value) > _MAX_SAFE_INTEGER):
        return None
    return value


#: The largest integer JavaScript represents exactly (``Number.MAX_SAFE_INTEGER``).
_MAX_SAFE_INTEGER = 2**53 - 1
