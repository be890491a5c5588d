"""Objects users add to a team or to the cluster: checked, then applied after the platform's own chart."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

import cdk8s
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from hyperpod_tenancy.k8s._manifest_chart import ManifestChart, extension_manifests, object_id


class ChartExtensions:
    """The ``add_manifest``/``add_cdk8s_chart`` of a construct that applies one of our charts.

    Each addition is its own ``eks.KubernetesManifest`` in ``scope``, applied after ``after`` (the chart's
    manifest); no addition may replace an object of the chart or of an earlier addition.

    Args:
        scope: the construct the additions belong to (``TeamTenant``, ``SharedHyperPodCluster``).
        cluster: the cluster they are applied to.
        chart: our chart applied there.
        after: the construct applying ``chart``.
        check: called with each addition's path and its checked objects before they are applied (raises to
            refuse them). Default: none.

    """

    def __init__(
        self,
        scope: Construct,
        *,
        cluster: eks.ICluster,
        chart: ManifestChart,
        after: Construct,
        check: Callable[[str, list[dict[str, Any]]], None] | None = None,
    ) -> None:
        self._scope = scope
        self._check = check
        self._cluster = cluster
        self._after = after
        self._taken: set[str] = set(chart.object_ids)

    def add(
        self,
        id: str,
        manifests: Iterable[Mapping[str, Any]],
        *,
        namespace: str | None = None,
        allowed_namespaces: Collection[str] | None = None,
        refused_namespaces: Mapping[str, str] | None = None,
        allow_cluster_scoped: bool = True,
    ) -> eks.KubernetesManifest:
        """Check ``manifests`` (:func:`~hyperpod_tenancy.k8s._manifest_chart.extension_manifests`) and apply them."""
        objects = extension_manifests(
            f"{self._scope.node.path}/{id}",
            manifests,
            taken=self._taken,
            namespace=namespace,
            allowed_namespaces=allowed_namespaces,
            refused_namespaces=refused_namespaces,
            allow_cluster_scoped=allow_cluster_scoped,
        )
        if self._check is not None:
            self._check(f"{self._scope.node.path}/{id}", objects)
        manifest = eks.KubernetesManifest(self._scope, id, cluster=self._cluster, manifest=objects)
        manifest.node.add_dependency(self._after)
        self._taken.update(object_id(o) for o in objects)
        return manifest


def chart_objects(chart: cdk8s.Chart) -> list[dict[str, Any]]:
    """Render a user's cdk8s chart now (objects added to it later are not applied)."""
    return list(chart.to_json())
