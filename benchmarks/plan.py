"""Time ``hyperpod-tenancy plan`` as ``make synth`` runs it, at N teams: the whole process, and its parts.

Usage: .venv/bin/python benchmarks/plan.py [N ...]   (default: 3 100 1000)

For each N it writes the platform of ``benchmarks/synth_scale.py`` (N generated teams beside ``research``; N=3 is
the reference ``platform.yaml``), runs ``hyperpod-tenancy plan FILE --markdown ... --png ...`` as a process
(median of 3, wall and the child's CPU), then times in this process the policy load, the plan (with the chargeback
engine's month) and the chart.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import yaml  # noqa: E402
from synth_scale import platform_with_teams  # noqa: E402


def _process(policy: Path, out: Path) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(
            [
                str(REPO / ".venv/bin/hyperpod-tenancy"),
                "plan",
                str(policy),
                "--month",
                "2026-12",
                "--markdown",
                str(out / "plan.md"),
                "--png",
                str(out / "plan.png"),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main(sizes: list[int]) -> None:
    from hyperpod_tenancy.policy import load_platform  # noqa: PLC0415
    from hyperpod_tenancy.tools.plan.chart import render_chart  # noqa: PLC0415
    from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        for n in sizes:
            policy = REPO / "platform.yaml"
            if n != 3:
                policy = out / f"p{n}.yaml"
                policy.write_text(yaml.safe_dump(platform_with_teams(n)), encoding="utf-8")
            wall, cpu = _process(policy, out)
            t0 = time.perf_counter()
            platform = load_platform(policy)
            t1 = time.perf_counter()
            plan = build_plan(platform, month="2026-12")
            t2 = time.perf_counter()
            render_chart(plan)
            t3 = time.perf_counter()
            print(
                f"teams={len(platform.teams):5d} process wall={wall:5.2f}s cpu={cpu:5.2f}s | "
                f"load={t1 - t0:5.2f}s plan={t2 - t1:5.2f}s chart={t3 - t2:5.2f}s"
            )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [3, 100, 1000])
