"""Benchmark: the offline chargeback CLI, end to end, on a month of 200 (or ``--teams``) teams x 3 instance types.

Generates (once, into a temporary folder, or into --data to keep it) a month of the collector's tables in its
exact schema: ClusterQueue snapshots every 5 minutes for 200 teams x 3 instance types (~5.4 M rows), node
inventory snapshots every 15 minutes for 220 instances per type (~2 M rows; at least 1.1 instances per team
with ``--teams``: every team has one instance of each type as its quota), 400 evictions (2 per team), and a
CUR. Then runs ``hyperpod-tenancy chargeback ... --format html`` in a child process (DuckDB over the Parquet,
the engine, the renderer) and prints its wall time and peak resident memory.

Beside it, in the same run and alternating with it, the DuckDB floor: a bare DuckDB scan and aggregate of the
same files in a child process (each team's GPUs per instance type and hour from ``clusterqueue``, the node
count per instance type and hour from ``node``), with no window, no engine and no report.

    .venv/bin/python benchmarks/chargeback.py [--data DIR] [--runs N] [--format FMT] [--teams N]

Target on the 2-core reference machine: at most 5 s or at most twice the floor, whichever is larger, and at
most 1 GiB.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from chargeback_data import generate_month, generated_cur  # noqa: E402

from hyperpod_tenancy.chargeback import model  # noqa: E402

MONTH = "2026-07"
CLUSTER = "shared-gpu"
TEAMS = 200
NODES_PER_TYPE = 220
GPUS = {"ml.p5.48xlarge": 8, "ml.p4d.24xlarge": 8, "ml.g5.48xlarge": 8}
RATES = {"ml.p5.48xlarge": "98.32", "ml.p4d.24xlarge": "37.69", "ml.g5.48xlarge": "20.36"}
SHARED = {
    "fsx": ("AmazonFSx", "USE1-Throughput", "14250.00"),
    "eks": ("AmazonEKS", "USE1-AmazonEKS-Hours:perCluster", "74.40"),
    "nat": ("AmazonEC2", "USE1-NatGateway-Hours", "97.65"),
}


def _nodes_per_type(teams: int) -> int:
    return max(NODES_PER_TYPE, teams + teams // 10)


def _config(teams: int) -> model.ChargebackConfig:
    return model.ChargebackConfig(
        cluster=CLUSTER,
        terms=(
            model.BillingTerm(
                effective_from=dt.date(2026, 1, 1), rule=model.BillingRule.RESERVATION, idle_owner="platform"
            ),
        ),
        teams=tuple(
            model.TeamConfig(
                name=f"team-{i:03d}", cost_center=f"cc-{i % 20:02d}", quotas=dict.fromkeys(GPUS, 1)
            )
            for i in range(teams)
        ),
        gpus_per_instance=GPUS,
        max_checkpoint_minutes={"training-priority": 60},
    )


def _prepare(data: Path, teams: int) -> None:
    marker = data / ".complete"
    if marker.exists():
        print(f"data: reusing {data}")
        return
    started = time.perf_counter()
    counts = generate_month(
        data,
        month=MONTH,
        cluster=CLUSTER,
        teams=teams,
        instance_types=GPUS,
        nodes_per_type=_nodes_per_type(teams),
        snapshot_minutes=5,
        node_snapshot_minutes=15,
    )
    generated_cur(
        data / "cur.parquet",
        month=MONTH,
        cluster=CLUSTER,
        instance_types=RATES,
        nodes_per_type=_nodes_per_type(teams),
        shared=SHARED,
    )
    (data / "chargeback_config.json").write_text(model.config_to_json(_config(teams)), encoding="utf-8")
    marker.write_text("ok\n", encoding="utf-8")
    size = sum(f.stat().st_size for f in data.rglob("*") if f.is_file())
    print(
        f"data: {', '.join(f'{k} {v:,} rows' for k, v in counts.items())}; {size / 2**20:.1f} MiB Parquet; "
        f"generated in {time.perf_counter() - started:.1f} s"
    )


def _run(data: Path, fmt: str, output: Path) -> tuple[float, int]:
    """Run the CLI once in a child process; return (wall seconds, peak RSS bytes of that child)."""
    command = [
        sys.executable,
        "-c",
        "import sys; from hyperpod_tenancy.cli import main; sys.exit(main(sys.argv[1:]))",
        "chargeback",
        "--usage",
        str(data),
        "--cur",
        str(data / "cur.parquet"),
        "--config",
        str(data / "chargeback_config.json"),
        "--month",
        MONTH,
        "--format",
        fmt,
        "--output",
        str(output),
    ]
    return _timed_child(command)


#: The floor: what DuckDB alone needs to read and aggregate the month's usage files.
FLOOR_SQL = (
    "SELECT instance_type, team, date_trunc('hour', \"timestamp\") AS h, sum(gpu_total), sum(gpu_borrowed) "
    "FROM read_parquet('{data}/clusterqueue/**/*.parquet', hive_partitioning = true) GROUP BY ALL",
    "SELECT instance_type, date_trunc('hour', \"timestamp\") AS h, count(*) "
    "FROM read_parquet('{data}/node/**/*.parquet', hive_partitioning = true) GROUP BY ALL",
)


def _floor_child(data: Path) -> None:
    """Run the floor's queries (in the child process :func:`_run_floor` starts)."""
    import duckdb  # noqa: PLC0415 - the child's only import

    con = duckdb.connect()
    for sql in FLOOR_SQL:
        con.execute(sql.format(data=data)).fetchall()


