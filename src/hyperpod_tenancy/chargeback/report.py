"""Renderings of a chargeback :class:`~.model.Report`: JSON, CSV, Markdown and HTML (standard library only).

Every rendering is a pure function of the report: rows sorted by cluster, instance type and team, no time of
rendering, LF line ends, UTF-8. The Lambda and the offline CLI therefore write the same bytes for the
same month. Numbers are rounded only here, half to even. The machine-readable renderings (JSON, CSV) carry
money to cents, GPU-hours to thousandths and prices to ten-thousandths of a dollar per GPU-hour, as plain
numbers with exactly those digits. The renderings for people (Markdown, HTML) print GPU-hours to one decimal
and money to cents, both with thousands separators (``1,234,567.89``), right-aligned in their tables.

The HTML report is one self-contained page: a summary box (the billing rule and the reconciliation), a chart
of what each team is billed (a bar per team on an axis in USD, grouped by cost center, with a subtotal bar per
cost center of more than one row) above the per-team and per-cost-center tables, a legend that says what each
GPU-hour series means, and per instance type an inline SVG chart (guaranteed, borrowed, lent, idle and lost
GPU-hours per team, one column per series, one row per team) above its table. The charts are drawn in pure
Python because the Lambda has no plotting library. A bar is drawn and labelled only where its value is not zero at one
decimal; every label has room of its own, so no two texts overlap. Notes link to the rows they explain and
back.
"""

from __future__ import annotations

import csv
import datetime as dt
import enum
import html
import io
import json
import re
from collections.abc import Container, Iterable, Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from .model import (
    IDLE_ROW,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    LossBasis,
    PreemptionLoss,
    Report,
    SharedCostRule,
    TeamCharge,
)

__all__ = [
    "COLLECTORS",
    "COLLECTOR_NAMES",
    "EXTENSIONS",
    "Format",
    "collection",
    "disallowed",
    "failure",
    "render",
]


class Format(enum.StrEnum):
    """A rendering of the report."""

    JSON = "json"
    CSV = "csv"
    MARKDOWN = "markdown"
    HTML = "html"


#: File extension of each format (``report-2026-07.<ext>``).
EXTENSIONS: dict[Format, str] = {
    Format.JSON: "json",
    Format.CSV: "csv",
    Format.MARKDOWN: "md",
    Format.HTML: "html",
}

_CENT = Decimal("0.01")
_MILLI = Decimal("0.001")
_TENTH = Decimal("0.1")
_PRICE = Decimal("0.0001")

#: TeamCharge fields in column order, and whether each is money (else GPU-hours).
_COLUMNS: tuple[tuple[str, bool], ...] = (
    ("guaranteed_gpu_hours", False),
    ("used_gpu_hours", False),
    ("borrowed_gpu_hours", False),
    ("lent_gpu_hours", False),
    ("idle_gpu_hours", False),
    ("lost_to_preemption_gpu_hours", False),
    ("gpu_charge", True),
    ("lender_credit", True),
    ("shared_charge", True),
    ("direct_charge", True),
    ("total", True),
)


def render(report: Report, fmt: Format | str) -> bytes:
    """Render ``report`` in ``fmt`` (``json``, ``csv``, ``markdown`` or ``html``) as UTF-8 bytes.

    Raises:
        ValueError: an unknown format (the message lists the formats).

    """
    try:
        chosen = Format(fmt)
    except ValueError:
        raise ValueError(f"format {fmt!r}: choose one of {', '.join(f.value for f in Format)}") from None
    renderer = {Format.JSON: _json, Format.CSV: _csv, Format.MARKDOWN: _markdown, Format.HTML: _html}[chosen]
    return renderer(report).encode("utf-8")


def _rows(report: Report) -> list[TeamCharge]:
    return sorted(report.rows, key=lambda r: (r.cluster, r.instance_type, r.team, r.cost_center))


def _money(value: Decimal) -> Decimal:
    return value.quantize(_CENT, rounding=ROUND_HALF_EVEN)


def _hours(value: Decimal) -> Decimal:
    return value.quantize(_MILLI, rounding=ROUND_HALF_EVEN)


def _price(value: Decimal) -> Decimal:
    return value.quantize(_PRICE, rounding=ROUND_HALF_EVEN)


def _unsigned_zero(text: str) -> str:
    """``-0.00`` → ``0.00`` (a negative amount rounded to zero is zero)."""
    return text[1:] if text.startswith("-") and set(text[1:]) <= {".", "0", ","} else text


def _num(value: Decimal, money: bool) -> str:
    """Format a number machine-readably: money to cents, GPU-hours to thousandths, no separators."""
    return _unsigned_zero(format(_money(value) if money else _hours(value), "f"))


def _usd(value: Decimal) -> str:
    """Money for people: cents, thousands separators (``1,234,567.89``)."""
    return _unsigned_zero(format(_money(value), ",f"))


def _gpu_hours(value: Decimal) -> str:
    """GPU-hours for people: one decimal, thousands separators (``17,856.0``)."""
    return _unsigned_zero(format(value.quantize(_TENTH, rounding=ROUND_HALF_EVEN), ",f"))


def _human(value: Decimal, money: bool) -> str:
    return _usd(value) if money else _gpu_hours(value)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


# --- JSON ----------------------------------------------------------------------------------------------


class _Raw(str):
    """A JSON number already formatted (Decimal digits kept exactly)."""


