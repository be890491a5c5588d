"""A month of recorded usage per team, read from the usage report, and the types of a recommendation."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from hyperpod_tenancy.chargeback.model import MS_PER_HOUR
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import DOCUMENTED_BORROW_LIMIT_RANGE, Platform, ResourceAmount

__all__ = [
    "BORROW_LIMIT_RANGE",
    "CEILING_EPSILON",
    "PERCENTILE",
    "BillImpact",
    "History",
    "Proposal",
    "Reason",
    "RecommendError",
    "Series",
    "percentile",
    "read_history",
]

#: The percentile a guarantee and a borrow limit are sized to.
PERCENTILE = 95


#: The range ``borrowLimit`` is proposed in (percent of the guarantee): the documented one; a team's own limit
#: above it is kept as the upper end.
BORROW_LIMIT_RANGE = DOCUMENTED_BORROW_LIMIT_RANGE


#: A team is at its ceiling in an hour when it used at least this close to it (GPUs, hour averages).
CEILING_EPSILON = 0.5


_PREFIX = names.NAMESPACE_PREFIX


class RecommendError(ValueError):
    """The usage cannot be read, holds nothing of the month, or the proposal does not validate; one line."""


@dataclass(frozen=True, kw_only=True)
class Series:
    """One team's hourly GPUs on one instance type, every hour of the month in order."""

    used: tuple[float, ...]
    borrowed: tuple[float, ...]
    waiting: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class History:
    """A month of usage per (team, instance type), with what was recorded about waiting demand."""

    month: str
    hours: int
    series: Mapping[tuple[str, str], Series]
    #: Whether the ``workload`` table was read (False: no waiting demand is known).
    waiting_recorded: bool
    #: One sentence on where the waiting demand came from, for the output.
    pending_note: str


@dataclass(frozen=True, kw_only=True)
class Reason:
    """The figures one team's proposal on one instance type rests on (GPUs per hour)."""

    team: str
    instance_type: str
    p50_used: float
    p95_used: float
    p95_own_and_waiting: float
    p95_borrowed_above: float
    hours_at_ceiling: int
    waiting_gpu_hours: float
    #: The quota in force and the one proposed, in the grain the team writes it (``7``, ``52 accelerators``).
    current_quota: int | ResourceAmount
    proposed_quota: int | ResourceAmount
    current_borrow_limit: int
    proposed_borrow_limit: int


@dataclass(frozen=True, kw_only=True)
class Proposal:
    """The proposed quotas and borrow limits, and why."""

    #: Team → instance type → proposed quota, in the grain it is written in (every quota of every hosted team).
    quotas: Mapping[str, Mapping[str, int | ResourceAmount]]
    #: Team → proposed borrow limit (percent).
    borrow_limits: Mapping[str, int]
    reasons: tuple[Reason, ...]
    #: Scaling and other remarks, one sentence each.
    notes: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class BillImpact:
    """Each team's monthly bill under the billing rule, current and proposed policy (the plan's cost)."""

    #: What the bill is (month, rule), or why there is none.
    description: str
    #: Row owner → (current, proposed) USD; empty when there is no bill.
    teams: Mapping[str, tuple[Decimal, Decimal]]
    #: Why there is no bill (the plan's cost note), else None.
    note: str | None = None


