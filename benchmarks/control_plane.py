"""Benchmark: the test control plane's warm start, and the cold build of its components.

**Warm start** (the default): starts the control plane of ``tests/support/control_plane.py`` (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, Kueue v0.19.2, KWOK) ``--runs`` times with the binaries
``make control-plane`` built, each until Kueue's webhook refuses an invalid ClusterQueue and KWOK makes a node
Ready, and prints each component's time to ready and the whole, as min / median / max, and the resident memory
of every process once started.

**Cold build** (``--cold``): runs ``make control-plane`` with an empty Go build cache, module cache and
control-plane cache (temporary folders), as a fresh machine does inside ``make test``, and prints its wall time.
It downloads every module again from the Go module proxy.

    make control-plane    # prints the variables; then, with them set:
    .venv/bin/python benchmarks/control_plane.py [--runs 3]
    .venv/bin/python benchmarks/control_plane.py --cold

Target on the 2-core reference machine: the cold build within 60 minutes (CI has 90 for everything).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "support"), str(REPO / "tests"), str(REPO / "src")]

import platforms  # noqa: E402
from control_plane import Components, ControlPlane, kueue_configuration  # noqa: E402


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def warm(runs: int) -> None:
    """Start and stop the control plane ``runs`` times; print the figures."""
    platform = platforms.kueue_platform()
    components = Components.from_environment()
    phases: dict[str, list[float]] = {}
    memory: dict[str, list[float]] = {}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as workdir:
            plane = ControlPlane(
                Path(workdir),
                components,
                kueue_configuration=kueue_configuration(platform),
                service_cidr=platform.cluster.service_cidr,
            )
            start = time.perf_counter()
            marks: list[tuple[str, float]] = []
            try:
                for name, step in plane.start_steps():
                    step()
                    marks.append((name, time.perf_counter()))
                for process in plane.processes():
                    memory.setdefault(process.name, []).append(_rss_mib(process.popen.pid))
            finally:
                plane.stop()
            previous = start
            for name, mark in marks:
                phases.setdefault(name, []).append(mark - previous)
                previous = mark
            phases.setdefault("whole", []).append(previous - start)
    print(f"control plane warm start, {runs} runs (s: min / median / max)")
    for name, values in phases.items():
        print(f"  {name:<22} {min(values):6.1f} {statistics.median(values):6.1f} {max(values):6.1f}")
    print("resident memory once started (MiB, median)")
    for name, values in memory.items():
        print(f"  {name:<22} {statistics.median(values):6.0f}")
    print(f"  {'all':<22} {sum(statistics.median(v) for v in memory.values()):6.0f}")


def cold() -> None:
    """``make control-plane`` with empty Go and control-plane caches; print its wall time."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        env = {
            **os.environ,
            "GOCACHE": str(root / "go-build"),
            "GOMODCACHE": str(root / "go-mod"),
            "CONTROL_PLANE_CACHE": str(root / "control-plane"),
        }
        start = time.perf_counter()
        subprocess.run(["make", "--no-print-directory", "control-plane"], cwd=REPO, env=env, check=True)
        wall = time.perf_counter() - start
        subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)  # the module cache is read-only
    print(f"cold build of the control plane (empty Go caches): {wall / 60:.1f} min")


def main() -> None:
    """Parse the options and run the benchmark asked for."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=3, help="warm starts to time (default 3)")
    parser.add_argument("--cold", action="store_true", help="time the cold build instead")
    args = parser.parse_args()
    if args.cold:
        cold()
    else:
        warm(args.runs)


if __name__ == "__main__":
    main()
