"""Scheduled Lambda: record every preemption eviction of a Kueue Workload in the report bucket.

Every 5 minutes the collector lists the cluster's Kueue ``Workload`` objects (``kueue.x-k8s.io/v1beta2``) from the
private EKS API endpoint and writes one JSON object per eviction that is new since the previous runs (condition
``Evicted``, status ``True``, reason ``Preempted``, whose ``lastTransitionTime`` falls in the lookback window) to::

    s3://<bucket>/raw/eviction/year=YYYY/month=MM/day=DD/hour=HH/cluster=<cluster>/<uid>-<YYYYMMDDTHHMMSSZ>.json

The partitions are those of the eviction time; the key is a function of the workload UID and the condition's
``lastTransitionTime`` only, so a retried run, or a later run whose window overlaps, overwrites the same object
with the same content: one eviction is one row of the Glue table ``eviction`` (deduplicated by UID + time).

Record format (version :data:`SCHEMA_VERSION`; JSON lines, the Glue table ``eviction`` reads it)::

    {"schema_version": 1, "timestamp": "2026-07-01 02:03:04", "cluster": "shared-gpu",
     "namespace": "hyperpod-ns-team-a", "workload": "job-train-1a2b3", "uid": "…",
     "priority_class": "training-priority", "instance_type": "ml.p5.48xlarge", "gpus": 16,
     "admitted_at": "2026-07-01 00:00:00", "checkpoint_interval_minutes": 30, "last_checkpoint": "2026-07-01 01:50:00"}

Where each field comes from:

* ``timestamp``: the ``Evicted`` condition's ``lastTransitionTime`` (UTC, ``YYYY-MM-DD HH:MM:SS``).
* ``priority_class``: the label ``kueue.x-k8s.io/priority-class`` (Kueue sets it on the Workload), else
  ``spec.priorityClassRef.name`` where it refers to a WorkloadPriorityClass.
* ``gpus``: ``nvidia.com/gpu`` of the admission (``status.admission.podSetAssignments[].resourceUsage``) while
  Kueue still holds it; Kueue clears the admission once the evicted pods are gone, so otherwise
  ``spec.podSets[].count`` times the GPUs the pod template's containers request (limits where no request).
* ``instance_type``: the ResourceFlavor assigned to ``nvidia.com/gpu`` (the platform names each flavor after
  its instance type) while Kueue still holds the admission, else the pod template's
  ``node.kubernetes.io/instance-type`` node selector, else the one flavor in which the team's ClusterQueue can
  hold GPUs (:func:`gpu_flavors`; Kueue v0.19.2 clears a preempted Workload's admission as soon as its pods
  are gone, which is before the next run), else ``""``.
* ``admitted_at``: the ``Admitted`` condition's ``lastTransitionTime`` when it is still ``True`` and not later
  than the eviction; otherwise (the admission is already cleared) the run start is not recorded by Kueue and
  the Workload's ``creationTimestamp`` is written — an upper bound of the run (the engine bounds the loss by
  the checkpoint interval anyway where one is declared).
* ``checkpoint_interval_minutes``: the annotation ``hyperpod-tenancy.io/checkpoint-interval`` (``30m``,
  ``1h``, ``90``) on the Workload or on a pod set's pod template. Kueue does not copy a Job's own annotations
  to its Workload (only ``provreq.kueue.x-k8s.io/`` ones), but the pod template — with its annotations — is
  part of ``spec.podSets[].template``; an annotation on the Job object alone is therefore not seen and the
  field is ``null`` (the engine then uses the class's maximum as an upper bound).
* ``last_checkpoint``: the annotation ``hyperpod-tenancy.io/last-checkpoint`` of the Workload's own metadata
  (RFC 3339), capped at the eviction time; ``null`` where it is missing or unreadable (the engine then bounds the
  loss by the declared interval: an upper bound, and the report says so per eviction). The team's checkpoint
  scanner (:mod:`hyperpod_tenancy.runtime.checkpoint_scanner`, a CronJob in the cluster that reads the team's FSx
  directory, which this function cannot see) writes it every 5 minutes: the newest modification time under the
  declared checkpoint directory. It is never read from a pod template, whose annotations the tenant writes; the
  Workload's own annotations only Kueue and the scanner write (the team Role has no write verb on Workloads, and
  Kueue v0.19.2 copies a Job's annotations to its Workload only for ``provreq.kueue.x-k8s.io/`` keys:
  ``pkg/controller/jobframework/utils.go`` ``NewWorkload``). The measured loss is therefore exact to one scan
  period: a checkpoint written in the last 5 minutes before an eviction may not be seen yet, so the measure
  errs by at most that towards a larger loss, never a smaller one (as does a scanner that stopped, leaving an
  older time). The time is that of any write under the directory, not of a verified checkpoint.

The API is read with an EKS bearer token (:mod:`hyperpod_tenancy.runtime.kube_api`, in the asset beside this
module). The function's role is mapped by an EKS access entry to a Kubernetes group bound to a read-only
ClusterRole (``get``, ``list`` on workloads and clusterqueues).

It also publishes each team's live GPU gauges (:data:`GAUGES`: in use, borrowed, guarantee and ceiling, from the
teams' ClusterQueues ``<TEAM_QUEUE_PREFIX><team><TEAM_QUEUE_SUFFIX>``, :func:`team_gpu_gauges`) to the CloudWatch
namespace ``GAUGE_NAMESPACE`` when that is set (dimensions ``Cluster``, ``Team``), which the teams' dashboards show,
and, when ``LAST_CHECKPOINT_ANNOTATION`` and ``REMOTE_WRITE_URL`` (the alert workspace's remote-write endpoint)
are set too, each team's count of running workloads that may be on borrowed capacity and have not checkpointed
within their declared interval (:func:`checkpoints_overdue`), written as the series :data:`OVERDUE_SERIES` with
Prometheus remote write (:mod:`hyperpod_tenancy.runtime.remote_write`), on which each team's rule group alerts
(:func:`~hyperpod_tenancy.constructs.chargeback_pipeline.checkpoint_rule`).

Environment: ``CLUSTER_NAME`` (EKS cluster name), ``CLUSTER_LABEL`` (the ``cluster`` partition value, default
the cluster name), ``BUCKET``, ``PREFIX`` (default ``raw/eviction/``), ``LOOKBACK_MINUTES`` (default 15: three
schedules, so a failed run is caught up by the next ones), ``API_ENDPOINT`` and ``CA_DATA`` (base64 PEM; both
optional, they replace ``DescribeCluster``), ``LAST_CHECKPOINT_ANNOTATION`` (the scanner's annotation; unset: no
``last_checkpoint`` and no overdue gauge), ``CHECKPOINT_PATH_ANNOTATION`` and ``CHECKPOINT_DIR_ENV`` (what makes a
workload one that checkpoints), ``CHECKPOINT_SCAN_MINUTES`` (the scanner's period, default 5),
``REMOTE_WRITE_URL`` (unset: no overdue count). Only the standard library, botocore,
boto3 and the package's own :mod:`~hyperpod_tenancy.runtime.remote_write` and :mod:`~hyperpod_tenancy.runtime.kube_api` (in the asset beside this module) are
imported.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import boto3

from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
    eks_token,
    endpoint_and_ca,
    list_objects,
)
from hyperpod_tenancy.runtime.preemption_notice import notice, topic_arn
from hyperpod_tenancy.runtime.remote_write import Series, push

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Version of the record format above; bump on an incompatible change.
SCHEMA_VERSION = 1
#: The Workload API the collector reads.
WORKLOADS_PATH = "/apis/kueue.x-k8s.io/v1beta2/workloads"
#: The ClusterQueue API (the teams' live GPU gauges).
CLUSTER_QUEUES_PATH = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
#: Live per-team gauges (GPUs, at the run's time): in use, of which borrowed, the guarantee and the ceiling.
GAUGES = ("GpusInUse", "GpusBorrowed", "GpuGuarantee", "GpuCeiling")
#: Per-team count of running workloads that may be on borrowed capacity whose checkpoint is overdue
#: (:func:`checkpoints_overdue`), a Prometheus series written to the workspace (labels ``cluster``, ``team``),
#: which the teams' rule groups alert on.
OVERDUE_SERIES = "hyperpod_tenancy_checkpoints_overdue"
#: The checkpoint scanner's period in minutes (its CronJob runs every 5 minutes).
DEFAULT_SCAN_MINUTES = 5
#: A team name (a DNS label) between the ClusterQueue name's prefix and suffix.
_TEAM = r"(?P<team>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
GPU_RESOURCE = "nvidia.com/gpu"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
PREEMPTED = "Preempted"
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_MINUTES = {"s": 1 / 60, "m": 1, "": 1, "h": 60, "d": 1440}


# ---------------------------------------------------------------------- EKS access
def list_workloads(endpoint: str, token: str, ca_pem: str, *, timeout: float = 30) -> list[dict[str, Any]]:
    """Return every Workload of the cluster (all namespaces, all pages), over TLS verified against ``ca_pem``."""
    return list_objects(endpoint, token, ca_pem, WORKLOADS_PATH, timeout=timeout)


# ---------------------------------------------------------------------- live gauges
def _gpu_quotas(queue: Mapping[str, Any]) -> dict[str, tuple[int, int | None, int | None]]:
    """Flavor -> (nominal, borrowing limit, lending limit) of ``nvidia.com/gpu`` in a ClusterQueue's spec."""
    found: dict[str, tuple[int, int | None, int | None]] = {}
    for group in (queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                if resource.get("name") == GPU_RESOURCE:
                    borrow, lend = resource.get("borrowingLimit"), resource.get("lendingLimit")
                    found[str(flavor.get("name"))] = (
                        _quantity(resource.get("nominalQuota")),
                        None if borrow is None else _quantity(borrow),
                        None if lend is None else _quantity(lend),
                    )
    return found


def team_gpu_gauges(
    cluster_queues: Sequence[Mapping[str, Any]], *, queue_prefix: str, queue_suffix: str
) -> dict[str, dict[str, int]]:
    """Team -> :data:`GAUGES` (GPUs) from the teams' ClusterQueues, sorted by team.

    A team's ClusterQueue is named ``<queue_prefix><team><queue_suffix>`` (the platform passes its names'
    ``NAMESPACE_PREFIX`` and ``CLUSTER_QUEUE_SUFFIX``).

    ``GpuGuarantee`` is the queue's ``nominalQuota`` of ``nvidia.com/gpu`` summed over flavors; ``GpuCeiling`` what
    it may reach by borrowing: per flavor the guarantee plus what the other queues of its cohort may lend
    (their ``lendingLimit``, else their nominal quota), capped by its own ``borrowingLimit`` (the guarantee
    alone without a cohort); ``GpusInUse`` and ``GpusBorrowed`` are ``status.flavorsUsage``'s ``total`` and
    ``borrowed``. Queues that are not a team's are not reported.
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    quotas = {str((q.get("metadata") or {}).get("name")): _gpu_quotas(q) for q in cluster_queues}
    cohorts = {
        str((q.get("metadata") or {}).get("name")): (q.get("spec") or {}).get("cohortName")
        for q in cluster_queues
    }
    gauges: dict[str, dict[str, int]] = {}
    for queue in cluster_queues:
        name = str((queue.get("metadata") or {}).get("name"))
        match = team_queue.match(name)
        if match is None:
            continue
        guarantee = ceiling = 0
        for flavor, (nominal, borrow, _lend) in quotas[name].items():
            guarantee += nominal
            cohort = cohorts[name]
            lendable = 0
            for other_name, other in quotas.items():
                if other_name == name or not cohort or cohorts[other_name] != cohort or flavor not in other:
                    continue
                other_nominal, _borrow, other_lend = other[flavor]
                lendable += other_nominal if other_lend is None else other_lend
            ceiling += nominal + (min(lendable, borrow) if borrow is not None else lendable)
        used = borrowed = 0
        for flavor_usage in (queue.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor_usage.get("resources") or []:
                if resource.get("name") == GPU_RESOURCE:
                    used += _quantity(resource.get("total"))
                    borrowed += _quantity(resource.get("borrowed"))
        gauges[match["team"]] = {
            "GpusInUse": used,
            "GpusBorrowed": borrowed,
            "GpuGuarantee": guarantee,
            "GpuCeiling": ceiling,
        }
    return dict(sorted(gauges.items()))


def gpu_flavors(
    cluster_queues: Sequence[Mapping[str, Any]], *, queue_prefix: str, queue_suffix: str
) -> dict[str, list[str]]:
    """Team namespace (``<queue_prefix><team>``) -> the flavors in which the team's ClusterQueue can hold GPUs.

    A flavor counts where the queue's ``nvidia.com/gpu`` has a nominal quota, or may borrow it from a cohort
    (``borrowingLimit`` unset or above 0). Kueue clears a preempted Workload's ``status.admission`` (the flavor
    it ran on) as soon as its pods are gone, before the collector's next run, so the flavor of an eviction is
    read from here: unambiguous where the team's queue can hold GPUs in one flavor only.
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    found: dict[str, list[str]] = {}
    for queue in cluster_queues:
        match = team_queue.match(str((queue.get("metadata") or {}).get("name")))
        if match is None:
            continue
        in_cohort = bool((queue.get("spec") or {}).get("cohortName"))
        found[f"{queue_prefix}{match['team']}"] = [
            flavor
            for flavor, (nominal, borrow, _lend) in _gpu_quotas(queue).items()
            if nominal > 0 or (in_cohort and (borrow is None or borrow > 0))
        ]
    return found


