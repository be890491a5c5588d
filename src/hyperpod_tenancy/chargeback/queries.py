"""The monthly aggregation SQL (Trino dialect) and the conversion of its result rows into engine inputs.

The same SQL runs on Athena in the monthly Lambda and, transpiled by sqlglot, on DuckDB in the offline CLI
(:mod:`hyperpod_tenancy.chargeback_offline`). Both hand each query's result to :func:`usage_inputs` and
:func:`cost_inputs` as a :class:`QueryResult` (the column names, and the rows' values in that order, as both
engines return them); values may be strings (Athena's ``GetQueryResults``) or Python numbers, decimals and
strings (DuckDB), and ``None`` or ``""`` for NULL. The SQL
formats every timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC; an eviction's or a gap's time with its fraction of a
second, ``HH:MM:SS.ffffff``: the collectors' times carry fractions and every second counts once) and every money
value as ``DECIMAL(38, 10)``, so
both engines yield the same inputs, digit for digit.

Collector schema, version 1 (:data:`COLLECTOR_SCHEMA_VERSION`)
----------------------------------------------------------------
Date-partitioned Parquet under ``raw/<table>/year=YYYY/month=MM/day=DD/hour=HH/cluster=<name>/`` (partition
values are strings, zero-padded). Timestamps are UTC.

``clusterqueue`` (written by the ``awslabs/sagemaker-hyperpod-usage-report`` operator, unchanged): one row
per ClusterQueue, instance type and snapshot — ``instance_type`` string, ``timestamp`` timestamp,
``namespace`` string (``hyperpod-ns-<team>``), ``resource_version`` string (an integer), ``team`` string,
``gpu_total``, ``gpu_borrowed``, ``cpu_total``, ``cpu_borrowed``, ``neuron_core_total``,
``neuron_core_borrowed`` double. ``gpu_total`` is what the queue's admitted workloads hold, ``gpu_borrowed``
the part over its nominal quota. The operator writes a snapshot when a queue changes, so a quiet queue has
none for hours; its liveness is ``heartdub``. The operator's ``workload`` and ``pod`` tables are not read.

``heartdub`` (the operator's heartbeat, unchanged; ``raw/heartdub/year=/month=/day=/hour=/``, no ``cluster``
partition): ``timestamp`` timestamp, ``cluster`` string. AWS's own report generator counts a clock hour with no
heartbeat as missing collection (``report_generation/.../report_generator.py`` ``_find_missing_period`` at
awslabs/sagemaker-hyperpod-usage-report@e71f39ae); the period between heartbeats is not published.

``node`` (ours; SageMaker ``ListClusterNodes``, one snapshot of the whole cluster at a time, every row of a
snapshot with the same ``timestamp``): ``timestamp`` timestamp, ``cluster`` string, ``instance_group``
string, ``instance_type`` string (``ml.p5.48xlarge``), ``instance_id`` string, ``status`` string (the
SageMaker instance status: ``Running``, ``Pending``, ``ShuttingDown``, ``SystemUpdating``,
``DeepHealthCheckInProgress``, ``Failure``), ``schedulable`` boolean. The platform's inventory collector
writes ``schedulable`` true when the status is ``Running`` and the instance's Kubernetes node is Ready, not
cordoned and healthy by HyperPod's ``sagemaker.amazonaws.com/node-health-status`` label
(:func:`hyperpod_tenancy.runtime.node_inventory.schedulable`). An instance counts as unavailable when its status
is not ``Running`` or it is not schedulable.

``eviction`` (ours; one row per workload run evicted by preemption): ``timestamp`` timestamp, ``cluster``
string, ``namespace`` string, ``workload`` string, ``priority_class`` string (``<class>-priority``),
``instance_type`` string, ``gpus`` bigint, ``admitted_at`` timestamp, ``checkpoint_interval_minutes`` bigint
(NULL where the workload declared none), ``last_checkpoint`` timestamp (NULL where not collected).

A team is the namespace without its ``hyperpod-ns-`` prefix (the ``team`` column where the namespace has
no such prefix).

CUR 2.0 (the Data Export ``COST_AND_USAGE_REPORT``; partitioned by ``billing_period`` = ``YYYY-MM``): the
columns read are ``billing_period``, ``line_item_product_code``, ``line_item_usage_type``,
``line_item_usage_amount``, ``line_item_unblended_cost`` and ``resource_tags`` (a map). A line is the
cluster's when its cluster cost allocation tag (:data:`CLUSTER_TAG_KEY`, CUR key :data:`CUR_CLUSTER_TAG`)
names the cluster. HyperPod instances are the lines of product ``AmazonSageMaker`` with usage type
``<region>-Cluster:ml.<type>``; every other line of the cluster is a shared cost.
"""