def _dump(value: object, indent: int = 0) -> str:
    pad, inner = "  " * indent, "  " * (indent + 1)
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {_dump(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    if isinstance(value, list | tuple):
        if not value:
            return "[]"
        return "[\n" + ",\n".join(f"{inner}{_dump(v, indent + 1)}" for v in value) + f"\n{pad}]"
    return json.dumps(value, ensure_ascii=False)


def _json(report: Report) -> str:
    rec = report.reconciliation
    document = {
        "schemaVersion": report.schema_version,
        "month": report.month,
        "cluster": report.cluster,
        "billingRule": report.rule.value,
        "idleOwner": report.idle_owner,
        "sharedCosts": report.shared_costs.value,
        **(
            {
                "billingTerm": {
                    "effectiveFrom": report.term.effective_from.isoformat(),
                    "signedOffBy": report.term.signed_off_by,
                    "midQuarterReason": report.term.mid_quarter_reason,
                }
            }
            if report.term is not None
            else {}
        ),
        "prices": [
            {
                "instanceType": itype,
                "usdPerGpuHour": _Raw(format(_price(report.gpu_hour_prices[itype]), "f")),
                "source": report.price_sources[itype].value if itype in report.price_sources else None,
            }
            for itype in sorted(report.gpu_hour_prices)
        ],
        "preemptionLossIsUpperBound": report.preemption_loss_is_upper_bound,
        "reconciliation": {
            "charged": _Raw(_num(rec.charged, True)),
            "bill": None if rec.bill is None else _Raw(_num(rec.bill, True)),
            "difference": None if rec.difference is None else _Raw(_num(rec.difference, True)),
            "flagged": rec.flagged,
            "unknownTeams": list(rec.unknown_teams),
            "failed": rec.failed,
            **(
                {
                    "credits": [
                        {"kind": c.kind, "against": c.name, "usd": _Raw(_num(c.cost, True))}
                        for c in rec.credits
                    ]
                }
                if rec.credits
                else {}
            ),
        },
        "rows": [
            {
                "cluster": r.cluster,
                "team": r.team,
                "costCenter": r.cost_center,
                "instanceType": r.instance_type,
                **{_camel(name): _Raw(_num(getattr(r, name), money)) for name, money in _COLUMNS},
            }
            for r in _rows(report)
        ],
        "preemptionLosses": [
            {
                "cluster": loss.cluster,
                "team": loss.team,
                "instanceType": loss.instance_type,
                "priorityClass": loss.priority_class,
                "evictions": loss.evictions,
                "lostGpuHours": _Raw(_num(loss.lost_gpu_hours, False)),
                "costCenter": loss.cost_center,
                "lostUsd": _Raw(_num(loss.lost_usd, True)),
                "upperBound": loss.upper_bound,
                "basis": [str(basis) for basis in loss.bases],
            }
            for loss in _losses(report)
        ],
        "collectionGaps": [
            {
                "table": gap.table,
                "collector": COLLECTORS[gap.table],
                "start": _rfc3339(gap.start),
                "end": _rfc3339(gap.end),
                "minutes": gap.minutes,
                "hours": [_rfc3339(hour) for hour in gap.hours],
            }
            for gap in report.collection_gaps
        ],
        **(
            {
                "billedPeriods": [
                    {"team": p.team, "start": _rfc3339(p.start), "end": _rfc3339(p.end), "hours": p.hours}
                    for p in report.billed_periods
                ]
            }
            if report.billed_periods
            else {}
        ),
        **(
            {
                "disallowedBorrowing": [
                    {"team": team, "borrowedGpuHours": _Raw(_num(hours, False))}
                    for team, hours in report.disallowed_borrowing
                ]
            }
            if report.disallowed_borrowing
            else {}
        ),
        "notes": list(report.notes),
    }
    return _dump(document) + "\n"


def _rfc3339(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- CSV -----------------------------------------------------------------------------------------------


def _csv(report: Report) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "month",
            "cluster",
            "team",
            "cost_center",
            "instance_type",
            *(name for name, _ in _COLUMNS),
            "billing_rule",
        ]
    )
    for r in _rows(report):
        writer.writerow(
            [
                report.month,
                r.cluster,
                r.team,
                r.cost_center,
                r.instance_type,
                *(_num(getattr(r, name), money) for name, money in _COLUMNS),
                report.rule.value,
            ]
        )
    return out.getvalue()


# --- shared text ---------------------------------------------------------------------------------------


def _losses(report: Report) -> list[PreemptionLoss]:
    return sorted(
        report.preemption_losses, key=lambda p: (p.cluster, p.instance_type, p.team, p.priority_class)
    )


#: How each basis of a preemption loss reads in the tables.
_BASIS_TEXT = {
    LossBasis.MEASURED: "measured",
    LossBasis.DECLARED_INTERVAL: "upper bound: declared checkpoint interval",
    LossBasis.WHOLE_RUN: "whole run: no checkpoint declared",
}


def _basis(loss: PreemptionLoss) -> str:
    return "; ".join(_BASIS_TEXT[basis] for basis in loss.bases)


def _loss_rows(report: Report) -> list[list[str]]:
    return [
        [
            p.instance_type,
            p.team,
            p.priority_class,
            str(p.evictions),
            _gpu_hours(p.lost_gpu_hours),
            _usd(p.lost_usd),
            _basis(p),
        ]
        for p in _losses(report)
    ]


_LOSS_HEADER = [
    "instance type",
    "team",
    "priority class",
    "evictions",
    "lost GPU-hours",
    "lost (USD)",
    "figure",
]
_LOSS_CENTER_HEADER = ["cost center", "evictions", "lost GPU-hours", "lost (USD)"]


def _loss_by_cost_center(report: Report) -> list[tuple[str, int, Decimal, Decimal]]:
    """Preemption loss per cost center: evictions, GPU-hours and their price, sorted by cost center."""
    sums: dict[str, tuple[int, Decimal, Decimal]] = {}
    for p in report.preemption_losses:
        n, hours, usd = sums.get(p.cost_center, (0, Decimal(0), Decimal(0)))
        sums[p.cost_center] = (n + p.evictions, hours + p.lost_gpu_hours, usd + p.lost_usd)
    return [(center, n, hours, usd) for center, (n, hours, usd) in sorted(sums.items())]


def _loss_center_rows(report: Report) -> list[list[str]]:
    centers = _loss_by_cost_center(report)
    return [
        *([c, str(n), _gpu_hours(h), _usd(u)] for c, n, h, u in centers),
        [
            "all",
            str(sum(n for _, n, _, _ in centers)),
            _gpu_hours(sum((h for _, _, h, _ in centers), Decimal(0))),
            _usd(sum((u for _, _, _, u in centers), Decimal(0))),
        ],
    ]


def disallowed(report: Report) -> str | None:
    """Return the line that flags borrowing the policy does not allow, or ``None`` when there is none."""
    if not report.disallowed_borrowing:
        return None
    teams = ", ".join(
        f"{team} ({_gpu_hours(hours)} GPU-hours)" for team, hours in report.disallowed_borrowing
    )
    return (
        f"BORROWING THE POLICY DOES NOT ALLOW: {teams}: their sharing is not lend-and-borrow, yet their usage shows "
        "borrowed GPU-hours (billed as recorded; see the notes)."
    )


def _cost_center_totals(report: Report) -> list[tuple[str, Decimal]]:
    """Each cost center's total (its teams' rows, its idle and shared rows), sorted: they add up to the report."""
    totals: dict[str, Decimal] = {}
    for r in report.rows:
        totals[r.cost_center] = totals.get(r.cost_center, Decimal(0)) + r.total
    return sorted(totals.items())


def _use_of_guarantee(report: Report) -> dict[str, str]:
    """Team → the GPU-hours it used as a share of its guarantee (``-`` without a guarantee)."""
    used: dict[str, tuple[Decimal, Decimal]] = {}
    for r in report.rows:
        if r.team in {IDLE_ROW, SHARED_COSTS_ROW}:
            continue
        u, g = used.get(r.team, (Decimal(0), Decimal(0)))
        used[r.team] = (u + r.used_gpu_hours, g + r.guaranteed_gpu_hours)
    return {
        team: f"{(u / g * 100).quantize(Decimal('0.1'), rounding=ROUND_HALF_EVEN):,} %" if g else "-"
        for team, (u, g) in used.items()
    }


_CENTER_HEADER = ["cost center", "total (USD)"]


def _team_totals(report: Report) -> list[tuple[str, str, Decimal]]:
    totals: dict[tuple[str, str], Decimal] = {}
    for r in report.rows:
        totals[(r.team, r.cost_center)] = totals.get((r.team, r.cost_center), Decimal(0)) + r.total
    return [(team, center, total) for (team, center), total in sorted(totals.items())]


def failure(report: Report) -> str | None:
    """Return the line that says why the report does not reconcile (its header), or ``None`` when it does."""
    rec = report.reconciliation
    if not rec.failed:
        return None
    reasons = []
    if rec.flagged and rec.bill is not None:
        reasons.append(
            f"the rows charge ${_usd(rec.charged)} against a bill of ${_usd(rec.bill)} before credits and refunds, "
            f"a difference of ${_usd(rec.difference or Decimal(0))}{_share(rec.difference, rec.bill)}, above the "
            f"tolerance of {_percent(rec.tolerance)} %. Compare the node inventory's instance-hours with the "
            "CUR's (see the notes) before sending this report."
        )
    if rec.unknown_teams and (rec.unknown_teams_failed or not rec.flagged):
        reasons.append(
            f"{', '.join(rec.unknown_teams)} "
            f"{'is no team' if len(rec.unknown_teams) == 1 else 'are no teams'} of the configuration yet ran on the "
            "cluster or carry its team tag on bill lines, so their GPU-hours raised the borrowing of known teams. "
            "Add each to the platform (its TeamTenant), or set "
            "`chargeback.unknownTeams: bill` to bill such namespaces under their own name."
        )
    return "RECONCILIATION FAILED: " + " Also: ".join(reasons)


def _percent(fraction: Decimal) -> Decimal:
    """Return a fraction as a percentage to hundredths (0.005 → 0.50)."""
    return (fraction * 100).quantize(_CENT, rounding=ROUND_HALF_EVEN)


def _share(difference: Decimal | None, bill: Decimal) -> str:
    """`` (0.99 %)``: the difference as a share of the bill, or nothing for a bill of zero."""
    return "" if not bill else f" ({_percent(abs(difference or Decimal(0)) / abs(bill))} %)"


#: The billed-periods table: teams whose quota did not exist all month, and the hours their guarantee is billed.
_PERIOD_HEADER = ["team", "from (UTC)", "to (UTC)", "hours billed"]


def _period_rows(report: Report) -> list[list[str]]:
    return [
        [p.team, f"{p.start:%Y-%m-%d %H:%M}", f"{p.end:%Y-%m-%d %H:%M}", str(p.hours)]
        for p in report.billed_periods
    ]


#: Kind of a credit line → how the report names it.
_CREDIT_KIND = {"credit": "credit", "refund": "refund"}
_CREDIT_HEADER = ["kind", "against", "USD"]


def _credit_rows(report: Report) -> list[list[str]]:
    return [
        [_CREDIT_KIND.get(c.kind, c.kind), c.name, _usd(_money(c.cost))]
        for c in report.reconciliation.credits
    ]


def _credit_total(report: Report) -> Decimal:
    return _money(sum((c.cost for c in report.reconciliation.credits), Decimal(0)))


#: Table of a collection gap → the collector that writes it.
COLLECTOR_NAMES = {"node": "node inventory", "heartdub": "usage-report operator"}
#: Table of a collection gap → the collector and what it writes, as the report's gap table names it.
COLLECTORS = {
    "node": f"{COLLECTOR_NAMES['node']} (raw/node/)",
    "heartdub": f"{COLLECTOR_NAMES['heartdub']} (its heartbeat, raw/heartdub/; it writes the clusterqueue snapshots)",
}


def _gap_rows(report: Report) -> list[list[str]]:
    return [
        [
            COLLECTORS[gap.table],
            f"{gap.start:%Y-%m-%d %H:%M}",
            f"{gap.end:%Y-%m-%d %H:%M}",
            f"{gap.minutes // 60} h {gap.minutes % 60:02d} min",
            str(len(gap.hours)),
        ]
        for gap in report.collection_gaps
    ]


_GAP_HEADER = ["collector", "from (UTC)", "to (UTC)", "length", "clock hours"]


def collection(report: Report) -> str:
    """Return the report's line on collection: complete, or how many gaps, how long, which collectors."""
    gaps = report.collection_gaps
    if not gaps:
        return "complete: no collector stopped for longer than its threshold"
    stopped = sorted({COLLECTOR_NAMES[g.table] for g in gaps})
    minutes = sum(g.minutes for g in gaps)
    return (
        f"{len(gaps)} gap{'s' if len(gaps) != 1 else ''} ({minutes // 60} h {minutes % 60:02d} min; "
        f"{', '.join(stopped)}): each is billed as the last snapshot before it, held until the next; see "
        "Collection gaps"
    )


#: What each billing rule means, as the summary states it.
_RULE_TEXT = {
    BillingRule.RESERVATION: (
        "each team pays its guaranteed quota whether it used it or not, plus what it borrowed; a lender is "
        "credited for the idle guaranteed capacity other teams borrowed from it"
    ),
    BillingRule.USAGE: "each team pays the GPU-hours it ran, on its own quota and borrowed alike",
}


def _term_text(report: Report) -> str:
    """Return the term in force: since when, who signed it off, and why it starts mid-quarter if it does."""
    term = report.term
    if term is None:
        return "not recorded"
    signed = f"signed off by {term.signed_off_by}" if term.signed_off_by else "sign-off not recorded"
    text = f"in force since {term.effective_from.isoformat()}, {signed}"
    if term.mid_quarter_reason:
        text += f"; starts mid-quarter: {term.mid_quarter_reason}"
    return text


def _summary_lines(report: Report) -> list[tuple[str, str]]:
    rec = report.reconciliation
    prices = ", ".join(
        f"{itype} ${_price(report.gpu_hour_prices[itype])}/GPU-hour"
        f" ({report.price_sources[itype].value if itype in report.price_sources else 'unknown'})"
        for itype in sorted(report.gpu_hour_prices)
    )
    if rec.bill is None:
        reconciled = f"charged ${_usd(rec.charged)}; no bill (no CUR): not reconciled"
    else:
        verdict = (
            f"FLAGGED: the mismatch exceeds the tolerance of {_percent(rec.tolerance)} %"
            if rec.flagged
            else "within tolerance"
        )
        before = " before credits and refunds" if rec.credits else ""
        reconciled = (
            f"charged ${_usd(rec.charged)} against a bill of ${_usd(rec.bill)}{before}; "
            f"difference ${_usd(rec.difference or Decimal(0))}{_share(rec.difference, rec.bill)}, {verdict}"
        )
        if rec.credits:
            reconciled += (
                f"; credits and refunds ${_usd(_credit_total(report))} (listed below, allocated to no team): "
                f"the bill after them is ${_usd(_money(rec.bill + _credit_total(report)))}"
            )
    loss = (
        "upper bound (no last-checkpoint time collected for some evictions: the declared checkpoint interval, or the "
        "whole run since admission where none was declared)"
        if report.preemption_loss_is_upper_bound
        else "measured from the last checkpoint before each eviction"
    )
    idle_owner = "split by guarantee" if report.idle_owner == SHARED else f"charged to {report.idle_owner}"
    others = "the cluster's other bill lines (FSx, EKS, system nodes, NAT, Prometheus, this pipeline)"
    if report.shared_costs is SharedCostRule.IDLE_OWNER and report.idle_owner != SHARED:
        shared = f"{SHARED_COSTS_ROW} is {others}, charged to {report.idle_owner}"
    else:
        shared = f"{others} are in each team's shared column, split by guarantee"
    rows = (
        f"{IDLE_ROW} is capacity no team's quota covers (reserved, unallocated and recovering nodes), "
        f"{idle_owner}; {shared}"
    )
    return [
        ("Billing rule", f"{report.rule.value}: {_RULE_TEXT[report.rule]}"),
        ("Billing term", _term_text(report)),
        ("Idle owner", report.idle_owner),
        ("Rows", rows),
        ("Shared costs", report.shared_costs.value),
        ("Prices", prices or "none"),
        ("Reconciliation", reconciled),
        ("Preemption loss", loss),
        ("Collection", collection(report)),
    ]


# --- notes and the rows they explain ---------------------------------------------------------------------

#: Short header of each :data:`_COLUMNS` field in the HTML tables (the unit is in the group header above).
_HEADERS: dict[str, str] = {
    "guaranteed_gpu_hours": "guaranteed",
    "used_gpu_hours": "used",
    "borrowed_gpu_hours": "borrowed",
    "lent_gpu_hours": "lent",
    "idle_gpu_hours": "idle",
    "lost_to_preemption_gpu_hours": "lost",
    "gpu_charge": "GPU charge",
    "lender_credit": "lender credit",
    "shared_charge": "shared",
    "direct_charge": "direct",
    "total": "total",
}


def _column_label(name: str, money: bool) -> str:
    return f"{_HEADERS[name]} ({'USD' if money else 'GPU-hours'})"


def _note_rows(report: Report) -> list[tuple[list[TeamCharge], list[str]]]:
    """For each note, the rows it explains and the instance types it is about.

    A note names a team quoted (``'team-002'``, as the engine writes it) and an instance type as its subject
    (``ml.p5.48xlarge: ...``); an unquoted word is never taken for a team name.
    """
    rows = _rows(report)
    itypes = sorted({r.instance_type for r in rows})
    found: list[tuple[list[TeamCharge], list[str]]] = []
    for note in report.notes:
        teams = {r.team for r in rows if f"'{r.team}'" in note or f'"{r.team}"' in note}
        subjects = [t for t in itypes if note.startswith(f"{t}:")]
        found.append(([r for r in rows if r.team in teams], subjects))
    return found


def _row_notes(report: Report) -> dict[int, list[int]]:
    """``id(row)`` → the 1-based numbers of the notes that explain it."""
    marks: dict[int, list[int]] = {}
    for number, (rows, _) in enumerate(_note_rows(report), start=1):
        for r in rows:
            marks.setdefault(id(r), []).append(number)
    return marks


def _type_notes(report: Report) -> dict[str, list[int]]:
    """Instance type → the 1-based numbers of the notes about it."""
    marks: dict[str, list[int]] = {}
    for number, (_, subjects) in enumerate(_note_rows(report), start=1):
        for itype in subjects:
            marks.setdefault(itype, []).append(number)
    return marks


# --- Markdown ------------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], right: int, upto: int | None = None
) -> list[str]:
    """Lay out a table whose columns ``right`` up to ``upto`` (default: the last) are right-aligned numbers."""
    end = len(header) if upto is None else upto
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---:" if right <= i < end else "---" for i in range(len(header))) + " |")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _md_marks(numbers: Sequence[int]) -> str:
    return "".join(f" [note {n}]" for n in numbers)


