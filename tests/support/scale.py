"""Platforms with many generated teams, synthesized into cloud assemblies that tests compare file by file.

* :func:`platform_data`: the reference platform with the teams named, each a copy of the reference's last team
  (one ``ml.g5.12xlarge``), and an instance group large enough for all of them (so the cluster is the same
  whatever the number of teams).
* :func:`synthesize_assembly`: synthesize one platform (version reporting off, so a template is the file
  CloudFormation receives, byte for byte) and read its assembly: every stack's template bytes, asset manifest
  bytes and dependencies.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from platforms import reference_data
from synth import cdk_context

from hyperpod_tenancy.policy import FairnessBackend, Platform, platform_from_dict
from hyperpod_tenancy.stacks import PlatformStage

#: Instances of the inference group (at least; more above 63 teams): room for every generated team's one
#: instance and the reserve, the same for the sizes the invariant compares.
G5_INSTANCES = 64


def team_name(index: int) -> str:
    """Name of the generated team ``index``."""
    return f"team-{index:03d}"


def platform_data(indices: Sequence[int], backend: FairnessBackend) -> dict[str, Any]:
    """The reference platform (with its ``chargeback:`` section) with generated teams ``indices`` only."""
    data = reference_data()
    data["fairnessBackend"] = backend.value
    data["cluster"]["instanceGroups"][1]["count"] = max(G5_INSTANCES, len(indices) + 1)
    template = data["teams"][2]
    teams = []
    for i in indices:
        team = copy.deepcopy(template)
        team["name"] = team_name(i)
        team["compute"]["quotas"] = {"ml.g5.12xlarge": 1}
        team["identity"] = {"groupId": f"906754abcd-{i:08d}-aaaa-bbbb-cccc-{i:012d}", "posixGid": 30000 + i}
        teams.append(team)
    # the p5 group keeps a team with a quota on it, so no team count changes the cluster's warnings
    research = data["teams"][0]
    data["teams"] = [research, *teams]
    return data


def platform(indices: Sequence[int], backend: FairnessBackend) -> Platform:
    """:func:`platform_data`, validated."""
    return platform_from_dict(platform_data(indices, backend))


@dataclass(frozen=True)
class Assembly:
    """What one synthesis wrote, by stack name."""

    platform: Platform
    stage: PlatformStage
    #: Template file bytes.
    templates: dict[str, bytes]
    #: Asset manifest file bytes (``<stack>.assets.json``).
    assets: dict[str, bytes]
    #: Artifact IDs each stack depends on (other stacks and its asset manifest).
    dependencies: dict[str, list[str]]
    directory: Path

    def template(self, stack: str) -> dict[str, Any]:
        """A template, decoded."""
        decoded: dict[str, Any] = json.loads(self.templates[stack])
        return decoded

    def team_stack(self, team: str) -> str:
        """Stack name of a team."""
        return self.stage.team_stacks[team].stack_name


def synthesize_assembly(platform: Platform, outdir: Path) -> Assembly:
    """Synthesize ``platform`` through :class:`PlatformStage` into ``outdir`` and read its cloud assembly."""
    app = cdk.App(
        outdir=str(outdir),
        context=cdk_context(),
        analytics_reporting=False,
        builtin_cloud_formation_validation=False,
    )
    stage = PlatformStage(app, platform.name, platform=platform)
    app.synth()
    directory = Path(stage.synth().directory)
    manifest = json.loads((directory / "manifest.json").read_text())
    templates: dict[str, bytes] = {}
    assets: dict[str, bytes] = {}
    dependencies: dict[str, list[str]] = {}
    artifacts = manifest["artifacts"]
    for artifact_id, artifact in artifacts.items():
        if artifact["type"] != "aws:cloudformation:stack":
            continue
        name = artifact.get("displayName", artifact_id).split("/")[-1]
        stack = artifact["properties"].get("stackName", name)
        templates[stack] = (directory / artifact["properties"]["templateFile"]).read_bytes()
        dependencies[stack] = sorted(artifact.get("dependencies", []))
        for dependency in artifact.get("dependencies", []):
            asset = artifacts.get(dependency, {})
            if asset.get("type") == "cdk:asset-manifest":
                assets[stack] = (directory / asset["properties"]["file"]).read_bytes()
    return Assembly(
        platform=platform,
        stage=stage,
        templates=templates,
        assets=assets,
        dependencies=dependencies,
        directory=directory,
    )
