"""The recorded usage and the cost report as DuckDB tables: files found, formats read, timestamps checked."""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Sequence
from fnmatch import fnmatch
from pathlib import Path

import duckdb
import sqlglot

from hyperpod_tenancy.chargeback import queries

__all__ = ["PROGRESS_THRESHOLD_BYTES", "OfflineInputError", "transpile"]

#: Inputs at least this large show a progress display (on a terminal) while the queries run.
PROGRESS_THRESHOLD_BYTES = 32 * 1024 * 1024


_USAGE_TABLES = ("clusterqueue", "heartdub", "node", "eviction", "partition_usage")


_REQUIRED_TABLES = ("clusterqueue", "node")


#: Tables whose gaps ``collection_gaps`` reports; one that is missing here is not checked (the report says so).
_GAP_TABLES = tuple(queries.GAP_THRESHOLD_MINUTES)


#: Tables a cluster writes only when it has GPU partitions: one that is missing is an empty table, not a gap to
#: report (``collection_gaps`` checks it only where it has records).
_OPTIONAL_TABLES = ("partition_usage",)


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


def table_files(usage: Path, table: str, months: Sequence[tuple[int, int]]) -> tuple[str, list[str]] | None:
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


def table_source(table: str, reader: str, files: Sequence[str]) -> str:
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
        found = table_files(usage, table, months)
        if found is None:
            if table in _REQUIRED_TABLES:
                raise OfflineInputError(
                    f"--usage {str(usage)!r}: no {table}/ folder with Parquet, CSV or JSON-lines files (also looked under "
                    f"raw/{table}/); copy the collector's raw/{table}/ there"
                )
            # a gap table without files: an empty view for collection_gaps to read (its gaps are then dropped)
            if table in _GAP_TABLES or table in _OPTIONAL_TABLES:
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
            view = f"CREATE VIEW {table} AS SELECT {star} REPLACE ({casts}) FROM {table_source(table, reader, files)}"  # noqa: S608 - constants, _quote'd paths
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
