"""Task Governance rendering: cfn-lint registry schemas, every sharing strategy, idle sharing disabled."""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import cfnlint
import platforms
import pytest
from cfn_lint import lint_template
from jsonschema import Draft7Validator

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, SharingStrategy

ARN = platforms.CLUSTER_ARN
SCHEMAS = Path(cfnlint.__file__).parent / "data" / "schemas"


@cache
def registry_schema(type_name: str) -> dict[str, Any]:
    """The cfn-lint (CloudFormation registry) schema of ``type_name`` as registered in us-east-1."""
    providers = json.loads((SCHEMAS / "providers" / "us-east-1.json").read_text())
    schema = json.loads((SCHEMAS / "resources" / f"{providers[type_name]}.json").read_text())
    assert schema["typeName"] == type_name
    return dict(schema)


def schema_errors(type_name: str, properties: dict[str, Any]) -> list[str]:
    validator = Draft7Validator(registry_schema(type_name))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(properties)]


def all_quotas(platform: Platform) -> dict[str, dict[str, Any]]:
    return {t.name: tg.compute_quota_properties(platform, t, cluster_arn=ARN) for t in platform.hosted_teams}


def scheduler(platform: Platform) -> dict[str, Any]:
    return tg.scheduler_config_properties(platform, cluster_arn=ARN, name="shared-gpu-policy")


# ------------------------------------------------------------------------------------------------ schemas


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_properties_validate_against_the_registry_schemas(name: str) -> None:
    platform = platforms.fairness_platform(name)
    assert schema_errors(tg.SCHEDULER_CONFIG_TYPE, scheduler(platform)) == []
    for team, props in all_quotas(platform).items():
        assert schema_errors(tg.COMPUTE_QUOTA_TYPE, props) == [], team


def test_schema_check_is_real() -> None:
    props = all_quotas(platforms.reference_platform())["research"]
    props["ComputeQuotaConfig"]["ResourceSharingConfig"]["Strategy"] = "LendAndBorrow "
    props["ComputeQuotaTarget"]["FairShareWeight"] = 101
    props["ClusterArn"] = "arn:aws:eks:us-east-1:111122223333:cluster/shared-gpu"
    errors = schema_errors(tg.COMPUTE_QUOTA_TYPE, props)
    assert len(errors) == 3, errors


@pytest.mark.parametrize(
    "name", ["reference", "mixed-accelerators", "idle-sharing-disabled", "borrowing-range"]
)
def test_cfn_lint_accepts_a_template_with_the_resources(name: str) -> None:
    platform = platforms.fairness_platform(name)
    resources: dict[str, Any] = {
        "Policy": {"Type": tg.SCHEDULER_CONFIG_TYPE, "Properties": scheduler(platform)}
    }
    for i, props in enumerate(all_quotas(platform).values()):
        resources[f"Quota{i}"] = {"Type": tg.COMPUTE_QUOTA_TYPE, "Properties": props, "DependsOn": "Policy"}
    template = {"AWSTemplateFormatVersion": "2010-09-09", "Resources": resources}
    matches = lint_template(template, "us-east-1")
    assert [f"{m.rule.id} {m.message}" for m in matches] == []


# ------------------------------------------------------------------------------------------ cluster policy


def test_scheduler_config() -> None:
    props = scheduler(platforms.reference_platform())
    assert props == {
        "Name": "shared-gpu-policy",
        "ClusterArn": ARN,
        "SchedulerConfig": {
            "PriorityClasses": [
                {"Name": "inference", "Weight": 100},
                {"Name": "training", "Weight": 70},
                {"Name": "experimentation", "Weight": 30},
            ],
            "FairShare": "Enabled",
            "IdleResourceSharing": "Enabled",
        },
    }
    off = scheduler(platforms.fair_share_disabled())["SchedulerConfig"]
    assert off["FairShare"] == "Disabled"
    assert (
        scheduler(platforms.idle_sharing_disabled())["SchedulerConfig"]["IdleResourceSharing"] == "Disabled"
    )


