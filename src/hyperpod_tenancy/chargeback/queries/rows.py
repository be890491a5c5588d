"""The rows of the queries read back as the engine's typed inputs, each value checked and named when wrong."""

from __future__ import annotations

import datetime as dt
import functools
import operator
from collections.abc import Mapping, Sequence
from decimal import Decimal

from hyperpod_tenancy.chargeback.model import (
    SLICES_PER_GPU,
    BillCredit,
    CollectionGap,
    CostInputs,
    Eviction,
    HourlyCapacity,
    HourlyUsage,
    HourlyUsageBlock,
    InstanceTypeCost,
    SharedCost,
    TeamCost,
    TeamPeriod,
    UsageInputs,
    UsageRecords,
)
from hyperpod_tenancy.chargeback.queries.sql import (
    GAP_THRESHOLD_MINUTES,
    QueryInputError,
    QueryResult,
    Row,
)

__all__ = [
    "USAGE_BLOCK_COLUMNS",
    "cost_inputs",
    "gpu_ms_of_slices",
    "usage_blocks",
    "usage_inputs",
    "usage_records",
    "with_partition_usage",
]

#: The ``cur_costs`` kinds of the credits and refunds on the bill (:class:`~.model.BillCredit`).
_CREDIT_KINDS = ("credit", "refund")


#: The columns of ``hourly_usage``, in the order :class:`~.model.HourlyUsage` takes them.
_USAGE_COLUMNS = ("hour", "cluster", "instance_type", "team", "gpu_ms", "borrowed_gpu_ms")


_NO_RESULT = QueryResult((), ())


def usage_inputs(
    results: Mapping[str, QueryResult],
    *,
    gpus_per_instance: Mapping[str, int],
    usage: Sequence[HourlyUsage] | None = None,
) -> UsageInputs:
    """Convert the results of :data:`USAGE_QUERIES` into the engine's usage inputs.

    Args:
        results: query name → its result (``hourly_usage`` and ``hourly_capacity`` required, ``evictions``,
            ``collection_gaps`` and ``team_periods`` optional; without ``team_periods`` every team of the
            configuration is billed its guarantee all month).
        gpus_per_instance: GPUs per instance of each instance type (to turn instance-time into GPU-time).
        usage: the ``hourly_usage`` records, when already read with :func:`usage_records` (for example while
            the other queries ran); ``results`` then needs no ``hourly_usage``.

    Returns:
        Usage, capacity, evictions and collection gaps, each in the SQL's order (sorted by hour or time, then
        keys).

    Raises:
        QueryInputError: a query's result is missing, a column is missing or malformed, or an instance type
            in the node inventory has no GPU count.

    """
    for name in ("hourly_capacity",) if usage is not None else ("hourly_usage", "hourly_capacity"):
        if name not in results:
            raise QueryInputError(
                f"results[{name!r}]: missing; run queries.SQL[{name!r}] and pass its result"
            )
    capacity = tuple(
        _capacity_row(row, i, gpus_per_instance) for i, row in enumerate(results["hourly_capacity"].records())
    )
    evictions = tuple(
        _eviction_row(row, i) for i, row in enumerate(results.get("evictions", _NO_RESULT).records())
    )
    gaps = tuple(
        _gap_row(row, i) for i, row in enumerate(results.get("collection_gaps", _NO_RESULT).records())
    )
    periods = (
        tuple(_period_row(row, i) for i, row in enumerate(results["team_periods"].records()))
        if "team_periods" in results
        else None
    )
    if usage is None:
        usage = usage_records(results["hourly_usage"])
    partitions = tuple(
        _partition_row(row, i) for i, row in enumerate(results.get("hourly_partitions", _NO_RESULT).records())
    )
    usage = with_partition_usage(usage, partitions)
    return UsageInputs(
        usage=usage, capacity=capacity, evictions=evictions, collection_gaps=gaps, team_periods=periods
    )


