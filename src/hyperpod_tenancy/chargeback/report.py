"""Renderings of a chargeback :class:`~.model.Report`: JSON, CSV, Markdown and HTML (standard library only).

Every rendering is a pure function of the report: rows sorted by cluster, instance type and team, no time of
rendering, LF line ends, UTF-8. The Lambda and the offline CLI therefore write the same bytes for the
same month. Numbers are rounded only here, half to even: money to cents, GPU-hours to thousandths, prices to
ten-thousandths of a dollar per GPU-hour; JSON carries them as numbers with exactly those digits.

The HTML report is one self-contained page with an inline SVG chart per instance type (guaranteed,
borrowed, idle and lost GPU-hours per team), drawn in pure Python because the Lambda has no plotting library.
"""

from __future__ import annotations

import csv
import datetime as dt
import enum
import html
import io
import json
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_EVEN, Decimal

from .model import (
    IDLE_ROW,
    SHARED,
    SHARED_COSTS_ROW,
    LossBasis,
    PreemptionLoss,
    Report,
    SharedCostRule,
    TeamCharge,
)

__all__ = ["COLLECTORS", "COLLECTOR_NAMES", "EXTENSIONS", "Format", "collection", "failure", "render"]


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


def _num(value: Decimal, money: bool) -> str:
    text = format(_money(value) if money else _hours(value), "f")
    return "0" + text[2:] if text.startswith("-0") and set(text[2:]) <= {".", "0"} else text


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
            _num(p.lost_gpu_hours, False),
            _basis(p),
        ]
        for p in _losses(report)
    ]


_LOSS_HEADER = ["instance type", "team", "priority class", "evictions", "lost GPU-hours", "figure"]


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
    return (
        f"RECONCILIATION FAILED: {', '.join(rec.unknown_teams)} "
        f"{'is no team' if len(rec.unknown_teams) == 1 else 'are no teams'} of the configuration yet ran on the "
        "cluster or carry its team tag on bill lines, so their GPU-hours raised the borrowing of known teams. "
        "Add each to the platform (its TeamTenant), or set "
        "`chargeback.unknownTeams: bill` to bill such namespaces under their own name."
    )


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


def _summary_lines(report: Report) -> list[tuple[str, str]]:
    rec = report.reconciliation
    prices = ", ".join(
        f"{itype} ${_price(report.gpu_hour_prices[itype])}/GPU-hour"
        f" ({report.price_sources[itype].value if itype in report.price_sources else 'unknown'})"
        for itype in sorted(report.gpu_hour_prices)
    )
    if rec.bill is None:
        reconciled = f"charged ${_num(rec.charged, True)}; no bill (no CUR): not reconciled"
    else:
        share = (
            ""
            if not rec.bill
            else f" ({(abs(rec.difference or Decimal(0)) / abs(rec.bill) * 100).quantize(_CENT)} %)"
        )
        verdict = "FLAGGED: the mismatch exceeds the tolerance" if rec.flagged else "within tolerance"
        reconciled = (
            f"charged ${_num(rec.charged, True)} against a bill of ${_num(rec.bill, True)}; "
            f"difference ${_num(rec.difference or Decimal(0), True)}{share}, {verdict}"
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
        ("Billing rule", report.rule.value),
        ("Idle owner", report.idle_owner),
        ("Rows", rows),
        ("Shared costs", report.shared_costs.value),
        ("Prices", prices or "none"),
        ("Reconciliation", reconciled),
        ("Preemption loss", loss),
        ("Collection", collection(report)),
    ]


# --- Markdown ------------------------------------------------------------------------------------------


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _md_table(header: Sequence[str], rows: Iterable[Sequence[str]], right: int) -> list[str]:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("| " + " | ".join("---" if i < right else "---:" for i in range(len(header))) + " |")
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return lines


def _markdown(report: Report) -> str:
    lines = [f"# Chargeback {report.month} — cluster {report.cluster}", ""]
    if (failed := failure(report)) is not None:
        lines += [f"> **{_md_cell(failed)}**", ""]
    lines += [f"- **{label}:** {_md_cell(value)}" for label, value in _summary_lines(report)]
    lines += ["", "## Per team", ""]
    lines += _md_table(
        ["team", "cost center", "total (USD)"],
        ([team, center, _num(total, True)] for team, center, total in _team_totals(report)),
        right=2,
    )
    lines += ["", "## Per team and instance type", ""]
    header = ["instance type", "team", "cost center", *(name.replace("_", " ") for name, _ in _COLUMNS)]
    lines += _md_table(
        header,
        (
            [r.instance_type, r.team, r.cost_center, *(_num(getattr(r, n), m) for n, m in _COLUMNS)]
            for r in _rows(report)
        ),
        right=3,
    )
    if report.preemption_losses:
        lines += ["", "## Preemption loss per priority class", ""]
        lines += _md_table(_LOSS_HEADER, _loss_rows(report), right=3)
    if report.collection_gaps:
        lines += ["", "## Collection gaps", ""]
        lines += _md_table(_GAP_HEADER, _gap_rows(report), right=3)
    if report.notes:
        lines += ["", "## Notes", ""] + [f"- {_md_cell(note)}" for note in report.notes]
    return "\n".join(lines) + "\n"


