"""Fairness on real Kueue (Kueue backend): each team on its quota, borrowing to the plan's burst ceiling,
reclaim by a returning lender, preemption by a higher class, played by team members on the real control plane.

The scenarios (``tests/support/kueue_scenarios.py``) take their figures from the tenancy plan (guarantees and
burst ceilings as ``hyperpod-tenancy plan`` prints them). Each step is a suspended Job created by a member of
the team (``OnCluster.member``, impersonated as EKS authenticates an Identity Center user), through the
platform's admission; the Workloads' conditions and the ClusterQueues' ``status.flavorsUsage`` (in use and
borrowed) are read until they match. The cohort simulator
(:class:`fairness_interpreters.KueueWorkloadSimulator`) plays the same steps on the same objects, and must see
what Kueue saw, step for step: one disagreement fails.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from cluster_platform import OnCluster
from kueue_scenarios import (
    Observed,
    Scenario,
    describe,
    play_on_simulator,
    played_on_kueue,
    reference_scenarios,
)

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import PreemptTeamTasks
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

SCENARIOS = ("own-quota", "burst", "reclaim", "priority", "pytorchjob")


@pytest.fixture(scope="module")
def scenarios(kueue_on_cluster: OnCluster) -> dict[str, Scenario]:
    platform = kueue_on_cluster.synth.platform
    found = {s.name: s for s in reference_scenarios(platform, build_plan(platform, month="2026-12"))}
    assert tuple(found) == SCENARIOS
    frameworks = kueue.kueue_helm_values(platform)["managerConfig"]["controllerManagerConfigYaml"]
    assert "kubeflow.org/pytorchjob" in frameworks, (
        "the PyTorchJob scenario needs Kueue's integration enabled"
    )
    return found


def _rendered(on: OnCluster) -> list[dict[str, Any]]:
    """The Kueue objects the platform applied (ClusterQueues, flavors, cohort, priority classes)."""
    kinds = {"ClusterQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass", "LocalQueue"}
    return [o for o in on.objects if o["kind"] in kinds and o["apiVersion"] == kueue.KUEUE_API_VERSION]


def _priorities(on: OnCluster) -> dict[str, int]:
    return {pc.name: pc.weight for pc in on.synth.platform.scheduling.priority_classes}


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_on_real_kueue_and_the_simulator(
    name: str, kueue_on_cluster: OnCluster, scenarios: dict[str, Scenario]
) -> None:
    on = kueue_on_cluster
    on.await_admission()
    scenario = scenarios[name]
    simulated = play_on_simulator(_rendered(on), scenario, priorities=_priorities(on))
    started = time.monotonic()
    with played_on_kueue(on.admin, lambda team: on.member("fairness-tester", team), scenario) as real:
        seen: list[Observed] = list(real)
    print(f"{name}: {time.monotonic() - started:.1f} s on real Kueue")
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")
    assert simulated == seen, describe(scenario, seen, simulated, "simulator")


def test_where_a_team_never_preempts_its_own_work_the_higher_class_waits(
    kueue_on_cluster: OnCluster, scenarios: dict[str, Scenario]
) -> None:
    """``preemptTeamTasks: Never`` for research, as the platform renders its ClusterQueue: in the priority
    scenario the training Job waits instead of preempting the team's experimentation Job, on real Kueue and on
    the simulator alike (research's queue is put back as applied at the end)."""
    on = kueue_on_cluster
    on.await_admission()
    platform = on.synth.platform
    research = platform.team("research")
    never = dataclasses.replace(
        research, compute=dataclasses.replace(research.compute, preempt_team_tasks=PreemptTeamTasks.NEVER)
    )
    changed = dataclasses.replace(
        platform, teams=tuple(never if t.name == "research" else t for t in platform.teams)
    )
    (queue,) = (o for o in kueue.team_objects(changed, never) if o["kind"] == "ClusterQueue")
    assert queue["spec"]["preemption"]["withinClusterQueue"] == "Never"
    objects = [
        queue if o["kind"] == "ClusterQueue" and o["metadata"]["name"] == queue["metadata"]["name"] else o
        for o in _rendered(on)
    ]
    scenario = scenarios["priority"]
    simulated = play_on_simulator(objects, scenario, priorities=_priorities(on))
    assert simulated[-1].workloads["prio-train"].status == "pending"
    assert simulated[-1] != scenario.steps[-1].expected
    # real Kueue is polled until it shows what the simulator saw (or the time runs out), then compared
    expecting = dataclasses.replace(
        scenario,
        steps=tuple(
            dataclasses.replace(s, expected=seen) for s, seen in zip(scenario.steps, simulated, strict=True)
        ),
    )
    live = {
        "apiVersion": queue["apiVersion"],
        "kind": "ClusterQueue",
        "metadata": {"name": queue["metadata"]["name"]},
    }
    applied = on.admin.get(live)
    assert applied is not None

    def set_preemption(preemption: dict[str, Any]) -> None:
        answer = on.admin.merge_patch(live, {"spec": {"preemption": preemption}})
        assert answer.ok, answer.message

    set_preemption(queue["spec"]["preemption"])
    try:
        with played_on_kueue(on.admin, lambda team: on.member("fairness-tester", team), expecting) as real:
            seen: list[Observed] = list(real)
    finally:
        set_preemption(applied["spec"]["preemption"])
    assert seen == simulated, describe(expecting, seen, simulated, "simulator")
