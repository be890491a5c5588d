"""Synthesize the reference platform with N teams and print stack sizes, synth time and peak memory.

Usage: .venv/bin/python benchmarks/synth_scale.py [N ...]   (default: 3 10 30)

Shows that the largest stack stays far from CloudFormation's limits (500 resources, 1 MB template) whatever
the number of teams, because every team has its own stack.
"""

from __future__ import annotations

import copy
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import aws_cdk as cdk
import yaml

from hyperpod_tenancy.policy import platform_from_dict
from hyperpod_tenancy.stacks import PlatformStage

REFERENCE = Path(__file__).resolve().parents[1] / "platform.yaml"


def platform_with_teams(count: int) -> dict[str, object]:
    """The reference platform with ``count`` small teams sharing the g5 group (quota 0, lend)."""
    data = yaml.safe_load(REFERENCE.read_text())
    data["cluster"]["instanceGroups"][1]["count"] = count + 1
    teams = []
    for i in range(count):
        team = copy.deepcopy(data["teams"][2])
        team["name"] = f"team-{i:03d}"
        team["compute"]["quotas"] = {"ml.g5.12xlarge": 1}
        team["identity"] = {"groupId": f"906754abcd-{i:08d}-aaaa-bbbb-cccc-{i:012d}", "posixGid": 30000 + i}
        teams.append(team)
    data["teams"] = teams
    return data


def measure(count: int) -> None:
    """Synthesize with ``count`` teams and print one line of figures."""
    platform = platform_from_dict(platform_with_teams(count))
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        app = cdk.App(outdir=out)
        stage = PlatformStage(app, platform.name, platform=platform)
        app.synth()
        assembly = stage.synth()
        elapsed = time.perf_counter() - start
        sizes = [(len(s.template["Resources"]), len(json.dumps(s.template))) for s in assembly.stacks]
        exports = len(assembly.stacks[0].template.get("Outputs", {}))
    team_sizes = sizes[1:]
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"teams={count:4d} stacks={len(sizes):4d} synth={elapsed:6.1f}s "
        f"cluster_stack={sizes[0][0]} resources/{sizes[0][1] / 1024:.0f} KiB/{exports} outputs "
        f"largest_team_stack={max(r for r, _ in team_sizes)} resources/{max(b for _, b in team_sizes) / 1024:.0f} KiB "
        f"python_peak_rss={peak_mib:.0f} MiB (the jsii node process is not counted)"
    )


def main() -> None:
    """Run the measurement for each team count on the command line."""
    counts = [int(a) for a in sys.argv[1:]] or [3, 10, 30]
    for count in counts:
        measure(count)


if __name__ == "__main__":
    main()
