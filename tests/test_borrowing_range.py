"""The whole borrowing range: ``borrowLimit`` up to 10,000 % and ``absoluteBorrowLimits`` in every grain.

Every figure below is computed by hand from the policy (``platforms.borrowing_range``) and the published instance
shapes: p5.48xlarge 8 GPUs, 192 vCPUs (96 schedulable cores at ``threadsPerCore: 1``), 2,048 GiB, 32 EFA
interfaces; trn1.32xlarge 16 Neuron devices, 128 vCPUs (128 cores at ``threadsPerCore: 2``), 512 GiB, 8 EFA;
the m5.2xlarge group's ``resources`` 8 vCPUs (8 cores at 2 threads), 32 GiB. The Task Governance rendering is
compared with the Kueue one by ``test_fairness_equivalence.py`` on the same platform.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import platforms
import pytest
import yaml

from hyperpod_tenancy import cli
from hyperpod_tenancy.chargeback.model import RECORD_VERSION, team_config_from_json, team_config_to_json
from hyperpod_tenancy.constructs._private import task_governance as tg
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.k8s.labels import team_borrows
from hyperpod_tenancy.k8s.team_manifests.quotas import accelerator_ceiling, compute_ceiling
from hyperpod_tenancy.policy import Platform, ResourceAmount, ResourceShape, platform_from_dict
from hyperpod_tenancy.policy.borrowing import Resource, instance_fractions, may_borrow
from hyperpod_tenancy.policy.chargeback import chargeback_config
from hyperpod_tenancy.policy.validation import validate_platform
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

P5, TRN1, M5 = "ml.p5.48xlarge", "ml.trn1.32xlarge", "ml.m5.2xlarge"
GPU, NEURON, EFA = "nvidia.com/gpu", "aws.amazon.com/neurondevice", "vpc.amazonaws.com/efa"


@pytest.fixture(scope="module")
def platform() -> Platform:
    return platforms.borrowing_range()


def flavor(platform: Platform, team: str, itype: str) -> dict[str, tuple[Any, Any]]:
    """``{resource: (nominalQuota, borrowingLimit)}`` of the team's ClusterQueue on ``itype``."""
    cq = kueue.team_objects(platform, platform.team(team))[0]
    (found,) = (f for f in cq["spec"]["resourceGroups"][0]["flavors"] if f["name"] == itype)
    return {r["name"]: (r["nominalQuota"], r["borrowingLimit"]) for r in found["resources"]}


def test_a_1000_percent_borrower_may_borrow_ten_times_its_guarantee(platform: Platform) -> None:
    # research: 7 p5 guaranteed, borrowLimit 1000
    assert flavor(platform, "research", P5) == {
        GPU: (56, 560),
        NEURON: (0, 0),
        "cpu": (672, 6720),
        "memory": ("14336Gi", "143360Gi"),
        EFA: (224, 2240),
    }


def test_an_absolute_limit_in_instances_replaces_the_percentage_on_its_type(platform: Platform) -> None:
    # research: 3 trn1 guaranteed; 1,000 % would be 30 instances, the absolute limit is 1 whole instance
    assert flavor(platform, "research", TRN1) == {
        GPU: (0, 0),
        NEURON: (48, 16),
        "cpu": (384, 128),
        "memory": ("1536Gi", "512Gi"),
        EFA: (24, 8),
    }


def test_an_absolute_limit_in_accelerators_lets_a_team_borrow_where_it_has_no_quota(
    platform: Platform,
) -> None:
    # data-prep: no p5 quota; 8 GPUs = one instance's worth, cores, memory and EFA in the instance's ratio
    assert flavor(platform, "data-prep", P5) == {
        GPU: (0, 8),
        NEURON: (0, 0),
        "cpu": (0, 96),
        "memory": ("0Gi", "2048Gi"),
        EFA: (0, 32),
    }


