"""Charts: ordered, checked sets of manifest dicts applied as one unit (one ``eks.KubernetesManifest``).

Our own objects are plain dicts, rendered and schema-checked in pure Python; a chart only checks that every
object is named and unique and puts ``metadata`` in a fixed key order. Nothing here imports jsii or cdk8s.

:func:`extension_manifests` checks the objects a user adds to a team or to the cluster (``TeamTenant.add_manifest``,
``SharedHyperPodCluster.add_manifest``): namespace defaulted and confined, cluster-scoped kinds refused unless
allowed, and none of them replacing one of the platform's own objects.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from hyperpod_tenancy.errors import TenancyError

__all__ = [
    "CLUSTER_SCOPED_KINDS",
    "ManifestChart",
    "api_group",
    "extension_manifests",
    "is_cluster_scoped",
    "object_id",
]

#: Cluster-scoped kinds, by ``(API group, kind)``: built-in Kubernetes kinds and the CRDs this platform
#: installs (Kueue). Any other kind counts as namespaced: the API server cannot be asked at synth time.
CLUSTER_SCOPED_KINDS: frozenset[tuple[str, str]] = frozenset(
    {
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolume"),
        ("", "ComponentStatus"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        ("apiregistration.k8s.io", "APIService"),
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
        ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
        ("storage.k8s.io", "CSIDriver"),
        ("storage.k8s.io", "CSINode"),
        ("storage.k8s.io", "VolumeAttachment"),
        ("node.k8s.io", "RuntimeClass"),
        ("networking.k8s.io", "IngressClass"),
        ("certificates.k8s.io", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
        ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("kueue.x-k8s.io", "ResourceFlavor"),
        ("kueue.x-k8s.io", "Cohort"),
        ("kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("kueue.x-k8s.io", "AdmissionCheck"),
        ("kueue.x-k8s.io", "Topology"),
        ("kueue.x-k8s.io", "MultiKueueCluster"),
        ("kueue.x-k8s.io", "MultiKueueConfig"),
        ("kueue.x-k8s.io", "ProvisioningRequestConfig"),
    }
)


def api_group(manifest: Mapping[str, Any]) -> str:
    """Return the API group of a manifest (``""`` for the core group): ``apiVersion`` without its version."""
    api_version = str(manifest.get("apiVersion", ""))
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def is_cluster_scoped(manifest: Mapping[str, Any]) -> bool:
    """Whether the manifest's kind is in :data:`CLUSTER_SCOPED_KINDS`."""
    return (api_group(manifest), manifest.get("kind")) in CLUSTER_SCOPED_KINDS


def object_id(manifest: Mapping[str, Any]) -> str:
    """ID of a manifest: ``<kind>-<namespace>-<name>`` (stable, unique per object of a chart)."""
    meta = manifest.get("metadata", {})
    parts = [manifest["kind"], meta.get("namespace", ""), meta["name"]]
    return "-".join(p for p in parts if p)


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _sorted(value[k]) for k in sorted(value) if value[k] is not None}
    if isinstance(value, list | tuple):
        return [_sorted(v) for v in value]
    return value