def cost_inputs(result: QueryResult) -> CostInputs:
    """Convert the result of ``cur_costs`` into the engine's cost inputs.

    Args:
        result: the result (``kind``, ``name``, ``cost``, ``usage_amount``).

    Returns:
        The instance-type lines, the team lines, the shared lines, the credits and refunds (each sorted by name) and
        the bill total (``None`` when the CUR has no line of the cluster for the month: the engine then prices from
        the price table).

    Raises:
        QueryInputError: a column is missing or malformed, or a row has an unknown kind.

    """
    instance_types: list[InstanceTypeCost] = []
    shared: list[SharedCost] = []
    teams: list[TeamCost] = []
    adjustments: list[BillCredit] = []
    total: Decimal | None = None
    for i, row in enumerate(result.records()):
        kind = _text(row, "kind", "cur_costs", i)
        name = _text(row, "name", "cur_costs", i)
        cost = _decimal(row, "cost", "cur_costs", i)
        if kind == "instance-type":
            amount = _decimal(row, "usage_amount", "cur_costs", i)
            instance_types.append(InstanceTypeCost(instance_type=name, cost=cost, instance_hours=amount))
        elif kind == "shared":
            shared.append(SharedCost(category=name, cost=cost))
        elif kind == "team":
            teams.append(TeamCost(team=name, cost=cost))
        elif kind in _CREDIT_KINDS:
            adjustments.append(BillCredit(kind=kind, name=name, cost=cost))
        elif kind == "total":
            total = cost
        else:
            raise QueryInputError(
                f"cur_costs row {i}: kind {kind!r} is not instance-type, team, shared, credit, refund or total"
            )
    if not instance_types and not shared and not teams and not adjustments:
        total = None
    return CostInputs(
        instance_types=tuple(sorted(instance_types, key=lambda c: c.instance_type)),
        shared=tuple(sorted(shared, key=lambda c: c.category)),
        teams=tuple(sorted(teams, key=lambda c: c.team)),
        bill_total=total,
        credits=tuple(sorted(adjustments, key=lambda c: (c.kind, c.name))),
    )


def usage_records(result: QueryResult) -> tuple[HourlyUsage, ...]:
    """Convert the result of ``hourly_usage`` into the engine's usage records, in the SQL's order.

    Fast: a month has ~10^5-10^6 rows, read here without per-column checks; a row that cannot be read as it
    stands is re-read with them, and the error names the row and the malformed column. Run it under
    :func:`gc_paused`.

    Raises:
        QueryInputError: a column is missing or malformed.

    """
    columns = result.columns
    if not set(_USAGE_COLUMNS) <= set(columns):
        return tuple(_usage_row_checked(row, i) for i, row in enumerate(result.records()))
    pick = operator.itemgetter(*(columns.index(c) for c in _USAGE_COLUMNS))
    new = tuple.__new__  # HourlyUsage._make without its Python-level frame
    hours: dict[object, dt.datetime] = {}  # a month has a few hundred distinct hours
    usage: list[HourlyUsage] = []
    append = usage.append
    for i, row in enumerate(result.rows):
        try:
            hour, cluster, itype, team, gpu_ms, borrowed_ms = pick(row)
            when = hours.get(hour)
            if when is None:
                when = hours[hour] = _parse_utc(hour) if type(hour) is str else _utc(hour)
            if type(gpu_ms) is not int:
                gpu_ms = _text_int(gpu_ms)
            if type(borrowed_ms) is not int:
                borrowed_ms = _text_int(borrowed_ms)
            if not (
                type(cluster) is str
                and type(itype) is str
                and type(team) is str
                and cluster
                and itype
                and team
            ):
                raise TypeError
            append(new(HourlyUsage, (when, cluster, itype, team, gpu_ms, borrowed_ms)))
        except (IndexError, TypeError, ValueError, AttributeError):
            append(_usage_row_checked(dict(zip(columns, row, strict=False)), i))
    return tuple(usage)


#: The columns of ``hourly_usage`` read in blocks (:func:`usage_blocks`): one row per hour and instance type, the
#: teams and their values as lists in the teams' order.
USAGE_BLOCK_COLUMNS = ("hour", "cluster", "instance_type", "teams", "gpu_ms", "borrowed_gpu_ms")


