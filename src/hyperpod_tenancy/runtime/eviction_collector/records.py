"""One eviction record per preempted Workload: who, what, when, by whom, and the GPU-hours at risk."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.runtime.checkpoint_scanner import declarations
from hyperpod_tenancy.runtime.eviction_collector._common import (
    _DURATION,
    _MINUTES,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    LOG,
    PREEMPTED,
    PRIORITY_CLASS_LABEL,
    SCHEMA_VERSION,
    _quantity,
)
from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
)

__all__ = [
    "declared_interval",
    "eviction_record",
    "interval_minutes",
    "last_checkpoint",
    "parse_time",
    "snapshot_time",
]


# ---------------------------------------------------------------------- records
def parse_time(text: str) -> dt.datetime:
    """Parse a Kubernetes RFC 3339 time (``2026-07-01T02:03:04Z``) in UTC, to the second."""
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).replace(microsecond=0)


def snapshot_time(event: Mapping[str, Any]) -> dt.datetime:
    """Return the scheduled instant of an EventBridge event (``time``), in UTC.

    Raises:
        ValueError: the event has no ``time`` (invoke it from the schedule, or pass ``{"time": "<ISO 8601>"}``).

    """
    text = event.get("time")
    if not isinstance(text, str):
        raise ValueError('eviction collector: the event has no "time"; pass {"time": "2026-07-01T02:05:00Z"}')
    return parse_time(text)


def interval_minutes(text: object) -> int | None:
    """Return the minutes of a checkpoint interval annotation (``30m``, ``1h``, ``90s``, ``45``); ``None`` if unreadable."""
    match = _DURATION.match(str(text)) if text is not None else None
    if match is None:
        return None
    return max(1, round(int(match.group(1)) * _MINUTES[match.group(2)]))


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in (workload.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == kind:
            return dict(condition)
    return None


def _pod_gpus(template: Mapping[str, Any]) -> int:
    spec = template.get("spec") or {}
    total = 0
    for container in spec.get("containers") or []:
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(
            GPU_RESOURCE, (resources.get("limits") or {}).get(GPU_RESOURCE)
        )
        total += _quantity(value or 0)
    return total


def declared_interval(workload: Mapping[str, Any], *, interval_env: str, dir_env: str) -> int | None:
    """Return the checkpoint interval (minutes) a Workload declares, or ``None``.

    The first readable ``interval_env`` of the Workload's :func:`~hyperpod_tenancy.runtime.checkpoint_scanner.
    declarations` (the environment of its pod sets' main containers: where ``hyp create hyp-pytorch-job`` puts
    it and admission bounds it). No annotation is read: the Workload's carry nothing of the Job, and a pod
    template's are written by the tenant and refused by admission.
    """
    return next(
        (
            m
            for d in declarations(workload, dir_env=dir_env, interval_env=interval_env)
            if (m := interval_minutes(d.interval)) is not None
        ),
        None,
    )


def last_checkpoint(workload: Mapping[str, Any], *, annotation: str) -> dt.datetime | None:
    """Return the checkpoint scanner's ``annotation`` of the Workload's own metadata (never a pod template's).

    ``None`` where it is missing or not an RFC 3339 time (logged: the scanner writes ``2026-07-01T02:03:04Z``).
    """
    text = ((workload.get("metadata") or {}).get("annotations") or {}).get(annotation)
    if not isinstance(text, str) or not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        LOG.warning(
            "workload %s: annotation %s=%r is not an RFC 3339 time; ignored",
            _name(workload),
            annotation,
            text,
        )
        return None


def _name(workload: Mapping[str, Any]) -> str:
    metadata = workload.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def eviction_record(
    workload: Mapping[str, Any],
    *,
    cluster: str,
    interval_env: str,
    dir_env: str,
    last_checkpoint_annotation: str | None = None,
    team_gpu_flavors: Sequence[str] = (),
) -> dict[str, Any] | None:
    """Return the record of the workload's current preemption eviction, or ``None`` when it is not evicted by preemption.

    ``team_gpu_flavors``: the flavors in which the workload's team queue can hold GPUs (:func:`gpu_flavors`), the
    instance type where Kueue has already cleared the admission and the pod sets select none; only one is
    unambiguous.

    The declared checkpoint interval is :func:`declared_interval`; the last checkpoint is
    :func:`last_checkpoint` (``last_checkpoint_annotation`` of the Workload's metadata, ``None``: not read),
    capped at the eviction time (a checkpoint written while the evicted pods were stopping saved everything).
    """
    evicted = _condition(workload, "Evicted")
    if not evicted or evicted.get("status") != "True" or evicted.get("reason") != PREEMPTED:
        return None
    moment = parse_time(str(evicted["lastTransitionTime"]))
    metadata = workload.get("metadata") or {}
    spec = workload.get("spec") or {}
    pod_sets = spec.get("podSets") or []
    admission = (workload.get("status") or {}).get("admission") or {}
    assignments = admission.get("podSetAssignments") or []
    if assignments:
        gpus = sum(_quantity((a.get("resourceUsage") or {}).get(GPU_RESOURCE, 0)) for a in assignments)
        flavors = [str((a.get("flavors") or {}).get(GPU_RESOURCE, "")) for a in assignments]
    else:
        gpus = sum(int(p.get("count", 1)) * _pod_gpus(p.get("template") or {}) for p in pod_sets)
        flavors = []
    selectors = [
        str(
            ((p.get("template") or {}).get("spec") or {}).get("nodeSelector", {}).get(INSTANCE_TYPE_LABEL, "")
        )
        for p in pod_sets
    ]
    only_flavor = [team_gpu_flavors[0]] if len(team_gpu_flavors) == 1 else []
    instance_type = next((f for f in flavors + selectors + only_flavor if f), "")
    admitted = _condition(workload, "Admitted")
    admitted_at: dt.datetime | None = None
    if admitted and admitted.get("status") == "True" and admitted.get("lastTransitionTime"):
        admitted_at = parse_time(str(admitted["lastTransitionTime"]))
        if admitted_at > moment:
            admitted_at = None
    if admitted_at is None and metadata.get("creationTimestamp"):
        admitted_at = parse_time(str(metadata["creationTimestamp"]))
    interval = declared_interval(workload, interval_env=interval_env, dir_env=dir_env)
    checkpoint = (
        None
        if last_checkpoint_annotation is None
        else last_checkpoint(workload, annotation=last_checkpoint_annotation)
    )
    ref = spec.get("priorityClassRef") or {}
    priority_class = (metadata.get("labels") or {}).get(PRIORITY_CLASS_LABEL) or (
        ref.get("name", "") if ref.get("kind", "WorkloadPriorityClass") == "WorkloadPriorityClass" else ""
    )
    return {
        "schema_version": SCHEMA_VERSION,
        "timestamp": _stamp(moment),
        "cluster": cluster,
        "namespace": str(metadata.get("namespace", "")),
        "workload": str(metadata.get("name", "")),
        "uid": str(metadata.get("uid", "")),
        "priority_class": str(priority_class),
        "instance_type": instance_type,
        "gpus": gpus,
        "admitted_at": _stamp(admitted_at) if admitted_at else None,
        "checkpoint_interval_minutes": interval,
        "last_checkpoint": None if checkpoint is None else _stamp(min(checkpoint, moment)),
    }