def gauge_metric_data(
    gauges: Mapping[str, Mapping[str, int]], *, cluster: str, timestamp: dt.datetime
) -> list[dict[str, Any]]:
    """``PutMetricData`` entries of :func:`team_gpu_gauges` (dimensions ``Cluster`` and ``Team``)."""
    return [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": "Cluster", "Value": cluster}, {"Name": "Team", "Value": team}],
            "Timestamp": timestamp,
            "Value": float(values[metric]),
            "Unit": "Count",
        }
        for team, values in gauges.items()
        for metric in GAUGES
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


def _quantity(value: object) -> int:
    try:
        return int(float(str(value)))
    except ValueError:
        return 0


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


def _declared(workload: Mapping[str, Any], annotation: str, env_name: str | None) -> list[object]:
    """Values of ``annotation`` on the Workload and its pod-set templates, then of ``env_name`` in their containers."""
    metadata = workload.get("metadata") or {}
    pod_sets = (workload.get("spec") or {}).get("podSets") or []
    annotations = [metadata.get("annotations") or {}] + [
        ((p.get("template") or {}).get("metadata") or {}).get("annotations") or {} for p in pod_sets
    ]
    declared: list[object] = [a.get(annotation) for a in annotations if a.get(annotation)]
    if env_name:
        declared += [
            env.get("value")
            for p in pod_sets
            for container in ((p.get("template") or {}).get("spec") or {}).get("containers") or []
            for env in container.get("env") or []
            if env.get("name") == env_name and env.get("value")
        ]
    return declared