def test_an_absolute_limit_in_vcpus_brings_memory_in_the_ratio_and_no_accelerators(
    platform: Platform,
) -> None:
    # data-prep: 2 m5 guaranteed (16 cores, 64 GiB); 6 of 8 vCPUs -> 6 cores and 24 of 32 GiB
    assert flavor(platform, "data-prep", M5) == {
        GPU: (0, 0),
        NEURON: (0, 0),
        "cpu": (16, 6),
        "memory": ("64Gi", "24Gi"),
        EFA: (0, 0),
    }


def test_a_quota_in_accelerators_brings_cores_memory_and_efa_in_the_ratio(platform: Platform) -> None:
    # vision: 20 of p5's GPUs = 2.5 instances: 240 cores, 5,120 GiB, 80 EFA interfaces; dont-lend
    assert flavor(platform, "vision", P5) == {
        GPU: (20, 0),
        NEURON: (0, 0),
        "cpu": (240, 0),
        "memory": ("5120Gi", "0Gi"),
        EFA: (80, 0),
    }
    props = tg.compute_quota_properties(platform, platform.team("vision"), cluster_arn="arn")
    assert props["ComputeQuotaConfig"]["ComputeQuotaResources"] == [{"InstanceType": P5, "Accelerators": 20}]
    assert accelerator_ceiling(platform, platform.team("vision"))[GPU] == 20  # type: ignore[index]
    share = next(s for s in build_plan(platform, month="2026-12").shares if s.team == "vision")
    assert (share.guaranteed_instances, share.guaranteed_gpus, share.burst_ceiling_gpus) == (
        Decimal("2.5"),
        20,
        20,
    )


def test_a_quota_in_vcpus_and_memory_holds_no_accelerators(platform: Platform) -> None:
    # inference: g5.12xlarge has 4 GPUs, 48 vCPUs (48 cores at threadsPerCore 2), 192 GiB: 96 vCPUs are two
    # instances' cores, 256 GiB one and a third instances' memory, and no GPU
    assert flavor(platform, "inference", "ml.g5.12xlarge") == {
        GPU: (0, 0),
        NEURON: (0, 0),
        "cpu": (96, 0),
        "memory": ("256Gi", "0Gi"),
        EFA: (0, 0),
    }
    props = tg.compute_quota_properties(platform, platform.team("inference"), cluster_arn="arn")
    assert props["ComputeQuotaConfig"]["ComputeQuotaResources"][0] == {
        "InstanceType": "ml.g5.12xlarge",
        "VCpu": 96,
        "MemoryInGiB": 256,
    }
    shares = {(s.team, s.instance_type): s for s in build_plan(platform, month="2026-12").shares}
    share = shares[("inference", "ml.g5.12xlarge")]
    assert (share.guaranteed_instances, share.guaranteed_gpus) == (Decimal(2), 0)


def test_task_governance_receives_the_percentage_and_the_absolute_limits(platform: Platform) -> None:
    props = tg.compute_quota_properties(platform, platform.team("data-prep"), cluster_arn="arn")
    assert props["ComputeQuotaConfig"]["ResourceSharingConfig"] == {
        "Strategy": "LendAndBorrow",
        "BorrowLimit": 50,
        "AbsoluteBorrowLimits": [
            {"InstanceType": M5, "VCpu": 6},
            {"InstanceType": P5, "Accelerators": 8},
        ],
    }
    research = tg.compute_quota_properties(platform, platform.team("research"), cluster_arn="arn")
    assert research["ComputeQuotaConfig"]["ResourceSharingConfig"]["BorrowLimit"] == 1000


def test_nobody_borrows_when_idle_sharing_is_off(platform: Platform) -> None:
    off = dataclasses.replace(
        platform, scheduling=dataclasses.replace(platform.scheduling, idle_resource_sharing=False)
    )
    props = tg.compute_quota_properties(off, off.team("data-prep"), cluster_arn="arn")
    assert props["ComputeQuotaConfig"]["ResourceSharingConfig"] == {"Strategy": "DontLend"}
    assert flavor(off, "data-prep", P5)[GPU] == (0, 0)
    assert not may_borrow(off, off.team("data-prep"))


