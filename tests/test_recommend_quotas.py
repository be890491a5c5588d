"""``hyperpod-tenancy recommend-quotas``: quotas and borrow limits from a month of generated usage.

The usage is written in the collector's schema (``clusterqueue`` snapshots, held until the next one, so an hour's
GPUs are exactly the snapshot's) on the reference platform (p5: 8 GPUs per instance, 15 promisable; g5: 4 GPUs,
3 promisable). June 2026 has 720 hours, so the nearest-rank p95 is the 684th smallest hour:

* ``research`` (9 p5, borrowLimit 50): 40 GPUs for 648 hours, then 56 for 72 hours: p50 40, p95 56, so 7
  instances; it borrows nothing above 56, so its borrow limit falls to the least, 1 %;
* ``vision`` (6 p5, borrowLimit 100: ceiling 96): 96 GPUs all month (48 own, 48 borrowed), at its ceiling every
  hour, and a queued workload of ``WAIT`` GPUs waiting all month (the operator's ``workload`` table): its need
  is 48 + ``WAIT``;
* ``inference`` (3 g5, lend): 8 GPUs all month: 2 instances, its borrow limit untouched (it does not borrow).
"""

from __future__ import annotations

import copy
import io
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import platforms
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from chargeback_data import t, write_table

from hyperpod_tenancy import cli
from hyperpod_tenancy.policy.loader import load_platform
from hyperpod_tenancy.policy.model import ResourceAmount
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan
from hyperpod_tenancy.tools.recommend import engine as _recommend

MONTH = "2026-06"
HOURS = 720
CLUSTER = "shared-gpu"
P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"
WORKLOAD_SCHEMA = pa.schema(
    [
        ("workload_name", pa.string()),
        ("timestamp", pa.timestamp("us")),
        ("namespace", pa.string()),
        ("resource_version", pa.string()),
        ("team", pa.string()),
        ("status", pa.string()),
        ("task_priority_class", pa.string()),
        ("instance_type", pa.string()),
        ("cpu", pa.float64()),
        ("gpu", pa.float64()),
        ("neuron_core", pa.float64()),
        ("admitted", pa.bool_()),
        ("finished", pa.bool_()),
    ]
)


def _queue(team: str, itype: str, when: str, gpus: int, *, borrowed: int, version: int) -> dict[str, object]:
    return {
        "instance_type": itype,
        "timestamp": t(when),
        "namespace": f"hyperpod-ns-{team}",
        "resource_version": str(version),
        "team": team,
        "gpu_total": float(gpus),
        "gpu_borrowed": float(borrowed),
    }


def _write_workloads(root: Path, rows: list[dict[str, object]]) -> None:
    columns = {f.name: [r.get(f.name) for r in rows] for f in WORKLOAD_SCHEMA}
    data = pa.table(columns, schema=WORKLOAD_SCHEMA)
    stamps = columns["timestamp"]
    for name, fmt in (("year", "%Y"), ("month", "%m"), ("day", "%d"), ("hour", "%H")):
        data = data.append_column(name, pa.array([s.strftime(fmt) for s in stamps], pa.string()))  # type: ignore[attr-defined]
    data = data.append_column("cluster", pa.array([CLUSTER] * len(rows), pa.string()))
    pq.write_to_dataset(data, root / "workload", partition_cols=["year", "month", "day", "hour", "cluster"])


