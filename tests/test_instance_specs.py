"""The product's instance-type catalogue agrees with AWS's published specs (tests/support/instance_specs.py).

The fairness and quota oracles compute per-instance resources from the published specs, not from the
catalogue, so these tests are where a wrong catalogue entry shows up as a wrong fact rather than as two
renderings that agree with each other.
"""

from __future__ import annotations

from decimal import Decimal

import platforms
import pytest
from fairness_interpreters import GIB, schedulable_shapes
from instance_specs import INSTANCE_SPECS, InstanceSpec, spec

from hyperpod_tenancy.policy import RESOURCE_CATALOGUE, ResourceShape


def as_spec(shape: ResourceShape) -> InstanceSpec:
    return InstanceSpec(
        shape.accelerators, shape.accelerator_resource, shape.vcpus, shape.memory_gib, shape.efa_interfaces
    )


@pytest.mark.parametrize("instance_type", sorted(INSTANCE_SPECS))
def test_catalogue_matches_the_published_spec(instance_type: str) -> None:
    assert instance_type in RESOURCE_CATALOGUE, f"{instance_type} is not catalogued"
    assert as_spec(RESOURCE_CATALOGUE[instance_type]) == INSTANCE_SPECS[instance_type]


def test_published_figures_spot_checks() -> None:
    # the figures quoted in the issue, written out so a typo in the table cannot hide behind a variable
    assert INSTANCE_SPECS["ml.p5.48xlarge"] == InstanceSpec(8, "nvidia.com/gpu", 192, 2048, 32)
    assert INSTANCE_SPECS["ml.g5.12xlarge"] == InstanceSpec(4, "nvidia.com/gpu", 48, 192, 1)


@pytest.mark.parametrize("name", platforms.FAIRNESS_PLATFORM_NAMES)
def test_every_test_platform_type_has_an_independent_figure(name: str) -> None:
    # the oracle covers every platform the fairness tests run on: an uncatalogued type would fail loudly
    for group in platforms.fairness_platform(name).cluster.instance_groups:
        if group.resources is None:
            assert group.instance_type in INSTANCE_SPECS, group.instance_type


def test_oracle_reads_the_published_spec_not_the_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    platform = platforms.reference_platform()
    shapes = schedulable_shapes(platform)
    # p5-training runs one thread per core: 192 vCPUs are 96 schedulable cores
    assert shapes["ml.p5.48xlarge"] == {
        "nvidia.com/gpu": Decimal(8),
        "cpu": Decimal(96),
        "memory": 2048 * GIB,
    }
    # a wrong catalogue entry does not leak into the oracle
    monkeypatch.setitem(
        RESOURCE_CATALOGUE, "ml.p5.48xlarge", ResourceShape(accelerators=4, vcpus=1, memory_gib=1)
    )
    assert schedulable_shapes(platform) == shapes


def test_a_type_without_a_published_figure_is_named() -> None:
    with pytest.raises(KeyError, match=r"no published spec for ml\.p4d\.24xlarge in tests/support"):
        spec("ml.p4d.24xlarge")