def test_the_resource_quota_backstop_holds_the_same_ceilings(platform: Platform) -> None:
    data_prep = platform.team("data-prep")
    # 8 borrowable GPUs on p5 and nothing else
    assert accelerator_ceiling(platform, data_prep) == {
        GPU: 8,
        NEURON: 0,
        "aws.amazon.com/neuron": 0,
        "aws.amazon.com/neuroncore": 0,
    }
    # cores: p5 0 + 96, m5 16 + 6; memory: p5 2048, m5 64 + 24; EFA: p5 32
    assert compute_ceiling(platform, data_prep) == {
        "requests.cpu": "118",
        "requests.memory": "2136Gi",
        f"requests.{EFA}": "32",
        "requests.hugepages-2Mi": "2136Gi",
        "requests.hugepages-1Gi": "2136Gi",
    }
    research = accelerator_ceiling(platform, platform.team("research"))
    assert research is not None
    assert (research[GPU], research[NEURON]) == (56 + 560, 48 + 16)


def test_the_plan_bounds_each_burst_by_what_the_others_lend(platform: Platform) -> None:
    shares = {(s.team, s.instance_type): s for s in build_plan(platform, month="2026-12").shares}
    # vision does not lend, so the 1,000 % borrower finds nothing to borrow on p5 ...
    research = shares[("research", P5)]
    assert (research.borrowing_limit_gpus, research.lent_by_others_gpus, research.burst_ceiling_gpus) == (
        560,
        0,
        56,
    )
    # ... while data-prep, without a p5 quota, may borrow research's idle 8 GPUs (its absolute limit)
    data_prep = shares[("data-prep", P5)]
    assert (data_prep.guaranteed_gpus, data_prep.borrowing_limit_gpus, data_prep.lent_by_others_gpus) == (
        0,
        8,
        56,
    )
    assert (data_prep.burst_ceiling_gpus, data_prep.reclaimable_gpus) == (8, 8)
    # on trn1 research's absolute limit (16) is less than what inference lends (16 of its guarantee): 48 + 16
    assert shares[("research", TRN1)].burst_ceiling_gpus == 64


def test_a_team_with_only_absolute_limits_still_borrows(platform: Platform) -> None:
    team = platform.team("data-prep")
    zero = dataclasses.replace(team, compute=dataclasses.replace(team.compute, borrow_limit=0))
    assert may_borrow(platform, zero) and team_borrows(platform, zero)
    nothing = dataclasses.replace(zero, compute=dataclasses.replace(zero.compute, absolute_borrow_limits={}))
    assert not may_borrow(platform, nothing) and not team_borrows(platform, nothing)


SHAPE = ResourceShape(accelerators=8, vcpus=192, memory_gib=2048)


@pytest.mark.parametrize(
    ("amount", "expected"),
    [
        (ResourceAmount(instances=2), dict.fromkeys(Resource, Fraction(2))),
        (ResourceAmount(accelerators=3), dict.fromkeys(Resource, Fraction(3, 8))),
        (
            ResourceAmount(vcpus=48),
            {
                Resource.ACCELERATORS: 0,
                Resource.CPU: Fraction(1, 4),
                Resource.MEMORY: Fraction(1, 4),
                Resource.EFA: 0,
            },
        ),
        (
            ResourceAmount(memory_gib=0.5),
            {
                Resource.ACCELERATORS: 0,
                Resource.CPU: Fraction(1, 4096),
                Resource.MEMORY: Fraction(1, 4096),
                Resource.EFA: 0,
            },
        ),
        (
            ResourceAmount(vcpus=19.2, memory_gib=1024),
            {
                Resource.ACCELERATORS: 0,
                Resource.CPU: Fraction(1, 10),
                Resource.MEMORY: Fraction(1, 2),
                Resource.EFA: 0,
            },
        ),
    ],
    ids=["instances", "accelerators", "vcpus", "memory", "vcpus-and-memory"],
)
def test_an_amount_is_read_as_a_fraction_of_an_instance(
    amount: ResourceAmount, expected: dict[Resource, Any]
) -> None:
    assert instance_fractions(amount, SHAPE) == expected