def _markdown(report: Report) -> str:
    lines = [f"# Chargeback {report.month} — cluster {report.cluster}", ""]
    for flag in (failure(report), disallowed(report)):
        if flag is not None:
            lines += [f"> **{_md_cell(flag)}**", ""]
    lines += [f"- **{label}:** {_md_cell(value)}" for label, value in _summary_lines(report)]
    lines += ["", "## Per team", ""]
    totals = _team_totals(report)
    use = _use_of_guarantee(report)
    lines += _md_table(
        ["team", "cost center", "used of guarantee", "total (USD)"],
        [
            *([team, center, use.get(team, "-"), _usd(total)] for team, center, total in totals),
            ["**all rows**", "", "", f"**{_usd(sum((t for _, _, t in totals), Decimal(0)))}**"],
        ],
        right=2,
    )
    centers = _cost_center_totals(report)
    lines += ["", "## Per cost center", ""]
    lines += _md_table(
        _CENTER_HEADER,
        [
            *([center, _usd(total)] for center, total in centers),
            ["**all**", f"**{_usd(sum((t for _, t in centers), Decimal(0)))}**"],
        ],
        right=1,
    )
    marks = _row_notes(report)
    lines += ["", "## Per team and instance type", ""]
    header = ["instance type", "team", "cost center", *(_column_label(n, m) for n, m in _COLUMNS)]
    lines += _md_table(
        header,
        (
            [
                r.instance_type,
                r.team + _md_marks(marks.get(id(r), [])),
                r.cost_center,
                *(_human(getattr(r, n), m) for n, m in _COLUMNS),
            ]
            for r in _rows(report)
        ),
        right=3,
    )
    if report.billed_periods:
        lines += ["", "## Billed periods", ""]
        lines += _md_table(_PERIOD_HEADER, _period_rows(report), right=3)
    if report.reconciliation.credits:
        lines += ["", "## Credits and refunds", ""]
        lines += _md_table(
            _CREDIT_HEADER,
            [*_credit_rows(report), ["**all**", "", f"**{_usd(_credit_total(report))}**"]],
            right=2,
        )
    if report.preemption_losses:
        lines += ["", "## Preemption loss per priority class", ""]
        lines += _md_table(_LOSS_HEADER, _loss_rows(report), right=3, upto=6)
        lines += ["", "## Preemption loss per cost center", ""]
        lines += _md_table(_LOSS_CENTER_HEADER, _loss_center_rows(report), right=1)
    if report.collection_gaps:
        lines += ["", "## Collection gaps", ""]
        lines += _md_table(_GAP_HEADER, _gap_rows(report), right=3)
    if report.notes:
        lines += ["", "## Notes", ""]
        lines += [f"{number}. {_md_cell(note)}" for number, note in enumerate(report.notes, start=1)]
    return "\n".join(lines) + "\n"


