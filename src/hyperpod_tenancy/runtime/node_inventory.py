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
DeepHealthCheckInProgress, NotFound). ``schedulable`` says whether teams' work can run on the node
(:func:`schedulable`): the instance is ``Running`` and its Kubernetes node (``hyperpod-<instance id>``, listed from
the cluster's private API endpoint) is Ready, not cordoned (``spec.unschedulable``) and labelled
``sagemaker.amazonaws.com/node-health-status: Schedulable`` by HyperPod, the label the teams' workloads require
(their node affinity). Every other node's GPUs no team can use (the engine's ``unavailable_gpu_ms``): one HyperPod
is creating, checking, rebooting, replacing or updating, one Kubernetes reports NotReady, one an operator cordoned,
and one without a Kubernetes node (not joined yet). Taints are not read: an instance group's own taints keep other
work off its nodes, they do not remove capacity (HyperPod's health taint comes with the label above).

The snapshot time is the EventBridge event's ``time`` (the scheduled instant), so a retried invocation
overwrites the same object instead of adding a second snapshot.

Environment: ``CLUSTER_NAME`` (HyperPod cluster name or ARN), ``EKS_CLUSTER_NAME`` (its EKS cluster, whose nodes
are read), ``CLUSTER_LABEL`` (the ``cluster`` partition value, default the cluster name), ``BUCKET``, ``PREFIX``
(default ``raw/node/``), ``GPUS_PER_INSTANCE`` (JSON ``{"ml.p5.48xlarge": 8, ...}``). Only the standard library,
boto3 and :mod:`~hyperpod_tenancy.runtime.kube_api` (in the asset beside this module) are imported.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import boto3

from hyperpod_tenancy.runtime.kube_api import eks_token, endpoint_and_ca, list_objects

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Version of the snapshot format above; bump on an incompatible change.
SCHEMA_VERSION = 1
#: The one ``InstanceStatus.Status`` in which a node's GPUs are usable by teams.
SCHEDULABLE_STATUS = "Running"
#: The Kubernetes API's list of nodes.
NODES_PATH = "/api/v1/nodes"
#: HyperPod names each Kubernetes node ``hyperpod-<instance id>``.
NODE_NAME_PREFIX = "hyperpod-"
#: HyperPod's label of a node's health (AWS, "Resilience-related Kubernetes labels"); the teams' workloads run only
#: on nodes where it is :data:`HEALTHY` (their node affinity).
NODE_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
#: The value of :data:`NODE_HEALTH_LABEL` on a node HyperPod lets work run on.
HEALTHY = "Schedulable"


def kubernetes_schedulable(node: Mapping[str, Any]) -> bool:
    """Whether a Kubernetes node can run teams' work: Ready, not cordoned, and healthy by HyperPod's label."""
    metadata = node.get("metadata") or {}
    conditions = (node.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    healthy = (metadata.get("labels") or {}).get(NODE_HEALTH_LABEL) == HEALTHY
    return ready and healthy and not cordoned


def nodes_by_instance(nodes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Return the cluster's Kubernetes nodes by the HyperPod instance ID in their name (other nodes left out)."""
    by_id: dict[str, dict[str, Any]] = {}
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name", ""))
        if name.startswith(NODE_NAME_PREFIX):
            by_id[name.removeprefix(NODE_NAME_PREFIX)] = node
    return by_id


def schedulable(summary: Mapping[str, Any], kubernetes: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether a HyperPod node's GPUs are usable by teams (see the module docstring).

    Args:
        summary: the node's ``ListClusterNodes`` summary.
        kubernetes: the cluster's Kubernetes nodes by instance ID (:func:`nodes_by_instance`).

    """
    status = str((summary.get("InstanceStatus") or {}).get("Status", "Unknown"))
    node = kubernetes.get(str(summary.get("InstanceId", "")))
    return status == SCHEDULABLE_STATUS and node is not None and kubernetes_schedulable(node)


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
    nodes: list[dict[str, Any]],
    *,
    cluster: str,
    moment: dt.datetime,
    gpus_per_instance: Mapping[str, int],
    kubernetes: Mapping[str, Mapping[str, Any]],
) -> str:
    """Return the JSON-lines body of one snapshot (one line per node, sorted by instance ID; empty for no nodes).

    ``kubernetes`` is the cluster's Kubernetes nodes by instance ID (:func:`nodes_by_instance`).
    """
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
                    "schedulable": schedulable(node, kubernetes),
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
    eks_cluster = os.environ["EKS_CLUSTER_NAME"]
    endpoint, ca_pem = endpoint_and_ca(eks_cluster)
    kubernetes = nodes_by_instance(list_objects(endpoint, eks_token(eks_cluster), ca_pem, NODES_PATH))
    unknown = sorted({str(n.get("InstanceType")) for n in nodes} - set(gpus))
    if unknown:
        LOG.warning("no GPU count configured for %s; their nodes are recorded with gpus=0", unknown)
    key = object_key(prefix, cluster, moment)
    body = snapshot_lines(
        nodes, cluster=cluster, moment=moment, gpus_per_instance=gpus, kubernetes=kubernetes
    )
    boto3.client("s3").put_object(
        Bucket=bucket, Key=key, Body=body.encode(), ContentType="application/x-ndjson"
    )
    LOG.info(
        "wrote %d node(s), %d schedulable, to s3://%s/%s",
        len(nodes),
        sum(schedulable(n, kubernetes) for n in nodes),
        bucket,
        key,
    )
    return {"key": key, "nodes": len(nodes)}
