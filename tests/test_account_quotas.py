"""Account quotas a number of teams runs into: ``validate`` warns (rule code, quota name and code) above a default.

Per quota: at its default no warning, one team more and the warning names the quota, its Service Quotas code (or
that it has none) and whether it can be raised. The per-team and platform counts the rules use are checked
against what the reference platform synthesizes, so a construct that adds a role or an association per team
fails here instead of at deploy.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import platforms
import pytest
import yaml
from scale import platform_data
from synth import Synth, resources_of

from hyperpod_tenancy.cli import main
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import FairnessBackend, Platform, platform_from_dict, policy_warnings
from hyperpod_tenancy.policy.rules import quotas
from hyperpod_tenancy.policy.rules._base import run_rules
from hyperpod_tenancy.policy.rules.quotas import QUOTAS, AccountQuota, need

_BASE = platform_from_dict(platform_data(range(1), FairnessBackend.TASK_GOVERNANCE))


def _with_teams(count: int, *, studio: bool = True) -> Platform:
    """The base platform with ``count`` copies of its generated team (only the quota rules run on it)."""
    template = dataclasses.replace(_BASE.teams[-1], studio=studio)
    teams = tuple(dataclasses.replace(template, name=f"team-{i:04d}") for i in range(count))
    return dataclasses.replace(_BASE, teams=teams)


def _teams_needing(quota: AccountQuota, amount: int) -> int:
    """The fewest teams for which the platform needs at least ``amount`` of ``quota`` (needs grow linearly)."""
    one, two = need(quota, _with_teams(1)), need(quota, _with_teams(2))
    per_team, fixed = two - one, one - (two - one)
    return max(1, -(-(amount - fixed) // per_team))


def _warnings(platform: Platform, quota: AccountQuota) -> list[PolicyIssue]:
    return [i for i in run_rules(quotas.RULES, platform) if i.code == quota.code]


@pytest.mark.parametrize("quota", QUOTAS, ids=lambda q: q.code)
def test_a_platform_above_the_default_is_warned_with_the_quota_name_and_code(quota: AccountQuota) -> None:
    teams = _teams_needing(quota, quota.default + 1)
    at, above = _with_teams(teams - 1), _with_teams(teams)
    # the most teams within the default (a need of exactly the default, where the counts reach it, is fine)
    assert need(quota, at) <= quota.default < need(quota, above)
    assert not _warnings(at, quota)
    (issue,) = _warnings(above, quota)
    assert quota.name in issue.message and str(need(quota, above)) in issue.message
    if quota.service_quota is not None:
        assert quota.service_quota[1] in issue.message
    else:
        assert "not in Service Quotas" in issue.message
    if quota.adjustable:
        assert "request an increase" in issue.fix and str(need(quota, above)) in issue.fix
    else:
        assert "cannot be raised" in issue.fix


def test_teams_without_studio_need_no_domain_and_one_access_entry() -> None:
    platform = _with_teams(100, studio=False)
    assert need(quotas.STUDIO_DOMAINS, platform) == 0
    assert need(quotas.ACCESS_ENTRIES, platform) == 100 + quotas.PLATFORM_ACCESS_ENTRIES


def test_the_reference_platform_is_within_every_default() -> None:
    assert not [i for i in policy_warnings(platforms.reference_platform()) if i.code.startswith("HPT-QUOTA-")]


def test_the_studio_domain_default_binds_at_the_sixth_team() -> None:
    five = platform_from_dict(platform_data(range(4), FairnessBackend.TASK_GOVERNANCE))  # research + 4
    six = platform_from_dict(platform_data(range(5), FairnessBackend.TASK_GOVERNANCE))
    assert not [i for i in policy_warnings(five) if i.code == quotas.STUDIO_DOMAINS.code]
    assert [i for i in policy_warnings(six) if i.code == quotas.STUDIO_DOMAINS.code]


def test_validate_prints_the_quota_warnings(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:

    path = Path(str(tmp_path)) / "platform.yaml"
    path.write_text(yaml.safe_dump(platform_data(range(510), FairnessBackend.TASK_GOVERNANCE)))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert quotas.PERMISSION_SETS_PER_ACCOUNT.code in out and quotas.STUDIO_DOMAINS.code in out
    assert quotas.IAM_ROLES.code in out and "L-FE177D64" in out


def _count(synth: Synth, type_: str, stacks: list[str]) -> int:
    return sum(len(resources_of(synth.templates[s], type_)) for s in stacks)


def test_the_counts_the_rules_use_are_what_the_stacks_create(reference: Synth) -> None:
    stage = reference.stage
    shared = [stage.cluster_stack.stack_name]
    if stage.chargeback_stack is not None:
        shared.append(stage.chargeback_stack.stack_name)
    assert _count(reference, "AWS::IAM::Role", shared) <= quotas.PLATFORM_ROLES
    assert (
        _count(reference, "AWS::EKS::PodIdentityAssociation", shared)
        <= quotas.PLATFORM_POD_IDENTITY_ASSOCIATIONS
    )
    assert _count(reference, "AWS::EKS::AccessEntry", shared) <= quotas.PLATFORM_ACCESS_ENTRIES
    for team in reference.platform.hosted_teams:
        stack = [stage.team_stacks[team.name].stack_name]
        # execution and workload roles, the dashboard widgets' one with chargeback; Identity Center provisions one more
        chargeback = int(reference.platform.chargeback is not None)
        assert _count(reference, "AWS::IAM::Role", stack) == 2 + chargeback, team.name
        assert _count(reference, "AWS::EKS::PodIdentityAssociation", stack) == 1, team.name
        assert _count(reference, "AWS::EKS::AccessEntry", stack) == 1 + int(team.studio), team.name
        assert _count(reference, "AWS::SSO::PermissionSet", stack) == 1, team.name
        assert _count(reference, "AWS::SageMaker::Domain", stack) == int(team.studio), team.name


def test_no_rule_per_team_lands_on_the_api_endpoint_group(reference: Synth) -> None:
    """Designed around rather than warned: the endpoint's group admits one client group, whatever the teams."""
    rules = resources_of(reference.cluster, "AWS::EC2::SecurityGroupIngress")
    endpoint = reference.stage.cluster_stack.resolve(
        reference.stage.cluster_stack.cluster.api_endpoint_security_group.security_group_id
    )
    on_endpoint = [r for r in rules.values() if r["Properties"]["GroupId"] == endpoint]
    assert len(on_endpoint) <= 2  # the client group (and nothing per team)
    for team in reference.platform.hosted_teams:
        assert not resources_of(reference.team(team.name), "AWS::EC2::SecurityGroupIngress")
