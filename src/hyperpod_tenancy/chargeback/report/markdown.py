"""The report as Markdown."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal

from hyperpod_tenancy.chargeback.model import (
    Report,
)
from hyperpod_tenancy.chargeback.report._format import _COLUMNS, _human, _rows, _usd
from hyperpod_tenancy.chargeback.report.facts import (
    _CENTER_HEADER,
    _CREDIT_HEADER,
    _GAP_HEADER,
    _LOSS_CENTER_HEADER,
    _LOSS_HEADER,
    _PERIOD_HEADER,
    _cost_center_totals,
    _credit_rows,
    _credit_total,
    _gap_rows,
    _loss_center_rows,
    _loss_rows,
    _period_rows,
    _summary_lines,
    _team_totals,
    _use_of_guarantee,
    disallowed,
    failure,
)
from hyperpod_tenancy.chargeback.report.notes import _column_label, _row_notes


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
