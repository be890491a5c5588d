"""A team's guarantee is billed for the hours its quota exists (its queue's snapshots), not the whole month.

June 2026 (720 hours), three ml.p5.48xlarge instances (24 GPUs) all month at 10 USD a GPU-hour, three teams with a
guarantee of one instance (8 GPUs) each in the configuration of record:

* ``a`` exists all month;
* ``b`` is added on June 11 (first snapshot 00:30) and runs 8 GPUs from then to the end of the month;
* ``c`` is removed on June 20 (last snapshot 23:10).

Every figure below is derived by hand from those rows, in the comments.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from chargeback_data import month_config, t, write_table

from hyperpod_tenancy.chargeback import report as rendering
from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import BillingRule, CostInputs, Report, TeamPeriod
from hyperpod_tenancy.tools.chargeback.offline import run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-06"
P5 = "ml.p5.48xlarge"
GPUS = {P5: 8}


def _utc(text: str) -> dt.datetime:
    return t(text).replace(tzinfo=dt.UTC)


def _queue(ts: str, team: str, gpus: float, rv: int) -> dict[str, object]:
    return {
        "instance_type": P5,
        "timestamp": t(ts),
        "namespace": f"hyperpod-ns-{team}",
        "resource_version": str(rv),
        "team": team,
        "gpu_total": gpus,
        "gpu_borrowed": 0.0,
    }


@pytest.fixture(scope="module")
def usage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("usage")
    nodes = [
        {
            "timestamp": t("2026-06-01 00:00"),
            "instance_group": "p5",
            "instance_type": P5,
            "instance_id": f"i-{i}",
            "status": "Running",
            "schedulable": True,
        }
        for i in range(3)
    ]
    write_table(root, "node", nodes, cluster=CLUSTER)
    queues = [
        # a: carried in from May, still there in the last hour of June
        _queue("2026-05-31 23:00", "a", 0, 1),
        _queue("2026-06-30 23:50", "a", 0, 2),
        # b: created on June 11 at 00:30 with 8 GPUs running, to the end of the month
        _queue("2026-06-11 00:30", "b", 8, 3),
        _queue("2026-06-30 23:55", "b", 8, 4),
        # c: carried in from May, its queue's last snapshot on June 20 at 23:10 (then removed)
        _queue("2026-05-31 22:00", "c", 0, 5),
        _queue("2026-06-20 23:10", "c", 0, 6),
    ]
    write_table(root, "clusterqueue", queues, cluster=CLUSTER)
    return root


def _report(usage: Path, rule: BillingRule) -> Report:
    inputs, costs = run_queries(usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    config = month_config(
        cluster=CLUSTER, teams=["a", "b", "c"], quotas={P5: 1}, gpus=GPUS, rule=rule, prices={P5: Decimal(10)}
    )
    return compute_report(config, MONTH, inputs, costs)


def test_the_periods_are_the_hours_of_each_queues_snapshots(usage: Path) -> None:
    inputs, _ = run_queries(usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert inputs.team_periods == (
        TeamPeriod(team="a", start=_utc("2026-06-01 00:00"), end=_utc("2026-07-01 00:00")),
        TeamPeriod(team="b", start=_utc("2026-06-11 00:00"), end=_utc("2026-07-01 00:00")),
        TeamPeriod(team="c", start=_utc("2026-06-01 00:00"), end=_utc("2026-06-21 00:00")),
    )


def test_reservation_bills_each_guarantee_for_the_hours_its_quota_existed(usage: Path) -> None:
    report = _report(usage, BillingRule.RESERVATION)
    rows = {r.team: r for r in report.rows}
    # a: 720 h x 8 GPUs = 5,760 GPU-hours; b: June 11 to 30, 480 h x 8 = 3,840; c: June 1 to 20, 480 h x 8 = 3,840
    assert {t: rows[t].guaranteed_gpu_hours for t in "abc"} == {"a": 5760, "b": 3840, "c": 3840}
    # b ran 8 GPUs from June 11 00:30: 479.5 h x 8 = 3,836 GPU-hours, all within its guarantee
    assert (rows["b"].used_gpu_hours, rows["b"].borrowed_gpu_hours) == (3836, 0)
    # the idle owner: 24 GPUs x 720 h = 17,280 - 5,760 - 3,840 - 3,840 = 3,840 GPU-hours, at 10 USD
    assert {t: r.total for t, r in rows.items()} == {
        "a": Decimal("57600.00"),
        "b": Decimal("38400.00"),
        "c": Decimal("38400.00"),
        "(idle)": Decimal("38400.00"),
    }
    assert report.reconciliation.charged == Decimal("172800.00")


def test_usage_bills_what_ran_and_the_rest_to_the_idle_owner(usage: Path) -> None:
    report = _report(usage, BillingRule.USAGE)
    # b: 3,836 GPU-hours x 10; the idle owner: 17,280 - 3,836 = 13,444 GPU-hours x 10
    assert {r.team: r.total for r in report.rows} == {
        "a": Decimal("0.00"),
        "b": Decimal("38360.00"),
        "c": Decimal("0.00"),
        "(idle)": Decimal("134440.00"),
    }


def test_the_report_says_each_teams_billed_period(usage: Path) -> None:
    report = _report(usage, BillingRule.RESERVATION)
    markdown = rendering.render(report, "markdown").decode()
    assert "| b | 2026-06-11 00:00 | 2026-07-01 00:00 | 480 |" in markdown
    assert "| c | 2026-06-01 00:00 | 2026-06-21 00:00 | 480 |" in markdown
    assert "| a |" not in markdown.split("## Billed periods")[1].split("##")[0]  # a existed all month
    doc = json.loads(rendering.render(report, "json"))
    assert doc["billedPeriods"] == [
        {"team": "b", "start": "2026-06-11T00:00:00Z", "end": "2026-07-01T00:00:00Z", "hours": 480},
        {"team": "c", "start": "2026-06-01T00:00:00Z", "end": "2026-06-21T00:00:00Z", "hours": 480},
    ]


def test_a_team_of_the_configuration_whose_queue_never_existed_has_no_guarantee(usage: Path) -> None:
    inputs, _ = run_queries(usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    config = month_config(
        cluster=CLUSTER, teams=["a", "b", "c", "d"], quotas={P5: 1}, gpus=GPUS, prices={P5: Decimal(10)}
    )
    report = compute_report(config, MONTH, inputs, CostInputs())
    rows = {r.team: r for r in report.rows}
    # d was never onboarded on the cluster: no guarantee, nothing billed; its 8 GPUs stay with the idle owner
    assert (rows["d"].guaranteed_gpu_hours, rows["d"].total) == (0, Decimal("0.00"))
    assert rows["(idle)"].total == Decimal("38400.00")
    assert [p.team for p in report.billed_periods] == ["b", "c", "d"]