def usage_blocks(result: QueryResult) -> UsageRecords:
    """Convert ``hourly_usage`` read in blocks (:data:`USAGE_BLOCK_COLUMNS`) into the engine's usage records.

    The same records as :func:`usage_records` of the rows the blocks group, in the same order (by hour, type,
    team), held as :class:`~.model.HourlyUsageBlock` s. The values are checked by the engine, an hour at a
    time; the names here.

    Raises:
        QueryInputError: a column is missing, or a value is not of its type (the block named).

    """
    missing = [c for c in USAGE_BLOCK_COLUMNS if c not in result.columns]
    if missing:
        raise QueryInputError(
            f"hourly_usage blocks: no column {missing[0]!r}; read them as USAGE_BLOCK_COLUMNS"
        )
    pick = operator.itemgetter(*(result.columns.index(c) for c in USAGE_BLOCK_COLUMNS))
    blocks: list[HourlyUsageBlock] = []
    for i, row in enumerate(result.rows):
        hour, cluster, itype, teams, gpu_ms, borrowed = pick(row)
        try:
            when = _utc(hour) if isinstance(hour, dt.datetime) else _parse_utc(str(hour))
        except ValueError:
            raise QueryInputError(
                f"hourly_usage block {i}: hour {hour!r} is not a timestamp (YYYY-MM-DD HH:MM:SS)"
            ) from None
        if not (
            type(cluster) is str
            and type(itype) is str
            and cluster
            and itype
            and type(teams) is list
            and type(gpu_ms) is list
            and type(borrowed) is list
            and set(map(type, teams)) <= {str}
            and "" not in teams
        ):
            raise QueryInputError(
                f"hourly_usage block {i} ({itype!r} at {hour!r}): the cluster, the instance type and every team "
                "must be non-empty text and the values lists"
            )
        blocks.append(
            HourlyUsageBlock(
                hour=when,
                cluster=cluster,
                instance_type=itype,
                teams=teams,
                gpu_ms=gpu_ms,
                borrowed_gpu_ms=borrowed,
            )
        )
    try:
        return UsageRecords(blocks)
    except ValueError as exc:
        raise QueryInputError(f"hourly_usage blocks: {exc}") from None


def _text_int(value: object) -> int:
    """Return the integer Athena returned as text (anything else: the checked path reads the row)."""
    if type(value) is str:
        return int(value)
    raise TypeError


def _usage_row_checked(row: Row, i: int) -> HourlyUsage:
    q = "hourly_usage"
    return HourlyUsage(
        hour=_time(row, "hour", q, i),
        cluster=_text(row, "cluster", q, i),
        instance_type=_text(row, "instance_type", q, i),
        team=_text(row, "team", q, i),
        gpu_ms=_int(row, "gpu_ms", q, i),
        borrowed_gpu_ms=_int(row, "borrowed_gpu_ms", q, i),
    )


def _capacity_row(row: Row, i: int, gpus_per_instance: Mapping[str, int]) -> HourlyCapacity:
    q = "hourly_capacity"
    itype = _text(row, "instance_type", q, i)
    gpus = gpus_per_instance.get(itype)
    if gpus is None:
        known = ", ".join(sorted(gpus_per_instance)) or "none"
        raise QueryInputError(
            f"{q} row {i}: instance type {itype!r} has no GPU count (known: {known}); add it to "
            "gpus_per_instance (the cluster's instance groups)"
        )
    return HourlyCapacity(
        hour=_time(row, "hour", q, i),
        cluster=_text(row, "cluster", q, i),
        instance_type=itype,
        gpu_ms=_int(row, "instance_ms", q, i) * gpus,
        unavailable_gpu_ms=_int(row, "unavailable_instance_ms", q, i) * gpus,
    )


def gpu_ms_of_slices(slice_ms: int) -> int:
    """GPU-milliseconds of ``slice_ms`` compute-slice-milliseconds: a slice is 1/:data:`SLICES_PER_GPU` of a GPU.

    Rounded to the nearest millisecond (half up), as the engine bills whole GPU-milliseconds: at most half a
    GPU-millisecond a team, hour and instance type, and the capacity the teams do not hold, this rounding
    included, is the idle owner's, so the bill still adds up.
    """
    return (2 * slice_ms + SLICES_PER_GPU) // (2 * SLICES_PER_GPU)


def _partition_row(row: Row, i: int) -> HourlyUsage:
    q = "hourly_partitions"
    held, borrowed = _int(row, "slice_ms", q, i), _int(row, "borrowed_slice_ms", q, i)
    if not 0 <= borrowed <= held:
        raise QueryInputError(
            f"{q} row {i}: {borrowed} borrowed of {held} slice-milliseconds; the borrowed part is at most the total"
        )
    return HourlyUsage(
        hour=_time(row, "hour", q, i),
        cluster=_text(row, "cluster", q, i),
        instance_type=_text(row, "instance_type", q, i),
        team=_text(row, "team", q, i),
        gpu_ms=gpu_ms_of_slices(held),
        borrowed_gpu_ms=gpu_ms_of_slices(borrowed),
    )


