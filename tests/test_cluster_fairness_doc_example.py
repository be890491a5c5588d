"""The Task Governance documentation example on real Kueue: team A (quota 6) uses 2, team B (quota 5) uses 4, and
a 4-instance job of team B runs on 1 idle instance of its own and 3 borrowed from team A; one more waits.

A small platform of its own (``platforms.doc_example``: 12 ml.g5.8xlarge, one GPU each, one reserved) is applied
to the control plane (``cluster_platforms.on``, which replaces the platform applied before), with KWOK nodes to
match. The example is played twice by team members: on the Kueue backend's objects, then on this project's
reading of the Task Governance properties (``tests/support/task_governance_kueue.py``) applied in their place;
the cohort simulator plays both and must see what Kueue saw. The Kueue backend's objects are applied again at the
end.
"""

from __future__ import annotations

import time
from typing import Any

import platforms
import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from fairness_interpreters import schedulable_shapes
from kube_client import wait_until
from kueue_scenarios import (
    Observed,
    Scenario,
    Submission,
    describe,
    doc_example_scenario,
    job_object,
    play_on_simulator,
    played_on_kueue,
)
from synth import synthesize
from task_governance_kueue import kueue_objects

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

KINDS = ("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")


def _play(on: OnCluster, objects: list[dict[str, Any]], scenario: Scenario, label: str) -> None:
    priorities = {pc.name: pc.weight for pc in on.synth.platform.scheduling.priority_classes}
    simulated = play_on_simulator(objects, scenario, priorities=priorities)
    started = time.monotonic()
    with played_on_kueue(on.admin, lambda team: on.member("doc-example", team), scenario) as real:
        seen: list[Observed] = list(real)
    print(f"documentation example ({label}): {time.monotonic() - started:.1f} s on real Kueue")
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")
    assert simulated == seen, describe(scenario, seen, simulated, "simulator")


def test_the_documentation_example_plays_out_on_both_readings(
    cluster_platforms: ClusterPlatforms, tmp_path_factory: pytest.TempPathFactory
) -> None:
    platform = platforms.doc_example()
    on = cluster_platforms.on("doc-example", synthesize(platform, tmp_path_factory.mktemp("doc-example")))
    _await_admission(on, "team-a")
    scenario = doc_example_scenario(build_plan(platform, month="2026-12"))
    rendered = [o for o in on.objects if o["kind"] in KINDS and o["apiVersion"] == kueue.KUEUE_API_VERSION]
    _play(on, rendered, scenario, "Kueue backend")

    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN) for t in platform.teams
    ]
    reading = kueue_objects(scheduler, quotas, schedulable_shapes(platform))
    added = [o for o in reading if not any(_same(o, r) for r in rendered)]
    try:
        for obj in reading:  # the queues replaced in place (same names), the reading's cohort added
            answer = on.admin.apply(obj)
            assert answer.ok, (obj["kind"], obj["metadata"]["name"], answer.message)
        _play(on, reading, scenario, "Task Governance reading")
    finally:
        for obj in rendered:
            assert on.admin.apply(obj).ok
        for obj in added:
            on.admin.delete(obj)
        wait_until(
            lambda: all(on.admin.get(o) is None for o in added), timeout=60, what="the reading's objects gone"
        )


def _await_admission(on: OnCluster, team: str) -> None:
    """Wait until the platform's admission policies are in force: an unlabelled Job (dry run) is refused."""
    unlabelled = job_object(Submission("sentinel", team, 1, 1, "training"))
    unlabelled["metadata"]["labels"] = {}
    member = on.member("sentinel", team)
    wait_until(lambda: not member.create(unlabelled, dry_run=True).ok, timeout=90, what="admission in force")


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["kind"] == b["kind"] and a["metadata"]["name"] == b["metadata"]["name"]
