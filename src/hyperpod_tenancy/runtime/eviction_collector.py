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
     "admitted_at": "2026-07-01 00:00:00", "checkpoint_interval_minutes": 30, "last_checkpoint": null}

Where each field comes from:

* ``timestamp``: the ``Evicted`` condition's ``lastTransitionTime`` (UTC, ``YYYY-MM-DD HH:MM:SS``).
* ``priority_class``: the label ``kueue.x-k8s.io/priority-class`` (Kueue sets it on the Workload), else
  ``spec.priorityClassRef.name`` where it refers to a WorkloadPriorityClass.
* ``gpus``: ``nvidia.com/gpu`` of the admission (``status.admission.podSetAssignments[].resourceUsage``) while
  Kueue still holds it; Kueue clears the admission once the evicted pods are gone, so otherwise
  ``spec.podSets[].count`` times the GPUs the pod template's containers request (limits where no request).
* ``instance_type``: the ResourceFlavor assigned to ``nvidia.com/gpu`` (the platform names each flavor after
  its instance type), else the pod template's ``node.kubernetes.io/instance-type`` node selector, else ``""``.
* ``admitted_at``: the ``Admitted`` condition's ``lastTransitionTime`` when it is still ``True`` and not later
  than the eviction; otherwise (the admission is already cleared) the run start is not recorded by Kueue and
  the Workload's ``creationTimestamp`` is written — an upper bound of the run (the engine bounds the loss by
  the checkpoint interval anyway where one is declared).
