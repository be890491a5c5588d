"""The tenancy plan: its figures on the reference platform and the Task Governance documentation example, their
agreement with the admission simulation the fairness tests use, its chart at 3, 30 and 1000 teams, the command.

Money is computed by hand here (GPUs x hours x price) and compared with what the plan got from the chargeback
engine; bursts are replayed through :class:`fairness_interpreters.KueueCohortSimulator` on the very objects each
backend renders, one GPU at a time, until Kueue's quota check refuses.
"""

from __future__ import annotations

import io
import itertools
import os
import shlex
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import matplotlib.image
import platforms
import pytest
import scale
from fairness_interpreters import (
    KueueCohortSimulator,
    from_task_governance,
    published_vcpus,
    schedulable_shapes,
)
from matplotlib.patches import Rectangle
from matplotlib.text import Text

from hyperpod_tenancy import cli
from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import FairnessBackend, Platform
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.validation import policy_warnings
from hyperpod_tenancy.tools.plan import chart as plan_chart
from hyperpod_tenancy.tools.plan.tenancy_plan import TeamShare, TenancyPlan, build_plan

MONTH = "2026-12"
HOURS = 31 * 24
GPU = "nvidia.com/gpu"


def _share(plan: TenancyPlan, team: str, itype: str) -> TeamShare:
    (share,) = (s for s in plan.shares if s.team == team and s.instance_type == itype)
    return share


@pytest.fixture(scope="module")
def reference() -> TenancyPlan:
    return build_plan(platforms.reference_platform(), month=MONTH)


# ----------------------------------------------------------------------------------------- the reference


def test_capacity_per_instance_type_on_the_reference(reference: TenancyPlan) -> None:
    p5, g5 = reference.capacities
    assert (p5.instance_type, p5.gpus_per_instance, p5.instances, p5.reserved) == ("ml.p5.48xlarge", 8, 16, 1)
    assert (p5.promisable, p5.guaranteed, p5.unallocated, p5.gpus) == (15, 15, 0, 128)
    assert (g5.instance_type, g5.gpus_per_instance, g5.instances, g5.reserved) == ("ml.g5.12xlarge", 4, 4, 1)
    assert (g5.guaranteed, g5.unallocated) == (3, 0)


def test_team_guarantees_bursts_and_risks_on_the_reference(reference: TenancyPlan) -> None:
    research = _share(reference, "research", "ml.p5.48xlarge")
    # 9 p5 = 72 GPUs of 120 promisable; borrowLimit 50 % -> 36; vision lends 48 -> ceiling 108
    assert (research.guaranteed_instances, research.guaranteed_gpus, research.share) == (
        9,
        72,
        Decimal("0.6"),
    )
    assert (research.borrowing_limit_gpus, research.lent_by_others_gpus) == (36, 48)
    assert (research.burst_ceiling_gpus, research.reclaimable_gpus) == (108, 36)
    # one reclaim of 36 GPUs loses at most 1 h of training (default bound) or 30 min of experimentation
    assert [(r.priority_class, r.checkpoint_minutes, r.gpu_hours_at_risk) for r in research.risks] == [
        ("training", 60, Decimal(36)),
        ("experimentation", 30, Decimal(18)),
    ]
    vision = _share(reference, "vision", "ml.p5.48xlarge")
    # borrowLimit 100 % of 48 = 48, and research lends 72: the limit binds
    assert (vision.borrowing_limit_gpus, vision.burst_ceiling_gpus, vision.reclaimable_gpus) == (48, 96, 48)
    inference = _share(reference, "inference", "ml.g5.12xlarge")
    # `lend` never borrows: the ceiling is the guarantee, nothing at risk
    assert (inference.burst_ceiling_gpus, inference.reclaimable_gpus, inference.share) == (12, 0, Decimal(1))
    assert inference.risks[0].gpu_hours_at_risk == 0


def test_monthly_cost_per_team_under_the_reservation_rule(reference: TenancyPlan) -> None:
    assert reference.cost is not None
    assert reference.cost.report.rule.value == "reservation"
    # by hand: guaranteed GPUs x 744 hours x the configured price; the idle owner pays the reserved nodes
    assert reference.cost.team_totals() == {
        "(idle)": Decimal(8 * HOURS) * Decimal("12.29") + Decimal(4 * HOURS) * Decimal("1.77"),
        "inference": Decimal(12 * HOURS) * Decimal("1.77"),
        "research": Decimal(72 * HOURS) * Decimal("12.29"),
        "vision": Decimal(48 * HOURS) * Decimal("12.29"),
    }
    assert reference.cost.report.reconciliation.bill is None  # priced, not billed


