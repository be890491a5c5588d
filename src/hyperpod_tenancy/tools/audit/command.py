"""``hyperpod-tenancy audit``: what exists against what the platform declares (drift), and how to fix each finding.

``hyperpod-tenancy audit [PATH] [--region R] [--profile P] [--format text|json] [--kubeconfig F] [--context C]
[--skip aws|kubernetes]`` reads the policy (``platform.yaml``), the teams' audit records (SSM, written by their
stacks) and then, read-only: Identity Center permission sets and assignments, the teams' Identity Center roles and
the cluster's EKS access entries, the Studio domains and the Task Governance compute quotas
(:mod:`hyperpod_tenancy.runtime.drift_audit`, the checks the daily Lambda runs too), and the team namespaces, RBAC
bindings, ResourceQuotas and LimitRanges of the cluster (:mod:`._audit_kube`). Each finding names the object,
what the policy expects, what exists and the fix. Exit status: 0 no finding, 1 findings, 2 the audit could not run
(no credentials, an unreadable kubeconfig, an invalid policy, a refused call: one line says what is missing).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "add_parser", "run"]

#: Exit status: nothing differs from the policy.
EXIT_CLEAN = 0
#: Exit status: findings were printed.
EXIT_FINDINGS = 1
#: Exit status: the audit could not run.
EXIT_ERROR = 2
_PROG = "hyperpod-tenancy audit"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``audit`` subcommand to ``commands``."""
    parser = commands.add_parser(
        "audit",
        help="compare what exists (AWS, Kubernetes) with platform.yaml and say how to fix each difference",
        description=(
            "Drift audit: Identity Center, IAM roles, EKS access entries, Studio domains, compute quotas, and the "
            "team namespaces, bindings and quotas of the cluster, against platform.yaml. Read-only."
        ),
    )
    parser.add_argument("path", nargs="?", type=Path, default=Path("platform.yaml"), metavar="PATH")
    parser.add_argument("--region", help="AWS region (default: the policy's)")
    parser.add_argument("--profile", help="AWS profile (default: the environment's credentials)")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="output format (default: text)"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--skip",
        action="append",
        choices=("aws", "kubernetes"),
        default=[],
        help="leave out the AWS or the Kubernetes checks (repeatable)",
    )


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``audit`` with parsed ``args``: findings to ``out``, a failure in one line to ``err``; return the status."""
    from hyperpod_tenancy.runtime.drift_audit import AuditError, Finding  # noqa: PLC0415
    from hyperpod_tenancy.tools._common import load_policy  # noqa: PLC0415

    if {"aws", "kubernetes"} <= set(args.skip):
        print(
            f"{_PROG}: error: --skip aws and --skip kubernetes leave nothing to check; skip one of them at most.",
            file=err,
        )
        return EXIT_ERROR
    platform = load_policy(args.path, err)
    if platform is None:
        return EXIT_ERROR
    findings: list[Finding] = []
    try:
        if "aws" not in args.skip:
            from hyperpod_tenancy.tools.audit.aws import aws_session, run_aws_checks  # noqa: PLC0415

            session = aws_session(profile=args.profile, region=args.region or platform.region)
            findings += run_aws_checks(platform, session=session)
        if "kubernetes" not in args.skip:
            from hyperpod_tenancy.tools.audit.kube import kube_findings, read_live  # noqa: PLC0415
            from hyperpod_tenancy.tools.audit.model import team_stack  # noqa: PLC0415

            live = read_live(kubeconfig=args.kubeconfig, context=args.context)
            stacks = {t.name: team_stack(platform, t.name) for t in platform.hosted_teams}
            findings += kube_findings(platform, live, stack_of=stacks)
    except AuditError as exc:
        print(f"{_PROG}: error: {exc}", file=err)
        return EXIT_ERROR
    if args.format == "json":
        print(
            json.dumps({"findings": [f.to_dict() for f in findings], "count": len(findings)}, indent=2),
            file=out,
        )
    elif findings:
        for finding in findings:
            print(finding.render(), file=out)
        print(
            f"\n{len(findings)} finding(s) on platform {platform.name} (docs/audit.md explains each).",
            file=out,
        )
    else:
        checked = " and ".join(
            name for key, name in (("aws", "AWS"), ("kubernetes", "Kubernetes")) if key not in args.skip
        )
        print(f"No drift: platform {platform.name} matches {args.path} ({checked} checked).", file=out)
    return EXIT_FINDINGS if findings else EXIT_CLEAN
