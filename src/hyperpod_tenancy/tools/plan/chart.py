"""The plan as a picture: per instance type, who is guaranteed its GPUs and how far each team can burst.

A guarantee held in GPU partitions is drawn hatched, at its share of GPUs (a partition's compute slices / 7).
One panel per instance type, all on one GPU scale (16 GPUs are drawn an eighth as long as 128, whatever their
type). Its top bar is the type's GPUs stacked by team guarantee, then the reserved and the unallocated ones;
below it one row per team: its guarantee (a bar in the team's colour, the same on every panel) and its burst
ceiling as a marker above the row, written at its end: a ceiling is what one team may reach when the others are
idle, not capacity that adds up, so it is never drawn as a bar. Each team's row names the month's cost of the
team (the plan's chargeback month) where the plan has one. The legend's swatches are the drawn colours. Past
:data:`MAX_TEAMS_SHOWN` teams on a type, the smaller ones share one "others" segment and row, so the chart stays
readable at a thousand teams.

Text is placed so that no two labels overlap: a team's name is written inside its segment of the top bar only
when it fits there (every team is named on its own row anyway), and the numbers sit in their own rows. As in
the chargeback report, a segment of no GPUs is neither drawn nor labelled, and counts have thousands separators.
The figure has its own Agg canvas (no pyplot, no display), so this runs in CI and in ``make synth``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib as mpl
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from hyperpod_tenancy.tools.plan.tenancy_plan import TeamShare, TenancyPlan, TypeCapacity

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["MAX_TEAMS_SHOWN", "render_chart", "write_png"]

#: Teams drawn on their own per instance type; the rest are grouped as "others".
MAX_TEAMS_SHOWN = 8
_RESERVED = "#6b6b6b"
_UNALLOCATED = "#ffffff"
_OTHERS = "#b0b0b0"
_ROW_INCHES = 0.32
_WIDTH_INCHES = 10.0


@dataclass(frozen=True)
class _Row:
    label: str
    #: GPUs guaranteed, whole ones and partitions' share of them (slices / 7): a partition holder's is a fraction.
    guaranteed: float
    ceiling: int
    color: tuple[float, float, float, float]
    #: For the "others" row: their guarantees are summed, and this is the largest burst ceiling of any one of them.
    grouped: bool = False
    #: The team's name (the label may add its month's cost); empty for the "others" row.
    team: str = ""
    #: The GPU partitions in the guarantee, for people (``98 mig-1g.10gb``); empty: whole GPUs only.
    partitions: str = ""


#: Hatch of a guarantee held in GPU partitions (drawn at their share of GPUs).
_PARTITION_HATCH = "xx"


def _gpus(count: float) -> str:
    """Write a count of GPUs for people: ``1,024``, or ``1.5`` where partitions make a fraction of one."""
    return f"{count:,.0f}" if float(count).is_integer() else f"{count:,.2f}".rstrip("0")


def _shown(shares: Sequence[TeamShare]) -> Sequence[TeamShare]:
    return shares[:MAX_TEAMS_SHOWN] if len(shares) <= MAX_TEAMS_SHOWN else shares[: MAX_TEAMS_SHOWN - 1]


def _colors(plan: TenancyPlan, types: Sequence[TypeCapacity]) -> dict[str, tuple[float, float, float, float]]:
    """Each team drawn on any panel → its colour, the same on every panel (in the order teams are first drawn)."""
    palette = colormaps["tab10"]
    colors: dict[str, tuple[float, float, float, float]] = {}
    for cap in types:
        for share in _shown(plan.shares_of(cap.instance_type)):
            colors.setdefault(share.team, palette(len(colors) % 10))
    return colors


def _guaranteed(share: TeamShare, per: int) -> float:
    """Return the share's GPUs: its whole GPUs, or its guarantee in instances where partitions make it (slices / 7)."""
    return float(share.guaranteed_instances * per) if share.partitions else float(share.guaranteed_gpus)