def percentile(values: Sequence[float], p: int = PERCENTILE) -> float:
    """Nearest-rank percentile: the ``ceil(p x n / 100)``-th smallest of ``values`` (0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(math.ceil(p * len(ordered) / 100), 1) - 1]


def _gpus_per_instance(platform: Platform) -> dict[str, int]:
    from hyperpod_tenancy.tools.plan.tenancy_plan import gpus_per_instance  # noqa: PLC0415

    return gpus_per_instance(platform)


def read_history(platform: Platform, *, usage: Path, month: str) -> History:
    """Read a month of hourly usage (the chargeback's SQL) and of waiting demand (``workload/``) from ``usage``.

    Raises:
        RecommendError: the folder cannot be read, or it holds no usage of the month.

    """
    from hyperpod_tenancy.chargeback import engine, queries  # noqa: PLC0415
    from hyperpod_tenancy.tools.chargeback import offline as chargeback_offline  # noqa: PLC0415

    if not usage.is_dir():
        raise RecommendError(
            f"--usage {str(usage)!r}: not a folder; pass the folder holding clusterqueue/ and node/"
        )
    gpus = _gpus_per_instance(platform)
    try:
        inputs, _ = chargeback_offline.run_queries(
            usage=usage, month=month, cluster=platform.cluster.name, gpus_per_instance=gpus, progress=False
        )
        waiting = _waiting(usage, month=month, cluster=platform.cluster.name)
    except (chargeback_offline.OfflineInputError, queries.QueryInputError) as exc:
        raise RecommendError(str(exc)) from exc
    if not inputs.usage:
        raise RecommendError(
            f"--usage {str(usage)!r}: no ClusterQueue usage of cluster {platform.cluster.name!r} in {month}; "
            "pick a month the folder holds with --month YYYY-MM"
        )
    start, end = engine.month_bounds(month)
    hours = int((end - start).total_seconds()) // 3600
    used: dict[tuple[str, str], list[float]] = {}
    borrowed: dict[tuple[str, str], list[float]] = {}
    for row in inputs.usage:
        key = (row.team, row.instance_type)
        index = int((row.hour - start).total_seconds()) // 3600
        used.setdefault(key, [0.0] * hours)[index] += row.gpu_ms / MS_PER_HOUR
        borrowed.setdefault(key, [0.0] * hours)[index] += row.borrowed_gpu_ms / MS_PER_HOUR
    pending: dict[tuple[str, str], list[float]] = {}
    unattributed = 0.0
    quota_types = {t.name: [i for i in t.compute.quotas if gpus.get(i)] for t in platform.hosted_teams}
    for (team, recorded), hourly in (waiting or {}).items():
        itype = recorded
        # a waiting workload Kueue has not assigned a flavor: the team's only type, if it has one
        if not itype:
            types = quota_types.get(team, [])
            if len(types) != 1:
                unattributed += sum(hourly.values()) / MS_PER_HOUR
                continue
            itype = types[0]
        series = pending.setdefault((team, itype), [0.0] * hours)
        for index, gpu_ms in hourly.items():
            if 0 <= index < hours:
                series[index] += gpu_ms / MS_PER_HOUR
    keys = sorted(set(used) | set(pending))
    zero = (0.0,) * hours
    series_of = {
        k: Series(
            used=tuple(used.get(k, zero)),
            borrowed=tuple(borrowed.get(k, zero)),
            waiting=tuple(pending.get(k, zero)),
        )
        for k in keys
    }
    if waiting is None:
        note = (
            "not recorded: the clusterqueue snapshots hold only admitted GPUs (gpu_total, gpu_borrowed), and the "
            "folder has no workload/ table (the operator's raw/workload/); only the hours at the ceiling show "
            "demand the quota capped"
        )
    else:
        note = (
            "read from workload/ (the operator's Workload snapshots): GPUs of workloads neither admitted nor "
            "finished, until their next snapshot"
        )
        if unattributed:
            note += (
                f"; {unattributed:,.1f} GPU-hours of workloads without an instance type were not attributed"
            )
    return History(
        month=month, hours=hours, series=series_of, waiting_recorded=waiting is not None, pending_note=note
    )


def _waiting(usage: Path, *, month: str, cluster: str) -> dict[tuple[str, str], dict[int, int]] | None:
    """Return (team, instance type) → hour index → GPU-ms of waiting workloads; None without ``workload/``."""
    import duckdb  # noqa: PLC0415

    from hyperpod_tenancy.chargeback import queries  # noqa: PLC0415
    from hyperpod_tenancy.tools.chargeback import offline as chargeback_offline  # noqa: PLC0415

    start, end = queries.month_bounds(month)
    previous = start - dt.timedelta(days=1)
    found = chargeback_offline.tables.table_files(  # the offline reader's file discovery
        usage, "workload", ((start.year, start.month), (previous.year, previous.month))
    )
    if found is None:
        return None
    reader, files = found
    source = chargeback_offline.tables.table_source("workload", reader, files)
    naive_start, naive_end = start.replace(tzinfo=None), end.replace(tzinfo=None)
    sql = f"""
        WITH w AS (
          SELECT workload_name, namespace, team, COALESCE(instance_type, '') AS instance_type,
                 CAST("timestamp" AS TIMESTAMP) AS ts, TRY_CAST(resource_version AS BIGINT) AS rv,
                 CAST(gpu AS DOUBLE) AS gpus, COALESCE(admitted, false) AS admitted,
                 COALESCE(finished, false) AS finished
          FROM {source}
          WHERE cluster = ?
        ),
        s AS (
          SELECT *, LEAD(ts) OVER (PARTITION BY namespace, workload_name ORDER BY ts, rv) AS next_ts FROM w
          WHERE ts < ?
        )
        SELECT namespace, team, instance_type, ts, COALESCE(next_ts, ?) AS until, gpus
        FROM s
        WHERE (next_ts IS NULL OR next_ts > ts) AND NOT admitted AND NOT finished AND gpus > 0
          AND COALESCE(next_ts, ?) > ?
    """  # noqa: S608 - the source is the offline reader's, with quoted paths
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone = 'UTC'")
        rows = con.execute(sql, [cluster, naive_end, naive_end, naive_end, naive_start]).fetchall()
    except duckdb.Error as exc:
        raise RecommendError(
            f"--usage {str(usage)!r}: cannot read workload/ ({exc}); its files must have the operator's columns "
            f"({', '.join(name for name, _ in queries.COLLECTOR_COLUMNS['workload'])})"
        ) from exc
    finally:
        con.close()
    result: dict[tuple[str, str], dict[int, int]] = {}
    for namespace, team, itype, since, until, gpus in rows:
        name = namespace[len(_PREFIX) :] if str(namespace).startswith(_PREFIX) else str(team)
        begin, finish = max(since, naive_start), min(until, naive_end)
        hourly = result.setdefault((name, str(itype)), {})
        cursor = begin
        while cursor < finish:
            hour = cursor.replace(minute=0, second=0, microsecond=0)
            stop = min(finish, hour + dt.timedelta(hours=1))
            index = int((hour - naive_start).total_seconds()) // 3600
            ms = int((stop - cursor).total_seconds() * 1000)
            hourly[index] = hourly.get(index, 0) + round(gpus * ms)
            cursor = stop
    return result