# --- HTML ----------------------------------------------------------------------------------------------

#: The chart's series: label, TeamCharge field, colour.
_SERIES = (
    ("guaranteed", "guaranteed_gpu_hours", "#4e79a7"),
    ("borrowed", "borrowed_gpu_hours", "#f28e2b"),
    ("lent", "lent_gpu_hours", "#59a14f"),
    ("idle", "idle_gpu_hours", "#9c9c9c"),
    ("lost", "lost_to_preemption_gpu_hours", "#e15759"),
)
#: Chart geometry (px): font size, row pitch, bar height, bar track of each column, gap between columns.
_FONT, _ROW, _BAR, _COL_GAP, _HEAD = 12, 22, 12, 16, 28
#: The chart's width (px, within a laptop window's page) and the bounds of a column's bar track: the tracks
#: take what the team names and the value labels leave.
_CHART_W, _TRACK_MIN, _TRACK_MAX = 1160, 80, 200
#: Advance widths in ems of DejaVu Sans (Debian's sans-serif, and wider than the sans-serif fonts of other
#: systems), rounded up: the room reserved for a text in the chart always holds it.
_ADVANCE = {
    **dict.fromkeys("0123456789", 0.64),
    **dict.fromkeys(",.:; ", 0.32),
    **dict.fromkeys("-()[]", 0.40),
    **dict.fromkeys("fijlrt", 0.42),
    **dict.fromkeys("mw", 0.98),
    **dict.fromkeys("abcdeghknopqsuvxyz", 0.64),
}
#: Any other character (capitals, symbols, other scripts).
_WIDE = 1.0

