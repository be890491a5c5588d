"""Generated chargeback inputs in the collector's exact schema (v1, see ``hyperpod_tenancy.chargeback.queries``).

Two writers that must agree on the schema (a test checks they do):

* :func:`write_table` / :func:`write_cur` — pyarrow, from hand-written rows, for worked examples whose
  aggregates a reader checks by hand;
* :func:`generate_month` — DuckDB ``COPY … PARTITION_BY``, for a month at scale (the benchmark), arithmetic
  and deterministic.

Layout: ``<root>/<table>/year=YYYY/month=MM/day=DD/hour=HH/cluster=<name>/*.parquet``, as the usage-report
operator writes ``raw/<table>/``. ``cluster`` is a partition, not a column of the files, except in the operator's
heartbeat ``heartdub`` (``year=/month=/day=/hour=/`` only, ``cluster`` a column, as its CloudFormation declares).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from hyperpod_tenancy.chargeback import model

PARTITIONS = ("year", "month", "day", "hour", "cluster")
#: The usage-report operator's heartbeat table.
HEARTBEAT = "heartdub"
TS = pa.timestamp("us")

#: Data columns of each table (partitions excluded), with the Glue types of the collector's tables.
SCHEMAS: dict[str, pa.Schema] = {
    "clusterqueue": pa.schema(
        [
            ("instance_type", pa.string()),
            ("timestamp", TS),
            ("namespace", pa.string()),
            ("resource_version", pa.string()),
            ("team", pa.string()),
            ("gpu_total", pa.float64()),
            ("gpu_borrowed", pa.float64()),
            ("cpu_total", pa.float64()),
            ("cpu_borrowed", pa.float64()),
            ("neuron_core_total", pa.float64()),
            ("neuron_core_borrowed", pa.float64()),
        ]
    ),
    "node": pa.schema(
        [
            ("timestamp", TS),
            ("instance_group", pa.string()),
            ("instance_type", pa.string()),
            ("instance_id", pa.string()),
            ("status", pa.string()),
            ("schedulable", pa.bool_()),
        ]
    ),
    "heartdub": pa.schema([("timestamp", TS), ("cluster", pa.string())]),
    "partition_usage": pa.schema(
        [
            ("schema_version", pa.int32()),
            ("timestamp", TS),
            ("namespace", pa.string()),
            ("instance_type", pa.string()),
            ("profile", pa.string()),
            ("slices", pa.int32()),
            ("total", pa.int64()),
            ("borrowed", pa.int64()),
        ]
    ),
    "eviction": pa.schema(
        [
            ("timestamp", TS),
            ("namespace", pa.string()),
            ("workload", pa.string()),
            ("priority_class", pa.string()),
            ("instance_type", pa.string()),
            ("gpus", pa.int64()),
            ("admitted_at", TS),
            ("checkpoint_interval_minutes", pa.int64()),
            ("last_checkpoint", TS),
        ]
    ),
}

_DUCKDB = {pa.string(): "VARCHAR", TS: "TIMESTAMP", pa.int32(): "INTEGER", pa.int64(): "BIGINT"}


def register_tables(con: duckdb.DuckDBPyConnection, usage: Path) -> None:
    """Create a view of each table ``usage`` has (Parquet, as :func:`write_table` writes it), as Athena's Glue
    tables; ``partition_usage``, which a cluster without GPU partitions never writes, is an empty table there."""
    for table in ("clusterqueue", "heartdub", "node", "eviction", "partition_usage"):
        if (usage / table).is_dir():
            con.execute(
                f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{usage / table}/**/*.parquet', "
                "hive_partitioning = true, hive_types_autocast = false, union_by_name = true)"
            )
        elif table == "partition_usage":
            columns = [f'"{f.name}" {_DUCKDB[f.type]}' for f in SCHEMAS[table]]
            columns += [f"{c} VARCHAR" for c in PARTITIONS]
            con.execute(f"CREATE TABLE {table} ({', '.join(columns)})")


CUR_SCHEMA = pa.schema(
    [
        ("billing_period", pa.string()),
        ("line_item_product_code", pa.string()),
        ("line_item_usage_type", pa.string()),
        ("line_item_usage_amount", pa.float64()),
        ("line_item_unblended_cost", pa.float64()),
        ("line_item_line_item_type", pa.string()),
        ("line_item_resource_id", pa.string()),
        ("resource_tags", pa.map_(pa.string(), pa.string())),
    ]
)


def month_config(
    *,
    cluster: str,
    teams: Sequence[str],
    quotas: Mapping[str, int],
    gpus: Mapping[str, int],
    rule: model.BillingRule = model.BillingRule.RESERVATION,
    **options: Any,
) -> model.ChargebackConfig:
    """The configuration of a generated month: one term from 2026-01-01 (idle owner ``platform``), team ``i`` with
    cost center ``cc-<i>`` and ``quotas``; ``options`` are the other :class:`ChargebackConfig` fields."""
    return model.ChargebackConfig(
        cluster=cluster,
        terms=(model.BillingTerm(effective_from=dt.date(2026, 1, 1), rule=rule, idle_owner="platform"),),
        teams=tuple(
            model.TeamConfig(name=name, cost_center=f"cc-{i}", quotas=dict(quotas))
            for i, name in enumerate(teams)
        ),
        gpus_per_instance=dict(gpus),
        **options,
    )


def t(text: str) -> dt.datetime:
    """Parse ``YYYY-MM-DD HH:MM[:SS]`` as a naive UTC timestamp (how the Parquet files hold them)."""
    return dt.datetime.fromisoformat(text)


def write_table(root: Path, table: str, rows: Iterable[Mapping[str, Any]], *, cluster: str) -> None:
    """Write rows of ``table`` under ``root/<table>/``, partitioned by their timestamp and ``cluster``.

    Missing columns are NULL (for example the CPU and Neuron columns of a GPU-only example).
    """
    schema = SCHEMAS[table]
    rows = [{"cluster": cluster, **r} for r in rows] if table == HEARTBEAT else list(rows)
    columns: dict[str, list[Any]] = {f.name: [r.get(f.name) for r in rows] for f in schema}
    stamps: list[dt.datetime] = columns["timestamp"]
    data = pa.table(columns, schema=schema)
    for name, fmt in (("year", "%Y"), ("month", "%m"), ("day", "%d"), ("hour", "%H")):
        data = data.append_column(name, pa.array([s.strftime(fmt) for s in stamps], pa.string()))
    if table != HEARTBEAT:
        data = data.append_column("cluster", pa.array([cluster] * len(rows), pa.string()))
    partitions = [p for p in PARTITIONS if table != HEARTBEAT or p != "cluster"]
    pq.write_to_dataset(data, root / table, partition_cols=partitions)


def heartbeats(
    start: str, end: str, *, minutes: int = 5, holes: Sequence[tuple[str, str]] = ()
) -> list[dict[str, Any]]:
    """Rows of the operator's heartbeat every ``minutes`` from ``start`` up to ``end``, none inside a hole
    ``[from, to)``."""
    first, last = t(start), t(end)
    spans = [(t(a), t(b)) for a, b in holes]
    count = int((last - first).total_seconds() // 60 // minutes)
    stamps = (first + dt.timedelta(minutes=minutes * i) for i in range(count))
    return [{"timestamp": s} for s in stamps if not any(a <= s < b for a, b in spans)]


def cur_line(
    product: str,
    usage_type: str,
    amount: str,
    cost: str,
    *,
    cluster: str | None,
    period: str,
    resource_id: str = "",
    team: str | None = None,
    line_type: str = "Usage",
) -> dict[str, Any]:
    """One CUR 2.0 line; ``cluster`` and ``team`` are the values of the cluster and team cost allocation tags
    (None: not tagged); ``line_type`` is ``line_item_line_item_type`` (``Usage``, ``Credit``, ``Refund``, ...)."""
    tags = [("user_hyperpod_tenancy_cluster", cluster)] if cluster is not None else []
    if team is not None:
        tags.append(("user_hyperpod_tenancy_team", team))
    return {
        "billing_period": period,
        "line_item_product_code": product,
        "line_item_usage_type": usage_type,
        "line_item_usage_amount": float(amount),
        "line_item_unblended_cost": float(cost),
        "line_item_line_item_type": line_type,
        "line_item_resource_id": resource_id,
        "resource_tags": tags,
    }


def write_cur(path: Path, lines: Sequence[Mapping[str, Any]], *, fmt: str = "parquet") -> Path:
    """Write CUR 2.0 lines as Parquet (``resource_tags`` a map) or CSV (``resource_tags`` JSON, as exported)."""
    columns = {f.name: [line[f.name] for line in lines] for f in CUR_SCHEMA}
    if fmt == "parquet":
        pq.write_table(pa.table(columns, schema=CUR_SCHEMA), path)
        return path
    import json

    columns["resource_tags"] = [json.dumps(dict(tags), sort_keys=True) for tags in columns["resource_tags"]]
    schema = pa.schema(
        [f if f.name != "resource_tags" else pa.field("resource_tags", pa.string()) for f in CUR_SCHEMA]
    )
    pacsv.write_csv(pa.table(columns, schema=schema), path)
    return path


def generate_month(
    root: Path,
    *,
    month: str,
    cluster: str,
    teams: int,
    instance_types: Mapping[str, int],
    nodes_per_type: int,
    snapshot_minutes: int = 5,
    node_snapshot_minutes: int = 15,
    evictions_per_team: int = 2,
    threads: int = 2,
    team_names: Sequence[str] | None = None,
    heartbeat_minutes: int = 5,
    holes: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> dict[str, int]:
    """Write a month of snapshots at scale with DuckDB and return the row count of each table.

    ``instance_types`` maps each type to its GPUs per instance ``g``. Team ``team-NNN`` (or ``team_names[NNN]``;
    namespace ``hyperpod-ns-<team>``) holds, per instance type and snapshot, 0, g/2, g or 3g/2 GPUs (an arithmetic
    pattern), of which what exceeds g (a quota of one instance) is borrowed. Every
    instance type has ``nodes_per_type`` instances; one in 50 is in ``DeepHealthCheckInProgress`` on odd days.
    The operator's heartbeat (``heartdub``) comes every ``heartbeat_minutes``. ``holes`` maps a table to stretches
    ``[from, to)`` (``YYYY-MM-DD HH:MM``) in which its collector wrote nothing.
    """

    def outside(table: str) -> str:
        spans = (holes or {}).get(table, ())
        return (
            " AND ".join(f"NOT (ts >= TIMESTAMP '{a}' AND ts < TIMESTAMP '{b}')" for a, b in spans) or "true"
        )

    year, number = (int(p) for p in month.split("-"))
    start = dt.datetime(year, number, 1)
    end = dt.datetime(year + number // 12, number % 12 + 1, 1)
    types = ", ".join(
        f"('{name}', {i}, {instance_types[name]})" for i, name in enumerate(sorted(instance_types))
    )
    con = duckdb.connect(config={"threads": threads})
    names = list(team_names) if team_names is not None else [f"team-{i:03d}" for i in range(teams)]
    assert len(names) == teams, "one name per team"
    rows = ", ".join(f"({i}, '{name}')" for i, name in enumerate(names))
    con.execute(f"CREATE TEMP TABLE team_list AS SELECT * FROM (VALUES {rows}) AS v(team_index, team)")
    con.execute(
        f"CREATE TEMP TABLE types AS SELECT * FROM (VALUES {types}) AS v(instance_type, type_index, gpus_per_instance)"
    )
    partitions = (
        "strftime(ts, '%Y') AS year, strftime(ts, '%m') AS month, strftime(ts, '%d') AS day, "
        f"strftime(ts, '%H') AS hour, '{cluster}' AS cluster"
    )
    copy = "(FORMAT PARQUET, PARTITION_BY (year, month, day, hour, cluster), OVERWRITE_OR_IGNORE)"
    con.execute(
        f"""
        COPY (
          SELECT instance_type, ts AS "timestamp", 'hyperpod-ns-' || team AS namespace,
                 CAST(1000000 + snap * 1000 + team_index AS VARCHAR) AS resource_version, team,
                 CAST(gpus AS DOUBLE) AS gpu_total, CAST(GREATEST(gpus - gpus_per_instance, 0) AS DOUBLE) AS gpu_borrowed,
                 CAST(gpus * 12 AS DOUBLE) AS cpu_total, CAST(0 AS DOUBLE) AS cpu_borrowed,
                 CAST(0 AS DOUBLE) AS neuron_core_total, CAST(0 AS DOUBLE) AS neuron_core_borrowed,
                 {partitions}
          FROM (
            SELECT s.snap, TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}' + s.snap * INTERVAL {snapshot_minutes} MINUTE AS ts,
                   m.team_index, m.team, ty.instance_type, ty.gpus_per_instance,
                   ty.gpus_per_instance // 2 * ((s.snap * 7 + m.team_index * 13 + ty.type_index * 5) % 4) AS gpus
            FROM range(0, {int((end - start).total_seconds() // 60 // snapshot_minutes)}) AS s(snap)
            CROSS JOIN team_list AS m
            CROSS JOIN types AS ty
          )
          WHERE {outside("clusterqueue")}
        ) TO '{root / "clusterqueue"}' {copy}
        """
    )
    con.execute(
        f"""
        COPY (
          SELECT ts AS "timestamp", 'workers-' || replace(instance_type, 'ml.', '') AS instance_group, instance_type,
                 printf('i-%s%05d', replace(replace(instance_type, 'ml.', ''), '.', ''), node) AS instance_id,
                 CASE WHEN node % 50 = 0 AND day(ts) % 2 = 1 THEN 'DeepHealthCheckInProgress' ELSE 'Running' END AS status,
                 NOT (node % 50 = 0 AND day(ts) % 2 = 1) AS schedulable,
                 {partitions}
          FROM (
            SELECT TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}' + s.snap * INTERVAL {node_snapshot_minutes} MINUTE AS ts,
                   n.node, ty.instance_type
            FROM range(0, {int((end - start).total_seconds() // 60 // node_snapshot_minutes)}) AS s(snap)
            CROSS JOIN range(0, {nodes_per_type}) AS n(node)
            CROSS JOIN types AS ty
          )
          WHERE {outside("node")}
        ) TO '{root / "node"}' {copy}
        """
    )
    con.execute(
        f"""
        COPY (
          SELECT ts AS "timestamp", '{cluster}' AS cluster, strftime(ts, '%Y') AS year, strftime(ts, '%m') AS month,
                 strftime(ts, '%d') AS day, strftime(ts, '%H') AS hour
          FROM (
            SELECT TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}' + s.beat * INTERVAL {heartbeat_minutes} MINUTE AS ts
            FROM range(0, {int((end - start).total_seconds() // 60 // heartbeat_minutes)}) AS s(beat)
          )
          WHERE {outside(HEARTBEAT)}
        ) TO '{root / HEARTBEAT}' (FORMAT PARQUET, PARTITION_BY (year, month, day, hour), OVERWRITE_OR_IGNORE)
        """
    )
    con.execute(
        f"""
        COPY (
          SELECT ts AS "timestamp", 'hyperpod-ns-' || team AS namespace,
                 printf('job-%03d-%d', team_index, e) AS workload, 'training-priority' AS priority_class,
                 (SELECT instance_type FROM types WHERE type_index = team_index % {len(instance_types)}) AS instance_type,
                 CAST(8 AS BIGINT) AS gpus, ts - INTERVAL 3 HOUR AS admitted_at,
                 CASE WHEN e % 2 = 0 THEN CAST(30 AS BIGINT) END AS checkpoint_interval_minutes,
                 CAST(NULL AS TIMESTAMP) AS last_checkpoint,
                 {partitions}
          FROM (
            SELECT m.team_index, m.team, v.e,
                   TIMESTAMP '{start:%Y-%m-%d %H:%M:%S}' + INTERVAL 1 DAY * (1 + (m.team_index + v.e * 11) % 27)
                     + INTERVAL 1 MINUTE * (m.team_index * 7 % 600) AS ts
            FROM team_list AS m CROSS JOIN range(0, {evictions_per_team}) AS v(e)
          )
        ) TO '{root / "eviction"}' {copy}
        """
    )
    counts = {
        table: int(
            con.execute(f"SELECT count(*) FROM read_parquet('{root / table}/**/*.parquet')").fetchone()[0]
        )  # type: ignore[index]
        for table in ("clusterqueue", "node", HEARTBEAT, "eviction")
    }
    con.close()
    return counts


def generated_cur(
    path: Path,
    *,
    month: str,
    cluster: str,
    instance_types: Mapping[str, str],
    nodes_per_type: int,
    shared: Mapping[str, tuple[str, str, str]],
) -> Path:
    """Write a CUR for :func:`generate_month`: each type billed for every instance-hour at ``instance_types[t]``
    $/instance-hour, plus ``shared`` lines (category → (product, usage type, cost)) and one foreign line."""
    year, number = (int(p) for p in month.split("-"))
    start = dt.datetime(year, number, 1)
    end = dt.datetime(year + number // 12, number % 12 + 1, 1)
    hours = int((end - start).total_seconds() // 3600)
    lines = []
    for itype, rate in sorted(instance_types.items()):
        instance_hours = hours * nodes_per_type
        lines.append(
            cur_line(
                "AmazonSageMaker",
                f"USE1-Cluster:{itype}",
                str(instance_hours),
                f"{float(rate) * instance_hours:.2f}",
                cluster=cluster,
                period=month,
            )
        )
    for product, usage_type, cost in shared.values():
        lines.append(cur_line(product, usage_type, "1", cost, cluster=cluster, period=month))
    lines.append(
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "10", "983.2", cluster="other", period=month
        )
    )
    return write_cur(path, lines)
