"""Fairness scenarios on an applied platform: played by team members on real Kueue, compared with the plan's
expectation and with the cohort simulator, on the platform's own Kueue objects or on this project's reading of its
Task Governance properties (``task_governance_kueue.py``) applied in their place."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import platforms
from cluster_platform import OnCluster
from fairness_interpreters import published_vcpus, schedulable_shapes
from kube_client import wait_until
from kueue_scenarios import (
    Observed,
    Scenario,
    Submission,
    describe,
    job_object,
    play_on_simulator,
    played_on_kueue,
)
from task_governance_kueue import kueue_objects

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue

#: The kinds of Kueue object a platform (or the reading) applies.
KINDS = ("ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue")


def rendered(on: OnCluster) -> list[dict[str, Any]]:
    """The Kueue objects the platform applied (ClusterQueues, flavors, cohort, priority classes)."""
    return [o for o in on.objects if o["kind"] in KINDS and o["apiVersion"] == kueue.KUEUE_API_VERSION]


def await_admission(on: OnCluster, team: str) -> None:
    """Wait until the platform's admission policies are in force: an unlabelled Job (dry run) is refused."""
    unlabelled = job_object(Submission("sentinel", team, 1, 1, "training"))
    unlabelled["metadata"]["labels"] = {}
    member = on.member("sentinel", team)
    wait_until(lambda: not member.create(unlabelled, dry_run=True).ok, timeout=90, what="admission in force")


def play(
    on: OnCluster, objects: list[dict[str, Any]], scenario: Scenario, label: str, *, person: str
) -> None:
    """Play ``scenario`` as ``person`` of each team on real Kueue; what Kueue shows at each step must be what the
    scenario expects, and what the cohort simulator shows on ``objects``."""
    priorities = {pc.name: pc.weight for pc in on.synth.platform.scheduling.priority_classes}
    simulated = play_on_simulator(objects, scenario, priorities=priorities)
    started = time.monotonic()
    with played_on_kueue(on.admin, lambda team: on.member(person, team), scenario) as real:
        seen: list[Observed] = list(real)
    print(f"{scenario.name} ({label}): {time.monotonic() - started:.1f} s on real Kueue")
    expected = [step.expected for step in scenario.steps]
    assert seen == expected, describe(scenario, seen, expected, "expected")
    assert simulated == seen, describe(scenario, seen, simulated, "simulator")


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["kind"] == b["kind"] and a["metadata"]["name"] == b["metadata"]["name"]


@contextlib.contextmanager
def task_governance_reading(on: OnCluster) -> Iterator[list[dict[str, Any]]]:
    """Apply this project's reading of the platform's Task Governance properties in place of its Kueue objects
    (the queues replaced in place, the reading's cohort added); yield the reading; apply the platform's own
    objects again afterwards and remove what the reading added."""
    platform = on.synth.platform
    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN)
        for t in platform.hosted_teams
    ]
    reading = kueue_objects(scheduler, quotas, schedulable_shapes(platform), published_vcpus(platform))
    own = rendered(on)
    added = [o for o in reading if not any(_same(o, r) for r in own)]
    try:
        for obj in reading:
            answer = on.admin.apply(obj)
            assert answer.ok, (obj["kind"], obj["metadata"]["name"], answer.message)
        yield reading
    finally:
        for obj in own:
            assert on.admin.apply(obj).ok
        for obj in added:
            on.admin.delete(obj)
        wait_until(
            lambda: all(on.admin.get(o) is None for o in added), timeout=60, what="the reading's objects gone"
        )
