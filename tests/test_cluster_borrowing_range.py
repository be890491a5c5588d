"""The borrowing range on real Kueue: a 1,000 % borrower takes the cohort's idle capacity and gives it back, and a
team with an absolute limit borrows exactly that much and no further.

The reference platform on the Kueue backend, with research at ``borrowLimit: 1000`` and vision at
``absoluteBorrowLimits: {ml.p5.48xlarge: {accelerators: 4}}`` (``platform`` below), is applied to the control
plane with KWOK nodes to match. Team members play each scenario (``kueue_scenarios.ceiling_scenario``, its figures
from ``hyperpod-tenancy plan``'s burst ceilings): first on the Kueue backend's objects, then on this project's
reading of the Task Governance properties (``tests/support/task_governance_kueue.py``) applied in their place. The
cohort simulator plays both and must see what Kueue saw.

* research: guarantee 72 GPUs; 1,000 % would be 720, but vision lends only its 48, so research bursts to 120 and
  one GPU more waits; vision returns and reclaims its 48.
* vision: guarantee 48 GPUs; research lends 72, but vision's absolute limit is 4 GPUs, so it bursts to 52 and one
  GPU more waits; research returns and reclaims its 4.
"""

from __future__ import annotations

import time
from typing import Any

import platforms
import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from fairness_interpreters import published_vcpus, schedulable_shapes
from kube_client import wait_until
from kueue_scenarios import (
    Observed,
    Scenario,
    Submission,
    ceiling_scenario,
    describe,
    job_object,
    play_on_simulator,
    played_on_kueue,
)
from synth import synthesize
from task_governance_kueue import kueue_objects

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

P5 = "ml.p5.48xlarge"
KINDS = ("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")


def borrowing_platform() -> Platform:
    """The reference platform on Kueue with a 1,000 % borrower (research) and an absolute limit (vision)."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["teams"][0]["compute"]["borrowLimit"] = 1000
        d["teams"][1]["compute"]["absoluteBorrowLimits"] = {P5: {"accelerators": 4}}

    return platforms.variant("borrowing-range-kueue", edit)


@pytest.fixture(scope="module")
def on(cluster_platforms: ClusterPlatforms, tmp_path_factory: pytest.TempPathFactory) -> OnCluster:
    platform = borrowing_platform()
    applied = cluster_platforms.on(
        "borrowing-range", synthesize(platform, tmp_path_factory.mktemp("borrowing-range"))
    )
    member = applied.member("sentinel", "research")
    unlabelled = job_object(Submission("sentinel", "research", 1, 1, "training"))
    unlabelled["metadata"]["labels"] = {}
    wait_until(lambda: not member.create(unlabelled, dry_run=True).ok, timeout=90, what="admission in force")
    return applied


@pytest.fixture(scope="module")
def scenarios(on: OnCluster) -> dict[str, Scenario]:
    plan = build_plan(on.synth.platform, month="2026-12")
    return {
        "thousand-percent": ceiling_scenario(plan, "research", "vision", P5, name="thousand"),
        "absolute": ceiling_scenario(plan, "vision", "research", P5, name="absolute"),
    }


def _play(on: OnCluster, objects: list[dict[str, Any]], scenario: Scenario, label: str) -> None:
    priorities = {pc.name: pc.weight for pc in on.synth.platform.scheduling.priority_classes}
    simulated = play_on_simulator(objects, scenario, priorities=priorities)
    started = time.monotonic()
    with played_on_kueue(on.admin, lambda team: on.member("borrower", team), scenario) as real:
        seen: list[Observed] = list(real)
    print(f"{scenario.name} ({label}): {time.monotonic() - started:.1f} s on real Kueue")
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")
    assert simulated == seen, describe(scenario, seen, simulated, "simulator")


def test_the_plan_gives_the_ceilings_the_scenarios_play(scenarios: dict[str, Scenario]) -> None:
    # research 72 + all 48 vision lends (not 720); vision 48 + its absolute 4 (not 50 % or what research lends)
    research_burst = scenarios["thousand-percent"].steps[1].expected.usage["research"]
    vision_burst = scenarios["absolute"].steps[1].expected.usage["vision"]
    assert (research_burst, vision_burst) == ((120, 48), (52, 4))


def _rendered(on: OnCluster) -> list[dict[str, Any]]:
    return [o for o in on.objects if o["kind"] in KINDS and o["apiVersion"] == kueue.KUEUE_API_VERSION]


@pytest.mark.parametrize("name", ["thousand-percent", "absolute"])
def test_on_the_kueue_backend(name: str, on: OnCluster, scenarios: dict[str, Scenario]) -> None:
    _play(on, _rendered(on), scenarios[name], "Kueue backend")


def test_on_the_task_governance_reading(on: OnCluster, scenarios: dict[str, Scenario]) -> None:
    platform = on.synth.platform
    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN) for t in platform.teams
    ]
    assert quotas[1]["ComputeQuotaConfig"]["ResourceSharingConfig"]["AbsoluteBorrowLimits"] == [
        {"InstanceType": P5, "Accelerators": 4}
    ]
    reading = kueue_objects(scheduler, quotas, schedulable_shapes(platform), published_vcpus(platform))
    rendered = _rendered(on)
    added = [o for o in reading if not any(_same(o, r) for r in rendered)]
    try:
        for obj in reading:  # the queues replaced in place (same names), the reading's cohort added
            answer = on.admin.apply(obj)
            assert answer.ok, (obj["kind"], obj["metadata"]["name"], answer.message)
        for scenario in scenarios.values():
            _play(on, reading, scenario, "Task Governance reading")
    finally:
        for obj in rendered:
            assert on.admin.apply(obj).ok
        for obj in added:
            on.admin.delete(obj)
        wait_until(
            lambda: all(on.admin.get(o) is None for o in added), timeout=60, what="the reading's objects gone"
        )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["kind"] == b["kind"] and a["metadata"]["name"] == b["metadata"]["name"]
