"""Both fairness backends express the same policy: guarantees, lending, borrowing ceilings and weights.

Two independent readers (``tests/support/fairness_interpreters.py``) turn the Task Governance properties
and the Kueue objects into one backend-neutral form; the forms must be equal for every policy. The Task
Governance documentation example is then replayed through Kueue's quota check.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

import platforms
import pytest
from fairness_interpreters import (
    GIB,
    FairnessForm,
    KueueCohortSimulator,
    Share,
    from_kueue,
    from_task_governance,
    published_vcpus,
    schedulable_shapes,
)
from instance_specs import spec

from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import Platform


def task_governance_form(platform: Platform) -> FairnessForm:
    scheduler = tg.scheduler_config_properties(platform, cluster_arn=platforms.CLUSTER_ARN, name="policy")
    quotas = [
        tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN)
        for t in platform.hosted_teams
    ]
    return from_task_governance(scheduler, quotas, schedulable_shapes(platform), published_vcpus(platform))


def kueue_objects(platform: Platform) -> list[dict[str, Any]]:
    objects = kueue.cluster_objects(platform)
    for team in platform.hosted_teams:
        objects += kueue.team_objects(platform, team)
    return objects


def kueue_form(platform: Platform, objects: list[dict[str, Any]] | None = None) -> FairnessForm:
    return from_kueue(objects or kueue_objects(platform), kueue.kueue_helm_values(platform))


def describe_difference(a: FairnessForm, b: FairnessForm) -> str:
    lines = [f"fair_share {a.fair_share} != {b.fair_share}"] if a.fair_share != b.fair_share else []
    for key in sorted(set(a.shares) | set(b.shares)):
        if a.shares.get(key) != b.shares.get(key):
            lines.append(f"{key}: task-governance {a.shares.get(key)} != kueue {b.shares.get(key)}")
    for team in sorted(set(a.weights) | set(b.weights)):
        if a.weights.get(team) != b.weights.get(team):
            lines.append(f"weight {team}: {a.weights.get(team)} != {b.weights.get(team)}")
    return "\n".join(lines)


#: EFA interfaces: Kueue's ClusterQueues count them; Task Governance's quotas cannot (the SageMaker API's
#: ``ComputeQuotaResourceConfig`` has ``Count``, ``Accelerators``, ``VCpu`` and ``MemoryInGiB`` only), so on that
#: backend the namespace's ResourceQuota ``compute-ceiling`` caps them (``test_hostile_teammate_4_efa.py``).
EFA = "vpc.amazonaws.com/efa"


def _without_efa(form: FairnessForm) -> FairnessForm:
    return FairnessForm(form.fair_share, {k: v for k, v in form.shares.items() if k[2] != EFA}, form.weights)


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_both_backends_express_the_same_policy(name: str) -> None:
    platform = platforms.fairness_platform(name)
    tg_form = task_governance_form(platform).normalized()
    kueue_form_ = _without_efa(kueue_form(platform).normalized())
    assert tg_form == kueue_form_, describe_difference(tg_form, kueue_form_)
    assert tg_form.shares, "the comparison must cover something"


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_kueue_counts_efa_interfaces_at_the_published_figure(name: str) -> None:
    platform = platforms.fairness_platform(name)
    form = kueue_form(platform).normalized()
    assert any(k[2] == EFA for k in form.shares) or not any(spec_efa(platform)), (
        "EFA is covered where it exists"
    )
    for (team, itype, resource), share in form.shares.items():
        if resource != EFA:
            continue
        group = next(g for g in platform.cluster.instance_groups if g.instance_type == itype)
        per = group.resources.efa_interfaces if group.resources is not None else spec(itype).efa_interfaces
        quota = next(t for t in platform.teams if t.name == team).compute.quotas.get(itype, 0)
        # a quota in accelerators holds their share of the instance's interfaces (20 of 8 GPUs: 2.5 instances)
        accelerators = spec(itype).accelerators
        count = Decimal(quota) if isinstance(quota, int) else Decimal(quota.accelerators or 0) / accelerators
        assert share.guaranteed == int(count * per), (team, itype)


def spec_efa(platform: Platform) -> list[int]:
    """EFA interfaces per instance of each instance group (explicit resources, else the published spec)."""
    return [
        g.resources.efa_interfaces if g.resources is not None else spec(g.instance_type).efa_interfaces
        for g in platform.cluster.instance_groups
    ]


def test_forms_cover_every_team_and_quota() -> None:
    platform = platforms.mixed_accelerators()
    form = task_governance_form(platform).normalized()
    covered = {(team, itype) for team, itype, _ in form.shares}
    expected = {(t.name, itype) for t in platform.teams for itype, n in t.compute.quotas.items() if n}
    assert covered == expected
    assert form.weights == {"research": 70, "vision": 20, "inference": 10, "data-prep": 0}
    # spot checks in the neutral form
    assert form.shares[("research", "ml.p5.48xlarge", "nvidia.com/gpu")] == Share(
        Decimal(56), Decimal(56), Decimal(18)
    )
    assert form.shares[("vision", "ml.p5.48xlarge", "cpu")] == Share(Decimal(480), Decimal(0), Decimal(0))
    assert form.shares[("inference", "ml.g5.12xlarge", "memory")] == Share(576 * GIB, 576 * GIB, Decimal(0))


def test_fair_share_off_drops_the_weights_in_both() -> None:
    platform = platforms.fair_share_disabled()
    assert set(task_governance_form(platform).weights.values()) == {None}
    assert set(kueue_form(platform).weights.values()) == {None}


def test_comparison_detects_a_diverging_rendering() -> None:
    # Negative control: a Kueue rendering that lets research borrow without limit, or that lends vision's
    # DontLend quota, must not compare equal.
    platform = platforms.mixed_accelerators()
    objects = kueue_objects(platform)
    cq = next(o for o in objects if o["metadata"]["name"] == "hyperpod-ns-research-clusterqueue")
    del cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"]
    assert task_governance_form(platform).normalized() != kueue_form(platform, objects).normalized()

    objects = kueue_objects(platform)
    cq = next(o for o in objects if o["metadata"]["name"] == "hyperpod-ns-vision-clusterqueue")
    del cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"]
    assert task_governance_form(platform).normalized() != kueue_form(platform, objects).normalized()

    changed = dataclasses.replace(
        platform, scheduling=dataclasses.replace(platform.scheduling, idle_resource_sharing=False)
    )
    assert task_governance_form(changed).normalized() != kueue_form(platform).normalized()


# --------------------------------------------------------------------------------- documentation example

FLAVOR = "ml.g5.8xlarge"
GPU = "nvidia.com/gpu"


def units(n: int) -> dict[str, Decimal]:
    """``n`` instances' worth of ml.g5.8xlarge: 1 GPU, 16 schedulable cores (threadsPerCore 1), 128 GiB."""
    return {GPU: Decimal(n), "cpu": Decimal(16 * n), "memory": Decimal(128 * n) * GIB}


