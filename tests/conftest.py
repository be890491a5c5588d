"""Shared fixtures: synthesized reference platforms (one synthesis per session and backend)."""

from __future__ import annotations

from pathlib import Path

import pytest
from synth import Synth, platform_with, reference_dict, synthesize

from hyperpod_tenancy.policy import Platform, load_platform


@pytest.fixture(scope="session")
def reference_platform() -> Platform:
    """The reference platform.yaml (Task Governance backend)."""
    return load_platform(Path(__file__).parents[1] / "platform.yaml")


@pytest.fixture(scope="session")
def reference(reference_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform, synthesized with the Task Governance backend."""
    return synthesize(reference_platform, tmp_path_factory.mktemp("reference"))


@pytest.fixture(scope="session")
def kueue_platform() -> Platform:
    """The reference platform switched to the self-managed Kueue backend (one line of platform.yaml)."""
    return platform_with(fairnessBackend="kueue")


@pytest.fixture(scope="session")
def kueue_reference(kueue_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform, synthesized with the Kueue backend."""
    return synthesize(kueue_platform, tmp_path_factory.mktemp("kueue"))


@pytest.fixture(scope="session")
def four_teams(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The reference platform with a fourth team added to platform.yaml."""
    data = reference_dict()
    data["teams"].append(
        {
            "name": "speech",
            "compute": {"quotas": {"ml.g5.12xlarge": 0}, "sharing": "lend"},
            "allowedPriorityClasses": ["training"],
            "identity": {"groupId": "906754abcd-44444444-aaaa-bbbb-cccc-444444444444", "posixGid": 20004},
        }
    )
    from hyperpod_tenancy.policy import platform_from_dict

    return synthesize(platform_from_dict(data), tmp_path_factory.mktemp("four"))


@pytest.fixture(scope="module", params=["reference", "kueue_reference"])
def synth(request: pytest.FixtureRequest) -> Synth:
    """The synthesized reference platform, once on each fairness backend (Task Governance, Kueue)."""
    value: Synth = request.getfixturevalue(request.param)
    return value
