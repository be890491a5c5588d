"""The example policies under ``examples/``: each loads with exactly the warnings its header names, and synthesizes.

cfn-lint, CDK's template validation, cdk-nag and checkov run over the synthesized examples with the reference
platform's templates (``test_compliance.py``, ``test_checkov.py``: fixture ``borrowing_example``).
"""

from __future__ import annotations

import platforms
import pytest
from synth import Synth

from hyperpod_tenancy.policy import load_platform
from hyperpod_tenancy.policy.validation import policy_warnings
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

#: The warnings each example is expected to load with (its header says why).
EXPECTED_WARNINGS = {
    "borrowing-range": ["HPT-BORROW-LIMIT-RANGE"],
    "identity-center-account": ["HPT-CHARGEBACK-TAGS-PAYER"],
    "team-accounts": ["HPT-CHARGEBACK-TAGS-PAYER"],
    "partitions-and-topology": [],
}


def test_every_example_is_listed() -> None:
    assert platforms.example_names() == sorted(EXPECTED_WARNINGS)


@pytest.mark.parametrize("name", sorted(EXPECTED_WARNINGS))
def test_the_example_loads_with_the_warnings_its_header_names(name: str) -> None:
    path = platforms.EXAMPLES / name / "platform.yaml"
    platform = load_platform(path)  # raises on any error
    codes = [w.code for w in policy_warnings(platform)]
    assert codes == EXPECTED_WARNINGS[name]
    header = path.read_text(encoding="utf-8").split("\nname:", 1)[0]
    assert all(code in header for code in codes)


def test_the_borrowing_example_has_a_1000_percent_borrower_an_absolute_limit_and_a_gpu_quota(
    borrowing_example: Synth,
) -> None:
    platform = borrowing_example.platform
    assert platform.team("pretraining").compute.borrow_limit == 1000
    assert str(platform.team("finetune").compute.absolute_borrow_limits["ml.p5.48xlarge"]) == "8 accelerators"
    shares = {(s.team, s.instance_type): s for s in build_plan(platform, month="2026-12").shares}
    # pretraining: 32 GPUs + all 24 finetune lends (1,000 % would be 320); finetune: 24 + its absolute 8
    assert shares[("pretraining", "ml.p5.48xlarge")].burst_ceiling_gpus == 56
    assert shares[("finetune", "ml.p5.48xlarge")].burst_ceiling_gpus == 32
    quotas = [
        r["Properties"]
        for template in borrowing_example.templates.values()
        for r in template["Resources"].values()
        if r["Type"] == "AWS::SageMaker::ComputeQuota"
    ]
    sharing = {
        q["ComputeQuotaTarget"]["TeamName"]: q["ComputeQuotaConfig"]["ResourceSharingConfig"] for q in quotas
    }
    assert sharing["pretraining"] == {"Strategy": "LendAndBorrow", "BorrowLimit": 1000}
    assert sharing["finetune"]["AbsoluteBorrowLimits"] == [
        {"InstanceType": "ml.p5.48xlarge", "Accelerators": 8}
    ]