def test_validate_shows_the_limits_and_warns_above_the_documented_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = platforms.reference_data()
    data["teams"][1]["compute"] |= {
        "borrowLimit": 1000,
        "absoluteBorrowLimits": {"ml.g5.12xlarge": {"accelerators": 4}},
    }
    path = tmp_path / "platform.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "lend-and-borrow  1000%; ml.g5.12xlarge: 4 accelerators" in out
    assert "warnings (1)" in out and "[HPT-BORROW-LIMIT-RANGE]" in out


def test_the_chargeback_bills_a_gpu_quota_exactly(tmp_path: Path) -> None:
    data = platforms.reference_data()
    data["teams"][1]["compute"]["quotas"] = {P5: {"accelerators": 44}}  # five and a half p5 nodes
    platform = platform_from_dict(data)
    (vision,) = (t for t in chargeback_config(platform).teams if t.name == "vision")
    assert vision.quotas == {P5: Fraction(11, 2)}
    record = team_config_to_json(vision)
    assert '"quotas": {"ml.p5.48xlarge": "11/2"}' in record
    assert team_config_from_json(record) == vision
    # the record of a team of whole instances is unchanged: a number
    (research,) = (t for t in chargeback_config(platform).teams if t.name == "research")
    assert '"quotas": {"ml.p5.48xlarge": 9}' in team_config_to_json(research)
    plan = build_plan(platform, month="2026-12")
    assert plan.cost is not None
    rows = {(c.team, c.instance_type): c for c in plan.cost.report.rows}
    assert rows[("vision", P5)].guaranteed_gpu_hours == 44 * 744  # December: 744 hours
    assert rows[("research", P5)].guaranteed_gpu_hours == 72 * 744


@pytest.mark.parametrize("text", ['"1/2x"', "0.5", '"-1/2"', "true"])
def test_a_team_record_with_a_quota_that_is_no_count_is_refused(text: str) -> None:
    record = '{"version": %d, "name": "a", "costCenter": "a", "quotas": {"ml.p5.48xlarge": %s}}'
    with pytest.raises(ValueError, match="quota"):
        team_config_from_json(record % (RECORD_VERSION, text))


def test_a_platform_built_in_python_with_amounts_equals_the_yaml_one() -> None:
    """A user's app that builds its policy in Python gets the same platform as the YAML, and the same checks."""
    data = platforms.reference_data()
    data["teams"][1]["compute"] |= {
        "quotas": {P5: {"accelerators": 44}},
        "absoluteBorrowLimits": {P5: {"accelerators": 4}},
    }
    from_yaml = platform_from_dict(data)
    reference = platforms.reference_platform()
    vision = reference.team("vision")
    compute = dataclasses.replace(
        vision.compute,
        quotas={P5: ResourceAmount(accelerators=44)},
        absolute_borrow_limits={P5: ResourceAmount(accelerators=4)},
    )
    teams = tuple(
        dataclasses.replace(t, compute=compute) if t.name == "vision" else t for t in reference.teams
    )
    built = dataclasses.replace(reference, teams=teams)
    assert validate_platform(built, raise_on_error=False) == []
    assert built == from_yaml
    wrong = dataclasses.replace(
        built,
        teams=tuple(
            dataclasses.replace(
                t, compute=dataclasses.replace(t.compute, quotas={P5: ResourceAmount(accelerators=-4)})
            )
            if t.name == "vision"
            else t
            for t in built.teams
        ),
    )
    assert [i.code for i in validate_platform(wrong, raise_on_error=False)] == ["HPT-QUOTA-GRAIN"]
