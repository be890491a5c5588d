"""``hyperpod-tenancy probe``: after a deploy, have team B try to reach into team A, on the real cluster.

``hyperpod-tenancy probe [PATH] --teams A B --member-role A=ROLE --member-role B=ROLE [--kubeconfig F]
[--context K] [--timeout S] [--keep] [--format text|json]`` creates short-lived probe Jobs and a Service in the two
team namespaces, each as a member of its own team (Kubernetes impersonation), checks the positive controls
(A reaches its own Service and FSx directory, A's honest Job is admitted) and then the boundary (B cannot reach
A's Service nor read A's files, no pod reaches IMDS, B's Jobs on A's queue, at a class B is not entitled to or
with a GPU-visibility variable are denied, B cannot create in A's namespace). What is created and expected is
:mod:`._probe_plan` (pure); the cluster side is :mod:`._probe_live` (the ``[explain]`` extra's ``kubernetes``
client). Everything created is deleted at the end, also on Ctrl-C, unless ``--keep``. Progress goes to stderr,
the results to stdout.

Exit status: 0 every check passed; 1 a check failed; 2 usage (a bad flag, an unusable policy or role); 3 no check
failed but one is inconclusive, or the probe could not run (kubeconfig, API server, impersonation not allowed).
Without the ``[explain]`` extra the CLI stops before anything runs, with exit 1 and the install hint, like every
command that lacks its extra.
"""

from __future__ import annotations

import argparse
import json
import secrets
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from hyperpod_tenancy.tools.probe.plan import ProbePlan, Result

__all__ = ["EXIT_CANNOT_RUN", "EXIT_USAGE", "add_parser", "render_json", "render_text", "run"]

#: Exit status: the command line, the policy or a role is wrong.
EXIT_USAGE = 2
#: Exit status: the probe could not run at all (the same as inconclusive: nothing was decided).
EXIT_CANNOT_RUN = 3
_PROG = "hyperpod-tenancy probe"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``probe`` subcommand to ``commands``."""
    parser = commands.add_parser(
        "probe",
        help="after a deploy: check on the cluster that team B cannot reach into team A",
        description=(
            "Create short-lived probe Jobs in two team namespaces as members of each team (impersonation), check "
            "that A reaches its own Service and files, then that B cannot reach A's Service or files, no pod "
            "reaches IMDS and B's crossing Jobs are denied. Exit 0 all passed, 1 a FAIL, 3 inconclusive."
        ),
    )
    parser.add_argument(
        "path", nargs="?", default="platform.yaml", type=Path, help="policy (default: platform.yaml)"
    )
    parser.add_argument(
        "--teams",
        nargs=2,
        required=True,
        metavar=("A", "B"),
        help="A: the team probed; B: the team that tries",
    )
    parser.add_argument(
        "--member-role",
        action="append",
        default=[],
        metavar="TEAM=ROLE",
        help="the IAM role of TEAM's permission set (AWSReservedSSO_<PermissionSet>_<16 hex>); once per team",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--timeout",
        type=int,
        default=300,
        metavar="S",
        help="seconds to wait for each probe pod (default: 300)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="leave the probe's objects in place (for debugging)"
    )
    parser.add_argument(
        "--format", choices=["text", "json"], default="text", help="results format (default: text)"
    )


def render_text(plan: ProbePlan, results: list[Result]) -> str:
    """Return the results as one line per check (``pass``/``FAIL``/``inconclusive``, the check, why) and a summary."""
    from hyperpod_tenancy.tools._common import plain_table  # noqa: PLC0415
    from hyperpod_tenancy.tools.probe.plan import Status, exit_status  # noqa: PLC0415

    rows = [["result", "check", "as", "why"]]
    rows += [[r.status.value, r.check.id, r.check.actor, r.why] for r in results]
    lines = [f"probe run {plan.run}: team {plan.owner.team} (A) probed by team {plan.intruder.team} (B)"]
    lines += plain_table(rows)
    lines += [f"  skipped  {s}" for s in plan.skipped]
    counts = {s: sum(r.status is s for r in results) for s in Status}
    lines.append(
        f"{counts[Status.PASS]} passed, {counts[Status.FAIL]} failed, {counts[Status.INCONCLUSIVE]} inconclusive "
        f"(exit {exit_status(results)})"
    )
    return "\n".join(lines)


def render_json(plan: ProbePlan, results: list[Result]) -> str:
    """Return the results as JSON: the run, the teams and per check its status, expectation, observation and reason."""
    from hyperpod_tenancy.tools.probe.plan import exit_status  # noqa: PLC0415

    doc: dict[str, Any] = {
        "run": plan.run,
        "owner": plan.owner.team,
        "intruder": plan.intruder.team,
        "exitStatus": exit_status(results),
        "checks": [
            {
                "id": r.check.id,
                "actor": r.check.actor,
                "description": r.check.description,
                "expect": r.check.expect.value,
                "observed": r.observed.outcome.value,
                "detail": r.observed.detail,
                "status": r.status.value,
                "why": r.why,
            }
            for r in results
        ],
        "skipped": list(plan.skipped),
    }
    return json.dumps(doc, indent=2)


def _roles(values: list[str]) -> dict[str, str]:
    roles = {}
    for value in values:
        team, sep, role = value.partition("=")
        if not sep or not team or not role:
            raise ValueError(
                f"--member-role {value!r}: write TEAM=ROLE, e.g. research=AWSReservedSSO_Research_0123456789abcdef"
            )
        roles[team] = role
    return roles


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO, api_factory: Any = None) -> int:
    """Run ``probe`` with parsed ``args``; return the exit status (see the module docstring).

    ``api_factory`` (identity or None → ``kubernetes`` ``ApiClient``) replaces the kubeconfig's; for tests.
    """
    from hyperpod_tenancy.tools._common import load_policy  # noqa: PLC0415
    from hyperpod_tenancy.tools.probe.live import ProbeError, Runner, kube_api_factory, run_probe  # noqa: PLC0415
    from hyperpod_tenancy.tools.probe.plan import exit_status, probe_plan, verdict  # noqa: PLC0415

    if args.timeout < 1:
        print(f"{_PROG}: error: --timeout {args.timeout}: give a number of seconds of at least 1", file=err)
        return EXIT_USAGE
    platform = load_policy(args.path, err)
    if platform is None:
        return EXIT_USAGE
    owner, intruder = args.teams
    try:
        plan = probe_plan(
            platform,
            owner=owner,
            intruder=intruder,
            run=secrets.token_hex(4),
            roles=_roles(args.member_role),
            timeout=args.timeout,
        )
    except ValueError as exc:
        print(f"{_PROG}: error: {exc}", file=err)
        return EXIT_USAGE
    try:  # SIGTERM (a CI job cancelled) cleans up like Ctrl-C; only the main thread may install a handler
        previous: Any = signal.signal(signal.SIGTERM, _interrupt)
    except ValueError:
        previous = None
    try:
        factory = api_factory or kube_api_factory(args.kubeconfig, args.context)
        runner = Runner(plan=plan, api_factory=factory, timeout=float(args.timeout), err=err)
        observed = run_probe(runner, keep=args.keep)
    except ProbeError as exc:
        print(f"{_PROG}: error: {exc}", file=err)
        return EXIT_CANNOT_RUN
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted (the clean-up ran unless --keep)", file=err)
        return EXIT_CANNOT_RUN
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    results = [verdict(c, observed) for c in plan.checks]
    print(render_json(plan, results) if args.format == "json" else render_text(plan, results), file=out)
    return exit_status(results)