def test_the_usage_rule_charges_the_same_guarantee_used_in_full() -> None:
    def usage(data: dict[str, object]) -> None:
        data["chargeback"]["billingTerms"][0]["rule"] = "usage"  # type: ignore[index]

    plan = build_plan(platforms.variant("usage rule", usage), month=MONTH)
    assert plan.cost is not None and plan.cost.report.rule.value == "usage"
    assert plan.cost.team_totals()["research"] == Decimal(72 * HOURS) * Decimal("12.29")


def test_given_prices_replace_the_configured_ones() -> None:
    plan = build_plan(platforms.reference_platform(), month=MONTH, prices={"ml.p5.48xlarge": Decimal(10)})
    assert plan.cost is not None
    assert plan.cost.team_totals()["research"] == Decimal(72 * HOURS * 10)
    assert plan.cost.team_totals()["inference"] == Decimal(12 * HOURS) * Decimal("1.77")


def test_without_a_chargeback_section_there_is_no_cost() -> None:
    def drop(data: dict[str, object]) -> None:
        del data["chargeback"]

    plan = build_plan(platforms.variant("no chargeback", drop), month=MONTH)
    assert plan.cost is None
    assert any("no `chargeback:` section" in line for line in _text(plan))


# ----------------------------------------------------------------------- agreement with admission (Kueue)


def _rendered(platform: Platform) -> list[dict[str, object]]:
    objects = kueue.cluster_objects(platform)
    for team in platform.hosted_teams:
        objects += kueue.team_objects(platform, team)
    return objects


def _admitted_alone(platform: Platform, team: str, flavor: str) -> int:
    """Accelerators ``team`` gets admitted one at a time while every other team is idle, until Kueue refuses."""
    shape = resource_shape(platform.instance_group_for(flavor)[0])
    assert shape is not None
    sim = KueueCohortSimulator(_rendered(platform))
    for n in itertools.count():
        if not sim.admit(team, flavor, {shape.accelerator_resource: Decimal(1)}).admitted:
            return n
    raise AssertionError("unreachable")


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_every_burst_ceiling_is_what_kueue_admits(name: str) -> None:
    platform = platforms.fairness_platform(name)
    plan = build_plan(platform, month=MONTH)
    checked = 0
    for share in plan.shares:
        assert _admitted_alone(platform, share.team, share.instance_type) == share.burst_ceiling_gpus, share
        checked += 1
    assert checked == len(plan.shares) > 0


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_the_plan_reads_task_governance_as_its_quotas_say(name: str) -> None:
    platform = platforms.fairness_platform(name)
    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN)
        for t in platform.hosted_teams
    ]
    form = from_task_governance(scheduler, quotas, schedulable_shapes(platform), published_vcpus(platform))
    for share in build_plan(platform, month=MONTH).shares:
        accelerator = next(
            r
            for (t, f, r) in form.shares
            if t == share.team and f == share.instance_type and r not in ("cpu", "memory")
        )
        read = form.shares[(share.team, share.instance_type, accelerator)]
        assert read.guaranteed == share.guaranteed_gpus
        assert read.borrow_ceiling == share.borrowing_limit_gpus


def test_the_task_governance_documentation_example() -> None:
    """Team A is guaranteed 6 and runs 2; team B is guaranteed 5, runs 4 and its 4-instance job borrows 3."""
    platform = platforms.doc_example()
    plan = build_plan(platform, month=MONTH)
    a = _share(plan, "team-a", "ml.g5.8xlarge")
    b = _share(plan, "team-b", "ml.g5.8xlarge")
    assert (a.guaranteed_gpus, a.borrowing_limit_gpus, a.burst_ceiling_gpus) == (6, 3, 9)
    assert (b.guaranteed_gpus, b.borrowing_limit_gpus, b.lent_by_others_gpus) == (5, 3, 6)
    assert (b.burst_ceiling_gpus, b.reclaimable_gpus) == (8, 3)
    (capacity,) = plan.capacities
    assert (capacity.instances, capacity.reserved, capacity.unallocated) == (12, 1, 0)
    # the simulation the fairness tests replay: B's job borrows exactly the plan's reclaimable part, and B then
    # sits at the plan's ceiling
    sim = KueueCohortSimulator(_rendered(platform))
    assert sim.admit("team-a", "ml.g5.8xlarge", {GPU: Decimal(2)}).admitted
    assert sim.admit("team-b", "ml.g5.8xlarge", {GPU: Decimal(4)}).admitted
    job = sim.admit("team-b", "ml.g5.8xlarge", {GPU: Decimal(4)})
    assert job.admitted and job.borrowed == {GPU: Decimal(b.reclaimable_gpus)}
    assert sim.usage[("team-b", "ml.g5.8xlarge", GPU)] == b.burst_ceiling_gpus
    assert not sim.admit("team-b", "ml.g5.8xlarge", {GPU: Decimal(1)}).admitted


