"""The billing rule is signed off, not drifting: a term starts on the first day of a quarter or says why, names
who signed it off, and every report names the term in force and its sign-off."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from platforms import reference_data

from hyperpod_tenancy.chargeback import report as rendering
from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import (
    BillingRule,
    CostInputs,
    HourlyCapacity,
    UsageInputs,
    config_from_json,
    config_to_json,
)
from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import chargeback_config, platform_from_dict

P5 = "ml.p5.48xlarge"


def with_term(term: dict[str, object]) -> dict[str, object]:
    """The reference policy with ``term`` added after its term of 2026-01-01."""
    data = reference_data()
    data["chargeback"]["billingTerms"].append(term)
    return data


def _codes(data: dict[str, object]) -> list[tuple[str, str]]:
    """The (code, path) of every error of the policy ``data`` (none: it loads)."""
    try:
        platform_from_dict(data)
    except PolicyError as error:
        return [(i.code, i.path) for i in error.issues]
    return []


def _term(effective_from: str, **fields: object) -> dict[str, object]:
    return {"effectiveFrom": effective_from, "rule": "usage", "idleOwner": "shared", **fields}


def test_a_term_from_mid_quarter_is_an_error_unless_it_says_why() -> None:
    signed = {"signedOffBy": "cc-research, cc-vision, cc-platform (FIN-2026-031)"}
    # August 1st: the third quarter would be billed under two rules
    assert ("HPT-CHARGEBACK-QUARTER", "chargeback.billingTerms[1].effectiveFrom") in _codes(
        with_term(_term("2026-08-01", **signed))
    )
    # acknowledged with a reason: no finding
    reason = {"midQuarterReason": "the p5 reservation ended on July 31st; agreed by all cost centers"}
    assert _codes(with_term(_term("2026-08-01", **signed, **reason))) == []
    # the first day of a quarter needs no reason
    assert _codes(with_term(_term("2026-10-01", **signed))) == []


def test_a_term_without_a_sign_off_is_an_error() -> None:
    assert _codes(with_term(_term("2026-10-01"))) == [
        ("HPT-CHARGEBACK-SIGN-OFF", "chargeback.billingTerms[1].signedOffBy")
    ]


def test_the_report_names_the_term_in_force_and_who_signed_it_off() -> None:
    data = with_term(
        _term(
            "2026-08-01",
            signedOffBy="cc-research, cc-vision, cc-platform (FIN-2026-031)",
            midQuarterReason="the p5 reservation ended on July 31st",
        )
    )
    config = chargeback_config(platform_from_dict(data))
    # the configuration of record keeps the sign-off and the reason
    assert config_from_json(config_to_json(config)) == config
    hours = [dt.datetime(2026, 9, 1, h, tzinfo=dt.UTC) for h in range(2)]
    usage = UsageInputs(
        usage=(),
        capacity=tuple(
            HourlyCapacity(
                hour=h, cluster=config.cluster, instance_type=P5, gpu_ms=8 * 3_600_000, unavailable_gpu_ms=0
            )
            for h in hours
        ),
    )
    report = compute_report(config, "2026-09", usage, CostInputs())
    assert report.rule is BillingRule.USAGE
    markdown = rendering.render(report, "markdown").decode()
    assert (
        "- **Billing term:** in force since 2026-08-01, signed off by cc-research, cc-vision, cc-platform "
        "(FIN-2026-031); starts mid-quarter: the p5 reservation ended on July 31st"
    ) in markdown
    assert json.loads(rendering.render(report, "json"))["billingTerm"] == {
        "effectiveFrom": "2026-08-01",
        "signedOffBy": "cc-research, cc-vision, cc-platform (FIN-2026-031)",
        "midQuarterReason": "the p5 reservation ended on July 31st",
    }
    # 2 hours x 8 GPUs at the reference policy's 12.29 USD, all idle, to the idle owner (shared)
    assert report.reconciliation.charged == Decimal("196.64")


def test_the_pipeline_refuses_a_mid_quarter_term_without_a_reason(tmp_path: Path) -> None:
    from pipeline_template import chargeback_pipeline_template

    from hyperpod_tenancy.errors import TenancyError

    with pytest.raises(
        TenancyError, match=r"billing term from 2026-08-01 does not start on the first day of a quarter"
    ):
        chargeback_pipeline_template(tmp_path, effective_from=dt.date(2026, 8, 1))
