"""Fractional seconds and duplicate records in the collectors' tables: every second counted once, and only once.

Kubernetes and the collectors write times with fractional seconds (``2026-06-01T01:00:00.500Z``). The SQL runs
here on DuckDB over hand-written Parquet in the collector schema; every expected figure is derived by hand in the
comments from the rows below, not read back from the engine.
"""

from __future__ import annotations

import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from chargeback_data import month_config, t, write_table

from hyperpod_tenancy.chargeback.engine import compute_report, preemption_loss
from hyperpod_tenancy.chargeback.model import BillingRule, CostInputs, gpu_hours
from hyperpod_tenancy.tools.chargeback.offline import run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-06"  # 30 days: 720 hours
P5 = "ml.p5.48xlarge"
GPUS = {P5: 8}
PRICE = Decimal(10)  # USD per GPU-hour (the price table: no CUR)


def _utc(text: str) -> dt.datetime:
    return t(text).replace(tzinfo=dt.UTC)


def _node(ts: str, iid: str = "i-1") -> dict[str, object]:
    return {
        "timestamp": t(ts),
        "instance_group": "p5",
        "instance_type": P5,
        "instance_id": iid,
        "status": "Running",
        "schedulable": True,
    }


def _eviction(ts: str, *, admitted: str, last: str | None) -> dict[str, object]:
    return {
        "timestamp": t(ts),
        "namespace": "hyperpod-ns-a",
        "workload": "pretrain-7",
        "priority_class": "training-priority",
        "instance_type": P5,
        "gpus": 16,
        "admitted_at": t(admitted),
        "checkpoint_interval_minutes": 30,
        "last_checkpoint": t(last) if last else None,
    }


