"""The HTML report's charts: GPU-hours per instance type and the money each team is billed, with their legend."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_EVEN, Decimal

from hyperpod_tenancy.chargeback.model import (
    IDLE_ROW,
    SHARED,
    BillingRule,
    Report,
    TeamCharge,
)
from hyperpod_tenancy.chargeback.report._format import _TENTH, _gpu_hours, _usd
from hyperpod_tenancy.chargeback.report.facts import _cost_center_totals, _team_totals

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
