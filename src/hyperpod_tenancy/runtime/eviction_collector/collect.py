"""The Lambda: each run writes new eviction records, notifies each team, and pushes the gauges and overdue counts."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import boto3

from hyperpod_tenancy.runtime.eviction_collector._common import (
    CLUSTER_QUEUES_PATH,
    DEFAULT_SCAN_MINUTES,
    LOG,
    OVERDUE_SERIES,
)
from hyperpod_tenancy.runtime.eviction_collector.gauges import (
    gauge_metric_data,
    gpu_flavors,
    list_workloads,
    team_gpu_gauges,
)
from hyperpod_tenancy.runtime.eviction_collector.overdue import checkpoints_overdue
from hyperpod_tenancy.runtime.eviction_collector.partitions import (
    partition_key,
    partition_lines,
    partition_rows,
)
from hyperpod_tenancy.runtime.eviction_collector.records import _stamp, eviction_record, snapshot_time
from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
    eks_token,
    endpoint_and_ca,
    list_objects,
)
from hyperpod_tenancy.runtime.preemption_notice import notice, topic_arn
from hyperpod_tenancy.runtime.remote_write import Series, push

__all__ = ["handler", "new_evictions", "object_key"]


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
    interval_env: str,
    dir_env: str,
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
            interval_env=interval_env,
            dir_env=dir_env,
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
    # the platform's checkpoint declaration variables (hyperpod_tenancy.k8s.labels), set by the construct
    interval_env = os.environ["CHECKPOINT_INTERVAL_ENV"]
    dir_env = os.environ["CHECKPOINT_DIR_ENV"]
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
        interval_env=interval_env,
        dir_env=dir_env,
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
    partition_prefix = os.environ.get("PARTITION_PREFIX")
    if partition_prefix:
        moment = snapshot_time(event)
        rows = partition_rows(
            cluster_queues, queue_prefix=queue_prefix, queue_suffix=queue_suffix, moment=moment
        )
        if rows:  # a cluster whose queues cover no GPU partition writes nothing
            key = partition_key(partition_prefix, cluster, moment)
            s3.put_object(
                Bucket=bucket,
                Key=key,
                Body=partition_lines(rows).encode(),
                ContentType="application/x-ndjson",
            )
            LOG.info("%d partition row(s) written to s3://%s/%s", len(rows), bucket, key)
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
                last_checkpoint_annotation=last_checkpoint_annotation,
                interval_env=interval_env,
                dir_env=dir_env,
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
