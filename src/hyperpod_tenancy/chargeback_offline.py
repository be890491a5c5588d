"""The offline chargeback: the Athena SQL transpiled to DuckDB (sqlglot) over local Parquet or CSV files.

``hyperpod-tenancy chargeback`` runs the same Trino SQL as the monthly Lambda (:data:`.chargeback.queries.SQL`),
transpiled with sqlglot and executed by an in-process DuckDB over a copy of the collector's files (for
example ``aws s3 sync s3://<report-bucket>/raw ./usage``) and a CUR 2.0 export file, then applies the same
engine and renderers, so a report computed on a laptop equals the Lambda's for the same month.

Inputs (formats in :mod:`.chargeback.queries`):

* ``usage``: a folder holding ``clusterqueue/``, ``node/`` and optionally ``eviction/`` (directly or under
  ``raw/``), each of Parquet (``*.parquet``), CSV (``*.csv``, ``*.csv.gz``) or JSON-lines (``*.json``,
  ``*.jsonl``, optionally gzipped) files, Hive-partitioned ``year=/month=/day=/hour=/cluster=`` as the
  collectors write them: ``aws s3 sync s3://<report-bucket>/raw ./usage`` gives the operator's Parquet
  ``clusterqueue/`` beside the platform collectors' JSON-lines ``node/`` and ``eviction/``;
* ``cur``: one CUR 2.0 file or folder (Parquet or CSV). In CSV, ``resource_tags`` is the JSON object the
  export writes, or flattened ``resource_tags_<key>`` columns; ``billing_period`` may instead be derived
  from ``bill_billing_period_start_date``;
* ``prices``: without a CUR, a CSV of ``instance_type,usd_per_gpu_hour``.

This module is the CLI's: it needs duckdb, sqlglot and rich, which the Lambda does not have.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal
from fnmatch import fnmatch
from pathlib import Path

import duckdb
import sqlglot
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from hyperpod_tenancy.chargeback import engine, queries
from hyperpod_tenancy.chargeback import prices as prices_table
from hyperpod_tenancy.chargeback.model import ChargebackConfig, CostInputs, Report, UsageInputs
from hyperpod_tenancy.chargeback.report import COLLECTOR_NAMES

__all__ = [
    "PROGRESS_THRESHOLD_BYTES",
    "OfflineInputError",
    "compute",
    "read_prices",
    "run_queries",
    "transpile",
]

#: Inputs at least this large show a progress display (on a terminal) while the queries run.
PROGRESS_THRESHOLD_BYTES = 32 * 1024 * 1024
_USAGE_TABLES = ("clusterqueue", "heartdub", "node", "eviction")
_REQUIRED_TABLES = ("clusterqueue", "node")
#: Tables whose gaps ``collection_gaps`` reports; one that is missing here is not checked (the report says so).
_GAP_TABLES = tuple(queries.GAP_THRESHOLD_MINUTES)
#: The partition columns a table may have (``heartdub`` has no ``cluster`` partition: a column of it).
_PARTITIONS = ("year", "month", "day", "hour", "cluster")


class OfflineInputError(ValueError):
    """An input file or folder is missing or malformed; the message names it and the fix."""


@functools.cache
def transpile(sql: str) -> str:
    """Return the DuckDB SQL of a Trino query (sqlglot), exactly one statement.

    Raises:
        OfflineInputError: sqlglot cannot transpile the query.

    """
    try:
        statements = sqlglot.transpile(
            sql, read="trino", write="duckdb", unsupported_level=sqlglot.ErrorLevel.RAISE
        )
    except sqlglot.errors.SqlglotError as exc:  # pragma: no cover - the shipped SQL transpiles (tested)
        raise OfflineInputError(f"cannot transpile the chargeback SQL to DuckDB: {exc}") from exc
    if len(statements) != 1:  # pragma: no cover - the shipped SQL is one statement each (tested)
        raise OfflineInputError(f"expected one SQL statement, got {len(statements)}")
    return statements[0]


#: File patterns of each reader, in the order they are looked for. ``json`` is newline-delimited JSON, what the
#: platform's own collectors (node inventory, evictions) write; the usage-report operator writes Parquet.
_READERS = (
    ("parquet", ("*.parquet",)),
    ("csv", ("*.csv", "*.csv.gz")),
    ("json", ("*.json", "*.json.gz", "*.jsonl", "*.jsonl.gz")),
)
#: Hive column type → DuckDB type (the JSON-lines tables are read with the collector schema's types, not guessed).
_DUCKDB_TYPES = {
    "string": "VARCHAR",
    "timestamp": "TIMESTAMP",
    "int": "INTEGER",
    "bigint": "BIGINT",
    "double": "DOUBLE",
    "boolean": "BOOLEAN",
}


def _table_files(usage: Path, table: str, months: Sequence[tuple[int, int]]) -> tuple[str, list[str]] | None:
    """Return (reader, files) of a usage table, or None when the folder has no file of it.

    Only the partitions ``year=YYYY/month=MM`` of ``months`` are listed where the folder has them (a folder
    keeps months of data; the queries read the month and the one before); otherwise every file. The files are
    passed to DuckDB as a list: each query's scans then neither walk the folder again nor glob.
    """
    for base in (usage / table, usage / "raw" / table):
        if not base.is_dir():
            continue
        scoped = [root for y, m in months if (root := base / f"year={y:04d}" / f"month={m:02d}").is_dir()]
        # no file of these months: every file, for the queries to find none of the month
        found = (_first_format(scoped) if scoped else None) or _first_format([base])
        if found is not None:
            return found
    return None


def _first_format(roots: Sequence[Path]) -> tuple[str, list[str]] | None:
    """Return (reader, files) of the first file format with files under ``roots``, or None.

    Each root is walked once (a month of hourly partitions is thousands of files), every name matched against
    every reader's patterns.
    """
    found: dict[str, list[str]] = {reader: [] for reader, _ in _READERS}
    for root in roots:
        for folder, _, names in os.walk(root):
            for name in names:
                reader = next(
                    (r for r, patterns in _READERS if any(fnmatch(name, p) for p in patterns)), None
                )
                if reader is not None:
                    found[reader].append(str(Path(folder, name)))
    return next(((reader, sorted(found[reader])) for reader, _ in _READERS if found[reader]), None)


def _source(table: str, reader: str, files: Sequence[str]) -> str:
    """Return the DuckDB table function reading one usage table's files (Hive partitions as strings)."""
    options = "hive_partitioning = true, hive_types_autocast = false, union_by_name = true"
    if reader == "json":
        # the collector schema's columns and types; a partition column (cluster=...) that a record repeats is
        # read from the path, as Athena does. Timestamps are read as text and parsed by _timestamp (RFC 3339 as
        # Kubernetes writes it, or the collectors' `YYYY-MM-DD HH:MM:SS`), each record keeping its file's name.
        columns = ", ".join(
            f"{_quote(name)}: {_quote('VARCHAR' if kind == 'timestamp' else _DUCKDB_TYPES[kind])}"
            for name, kind in queries.COLLECTOR_COLUMNS[table]
        )
        options = (
            f"format = 'newline_delimited', columns = {{{columns}}}, filename = true, "
            "hive_partitioning = true, hive_types_autocast = false"
        )
    return f"read_{reader}([{', '.join(_quote(f) for f in files)}], {options})"


