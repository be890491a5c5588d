"""The fairness scenarios (``tests/support/kueue_scenarios.py``) through the cohort simulator, offline.

The same scenarios are played on real Kueue by ``test_cluster_fairness*.py``, where the simulator must see what
Kueue sees step by step; here they run without a control plane on the objects both backends stand for (the Kueue
backend's rendering, and this project's reading of the Task Governance properties), so a change to the renderers,
the plan or the simulator that breaks one shows in the fast suite too.
"""

from __future__ import annotations

import platforms
import pytest
from fairness_interpreters import schedulable_shapes
from kueue_scenarios import Scenario, describe, doc_example_scenario, play_on_simulator, reference_scenarios
from task_governance_kueue import kueue_objects

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan


def _rendered(platform: Platform) -> list[dict[str, object]]:
    objects = kueue.cluster_objects(platform)
    for team in platform.hosted_teams:
        objects += kueue.team_objects(platform, team)
    return objects


def _reading(platform: Platform) -> list[dict[str, object]]:
    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN)
        for t in platform.hosted_teams
    ]
    return kueue_objects(scheduler, quotas, schedulable_shapes(platform))


def _cases() -> list[tuple[str, Platform, Scenario]]:
    reference = platforms.reference_platform()
    doc = platforms.doc_example()
    cases = [
        (s.name, reference, s) for s in reference_scenarios(reference, build_plan(reference, month="2026-12"))
    ]
    return [*cases, ("doc-example", doc, doc_example_scenario(build_plan(doc, month="2026-12")))]


@pytest.mark.parametrize("reading", ["kueue", "task-governance"])
@pytest.mark.parametrize(("name", "platform", "scenario"), _cases(), ids=[c[0] for c in _cases()])
def test_the_simulator_plays_each_scenario_as_expected(
    reading: str, name: str, platform: Platform, scenario: Scenario
) -> None:
    objects = _rendered(platform) if reading == "kueue" else _reading(platform)
    priorities = {pc.name: pc.weight for pc in platform.scheduling.priority_classes}
    seen = play_on_simulator(objects, scenario, priorities=priorities)
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")


def test_a_simulator_without_preemption_would_disagree() -> None:
    # Negative control: the same reclaim with lenders that may not reclaim leaves the borrower running.
    reference = platforms.reference_platform()
    (scenario,) = (
        s
        for s in reference_scenarios(reference, build_plan(reference, month="2026-12"))
        if s.name == "reclaim"
    )
    objects = _rendered(reference)
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["preemption"]["reclaimWithinCohort"] = "Never"  # type: ignore[index]
    seen = play_on_simulator(
        objects, scenario, priorities={"training": 70, "experimentation": 30, "inference": 100}
    )
    assert seen[-1] != scenario.steps[-1].expected
    assert seen[-1].workloads["reclaim-burst"].status == "admitted"


def test_without_preempt_team_tasks_the_higher_class_waits() -> None:
    # Where the policy says Never (preemptTeamTasks: never -> withinClusterQueue: Never), the training job of the
    # priority scenario waits instead of preempting the team's experimentation job.
    reference = platforms.reference_platform()
    plan = build_plan(reference, month="2026-12")
    (scenario,) = (s for s in reference_scenarios(reference, plan) if s.name == "priority")
    objects = _rendered(reference)
    for obj in objects:
        if obj["kind"] == "ClusterQueue":
            obj["spec"]["preemption"]["withinClusterQueue"] = "Never"  # type: ignore[index]
    priorities = {pc.name: pc.weight for pc in reference.scheduling.priority_classes}
    last = play_on_simulator(objects, scenario, priorities=priorities)[-1]
    assert last.workloads["prio-train"].status == "pending"
    assert last.workloads["prio-exp-b"].status == "admitted"