def _canonical(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """Copy a manifest with ``apiVersion``, ``kind``, ``metadata`` first and ``metadata`` keys sorted.

    The order the charts had when cdk8s rendered them (``ApiObject`` sorts metadata, keeps the rest as given),
    so applied manifests and deployed templates did not change when the cdk8s round trip was dropped.
    """
    head = {k: manifest[k] for k in ("apiVersion", "kind") if k in manifest}
    head["metadata"] = _sorted(manifest["metadata"])
    rest = {k: v for k, v in manifest.items() if k not in ("apiVersion", "kind", "metadata")}
    return copy.deepcopy({**head, **rest})


class ManifestChart:
    """An ordered set of named, unique manifest dicts, applied to the cluster as one unit.

    Names are always explicit: Kueue and the admission policies refer to objects by name.

    Args:
        id: the chart's name, used in error messages.
        manifests: the objects, in apply order.

    Raises:
        TenancyError: a manifest has no ``metadata.name`` or two manifests share kind, namespace and name.

    """

    def __init__(self, id: str, *, manifests: Iterable[Mapping[str, Any]]) -> None:
        objects: list[dict[str, Any]] = []
        seen: set[str] = set()
        for manifest in manifests:
            if not manifest.get("metadata", {}).get("name"):
                raise TenancyError(f"{id}: a {manifest.get('kind')} manifest has no metadata.name.")
            oid = object_id(manifest)
            if oid in seen:
                raise TenancyError(f"{id}: two manifests are both {oid}.")
            seen.add(oid)
            objects.append(_canonical(manifest))
        #: The chart's name.
        self.id: str = id
        self._manifests = tuple(objects)
        self._ids = frozenset(seen)

    @property
    def object_ids(self) -> frozenset[str]:
        """IDs (:func:`object_id`) of the chart's objects."""
        return self._ids

    def to_json(self) -> list[dict[str, Any]]:
        """Return the objects in apply order (a copy: changing it changes nothing that is applied)."""
        return copy.deepcopy(list(self._manifests))


def extension_manifests(
    owner: str,
    manifests: Iterable[Mapping[str, Any]],
    *,
    taken: Collection[str],
    namespace: str | None = None,
    allowed_namespaces: Collection[str] | None = None,
    refused_namespaces: Mapping[str, str] | None = None,
    allow_cluster_scoped: bool = True,
) -> list[dict[str, Any]]:
    """Check the objects a user adds to a team or the cluster; return copies, namespace filled in.

    Args:
        owner: who the objects are added to (construct path), for the messages.
        manifests: the user's objects.
        taken: IDs (:func:`object_id`) already applied: the platform's own objects and earlier additions.
        namespace: the namespace given to namespaced objects without one. Default: none given.
        allowed_namespaces: the only namespaces objects may be in. Default: any.
        refused_namespaces: namespaces objects may not be in, each with the reason.
        allow_cluster_scoped: whether kinds of :data:`CLUSTER_SCOPED_KINDS` are accepted.

    Raises:
        TenancyError: listing every refused object: unnamed, duplicated, replacing an applied object, in a
            namespace it may not be in, or of a cluster-scoped kind that was not allowed.

    """
    problems: list[str] = []
    checked: list[dict[str, Any]] = []
    seen = set(taken)
    for manifest in manifests:
        obj = copy.deepcopy(dict(manifest))
        kind = obj.get("kind")
        meta = obj.setdefault("metadata", {})
        if not kind or not obj.get("apiVersion") or not meta.get("name"):
            problems.append(f"a {kind or 'manifest without kind'} has no apiVersion, kind or metadata.name")
            continue
        if is_cluster_scoped(obj):
            if not allow_cluster_scoped:
                problems.append(
                    f"{kind} {meta['name']!r} is cluster-scoped: it would reach beyond the team; pass "
                    "allow_cluster_scoped=True if it must"
                )
                continue
        elif namespace is not None and not meta.get("namespace"):
            meta["namespace"] = namespace
        ns = meta.get("namespace")
        if ns is not None and allowed_namespaces is not None and ns not in allowed_namespaces:
            problems.append(
                f"{kind} {meta['name']!r} is in namespace {ns!r}, not in {sorted(allowed_namespaces)}; pass "
                f"allow_namespaces=[{ns!r}] if it must"
            )
            continue
        if ns is not None and refused_namespaces and ns in refused_namespaces:
            problems.append(f"{kind} {meta['name']!r} is in namespace {ns!r}: {refused_namespaces[ns]}")
            continue
        oid = object_id(obj)
        if oid in seen:
            problems.append(f"{kind} {meta['name']!r} ({oid}) is already applied or given twice; rename it")
            continue
        seen.add(oid)
        checked.append(obj)
    if problems:
        raise TenancyError(f"{owner}: refused objects:\n" + "\n".join(f"  - {p}" for p in problems))
    return checked