def test_every_guardrail_warning_is_in_the_plan_with_its_code() -> None:
    platform = platforms.doc_example()
    warnings = policy_warnings(platform)
    assert warnings
    plan = build_plan(platform, month=MONTH)
    text = "\n".join(_text(plan))
    page = _markdown(plan)
    for warning in warnings:
        assert f"[{warning.code}] {warning.path}" in text
        assert f"[{warning.code}] {warning.path}" in page


# ------------------------------------------------------------------------------------------------ the chart


def _text(plan: TenancyPlan) -> list[str]:
    from hyperpod_tenancy.tools.plan import text_lines

    return text_lines(plan)


def _markdown(plan: TenancyPlan) -> str:
    from hyperpod_tenancy.tools.plan import markdown

    return markdown(plan)


def _generated(count: int) -> Platform:
    return scale.platform(range(count), FairnessBackend.KUEUE)


@pytest.mark.parametrize("teams", [3, 30, 1000])
def test_no_two_labels_of_the_chart_overlap(teams: int) -> None:
    platform = platforms.reference_platform() if teams == 3 else _generated(teams)
    figure = plan_chart.render_chart(build_plan(platform, month=MONTH))
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    width, height = figure.bbox.width, figure.bbox.height
    for label, box in boxes:
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, f"{label!r} is cut off"
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        overlap = (
            min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0),
            min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0),
        )
        assert not (overlap[0] > 0.5 and overlap[1] > 0.5), f"{a!r} overlaps {b!r}"
    labels = {label for label, _ in boxes}
    if teams > plan_chart.MAX_TEAMS_SHOWN:
        assert any(label.startswith("others (") for label in labels)
    assert len(boxes) < 80  # readable: the small teams are grouped, not drawn one by one
    if teams == 3:
        assert {"research", "vision", "inference", "108 max", "96 max", "12 max"} <= labels


def test_the_chart_draws_no_bar_of_no_gpus() -> None:
    """The reference platform has no unallocated instance: no zero-width bar (it would show as an edge)."""
    plan = build_plan(platforms.reference_platform(), month=MONTH)
    assert any(c.unallocated == 0 for c in plan.capacities if c.gpus_per_instance > 0)
    figure = plan_chart.render_chart(plan)
    bars = [p for ax in figure.axes for p in ax.patches if isinstance(p, Rectangle)]
    assert bars and all(p.get_width() > 0 for p in bars)
    labels = [t.get_text() for t in figure.findobj(Text)]
    assert not any(label.startswith("0 max") for label in labels)


def test_the_chart_is_a_png(tmp_path: Path) -> None:
    path = tmp_path / "plan.png"
    plan_chart.write_png(build_plan(platforms.reference_platform(), month=MONTH), path)
    image = matplotlib.image.imread(path)
    assert image.shape[0] > 200 and image.shape[1] == 1000


# ---------------------------------------------------------------------------------------------- the command


