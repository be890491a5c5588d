"""Fairness on real Kueue for the Task Governance backend, through this project's reading of the service.

Task Governance turns the cluster policy and the teams' compute quotas into Kueue objects itself; that
translation is not published. ``tests/support/task_governance_kueue.py`` is this project's reading of it (each
field citing its source), applied to the real control plane on the Task Governance reference platform (the
``reference`` platform, its team namespaces as the service creates them). The same scenarios as on the Kueue
backend (``tests/support/kueue_scenarios.py``) are played by team members, and the cohort simulator must see
what Kueue saw. Kueue's manager configuration is the session's (fair sharing on), as the reference's
``FairShare: Enabled`` asks.

The reading is also checked offline: read back with the Kueue interpreter it must mean what the Task Governance
interpreter reads in the same properties (``fairness_interpreters``).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from fairness_interpreters import from_kueue, from_task_governance, schedulable_shapes
from kube_client import wait_until
from kueue_scenarios import (
    Observed,
    Scenario,
    describe,
    play_on_simulator,
    played_on_kueue,
    reference_scenarios,
)
from synth import Synth
from task_governance_kueue import kueue_objects, synthesized_properties

from hyperpod_tenancy.k8s.kueue import kueue_helm_values
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

SCENARIOS = ("own-quota", "burst", "reclaim", "priority", "pytorchjob")
#: Deleted in this order (a ClusterQueue keeps its finalizer while a LocalQueue or Workload uses it).
_DELETE_ORDER = ("LocalQueue", "ClusterQueue", "Cohort", "WorkloadPriorityClass", "ResourceFlavor")


def translated(synth: Synth) -> list[dict[str, Any]]:
    scheduler, quotas = synthesized_properties(synth)
    return kueue_objects(scheduler, quotas, schedulable_shapes(synth.platform))


def test_the_reading_means_what_the_task_governance_interpreter_reads(reference: Synth) -> None:
    scheduler, quotas = synthesized_properties(reference)
    shapes = schedulable_shapes(reference.platform)
    objects = kueue_objects(scheduler, quotas, shapes)
    as_kueue = from_kueue(objects, kueue_helm_values(reference.platform)).normalized()
    assert as_kueue == from_task_governance(scheduler, quotas, shapes).normalized()


@pytest.fixture(scope="module")
def on_task_governance(cluster_platforms: ClusterPlatforms, reference: Synth) -> Iterator[OnCluster]:
    on = cluster_platforms.on("reference", reference)
    objects = translated(reference)
    try:
        for obj in objects:
            answer = on.admin.apply(obj)
            assert answer.ok, (obj["kind"], obj["metadata"]["name"], answer.message)
        yield on
    finally:
        for kind in _DELETE_ORDER:
            for obj in (o for o in objects if o["kind"] == kind):
                on.admin.delete(obj)
        wait_until(
            lambda: all(on.admin.get(o) is None for o in objects),
            timeout=60,
            what="the Task Governance reading's Kueue objects to be gone",
        )


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_on_the_task_governance_reading(
    name: str, on_task_governance: OnCluster, reference: Synth
) -> None:
    on = on_task_governance
    on.await_admission()
    platform = reference.platform
    scenarios = {s.name: s for s in reference_scenarios(platform, build_plan(platform, month="2026-12"))}
    scenario: Scenario = scenarios[name]
    priorities = {pc.name: pc.weight for pc in platform.scheduling.priority_classes}
    simulated = play_on_simulator(translated(reference), scenario, priorities=priorities)
    started = time.monotonic()
    with played_on_kueue(on.admin, lambda team: on.member("fairness-tester", team), scenario) as real:
        seen: list[Observed] = list(real)
    print(f"{name} (task governance reading): {time.monotonic() - started:.1f} s on real Kueue")
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")
    assert simulated == seen, describe(scenario, seen, simulated, "simulator")
