"""Running work on borrowed capacity whose checkpoint is overdue, counted per team."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.runtime.checkpoint_scanner import declarations
from hyperpod_tenancy.runtime.eviction_collector._common import (
    _TEAM,
    DEFAULT_SCAN_MINUTES,
    GPU_RESOURCE,
    LOG,
    _quantity,
)
from hyperpod_tenancy.runtime.eviction_collector.records import (
    _condition,
    _name,
    declared_interval,
    last_checkpoint,
    parse_time,
)
from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
)

__all__ = ["checkpoints_overdue"]


# ---------------------------------------------------------------------- overdue checkpoints
def checkpoints_overdue(
    workloads: Sequence[Mapping[str, Any]],
    gauges: Mapping[str, Mapping[str, int | float]],
    *,
    now: dt.datetime,
    queue_prefix: str,
    queue_suffix: str,
    last_checkpoint_annotation: str,
    interval_env: str,
    dir_env: str,
    scan_minutes: int = DEFAULT_SCAN_MINUTES,
) -> dict[str, int]:
    """Team -> running workloads that may be on borrowed capacity and have not checkpointed within their interval.

    Kueue v0.19.2 does not record per workload whether its admission is borrowed quota (the Workload's
    ``status.admission`` holds the ClusterQueue and the flavors and usage of each pod set only:
    ``apis/kueue/v1beta2/workload_types.go`` ``Admission``); what it does record is the ClusterQueue's borrowed
    usage. The practical rule is therefore: the team's ClusterQueue is borrowing GPUs (``GpusBorrowed`` of
    :func:`team_gpu_gauges` above 0), and the workload is admitted to it (``Admitted`` ``True``, neither
    ``Evicted`` nor ``Finished``) and holds GPUs: in a borrowing ClusterQueue any of its workloads may be the one
    on borrowed quota and be reclaimed, which is why admission makes every one of them declare a checkpoint
    there. The declaration (directory and interval) is read through
    :func:`~hyperpod_tenancy.runtime.checkpoint_scanner.declarations`, the very variables admission bounds. A
    workload that declares none (admitted while the policy only warned, or before it) has nothing that could
    save its work: it counts as overdue one scan period after its admission, whatever its annotations say.

    Such a workload is overdue when its ``last_checkpoint_annotation`` (written by the checkpoint scanner from the
    file system) is older than its interval plus one scan period (``scan_minutes``, the scanner's lag), or, where
    the annotation is missing or predates the current admission (a requeued workload keeps the annotation of its
    earlier run), when it was admitted longer ago than that. A scanner that stopped therefore makes every such
    workload overdue one interval later: the alarm also watches the scanner. Every team of ``gauges`` gets a
    value, 0 included, so the alarm always has data.
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    overdue = dict.fromkeys(gauges, 0)
    for workload in workloads:
        admission = (workload.get("status") or {}).get("admission") or {}
        match = team_queue.match(str(admission.get("clusterQueue", "")))
        if match is None or match["team"] not in gauges or gauges[match["team"]].get("GpusBorrowed", 0) <= 0:
            continue
        admitted = _condition(workload, "Admitted")
        if not admitted or admitted.get("status") != "True" or not admitted.get("lastTransitionTime"):
            continue
        if any(
            (c := _condition(workload, kind)) is not None and c.get("status") == "True"
            for kind in ("Evicted", "Finished")
        ):
            continue
        assignments = admission.get("podSetAssignments") or []
        if sum(_quantity((a.get("resourceUsage") or {}).get(GPU_RESOURCE, 0)) for a in assignments) <= 0:
            continue
        declared = declarations(workload, dir_env=dir_env, interval_env=interval_env)
        interval = declared_interval(workload, interval_env=interval_env, dir_env=dir_env)
        if interval is None or not any(d.directory for d in declared):
            interval = 0  # nothing declared: nothing saves the work
        since = parse_time(str(admitted["lastTransitionTime"]))
        checkpoint = last_checkpoint(workload, annotation=last_checkpoint_annotation)
        if checkpoint is not None and checkpoint >= since:
            since = checkpoint
        if now - since > dt.timedelta(minutes=interval + scan_minutes):
            overdue[match["team"]] += 1
            LOG.info("checkpoint overdue: %s (interval %d min, last %s)", _name(workload), interval, since)
    return overdue