def test_the_command_prints_plain_text_and_writes_both_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    md, png = tmp_path / "out" / "plan.md", tmp_path / "out" / "plan.png"
    md.parent.mkdir()
    status = cli.main(
        ["plan", str(platforms.PLATFORM_YAML), "--month", MONTH, "--markdown", str(md), "--png", str(png)]
    )
    out = capsys.readouterr()
    assert status == 0, out.err
    assert out.err == ""
    assert "│" not in out.out and "┃" not in out.out  # plain when not a terminal
    assert "research   ml.p5.48xlarge               72   60.0 %  lend-and-borrow            108" in out.out
    assert "658,350.72" in out.out
    page = md.read_text(encoding="utf-8")
    assert "![Guarantees, reserve and burst ceilings per instance type](plan.png)" in page
    assert "| research | ml.p5.48xlarge | 72 | 60.0 % | lend-and-borrow | 108 | 36 |" in page
    assert "| research | research | 53,568.0 | 658,350.72 |" in page
    assert matplotlib.image.imread(png).ndim == 3


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_plan_is_a_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_tenancy.tools import plan

    out = _Terminal()
    monkeypatch.setenv("COLUMNS", "200")
    plan.command._print(build_plan(platforms.reference_platform(), month=MONTH), out)
    text = out.getvalue()
    assert "┃" in text or "│" in text
    assert "research" in text and "658,350.72" in text


def test_a_thousand_teams_print_the_largest_and_point_to_the_page() -> None:
    lines = _text(build_plan(_generated(1000), month=MONTH))
    assert any("... and 976 more (the Markdown page" in line for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--month", "2026-13"], "--month '2026-13' is not a month; write it as YYYY-MM"),
        (["--prices", "missing.csv"], "--prices 'missing.csv': cannot read"),
        (["--png", "no/such/dir/plan.png"], "cannot write 'no/such/dir/plan.png'"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(
    args: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    status = cli.main(["plan", str(platforms.PLATFORM_YAML), *args])
    err = capsys.readouterr().err
    assert status == 1
    assert len(err.splitlines()) == 1 and message in err, err


def test_a_month_without_a_term_or_a_price_is_said_in_the_cost_section(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["plan", str(platforms.PLATFORM_YAML), "--month", "2025-06"]) == 0
    assert "cost: the month 2025-06 cannot be priced: no billing term" in capsys.readouterr().out
    plan = build_plan(platforms.mixed_accelerators(), month=MONTH)
    assert plan.cost is None
    assert plan.cost_note is not None and "no price for ml.trn1.32xlarge" in plan.cost_note


def test_an_invalid_policy_lists_its_problems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "platform.yaml"
    bad.write_text(platforms.PLATFORM_YAML.read_text(encoding="utf-8").replace("count: 16", "count: -1"))
    assert cli.main(["plan", str(bad)]) == 1
    assert "nothing was synthesized" in capsys.readouterr().err


def test_make_synth_writes_the_plan_beside_the_cloud_assembly(tmp_path: Path) -> None:
    """The recipe `make synth` runs after `cdk synth`, run as it stands with cdk.out/ moved to a scratch folder."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    recipe = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", "synth"],
        cwd=platforms.REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (line,) = [line for line in recipe.splitlines() if "hyperpod-tenancy plan" in line]
    assert "--markdown cdk.out/plan.md" in line and "--png cdk.out/plan.png" in line
    (tmp_path / "cdk.out").mkdir()
    argv = shlex.split(line)
    argv[0] = str(platforms.REPO / argv[0])
    argv[argv.index("platform.yaml")] = str(platforms.PLATFORM_YAML)
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Tenancy plan of ml-platform" in run.stdout
    assert (
        (tmp_path / "cdk.out" / "plan.md")
        .read_text(encoding="utf-8")
        .startswith("# Tenancy plan of ml-platform")
    )
    assert (tmp_path / "cdk.out" / "plan.png").stat().st_size > 10_000


def test_the_text_plan_needs_no_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the [plan] extra (no matplotlib, no rich) the plan still prints; only ``--png`` names the extra."""
    from hyperpod_tenancy.cli import main

    for module in ("matplotlib", "rich"):
        monkeypatch.setitem(sys.modules, module, None)
    assert main(["plan", str(platforms.PLATFORM_YAML)]) == 0
    out, err = capsys.readouterr()
    assert "research" in out and err == ""
    assert main(["plan", str(platforms.PLATFORM_YAML), "--png", "plan.png"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "pip install 'cdk-hyperpod-tenancy[plan]'" in err


def test_probe_names_an_extra_of_its_own(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperpod_tenancy.cli import main

    monkeypatch.setitem(sys.modules, "kubernetes", None)
    assert main(["probe", str(platforms.PLATFORM_YAML), "--teams", "research", "vision"]) == 1
    assert "pip install 'cdk-hyperpod-tenancy[probe]'" in capsys.readouterr().err
