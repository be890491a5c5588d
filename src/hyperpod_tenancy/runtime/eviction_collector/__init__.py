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
* ``checkpoint_interval_minutes``: the variable ``HYPERPOD_TENANCY_CHECKPOINT_INTERVAL`` (``30m``, ``1h``) of a
  main container of a pod set's template, the one checkpoint declaration, read through
  :func:`hyperpod_tenancy.runtime.checkpoint_scanner.declarations` (Kueue copies each pod template, its
  containers' environment included, into ``spec.podSets[].template``; admission bounds exactly these
  variables). ``null`` where none is declared (the engine then uses the class's maximum as an upper bound).
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
(:func:`~hyperpod_tenancy.k8s.alert_rules.checkpoint_rule`).

Environment: ``CLUSTER_NAME`` (EKS cluster name), ``CLUSTER_LABEL`` (the ``cluster`` partition value, default
the cluster name), ``BUCKET``, ``PREFIX`` (default ``raw/eviction/``), ``LOOKBACK_MINUTES`` (default 15: three
schedules, so a failed run is caught up by the next ones), ``API_ENDPOINT`` and ``CA_DATA`` (base64 PEM; both
optional, they replace ``DescribeCluster``), ``LAST_CHECKPOINT_ANNOTATION`` (the scanner's annotation; unset: no
``last_checkpoint`` and no overdue gauge), ``CHECKPOINT_DIR_ENV`` and ``CHECKPOINT_INTERVAL_ENV`` (the
declaration's variables), ``CHECKPOINT_SCAN_MINUTES`` (the scanner's period, default 5),
``REMOTE_WRITE_URL`` (unset: no overdue count), ``PARTITION_PREFIX`` (where each run's snapshot of the GPU
partitions the teams' queues hold goes, :mod:`~hyperpod_tenancy.runtime.eviction_collector.partitions`; unset:
none is written). Only the standard library, botocore,
boto3 and the package's own :mod:`~hyperpod_tenancy.runtime.remote_write`, :mod:`~hyperpod_tenancy.runtime.kube_api`
and :mod:`~hyperpod_tenancy.runtime.checkpoint_scanner` (in the asset beside this module) are imported.
"""

from __future__ import annotations

from hyperpod_tenancy.runtime.eviction_collector._common import (
    CLUSTER_QUEUES_PATH,
    DEFAULT_SCAN_MINUTES,
    GAUGES,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    LOG,
    OVERDUE_SERIES,
    PREEMPTED,
    PRIORITY_CLASS_LABEL,
    SCHEMA_VERSION,
    WORKLOADS_PATH,
)
from hyperpod_tenancy.runtime.eviction_collector.collect import handler, new_evictions, object_key
from hyperpod_tenancy.runtime.eviction_collector.gauges import (
    gauge_metric_data,
    gpu_flavors,
    list_workloads,
    team_gpu_gauges,
)
from hyperpod_tenancy.runtime.eviction_collector.overdue import checkpoints_overdue
from hyperpod_tenancy.runtime.eviction_collector.records import (
    declared_interval,
    eviction_record,
    interval_minutes,
    last_checkpoint,
    parse_time,
    snapshot_time,
)

__all__ = [
    "CLUSTER_QUEUES_PATH",
    "DEFAULT_SCAN_MINUTES",
    "GAUGES",
    "GPU_RESOURCE",
    "INSTANCE_TYPE_LABEL",
    "LOG",
    "OVERDUE_SERIES",
    "PREEMPTED",
    "PRIORITY_CLASS_LABEL",
    "SCHEMA_VERSION",
    "WORKLOADS_PATH",
    "checkpoints_overdue",
    "declared_interval",
    "eviction_record",
    "gauge_metric_data",
    "gpu_flavors",
    "handler",
    "interval_minutes",
    "last_checkpoint",
    "list_workloads",
    "new_evictions",
    "object_key",
    "parse_time",
    "snapshot_time",
    "team_gpu_gauges",
]