def _usage(root: Path, *, wait: int | None) -> Path:
    """Write the month described in the module docstring; ``wait`` None: no ``workload/`` table at all."""
    write_table(
        root,
        "clusterqueue",
        [
            _queue("research", P5, "2026-06-01 00:00", 40, borrowed=0, version=1),
            _queue("research", P5, "2026-06-28 00:00", 56, borrowed=0, version=2),  # hour 648
            _queue("vision", P5, "2026-06-01 00:00", 96, borrowed=48, version=3),
            _queue("inference", G5, "2026-06-01 00:00", 8, borrowed=0, version=4),
        ],
        cluster=CLUSTER,
    )
    nodes = [(P5, 16), (G5, 4)]
    write_table(
        root,
        "node",
        [
            {
                "timestamp": t("2026-06-01 00:00"),
                "instance_group": itype,
                "instance_type": itype,
                "instance_id": f"i-{itype}-{n}",
                "status": "Running",
                "schedulable": True,
            }
            for itype, count in nodes
            for n in range(count)
        ],
        cluster=CLUSTER,
    )
    if wait is not None:
        base = {
            "namespace": "hyperpod-ns-vision",
            "team": "vision",
            "task_priority_class": "training-priority",
            "instance_type": P5,
            "gpu": float(wait),
            "finished": False,
        }
        _write_workloads(
            root,
            [
                # queued all month; an admitted and a finished workload are not waiting demand
                {
                    **base,
                    "workload_name": "big",
                    "timestamp": t("2026-06-01 00:00"),
                    "resource_version": "10",
                    "status": "QuotaReserved-False",
                    "admitted": False,
                },
                {
                    **base,
                    "workload_name": "run",
                    "timestamp": t("2026-06-01 00:00"),
                    "resource_version": "11",
                    "status": "QuotaReserved-True",
                    "admitted": True,
                },
                {
                    **base,
                    "workload_name": "done",
                    "timestamp": t("2026-06-02 00:00"),
                    "resource_version": "12",
                    "status": "Finished-True",
                    "admitted": False,
                    "finished": True,
                },
            ],
        )
    return root


def _proposal(usage: Path) -> tuple[_recommend.History, _recommend.Proposal]:
    platform = platforms.reference_platform()
    history = _recommend.read_history(platform, usage=usage, month=MONTH)
    return history, _recommend.recommend(platform, history)


def _reason(proposal: _recommend.Proposal, team: str) -> _recommend.Reason:
    (reason,) = (r for r in proposal.reasons if r.team == team)
    return reason


def test_percentiles_are_nearest_rank() -> None:
    values = [40.0] * 648 + [56.0] * 72
    assert _recommend.percentile(values) == 56.0
    assert _recommend.percentile(values, 50) == 40.0
    assert _recommend.percentile(list(range(1, 101))) == 95
    assert _recommend.percentile([]) == 0.0


def test_known_percentiles_give_exact_quotas(tmp_path: Path) -> None:
    history, proposal = _proposal(_usage(tmp_path, wait=16))
    research = _reason(proposal, "research")
    assert (research.p50_used, research.p95_used, research.p95_own_and_waiting) == (40.0, 56.0, 56.0)
    assert (research.hours_at_ceiling, research.waiting_gpu_hours) == (0, 0.0)
    assert proposal.quotas["research"] == {P5: 7}
    assert proposal.borrow_limits["research"] == 50  # nothing above its new guarantee: no evidence, unchanged
    assert "research: needed nothing above its proposed guarantee this month; borrowLimit kept at 50%." in (
        proposal.notes
    )
    assert proposal.quotas["inference"] == {G5: 2}
    assert (
        proposal.borrow_limits["inference"] == 50
    )  # it lends, never borrows: its limit as written (default)
    assert history.waiting_recorded and len(proposal.notes) == 1  # only the kept borrow limit above


def test_a_capped_team_with_a_queue_grows_its_guarantee(tmp_path: Path) -> None:
    _, proposal = _proposal(_usage(tmp_path, wait=16))
    vision = _reason(proposal, "vision")
    assert vision.hours_at_ceiling == HOURS  # 96 = 48 + floor(48 x 100 / 100): its ceiling every hour
    assert vision.waiting_gpu_hours == 16 * HOURS  # the queued workload only
    assert vision.p95_own_and_waiting == 48 + 16
    assert proposal.quotas["vision"] == {P5: 8}  # 6 -> 8: its queue
    # used + waiting above the new 64 GPUs: 96 + 16 - 64 = 48, i.e. 75 % of 64
    assert vision.p95_borrowed_above == 48.0
    assert proposal.borrow_limits["vision"] == 75