_CSS = """body{font-family:system-ui,"DejaVu Sans",sans-serif;margin:1.5rem;color:#222;line-height:1.4}
h1{font-size:1.6rem}h2{font-size:1.25rem;margin-top:2rem}
table{border-collapse:collapse;margin:.75rem 0;font-size:.875rem}th,td{border:1px solid #ccc;padding:.25rem .45rem;vertical-align:top}
th{background:#f4f4f4;text-align:left}th.n,td.n{text-align:right;font-variant-numeric:tabular-nums}td.n{white-space:nowrap}
td.team,th.team{white-space:nowrap}tbody tr:nth-child(even){background:#fafafa}
tfoot td{font-weight:600;border-top:2px solid #888}tr:target,li:target,h2:target{background:#fff3c4}
.flagged{color:#b00020;font-weight:bold}
.summary{border:2px solid #4e79a7;border-radius:6px;background:#f5f8fc;padding:.75rem 1.25rem;margin:1rem 0;max-width:64rem}
.summary h2{margin:0 0 .5rem}.summary table{margin:.5rem 0;background:#fff}
dl.facts{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3rem 1rem;margin:.5rem 0}
dl.facts dt{font-weight:600}dl.facts dd{margin:0}
.legend{max-width:64rem}.legend dl{display:grid;grid-template-columns:max-content minmax(0,1fr);gap:.3rem .75rem}
.legend dt{font-weight:600;white-space:nowrap}.legend dd{margin:0}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.4rem;vertical-align:-.05rem}
sup{line-height:0}a.note{text-decoration:none;padding:0 .1rem}
svg.chart{display:block;margin:.5rem 0;max-width:100%;height:auto}svg.chart text{font-family:system-ui,"DejaVu Sans",sans-serif}
.caption{color:#555;font-size:.9rem;margin:.25rem 0}"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _width(text: str, size: float = _FONT) -> float:
    """Bound from above the width of ``text`` at ``size`` px in the chart's font."""
    return round(sum(_ADVANCE.get(c, _WIDE) for c in text) * size * 1.05, 1)


