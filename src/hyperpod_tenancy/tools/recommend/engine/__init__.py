"""Quotas from history: what ``recommend-quotas`` reads, how it proposes, and how it edits ``platform.yaml``.

What the data records (collector schema v1, :mod:`hyperpod_tenancy.chargeback.queries`):

* ``clusterqueue`` snapshots carry, per ClusterQueue and instance type, only what the admitted workloads hold
  (``gpu_total``) and the part over the nominal quota (``gpu_borrowed``). They carry **no pending demand**:
  nothing about the workloads Kueue has not admitted. The chargeback's ``hourly_usage`` query turns them into
  GPU-milliseconds per team, type and hour (:class:`~hyperpod_tenancy.chargeback.model.HourlyUsage`), read here
  with the offline chargeback (:func:`hyperpod_tenancy.tools.chargeback.offline.run_queries`).
* The closest recorded signal of waiting demand is the same operator's ``workload`` table (``raw/workload/``,
  catalogued by the pipeline, not read by the chargeback): one row per Workload state change, with ``gpu``,
  ``instance_type``, ``admitted`` and ``finished``. A Workload whose latest row is neither admitted nor finished
  is waiting; its GPUs count as waiting demand until its next row (or the end of the month). Without a
  ``workload/`` folder the only signal left is the hours a team spent at its ceiling (used ≥ guarantee +
  borrowing limit): the command says so and counts no waiting demand.

The proposal, per team and instance type with GPUs, in GPUs per hour of the month (an hour without usage is 0):

* guarantee = ``p95(own + waiting)`` GPUs, ``own`` = used - borrowed, rounded up to the grain the quota is
  written in (whole instances, or accelerators; a quota in vCPUs or memory is kept): a team capped at its
  ceiling with a queue grows by its queue, one that never fills its guarantee shrinks to what it holds 95 % of
  the time;
* borrow limit = ``ceil(100 x p95(used + waiting - new guarantee, ≥ 0) / new guarantee)`` percent, the most
  over the team's types, within the documented 1-500 (or up to the team's own limit above it); unchanged for
  a team that does not borrow, is guaranteed nothing, or never needed more than its new guarantee in the
  month (no evidence for a change: a borrow limit costs nothing until it is used);
* where the guarantees of a type exceed what it can promise (``count - reserved``, less what quotas in vCPUs
  or memory hold), every team's is scaled down pro rata in GPUs (largest remainder, whole steps of each grain),
  and the notes say so.

Percentiles are nearest-rank: ``p`` of ``n`` sorted values is the ``ceil(p x n / 100)``-th.
"""

from __future__ import annotations

from hyperpod_tenancy.tools.recommend.engine.history import (
    BillImpact,
    History,
    Proposal,
    Reason,
    RecommendError,
    percentile,
    read_history,
)
from hyperpod_tenancy.tools.recommend.engine.impact import bill_impact
from hyperpod_tenancy.tools.recommend.engine.propose import recommend
from hyperpod_tenancy.tools.recommend.engine.yaml_edit import apply_to_yaml, load_text

__all__ = [
    "BillImpact",
    "History",
    "Proposal",
    "Reason",
    "RecommendError",
    "apply_to_yaml",
    "bill_impact",
    "load_text",
    "percentile",
    "read_history",
    "recommend",
]