def _timed_child(command: list[str]) -> tuple[float, int]:
    """Run ``command`` in a child process; return (wall seconds, peak RSS bytes of that child)."""
    # a fresh interpreter per run, so RUSAGE_CHILDREN's maximum is this run's (the benchmark itself is small)
    wrapper = [
        sys.executable,
        "-c",
        "import resource, subprocess, sys; rc = subprocess.call(sys.argv[1:]); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)",
        *command,
    ]
    started = time.perf_counter()
    done = subprocess.run(wrapper, capture_output=True, text=True, check=False, env={**os.environ})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[1:3]} failed ({done.returncode}):\n{done.stderr}")
    peak_kib = int(done.stdout.strip().splitlines()[-1])
    return wall, peak_kib * 1024


def _run_floor(data: Path) -> tuple[float, int]:
    return _timed_child([sys.executable, __file__, "--floor-child", str(data)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, help="keep the generated data here (reused when complete)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--format", default="html", choices=["json", "csv", "html", "markdown"])
    parser.add_argument("--teams", type=int, default=TEAMS, help=f"teams in the month (default {TEAMS})")
    parser.add_argument("--floor-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_child is not None:
        _floor_child(args.floor_child)
        return
    with tempfile.TemporaryDirectory(prefix="chargeback-bench-") as tmp:
        data = args.data or Path(tmp) / "data"
        data.mkdir(parents=True, exist_ok=True)
        _prepare(data, args.teams)
        output = Path(tmp) / f"report.{args.format}"
        results, floors = [], []
        for _ in range(args.runs):  # alternated, so a slow spell of the machine weighs on both alike
            results.append(_run(data, args.format, output))
            floors.append(_run_floor(data))
        size = output.stat().st_size
        for i, ((wall, peak), (floor, floor_peak)) in enumerate(zip(results, floors, strict=True), start=1):
            print(
                f"run {i}: wall {wall:.2f} s, peak RSS {peak / 2**20:.0f} MiB; DuckDB floor {floor:.2f} s, "
                f"{floor_peak / 2**20:.0f} MiB; ratio {wall / floor:.2f}"
            )
        walls = [w for w, _ in results]
        floor_median = statistics.median(f for f, _ in floors)
        median = statistics.median(walls)
        peak = max(p for _, p in results)
        bound = max(5.0, 2 * floor_median)
        verdict = "OK" if median <= bound and peak <= 2**30 else "OVER TARGET"
        print(
            f"chargeback CLI ({args.teams} teams, {args.format}, {size:,} bytes): wall min {min(walls):.2f} s, "
            f"median {median:.2f} s, max {max(walls):.2f} s; peak RSS {peak / 2**20:.0f} MiB; DuckDB floor "
            f"median {floor_median:.2f} s (ratio {median / floor_median:.2f}); target <= {bound:.2f} s "
            f"(5 s or twice the floor) and <= 1024 MiB; {os.cpu_count()} CPUs, {dt.date.today()}: {verdict}"
        )


if __name__ == "__main__":
    main()
