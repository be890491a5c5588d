"""The tenancy plan: the policy resolved once, what the stacks are built from, and a typed way to change teams.

Each fact of the plan is checked against what the synthesized stacks say (the permission set's name, the cost
center tag, the stack's ID), so the plan cannot drift from what is deployed. A team added in code goes through
every rule a team of ``platform.yaml`` goes through, and a stage built from the changed plan has its stack.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import platforms
import pytest
from synth import Synth, resources_of, synthesize

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import ComputeAllocation, Team, TeamIdentity, names
from hyperpod_tenancy.policy.plan import TenancyPlan


@pytest.fixture(scope="module")
def plan() -> TenancyPlan:
    return TenancyPlan.resolve(platforms.reference_platform())


def _newcomer(plan: TenancyPlan, **compute: int) -> Team:
    """A team like the reference's first, under another name, GID and Identity Center group."""
    first = plan.platform.teams[0]
    gids = {t.identity.posix_gid for t in plan.platform.teams}
    return dataclasses.replace(
        first,
        name="newcomer",
        identity=TeamIdentity(group_id="90000000-0000-0000-0000-000000000001", posix_gid=max(gids) + 1),
        compute=dataclasses.replace(first.compute, quotas=dict(compute)),
        cost_center="cc-newcomer",
    )


def _with_room(plan: TenancyPlan) -> tuple[TenancyPlan, str]:
    """The plan with one instance of room on the first team's first type (the first team gives one back)."""
    first = plan.platform.teams[0]
    itype, count = next(iter(first.compute.quotas.items()))
    quotas = {**first.compute.quotas, itype: count - 1}
    return plan.with_team(
        dataclasses.replace(first, compute=dataclasses.replace(first.compute, quotas=quotas))
    ), itype


def test_the_plan_says_what_the_team_stacks_deploy(plan: TenancyPlan, reference: Synth) -> None:
    assert [t.name for t in plan.teams] == [t.name for t in reference.platform.hosted_teams]
    for team in plan.teams:
        assert reference.stage.team_stacks[team.name].node.id == team.stack_id
        permission_sets = resources_of(reference.team(team.name), "AWS::SSO::PermissionSet")
        assert [r["Properties"]["Name"] for r in permission_sets.values()] == [team.permission_set]
        assert team.namespace == names.namespace(team.name)
        assert team.classes == tuple(sorted(team.classes, key=lambda pc: -pc.weight))
        for itype, count in team.quotas.items():
            assert team.guaranteed_gpus[itype] == count * plan.cluster.gpus_per_instance[itype]
    assert plan.cluster.fairness.key == reference.platform.fairness_backend


def test_the_plan_of_a_platform_with_chargeback_carries_its_configuration(plan: TenancyPlan) -> None:
    assert plan.chargeback is not None
    assert {t.name: t.cost_center for t in plan.chargeback.teams} == {
        t.name: t.cost_center for t in plan.teams
    }


def test_a_team_added_in_code_passes_every_rule(plan: TenancyPlan) -> None:
    roomy, itype = _with_room(plan)
    grown = roomy.with_team(_newcomer(roomy, **{itype: 1}))
    assert grown.team("newcomer").cost_center == "cc-newcomer"
    assert [t.name for t in grown.teams][-1] == "newcomer"
    assert (
        plan.with_team(dataclasses.replace(plan.platform.teams[0], cost_center="x")).teams[0].cost_center
        == "x"
    )

    too_big = _newcomer(roomy, **{itype: 2})
    with pytest.raises(PolicyError) as refused:
        roomy.with_team(too_big)
    assert "TenancyPlan.with_team('newcomer')" in str(refused.value)
    assert [issue.code for issue in refused.value.issues] == ["HPT-QUOTA-CAPACITY"]
    assert "newcomer 2" in refused.value.issues[0].message

    taken = dataclasses.replace(_newcomer(roomy, **{itype: 1}), identity=roomy.platform.teams[0].identity)
    with pytest.raises(PolicyError, match=r"GID|group"):
        roomy.with_team(taken)


def test_removing_a_team_that_does_not_exist_names_the_teams(plan: TenancyPlan) -> None:
    with pytest.raises(PolicyError, match="no team is called 'nobody'") as refused:
        plan.without_team("nobody")
    assert refused.value.issues[0].code == "HPT-TEAM-SELECTION"
    first = plan.teams[0].name
    assert first not in [t.name for t in plan.without_team(first).teams]


def test_a_stage_is_built_from_a_plan_changed_in_code(plan: TenancyPlan, tmp_path: Path) -> None:
    roomy, itype = _with_room(plan)
    grown = roomy.with_team(_newcomer(roomy, **{itype: 1}))
    synth = synthesize(grown, tmp_path, teams=["newcomer"])
    assert synth.stage.plan is grown
    assert list(synth.stage.team_stacks) == ["newcomer"]
    (permission_set,) = resources_of(synth.team("newcomer"), "AWS::SSO::PermissionSet").values()
    assert permission_set["Properties"]["Name"] == grown.team("newcomer").permission_set


def test_compute_allocation_is_exported_for_apps() -> None:
    assert ComputeAllocation.__module__.startswith("hyperpod_tenancy.policy.model")
