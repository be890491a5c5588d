"""The borrowing range on real Kueue: a 1,000 % borrower takes the cohort's idle capacity and gives it back, and a
team holding GPUs rather than nodes gets exactly its GPUs and borrows to its absolute limit and no further.

The reference platform on the Kueue backend, with research at ``borrowLimit: 1000`` and vision holding
``{accelerators: 44}`` of p5 (five and a half nodes) with ``absoluteBorrowLimits: {ml.p5.48xlarge:
{accelerators: 4}}`` (``borrowing_platform`` below), is applied to the control
plane with KWOK nodes to match. Team members play each scenario (``kueue_scenarios.ceiling_scenario``, its figures
from ``hyperpod-tenancy plan``'s burst ceilings): first on the Kueue backend's objects, then on this project's
reading of the Task Governance properties (``tests/support/task_governance_kueue.py``) applied in their place. The
cohort simulator plays both and must see what Kueue saw.

* research: guarantee 72 GPUs; 1,000 % would be 720, but vision lends only its 44, so research bursts to 116 and
  one GPU more waits; vision returns and reclaims its 44.
* vision: guarantee 44 GPUs; research lends 72, but vision's absolute limit is 4 GPUs, so it bursts to 48 and one
  GPU more waits; research returns and reclaims its 4.
"""

from __future__ import annotations

from typing import Any

import platforms
import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from fairness_on_cluster import await_admission, play, rendered, task_governance_reading
from kueue_scenarios import Scenario, ceiling_scenario
from synth import synthesize

from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

P5 = "ml.p5.48xlarge"
PERSON = "borrower"


def borrowing_platform() -> Platform:
    """The reference platform on Kueue with a 1,000 % borrower (research) and an absolute limit (vision)."""

    def edit(d: dict[str, Any]) -> None:
        d["fairnessBackend"] = "kueue"
        d["teams"][0]["compute"]["borrowLimit"] = 1000
        d["teams"][1]["compute"]["quotas"] = {P5: {"accelerators": 44}}
        d["teams"][1]["compute"]["absoluteBorrowLimits"] = {P5: {"accelerators": 4}}

    return platforms.variant("borrowing-range-kueue", edit)


@pytest.fixture(scope="module")
def on(cluster_platforms: ClusterPlatforms, tmp_path_factory: pytest.TempPathFactory) -> OnCluster:
    platform = borrowing_platform()
    applied = cluster_platforms.on(
        "borrowing-range", synthesize(platform, tmp_path_factory.mktemp("borrowing-range"))
    )
    await_admission(applied, "research")
    return applied


@pytest.fixture(scope="module")
def scenarios(on: OnCluster) -> dict[str, Scenario]:
    plan = build_plan(on.synth.platform, month="2026-12")
    return {
        "thousand-percent": ceiling_scenario(plan, "research", "vision", P5, name="thousand"),
        "absolute": ceiling_scenario(plan, "vision", "research", P5, name="absolute"),
    }


def test_the_plan_gives_the_ceilings_the_scenarios_play(scenarios: dict[str, Scenario]) -> None:
    # research 72 + all 44 vision lends (not 720); vision 44 + its absolute 4 (not 50 % or what research lends)
    research_burst = scenarios["thousand-percent"].steps[1].expected.usage["research"]
    vision_own, vision_burst = (scenarios["absolute"].steps[i].expected.usage["vision"] for i in (0, 1))
    assert (research_burst, vision_own, vision_burst) == ((116, 44), (44, 0), (48, 4))


@pytest.mark.parametrize("name", ["thousand-percent", "absolute"])
def test_on_the_kueue_backend(name: str, on: OnCluster, scenarios: dict[str, Scenario]) -> None:
    play(on, rendered(on), scenarios[name], "Kueue backend", person=PERSON)


def test_on_the_task_governance_reading(on: OnCluster, scenarios: dict[str, Scenario]) -> None:
    with task_governance_reading(on) as reading:
        vision = next(o for o in reading if o["metadata"]["name"] == "hyperpod-ns-vision-clusterqueue")
        (p5,) = (f for f in vision["spec"]["resourceGroups"][0]["flavors"] if f["name"] == P5)
        gpu = next(r for r in p5["resources"] if r["name"] == "nvidia.com/gpu")
        assert (gpu["nominalQuota"], gpu["borrowingLimit"]) == (
            44,
            4,
        )  # Accelerators 44, AbsoluteBorrowLimits 4
        for scenario in scenarios.values():
            play(on, reading, scenario, "Task Governance reading", person=PERSON)
