"""A whole workload stamped: every pod spec of its kind, the identity annotations and the default queue."""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.labels import QUEUE_NAME_LABEL
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.webhook.patch._base import (
    Identity,
    JsonPatch,
    Path,
    Refused,
    _dotted,
    _get,
    _typed,
)
from hyperpod_tenancy.webhook.patch.pod_spec import _stamp_pod_spec, pod_spec_paths

__all__ = ["stamp"]


def _record(ident: Identity) -> dict[str, str]:
    return {
        posix_identity.POSIX_USER_ANNOTATION: ident.person,
        posix_identity.POSIX_UID_ANNOTATION: str(ident.uid),
        posix_identity.POSIX_GID_ANNOTATION: str(ident.gid),
    }


def _stamp_annotations(patch: JsonPatch, metadata: Path, ident: Identity, *, keep: bool) -> None:
    meta = _typed(_get(patch.doc, metadata), dict, metadata) or {}
    annotations = _typed(meta.get("annotations"), dict, (*metadata, "annotations")) or {}
    record = _record(ident)
    if not annotations:
        patch.set((*metadata, "annotations"), record)  # one operation for the common case
        return
    for key, value in record.items():
        current = annotations.get(key)
        if keep and current is not None and current != value:
            raise Refused(
                f"{_dotted((*metadata, 'annotations'))}[{key}] {current!r} would change the workload's "
                f"recorded identity ({value!r}); the identity a workload was created with is kept."
            )
        patch.set((*metadata, "annotations", key), value)


def stamp(
    obj: dict[str, Any],
    *,
    kind: WorkloadKindSpec,
    ident: Identity,
    home_claim: str,
    keep: bool,
    default_queue: str | None,
    previous: Identity | None = None,
    strict_groups: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Stamp ``ident`` on ``obj`` (edited in place) and return the JSONPatch operations and the warnings.

    Args:
        obj: the request's object.
        kind: its kind's row of the workload table.
        ident: who its pods run as.
        home_claim: the team claim holding the home directories.
        keep: UPDATE of a workload with a recorded identity: a different UID or record is refused, not replaced.
        default_queue: the LocalQueue to set when ``kueue.x-k8s.io/queue-name`` is absent (None: leave it).
        previous: the identity the object recorded before a re-stamp (an UPDATE by another person that changes
            what runs): its UIDs and home mount are replaced by ``ident``'s instead of being refused.
        strict_groups: set ``supplementalGroupsPolicy: Strict`` (replacing any other value): the runtime then
            adds no group the image's ``/etc/group`` lists.

    Raises:
        Refused: the object explicitly asks for root, another group or another recorded identity.
        MalformedObject: a field has the wrong JSON type.

    """
    patch = JsonPatch(obj)
    warnings: list[str] = []
    metadata_paths: dict[Path, None] = {("metadata",): None}
    for path, spec in pod_spec_paths(obj, kind):
        warnings += _stamp_pod_spec(
            patch,
            spec,
            path,
            ident,
            keep=keep,
            claim=home_claim,
            previous=previous,
            strict_groups=strict_groups,
        )
        metadata_paths[(*path[:-1], "metadata")] = None
    for metadata in metadata_paths:
        _stamp_annotations(patch, metadata, ident, keep=keep)
    if default_queue is not None:
        _default_queue(patch, default_queue)
    return patch.ops, warnings


def _default_queue(patch: JsonPatch, queue: str) -> None:
    labels = _typed(_get(patch.doc, ("metadata", "labels")), dict, ("metadata", "labels")) or {}
    if QUEUE_NAME_LABEL not in labels:
        patch.set(("metadata", "labels", QUEUE_NAME_LABEL), queue)