#: Marks the error a JSON-lines timestamp that is not one raises inside a query (see :func:`_timestamp`).
_BAD_TIMESTAMP = "hyperpod-tenancy-bad-timestamp"


def _timestamp(column: str, reader: str) -> str:
    """Return the SQL reading ``column`` as a UTC ``TIMESTAMP``.

    Parquet and CSV columns are cast (an ``isAdjustedToUTC`` Parquet timestamp reads as ``TIMESTAMPTZ``; the
    session is UTC). A JSON-lines column is text: RFC 3339 (``2026-06-13T12:00:00Z``, fractions, offsets, as
    Kubernetes writes ``lastTransitionTime``) and ``YYYY-MM-DD HH:MM:SS`` (UTC, the collectors' own) are
    accepted; anything else stops the query with the file, the column and the value (:func:`_bad_timestamp`).
    """
    quoted = _ident(column)
    if reader != "json":
        return f"CAST({quoted} AS TIMESTAMP) AS {quoted}"
    parsed = f"TRY_CAST({quoted} AS TIMESTAMPTZ)"
    fail = f"error(concat({_quote(_BAD_TIMESTAMP + chr(31))}, filename, chr(31), {_quote(column)}, chr(31), {quoted}))"
    return (
        f"CASE WHEN {quoted} IS NULL THEN NULL WHEN {parsed} IS NULL THEN {fail} "
        f"ELSE CAST({parsed} AS TIMESTAMP) END AS {quoted}"
    )


