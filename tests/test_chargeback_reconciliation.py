"""A month that does not reconcile fails, and credits and refunds are listed, never hidden in a price.

The bill is a CUR 2.0 export written by hand (``chargeback_data.cur_line``), read by the shipped SQL on DuckDB; every
expected figure is derived by hand below.
"""

from __future__ import annotations

import html
import json
from decimal import Decimal
from pathlib import Path

import pytest
from chargeback_data import cur_line, month_config, t, write_cur, write_table

from hyperpod_tenancy.chargeback import report as rendering
from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import BillCredit, BillingRule
from hyperpod_tenancy.tools.chargeback.offline import run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-06"  # 30 days: 720 hours
P5 = "ml.p5.48xlarge"
GPUS = {P5: 8}


@pytest.fixture(scope="module")
def usage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One p5 instance (8 GPUs) all June; team a (a guarantee of one instance) runs nothing."""
    root = tmp_path_factory.mktemp("usage")
    node = {
        "timestamp": t("2026-06-01 00:00"),
        "instance_group": "p5",
        "instance_type": P5,
        "instance_id": "i-1",
        "status": "Running",
        "schedulable": True,
    }
    write_table(root, "node", [node], cluster=CLUSTER)
    queue = {
        "instance_type": P5,
        "timestamp": t("2026-06-01 00:00"),
        "namespace": "hyperpod-ns-a",
        "gpu_total": 0.0,
    }
    write_table(root, "clusterqueue", [{**queue, "resource_version": "1", "team": "a"}], cluster=CLUSTER)
    return root


def _bill(tmp_path: Path, *extra: dict[str, object], instance_cost: str = "57600") -> Path:
    lines = [
        # 720 instance-hours at 80 USD: 10 USD a GPU-hour
        cur_line(
            "AmazonSageMaker", f"USE1-Cluster:{P5}", "720", instance_cost, cluster=CLUSTER, period=MONTH
        ),
        cur_line("AmazonFSx", "USE1-Throughput", "1", "500", cluster=CLUSTER, period=MONTH),
        *extra,
    ]
    return write_cur(tmp_path / "cur.parquet", lines)


@pytest.mark.parametrize("rule", list(BillingRule))
def test_credits_and_refunds_are_listed_not_taken_off_the_price(
    usage: Path, tmp_path: Path, rule: BillingRule
) -> None:
    cur = _bill(
        tmp_path,
        # a promotional credit against the instances, and a refund of an FSx charge
        cur_line(
            "AmazonSageMaker",
            f"USE1-Cluster:{P5}",
            "0",
            "-1000",
            cluster=CLUSTER,
            period=MONTH,
            line_type="Credit",
        ),
        cur_line(
            "AmazonFSx", "USE1-Throughput", "0", "-50", cluster=CLUSTER, period=MONTH, line_type="Refund"
        ),
    )
    inputs, costs = run_queries(usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=cur)
    assert costs.credits == (
        BillCredit(kind="credit", name=P5, cost=Decimal(-1000)),
        BillCredit(kind="refund", name="fsx", cost=Decimal(-50)),
    )
    config = month_config(cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS, rule=rule)
    report = compute_report(config, MONTH, inputs, costs)
    # the price is the bill's 57,600 over 720 instance-hours x 8 GPUs, not (57,600 - 1,000) / 5,760 = 9.826...
    assert report.gpu_hour_prices == {P5: Decimal("10.000000")}
    rec = report.reconciliation
    # charged: 5,760 GPU-hours x 10 + 500 of FSx = 58,100; the bill before credits: 58,100 (after: 57,050)
    assert (rec.charged, rec.bill, rec.difference) == (Decimal("58100.00"), Decimal(58100), Decimal("0.00"))
    assert not rec.flagged and not rec.failed
    markdown = rendering.render(report, "markdown").decode()
    assert (
        "credits and refunds $-1,050.00 (listed below, allocated to no team): the bill after them is $57,050.00"
        in markdown
    )
    assert "| credit | ml.p5.48xlarge | -1,000.00 |" in markdown
    assert "| refund | fsx | -50.00 |" in markdown
    doc = json.loads(rendering.render(report, "json"), parse_float=Decimal)
    assert doc["reconciliation"]["credits"] == [
        {"kind": "credit", "against": P5, "usd": Decimal("-1000.00")},
        {"kind": "refund", "against": "fsx", "usd": Decimal("-50.00")},
    ]


@pytest.mark.parametrize("rule", list(BillingRule))
def test_a_bill_that_does_not_match_fails_the_month(usage: Path, tmp_path: Path, rule: BillingRule) -> None:
    # the CUR's lines add up to 58,100, but its total says 59,100 (a line of the cluster the query missed)
    cur = _bill(tmp_path)
    inputs, costs = run_queries(usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=cur)
    assert costs.bill_total == Decimal(58100)
    wrong = type(costs)(
        instance_types=costs.instance_types, shared=costs.shared, teams=costs.teams, bill_total=Decimal(59100)
    )
    config = month_config(cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS, rule=rule)
    report = compute_report(config, MONTH, inputs, wrong)
    rec = report.reconciliation
    # 58,100 charged against 59,100: -1,000, 1.69 % of the bill, above the 0.5 % tolerance
    assert (rec.charged, rec.difference) == (Decimal("58100.00"), Decimal("-1000.00"))
    assert rec.flagged and rec.failed and rec.unknown_teams == ()
    failed = rendering.failure(report)
    assert failed is not None
    assert failed.startswith(
        "RECONCILIATION FAILED: the rows charge $58,100.00 against a bill of $59,100.00 before credits and refunds, "
        "a difference of $-1,000.00 (1.69 %), above the tolerance of 0.50 %."
    )
    assert rendering.render(report, "markdown").decode().splitlines()[2] == f"> **{failed}**"
    assert (
        f'<p class="flagged" role="alert">{html.escape(failed)}</p>'
        in rendering.render(report, "html").decode()
    )


def test_a_month_within_tolerance_does_not_fail(usage: Path, tmp_path: Path) -> None:
    inputs, costs = run_queries(
        usage=usage, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=_bill(tmp_path)
    )
    config = month_config(cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS)
    report = compute_report(config, MONTH, inputs, costs)
    assert rendering.failure(report) is None and report.reconciliation.difference == 0