@pytest.fixture(scope="module")
def full_month(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One p5 instance (8 GPUs) all June, fully used by team a; the second node snapshot is half a second late."""
    root = tmp_path_factory.mktemp("usage")
    # the inventory: 00:00:00 and 01:00:00.500, which holds until the end of June
    write_table(
        root, "node", [_node("2026-06-01 00:00:00"), _node("2026-06-01 01:00:00.500")], cluster=CLUSTER
    )
    # team a holds all 8 GPUs from May into July
    queue = {
        "instance_type": P5,
        "timestamp": t("2026-05-31 23:00"),
        "namespace": "hyperpod-ns-a",
        "resource_version": "1",
        "team": "a",
        "gpu_total": 8.0,
        "gpu_borrowed": 0.0,
    }
    write_table(root, "clusterqueue", [queue], cluster=CLUSTER)
    # the heartbeat is not what this module is about: none, so the report lists one gap (not checked here)
    evictions = [
        _eviction(
            "2026-06-10 02:00:00.400", admitted="2026-06-09 21:00:00.100", last="2026-06-10 01:20:00.900"
        )
    ]
    write_table(root, "eviction", evictions, cluster=CLUSTER)
    return root


def test_the_inventory_counts_the_half_second_past_the_hour(full_month: Path) -> None:
    usage, _ = run_queries(usage=full_month, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    hours = [(c.hour, gpu_hours(c.gpu_ms)) for c in usage.capacity]
    assert len(hours) == 720
    # 01:00-02:00: 0.5 s of the first snapshot's period + 3599.5 s of the second = one whole hour of 8 GPUs
    assert hours[1] == (_utc("2026-06-01 01:00"), Decimal(8))
    # the instance was there every millisecond of June: 720 h x 8 GPUs
    assert sum(g for _, g in hours) == 720 * 8


@pytest.mark.parametrize("rule", list(BillingRule))
def test_a_fully_used_month_bills_every_gpu_hour_under_both_rules(
    full_month: Path, rule: BillingRule
) -> None:
    usage, _ = run_queries(usage=full_month, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    config = month_config(
        cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS, rule=rule, prices={P5: PRICE}
    )
    report = compute_report(config, MONTH, usage, CostInputs())
    # team a is guaranteed and uses all 8 GPUs for 720 hours at 10 USD: 57,600.00 USD, nothing idle
    by_team = {r.team: r.total for r in report.rows}
    assert by_team == {"a": Decimal("57600.00"), "(idle)": Decimal("0.00")}
    assert report.reconciliation.charged == Decimal("57600.00")


def test_eviction_times_keep_their_fractions(full_month: Path) -> None:
    usage, _ = run_queries(usage=full_month, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert len(usage.evictions) == 1
    (eviction,) = usage.evictions
    assert eviction.time == _utc("2026-06-10 02:00:00.400")
    assert eviction.last_checkpoint == _utc("2026-06-10 01:20:00.900")
    assert eviction.run_started == _utc("2026-06-09 21:00:00.100")
    # 16 GPUs x (02:00:00.4 - 01:20:00.9 = 2399.5 s) = 38,392 GPU-seconds = 10.66444... GPU-hours
    lost, _ = preemption_loss(eviction)
    assert abs(lost - Decimal(38392) / 3600) < Decimal("1e-20")
    config = month_config(cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS, prices={P5: PRICE})
    report = compute_report(config, MONTH, usage, CostInputs())
    (loss,) = report.preemption_losses
    assert (loss.evictions, loss.lost_gpu_hours) == (1, Decimal("10.6644"))


def test_a_silence_half_a_second_over_the_threshold_is_a_gap(tmp_path: Path) -> None:
    # node snapshots 15 min 0.5 s apart: longer than the 15-minute threshold, so a gap
    write_table(
        tmp_path,
        "node",
        [
            _node(f"2026-06-01 {h:02d}:{m:02d}")
            for h in range(24)
            for m in range(0, 60, 5)
            if (h, m) <= (10, 0)
        ]
        + [_node("2026-06-01 10:15:00.500")],
        cluster=CLUSTER,
    )
    queue = {
        "instance_type": P5,
        "timestamp": t("2026-06-01 00:00"),
        "namespace": "hyperpod-ns-a",
        "gpu_total": 0.0,
    }
    write_table(tmp_path, "clusterqueue", [{**queue, "resource_version": "1", "team": "a"}], cluster=CLUSTER)
    usage, _ = run_queries(usage=tmp_path, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    node_gaps = [(g.start, g.end) for g in usage.collection_gaps if g.table == "node"]
    assert node_gaps[0] == (_utc("2026-06-01 10:00"), _utc("2026-06-01 10:15:00.500"))


def test_a_copied_eviction_record_counts_once(full_month: Path, tmp_path: Path) -> None:
    root = tmp_path / "usage"
    for table in ("node", "clusterqueue"):
        shutil.copytree(full_month / table, root / table)
    first = _eviction("2026-06-10 02:00:00.400", admitted="2026-06-09 21:00:00.100", last=None)
    later = _eviction(
        "2026-06-10 02:00:00.400", admitted="2026-06-09 21:00:00.100", last="2026-06-10 01:20:00.900"
    )
    other = _eviction("2026-06-12 09:00:00", admitted="2026-06-12 08:00:00", last=None)
    # the same object stored three times (a re-run, a replicated or restored prefix), once with the checkpoint the
    # scanner found later; and another eviction of the same workload two days later
    write_table(root, "eviction", [first, other], cluster=CLUSTER)
    write_table(root, "eviction", [first], cluster=CLUSTER)
    write_table(root, "eviction", [later], cluster=CLUSTER)
    usage, _ = run_queries(usage=root, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert [(e.time, e.last_checkpoint) for e in usage.evictions] == [
        (_utc("2026-06-10 02:00:00.400"), _utc("2026-06-10 01:20:00.900")),
        (_utc("2026-06-12 09:00"), None),
    ]
    config = month_config(cluster=CLUSTER, teams=["a"], quotas={P5: 1}, gpus=GPUS, prices={P5: PRICE})
    report = compute_report(config, MONTH, usage, CostInputs())
    (loss,) = report.preemption_losses
    # 10.66444 GPU-hours measured (above) + 16 GPUs x 30 minutes declared = 8 GPU-hours; two evictions, not four
    assert (loss.evictions, loss.lost_gpu_hours) == (2, Decimal("18.6644"))