def _bad_timestamp(exc: duckdb.Error) -> OfflineInputError | None:
    """Return the input error of a query :func:`_timestamp` stopped (file, column, value and the fix), or None."""
    text = str(exc)
    if _BAD_TIMESTAMP not in text:
        return None
    _, file, column, value = text.split(_BAD_TIMESTAMP, 1)[1].split(chr(31), 3)
    return OfflineInputError(
        f"{file}: column {column!r}: {value.strip()!r} is not a timestamp; write RFC 3339 "
        "(`2026-06-13T12:00:00Z`, as Kubernetes does) or `YYYY-MM-DD HH:MM:SS` in UTC"
    )


def _input_bytes(paths: Sequence[Path]) -> int:
    total = 0
    for path in paths:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        total += sum(f.stat().st_size for f in files)
    return total


def _quote(text: str) -> str:
    """Return a SQL string literal (paths and keys: the only outside text in the SQL built here)."""
    return "'" + text.replace("'", "''") + "'"


def _ident(name: str) -> str:
    """Return a quoted SQL identifier (column names read from an input file)."""
    return '"' + name.replace('"', '""') + '"'


def _register_usage(con: duckdb.DuckDBPyConnection, usage: Path, month: str) -> set[str]:
    if not usage.is_dir():
        raise OfflineInputError(
            f"--usage {str(usage)!r}: not a folder; pass the folder holding clusterqueue/ and node/"
        )
    start, _ = queries.month_bounds(month)
    previous = start - dt.timedelta(days=1)
    months = ((start.year, start.month), (previous.year, previous.month))
    present: set[str] = set()
    for table in _USAGE_TABLES:
        found = _table_files(usage, table, months)
        if found is None:
            if table in _REQUIRED_TABLES:
                raise OfflineInputError(
                    f"--usage {str(usage)!r}: no {table}/ folder with Parquet, CSV or JSON-lines files (also looked under "
                    f"raw/{table}/); copy the collector's raw/{table}/ there"
                )
            # a gap table without files: an empty view for collection_gaps to read (its gaps are then dropped)
            if table in _GAP_TABLES:
                typed = dict(queries.COLLECTOR_COLUMNS[table]) | dict.fromkeys(_PARTITIONS, "string")
                columns = ", ".join(
                    f"CAST(NULL AS {_DUCKDB_TYPES[kind]}) AS {_ident(name)}" for name, kind in typed.items()
                )
                con.execute(f"CREATE VIEW {table} AS SELECT {columns} WHERE false")
            continue
        # timestamps are UTC TIMESTAMPs (a cast of a TIMESTAMP to itself costs nothing, and the view is bound once)
        reader, files = found
        stamps = [c for c, kind in queries.COLLECTOR_COLUMNS[table] if kind == "timestamp"]
        casts = ", ".join(_timestamp(c, reader) for c in stamps)
        star = "* EXCLUDE (filename)" if reader == "json" else "*"
        try:
            view = (
                f"CREATE VIEW {table} AS SELECT {star} REPLACE ({casts}) FROM {_source(table, reader, files)}"  # noqa: S608 - constants, _quote'd paths
            )
            con.execute(view)
        except duckdb.Error as exc:
            raise OfflineInputError(
                f"--usage {str(usage)!r}: cannot read {table}/ ({exc}); its files must have the collector schema's "
                f"columns ({', '.join(name for name, _ in queries.COLLECTOR_COLUMNS[table])})"
            ) from exc
        present.add(table)
    return present


