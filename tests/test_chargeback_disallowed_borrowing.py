"""Usage the policy does not allow is flagged, not billed silently: a ``sharing: lend`` team shown borrowing."""

from __future__ import annotations

import datetime as dt
import html
import json
from decimal import Decimal

import platforms

from hyperpod_tenancy.chargeback import report as rendering
from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import (
    CostInputs,
    HourlyCapacity,
    HourlyUsage,
    UsageInputs,
    config_from_json,
    config_to_json,
    team_config_from_json,
    team_config_to_json,
)
from hyperpod_tenancy.policy import chargeback_config

G5 = "ml.g5.12xlarge"
HOUR = dt.datetime(2026, 7, 1, tzinfo=dt.UTC)
MS = 3_600_000


def test_a_lend_only_team_shown_borrowing_is_flagged() -> None:
    # the reference policy: inference has `sharing: lend` (it lends, never borrows) and a quota of 3 g5 (12 GPUs)
    config = chargeback_config(platforms.reference_platform())
    inference = next(t for t in config.teams if t.name == "inference")
    assert not inference.borrows and all(t.borrows for t in config.teams if t.name != "inference")
    # the flag travels in the team's record and in the configuration of record
    assert team_config_from_json(team_config_to_json(inference)) == inference
    assert config_from_json(config_to_json(config)) == config
    usage = UsageInputs(
        usage=(
            # one hour: inference holds 16 GPUs, 4 above its 12 recorded as borrowed
            HourlyUsage(
                hour=HOUR,
                cluster=config.cluster,
                instance_type=G5,
                team="inference",
                gpu_ms=16 * MS,
                borrowed_gpu_ms=4 * MS,
            ),
        ),
        capacity=(
            HourlyCapacity(
                hour=HOUR, cluster=config.cluster, instance_type=G5, gpu_ms=16 * MS, unavailable_gpu_ms=0
            ),
        ),
    )
    report = compute_report(config, "2026-07", usage, CostInputs())
    assert report.disallowed_borrowing == (("inference", Decimal(4)),)
    flag = rendering.disallowed(report)
    assert flag is not None and flag.startswith(
        "BORROWING THE POLICY DOES NOT ALLOW: inference (4.0 GPU-hours)"
    )
    assert f"> **{flag}**" in rendering.render(report, "markdown").decode()
    assert (
        f'<p class="flagged" role="alert">{html.escape(flag)}</p>'
        in rendering.render(report, "html").decode()
    )
    assert json.loads(rendering.render(report, "json"))["disallowedBorrowing"] == [
        {"team": "inference", "borrowedGpuHours": 4.0}
    ]
    # billed as recorded (reservation: its 12 GPUs guaranteed + 4 borrowed, at the configured 1.77)
    assert next(r for r in report.rows if r.team == "inference").gpu_charge == Decimal("28.32")