class _Ids:
    """Unique HTML ids derived from names (``(idle)`` on ``ml.p5.48xlarge`` → ``row-ml-p5-48xlarge-idle``)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._given: dict[tuple[str, ...], str] = {}

    def __call__(self, prefix: str, *names: str) -> str:
        key = (prefix, *names)
        if key not in self._given:
            base = "-".join(
                [prefix, *(re.sub(r"[^a-z0-9]+", "-", n.lower()).strip("-") or "x" for n in names)]
            )
            candidate, n = base, 2
            while candidate in self._used:
                candidate, n = f"{base}-{n}", n + 1
            self._used.add(candidate)
            self._given[key] = candidate
        return self._given[key]


def _marks(numbers: Sequence[int]) -> str:
    return "".join(
        f'<sup><a class="note" href="#note-{n}" aria-label="note {n}">[{n}]</a></sup>' for n in numbers
    )


def _drawn(value: Decimal) -> bool:
    """Whether a value gets a bar and a label: not zero at one decimal (a ``0.0`` label says nothing)."""
    return value.quantize(_TENTH, rounding=ROUND_HALF_EVEN) > 0


def _chart(instance_type: str, rows: Sequence[TeamCharge]) -> str:
    """One row per team, one column per series on one scale; a bar and its label only where not zero."""
    values = [[Decimal(getattr(r, field)) for _, field, _ in _SERIES] for r in rows]
    peak = max((v for row in values for v in row), default=Decimal(0))
    names = max((_width(r.team) for r in rows), default=0.0)
    labels = max((_width(_gpu_hours(v)) for row in values for v in row if _drawn(v)), default=0.0)
    heads = max(_width(label) + _FONT + 4 for label, _, _ in _SERIES)
    left = round(names + 12, 1)
    room = (_CHART_W - left) / len(_SERIES) - _COL_GAP - 4 - labels
    track = int(min(max(room, _TRACK_MIN), _TRACK_MAX))
    scale = Decimal(track) / peak if peak > 0 else Decimal(0)
    column = max(float(track) + 4 + labels, heads) + _COL_GAP
    width = round(left + len(_SERIES) * column, 1)
    height = _HEAD + len(rows) * _ROW + 4
    title = f"GPU-hours per team on {instance_type}"
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}" font-size="{_FONT}">',
        f"<title>{_e(title)}</title>",
    ]
    for i, (label, _, color) in enumerate(_SERIES):
        x = round(left + i * column, 1)
        parts.append(
            f'<g class="head"><rect x="{x}" y="6" width="{_FONT - 2}" height="{_FONT - 2}" fill="{color}"/>'
            f'<text x="{x + _FONT + 2}" y="{6 + _FONT - 2}">{label}</text></g>'
        )
    for j, (r, row) in enumerate(zip(rows, values, strict=True)):
        top = _HEAD + j * _ROW
        base = top + (_ROW + _FONT) // 2 - 2
        parts.append(f'<text class="team" x="{left - 12}" y="{base}" text-anchor="end">{_e(r.team)}</text>')
        for i, ((label, _, color), value) in enumerate(zip(_SERIES, row, strict=True)):
            if not _drawn(value):
                continue
            x = round(left + i * column, 1)
            length = max(Decimal(1), (value * scale).quantize(_TENTH, rounding=ROUND_HALF_EVEN))
            y = top + (_ROW - _BAR) // 2
            parts.append(
                f'<g class="bar"><rect x="{x}" y="{y}" width="{length}" height="{_BAR}" fill="{color}">'
                f"<title>{_e(r.team)} {label}: {_gpu_hours(value)} GPU-hours</title></rect>"
                f'<text class="value" x="{round(x + float(length) + 4, 1)}" y="{base}">{_gpu_hours(value)}</text></g>'
            )
    parts.append("</svg>")
    return "\n".join(parts)


def _dollars(value: Decimal) -> str:
    """Money in the charts: the currency sign, cents, thousands separators (``$1,234.56``, ``-$15.00``)."""
    text = _usd(value)
    return f"-${text[1:]}" if text.startswith("-") else f"${text}"


def _tick_label(value: Decimal) -> str:
    """Write an axis tick in dollars: whole dollars when the tick is whole (``$50,000``), else cents."""
    return _dollars(value) if value != value.to_integral_value() else _dollars(value).removesuffix(".00")


def _ticks(low: Decimal, high: Decimal, room: float, widest: float) -> list[Decimal]:
    """Return evenly spaced round ticks (1, 2, 2.5 or 5 times a power of ten) spanning ``low`` to ``high``.

    As many as fit ``room`` px with labels ``widest`` px wide apart, at most six intervals.
    """
    power = Decimal(10) ** ((high - low).adjusted() - 1)
    for step in (m * power * 10**k for k in range(3) for m in (1, 2, Decimal("2.5"), 5)):
        first = (low / step).to_integral_value(rounding=ROUND_FLOOR) * step
        last = (high / step).to_integral_value(rounding=ROUND_CEILING) * step
        count = int((last - first) / step)
        if count <= 6 and room / count >= widest + 12:
            return [first + step * i for i in range(count + 1)]
    return [low, high]


#: The money chart's bar colours (distinct from the GPU-hour series) and its key's labels.
_TEAM_FILL, _SUBTOTAL_FILL = "#76b7b2", "#2f6b66"
_TEAM_KEY, _SUBTOTAL_KEY = "billed to the team (USD)", "cost center subtotal (USD)"
#: How much wider bold text is than regular, at most (DejaVu Sans Bold).
_BOLD = 1.15


def _money_rows(report: Report) -> list[tuple[str, str, str, Decimal]]:
    """Return the money chart's rows grouped by cost center: (kind, name, cost center, amount).

    A subtotal follows the rows of a cost center that has more than one.
    """
    subtotal = dict(_cost_center_totals(report))
    rows: list[tuple[str, str, str, Decimal]] = []
    for center in sorted(subtotal):
        members = [(team, total) for team, c, total in _team_totals(report) if c == center]
        rows += [("team", team, center, total) for team, total in members]
        if len(members) > 1:
            rows.append(("subtotal", "subtotal", center, subtotal[center]))
    return rows


def _money_key(left: float, subtotals: bool) -> list[str]:
    """Draw the money chart's key in its header row, from ``left``: the colour of each kind of bar drawn."""
    parts, x = [], left
    for text, fill in ((_TEAM_KEY, _TEAM_FILL), (_SUBTOTAL_KEY, _SUBTOTAL_FILL))[: 2 if subtotals else 1]:
        parts.append(
            f'<g class="key"><rect x="{x}" y="6" width="{_FONT - 2}" height="{_FONT - 2}" fill="{fill}"/>'
            f'<text x="{x + _FONT + 2}" y="{6 + _FONT - 2}">{_e(text)}</text></g>'
        )
        x = round(x + _FONT + 2 + _width(text) + 16, 1)
    return parts


