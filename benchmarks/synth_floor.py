"""What a team stack costs at the margin, against what the same template costs at best through CDK.

A team stack of the reference platform holds about 30 resources. This benchmark measures what one more team
costs to build and synthesize (between ``--small`` and ``--large`` teams, each size a fresh process, the time
spent inside the process: building the constructs plus ``app.synth()``), for three ways to produce the same
team stack:

- ``library``: the real team stacks, as ``synth_scale.py`` builds them (the platform's shared stacks beside them);
- ``l1``: the resources of ``research``'s synthesized template, each a bare ``CfnResource`` given its whole property
  document (one jsii call per resource and one for its logical ID): the Python floor, with no construct logic;
- ``include``: the same template read by ``cloudformation_include.CfnInclude``, one jsii call per stack, so node
  builds every resource: the floor of CDK itself;

each with CloudFormation's built-in template validation on and off. ``empty`` is an app of one stack with one
resource: Python, jsii and node starting, the fixed cost of any CDK app in Python.

The variants run in turn within each round (``--rounds``, default 2), so a drift of the machine's speed touches all
of them alike; each figure is the median of the rounds, printed in milliseconds and as a share of the library's
(the share is the figure to compare between runs: this machine's speed drifts from hour to hour).

Usage::

    .venv/bin/python benchmarks/synth_floor.py [--small 10] [--large 110] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
ACCOUNT, REGION = "111122223333", "us-east-1"
VARIANTS = ("library", "l1", "include")


def write_template(path: Path) -> None:
    """Synthesize the reference platform with ``research`` alone and write its team stack's template to ``path``."""
    sys.path.insert(0, str(HERE))
    import aws_cdk as cdk  # noqa: PLC0415 - the child's work
    from synth_scale import platform_with_teams  # noqa: PLC0415

    from hyperpod_tenancy.policy import platform_from_dict  # noqa: PLC0415
    from hyperpod_tenancy.stacks import PlatformStage  # noqa: PLC0415

    platform = platform_from_dict(platform_with_teams(0))
    with tempfile.TemporaryDirectory() as out:
        context = json.loads((REPO / "cdk.json").read_text())["context"]
        app = cdk.App(outdir=out, context=context, builtin_cloud_formation_validation=False)
        stage = PlatformStage(app, platform.name, platform=platform, progress=False)
        app.synth()
        stack = stage.team_stacks["research"]
        template = json.loads(
            Path(stage.synth().get_stack_artifact(stack.artifact_id).template_full_path).read_text()
        )
    template["Resources"].pop("CDKMetadata", None)
    for section in ("Conditions", "Rules", "Parameters"):
        template.pop(section, None)
    path.write_text(json.dumps(template))


def measure_floor(variant: str, count: int, template_file: Path, *, validate: bool) -> dict[str, float]:
    """Build ``count`` stacks of ``template_file``'s resources as ``variant`` (``l1``, ``include``) and synthesize."""
    started = time.perf_counter()
    import aws_cdk as cdk  # noqa: PLC0415 - timed in the child
    from aws_cdk import cloudformation_include  # noqa: PLC0415

    template = json.loads(template_file.read_text())
    resources: dict[str, dict[str, Any]] = template["Resources"]
    imported = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        app = cdk.App(outdir=out, builtin_cloud_formation_validation=validate)
        env = cdk.Environment(account=ACCOUNT, region=REGION)
        for index in range(count):
            stack = cdk.Stack(app, f"Team{index:04d}", env=env)
            if variant == "include":
                cloudformation_include.CfnInclude(stack, "Team", template_file=str(template_file))
                continue
            for logical_id, resource in resources.items():
                cfn = cdk.CfnResource(
                    stack, logical_id, type=resource["Type"], properties=resource.get("Properties", {})
                )
                cfn.override_logical_id(logical_id)
        built = time.perf_counter()
        app.synth()
        synthesized = time.perf_counter()
    return {"import": imported - started, "construct": built - imported, "synth": synthesized - built}


def measure_empty() -> dict[str, float]:
    """An app of one stack with one resource, synthesized (the fixed cost of a CDK app in Python)."""
    started = time.perf_counter()
    import aws_cdk as cdk  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as out:
        app = cdk.App(outdir=out, builtin_cloud_formation_validation=False)
        cdk.CfnResource(cdk.Stack(app, "Empty"), "Topic", type="AWS::SNS::Topic")
        app.synth()
    return {"total": time.perf_counter() - started}