def test_without_the_workload_table_waiting_demand_is_said_unknown(tmp_path: Path) -> None:
    history, proposal = _proposal(_usage(tmp_path, wait=None))
    assert not history.waiting_recorded
    assert "no workload/ table" in history.pending_note
    assert proposal.quotas["vision"] == {P5: 6}  # nothing known beyond its cap
    assert _reason(proposal, "vision").hours_at_ceiling == HOURS
    assert any("waiting demand is unknown" in note for note in proposal.notes)


def test_over_capacity_minus_reserve_is_scaled_pro_rata_and_said(tmp_path: Path) -> None:
    _, proposal = _proposal(_usage(tmp_path, wait=32))
    # research 7 and vision 10 (48 + 32 = 80 GPUs) = 17 > 15 promisable: 7 x 15/17 = 6.18, 10 x 15/17 = 8.82
    assert _reason(proposal, "vision").p95_own_and_waiting == 80
    assert (proposal.quotas["research"][P5], proposal.quotas["vision"][P5]) == (6, 9)
    (note,) = proposal.notes
    assert "136 GPUs (17 instances) but 120 (15 instances) are promisable" in note
    assert "research 7 -> 6, vision 10 -> 9" in note


def test_the_diff_applies_keeps_comments_and_passes_validate_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = _usage(tmp_path / "usage", wait=16)
    policy = tmp_path / "platform.yaml"
    shutil.copy(platforms.PLATFORM_YAML, policy)
    proposed = tmp_path / "proposed.yaml"
    code = cli.main(
        ["recommend-quotas", "--usage", str(usage), "--month", MONTH, str(policy), "--write", str(proposed)]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "-      quotas: {ml.p5.48xlarge: 9}" in out and "+      quotas: {ml.p5.48xlarge: 7}" in out
    assert "-      borrowLimit: 100" in out and "+      borrowLimit: 75" in out
    old, new = policy.read_text().splitlines(), proposed.read_text().splitlines()
    changed = [(a, b) for a, b in zip(old, new, strict=True) if a != b]
    assert len(changed) == 4  # three quotas, vision's borrow limit; every comment and other line kept
    assert all(a.split(":")[0] == b.split(":")[0] for a, b in changed)
    applied = load_platform(proposed)
    assert applied.team("vision").compute.quotas == {P5: 8}
    assert applied.team("research").compute.borrow_limit == 50
    assert cli.main(["validate", str(proposed), "--baseline", str(policy)]) == 0
    assert "valid" in capsys.readouterr().out


def test_the_bill_impact_is_the_plans_cost_of_both_policies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    usage = _usage(tmp_path / "usage", wait=16)
    proposed = tmp_path / "proposed.yaml"
    args = ["recommend-quotas", "--usage", str(usage), "--month", MONTH, str(platforms.PLATFORM_YAML)]
    assert cli.main([*args, "--write", str(proposed)]) == 0
    out = capsys.readouterr().out
    before = build_plan(load_platform(platforms.PLATFORM_YAML), month=MONTH).cost
    after = build_plan(load_platform(proposed), month=MONTH).cost
    assert before is not None and after is not None
    impact = _recommend.bill_impact(
        load_platform(platforms.PLATFORM_YAML), load_platform(proposed), month=MONTH
    )
    for team, total in before.team_totals().items():
        assert impact.teams[team] == (total, after.team_totals()[team])
    # research gives back 2 p5 (16 GPUs x 720 h x 12.29 USD) under the reservation rule
    research_before, research_after = impact.teams["research"]
    assert research_before - research_after == Decimal(16 * HOURS) * Decimal("12.29")
    assert f"{research_after - research_before:+,.2f}" in out


def test_the_reasoning_and_the_waiting_signal_are_printed(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    usage = _usage(tmp_path, wait=16)
    args = cli._parser().parse_args(
        ["recommend-quotas", "--usage", str(usage), "--month", MONTH, str(platforms.PLATFORM_YAML)]
    )
    from hyperpod_tenancy.tools.recommend import command as recommend_quotas

    assert recommend_quotas.run(args, out=out, err=err) == 0
    text = out.getvalue()
    assert "waiting demand: read from workload/" in text
    assert "720 of 720" in text  # vision's hours at its ceiling
    assert "6 -> 8" in text and "100% -> 75%" in text


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda root: root / "missing", "not a folder"),
        (lambda root: _usage(root, wait=None), "no ClusterQueue usage of cluster 'shared-gpu' in 2026-09"),
    ],
    ids=["missing-usage-dir", "no-data-for-the-month"],
)
def test_bad_input_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    usage = make(tmp_path)  # type: ignore[operator]
    month = "2026-09" if "2026-09" in message else MONTH
    code = cli.main(
        ["recommend-quotas", "--usage", str(usage), "--month", month, str(platforms.PLATFORM_YAML)]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("hyperpod-tenancy: error: ") and message in err


_BLOCK_STYLE = """\
teams:
  - name: research   # the big one
    compute:
      quotas:
        ml.p5.48xlarge: 9   # nine
        "ml.g5.12xlarge": 2
      sharing: lend-and-borrow
  - name: "vision"
    compute: {quotas: {ml.p5.48xlarge: 6}}
chargeback:
  x: 1
"""


def test_block_quotas_are_edited_in_place_and_a_borrow_limit_is_added() -> None:
    proposal = _recommend.Proposal(
        quotas={"research": {P5: 7, G5: 1}}, borrow_limits={"research": 75}, reasons=(), notes=()
    )
    edited = _recommend.apply_to_yaml(_BLOCK_STYLE, proposal)
    assert edited == _BLOCK_STYLE.replace("9   # nine", "7   # nine").replace('": 2', '": 1').replace(
        "      sharing:", "      borrowLimit: 75\n      sharing:"
    )


def test_a_flow_compute_is_edited_in_place_and_gets_its_borrow_limit() -> None:
    proposal = _recommend.Proposal(
        quotas={"vision": {P5: 7}}, borrow_limits={"vision": 80}, reasons=(), notes=()
    )
    edited = _recommend.apply_to_yaml(_BLOCK_STYLE, proposal)
    assert edited == _BLOCK_STYLE.replace(
        "{quotas: {ml.p5.48xlarge: 6}}", "{quotas: {ml.p5.48xlarge: 7}, borrowLimit: 80}"
    )


_ANCHORED = """\
teams:
  - name: research
    compute: {quotas: &q {ml.p5.48xlarge: 6}}
  - name: vision
    compute: {quotas: *q}
"""


def test_a_layout_the_edit_cannot_change_is_refused_in_one_line() -> None:
    proposal = _recommend.Proposal(
        quotas={"research": {P5: 7}, "vision": {P5: 5}},
        borrow_limits={"research": 50, "vision": 50},
        reasons=(),
        notes=(),
    )
    with pytest.raises(_recommend.RecommendError, match=r"one number of the file for two teams"):
        _recommend.apply_to_yaml(_ANCHORED, proposal)
    one = _recommend.Proposal(quotas={"vision": {P5: 7}}, borrow_limits={"vision": 50}, reasons=(), notes=())
    with pytest.raises(_recommend.RecommendError, match=r"change what the proposal does not name"):
        _recommend.apply_to_yaml(_ANCHORED, one)  # the alias's number is research's too


_GPU_GRAIN = """\
teams:
  - name: vision
    compute:
      quotas:
        ml.p5.48xlarge:   # half of it for notebooks
          accelerators: 48
      sharing: lend-and-borrow
  - name: research
    compute: {quotas: {"ml.p5.48xlarge": {instances: 9}}}
"""


def test_amounts_are_edited_at_their_grain_in_block_and_flow_style() -> None:
    proposal = _recommend.Proposal(
        quotas={
            "vision": {P5: ResourceAmount(accelerators=60)},
            "research": {P5: ResourceAmount(instances=7)},
        },
        borrow_limits={"vision": 80, "research": 50},
        reasons=(),
        notes=(),
    )
    edited = _recommend.apply_to_yaml(_GPU_GRAIN, proposal)
    assert edited == _GPU_GRAIN.replace(
        "accelerators: 48", "accelerators: 60\n      borrowLimit: 80"
    ).replace("{instances: 9}", "{instances: 7}")


def _with_vision(quota: str) -> str:
    text = Path(platforms.PLATFORM_YAML).read_text(encoding="utf-8")
    assert text.count("quotas: {ml.p5.48xlarge: 6}") == 1
    return text.replace("quotas: {ml.p5.48xlarge: 6}", f"quotas: {quota}")


def test_a_gpu_grain_team_is_proposed_in_accelerators(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # vision holds its 6 instances as 48 GPUs; with 12 GPUs queued all month it needs 48 + 12 = 60 GPUs: as
    # accelerators 60, where whole instances would have rounded it up to 8 (64 GPUs)
    usage = _usage(tmp_path / "usage", wait=12)
    policy, proposed = tmp_path / "platform.yaml", tmp_path / "proposed.yaml"
    policy.write_text(_with_vision("{ml.p5.48xlarge: {accelerators: 48}}"), encoding="utf-8")
    args = [
        "recommend-quotas",
        "--usage",
        str(usage),
        "--month",
        MONTH,
        str(policy),
        "--write",
        str(proposed),
    ]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "+      quotas: {ml.p5.48xlarge: {accelerators: 60}}" in out
    assert "48 accelerators -> 60 accelerators" in out
    # over the new 60 GPUs: 96 used + 12 waiting - 60 = 48 GPUs, 80 % of 60
    assert "+      borrowLimit: 80" in out
    applied = load_platform(proposed)
    assert applied.team("vision").compute.quotas == {P5: ResourceAmount(accelerators=60)}
    assert applied.team("research").compute.quotas == {P5: 7}
    assert cli.main(["validate", str(proposed), "--baseline", str(policy)]) == 0
    same = tmp_path / "whole.yaml"
    same.write_text(_with_vision("{ml.p5.48xlarge: 6}"), encoding="utf-8")
    whole = _recommend.recommend(
        load_platform(same), _recommend.read_history(load_platform(same), usage=usage, month=MONTH)
    )
    assert whole.quotas["vision"] == {P5: 8}


def test_mixed_grains_are_scaled_in_gpus_around_what_vcpu_quotas_hold(tmp_path: Path) -> None:
    # vision asks for 48 + 32 = 80 GPUs as accelerators, research for 7 instances (56): 136 GPUs; inference
    # holds half a p5 in vCPUs (96 of 192), so 15 - 0.5 instances are left: 116 GPUs. Pro rata: research
    # 56 x 116/136 = 47.8 -> 40 in whole instances, vision 80 x 116/136 = 68.2 -> 68; 8 left: research's
    # remainder is larger, so it gets an instance (48); vision keeps 68: 48 + 68 = 116
    data = platforms.reference_data()
    data["teams"][1]["compute"]["quotas"] = {P5: {"accelerators": 40}}
    data["teams"][2]["compute"]["quotas"][P5] = {"vcpus": 96}
    platform = platforms.platform_from_dict(data)
    history = _recommend.read_history(platform, usage=_usage(tmp_path, wait=32), month=MONTH)
    proposal = _recommend.recommend(platform, history)
    assert proposal.quotas["research"][P5] == 6
    assert proposal.quotas["vision"][P5] == ResourceAmount(accelerators=68)
    assert proposal.quotas["inference"][P5] == ResourceAmount(vcpus=96)  # kept as written
    assert any("inference: its ml.p5.48xlarge quota (96 vcpus) is kept" in n for n in proposal.notes)
    (scaled,) = (n for n in proposal.notes if n.startswith(P5))
    assert (
        "but 116 (14.5 instances) are promisable (count - reserved less 0.5 held by quotas in vCPUs" in scaled
    )
    assert "research 7 -> 6, vision 80 accelerators -> 68 accelerators" in scaled
    _recommend.load_text(yaml.safe_dump(_as_yaml(data, proposal)), source="proposed")


def _as_yaml(data: dict[str, Any], proposal: _recommend.Proposal) -> dict[str, Any]:
    """Return the policy ``data`` with the proposal's quotas (as the file would hold them)."""
    out = copy.deepcopy(data)
    for team in out["teams"]:
        quotas = proposal.quotas.get(team["name"], {})
        team["compute"]["quotas"] = {k: v if isinstance(v, int) else v.given for k, v in quotas.items()}
    return out
