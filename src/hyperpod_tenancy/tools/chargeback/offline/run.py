"""The month's queries run offline, with progress on large inputs, and the engine's report computed from them."""

from __future__ import annotations

import dataclasses
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Protocol

import duckdb
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from hyperpod_tenancy.chargeback import engine, queries
from hyperpod_tenancy.chargeback import prices as prices_table
from hyperpod_tenancy.chargeback.model import ChargebackConfig, CostInputs, Report, UsageInputs
from hyperpod_tenancy.chargeback.report import COLLECTOR_NAMES
from hyperpod_tenancy.tools.chargeback.limits import DEFAULT_MEMORY_LIMIT
from hyperpod_tenancy.tools.chargeback.offline.tables import (
    _GAP_TABLES,
    _OPTIONAL_TABLES,
    PROGRESS_THRESHOLD_BYTES,
    OfflineInputError,
    _bad_timestamp,
    _input_bytes,
    _register_cur,
    _register_usage,
    transpile,
)

__all__ = ["DEFAULT_MEMORY_LIMIT", "checked_memory_limit", "compute", "read_prices", "run_queries"]

_MEMORY_LIMIT = re.compile(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", re.IGNORECASE)


def checked_memory_limit(text: str) -> str:
    """Return ``text`` if DuckDB reads it as an amount of memory (``700MB``, ``4GB``, ``2GiB``).

    Raises:
        OfflineInputError: anything else, with the form to write.

    """
    if not _MEMORY_LIMIT.fullmatch(text.strip()):
        raise OfflineInputError(
            f"--memory-limit {text!r}: not an amount of memory; write a number and a unit, e.g. 700MB or 4GB"
        )
    return text.strip()


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


class _Step(Protocol):
    """Called as a step starts: its name, and what the display shows (default: the name)."""

    def __call__(self, name: str, shown: str | None = None) -> None: ...


@contextmanager
def _progress(show: bool, console: Console, on_step: Callable[[str], None] | None) -> Iterator[_Step]:
    """Yield ``step(name, shown)``, called as each step starts (from any thread).

    It tells ``on_step`` the name and shows ``shown`` (default: the name).
    """
    notify = on_step or (lambda _name: None)
    if not show:

        def quiet(name: str, shown: str | None = None) -> None:
            notify(name)

        yield quiet
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

        def step(name: str, shown: str | None = None) -> None:
            nonlocal started
            notify(name)
            if started:
                progress.advance(task)
            started = True
            progress.update(task, description=shown or name)

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
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
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
        memory_limit: DuckDB's memory (:data:`DEFAULT_MEMORY_LIMIT`); it spills the rest to a temporary folder
            removed afterwards, never to the working directory.

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
    limit = checked_memory_limit(memory_limit)
    with tempfile.TemporaryDirectory(prefix="hyperpod-tenancy-chargeback-") as spill:
        settings: dict[str, str | bool | int | float | list[str]] = {
            "preserve_insertion_order": False,
            "memory_limit": limit,
            "temp_directory": spill,
        }
        try:
            return _run(
                duckdb.connect(config=settings),
                usage=usage,
                month=month,
                cluster=cluster,
                gpus_per_instance=gpus_per_instance,
                cur=cur,
                progress=progress,
                console=console,
                on_step=on_step,
            )
        except duckdb.OutOfMemoryException as exc:
            raise OfflineInputError(
                f"--memory-limit {limit}: DuckDB needs more memory than that for this month ({exc}); raise it, "
                "e.g. --memory-limit 2GB"
            ) from exc


def _run(
    con: duckdb.DuckDBPyConnection,
    *,
    usage: Path,
    month: str,
    cluster: str,
    gpus_per_instance: Mapping[str, int],
    cur: Path | None,
    progress: bool,
    console: Console,
    on_step: Callable[[str], None] | None,
) -> tuple[UsageInputs, CostInputs]:
    """:func:`run_queries` on ``con`` (closed when done)."""
    con = _session(con)
    con.execute("SET parquet_metadata_cache = true")

    def query(db: duckdb.DuckDBPyConnection, name: str) -> duckdb.DuckDBPyConnection:
        sql = transpile(queries.render(name, month=month, cluster=cluster))
        if name == "hourly_usage":
            sql = _in_blocks(sql)
        try:
            return db.execute(sql)
        except duckdb.OutOfMemoryException:
            raise  # run_queries names the limit
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
            # the display names the usage query too while it still runs beside this one
            step(name, None if usage_done.is_set() else f"{queries.USAGE_QUERIES[0]} and {name}")
            skip = (name == "evictions" and "eviction" not in present) or (
                name == "cur_costs" and cur is None
            )
            results[name] = _NO_RESULT if skip else _fetch(query(db, name))
        db.close()
        return results

    usage_done = threading.Event()
    try:
        present = _register_usage(con, usage, month)
        if cur is not None:
            _register_cur(con, cur)
        with _progress(progress, console, on_step) as step, queries.gc_paused():
            step(queries.USAGE_QUERIES[0])
            # the other queries run on a second connection beside the usage query (DuckDB releases the GIL as it
            # runs): the usage query's window leaves a core idle for much of its time
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chargeback-queries") as pool:
                others = pool.submit(the_others, _session(con.cursor()))
                usage_records = queries.usage_blocks(_fetch(query(con, queries.USAGE_QUERIES[0])))
                usage_done.set()
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


def _in_blocks(sql: str) -> str:
    """Return ``hourly_usage`` grouped into one row per hour and instance type (:data:`queries.USAGE_BLOCK_COLUMNS`).

    The same rows, regrouped by DuckDB: the teams and their values as lists in the teams' order, so a month's
    10^6 and more rows reach Python as a few thousand (:func:`queries.usage_blocks`).
    """
    lists = ", ".join(f"list({c} ORDER BY team) AS {n}" for c, n in _BLOCK_LISTS)
    order = "ORDER BY hour, instance_type, cluster"
    return f"SELECT hour, cluster, instance_type, {lists} FROM ({sql}) AS rows GROUP BY ALL {order}"  # noqa: S608


#: The list columns of a block and the ``hourly_usage`` column each gathers.
_BLOCK_LISTS = (("team", "teams"), ("gpu_ms", "gpu_ms"), ("borrowed_gpu_ms", "borrowed_gpu_ms"))


def _unchecked(inputs: UsageInputs, present: set[str]) -> UsageInputs:
    """Drop the gaps of the tables the folder does not have, and say which were not checked."""
    missing = [table for table in _GAP_TABLES if table not in present and table not in _OPTIONAL_TABLES]
    if not missing:
        return inputs
    return dataclasses.replace(
        inputs,
        collection_gaps=tuple(
            g for g in inputs.collection_gaps if g.table in present or g.table in _OPTIONAL_TABLES
        ),
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
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
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
        memory_limit: see :func:`run_queries`.

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
        memory_limit=memory_limit,
    )
    with queries.gc_paused():
        return engine.compute_report(config, month, usage_inputs, cost_inputs)