def _money_chart(report: Report, ids: _Ids) -> str:
    """Draw what each team is billed in USD, grouped by cost center, on one axis in dollars.

    A bar runs from zero to each amount, its figure beside it; a cost center's subtotal is under its teams.
    """
    rows = _money_rows(report)
    amounts = [amount for _, _, _, amount in rows]
    labels = [_dollars(a) for a in amounts]
    low, high = min([Decimal(0), *amounts]), max([Decimal(0), *amounts])
    if low == high:
        high = Decimal(1)
    bold = [_BOLD if kind == "subtotal" else 1.0 for kind, _, _, _ in rows]
    centers_w = max([_width("cost center"), *(_width(c) for _, _, c, _ in rows)])
    names_w = max([_width("team"), *(_width(n) * b for (_, n, _, _), b in zip(rows, bold, strict=True))])
    label_w = max(_width(t) * b for t, b in zip(labels, bold, strict=True))
    names_x = round(4 + centers_w + 12, 1)
    left = round(names_x + names_w + 12 + (label_w + 4 if low < 0 else 0), 1)
    track = min(max(_CHART_W - left - label_w - 8, 2 * _TRACK_MAX), 3 * _TRACK_MAX)
    widest = max(_width(_tick_label(v)) for v in (low, high)) + _width("$0")
    ticks = _ticks(low, high, track, widest)
    scale = track / float(ticks[-1] - ticks[0])

    def x(value: Decimal) -> float:
        return round(left + float(value - ticks[0]) * scale, 1)

    axis_y = _HEAD + len(rows) * _ROW + 4
    height = axis_y + 2 * _FONT + 28
    width = round(max(left + track + 4 + label_w, left + track + widest / 2) + 8, 1)
    title_id, desc_id = ids("money", "title"), ids("money", "desc")
    title = "Billed per team and cost center (USD)"
    total = sum((total for _, _, total in _team_totals(report)), Decimal(0))
    desc = (
        f"{report.month}, cluster {report.cluster}: one bar per team from zero to what it is billed in USD, the "
        "figures of the Per team table, grouped by cost center; a cost center of more than one row has a "
        f"subtotal bar under its rows. The bars add up to the {_dollars(total)} the rows charge."
    )
    parts = [
        f'<svg class="chart money" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="{title_id} {desc_id}" font-size="{_FONT}">',
        f'<title id="{title_id}">{_e(title)}</title>',
        f'<desc id="{desc_id}">{_e(desc)}</desc>',
        f'<text class="head" x="4" y="{6 + _FONT - 2}">cost center</text>',
        f'<text class="head" x="{names_x}" y="{6 + _FONT - 2}">team</text>',
    ]
    parts += _money_key(left, any(kind == "subtotal" for kind, _, _, _ in rows))
    grid = [
        f'<line x1="{x(v)}" y1="{_HEAD - 2}" x2="{x(v)}" y2="{axis_y}" stroke="{"#888" if v == 0 else "#e3e3e3"}"/>'
        for v in ticks
    ]
    parts.append('<g class="grid">' + "".join(grid) + "</g>")
    previous = None
    for j, ((kind, name, center, amount), label) in enumerate(zip(rows, labels, strict=True)):
        top = _HEAD + j * _ROW
        base = top + (_ROW + _FONT) // 2 - 2
        if center != previous:
            if previous is not None:
                parts.append(f'<line x1="4" y1="{top}" x2="{width - 4}" y2="{top}" stroke="#ccc"/>')
            parts.append(f'<text class="center" x="4" y="{base}">{_e(center)}</text>')
            previous = center
        weight = ' font-weight="bold"' if kind == "subtotal" else ""
        fill = _SUBTOTAL_FILL if kind == "subtotal" else _TEAM_FILL
        start, end = sorted((x(Decimal(0)), x(amount)))
        what = f"cost center {center} subtotal" if kind == "subtotal" else f"{name} (cost center {center})"
        bar = (
            f'<rect x="{start}" y="{top + (_ROW - _BAR) // 2}" width="{round(end - start, 1)}" height="{_BAR}" '
            f'fill="{fill}"><title>{_e(what)}: {label}</title></rect>'
            if end > start
            else ""
        )
        at, anchor = (end + 4, "start") if amount >= 0 else (start - 4, "end")
        parts.append(
            f'<g class="amount {kind}" data-name="{_e(name)}" data-cost-center="{_e(center)}">'
            f'<text class="name" x="{names_x}" y="{base}"{weight}>{_e(name)}</text>{bar}'
            f'<text class="amount" x="{round(at, 1)}" y="{base}" text-anchor="{anchor}"{weight}>{label}</text></g>'
        )
    axis = [
        f'<line x1="{left}" y1="{axis_y}" x2="{x(ticks[-1])}" y2="{axis_y}" stroke="#444"/>',
        *(
            f'<line x1="{x(v)}" y1="{axis_y}" x2="{x(v)}" y2="{axis_y + 4}" stroke="#444"/>'
            f'<text class="tick" x="{x(v)}" y="{axis_y + 6 + _FONT}" text-anchor="middle">{_tick_label(v)}</text>'
            for v in ticks
        ),
        f'<text class="axis-title" x="{round(left + track / 2, 1)}" y="{axis_y + 2 * _FONT + 18}" '
        'text-anchor="middle">billed amount (USD)</text>',
    ]
    parts.append('<g class="axis">' + "".join(axis) + "</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _legend(report: Report) -> list[str]:
    """Say what each series of the charts (and each GPU-hour column of the tables) means."""
    if report.idle_owner == SHARED:
        owner = "split among the teams by guarantee"
    else:
        owner = f"paid by {report.idle_owner}"
    idle = (
        "idle guaranteed GPU-hours nobody borrowed, which the team pays under the reservation rule"
        if report.rule is BillingRule.RESERVATION
        else "none on a team's row: under the usage rule a team pays only what it ran"
    )
    lost = (
        "GPU-hours of work evictions threw away (the run since the last checkpoint before each eviction"
        + (
            "; an upper bound where no checkpoint time was collected)"
            if report.preemption_loss_is_upper_bound
            else ")"
        )
    )
    meaning = {
        "guaranteed": "the team's quota over the month: the GPU-hours reserved for it",
        "borrowed": "GPU-hours the team ran beyond its quota, on other teams' idle guarantee or unreserved capacity",
        "lent": (
            f"idle guaranteed GPU-hours of the team that other teams borrowed; on the {IDLE_ROW} row, unreserved "
            "capacity borrowers ran on"
        ),
        "idle": f"{idle}; on the {IDLE_ROW} row, capacity no quota covers that nobody ran on, {owner}",
        "lost": f"{lost}; part of used",
    }
    lines = ['<section class="legend" aria-label="Legend">', "<h2>Reading the charts</h2>", "<dl>"]
    for label, _, color in _SERIES:
        lines.append(
            f'<dt><span class="swatch" style="background:{color}"></span>{label}</dt><dd>{_e(meaning[label])}</dd>'
        )
    lines += [
        "</dl>",
        '<p class="caption">Each chart draws one row per team and one column per series, all on one scale; '
        "a value that is zero at one decimal has no bar.</p>",
        "</section>",
    ]
    return lines


def _summary(report: Report) -> list[str]:
    """Box the billing rule and the reconciliation at the top, figures right-aligned."""
    rec = report.reconciliation
    details = dict(_summary_lines(report))
    flagged = ' class="flagged"' if rec.flagged else ""
    lines = [
        '<section class="summary" id="summary" aria-label="Summary">',
        "<h2>Summary</h2>",
        '<dl class="facts">',
        f"<dt>Billing rule</dt><dd>{_e(details['Billing rule'])}</dd>",
        f'<dt id="reconciliation">Reconciliation</dt><dd{flagged}>{_e(details["Reconciliation"])}</dd>',
        "</dl>",
        "<table>",
        '<thead><tr><th></th><th class="n">USD</th></tr></thead>',
        "<tbody>",
        f'<tr><td>charged to the rows below</td><td class="n">{_usd(rec.charged)}</td></tr>',
        f"<tr><td>bill (CUR){' before credits and refunds' if rec.credits else ''}</td>"
        f'<td class="n">{"none" if rec.bill is None else _usd(rec.bill)}</td></tr>',
    ]
    if rec.difference is not None:
        verdict = "n flagged" if rec.flagged else "n"
        lines.append(f'<tr><td>difference</td><td class="{verdict}">{_usd(rec.difference)}</td></tr>')
    if rec.credits and rec.bill is not None:
        lines += [
            '<tr><td><a href="#credits">credits and refunds</a> (allocated to no team)</td>'
            f'<td class="n">{_usd(_credit_total(report))}</td></tr>',
            "<tr><td>bill after credits and refunds</td>"
            f'<td class="n">{_usd(_money(rec.bill + _credit_total(report)))}</td></tr>',
        ]
    lines += ["</tbody>", "</table>", "</section>"]
    return lines


def _html_table(
    header: Sequence[str],
    rows: Iterable[Sequence[str]],
    right: int,
    *,
    upto: int | None = None,
    ids: Sequence[str] | None = None,
    names: Container[int] = (),
    foot: Sequence[str] | None = None,
    group: str | None = None,
) -> list[str]:
    """Lay out a table: cells ``right`` up to ``upto`` (default: the last) are numbers, right-aligned.

    Cells ``names`` are names that do not wrap (teams, instance types); every cell is HTML already.
    """
    end = len(header) if upto is None else upto

    def cls(i: int) -> str:
        return ' class="n"' if right <= i < end else ' class="team"' if i in names else ""

    lines = ["<table>", "<thead>"]
    if group is not None:
        lines.append(group)
    lines += ["<tr>" + "".join(f"<th{cls(i)}>{h}</th>" for i, h in enumerate(header)) + "</tr>", "</thead>"]
    lines.append("<tbody>")
    for k, row in enumerate(rows):
        row_id = f' id="{ids[k]}"' if ids is not None else ""
        lines.append(f"<tr{row_id}>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(row)) + "</tr>")
    lines.append("</tbody>")
    if foot is not None:
        lines.append(
            "<tfoot><tr>" + "".join(f"<td{cls(i)}>{c}</td>" for i, c in enumerate(foot)) + "</tr></tfoot>"
        )
    lines.append("</table>")
    return lines


def _escaped(rows: Iterable[Sequence[str]]) -> list[list[str]]:
    return [[_e(c) for c in row] for row in rows]


def _html_totals(report: Report, ids: _Ids) -> list[str]:
    """Return the per-team table (each team's use of its guarantee) and the per-cost-center subtotals."""
    lines: list[str] = []
    totals = _team_totals(report)
    use = _use_of_guarantee(report)
    lines.append('<h2 id="billed">Billed per team and cost center</h2>')
    lines.append(_money_chart(report, ids))
    lines.append("<h2>Per team</h2>")
    lines += _html_table(
        ["team", "cost center", "used of guarantee", "total (USD)"],
        _escaped([team, center, use.get(team, "-"), _usd(total)] for team, center, total in totals),
        right=2,
        names=(0,),
        ids=[ids("team", team, center) for team, center, _ in totals],
        foot=["all rows", "", "", _usd(sum((t for _, _, t in totals), Decimal(0)))],
    )
    centers = _cost_center_totals(report)
    lines.append('<h2 id="cost-centers">Per cost center</h2>')
    lines += _html_table(
        _CENTER_HEADER,
        _escaped([center, _usd(total)] for center, total in centers),
        right=1,
        names=(0,),
        foot=["all", _usd(sum((t for _, t in centers), Decimal(0)))],
    )
    return lines


def _html(report: Report) -> str:
    title = f"Chargeback {report.month} — cluster {report.cluster}"
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{_e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{_e(title)}</h1>",
    ]
    lines += [
        f'<p class="flagged" role="alert">{_e(flag)}</p>'
        for flag in (failure(report), disallowed(report))
        if flag is not None
    ]
    lines += _summary(report)
    lines.append('<dl class="facts">')
    for label, value in _summary_lines(report):
        if label in {"Billing rule", "Reconciliation"}:
            continue
        flagged = ' class="flagged"' if label == "Collection" and report.collection_gaps else ""
        lines.append(f"<dt>{_e(label)}</dt><dd{flagged}>{_e(value)}</dd>")
    lines.append("</dl>")
    ids = _Ids()
    lines += _html_totals(report, ids)
    rows = _rows(report)
    marks, type_marks = _row_notes(report), _type_notes(report)
    lines += _legend(report)
    hours = sum(1 for _, money in _COLUMNS if not money)
    group = (
        '<tr><th colspan="2"></th>'
        f'<th class="n" colspan="{hours}">GPU-hours</th><th class="n" colspan="{len(_COLUMNS) - hours}">USD</th></tr>'
    )
    for itype in sorted({r.instance_type for r in rows}):
        of_type = [r for r in rows if r.instance_type == itype]
        lines.append(f'<h2 id="{ids("type", itype)}">{_e(itype)}{_marks(type_marks.get(itype, []))}</h2>')
        if any(_drawn(getattr(r, field)) for r in of_type for _, field, _ in _SERIES):
            lines.append(_chart(itype, of_type))
        else:
            lines.append(f'<p class="caption">No GPU-hours on {_e(itype)}: nothing to chart.</p>')
        lines += _html_table(
            ["team", "cost center", *(_HEADERS[name] for name, _ in _COLUMNS)],
            [
                [
                    _e(r.team) + _marks(marks.get(id(r), [])),
                    _e(r.cost_center),
                    *(_e(_human(getattr(r, n), m)) for n, m in _COLUMNS),
                ]
                for r in of_type
            ],
            right=2,
            names=(0,),
            ids=[ids("row", itype, r.team, r.cost_center) for r in of_type],
            group=group,
        )
    if report.billed_periods:
        lines.append('<h2 id="billed-periods">Billed periods</h2>')
        lines += _html_table(
            [_e(h) for h in _PERIOD_HEADER], _escaped(_period_rows(report)), right=3, names=(0,)
        )
    if report.reconciliation.credits:
        lines.append('<h2 id="credits">Credits and refunds</h2>')
        lines += _html_table(
            _CREDIT_HEADER,
            _escaped(_credit_rows(report)),
            right=2,
            names=(1,),
            foot=["all", "", _usd(_credit_total(report))],
        )
    if report.preemption_losses:
        lines.append("<h2>Preemption loss per priority class</h2>")
        lines += _html_table(
            [_e(h) for h in _LOSS_HEADER], _escaped(_loss_rows(report)), right=3, upto=6, names=(0, 1, 2)
        )
        *centers, total = _loss_center_rows(report)
        lines.append("<h2>Preemption loss per cost center</h2>")
        lines += _html_table(
            [_e(h) for h in _LOSS_CENTER_HEADER],
            _escaped(centers),
            right=1,
            names=(0,),
            foot=[_e(c) for c in total],
        )
    if report.collection_gaps:
        lines.append("<h2>Collection gaps</h2>")
        lines += _html_table([_e(h) for h in _GAP_HEADER], _escaped(_gap_rows(report)), right=3)
    if report.notes:
        lines += ['<h2 id="notes">Notes</h2>', "<ol>"]
        for number, (note, (explained, subjects)) in enumerate(
            zip(report.notes, _note_rows(report), strict=True), start=1
        ):
            links = [
                f'<a href="#{ids("row", r.instance_type, r.team, r.cost_center)}">{_e(r.team)} on {_e(r.instance_type)}</a>'
                for r in explained
            ] + [f'<a href="#{ids("type", itype)}">{_e(itype)}</a>' for itype in subjects]
            about = f" (see {', '.join(links)})" if links else ""
            lines.append(f'<li id="note-{number}">{_e(note)}{about}</li>')
        lines.append("</ol>")
    lines += ["</body>", "</html>"]
    return "\n".join(lines) + "\n"