def _register_cur(con: duckdb.DuckDBPyConnection, cur: Path) -> None:
    if cur.is_dir():
        found = next((p for p in ("*.parquet", "*.csv", "*.csv.gz") if any(cur.rglob(p))), None)
        if found is None:
            raise OfflineInputError(f"--cur {str(cur)!r}: the folder has no Parquet or CSV file")
        pattern, reader = str(cur / "**" / found), "parquet" if found == "*.parquet" else "csv"
    elif cur.is_file():
        pattern, reader = str(cur), "parquet" if cur.suffix == ".parquet" else "csv"
    else:
        raise OfflineInputError(f"--cur {str(cur)!r}: no such file or folder")
    options = "union_by_name = true" if reader == "parquet" else "union_by_name = true, header = true"
    con.execute(f"CREATE VIEW cur_file AS SELECT * FROM read_{reader}({_quote(pattern)}, {options})")  # noqa: S608
    # DuckDB identifiers are case-insensitive (a CUR folder's BILLING_PERIOD=YYYY-MM partition is billing_period)
    columns = {str(row[0]).lower(): str(row[1]) for row in con.execute("DESCRIBE cur_file").fetchall()}
    replace: list[str] = []
    extra: list[str] = []
    tag_columns = sorted(c for c in columns if c.startswith("resource_tags_"))
    if "resource_tags" in columns:
        if not columns["resource_tags"].startswith("MAP"):
            replace.append(
                "CAST(CASE WHEN resource_tags IS NULL OR resource_tags = '' THEN '{}' ELSE resource_tags END"
                " AS JSON)::MAP(VARCHAR, VARCHAR) AS resource_tags"
            )
    elif tag_columns:
        keys = ", ".join(_quote(c.removeprefix("resource_tags_")) for c in tag_columns)
        values = ", ".join(f"CAST({_ident(c)} AS VARCHAR)" for c in tag_columns)
        extra.append(f"MAP([{keys}], [{values}]) AS resource_tags")
    else:
        raise OfflineInputError(
            f"--cur {str(cur)!r}: no resource_tags column (nor resource_tags_<key> columns); export the CUR 2.0 "
            f"with resource tags, the cluster tag {queries.CLUSTER_TAG_KEY!r} activated for cost allocation"
        )
    if "billing_period" not in columns:
        if "bill_billing_period_start_date" not in columns:
            raise OfflineInputError(
                f"--cur {str(cur)!r}: no billing_period nor bill_billing_period_start_date column"
            )
        extra.append("strftime(CAST(bill_billing_period_start_date AS TIMESTAMP), '%Y-%m') AS billing_period")
    for column in (
        "line_item_product_code",
        "line_item_usage_type",
        "line_item_usage_amount",
        "line_item_unblended_cost",
        "line_item_line_item_type",
    ):
        if column not in columns:
            raise OfflineInputError(
                f"--cur {str(cur)!r}: column {column!r} missing; export a CUR 2.0 with it"
            )
    select = "*" + (f" REPLACE ({', '.join(replace)})" if replace else "")
    select += "".join(f", {e}" for e in extra)
    con.execute(f"CREATE VIEW cur AS SELECT {select} FROM cur_file")  # noqa: S608 - _quote'd keys, _ident'd columns


_NO_RESULT = queries.QueryResult((), ())


