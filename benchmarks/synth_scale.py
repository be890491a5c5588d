"""Synthesize the reference platform with N teams and print what it costs and what it produces.

Usage::

    .venv/bin/python benchmarks/synth_scale.py [N ...]          # default: 10 100 500 1000
    .venv/bin/python benchmarks/synth_scale.py --one N [--nag]  # one measurement, a JSON line (the child)

Each N runs in a child process of its own (a fresh jsii node process), so one row is one whole synthesis. The
row gives the wall time of the child, the peak resident memory of its whole process tree (Python *and* the jsii
node process, sampled every 50 ms from ``/proc``), the number of stacks, the largest stack's resources and
template bytes, the cluster and chargeback stacks' sizes (the same at every N: the invariant), and where the
time went: the policy model (load and validate), building the constructs (Python, and inside it the jsii round
trips: their number and time), and ``app.synth()`` (node: validations, templates, asset staging and hashing).
``--nag`` adds cdk-nag's AwsSolutions checks (the test suite's configuration) and ``--no-validate`` turns off
CloudFormation's built-in template validation (``App(builtin_cloud_formation_validation=False)``, what
``CDK_VALIDATION=false`` does; ``cdk.json``'s ``@aws-cdk/core:validateAgainstDefaultRules`` only makes its findings
errors instead of warnings, it does not switch it off; the validation is cfn-lint as WebAssembly, run on every
stack at synth), to read their shares. ``--select`` synthesizes the shared stacks and the last team only, as
``cdk synth -c teams=<team>`` does, with the policy of all N teams (what a deploy of one team costs).

The generated teams are copies of the reference's last team, one ``ml.g5.12xlarge`` each, beside ``research``.

Paired comparison with EKS Blueprints (whole process, the same command on both sides, A/B in turn)::

    # once, in a scratch folder outside the repository
    mkdir -p /tmp/bp && cd /tmp/bp && npm init -y >/dev/null
    npm install @aws-quickstart/eks-blueprints@1.19 aws-cdk-lib@2 constructs@10 aws-cdk@2
    cp <repository>/benchmarks/blueprints_app.js /tmp/bp/app.js   # 20 ApplicationTeams
    echo '{"app": "node app.js"}' > /tmp/bp/cdk.json
    # from the repository: A = this library with 20 teams, B = Blueprints with 20 application teams
    .venv/bin/python benchmarks/synth_scale.py --write-platform 20 /tmp/p20.yaml
    for i in 1 2 3; do   # A then B, in turn, three pairs; compare the medians as a ratio
      /usr/bin/time -f "A %e s %U+%S cpu" sh -c 'PLATFORM_FILE=/tmp/p20.yaml npx cdk synth --quiet -o /tmp/o20 >/dev/null 2>&1'
      /usr/bin/time -f "B %e s %U+%S cpu" sh -c 'cd /tmp/bp && npx cdk synth --quiet -o /tmp/bpout >/dev/null 2>&1'
    done

``--write-platform N FILE`` writes the platform of N teams as YAML (for ``PLATFORM_FILE`` above).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "platform.yaml"


def platform_with_teams(count: int) -> dict[str, Any]:
    """The reference platform with ``research`` and ``count`` generated teams sharing the g5 group."""
    data = yaml.safe_load(REFERENCE.read_text())
    data["cluster"]["instanceGroups"][1]["count"] = count + 1
    teams = [data["teams"][0]]
    for i in range(count):
        team = copy.deepcopy(data["teams"][2])
        team["name"] = f"team-{i:04d}"
        team["compute"]["quotas"] = {"ml.g5.12xlarge": 1}
        team["identity"] = {"groupId": f"906754abcd-{i:08d}-aaaa-bbbb-cccc-{i:012d}", "posixGid": 30000 + i}
        teams.append(team)
    data["teams"] = teams
    return data


class _JsiiCounter:
    """Count the Python -> node calls of jsii (create, invoke, get, set, static calls) and time the outermost ones.

    The generated bindings call the functions of the ``jsii`` module (``jsii.invoke``, ...), which are replaced here.
    A call made by a Python callback inside another call is counted but not timed twice.
    """

    NAMES = ("create", "invoke", "get", "set", "sinvoke", "sget", "sset", "ainvoke")

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0
        self._depth = 0

    def install(self) -> None:
        import jsii  # noqa: PLC0415 - the benchmark's own instrumentation

        for name in self.NAMES:
            original = getattr(jsii, name)

            def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                self.calls += 1
                self._depth += 1
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self._depth -= 1
                    if self._depth == 0:
                        self.seconds += time.perf_counter() - start

            setattr(jsii, name, timed)


# CloudFormation's built-in template validation runs whatever `cdk.json`'s validateAgainstDefaultRules says (that flag
# only makes its findings errors): aws-cdk-lib core/lib/private/synthesis-validation.js, defaultValidationEnabled,
# reads the App's builtinCloudFormationValidation prop and CDK_VALIDATION; --no-validate sets the prop.


def measure_one(count: int, *, nag: bool, validate: bool = True, select: bool = False) -> dict[str, Any]:
    """Synthesize ``count`` teams in this process and return the figures (the child's work)."""
    started = time.perf_counter()
    counter = _JsiiCounter()
    import aws_cdk as cdk  # noqa: PLC0415 - imported inside the timed child

    counter.install()
    from hyperpod_tenancy.policy import platform_from_dict  # noqa: PLC0415
    from hyperpod_tenancy.stacks import PlatformStage  # noqa: PLC0415

    imported = time.perf_counter()
    platform = platform_from_dict(platform_with_teams(count))
    policy = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        context = json.loads((REPO / "cdk.json").read_text())["context"]
        app = cdk.App(outdir=out, context=context, builtin_cloud_formation_validation=validate)
        # --select: the shared stacks and the last team only (`-c teams=<team>`), the policy of all `count` teams
        teams = [platform.hosted_teams[-1].name] if select else None
        stage = PlatformStage(app, platform.name, platform=platform, progress=False, teams=teams)
        if nag:
            from cdk_nag import AwsSolutionsChecks  # noqa: PLC0415

            cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
        jsii_build = (counter.calls, counter.seconds)
        built = time.perf_counter()
        app.synth()
        assembly = stage.synth()
        synthesized = time.perf_counter()
        stacks = {}
        for stack in assembly.stacks:
            text = Path(stack.template_full_path).read_bytes()
            stacks[stack.stack_name] = (len(json.loads(text)["Resources"]), len(text))
    cluster = stage.cluster_stack.stack_name
    chargeback = stage.chargeback_stack.stack_name if stage.chargeback_stack else None
    largest = max(stacks.items(), key=lambda kv: (kv[1][0], kv[1][1]))
    biggest_bytes = max(stacks.items(), key=lambda kv: kv[1][1])
    return {
        "teams": count,
        "nag": nag,
        "validate": validate,
        "select": select,
        "stacks": len(stacks),
        "largest_resources": largest[1][0],
        "largest_resources_stack": largest[0],
        "largest_bytes": biggest_bytes[1][1],
        "largest_bytes_stack": biggest_bytes[0],
        "cluster": stacks[cluster],
        "chargeback": stacks[chargeback] if chargeback else None,
        "seconds": {
            "import": imported - started,
            "policy": policy - imported,
            "construct": built - policy,
            "construct_jsii": jsii_build[1],
            "synth": synthesized - built,
        },
        "jsii_calls": jsii_build[0],
    }


def _tree_rss(pid: int) -> int:
    """Resident bytes of ``pid`` and all its descendants (``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            statm = (entry / "statm").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
        rss[int(entry.name)] = int(statm.split()[1]) * page
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        total += rss.get(current, 0)
        todo += children.get(current, [])
    return total


def measure(count: int, *, nag: bool = False, validate: bool = True, select: bool = False) -> dict[str, Any]:
    """Run one child for ``count`` teams; return its figures plus wall time and peak tree memory."""
    command = [
        sys.executable,
        __file__,
        "--one",
        str(count),
        *(["--nag"] if nag else []),
        *(["--select"] if select else []),
        *([] if validate else ["--no-validate"]),
    ]
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, _tree_rss(child.pid))
            stop.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = child.communicate()
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    if child.returncode != 0:
        raise SystemExit(f"synthesis of {count} teams failed (exit {child.returncode})")
    figures: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    figures["wall"] = wall
    figures["peak_tree_mib"] = peak / 2**20
    return figures


def row(f: dict[str, Any]) -> str:
    """One printed line of figures."""
    s = f["seconds"]
    cluster = f"{f['cluster'][0]} res/{f['cluster'][1] / 1024:.0f} KiB"
    chargeback = f"{f['chargeback'][0]} res/{f['chargeback'][1] / 1024:.0f} KiB" if f["chargeback"] else "-"
    return (
        f"teams={f['teams']:5d}{' +nag' if f['nag'] else ''}{' one selected' if f['select'] else ''}{'' if f['validate'] else ' -validate'} wall={f['wall']:6.1f}s peak_tree={f['peak_tree_mib']:5.0f} MiB "
        f"stacks={f['stacks']:5d} largest={f['largest_resources']} res ({f['largest_resources_stack']}) / "
        f"{f['largest_bytes'] / 1024:.0f} KiB ({f['largest_bytes_stack']}) cluster={cluster} chargeback={chargeback} | "
        f"import {s['import']:.1f}s policy {s['policy']:.2f}s construct {s['construct']:.1f}s "
        f"(jsii {f['jsii_calls']} calls {s['construct_jsii']:.1f}s) synth {s['synth']:.1f}s"
    )


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main() -> None:
    """Measure each N on the command line (or the child's one measurement)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("counts", nargs="*", type=int)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--nag", action="store_true", help="add cdk-nag AwsSolutions checks")
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="synthesize without CloudFormation's built-in template validation (its share of the time)",
    )
    parser.add_argument(
        "--select",
        action="store_true",
        help="synthesize the shared stacks and one team only (-c teams=<team>), the policy of all N teams",
    )
    parser.add_argument(
        "--write-platform", nargs=2, metavar=("N", "FILE"), help="write the platform of N teams"
    )
    args = parser.parse_args()
    if args.write_platform:
        count, path = args.write_platform
        Path(path).write_text(yaml.safe_dump(platform_with_teams(int(count)), sort_keys=False))
        return
    if args.one is not None:
        print(
            json.dumps(measure_one(args.one, nag=args.nag, validate=not args.no_validate, select=args.select))
        )
        return
    counts = args.counts or [10, 100, 500, 1000]
    print(
        f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {_load()} before the first run", flush=True
    )
    results = []
    for count in counts:
        figures = measure(count, nag=args.nag, validate=not args.no_validate, select=args.select)
        results.append(figures)
        print(row(figures), f"[{_load()}]", flush=True)
    if len(results) >= 2:
        first, last = results[0], results[-1]
        marginal = (last["wall"] - first["wall"]) / (last["teams"] - first["teams"])
        print(f"# marginal: {marginal * 1000:.0f} ms/team between {first['teams']} and {last['teams']} teams")


if __name__ == "__main__":
    main()
