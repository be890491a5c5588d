"""The report as one self-contained HTML page."""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from decimal import Decimal

from hyperpod_tenancy.chargeback.model import (
    Report,
)
from hyperpod_tenancy.chargeback.report._format import _COLUMNS, _human, _money, _rows, _usd
from hyperpod_tenancy.chargeback.report.chart import (
    _CSS,
    _SERIES,
    _chart,
    _drawn,
    _e,
    _Ids,
    _legend,
    _marks,
    _money_chart,
)
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
from hyperpod_tenancy.chargeback.report.notes import _HEADERS, _note_rows, _row_notes, _type_notes


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