def declared_interval(
    workload: Mapping[str, Any], *, interval_annotation: str, interval_env: str | None = None
) -> int | None:
    """Return the checkpoint interval (minutes) a Workload declares, or ``None``.

    Read from ``interval_annotation`` on the Workload or its pod sets' templates, else from the ``interval_env``
    variable of a pod set's containers (the declaration clients such as ``hyp create hyp-pytorch-job`` make,
    which admission checks the same way; Kueue copies each pod template's spec, containers and their environment
    included, into the Workload's pod sets).
    """
    return next(
        (
            m
            for text in _declared(workload, interval_annotation, interval_env)
            if (m := interval_minutes(text)) is not None
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
    interval_annotation: str,
    interval_env: str | None = None,
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
    interval = declared_interval(workload, interval_annotation=interval_annotation, interval_env=interval_env)
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


# ---------------------------------------------------------------------- overdue checkpoints
def checkpoints_overdue(
    workloads: Sequence[Mapping[str, Any]],
    gauges: Mapping[str, Mapping[str, int]],
    *,
    now: dt.datetime,
    queue_prefix: str,
    queue_suffix: str,
    interval_annotation: str,
    last_checkpoint_annotation: str,
    path_annotation: str,
    interval_env: str | None = None,
    dir_env: str | None = None,
    scan_minutes: int = DEFAULT_SCAN_MINUTES,
) -> dict[str, int]:
    """Team -> running workloads that may be on borrowed capacity and have not checkpointed within their interval.

    Kueue v0.19.2 does not record per workload whether its admission is borrowed quota (the Workload's
    ``status.admission`` holds the ClusterQueue and the flavors and usage of each pod set only:
    ``apis/kueue/v1beta2/workload_types.go`` ``Admission``); what it does record is the ClusterQueue's borrowed
    usage. The practical rule is therefore: the team's ClusterQueue is borrowing GPUs (``GpusBorrowed`` of
    :func:`team_gpu_gauges` above 0), and the workload is admitted to it (``Admitted`` ``True``, neither
    ``Evicted`` nor ``Finished``), holds GPUs, and declares a checkpoint directory (``path_annotation`` or
    ``dir_env``) and interval: in a borrowing ClusterQueue any of its workloads may be the one on borrowed quota
    and be reclaimed, which is why admission makes every one of them declare a checkpoint there. A workload whose
    declaration Kueue does not carry (annotations on the Job object only) cannot be watched and is not counted.

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
        if not _declared(workload, path_annotation, dir_env):
            continue
        interval = declared_interval(
            workload, interval_annotation=interval_annotation, interval_env=interval_env
        )
        if interval is None:
            continue
        since = parse_time(str(admitted["lastTransitionTime"]))
        checkpoint = last_checkpoint(workload, annotation=last_checkpoint_annotation)
        if checkpoint is not None and checkpoint >= since:
            since = checkpoint
        if now - since > dt.timedelta(minutes=interval + scan_minutes):
            overdue[match["team"]] += 1
            LOG.info("checkpoint overdue: %s (interval %d min, last %s)", _name(workload), interval, since)
    return overdue


def object_key(prefix: str, record: Mapping[str, Any]) -> str:
    """Return the deterministic S3 key of one eviction: partitions of its time, named by workload UID and time."""
    moment = dt.datetime.strptime(str(record["timestamp"]), "%Y-%m-%d %H:%M:%S")
    return (
        f"{prefix}year={moment:%Y}/month={moment:%m}/day={moment:%d}/hour={moment:%H}/"
        f"cluster={record['cluster']}/{record['uid'] or record['namespace'] + '.' + record['workload']}-"
        f"{moment:%Y%m%dT%H%M%SZ}.json"
    )


def new_evictions(
    workloads: list[dict[str, Any]],
    *,
    cluster: str,
    since: dt.datetime,
    interval_annotation: str,
    interval_env: str | None = None,
    last_checkpoint_annotation: str | None = None,
    team_gpu_flavors: Mapping[str, Sequence[str]] | None = None,
) -> Iterator[dict[str, Any]]:
    """Yield the records of preemption evictions later than ``since``, one per workload UID + time, sorted.

    ``team_gpu_flavors``: :func:`gpu_flavors` of the cluster's queues (by team namespace).
    """
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for workload in workloads:
        namespace = str((workload.get("metadata") or {}).get("namespace", ""))
        record = eviction_record(
            workload,
            cluster=cluster,
            interval_annotation=interval_annotation,
            interval_env=interval_env,
            last_checkpoint_annotation=last_checkpoint_annotation,
            team_gpu_flavors=(team_gpu_flavors or {}).get(namespace, ()),
        )
        if record is not None and record["timestamp"] > _stamp(since):
            seen.setdefault((record["uid"], record["timestamp"]), record)
    for key in sorted(
        seen, key=lambda k: (seen[k]["timestamp"], seen[k]["namespace"], seen[k]["workload"], k)
    ):
        yield seen[key]


def _exists(s3: Any, bucket: str, key: str) -> bool:
    """Whether the eviction's object is already written (an earlier run saw it, and told its team)."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=key, MaxKeys=1).get("Contents") or []
    return any(o.get("Key") == key for o in listed)


def _notify_team(prefix: str, record: Mapping[str, Any], by_uid: Mapping[str, Mapping[str, Any]]) -> None:
    """Publish the eviction's notice to its team's topic; a team without a topic is logged, not an error."""
    namespace_prefix = os.environ["TEAM_QUEUE_PREFIX"]
    topic = topic_arn(prefix, str(record["namespace"]), namespace_prefix=namespace_prefix)
    if topic is None:
        return
    workload = by_uid.get(str(record.get("uid", ""))) or {}
    subject, message = notice(record, workload, by_uid, namespace_prefix=namespace_prefix)
    sns = boto3.client("sns")
    try:
        sns.publish(TopicArn=topic, Subject=subject, Message=message)
    except (sns.exceptions.NotFoundException, sns.exceptions.AuthorizationErrorException):
        # the record is written; a team without its topic (a stack not deployed yet) must not stop the collection
        LOG.warning("could not notify %s of the eviction of %s", topic, record["workload"], exc_info=True)


def handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """Write the evictions new in the lookback window to S3 and tell each team of its own; returns their keys."""
    del context
    cluster_name = os.environ["CLUSTER_NAME"]
    cluster = os.environ.get("CLUSTER_LABEL") or cluster_name
    bucket = os.environ["BUCKET"]
    # the platform's checkpoint-interval annotation key (hyperpod_tenancy.k8s.labels), set by the construct
    interval_annotation = os.environ["CHECKPOINT_INTERVAL_ANNOTATION"]
    interval_env = os.environ.get("CHECKPOINT_INTERVAL_ENV")
    last_checkpoint_annotation = os.environ.get("LAST_CHECKPOINT_ANNOTATION") or None
    prefix = os.environ.get("PREFIX", "raw/eviction/")
    since = snapshot_time(event) - dt.timedelta(minutes=int(os.environ.get("LOOKBACK_MINUTES", "15")))
    endpoint, ca_pem = endpoint_and_ca(cluster_name)
    workloads = list_workloads(endpoint, eks_token(cluster_name), ca_pem)
    cluster_queues = list_objects(endpoint, eks_token(cluster_name), ca_pem, CLUSTER_QUEUES_PATH)
    queue_prefix, queue_suffix = os.environ["TEAM_QUEUE_PREFIX"], os.environ["TEAM_QUEUE_SUFFIX"]
    s3 = boto3.client("s3")
    keys = []
    # each team's own topic (<prefix><team>), told of its new evictions: once, when the record is first written
    team_topics = os.environ.get("TEAM_TOPIC_ARN_PREFIX")
    by_uid = {str((w.get("metadata") or {}).get("uid", "")): w for w in workloads}
    for record in new_evictions(
        workloads,
        cluster=cluster,
        since=since,
        interval_annotation=interval_annotation,
        interval_env=interval_env,
        last_checkpoint_annotation=last_checkpoint_annotation,
        team_gpu_flavors=gpu_flavors(cluster_queues, queue_prefix=queue_prefix, queue_suffix=queue_suffix),
    ):
        key = object_key(prefix, record)
        body = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        first = bool(team_topics) and not _exists(s3, bucket, key)
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode(), ContentType="application/x-ndjson")
        keys.append(key)
        if first and team_topics:
            _notify_team(team_topics, record, by_uid)
    LOG.info(
        "%d workload(s), %d new eviction(s) written to s3://%s/%s", len(workloads), len(keys), bucket, prefix
    )
    teams = 0
    namespace = os.environ.get("GAUGE_NAMESPACE")
    if namespace:
        gauges = team_gpu_gauges(cluster_queues, queue_prefix=queue_prefix, queue_suffix=queue_suffix)
        overdue: dict[str, int] = {}
        remote_write = os.environ.get("REMOTE_WRITE_URL")
        if last_checkpoint_annotation and remote_write:
            overdue = checkpoints_overdue(
                workloads,
                gauges,
                now=snapshot_time(event),
                queue_prefix=os.environ["TEAM_QUEUE_PREFIX"],
                queue_suffix=os.environ["TEAM_QUEUE_SUFFIX"],
                interval_annotation=interval_annotation,
                last_checkpoint_annotation=last_checkpoint_annotation,
                path_annotation=os.environ["CHECKPOINT_PATH_ANNOTATION"],
                interval_env=interval_env,
                dir_env=os.environ.get("CHECKPOINT_DIR_ENV"),
                scan_minutes=int(os.environ.get("CHECKPOINT_SCAN_MINUTES", str(DEFAULT_SCAN_MINUTES))),
            )
        data = gauge_metric_data(gauges, cluster=cluster, timestamp=snapshot_time(event))
        cloudwatch = boto3.client("cloudwatch")
        for start in range(0, len(data), 1000):  # PutMetricData takes at most 1000 entries
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
        if overdue and remote_write:
            stamp = int(snapshot_time(event).timestamp() * 1000)
            credentials = boto3.Session().get_credentials()
            push(
                remote_write,
                [
                    Series(OVERDUE_SERIES, overdue[team], stamp, {"cluster": cluster, "team": team})
                    for team in sorted(overdue)
                ],
                region=os.environ.get("AWS_REGION", "us-east-1"),
                credentials=None if credentials is None else credentials.get_frozen_credentials(),
            )
        teams = len(gauges)
    return {"keys": keys, "workloads": len(workloads), "gauged_teams": teams}
