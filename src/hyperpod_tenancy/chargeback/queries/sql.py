"""The month's queries: the tables, the CUR tag columns, and rendering each query with its parameters checked."""

from __future__ import annotations

import datetime as dt
import gc
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any, NamedTuple

from hyperpod_tenancy.chargeback.model import (
    month_span,
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
    "Row",
    "cur_tag_column",
    "gc_paused",
    "month_bounds",
    "render",
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
USAGE_QUERIES = (
    "hourly_usage",
    "hourly_capacity",
    "evictions",
    "collection_gaps",
    "team_periods",
    "hourly_partitions",
)


#: Table → the longest stretch without a record that is not a gap (``collection_gaps``), in minutes: three runs of
#: the 5-minute node inventory and of the 5-minute partition snapshots; for the operator's heartbeat, whose period
#: is not published, one hour (AWS's own report generator counts a clock hour without a heartbeat as missing).
#: ``partition_usage`` is checked only on a cluster that wrote partition snapshots this month or the month before.
GAP_THRESHOLD_MINUTES: Mapping[str, int] = {"node": 15, "heartdub": 60, "partition_usage": 15}


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
    "partition_usage": (
        ("schema_version", "int"),
        ("timestamp", "timestamp"),
        ("namespace", "string"),
        ("instance_type", "string"),
        ("profile", "string"),
        ("slices", "int"),
        ("total", "bigint"),
        ("borrowed", "bigint"),
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
TABLES = ("clusterqueue", "heartdub", "node", "eviction", "partition_usage", "cur")


def _load_sql() -> dict[str, str]:
    folder = resources.files("hyperpod_tenancy.chargeback").joinpath("sql")
    return {
        name: folder.joinpath(f"{name}.sql").read_text(encoding="utf-8")
        for name in USAGE_QUERIES + COST_QUERIES
    }


#: Query name → its Trino SQL template. Placeholders ``{{name}}`` are filled by :func:`render`.
SQL: Mapping[str, str] = _load_sql()


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


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
    span = month_span(month)
    if span is None:
        raise QueryInputError(f"month {month!r}: write it as YYYY-MM, e.g. 2026-07")
    return span


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