from __future__ import annotations

import datetime as dt
import functools
import gc
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal
from importlib import resources
from typing import Any, NamedTuple

from hyperpod_tenancy.chargeback.model import (
    BillCredit,
    CollectionGap,
    CostInputs,
    Eviction,
    HourlyCapacity,
    HourlyUsage,
    InstanceTypeCost,
    SharedCost,
    TeamCost,
    TeamPeriod,
    UsageInputs,
)

__all__ = [
    "CLUSTER_TAG_KEY",
    "COLLECTOR_COLUMNS",
    "COLLECTOR_SCHEMA_VERSION",
    "COST_QUERIES",
    "CUR_CLUSTER_TAG",
    "CUR_TEAM_TAG",
    "GAP_THRESHOLD_MINUTES",
    "SQL",
    "TABLES",
    "TEAM_TAG_KEY",
    "USAGE_QUERIES",
    "QueryInputError",
    "QueryResult",
    "cost_inputs",
    "cur_tag_column",
    "gc_paused",
    "month_bounds",
    "render",
    "usage_inputs",
    "usage_records",
]

#: Version of the collector's snapshot format documented in this module; bump on any incompatible change.
COLLECTOR_SCHEMA_VERSION = 1
#: The cost allocation tag every resource of a cluster carries, with the cluster's name as its value.
CLUSTER_TAG_KEY = "hyperpod-tenancy:cluster"


def cur_tag_column(tag_key: str) -> str:
    """Return the ``resource_tags`` key under which CUR 2.0 reports a user-defined cost allocation tag.

    CUR 2.0 prefixes user-defined tags with ``user_`` and replaces ``:``, ``-``, ``.``, ``/``, ``=``, ``+``,
    ``@`` and spaces with ``_`` (``hyperpod-tenancy:cluster`` → ``user_hyperpod_tenancy_cluster``).

    Args:
        tag_key: the tag key as set on the resources.

    Returns:
        The key in the CUR's ``resource_tags`` map.

    """
    return "user_" + re.sub(r"[:\-./=+@ ]", "_", tag_key)


