"""``hyperpod-tenancy validate`` and ``guardrails``: a policy checked and summarized, and the guardrail table."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.tools._common import PROG, load_policy, plain_table

if TYPE_CHECKING:
    from hyperpod_tenancy.policy.model import ComputeAllocation, Platform, Team
from hyperpod_tenancy.errors import EXIT_INVALID, EXIT_OK

__all__ = ["add_parser", "run"]


def _guardrails(*, write: Path | None, out: TextIO, err: TextIO) -> int:
    """Print the guardrail table, or rewrite it in ``write`` between its markers.

    Returns:
        0, or 1 when ``write`` cannot be read or has no markers.

    """
    from hyperpod_tenancy.policy import rules  # noqa: PLC0415 - see the imports

    if write is None:
        print(rules.guardrails_markdown(), end="", file=out)
        return EXIT_OK
    try:
        write.write_text(rules.update_readme(write.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"{PROG}: error: cannot update {str(write)!r}: {exc}", file=err)
        return EXIT_INVALID
    return EXIT_OK


def _validate(*, path: Path, baseline: Path | None = None, out: TextIO, err: TextIO) -> int:
    """Validate ``path`` (and compare it with ``baseline``), print the outcome and return the exit status.

    Args:
        path: the policy file.
        baseline: the deployed policy file, to report replacements against.
        out: where the summary goes.
        err: where problems go.

    Returns:
        0 when the policy (and the baseline) are valid, 1 otherwise.

    """
    platform = load_policy(path, err)
    old = load_policy(baseline, err, role="baseline ") if baseline is not None else None
    if platform is None or (baseline is not None and old is None):
        return EXIT_INVALID
    from hyperpod_tenancy.policy.changes import replacement_warnings  # noqa: PLC0415 - see the imports

    replacements = replacement_warnings(old, platform) if old is not None else None
    for line in _summary(platform, source=str(path), replacements=replacements, baseline=baseline):
        print(line, file=out)
    return EXIT_OK


def _summary(
    platform: Platform,
    *,
    source: str,
    replacements: Sequence[PolicyIssue] | None = None,
    baseline: Path | None = None,
) -> list[str]:
    """Return the one-screen summary of a valid platform, one string per line.

    Args:
        platform: the validated policy.
        source: where it was loaded from.
        replacements: replacement warnings against ``baseline``; None when no baseline was given.
        baseline: the baseline file the replacements were computed against.

    Returns:
        The lines to print.

    """
    c = platform.cluster
    lines = [
        f"{source}: valid. Platform {platform.name}, account {platform.account}, region {platform.region}.",
        f"cluster  {c.name}  backend {platform.fairness_backend.value}  Kubernetes {c.kubernetes_version}  "
        f"zones {', '.join(c.availability_zones)}",
        f"         VPC {c.vpc_cidr}  data {c.data_classification}  FSx {c.fsx.deployment_type} "
        f"{c.fsx.storage_capacity_gib} GiB",
        "instance groups",
    ]
    if platform.identity_center_elsewhere:
        lines.insert(
            1,
            f"Identity Center in account {platform.identity_center_account}: the permission sets and their "
            f"assignments; the cluster and every team stack in {platform.account}.",
        )
    for team in platform.teams_in_own_accounts:
        lines.insert(
            1 + platform.identity_center_elsewhere,
            f"Team {team.name} in its own account {platform.team_account(team)}: its data, the role of its pods "
            "and its members' sign-in; its namespace and quota on the cluster.",
        )
    groups = [["name", "type", "count", "reserved", "promisable", "zone"]]
    groups += [
        [
            g.name,
            g.instance_type,
            str(g.count),
            str(g.reserved),
            str(g.quota_capacity),
            g.availability_zone or "-",
        ]
        for g in c.instance_groups
    ]
    lines += _table(groups)
    s = platform.scheduling
    on_off = {True: "on", False: "off"}
    lines.append(
        f"priority classes (weight; * preemptible: must checkpoint)  fair share {on_off[s.fair_share]}, "
        f"idle sharing {on_off[s.idle_resource_sharing]}, checkpoints {s.checkpoint_enforcement.value}"
    )
    lines.append(
        "  " + ", ".join(f"{_class_label(platform, pc.name)} {pc.weight}" for pc in s.priority_classes)
    )
    lines.append("teams")
    rows = [["name", "namespace", "quotas", "sharing", "borrow", "weight", "priority classes"]]
    rows += [_team_row(platform, t) for t in platform.teams]
    lines += _table(rows)
    lines.append("quotas per instance type (promisable = count - reserved)")
    lines += _table(_capacity_rows(platform))
    from hyperpod_tenancy.policy.validation import policy_warnings  # noqa: PLC0415 - see the imports

    lines += _issues("warnings", policy_warnings(platform))
    if replacements is not None:
        lines += _issues(f"replacements vs baseline {baseline}", replacements)
    return lines


def _class_label(platform: Platform, name: str) -> str:
    return f"{name}*" if platform.priority_class(name).preemptible else name


def _borrow_cell(compute: ComputeAllocation) -> str:
    """``50%``, then each absolute limit (``ml.g5.12xlarge: 8 accelerators``)."""
    absolute = [f"{itype}: {amount}" for itype, amount in compute.absolute_borrow_limits.items()]
    return "; ".join([f"{compute.borrow_limit}%", *absolute])


def _team_row(platform: Platform, team: Team) -> list[str]:
    from hyperpod_tenancy.policy import names  # noqa: PLC0415 - see the imports

    hosted = team in platform.hosted_teams
    compute = team.compute
    borrows = platform.scheduling.idle_resource_sharing and compute.sharing.borrows
    return [
        team.name,
        names.namespace(team.name)
        if hosted
        else f"- (dedicated cluster: {platform.team_classification(team)})",
        ", ".join(f"{t}={n}" for t, n in compute.quotas.items()) or "-",
        compute.sharing.value,
        _borrow_cell(compute) if borrows else "-",
        str(compute.fair_share_weight) if platform.scheduling.fair_share else "-",
        ", ".join(_class_label(platform, n) for n in team.allowed_priority_classes),
    ]


def _capacity_rows(platform: Platform) -> list[list[str]]:
    from hyperpod_tenancy.policy.grains import instances_text, quota_instances  # noqa: PLC0415 - see the imports

    rows = [["type", "promised", "promisable", "unpromised", "teams"]]
    for itype in dict.fromkeys(g.instance_type for g in platform.cluster.instance_groups):
        capacity = sum(g.quota_capacity for g in platform.instance_group_for(itype))
        holders = [t for t in platform.hosted_teams if itype in t.compute.quotas]
        promised = sum((quota_instances(platform, t, itype) for t in holders), Fraction(0))
        rows.append(
            [
                itype,
                instances_text(promised),
                str(capacity),
                instances_text(capacity - promised),
                ", ".join(f"{t.name} {t.compute.quotas[itype]}" for t in holders) or "-",
            ]
        )
    return rows


def _issues(title: str, issues: Sequence[PolicyIssue]) -> list[str]:
    if not issues:
        return [f"{title}: none"]
    return [f"{title} ({len(issues)})"] + [f"  {issue}" for issue in issues]


def _table(rows: list[list[str]]) -> list[str]:
    return plain_table(rows)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``validate`` and ``guardrails`` commands."""
    check = commands.add_parser(
        "validate",
        help="validate a platform policy and print a summary",
        description="Validate a platform policy: list every problem (exit 1) or print a summary (exit 0).",
    )
    check.add_argument(
        "path", nargs="?", default="platform.yaml", type=Path, help="policy file (default: platform.yaml)"
    )
    check.add_argument(
        "--baseline",
        metavar="OLD_PATH",
        type=Path,
        help="the deployed policy: report changes that CloudFormation performs as a replacement",
    )
    table = commands.add_parser(
        "guardrails",
        help="print the guardrail table (Markdown) generated from the rule registry",
        description="Print the guardrail table of docs/guardrails.md, generated from the rule registry.",
    )
    table.add_argument(
        "--markdown", action="store_true", help="print the Markdown table (the default and only format)"
    )
    table.add_argument(
        "--write",
        metavar="FILE",
        type=Path,
        help="replace the table between the guardrail markers of FILE (docs/guardrails.md) instead of printing it",
    )


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``validate`` or ``guardrails``."""
    if args.command == "guardrails":
        return _guardrails(write=args.write, out=out, err=err)
    return _validate(path=args.path, baseline=args.baseline, out=out, err=err)
