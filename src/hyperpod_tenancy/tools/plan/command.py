"""``hyperpod-tenancy plan [PATH] [--markdown FILE] [--png FILE] [--month YYYY-MM] [--prices FILE]``.

Prints the tenancy plan of a platform policy (:mod:`hyperpod_tenancy.tools.plan.tenancy_plan`): capacity per instance
type, each team's guarantee, share, sharing, burst ceiling, reclaimable part and GPU-hours at risk per eviction,
the month's cost per team under the billing rule, and every guardrail warning. A table on a terminal, plain text
otherwise; ``--markdown`` and ``--png`` also write the plan as a Markdown page and as a chart (the page links the
chart when both are written to one folder). ``make synth`` writes both beside the cloud assembly.

Exit 0; 1 when the policy is invalid or a file cannot be read or written; 2 on usage errors.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.tools._common import PROG, add_prices_argument, bad_month, load_policy, plain_table

if TYPE_CHECKING:
    from hyperpod_tenancy.tools.plan.tenancy_plan import PlanCost, TenancyPlan

__all__ = ["add_parser", "markdown", "run", "text_lines"]

#: Team rows printed on a terminal before the rest is left to the Markdown page.
TERMINAL_TEAM_ROWS = 25
_EXIT_OK, _EXIT_INVALID = 0, 1


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``plan`` to the command line."""
    plan = commands.add_parser(
        "plan",
        help="print the tenancy plan: capacity, guarantees, bursts, eviction risk, monthly cost, warnings",
        description="Print what each team is guaranteed, how far it can burst, what one eviction may lose and "
        "what its guarantee costs a month under the billing rule; optionally write it as Markdown and PNG.",
    )
    plan.add_argument(
        "path", nargs="?", default="platform.yaml", type=Path, help="policy file (default: platform.yaml)"
    )
    plan.add_argument("--markdown", type=Path, metavar="FILE", help="also write the plan as a Markdown page")
    plan.add_argument("--png", type=Path, metavar="FILE", help="also write the capacity chart as a PNG")
    plan.add_argument(
        "--month",
        metavar="YYYY-MM",
        help="the month to price (billing term, hours); default: this month (UTC)",
    )
    add_prices_argument(plan)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Build the plan, print it and write the files asked for; return the exit status."""
    if bad_month(args.month, err):
        return _EXIT_INVALID
    platform = load_policy(args.path, err)
    if platform is None:
        return _EXIT_INVALID
    # imported here: the chargeback engine and matplotlib load only for this command
    from hyperpod_tenancy.chargeback.prices import PriceTableError, read_prices  # noqa: PLC0415
    from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan  # noqa: PLC0415

    try:
        prices = read_prices(args.prices) if args.prices is not None else None
        plan = build_plan(platform, month=args.month, prices=prices)
    except PriceTableError as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return _EXIT_INVALID
    _print(plan, out)
    try:
        if args.png is not None:
            from hyperpod_tenancy.tools.plan.chart import write_png  # noqa: PLC0415

            write_png(plan, args.png)
        if args.markdown is not None:
            chart = _chart_link(args.markdown, args.png)
            args.markdown.write_text(markdown(plan, chart=chart), encoding="utf-8")
    except OSError as exc:
        print(f"{PROG}: error: cannot write {str(exc.filename)!r}: {exc.strerror or exc}.", file=err)
        return _EXIT_INVALID
    return _EXIT_OK


def _chart_link(page: Path, png: Path | None) -> str | None:
    if png is None:
        return None
    return os.path.relpath(png.resolve(), page.resolve().parent)


# ------------------------------------------------------------------------------------------ figures as text


def _money(value: Decimal) -> str:
    return f"{value:,.2f}"


def _hours(value: Decimal) -> str:
    return f"{value:,.1f}"


def _percent(value: Decimal) -> str:
    return f"{value * 100:.1f} %"


def _capacity_rows(plan: TenancyPlan) -> list[list[str]]:
    rows = [["instance type", "GPUs/instance", "instances", "reserved", "guaranteed", "unallocated"]]
    rows += [
        [
            c.instance_type,
            str(c.gpus_per_instance),
            f"{c.instances:,}",
            f"{c.reserved:,}",
            f"{c.guaranteed:,}",
            f"{c.unallocated:,}",
        ]
        for c in plan.capacities
    ]
    return rows


def _team_rows(plan: TenancyPlan, limit: int | None = None) -> tuple[list[list[str]], int]:
    header = [
        "team",
        "instance type",
        "guaranteed GPUs",
        "share",
        "sharing",
        "burst ceiling",
        "reclaimable",
        "at risk per eviction (GPU-h)",
    ]
    shares = sorted(plan.shares, key=lambda s: (s.instance_type, -s.guaranteed_gpus, s.team))
    shown = shares if limit is None else shares[:limit]
    rows = [header]
    for s in shown:
        risks = ", ".join(
            f"{r.priority_class} {_hours(r.gpu_hours_at_risk)} ({r.checkpoint_minutes} min)" for r in s.risks
        )
        rows.append(
            [
                s.team,
                s.instance_type,
                f"{s.guaranteed_gpus:,}" + "".join(f" + {n:,} {p}" for p, n in sorted(s.partitions.items())),
                _percent(s.share),
                s.sharing.value,
                f"{s.burst_ceiling_gpus:,}",
                f"{s.reclaimable_gpus:,}",
                risks or "-",
            ]
        )
    return rows, len(shares) - len(shown)


def _cost_rows(cost: PlanCost) -> list[list[str]]:
    guaranteed: dict[str, Decimal] = {}
    centers: dict[str, str] = {}
    for row in cost.rows():
        guaranteed[row.team] = guaranteed.get(row.team, Decimal(0)) + row.guaranteed_gpu_hours
        centers.setdefault(row.team, row.cost_center)
    rows = [["team", "cost center", "guaranteed GPU-hours", "USD per month"]]
    rows += [
        [team, centers[team], _hours(guaranteed[team]), _money(total)]
        for team, total in cost.team_totals().items()
    ]
    return rows


def _cost_intro(cost: PlanCost) -> str:
    report = cost.report
    prices = ", ".join(f"{t} {_money(p)}" for t, p in sorted(report.gpu_hour_prices.items()))
    return (
        f"month {cost.month}, rule `{report.rule.value}`, idle owner `{report.idle_owner}`: every team "
        f"running exactly its guarantee all month, nothing borrowed, no node down, at USD per GPU-hour {prices}."
    )


def _warning_lines(plan: TenancyPlan) -> list[str]:
    return [f"[{w.code}] {w.path}: {w.message} Fix: {w.fix}" for w in plan.warnings]


def text_lines(plan: TenancyPlan, *, limit: int | None = TERMINAL_TEAM_ROWS) -> list[str]:
    """Return the plan as plain text lines (what a pipe or a file gets)."""
    lines = [
        f"Tenancy plan of {plan.platform} (cluster {plan.cluster}, {plan.fairness_backend})",
        "capacity per instance type (instances)",
        *plain_table(_capacity_rows(plan), right=(1, 2, 3, 4, 5)),
        "teams (GPUs; burst ceiling = guarantee + what it can borrow; at risk = reclaimable x checkpoint bound)",
    ]
    rows, more = _team_rows(plan, limit)
    lines += plain_table(rows, right=(2, 3, 5, 6))
    if more:
        lines.append(f"  ... and {more:,} more (the Markdown page, --markdown FILE, lists every team)")
    if plan.cost is None:
        lines.append(f"cost: {plan.cost_note}")
    else:
        lines += [
            "cost per team, " + _cost_intro(plan.cost),
            *plain_table(_cost_rows(plan.cost), right=(2, 3)),
        ]
    warnings = _warning_lines(plan)
    lines.append(f"warnings ({len(warnings)})" if warnings else "warnings: none")
    lines += [f"  {w}" for w in warnings]
    return lines


def _print(plan: TenancyPlan, out: TextIO) -> None:
    if not out.isatty() or importlib.util.find_spec("rich") is None:
        for line in text_lines(plan):
            print(line, file=out)
        return
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    console = Console(file=out)
    console.print(
        f"[bold]Tenancy plan of {plan.platform}[/] (cluster {plan.cluster}, {plan.fairness_backend})"
    )

    def table(title: str, rows: Sequence[Sequence[str]], right: Sequence[int]) -> None:
        t = Table(title=title, title_justify="left")
        for i, name in enumerate(rows[0]):
            t.add_column(name, justify="right" if i in right else "left", no_wrap=i == 0)
        for row in rows[1:]:
            t.add_row(*row)
        console.print(t)

    table("Capacity per instance type (instances)", _capacity_rows(plan), (1, 2, 3, 4, 5))
    rows, more = _team_rows(plan, TERMINAL_TEAM_ROWS)
    table("Teams (GPUs)", rows, (2, 3, 5, 6))
    if more:
        console.print(f"... and {more:,} more (the Markdown page, --markdown FILE, lists every team)")
    if plan.cost is None:
        console.print(f"cost: {plan.cost_note}", markup=False, highlight=False)
    else:
        table("Cost per team, " + _cost_intro(plan.cost), _cost_rows(plan.cost), (2, 3))
    for w in _warning_lines(plan):
        console.print(f"[yellow]warning[/] {w}", markup=True, highlight=False)


def _md_table(rows: Sequence[Sequence[str]], right: Sequence[int]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    align = ["---:" if i in right else "---" for i in range(len(rows[0]))]
    return [f"| {' | '.join(cell(c) for c in row)} |" for row in [rows[0], align, *rows[1:]]]


def markdown(plan: TenancyPlan, *, chart: str | None = None) -> str:
    """Return the plan as a Markdown page (every team), linking the chart at the relative path ``chart``."""
    lines = [f"# Tenancy plan of {plan.platform}", ""]
    lines.append(
        f"Cluster `{plan.cluster}`, fairness backend `{plan.fairness_backend}`. Generated by "
        "`hyperpod-tenancy plan` from the policy; every figure follows the rules the scheduler enforces."
    )
    if chart is not None:
        lines += ["", f"![Guarantees, reserve and burst ceilings per instance type]({chart})"]
    lines += ["", "## Capacity per instance type", "", *_md_table(_capacity_rows(plan), (1, 2, 3, 4, 5))]
    lines += [
        "",
        "## Teams",
        "",
        "GPUs. The burst ceiling is the guarantee plus what the team can borrow: its borrowing limit "
        "(`floor(guarantee x borrowLimit / 100)`, or its `absoluteBorrowLimits` amount on the type), bounded by what the other teams lend. All of a burst is "
        "reclaimable: the lenders take it back when their own work returns. At risk is what one reclaim of the "
        "whole burst may lose at each priority class the team may use: the reclaimable GPUs times the class's "
        "checkpoint bound (`maxCheckpointInterval`).",
        "",
    ]
    rows, _ = _team_rows(plan, None)
    lines += _md_table(rows, (2, 3, 5, 6))
    lines += ["", "## Cost per month", ""]
    if plan.cost is None:
        lines.append(f"No cost: {plan.cost_note}.")
    else:
        intro = _cost_intro(plan.cost)
        lines += [intro[:1].upper() + intro[1:], "", *_md_table(_cost_rows(plan.cost), (2, 3))]
    lines += ["", "## Warnings", ""]
    warnings = _warning_lines(plan)
    lines += [f"- {w}" for w in warnings] if warnings else ["None."]
    return "\n".join(lines) + "\n"