#: The CUR ``resource_tags`` key of :data:`CLUSTER_TAG_KEY`.
CUR_CLUSTER_TAG = cur_tag_column(CLUSTER_TAG_KEY)
#: Cost allocation tag naming the team a resource belongs to (every resource of a team's stack carries it, and the
#: team's Studio domain passes it on to the apps and spaces its people start).
TEAM_TAG_KEY = "hyperpod-tenancy:team"
#: The CUR ``resource_tags`` key of :data:`TEAM_TAG_KEY`.
CUR_TEAM_TAG = cur_tag_column(TEAM_TAG_KEY)
#: The queries whose rows :func:`usage_inputs` reads.
USAGE_QUERIES = ("hourly_usage", "hourly_capacity", "evictions", "collection_gaps", "team_periods")
#: Table → the longest stretch without a record that is not a gap (``collection_gaps``), in minutes: three runs of
#: the 5-minute node inventory; for the operator's heartbeat, whose period is not published, one hour (AWS's own
#: report generator counts a clock hour without a heartbeat as missing).
GAP_THRESHOLD_MINUTES: Mapping[str, int] = {"node": 15, "heartdub": 60}
#: The queries whose rows :func:`cost_inputs` reads.
COST_QUERIES = ("cur_costs",)
#: Columns (name, Hive type) of the collector's tables, schema version 1 (the module docstring): the Glue tables
#: declare them, the offline runner reads the JSON-lines tables with them. The operator's tables are as its
#: CloudFormation template declares them; partition columns (``year`` ... ``cluster``) are not listed.
COLLECTOR_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "clusterqueue": (
        ("instance_type", "string"),
        ("timestamp", "timestamp"),
        ("namespace", "string"),
        ("resource_version", "string"),
        ("team", "string"),
        ("gpu_total", "double"),
        ("gpu_borrowed", "double"),
        ("cpu_total", "double"),
        ("cpu_borrowed", "double"),
        ("neuron_core_total", "double"),
        ("neuron_core_borrowed", "double"),
    ),
    "workload": (
        ("workload_name", "string"),
        ("timestamp", "timestamp"),
        ("namespace", "string"),
        ("resource_version", "string"),
        ("team", "string"),
        ("status", "string"),
        ("task_priority_class", "string"),
        ("instance_type", "string"),
        ("cpu", "double"),
        ("gpu", "double"),
        ("neuron_core", "double"),
        ("admitted", "boolean"),
        ("finished", "boolean"),
    ),
    "pod": (
        ("pod", "string"),
        ("timestamp", "timestamp"),
        ("namespace", "string"),
        ("resource_version", "string"),
        ("status", "string"),
        ("owner", "string"),
        ("instance_type", "string"),
        ("job_type", "string"),
        ("assigned_node", "string"),
        ("cpu", "double"),
        ("gpu", "double"),
        ("neuron_core", "double"),
        ("priority_class", "string"),
    ),
    "node": (
        ("schema_version", "int"),
        ("timestamp", "timestamp"),
        ("instance_group", "string"),
        ("instance_id", "string"),
        ("instance_type", "string"),
        ("status", "string"),
        ("schedulable", "boolean"),
        ("gpus", "int"),
    ),
    "heartdub": (
        ("timestamp", "timestamp"),
        ("cluster", "string"),
    ),
    "eviction": (
        ("timestamp", "timestamp"),
        ("namespace", "string"),
        ("workload", "string"),
        ("priority_class", "string"),
        ("instance_type", "string"),
        ("gpus", "bigint"),
        ("admitted_at", "timestamp"),
        ("checkpoint_interval_minutes", "bigint"),
        ("last_checkpoint", "timestamp"),
    ),
}
#: Table placeholder → the table each query reads (a ``{{table}}`` in the SQL).
TABLES = ("clusterqueue", "heartdub", "node", "eviction", "cur")


def _load_sql() -> dict[str, str]:
    folder = resources.files(__package__).joinpath("sql")
    return {
        name: folder.joinpath(f"{name}.sql").read_text(encoding="utf-8")
        for name in USAGE_QUERIES + COST_QUERIES
    }


#: Query name → its Trino SQL template. Placeholders ``{{name}}`` are filled by :func:`render`.
SQL: Mapping[str, str] = _load_sql()

_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
_MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")
_CLUSTER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,62}")
_TABLE = re.compile(r'("?[A-Za-z_][A-Za-z0-9_-]*"?\.){0,2}"?[A-Za-z_][A-Za-z0-9_-]*"?')
_TAG = re.compile(r"[A-Za-z0-9_]+")


class QueryInputError(ValueError):
    """A query parameter or a result row is malformed; the message names the field and the fix."""


