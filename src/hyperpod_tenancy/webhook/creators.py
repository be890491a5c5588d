"""Who created a ConfigMap or Secret of a team namespace: recorded at CREATE, kept on every UPDATE.

Pods read ConfigMaps and Secrets (``envFrom``, a mounted script), so whoever may edit one decides what a pod
that reads it runs, as the pod's person. The webhook writes the requester's ``request.userInfo.username`` as
:data:`~hyperpod_tenancy.k8s.labels.CREATED_BY_ANNOTATION` on CREATE (whatever the object said, whoever sends it,
controllers included), and on UPDATE puts back the stored object's record and its
:data:`~hyperpod_tenancy.k8s.labels.TEAM_SHARED_LABEL` (a ``kubectl replace`` that drops them keeps them; one that
rewrites them changes nothing). The policy ``hyperpod-tenancy-tenant-config-owners``
(:mod:`hyperpod_tenancy.k8s.tenant_guards`) lets only the recorded creator update or delete the object unless it
is team-shared.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import labels

__all__ = ["RESOURCES", "governs", "record_ops"]

#: The resources whose creator is recorded (core group).
RESOURCES = frozenset({"configmaps", "secrets"})


def governs(*, group: str, resource: str, sub_resource: str, operation: str) -> bool:
    """Whether a request creates or updates a ConfigMap or Secret."""
    return group == "" and resource in RESOURCES and not sub_resource and operation in ("CREATE", "UPDATE")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _meta_map(obj: Mapping[str, Any] | None, field: str) -> dict[str, Any] | None:
    meta = obj.get("metadata") if obj is not None else None
    value = meta.get(field) if isinstance(meta, dict) else None
    return value if isinstance(value, dict) else None


def _keep(obj: dict[str, Any], field: str, key: str, want: str | None) -> list[dict[str, Any]]:
    """JSONPatch operations that make ``obj.metadata.<field>[key]`` ``want`` (None: absent)."""
    current = _meta_map(obj, field)
    have = current.get(key) if current is not None else None
    if have == want:
        return []
    if want is None:
        return [{"op": "remove", "path": f"/metadata/{field}/{_escape(key)}"}]
    if current is None:
        if not isinstance(obj.get("metadata"), dict):
            return [{"op": "add", "path": "/metadata", "value": {field: {key: want}}}]
        return [{"op": "add", "path": f"/metadata/{field}", "value": {key: want}}]
    return [{"op": "add", "path": f"/metadata/{field}/{_escape(key)}", "value": want}]


def record_ops(
    obj: dict[str, Any], *, operation: str, username: str, old: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """Return the JSONPatch that records the creator (CREATE) or keeps the stored record and shared label (UPDATE)."""
    if operation == "CREATE":
        return _keep(obj, "annotations", labels.CREATED_BY_ANNOTATION, username)
    old_annotations = _meta_map(old, "annotations") or {}
    old_labels = _meta_map(old, "labels") or {}
    creator = old_annotations.get(labels.CREATED_BY_ANNOTATION)
    shared = old_labels.get(labels.TEAM_SHARED_LABEL)
    return [
        *_keep(
            obj, "annotations", labels.CREATED_BY_ANNOTATION, creator if isinstance(creator, str) else None
        ),
        *_keep(obj, "labels", labels.TEAM_SHARED_LABEL, shared if isinstance(shared, str) else None),
    ]