def _rows(
    cap: TypeCapacity,
    shares: Sequence[TeamShare],
    colors: dict[str, tuple[float, float, float, float]],
    costs: dict[str, str],
) -> list[_Row]:
    shown = _shown(shares)
    per = cap.gpus_per_instance
    rows = [
        _Row(
            s.team + costs.get(s.team, ""),
            _guaranteed(s, per),
            s.burst_ceiling_gpus,
            colors[s.team],
            team=s.team,
            partitions=" + ".join(f"{n:,} {profile}" for profile, n in s.partitions.items()),
        )
        for s in shown
    ]
    rest = shares[len(shown) :]
    if rest:
        rows.append(
            _Row(
                f"others ({len(rest)} teams)",
                sum(_guaranteed(s, per) for s in rest),
                max(s.burst_ceiling_gpus for s in rest),
                mpl.colors.to_rgba(_OTHERS),
                grouped=True,
            )
        )
    return rows


def _panel(ax: Axes, cap: TypeCapacity, rows: Sequence[_Row], right: float) -> None:
    """Draw one instance type on the chart's common GPU scale ``[0, right]``."""
    per = cap.gpus_per_instance
    total = cap.gpus
    y_bar = len(rows) + 0.4
    left = 0.0
    # a segment of no GPUs is not drawn (a zero-width bar would still show its edge), nor labelled
    for row in rows:
        if row.guaranteed > 0:
            ax.barh(
                y_bar,
                row.guaranteed,
                left=left,
                height=0.8,
                color=row.color,
                edgecolor="white",
                linewidth=0.5,
                hatch=_PARTITION_HATCH if row.partitions else None,
                gid=f"segment:{row.team}",
            )
        left += row.guaranteed
    if cap.reserved > 0:
        ax.barh(
            y_bar, cap.reserved * per, left=left, height=0.8, color=_RESERVED, hatch="//", edgecolor="white"
        )
    left += cap.reserved * per
    if cap.unallocated > 0:
        ax.barh(
            y_bar,
            float(cap.unallocated) * per,
            left=left,
            height=0.8,
            color=_UNALLOCATED,
            edgecolor="#444444",
        )
    for i, row in enumerate(rows):
        y = len(rows) - 1 - i
        if row.guaranteed > 0:
            hatch = _PARTITION_HATCH if row.partitions else None
            ax.barh(y, row.guaranteed, height=0.6, color=row.color, hatch=hatch, gid=f"guarantee:{row.team}")
        if row.grouped:  # summed guarantees; a burst is one team's, so it is written, not drawn
            label, end = f"{_gpus(row.guaranteed)} in all, each ≤ {row.ceiling:,}", row.guaranteed
        elif row.partitions and row.ceiling == 0:  # partitions only: what they are, and their GPUs
            label, end = f"{row.partitions} = {_gpus(row.guaranteed)} GPUs", row.guaranteed
        else:
            if row.ceiling > 0:  # a marker above the row, never a bar: ceilings do not add up
                ax.plot(
                    [row.ceiling],
                    [y + 0.3],
                    marker="v",
                    markersize=6,
                    color="black",
                    linestyle="none",
                    gid=f"ceiling:{row.team}",
                )
            label, end = f"{row.ceiling:,} max", row.ceiling
        if end > 0 or row.ceiling > 0:
            ax.text(end + right * 0.012, y, label, va="center", ha="left", fontsize=8)
    ax.set_yticks([y_bar, *range(len(rows) - 1, -1, -1)], ["all GPUs", *(r.label for r in rows)], fontsize=8)
    ax.set_xlim(0, right)
    # ticks inside the panel only (a locator's ticks past the edge would still be text objects)
    ax.set_xticks([t for t in MaxNLocator(nbins=8, integer=True).tick_values(0, right) if 0 <= t <= right])
    ax.set_ylim(-0.6, y_bar + 0.6)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_title(
        f"{cap.instance_type}: {cap.instances:,} instances x {per} GPUs = {total:,} GPUs "
        f"({cap.reserved:,} reserved, {cap.unallocated:,} unallocated)",
        fontsize=9,
        loc="left",
    )
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)


