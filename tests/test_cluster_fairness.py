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
from hyperpod_tenancy.tools.tenancy_plan import build_plan

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