def test_scheduler_config_name_is_checked() -> None:
    with pytest.raises(TenancyError, match="shared_gpu"):
        tg.scheduler_config_properties(platforms.reference_platform(), cluster_arn=ARN, name="shared_gpu")
    with pytest.raises(TenancyError, match="longer than 63"):
        tg.scheduler_config_properties(platforms.reference_platform(), cluster_arn=ARN, name="a" + "-b" * 32)
    assert (
        schema_errors(
            tg.SCHEDULER_CONFIG_TYPE, {**scheduler(platforms.reference_platform()), "Name": "a" + "-b" * 32}
        )
        != []
    )


def test_cluster_arn_token_is_passed_through_untouched() -> None:
    token = "${Token[TOKEN.1234]}"
    platform = platforms.reference_platform()
    assert tg.scheduler_config_properties(platform, cluster_arn=token, name="p")["ClusterArn"] is token
    assert tg.compute_quota_properties(platform, platform.teams[0], cluster_arn=token)["ClusterArn"] is token


# ----------------------------------------------------------------------------------------- compute quotas


def test_lend_and_borrow_quota() -> None:
    assert all_quotas(platforms.reference_platform())["research"] == {
        "Name": "research-quota",
        "ClusterArn": ARN,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 9}],
            "ResourceSharingConfig": {"Strategy": "LendAndBorrow", "BorrowLimit": 50},
            "PreemptTeamTasks": "LowerPriority",
        },
        "ComputeQuotaTarget": {"TeamName": "research", "FairShareWeight": 60},
        "ActivationState": "Enabled",
    }


def test_every_strategy() -> None:
    quotas = all_quotas(platforms.mixed_accelerators())
    sharing = {t: q["ComputeQuotaConfig"]["ResourceSharingConfig"] for t, q in quotas.items()}
    assert sharing == {
        "research": {"Strategy": "LendAndBorrow", "BorrowLimit": 33},
        "vision": {"Strategy": "DontLend"},
        "inference": {"Strategy": "Lend"},
        "data-prep": {"Strategy": "LendAndBorrow", "BorrowLimit": 500},
    }
    assert quotas["vision"]["ComputeQuotaConfig"]["PreemptTeamTasks"] == "Never"
    assert quotas["research"]["ComputeQuotaConfig"]["ComputeQuotaResources"] == [
        {"InstanceType": "ml.p5.48xlarge", "Count": 7},
        {"InstanceType": "ml.trn1.32xlarge", "Count": 3},
        {"InstanceType": "ml.m5.2xlarge", "Count": 1},
    ]


def test_idle_sharing_disabled_renders_every_team_dont_lend() -> None:
    platform = platforms.idle_sharing_disabled()
    assert {t.compute.sharing for t in platform.teams} == {
        SharingStrategy.LEND_AND_BORROW,
        SharingStrategy.LEND,
    }
    for team, props in all_quotas(platform).items():
        assert props["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}, team
        assert tg.effective_sharing(platform, platform.team(team)) is SharingStrategy.DONT_LEND


def test_quota_names_fit_the_pattern() -> None:
    assert tg.compute_quota_name("research") == "research-quota"
    longest = "a" * (63 - len(tg.QUOTA_NAME_SUFFIX))
    assert tg.compute_quota_name(longest) == longest + "-quota"
    with pytest.raises(TenancyError, match="quota name"):
        tg.compute_quota_name(longest + "a")


def test_team_on_a_dedicated_cluster_gets_no_quota() -> None:
    base = platforms.reference_platform()
    outsider = dataclasses.replace(base.teams[0], name="secret", data_classification="restricted")
    platform = dataclasses.replace(base, teams=(*base.teams, outsider))
    with pytest.raises(TenancyError, match="secret"):
        tg.compute_quota_properties(platform, outsider, cluster_arn=ARN)