def _label_segments(fig: Figure, ax: Axes, rows: Sequence[_Row], y_bar: float) -> None:
    """Name each team inside its segment of the top bar where the name fits (drawn first to measure)."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # an Agg canvas (render_chart)
    left = 0.0
    for row in rows:
        if row.guaranteed:
            text = ax.text(
                left + row.guaranteed / 2,
                y_bar,
                row.team or row.label,
                ha="center",
                va="center",
                fontsize=7,
                color="white",
            )
            box = text.get_window_extent(renderer)
            start, end = ax.transData.transform([(left, y_bar), (left + row.guaranteed, y_bar)])
            if box.x0 < start[0] + 2 or box.x1 > end[0] - 2:
                text.remove()
        left += row.guaranteed


def render_chart(plan: TenancyPlan) -> Figure:
    """Draw the plan's capacity chart (one panel per instance type with accelerators).

    Returns:
        The figure; :func:`write_png` saves it.

    """
    types = [c for c in plan.capacities if c.gpus_per_instance > 0]
    colors = _colors(plan, types)
    costs = (
        {team: f" (${total:,.0f}/month)" for team, total in plan.cost.team_totals().items()}
        if plan.cost is not None
        else {}
    )
    panels = [(c, _rows(c, plan.shares_of(c.instance_type), colors, costs)) for c in types]
    right = max((c.gpus for c in types), default=0) * 1.3 or 1
    heights = [len(rows) + 2.2 for _, rows in panels] or [1.0]
    fig = Figure(figsize=(_WIDTH_INCHES, sum(heights) * _ROW_INCHES + 1.4), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)  # headless: the figure draws on its own Agg canvas, whatever pyplot's backend
    axes = fig.subplots(len(heights), 1, squeeze=False, gridspec_kw={"height_ratios": heights})[:, 0]
    for ax, (cap, rows) in zip(axes, panels, strict=False):
        _panel(ax, cap, rows, right)
    if not panels:
        axes[0].set_axis_off()
        axes[0].text(0.5, 0.5, "no instance type with GPUs", ha="center", va="center")
    fig.suptitle(f"Tenancy plan of {plan.platform} (GPUs)", fontsize=11)
    grouped = any(row.grouped for _, rows in panels for row in rows)
    fig.legend(
        handles=[
            *(Patch(facecolor=color, label=f"{team} (guaranteed)") for team, color in colors.items()),
            *([Patch(facecolor=_OTHERS, label="other teams (guaranteed)")] if grouped else []),
            *(
                [
                    Patch(
                        facecolor="white",
                        hatch=_PARTITION_HATCH,
                        edgecolor="#444444",
                        label="in GPU partitions",
                    )
                ]
                if any(row.partitions for _, rows in panels for row in rows)
                else []
            ),
            Line2D(
                [],
                [],
                marker="v",
                color="black",
                linestyle="none",
                label="burst ceiling (one team at a time)",
            ),
            Patch(facecolor=_RESERVED, hatch="//", edgecolor="white", label="reserved (no quota)"),
            Patch(facecolor=_UNALLOCATED, edgecolor="#444444", label="unallocated"),
        ],
        loc="outside lower center",
        ncol=4,
        fontsize=8,
        frameon=False,
    )
    fig.canvas.draw()
    for ax, (_, rows) in zip(axes, panels, strict=False):
        _label_segments(fig, ax, rows, len(rows) + 0.4)
    return fig


def write_png(plan: TenancyPlan, path: Path) -> None:
    """Render the chart and save it as a PNG at ``path``."""
    render_chart(plan).savefig(path, format="png", metadata={"Software": None})