* ``checkpoint_interval_minutes``: the annotation ``hyperpod-tenancy.io/checkpoint-interval`` (``30m``,
  ``1h``, ``90``) on the Workload or on a pod set's pod template. Kueue does not copy a Job's own annotations
  to its Workload (only ``provreq.kueue.x-k8s.io/`` ones), but the pod template — with its annotations — is
  part of ``spec.podSets[].template``; an annotation on the Job object alone is therefore not seen and the
  field is ``null`` (the engine then uses the class's maximum as an upper bound).
* ``last_checkpoint``: ``null`` (not collected; the report states the loss as an upper bound).

Authentication is an EKS bearer token: ``k8s-aws-v1.`` + the unpadded base64url of an STS
``GetCallerIdentity`` URL presigned (SigV4, 60 s) with the header ``x-k8s-aws-id: <cluster>`` signed in — the
format of aws-iam-authenticator (https://github.com/kubernetes-sigs/aws-iam-authenticator#api-authorization-from-outside-a-cluster)
that EKS accepts. The endpoint and its CA come from ``eks:DescribeCluster``. The function's role is mapped by an
EKS access entry to a Kubernetes group bound to a read-only ClusterRole (``get``, ``list`` on workloads and
clusterqueues).

It also publishes each team's live GPU gauges (:data:`GAUGES`: in use, borrowed, guarantee and ceiling, from the
teams' ClusterQueues ``<TEAM_QUEUE_PREFIX><team><TEAM_QUEUE_SUFFIX>``, :func:`team_gpu_gauges`) to the CloudWatch
namespace ``GAUGE_NAMESPACE`` when that is set (dimensions ``Cluster``, ``Team``), which the teams' dashboards show.

Environment: ``CLUSTER_NAME`` (EKS cluster name), ``CLUSTER_LABEL`` (the ``cluster`` partition value, default
the cluster name), ``BUCKET``, ``PREFIX`` (default ``raw/eviction/``), ``LOOKBACK_MINUTES`` (default 15: three
schedules, so a failed run is caught up by the next ones), ``API_ENDPOINT`` and ``CA_DATA`` (base64 PEM; both
optional, they replace ``DescribeCluster``). Only the standard library, botocore and boto3 are imported.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import os
import re
import ssl
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import boto3
from botocore.signers import RequestSigner

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Version of the record format above; bump on an incompatible change.
SCHEMA_VERSION = 1
#: Prefix of an EKS bearer token (aws-iam-authenticator's ``v1`` token format).
TOKEN_PREFIX = "k8s-aws-v1."
#: Header carrying the cluster name, signed into the presigned URL.
CLUSTER_ID_HEADER = "x-k8s-aws-id"
#: Lifetime of the presigned URL (EKS refuses tokens older than 15 minutes).
TOKEN_EXPIRES_SECONDS = 60
#: The Workload API the collector reads.
WORKLOADS_PATH = "/apis/kueue.x-k8s.io/v1beta2/workloads"
#: The ClusterQueue API (the teams' live GPU gauges).
CLUSTER_QUEUES_PATH = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"
#: Live per-team gauges (GPUs, at the run's time): in use, of which borrowed, the guarantee and the ceiling.
GAUGES = ("GpusInUse", "GpusBorrowed", "GpuGuarantee", "GpuCeiling")
#: A team name (a DNS label) between the ClusterQueue name's prefix and suffix.
_TEAM = r"(?P<team>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
GPU_RESOURCE = "nvidia.com/gpu"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
PREEMPTED = "Preempted"
_PAGE = 500
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_MINUTES = {"s": 1 / 60, "m": 1, "": 1, "h": 60, "d": 1440}


# ---------------------------------------------------------------------- EKS access
def eks_token(cluster_name: str, *, session: boto3.session.Session | None = None) -> str:
    """Return an EKS bearer token for ``cluster_name``: a presigned STS ``GetCallerIdentity`` URL, encoded."""
    session = session or boto3.session.Session()
    sts = session.client("sts")
    region = sts.meta.region_name
    credentials = session.get_credentials()
    if credentials is None:
        raise RuntimeError("eviction collector: no AWS credentials to sign the EKS token with")
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", credentials, session.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{sts.meta.endpoint_url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {CLUSTER_ID_HEADER: cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=TOKEN_EXPIRES_SECONDS,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def cluster_access(eks: Any, cluster_name: str) -> tuple[str, str]:
    """Return the API endpoint and the PEM CA bundle of the cluster (``DescribeCluster``)."""
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    return str(cluster["endpoint"]), base64.b64decode(cluster["certificateAuthority"]["data"]).decode()


def list_workloads(endpoint: str, token: str, ca_pem: str, *, timeout: float = 30) -> list[dict[str, Any]]:
    """Return every Workload of the cluster (all namespaces, all pages), over TLS verified against ``ca_pem``."""
    return list_objects(endpoint, token, ca_pem, WORKLOADS_PATH, timeout=timeout)


def list_objects(
    endpoint: str, token: str, ca_pem: str, path: str, *, timeout: float = 30
) -> list[dict[str, Any]]:
    """Return every object of a list ``path`` (all pages), over TLS verified against ``ca_pem``."""
    context = ssl.create_default_context(cadata=ca_pem)
    items: list[dict[str, Any]] = []
    cont = ""
    while True:
        query = {"limit": str(_PAGE)} | ({"continue": cont} if cont else {})
        request = urllib.request.Request(
            f"{endpoint.rstrip('/')}{path}?{urllib.parse.urlencode(query)}",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            page = json.load(response)
        items += page.get("items") or []
        cont = str((page.get("metadata") or {}).get("continue") or "")
        if not cont:
            return items


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


def eviction_record(
    workload: Mapping[str, Any], *, cluster: str, interval_annotation: str, interval_env: str | None = None
) -> dict[str, Any] | None:
    """Return the record of the workload's current preemption eviction, or ``None`` when it is not evicted by preemption.

    The declared checkpoint interval is read from ``interval_annotation`` on the Workload or its pod sets'
    templates, else from the ``interval_env`` variable of a pod set's containers (the declaration clients such
    as ``hyp create hyp-pytorch-job`` make, which admission checks the same way; Kueue copies each pod
    template's spec, containers and their environment included, into the Workload's pod sets).
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
    instance_type = next((f for f in flavors + selectors if f), "")
    admitted = _condition(workload, "Admitted")
    admitted_at: dt.datetime | None = None
    if admitted and admitted.get("status") == "True" and admitted.get("lastTransitionTime"):
        admitted_at = parse_time(str(admitted["lastTransitionTime"]))
        if admitted_at > moment:
            admitted_at = None
    if admitted_at is None and metadata.get("creationTimestamp"):
        admitted_at = parse_time(str(metadata["creationTimestamp"]))
    annotations = [metadata.get("annotations") or {}] + [
        ((p.get("template") or {}).get("metadata") or {}).get("annotations") or {} for p in pod_sets
    ]
    declared = [a.get(interval_annotation) for a in annotations]
    if interval_env:
        declared += [
            env.get("value")
            for p in pod_sets
            for container in ((p.get("template") or {}).get("spec") or {}).get("containers") or []
            for env in container.get("env") or []
            if env.get("name") == interval_env
        ]
    interval = next((m for text in declared if (m := interval_minutes(text)) is not None), None)
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
        "last_checkpoint": None,
    }


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
) -> Iterator[dict[str, Any]]:
    """Yield the records of preemption evictions later than ``since``, one per workload UID + time, sorted."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for workload in workloads:
        record = eviction_record(
            workload, cluster=cluster, interval_annotation=interval_annotation, interval_env=interval_env
        )
        if record is not None and record["timestamp"] > _stamp(since):
            seen.setdefault((record["uid"], record["timestamp"]), record)
    for key in sorted(
        seen, key=lambda k: (seen[k]["timestamp"], seen[k]["namespace"], seen[k]["workload"], k)
    ):
        yield seen[key]


def handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """Write the evictions new in the lookback window to S3; returns their keys."""
    del context
    cluster_name = os.environ["CLUSTER_NAME"]
    cluster = os.environ.get("CLUSTER_LABEL") or cluster_name
    bucket = os.environ["BUCKET"]
    # the platform's checkpoint-interval annotation key (hyperpod_tenancy.k8s.labels), set by the construct
    interval_annotation = os.environ["CHECKPOINT_INTERVAL_ANNOTATION"]
    interval_env = os.environ.get("CHECKPOINT_INTERVAL_ENV")
    prefix = os.environ.get("PREFIX", "raw/eviction/")
    since = snapshot_time(event) - dt.timedelta(minutes=int(os.environ.get("LOOKBACK_MINUTES", "15")))
    endpoint, ca_data = os.environ.get("API_ENDPOINT", ""), os.environ.get("CA_DATA", "")
    if endpoint and ca_data:
        ca_pem = base64.b64decode(ca_data).decode()
    else:
        endpoint, ca_pem = cluster_access(boto3.client("eks"), cluster_name)
    workloads = list_workloads(endpoint, eks_token(cluster_name), ca_pem)
    s3 = boto3.client("s3")
    keys = []
    for record in new_evictions(
        workloads,
        cluster=cluster,
        since=since,
        interval_annotation=interval_annotation,
        interval_env=interval_env,
    ):
        key = object_key(prefix, record)
        body = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        s3.put_object(Bucket=bucket, Key=key, Body=body.encode(), ContentType="application/x-ndjson")
        keys.append(key)
    LOG.info(
        "%d workload(s), %d new eviction(s) written to s3://%s/%s", len(workloads), len(keys), bucket, prefix
    )
    teams = 0
    namespace = os.environ.get("GAUGE_NAMESPACE")
    if namespace:
        gauges = team_gpu_gauges(
            list_objects(endpoint, eks_token(cluster_name), ca_pem, CLUSTER_QUEUES_PATH),
            queue_prefix=os.environ["TEAM_QUEUE_PREFIX"],
            queue_suffix=os.environ["TEAM_QUEUE_SUFFIX"],
        )
        data = gauge_metric_data(gauges, cluster=cluster, timestamp=snapshot_time(event))
        cloudwatch = boto3.client("cloudwatch")
        for start in range(0, len(data), 1000):  # PutMetricData takes at most 1000 entries
            cloudwatch.put_metric_data(Namespace=namespace, MetricData=data[start : start + 1000])
        teams = len(gauges)
    return {"keys": keys, "workloads": len(workloads), "gauged_teams": teams}