def _session(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Set a connection's own settings (a cursor has the defaults, not its parent's)."""
    con.execute("SET TimeZone = 'UTC'")
    con.execute("SET enable_progress_bar = false")
    return con


def _fetch(result: duckdb.DuckDBPyConnection) -> queries.QueryResult:
    """Fetch a query's rows as tuples, the columns named once (a malformed JSON-lines timestamp: its input error)."""
    try:
        rows = result.fetchall()
    except duckdb.Error as exc:
        bad = _bad_timestamp(exc)
        if bad is None:
            raise
        raise bad from exc
    return queries.QueryResult(tuple(d[0] for d in result.description or ()), rows)


@contextmanager
def _progress(
    show: bool, console: Console, on_step: Callable[[str], None] | None
) -> Iterator[Callable[[str], None]]:
    """Yield ``step(name)``: called as each step starts (from any thread), it updates the display and ``on_step``."""
    notify = on_step or (lambda _name: None)
    if not show:
        yield notify
        return
    with Progress(
        TextColumn("chargeback"),
        BarColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task("", total=len(queries.USAGE_QUERIES) + len(queries.COST_QUERIES) + 1)
        started = False

        def step(description: str) -> None:
            nonlocal started
            notify(description)
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=description)

        yield step
        progress.update(task, completed=progress.tasks[0].total, description="done")


