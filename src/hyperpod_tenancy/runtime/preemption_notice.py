"""The message a team receives on its own topic when one of its workloads is preempted.

The eviction collector (:mod:`hyperpod_tenancy.runtime.eviction_collector`) publishes one per new eviction to the
team's notification topic (``<cluster>-preemptions-<team>``, created in the team's stack, which its members can
subscribe to): the preempted workload, the workload that preempted it and why (Kueue's ``Evicted`` condition
message: ``Preempted to accommodate a workload (UID: <uid>, JobUID: <uid>) due to <why>; ...``), and the GPU-hours
lost, computed by the chargeback engine's own rule (:func:`hyperpod_tenancy.chargeback.engine.preemption_loss`,
in the asset beside this module). Only the standard library and boto3 are imported here.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from hyperpod_tenancy.chargeback.engine import preemption_loss
from hyperpod_tenancy.chargeback.model import Eviction, LossBasis

__all__ = ["notice", "preemptor", "topic_arn"]

#: Kueue's ``Evicted`` message on a preemption (kubernetes-sigs/kueue ``pkg/scheduler/preemption``).
_PREEMPTED_BY = re.compile(
    r"Preempted to accommodate a workload \(UID: (?P<uid>[^,]+), JobUID: [^)]+\) due to (?P<why>[^;]+)"
)
_HUNDREDTH = Decimal("0.01")
_BASIS = {
    LossBasis.MEASURED: "measured from the last checkpoint",
    LossBasis.DECLARED_INTERVAL: "at most: the declared checkpoint interval",
    LossBasis.WHOLE_RUN: "the whole run: no checkpoint interval was declared",
}


def preemptor(workload: Mapping[str, Any], by_uid: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """Return the workload that preempted ``workload`` (``namespace/name``, or its UID when no longer listed) and why.

    ``("unknown", <the condition's message>)`` when the message is not Kueue's preemption message.
    """
    conditions = (workload.get("status") or {}).get("conditions") or []
    evicted: Mapping[str, Any] = next((c for c in conditions if c.get("type") == "Evicted"), {})
    message = str(evicted.get("message", ""))
    match = _PREEMPTED_BY.search(message)
    if match is None:
        return "unknown", message or "no message"
    uid = match["uid"].strip()
    other = (by_uid.get(uid) or {}).get("metadata") or {}
    name = f"{other['namespace']}/{other['name']}" if other.get("name") else f"workload UID {uid}"
    return name, match["why"].strip()


def _time(text: object) -> dt.datetime:
    return dt.datetime.strptime(str(text), "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)


def notice(
    record: Mapping[str, Any],
    workload: Mapping[str, Any],
    by_uid: Mapping[str, Mapping[str, Any]],
    *,
    namespace_prefix: str,
) -> tuple[str, str]:
    """Return the subject and the message of one eviction's notice (``record`` as the collector writes it).

    ``namespace_prefix``: what a team's namespace starts with (the construct passes the policy's, as the
    collector's ``TEAM_QUEUE_PREFIX``).
    """
    namespace = str(record["namespace"])
    team = namespace.removeprefix(namespace_prefix)
    by, why = preemptor(workload, by_uid)
    at = _time(record["timestamp"])
    eviction = Eviction(
        time=at,
        cluster=str(record["cluster"]),
        team=team,
        instance_type=str(record["instance_type"]),
        workload=str(record["workload"]),
        priority_class=str(record["priority_class"]),
        gpus=int(record["gpus"]),
        run_started=_time(record["admitted_at"]) if record.get("admitted_at") else at,
        checkpoint_interval_minutes=record.get("checkpoint_interval_minutes"),
        last_checkpoint=_time(record["last_checkpoint"]) if record.get("last_checkpoint") else None,
    )
    lost, basis = preemption_loss(eviction)
    subject = f"Preempted: {namespace}/{record['workload']} on {record['cluster']}"
    lines = [
        f"Workload {namespace}/{record['workload']} (team {team}, {record['priority_class']}) was preempted at "
        f"{record['timestamp']} UTC on {record['instance_type']}, holding {record['gpus']} GPUs.",
        f"Preempted by: {by}.",
        f"Why: {why}.",
        f"GPU-hours lost: {lost.quantize(_HUNDREDTH)} ({_BASIS[basis]}).",
    ]
    return subject[:100], "\n".join(lines)


def topic_arn(prefix: str, namespace: str, *, namespace_prefix: str) -> str | None:
    """Return the team topic of a namespace (``prefix`` + team), or ``None`` for a namespace that is no team's."""
    if not namespace.startswith(namespace_prefix):
        return None
    return prefix + namespace.removeprefix(namespace_prefix)
