"""Time loading the reference platform.yaml: import, first load (builds the validator), steady state.

Usage: .venv/bin/python benchmarks/load_policy.py [ROUNDS]   (default: 200)
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "platform.yaml"


def main(rounds: int) -> None:
    start = time.perf_counter()
    from hyperpod_tenancy.policy import load_platform  # noqa: PLC0415 - the import is part of what is timed

    imported = time.perf_counter()
    load_platform(REFERENCE)
    first = time.perf_counter()
    for _ in range(rounds):
        load_platform(REFERENCE)
    steady = (time.perf_counter() - first) / rounds
    print(f"import hyperpod_tenancy.policy: {(imported - start) * 1000:.1f} ms")
    print(f"first load_platform:            {(first - imported) * 1000:.1f} ms")
    print(f"load_platform (mean of {rounds}):    {steady * 1000:.2f} ms")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