def run_queries(
    *,
    usage: Path,
    month: str,
    cluster: str,
    gpus_per_instance: Mapping[str, int],
    cur: Path | None = None,
    progress: bool | None = None,
    console: Console | None = None,
    on_step: Callable[[str], None] | None = None,
) -> tuple[UsageInputs, CostInputs]:
    """Run the chargeback SQL on DuckDB over local files and convert the rows into engine inputs.

    Args:
        usage: the folder of the collector's tables (see the module docstring).
        month: ``YYYY-MM``.
        cluster: the cluster's name (the ``cluster`` partition and the CUR cluster tag's value).
        gpus_per_instance: GPUs per instance of each instance type.
        cur: a CUR 2.0 file or folder. Default: no bill (empty cost inputs; prices from the price table).
        progress: show a progress display. Default: on a terminal, when the inputs hold at least
            :data:`PROGRESS_THRESHOLD_BYTES`.
        console: where the progress display goes. Default: standard error.
        on_step: called with each step's name as it starts (for tests and benchmarks).

    Returns:
        The usage inputs and the cost inputs, exactly what the Lambda builds from Athena's rows.

    Raises:
        OfflineInputError: an input is missing or malformed.
        queries.QueryInputError: a malformed month or cluster, or a result row the engine cannot read.

    """
    queries.month_bounds(month)
    sources = [usage] + ([cur] if cur is not None else [])
    console = console or Console(stderr=True)
    if progress is None:  # sizing the inputs walks every file: only where a display could be shown
        progress = console.is_terminal and _input_bytes(sources) >= PROGRESS_THRESHOLD_BYTES
    # every query ends in an ORDER BY that fixes its rows' order: the engine may drop insertion order, which
    # halves the time and memory of the window over the ClusterQueue snapshots. Times are UTC whatever the
    # laptop's zone (a TIMESTAMPTZ column is cast to TIMESTAMP in the session's zone). The files' footers are
    # read once, not by every scan. DuckDB's own progress bar would write over ours.
    con = _session(duckdb.connect(config={"preserve_insertion_order": False}))
    con.execute("SET parquet_metadata_cache = true")

    def query(db: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyConnection:
        sql = transpile(queries.render(name, month=month, cluster=cluster))
        try:
            return db.execute(sql)
        except duckdb.Error as exc:
            bad = _bad_timestamp(exc)
            if bad is not None:
                raise bad from exc
            source = f"--cur {str(cur)!r}" if name in queries.COST_QUERIES else f"--usage {str(usage)!r}"
            raise OfflineInputError(
                f"{source}: query {name!r} failed on these files ({exc}); check the tables follow the collector "
                "schema (hyperpod_tenancy.chargeback.queries)"
            ) from exc

    def the_others(db: duckdb.DuckDBPyConnection) -> dict[str, queries.QueryResult]:
        results: dict[str, queries.QueryResult] = {}
        for name in queries.USAGE_QUERIES[1:] + queries.COST_QUERIES:
            step(name)
            skip = (name == "evictions" and "eviction" not in present) or (
                name == "cur_costs" and cur is None
            )
            results[name] = _NO_RESULT if skip else _fetch(query(db, name))
        db.close()
        return results

    try:
        present = _register_usage(con, usage, month)
        if cur is not None:
            _register_cur(con, cur)
        with _progress(progress, console, on_step) as step, queries.gc_paused():
            step(queries.USAGE_QUERIES[0])
            usage_result = query(con, queries.USAGE_QUERIES[0])
            # the other (small) queries run on a second connection while this thread turns the usage rows (~10^5-10^6)
            # into records: DuckDB releases the GIL as it runs, and the conversion needs one core
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chargeback-queries") as pool:
                others = pool.submit(the_others, _session(con.cursor()))
                usage_records = queries.usage_records(_fetch(usage_result))
                results = others.result()
            step("inputs")
            usage_inputs = _unchecked(
                queries.usage_inputs(results, gpus_per_instance=gpus_per_instance, usage=usage_records),
                present,
            )
            cost_inputs = queries.cost_inputs(results["cur_costs"])
    finally:
        con.close()
    return usage_inputs, cost_inputs


def _unchecked(inputs: UsageInputs, present: set[str]) -> UsageInputs:
    """Drop the gaps of the tables the folder does not have, and say which were not checked."""
    missing = [table for table in _GAP_TABLES if table not in present]
    if not missing:
        return inputs
    return dataclasses.replace(
        inputs,
        collection_gaps=tuple(g for g in inputs.collection_gaps if g.table in present),
        unchecked_collections=tuple(
            f"no {table}/ folder in the usage files: the {COLLECTOR_NAMES[table]}'s collection gaps were "
            f"not checked; copy raw/{table}/ too"
            for table in missing
        ),
    )


def read_prices(path: Path) -> dict[str, Decimal]:
    """Read a price table (:func:`hyperpod_tenancy.chargeback.prices.read_prices`).

    Raises:
        OfflineInputError: the file cannot be read, lacks a column, repeats a type or has a bad price.

    """
    try:
        return prices_table.read_prices(path)
    except prices_table.PriceTableError as exc:
        raise OfflineInputError(str(exc)) from exc


def compute(
    *,
    config: ChargebackConfig,
    month: str,
    usage: Path,
    cur: Path | None = None,
    prices: Path | None = None,
    progress: bool | None = None,
    console: Console | None = None,
) -> Report:
    """Compute a month's report from local files: the CLI's whole path but rendering.

    Args:
        config: the chargeback configuration (from the platform policy).
        month: ``YYYY-MM``.
        usage: the folder of the collector's tables.
        cur: a CUR 2.0 file or folder (prices and the bill from it).
        prices: a price table (``read_prices``), replacing the configured prices; without ``cur`` the report
            has no bill to reconcile with.
        progress: see :func:`run_queries`.
        console: see :func:`run_queries`.

    Returns:
        The report, as the engine computes it.

    Raises:
        OfflineInputError: neither ``cur`` nor ``prices`` nor configured prices, or a malformed input.

    """
    if prices is not None:
        config = dataclasses.replace(config, prices={**config.prices, **read_prices(prices)})
    if cur is None and not config.prices:
        raise OfflineInputError("pass --cur FILE (a CUR 2.0 export) or --prices FILE (a price table)")
    usage_inputs, cost_inputs = run_queries(
        usage=usage,
        month=month,
        cluster=config.cluster,
        gpus_per_instance=config.gpus_per_instance,
        cur=cur,
        progress=progress,
        console=console,
    )
    with queries.gc_paused():
        return engine.compute_report(config, month, usage_inputs, cost_inputs)