# --- HTML ----------------------------------------------------------------------------------------------

_SERIES = (
    ("guaranteed", "guaranteed_gpu_hours", "#4e79a7"),
    ("borrowed", "borrowed_gpu_hours", "#f28e2b"),
    ("idle", "idle_gpu_hours", "#bab0ac"),
    ("lost", "lost_to_preemption_gpu_hours", "#e15759"),
)
_BAR, _GAP, _LABEL_W, _PLOT_W, _VALUE_W = 9, 10, 160, 440, 90

_CSS = """body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ccc;padding:.25rem .5rem}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
.flagged{color:#b00020;font-weight:bold}svg text{font-size:11px;font-family:system-ui,sans-serif}"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _chart(instance_type: str, rows: Sequence[TeamCharge]) -> str:
    peak = max((getattr(r, field) for r in rows for _, field, _ in _SERIES), default=Decimal(0))
    scale = Decimal(_PLOT_W) / peak if peak > 0 else Decimal(0)
    group = len(_SERIES) * _BAR + _GAP
    height = 30 + len(rows) * group + 10
    width = _LABEL_W + _PLOT_W + _VALUE_W
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="GPU-hours per team on {_e(instance_type)}">',
        f"<title>GPU-hours per team on {_e(instance_type)}</title>",
    ]
    for i, (label, _, color) in enumerate(_SERIES):
        x = _LABEL_W + i * 110
        parts.append(f'<rect x="{x}" y="4" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{x + 14}" y="13">{label}</text>')
    for j, r in enumerate(rows):
        top = 30 + j * group
        parts.append(
            f'<text x="{_LABEL_W - 6}" y="{top + 2 * _BAR + 3}" text-anchor="end">{_e(r.team)}</text>'
        )
        for i, (label, field, color) in enumerate(_SERIES):
            value: Decimal = getattr(r, field)
            length = (max(value, Decimal(0)) * scale).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
            y = top + i * _BAR
            parts.append(
                f'<rect x="{_LABEL_W}" y="{y}" width="{length}" height="{_BAR - 1}" fill="{color}">'
                f"<title>{_e(r.team)} {label}: {_num(value, False)} GPU-hours</title></rect>"
            )
            parts.append(f'<text x="{_LABEL_W + length + 4}" y="{y + _BAR - 1}">{_num(value, False)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _html_table(header: Sequence[str], rows: Iterable[Sequence[str]], right: int) -> list[str]:
    lines = ["<table>", "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in header) + "</tr>"]
    for row in rows:
        cells = "".join(
            f'<td class="n">{_e(c)}</td>' if i >= right else f"<td>{_e(c)}</td>" for i, c in enumerate(row)
        )
        lines.append(f"<tr>{cells}</tr>")
    lines.append("</table>")
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
    if (failed := failure(report)) is not None:
        lines.append(f'<p class="flagged" role="alert">{_e(failed)}</p>')
    lines.append("<dl>")
    for label, value in _summary_lines(report):
        flagged = (
            ' class="flagged"'
            if (label == "Reconciliation" and report.reconciliation.flagged)
            or (label == "Collection" and report.collection_gaps)
            else ""
        )
        lines.append(f"<dt>{_e(label)}</dt><dd{flagged}>{_e(value)}</dd>")
    lines += ["</dl>", "<h2>Per team</h2>"]
    lines += _html_table(
        ["team", "cost center", "total (USD)"],
        ([team, center, _num(total, True)] for team, center, total in _team_totals(report)),
        right=2,
    )
    rows = _rows(report)
    for itype in sorted({r.instance_type for r in rows}):
        of_type = [r for r in rows if r.instance_type == itype]
        lines.append(f"<h2>{_e(itype)}</h2>")
        lines.append(_chart(itype, of_type))
        lines += _html_table(
            ["team", "cost center", *(name.replace("_", " ") for name, _ in _COLUMNS)],
            ([r.team, r.cost_center, *(_num(getattr(r, n), m) for n, m in _COLUMNS)] for r in of_type),
            right=2,
        )
    if report.preemption_losses:
        lines.append("<h2>Preemption loss per priority class</h2>")
        lines += _html_table(_LOSS_HEADER, _loss_rows(report), right=3)
    if report.collection_gaps:
        lines.append("<h2>Collection gaps</h2>")
        lines += _html_table(_GAP_HEADER, _gap_rows(report), right=3)
    if report.notes:
        lines += ["<h2>Notes</h2>", "<ul>"] + [f"<li>{_e(n)}</li>" for n in report.notes] + ["</ul>"]
    lines += ["</body>", "</html>"]
    return "\n".join(lines) + "\n"