def _child(command: list[str]) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def run_once(variant: str, count: int, template: Path, *, validate: bool) -> float:
    """Seconds inside a fresh process building and synthesizing ``count`` team stacks as ``variant``."""
    flag = [] if validate else ["--no-validate"]
    if variant == "library":
        figures, _ = _child([sys.executable, str(HERE / "synth_scale.py"), "--one", str(count), *flag])
        return float(figures["seconds"]["construct"] + figures["seconds"]["synth"])
    command = [sys.executable, __file__, "--one", variant, str(count), "--template", str(template), *flag]
    figures, _ = _child(command)
    return float(figures["construct"] + figures["synth"])


def main() -> None:
    """Measure each variant's marginal cost per team, in turn, and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--small", type=int, default=10, help="teams of the small size (default 10)")
    parser.add_argument("--large", type=int, default=110, help="teams of the large size (default 110)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of all variants in turn (default 2)")
    parser.add_argument("--one", nargs=2, metavar=("VARIANT", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--empty", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--template", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--write-template", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--no-validate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_template:
        write_template(args.write_template)
        return
    if args.empty:
        print(json.dumps(measure_empty()))
        return
    if args.one:
        variant, count = args.one
        print(json.dumps(measure_floor(variant, int(count), args.template, validate=not args.no_validate)))
        return
    if args.large <= args.small:
        raise SystemExit("--large must be more teams than --small")

    load = os.getloadavg()
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load[0]:.2f} on {os.cpu_count()} cores"
    )
    with tempfile.TemporaryDirectory() as scratch:
        template = Path(scratch) / "team.template.json"
        subprocess.run(
            [sys.executable, __file__, "--write-template", str(template)], check=True, capture_output=True
        )
        resources = len(json.loads(template.read_text())["Resources"])
        print(f"# a team stack: {resources} resources, {template.stat().st_size / 1024:.0f} KiB of template")
        seconds: dict[tuple[str, bool, int], list[float]] = {}
        empty: list[float] = []
        for round_number in range(1, args.rounds + 1):
            _, wall = _child([sys.executable, __file__, "--empty"])
            empty.append(wall)
            for validate in (True, False):
                for variant in VARIANTS:
                    for count in (args.small, args.large):
                        key = (variant, validate, count)
                        seconds.setdefault(key, []).append(
                            run_once(variant, count, template, validate=validate)
                        )
            print(f"# round {round_number} of {args.rounds} done", file=sys.stderr, flush=True)
    print(f"empty app (one stack, one resource), whole process: {statistics.median(empty):.2f} s")
    print(
        f"{'variant':<8} {'validation':<10} {'ms per team':>12} {'min-max':>9} {'of library':>11}"
        f"   (between {args.small} and {args.large} teams; median of the rounds)"
    )
    span = args.large - args.small

    def per_round(variant: str, validate: bool) -> list[float]:
        """The variant's marginal ms per team in each round (the two sizes of one round)."""
        small, large = seconds[(variant, validate, args.small)], seconds[(variant, validate, args.large)]
        return [(b - a) / span * 1000 for a, b in zip(small, large, strict=True)]

    for validate in (True, False):
        marginal = {}
        for variant in VARIANTS:
            small = statistics.median(seconds[(variant, validate, args.small)])
            large = statistics.median(seconds[(variant, validate, args.large)])
            marginal[variant] = (large - small) / span * 1000
        for variant in VARIANTS:
            share = marginal[variant] / marginal["library"]
            rounds = per_round(variant, validate)
            print(
                f"{variant:<8} {'on' if validate else 'off':<10} {marginal[variant]:12.0f} "
                f"{min(rounds):4.0f}-{max(rounds):<4.0f} {share:10.2f}x"
            )
    ratios = [lib / l1 for lib, l1 in zip(per_round("library", True), per_round("l1", True), strict=True)]
    median = statistics.median(ratios)
    print(
        f"library / bare resources (validation on), round by round: min {min(ratios):.2f}, median {median:.2f}, "
        f"max {max(ratios):.2f}; target <= 2.00: {'OK' if median <= 2 else 'OVER TARGET'}"
    )


if __name__ == "__main__":
    main()
