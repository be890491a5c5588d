"""GPU-hours lost to preemption are priced, per team and per cost center (figures by hand)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

from hyperpod_tenancy.chargeback import report as rendering
from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import (
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    CostInputs,
    Eviction,
    HourlyCapacity,
    TeamConfig,
    UsageInputs,
)

CLUSTER = "shared-gpu"
P5, G5 = "ml.p5.48xlarge", "ml.g5.12xlarge"
HOUR = dt.datetime(2026, 7, 1, tzinfo=dt.UTC)


def _eviction(team: str, itype: str, gpus: int, *, run_minutes: int, since_checkpoint: int) -> Eviction:
    at = HOUR + dt.timedelta(minutes=run_minutes)
    return Eviction(
        time=at,
        cluster=CLUSTER,
        team=team,
        instance_type=itype,
        workload=f"{team}-job",
        priority_class="training-priority",
        gpus=gpus,
        run_started=HOUR,
        last_checkpoint=at - dt.timedelta(minutes=since_checkpoint),
    )


def test_lost_gpu_hours_are_priced_per_team_and_cost_center() -> None:
    config = ChargebackConfig(
        cluster=CLUSTER,
        terms=(
            BillingTerm(effective_from=dt.date(2026, 1, 1), rule=BillingRule.USAGE, idle_owner="platform"),
        ),
        teams=(
            TeamConfig(name="a", cost_center="cc-research", quotas={P5: 1}),
            TeamConfig(name="b", cost_center="cc-research", quotas={G5: 1}),
            TeamConfig(name="c", cost_center="cc-vision", quotas={P5: 1}),
        ),
        gpus_per_instance={P5: 8, G5: 4},
        prices={P5: Decimal("12.29"), G5: Decimal("1.7725")},
    )
    usage = UsageInputs(
        usage=(),
        capacity=tuple(
            HourlyCapacity(
                hour=HOUR, cluster=CLUSTER, instance_type=t, gpu_ms=g * 3_600_000, unavailable_gpu_ms=0
            )
            for t, g in ((P5, 16), (G5, 4))
        ),
        evictions=(
            # a: 8 GPUs, 30 minutes since its checkpoint = 4 GPU-hours x 12.29 = 49.16
            _eviction("a", P5, 8, run_minutes=50, since_checkpoint=30),
            # b: 4 GPUs, 45 minutes = 3 GPU-hours x 1.7725 = 5.3175 -> 5.32
            _eviction("b", G5, 4, run_minutes=50, since_checkpoint=45),
            # c: 8 GPUs, 15 minutes = 2 GPU-hours x 12.29 = 24.58
            _eviction("c", P5, 8, run_minutes=50, since_checkpoint=15),
        ),
    )
    report = compute_report(config, "2026-07", usage, CostInputs())
    priced = {(p.team, p.cost_center): (p.lost_gpu_hours, p.lost_usd) for p in report.preemption_losses}
    assert priced == {
        ("a", "cc-research"): (Decimal(4), Decimal("49.16")),
        ("b", "cc-research"): (Decimal(3), Decimal("5.32")),
        ("c", "cc-vision"): (Decimal(2), Decimal("24.58")),
    }
    markdown = rendering.render(report, "markdown").decode()
    per_center = markdown.split("## Preemption loss per cost center")[1].split("##")[0]
    # cc-research: 4 + 3 = 7 GPU-hours, 49.16 + 5.32 = 54.48; cc-vision 24.58; all: 9 GPU-hours, 79.06
    assert "| cc-research | 2 | 7.0 | 54.48 |" in per_center
    assert "| cc-vision | 1 | 2.0 | 24.58 |" in per_center
    assert "| all | 3 | 9.0 | 79.06 |" in per_center
    doc = json.loads(rendering.render(report, "json"))
    assert {p["team"]: p["lostUsd"] for p in doc["preemptionLosses"]} == {"a": 49.16, "b": 5.32, "c": 24.58}