def render(
    name: str,
    *,
    month: str,
    cluster: str,
    tables: Mapping[str, str] | None = None,
    cluster_tag: str = CUR_CLUSTER_TAG,
    team_tag: str = CUR_TEAM_TAG,
) -> str:
    """Return the Trino SQL of query ``name`` for one month and cluster, ready to run.

    Args:
        name: a key of :data:`SQL`.
        month: the month, ``YYYY-MM``.
        cluster: the cluster's name (letters, digits and hyphens).
        tables: placeholder (one of :data:`TABLES`) → table reference, e.g. ``{"clusterqueue":
            '"usage"."clusterqueue"'}``. Default: the bare table names (``clusterqueue``, ``node``, ...).
        cluster_tag: the ``resource_tags`` key of the cluster tag in the CUR. Default: :data:`CUR_CLUSTER_TAG`.
        team_tag: the ``resource_tags`` key of the team tag in the CUR. Default: :data:`CUR_TEAM_TAG`.

    Returns:
        The SQL text, every placeholder replaced by a validated literal.

    Raises:
        QueryInputError: an unknown query or table, or a malformed month, cluster, table or tag.

    """
    if name not in SQL:
        raise QueryInputError(f"query {name!r}: unknown; choose one of {', '.join(sorted(SQL))}")
    start, end = month_bounds(month)
    previous = start - dt.timedelta(days=1)
    if not _CLUSTER.fullmatch(cluster):
        raise QueryInputError(
            f"cluster {cluster!r}: must be 1-63 letters, digits or hyphens starting with a letter or digit"
        )
    for label, tag in (("cluster_tag", cluster_tag), ("team_tag", team_tag)):
        if not _TAG.fullmatch(tag):
            raise QueryInputError(f"{label} {tag!r}: must be letters, digits and underscores")
    refs = {table: table for table in TABLES}
    for table, ref in (tables or {}).items():
        if table not in refs:
            raise QueryInputError(f"tables[{table!r}]: unknown table; choose from {', '.join(TABLES)}")
        if not _TABLE.fullmatch(ref):
            raise QueryInputError(f'tables[{table!r}] = {ref!r}: not a table reference like "db"."{table}"')
        refs[table] = ref
    values = {
        **refs,
        "cluster": _literal(cluster),
        "cluster_tag": _literal(cluster_tag),
        "team_tag": _literal(team_tag),
        "billing_period": _literal(month),
        "year": _literal(f"{start.year:04d}"),
        "month": _literal(f"{start.month:02d}"),
        "previous_year": _literal(f"{previous.year:04d}"),
        "previous_month": _literal(f"{previous.month:02d}"),
        "month_start": f"TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}'",
        "month_end": f"TIMESTAMP '{end:%Y-%m-%d %H:%M:%S}'",
        **{f"{table}_gap_seconds": str(minutes * 60) for table, minutes in GAP_THRESHOLD_MINUTES.items()},
    }
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], SQL[name])


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    """Return the first instant of ``month`` and of the month after it (UTC).

    Raises:
        QueryInputError: ``month`` is not ``YYYY-MM``.

    """
    match = _MONTH.fullmatch(month)
    if match is None:
        raise QueryInputError(f"month {month!r}: write it as YYYY-MM, e.g. 2026-07")
    year, number = int(match.group(1)), int(match.group(2))
    start = dt.datetime(year, number, 1, tzinfo=dt.UTC)
    end = dt.datetime(year + number // 12, number % 12 + 1, 1, tzinfo=dt.UTC)
    return start, end


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


Row = Mapping[str, Any]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a month's rows are read and billed, then restore it.

    The ~10^5-10^6 row tuples and records of a month all live until the report is made, and none is in a cycle:
    each collection scans them all again for nothing, which took more than half the time of reading them.
    Reference counting frees everything else as usual.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class QueryResult(NamedTuple):
    """One query's result as Athena and DuckDB both return it: the column names, then each row's values in order."""

    columns: tuple[str, ...]
    rows: Sequence[Sequence[Any]]

    @classmethod
    def of(cls, rows: Sequence[Row]) -> QueryResult:
        """Return the result of rows keyed by column name (the columns of the first row; for examples, tests)."""
        columns = tuple(rows[0]) if rows else ()
        return cls(columns, [tuple(row.get(c) for c in columns) for row in rows])

    def records(self) -> list[dict[str, Any]]:
        """Return the rows keyed by column name (a row shorter than the header lacks the columns past its end)."""
        return [dict(zip(self.columns, row, strict=False)) for row in self.rows]


#: The ``cur_costs`` kinds of the credits and refunds on the bill (:class:`~.model.BillCredit`).
_CREDIT_KINDS = ("credit", "refund")
#: The columns of ``hourly_usage``, in the order :class:`~.model.HourlyUsage` takes them.
_USAGE_COLUMNS = ("hour", "cluster", "instance_type", "team", "gpu_ms", "borrowed_gpu_ms")
_NO_RESULT = QueryResult((), ())


def usage_inputs(
    results: Mapping[str, QueryResult],
    *,
    gpus_per_instance: Mapping[str, int],
    usage: tuple[HourlyUsage, ...] | None = None,
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