def with_partition_usage(
    usage: Sequence[HourlyUsage], partitions: Sequence[HourlyUsage]
) -> Sequence[HourlyUsage]:
    """``usage`` with the GPU partitions' usage added: one record per hour, instance type and team, in that order.

    A team's partitions and its whole GPUs of the same hour and type (the usage-report operator counts
    ``nvidia.com/gpu`` only, which partitioned nodes do not offer) are summed. Without partitions, ``usage`` is
    returned as it is.
    """
    if not partitions:
        return usage
    held: dict[tuple[dt.datetime, str, str, str], tuple[int, int]] = {}
    for u in (*usage, *partitions):
        key = (u.hour, u.cluster, u.instance_type, u.team)
        g, b = held.get(key, (0, 0))
        held[key] = (g + u.gpu_ms, b + u.borrowed_gpu_ms)
    return tuple(
        HourlyUsage(hour=h, cluster=c, instance_type=t, team=team, gpu_ms=g, borrowed_gpu_ms=b)
        for (h, c, t, team), (g, b) in sorted(held.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][3]))
    )


def _eviction_row(row: Row, i: int) -> Eviction:
    q = "evictions"
    interval = row.get("checkpoint_interval_minutes")
    last = row.get("last_checkpoint")
    return Eviction(
        time=_time(row, "time", q, i),
        cluster=_text(row, "cluster", q, i),
        team=_text(row, "team", q, i),
        instance_type=_text(row, "instance_type", q, i),
        workload=_text(row, "workload", q, i),
        priority_class=_text(row, "priority_class", q, i),
        gpus=_int(row, "gpus", q, i),
        run_started=_time(row, "run_started", q, i),
        checkpoint_interval_minutes=None
        if _is_null(interval)
        else _int(row, "checkpoint_interval_minutes", q, i),
        last_checkpoint=None if _is_null(last) else _time(row, "last_checkpoint", q, i),
    )


def _gap_row(row: Row, i: int) -> CollectionGap:
    q = "collection_gaps"
    table = _text(row, "table_name", q, i)
    if table not in GAP_THRESHOLD_MINUTES:
        raise QueryInputError(
            f"{q} row {i}: table {table!r} is not one of {', '.join(GAP_THRESHOLD_MINUTES)}"
        )
    return CollectionGap(table=table, start=_time(row, "gap_start", q, i), end=_time(row, "gap_end", q, i))


def _period_row(row: Row, i: int) -> TeamPeriod:
    q = "team_periods"
    return TeamPeriod(
        team=_text(row, "team", q, i),
        start=_time(row, "first_hour", q, i),
        end=_time(row, "last_hour", q, i) + dt.timedelta(hours=1),
    )


def _is_null(value: object) -> bool:
    return value is None or value == ""


def _value(row: Row, column: str, query: str, i: int) -> object:
    if column not in row:
        raise QueryInputError(
            f"{query} row {i}: column {column!r} missing; run the SQL of queries.SQL[{query!r}]"
        )
    value = row[column]
    if _is_null(value):
        raise QueryInputError(f"{query} row {i}: column {column!r} is NULL; the SQL never returns NULL there")
    return value


def _text(row: Row, column: str, query: str, i: int) -> str:
    return str(_value(row, column, query, i))


def _int(row: Row, column: str, query: str, i: int) -> int:
    value = _value(row, column, query, i)
    try:
        if isinstance(value, bool):
            raise TypeError
        if isinstance(value, int):
            return value
        number = Decimal(str(value))
        if number != number.to_integral_value():
            raise ValueError
        return int(number)
    except (ArithmeticError, TypeError, ValueError):
        raise QueryInputError(f"{query} row {i}: column {column!r} = {value!r} is not an integer") from None


def _decimal(row: Row, column: str, query: str, i: int) -> Decimal:
    value = _value(row, column, query, i)
    try:
        if isinstance(value, bool):
            raise TypeError
        number = value if isinstance(value, Decimal) else Decimal(str(value))
    except (ArithmeticError, TypeError, ValueError):
        raise QueryInputError(f"{query} row {i}: column {column!r} = {value!r} is not a number") from None
    if not number.is_finite():
        raise QueryInputError(f"{query} row {i}: column {column!r} = {value!r} is not a finite number")
    return number


def _time(row: Row, column: str, query: str, i: int) -> dt.datetime:
    value = _value(row, column, query, i)
    try:
        return _utc(value) if isinstance(value, dt.datetime) else _parse_utc(str(value))
    except ValueError:
        raise QueryInputError(
            f"{query} row {i}: column {column!r} = {value!r} is not a timestamp (YYYY-MM-DD HH:MM:SS)"
        ) from None


def _utc(value: dt.datetime) -> dt.datetime:
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


@functools.lru_cache(maxsize=4096)
def _parse_utc(text: str) -> dt.datetime:
    return _utc(dt.datetime.fromisoformat(text))
