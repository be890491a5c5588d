"""``hyperpod-tenancy recommend-quotas --usage DIR [PATH] [--month YYYY-MM] [--prices FILE] [--write FILE]``.

Proposes each team's quotas and borrow limit from a month of the chargeback's usage data
(:mod:`hyperpod_tenancy.tools.recommend.engine` computes it) and prints the proposal as a unified diff of
``platform.yaml`` (only the numbers under ``teams[i].compute.quotas`` and ``borrowLimit`` change; comments and
layout survive), the reasoning per team and instance type, and each team's monthly bill under the billing rule
before and after (the tenancy plan's cost of both policies). ``--write FILE`` also writes the proposed policy,
which ``hyperpod-tenancy validate FILE --baseline PATH`` accepts.

Exit 0; 1 when the policy is invalid, the usage folder cannot be read or holds no usage of the month, or a file
cannot be written; 2 on usage errors.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.tools._common import PROG, add_prices_argument, bad_month, load_policy, plain_table

if TYPE_CHECKING:
    from hyperpod_tenancy.tools.recommend import engine as _recommend

__all__ = ["add_parser", "run"]

_EXIT_OK, _EXIT_INVALID = 0, 1


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``recommend-quotas`` to the command line."""
    cmd = commands.add_parser(
        "recommend-quotas",
        help="propose per-team quotas and borrow limits from a month of chargeback usage data",
        description="Propose each team's quotas and borrow limit from what it used, borrowed and waited for in "
        "a month of the chargeback's usage data, within capacity minus reserve; print a platform.yaml diff, the "
        "reasoning and the monthly bill per team before and after.",
    )
    cmd.add_argument(
        "path", nargs="?", default="platform.yaml", type=Path, help="policy file (default: platform.yaml)"
    )
    cmd.add_argument(
        "--usage",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder with clusterqueue/ and node/ (and workload/ for waiting demand), as for `chargeback`",
    )
    cmd.add_argument(
        "--month", metavar="YYYY-MM", help="the month of usage to learn from; default: last month (UTC)"
    )
    add_prices_argument(cmd)
    cmd.add_argument("--write", type=Path, metavar="FILE", help="also write the proposed policy to FILE")


def _last_month(today: dt.date | None = None) -> str:
    day = (today or dt.datetime.now(dt.UTC).date()).replace(day=1) - dt.timedelta(days=1)
    return f"{day.year:04d}-{day.month:02d}"


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Read the usage, propose the quotas, print the diff, reasoning and bill; return the exit status."""
    month = args.month or _last_month()
    if bad_month(month, err):
        return _EXIT_INVALID
    platform = load_policy(args.path, err)
    if platform is None:
        return _EXIT_INVALID
    # imported here: DuckDB, sqlglot and the chargeback engine load only for this command
    from hyperpod_tenancy.chargeback.prices import PriceTableError, read_prices  # noqa: PLC0415
    from hyperpod_tenancy.tools.recommend import engine as _recommend  # noqa: PLC0415

    try:
        prices = read_prices(args.prices) if args.prices is not None else None
        history = _recommend.read_history(platform, usage=args.usage, month=month)
        text = args.path.read_text(encoding="utf-8")
        proposal = _recommend.recommend(platform, history)
        new_text = _recommend.apply_to_yaml(text, proposal)
        new_platform = _recommend.load_text(new_text, source=f"{args.path} (proposed)")
        impact = _recommend.bill_impact(platform, new_platform, month=month, prices=prices)
    except (PriceTableError, _recommend.RecommendError) as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return _EXIT_INVALID
    except OSError as exc:
        print(f"{PROG}: error: cannot read {str(args.path)!r}: {exc.strerror or exc}.", file=err)
        return _EXIT_INVALID
    for line in _report(proposal, history, impact, text=text, new_text=new_text, path=args.path):
        print(line, file=out)
    if args.write is not None:
        try:
            args.write.write_text(new_text, encoding="utf-8")
        except OSError as exc:
            print(
                f"{PROG}: error: cannot write --write {str(args.write)!r}: {exc.strerror or exc}.", file=err
            )
            return _EXIT_INVALID
    return _EXIT_OK


def _report(
    proposal: _recommend.Proposal,
    history: _recommend.History,
    impact: _recommend.BillImpact,
    *,
    text: str,
    new_text: str,
    path: Path,
) -> list[str]:
    lines = [
        f"Quotas from the usage of {history.month} ({history.hours} hours) for {path}",
        f"waiting demand: {history.pending_note}",
        "",
    ]
    diff = list(
        difflib.unified_diff(
            text.splitlines(), new_text.splitlines(), f"a/{path.name}", f"b/{path.name}", lineterm=""
        )
    )
    lines += diff or ["(no change: the history supports the quotas in force)"]
    lines += [
        "",
        "reasoning (GPUs per hour: p50/p95 of use; own = use - borrowed; waiting = pending demand; over new quota = use + waiting - the proposed guarantee, what the borrow limit covers)",
    ]
    rows = [
        [
            "team",
            "instance type",
            "p50 used",
            "p95 used",
            "p95 own+waiting",
            "p95 over new quota",
            "hours at ceiling",
            "waiting GPU-h",
            "quota",
            "borrowLimit",
        ]
    ]
    for r in proposal.reasons:
        rows.append(
            [
                r.team,
                r.instance_type,
                _n(r.p50_used),
                _n(r.p95_used),
                _n(r.p95_own_and_waiting),
                _n(r.p95_borrowed_above),
                f"{r.hours_at_ceiling} of {history.hours}",
                _n(r.waiting_gpu_hours),
                f"{r.current_quota} -> {r.proposed_quota}",
                f"{r.current_borrow_limit}% -> {r.proposed_borrow_limit}%",
            ]
        )
    lines += plain_table(rows, right=(2, 3, 4, 5, 7))
    lines += [f"  {note}" for note in proposal.notes]
    lines += ["", f"monthly bill per team (USD, {impact.description})"]
    if impact.note is not None:
        lines.append(f"  {impact.note}")
    else:
        bill = [["team", "current", "proposed", "difference"]]
        bill += [[t, _usd(a), _usd(b), _usd(b - a, sign=True)] for t, (a, b) in impact.teams.items()]
        lines += plain_table(bill, right=(1, 2, 3))
    return lines


def _n(value: float) -> str:
    return f"{value:,.1f}"


def _usd(value: object, *, sign: bool = False) -> str:
    return f"{value:+,.2f}" if sign else f"{value:,.2f}"
