"""Platforms and placeholder values shared by the team-manifest, network and RBAC isolation tests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from hyperpod_tenancy.k8s.team_manifests import FsxVolume, fsx_directory_job, team_manifests
from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict

REPO = Path(__file__).resolve().parents[2]
PLATFORM_YAML = REPO / "platform.yaml"

#: Placeholder FSx values (what CDK tokens resolve to look like).
FSX = FsxVolume(
    file_system_id="fs-0123456789abcdef0",
    dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    mount_name="abcdefgh",
)


def _reference_data() -> dict[str, Any]:
    data = yaml.safe_load(PLATFORM_YAML.read_text())
    assert isinstance(data, dict)
    return data


def reference_platform() -> Platform:
    """The repository's ``platform.yaml`` (three teams, Task Governance)."""
    return load_platform(PLATFORM_YAML)


def kueue_platform() -> Platform:
    """The reference platform on the self-managed Kueue backend (namespaces are ours to create)."""
    data = _reference_data()
    data["fairnessBackend"] = "kueue"
    return platform_from_dict(data, source="platform.yaml (kueue)")


def four_team_platform() -> Platform:
    """The reference platform with a fourth team ``speech`` (a validated policy, not a hand-made object)."""
    data = _reference_data()
    research = next(t for t in data["teams"] if t["name"] == "research")
    research["compute"]["quotas"] = {"ml.p5.48xlarge": 5}
    speech = copy.deepcopy(research)
    speech["name"] = "speech"
    speech["compute"]["quotas"] = {"ml.p5.48xlarge": 4}
    # a distinct but well-formed Identity Center group ID, derived from research's example one
    speech["identity"] = {"groupId": research["identity"]["groupId"].replace("1", "4"), "posixGid": 20004}
    data["teams"].append(speech)
    return platform_from_dict(data, source="platform.yaml (four teams)")


def all_objects(platform: Platform) -> list[dict[str, Any]]:
    """Every team's objects and FSx directory Jobs of ``platform``."""
    objects: list[dict[str, Any]] = []
    for team in platform.teams:
        objects += team_manifests(platform, team, fsx=FSX)
        objects += fsx_directory_job(platform, team, fsx=FSX)
    return objects
