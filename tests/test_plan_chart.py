"""The plan's chart, checked on the drawn figure (artist extents in pixels after drawing), not on its inputs.

The reference platform: ml.p5.48xlarge, 16 instances x 8 GPUs (128 GPUs; research guaranteed 72, vision 48) and
ml.g5.12xlarge, 4 instances x 4 GPUs (16 GPUs; inference 12); December 2026 (744 hours) priced at the configured
12.29 and 1.77 USD per GPU-hour.
"""

from __future__ import annotations

from decimal import Decimal

import platforms
import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from hyperpod_tenancy.tools.plan import chart as plan_chart
from hyperpod_tenancy.tools.plan.tenancy_plan import TenancyPlan, build_plan

MONTH = "2026-12"
HOURS = 31 * 24


@pytest.fixture(scope="module")
def plan() -> TenancyPlan:
    return build_plan(platforms.reference_platform(), month=MONTH)


@pytest.fixture(scope="module")
def figure(plan: TenancyPlan) -> Figure:
    figure = plan_chart.render_chart(plan)
    figure.canvas.draw()
    return figure


def _bars(figure: Figure, prefix: str) -> dict[str, list[Rectangle]]:
    found: dict[str, list[Rectangle]] = {}
    for ax in figure.axes:
        for patch in ax.patches:
            gid = patch.get_gid() or ""
            if isinstance(patch, Rectangle) and gid.startswith(prefix):
                found.setdefault(gid.removeprefix(prefix), []).append(patch)
    return found


def test_every_panel_draws_a_gpu_the_same_length(plan: TenancyPlan, figure: Figure) -> None:
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    per_gpu = {}
    for team, bars in _bars(figure, "guarantee:").items():
        for bar in bars:
            share = next(
                s for s in plan.shares if s.team == team and s.guaranteed_gpus == round(bar.get_width())
            )
            per_gpu[(team, share.instance_type)] = (
                bar.get_window_extent(renderer).width / share.guaranteed_gpus
            )
    # research and vision on p5, inference on g5: pixels per GPU equal to a tenth of a pixel per 100 GPUs
    assert {itype for _, itype in per_gpu} == {"ml.p5.48xlarge", "ml.g5.12xlarge"}
    lengths = sorted(per_gpu.values())
    assert lengths[-1] - lengths[0] < 0.01 * lengths[0], per_gpu


def test_the_legend_swatches_are_the_drawn_colours(figure: Figure) -> None:
    (legend,) = figure.legends
    swatches = {
        text.get_text().removesuffix(" (guaranteed)"): handle.get_facecolor()
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if text.get_text().endswith(" (guaranteed)")
    }
    drawn = {
        team: {tuple(b.get_facecolor()) for b in bars} for team, bars in _bars(figure, "guarantee:").items()
    }
    assert set(swatches) == set(drawn) == {"research", "vision", "inference"}
    for team, colour in swatches.items():
        assert drawn[team] == {tuple(to_rgba(colour))}, team
    # the top bar's segments are the same colours as the teams' rows
    for team, bars in _bars(figure, "segment:").items():
        assert {tuple(b.get_facecolor()) for b in bars} == drawn[team]


def test_each_team_row_says_the_months_cost(plan: TenancyPlan, figure: Figure) -> None:
    texts = {t.get_text() for t in figure.findobj(Text) if t.get_visible()}
    # by hand: research 72 GPUs x 744 h x 12.29 = 658,350.72; vision 48 x 744 x 12.29 = 438,900.48;
    # inference 12 x 744 x 1.77 = 15,802.56 (the reservation rule of the reference policy)
    assert plan.cost is not None
    assert "research ($658,351/month)" in texts
    assert "vision ($438,900/month)" in texts
    assert "inference ($15,803/month)" in texts
    assert plan.cost.team_totals()["research"] == Decimal(72 * HOURS) * Decimal("12.29")


def test_a_ceiling_is_a_marker_above_its_guarantee_never_a_stacked_bar(
    plan: TenancyPlan, figure: Figure
) -> None:
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    guarantees = _bars(figure, "guarantee:")
    for ax in figure.axes:
        markers = [line for line in ax.lines if (line.get_gid() or "").startswith("ceiling:")]
        for line in markers:
            team = str(line.get_gid()).removeprefix("ceiling:")
            (x,), (y,) = line.get_xdata(), line.get_ydata()  # type: ignore[misc]
            (bar,) = [b for b in guarantees[team] if b.axes is ax]
            # the marker is at the team's ceiling, above its guarantee bar's row
            share = next(
                s for s in plan.shares if s.team == team and s.guaranteed_gpus == round(bar.get_width())
            )
            assert x == share.burst_ceiling_gpus
            marker_y = ax.transData.transform((x, y))[1]
            assert marker_y > bar.get_window_extent(renderer).y0 + bar.get_window_extent(renderer).height / 2
            assert isinstance(line, Line2D) and line.get_marker() == "v"
        # in the team rows, no bar reaches past its guarantee: nothing stacks the borrowable part
        for patch in ax.patches:
            gid = patch.get_gid() or ""
            if isinstance(patch, Rectangle) and not gid.startswith(("segment:", "guarantee:")):
                assert patch.get_y() > len(ax.get_yticks()) - 2, f"an unnamed bar in a team row: {patch}"