def test_documentation_example_quota_and_borrow_limit() -> None:
    platform = platforms.doc_example()
    quotas = {
        t.name: tg.compute_quota_properties(platform, t, cluster_arn=platforms.CLUSTER_ARN)
        for t in platform.teams
    }
    b = quotas["team-b"]["ComputeQuotaConfig"]
    assert b["ComputeQuotaResources"] == [{"InstanceType": FLAVOR, "Count": 5}]
    assert b["ResourceSharingConfig"] == {"Strategy": "LendAndBorrow", "BorrowLimit": 60}
    form = kueue_form(platform)
    # floor(5 x 60%) = 3 units may be borrowed: exactly what the example needs
    assert form.shares[("team-b", FLAVOR, GPU)] == Share(Decimal(5), Decimal(5), Decimal(3))
    assert form.shares[("team-a", FLAVOR, GPU)] == Share(Decimal(6), Decimal(6), Decimal(3))


@pytest.mark.parametrize("fair_share", [True, False])
def test_documentation_example_admission(fair_share: bool) -> None:
    platform = platforms.doc_example(fair_share=fair_share)
    sim = KueueCohortSimulator(kueue_objects(platform))
    # Team A (quota 6) runs 2 units, team B (quota 5) runs 4 units.
    assert sim.admit("team-a", FLAVOR, units(2)).admitted
    assert sim.admit("team-b", FLAVOR, units(4)).admitted
    assert sim.idle_lendable("team-a", FLAVOR, GPU) == 4
    assert sim.idle_lendable("team-b", FLAVOR, GPU) == 1

    # A job that would take B past its borrowing ceiling (5 units: 9 > 5 + 3) is not admitted, although
    # team A still has 4 idle units.
    too_big = sim.admit("team-b", FLAVOR, units(5))
    assert not too_big.admitted
    assert "borrowingLimit" in too_big.reason

    # B's 4-unit job is admitted: 1 unit of its own idle quota and 3 borrowed from team A.
    job = sim.admit("team-b", FLAVOR, units(4))
    assert job.admitted, job.reason
    assert job.borrowed == units(3)
    assert sim.idle_lendable("team-a", FLAVOR, GPU) == 4  # A's own usage is unchanged...
    used_by_b = sim.usage[("team-b", FLAVOR, GPU)]
    assert used_by_b == 8
    assert (
        sim.usage[("team-a", FLAVOR, GPU)] + (used_by_b - 5) == 5
    )  # ...3 of its 4 idle units now run B's job

    # B is at its ceiling (5 + 3): one more unit is refused even though A has one idle unit left.
    one_more = sim.admit("team-b", FLAVOR, units(1))
    assert not one_more.admitted
    assert "borrowingLimit" in one_more.reason
    # Team A can still use its last idle unit, within its guarantee.
    assert sim.admit("team-a", FLAVOR, units(1)).admitted
    # The cohort is now full: A's borrowing room (3) is not capacity; nothing idle remains to lend.
    full = sim.admit("team-a", FLAVOR, units(1))
    assert not full.admitted
    assert "no idle" in full.reason


def test_documentation_example_with_the_default_borrow_limit_would_not_fit() -> None:
    # With Task Governance's default borrowLimit (50%), B may borrow floor(2.5) = 2 units: the 4-unit job
    # would not be admitted, which is why the example needs borrowLimit >= 60.
    platform = platforms.doc_example()
    team_b = dataclasses.replace(
        platform.teams[1], compute=dataclasses.replace(platform.teams[1].compute, borrow_limit=50)
    )
    platform = dataclasses.replace(platform, teams=(platform.teams[0], team_b))
    sim = KueueCohortSimulator(kueue_objects(platform))
    assert sim.admit("team-a", FLAVOR, units(2)).admitted
    assert sim.admit("team-b", FLAVOR, units(4)).admitted
    assert not sim.admit("team-b", FLAVOR, units(4)).admitted
    assert sim.admit("team-b", FLAVOR, units(3)).admitted  # 1 own + 2 borrowed
