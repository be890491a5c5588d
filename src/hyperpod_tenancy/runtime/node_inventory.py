"""Scheduled Lambda: snapshot the HyperPod cluster's nodes (capacity per instance type) into the report bucket.

The usage-report operator records what Kueue admitted, not what the cluster had. Idle and recovering capacity
(so that someone owns it) comes from this inventory: every 5 minutes, ``sagemaker:ListClusterNodes`` of the
cluster, written as JSON lines to::

    s3://<bucket>/raw/node/year=YYYY/month=MM/day=DD/hour=HH/cluster=<cluster>/<YYYYMMDDTHHMMSSZ>.json

Snapshot format (version :data:`SCHEMA_VERSION`; one object per node, sorted by ``instance_id``; the Glue
table ``node`` reads it)::

    {"schema_version": 1, "timestamp": "2026-07-01 02:05:00", "cluster": "shared-gpu",
     "instance_group": "p5-training", "instance_id": "i-0abc...", "instance_type": "ml.p5.48xlarge",
     "status": "Running", "schedulable": true, "gpus": 8}

``timestamp`` is UTC, written ``YYYY-MM-DD HH:MM:SS`` (what Athena's JSON SerDe reads as a ``timestamp``).
``status`` is the node's ``InstanceStatus.Status`` (Running, Pending, Failure, ShuttingDown, SystemUpdating,
DeepHealthCheckInProgress, NotFound); ``schedulable`` is ``status == "Running"``: every other state is a node
that HyperPod is creating, checking, replacing or updating, whose GPUs no team can use (the engine's
``unavailable_gpu_ms``). Kubernetes-level cordons are not visible to this API.

The snapshot time is the EventBridge event's ``time`` (the scheduled instant), so a retried invocation
overwrites the same object instead of adding a second snapshot.

Environment: ``CLUSTER_NAME`` (HyperPod cluster name or ARN), ``CLUSTER_LABEL`` (the ``cluster`` partition
value, default the cluster name), ``BUCKET``, ``PREFIX`` (default ``raw/node/``), ``GPUS_PER_INSTANCE``
(JSON ``{"ml.p5.48xlarge": 8, ...}``). Only the standard library and boto3 are imported.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import boto3

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Version of the snapshot format above; bump on an incompatible change.
SCHEMA_VERSION = 1
#: The one ``InstanceStatus.Status`` in which a node's GPUs are usable by teams.
SCHEDULABLE_STATUS = "Running"


def snapshot_time(event: Mapping[str, Any]) -> dt.datetime:
    """Return the scheduled instant of an EventBridge event (``time``), in UTC, to the second.

    Raises:
        ValueError: the event has no ``time`` (invoke it from the schedule, or pass ``{"time": "<ISO 8601>"}``).

    """
    text = event.get("time")
    if not isinstance(text, str):
        raise ValueError('node inventory: the event has no "time"; pass {"time": "2026-07-01T02:05:00Z"}')
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC).replace(microsecond=0)


def object_key(prefix: str, cluster: str, moment: dt.datetime) -> str:
    """S3 key of the snapshot taken at ``moment`` (Hive-style partitions, as the operator writes its tables)."""
    return (
        f"{prefix}year={moment:%Y}/month={moment:%m}/day={moment:%d}/hour={moment:%H}/"
        f"cluster={cluster}/{moment:%Y%m%dT%H%M%SZ}.json"
    )


def list_nodes(sagemaker: Any, cluster_name: str) -> list[dict[str, Any]]:
    """Every node summary of the cluster (``ListClusterNodes``, all pages)."""
    nodes: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"ClusterName": cluster_name}
    while True:
        page = sagemaker.list_cluster_nodes(**kwargs)
        nodes += page.get("ClusterNodeSummaries", [])
        token = page.get("NextToken")
        if not token:
            return nodes
        kwargs["NextToken"] = token


def snapshot_lines(
    nodes: list[dict[str, Any]], *, cluster: str, moment: dt.datetime, gpus_per_instance: Mapping[str, int]
) -> str:
    """Return the JSON-lines body of one snapshot (one line per node, sorted by instance ID; empty for no nodes)."""
    stamp = moment.strftime("%Y-%m-%d %H:%M:%S")
    rows = []
    for node in sorted(nodes, key=lambda n: str(n.get("InstanceId", ""))):
        instance_type = str(node.get("InstanceType", ""))
        status = str((node.get("InstanceStatus") or {}).get("Status", "Unknown"))
        rows.append(
            json.dumps(
                {
                    "schema_version": SCHEMA_VERSION,
                    "timestamp": stamp,
                    "cluster": cluster,
                    "instance_group": node.get("InstanceGroupName", ""),
                    "instance_id": node.get("InstanceId", ""),
                    "instance_type": instance_type,
                    "status": status,
                    "schedulable": status == SCHEDULABLE_STATUS,
                    "gpus": int(gpus_per_instance.get(instance_type, 0)),
                },
                sort_keys=True,
                separators=(",", ":"),
            )
        )
    return "".join(f"{row}\n" for row in rows)


def handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """Take one node snapshot and write it to S3; returns the key and the node count."""
    del context
    cluster_name = os.environ["CLUSTER_NAME"]
    cluster = os.environ.get("CLUSTER_LABEL") or cluster_name.rsplit("/", 1)[-1]
    bucket = os.environ["BUCKET"]
    prefix = os.environ.get("PREFIX", "raw/node/")
    gpus = {k: int(v) for k, v in json.loads(os.environ.get("GPUS_PER_INSTANCE", "{}")).items()}
    moment = snapshot_time(event)
    nodes = list_nodes(boto3.client("sagemaker"), cluster_name)
    unknown = sorted({str(n.get("InstanceType")) for n in nodes} - set(gpus))
    if unknown:
        LOG.warning("no GPU count configured for %s; their nodes are recorded with gpus=0", unknown)
    key = object_key(prefix, cluster, moment)
    body = snapshot_lines(nodes, cluster=cluster, moment=moment, gpus_per_instance=gpus)
    boto3.client("s3").put_object(
        Bucket=bucket, Key=key, Body=body.encode(), ContentType="application/x-ndjson"
    )
    LOG.info("wrote %d node(s) to s3://%s/%s", len(nodes), bucket, key)
    return {"key": key, "nodes": len(nodes)}
