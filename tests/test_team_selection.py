"""Synthesizing a selection of teams (``cdk synth -c teams=a,b``): checked before anything is built, and the
shared stacks it writes are the bytes a synthesis of every team writes.

A deploy pipeline that synthesizes one team and deploys the shared stacks with it must not change them: every
file of each shared stack (template, asset manifest, metadata) and of the selected team's stack is compared with
the synthesis of the whole reference platform, for each team alone, and for one team on the Kueue backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import aws_cdk as cdk
import pytest
from platforms import PLATFORM_YAML, REPO, reference_data, reference_platform
from synth import cdk_context

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import (
    SELECTION_CODE,
    FairnessBackend,
    Platform,
    platform_from_dict,
    select_teams,
)
from hyperpod_tenancy.stacks import PlatformStage


def _issues(platform: Platform, teams: str | list[str]) -> list[str]:
    with pytest.raises(PolicyError) as raised:
        select_teams(platform, teams)
    assert {issue.code for issue in raised.value.issues} == {SELECTION_CODE}
    return [str(issue) for issue in raised.value.issues]


def test_a_selection_keeps_the_policys_order_and_ignores_blanks_and_repeats() -> None:
    platform = reference_platform()
    chosen = select_teams(platform, " inference, research,,research ")
    assert [team.name for team in chosen] == ["research", "inference"]
    assert [team.name for team in select_teams(platform, ["vision"])] == ["vision"]


def test_a_misspelt_team_is_named_with_the_closest_team() -> None:
    (issue,) = _issues(reference_platform(), "reserch")
    assert "'reserch' is not a team of platform 'ml-platform'" in issue
    assert "did you mean 'research'?" in issue


def test_every_bad_name_is_listed_at_once_with_the_choices() -> None:
    issues = _issues(reference_platform(), "research,zzz,qqq")
    assert len(issues) == 2
    assert "choose from: research, vision, inference." in issues[0]


def test_a_number_in_the_context_is_named_not_a_traceback() -> None:
    """``"teams": [7]`` in ``cdk.json``'s context: the name is read as text and reported."""
    (issue,) = _issues(reference_platform(), [7])  # type: ignore[list-item]
    assert "'7' is not a team of platform 'ml-platform'" in issue


def test_an_empty_selection_is_refused() -> None:
    """Without a team beside them the shared stacks would lose the exports the deployed teams import."""
    for empty in ("", " , ", []):
        (issue,) = _issues(reference_platform(), empty)
        assert "names no team" in issue


def test_a_team_for_a_dedicated_cluster_cannot_be_selected() -> None:
    data = reference_data()
    data["cluster"]["onDataClassificationMismatch"] = "dedicated-cluster"
    data["teams"][1]["dataClassification"] = "restricted"
    platform = platform_from_dict(data)
    assert "vision" not in [t.name for t in platform.hosted_teams]
    (issue,) = _issues(platform, "vision")
    assert "flagged for a dedicated cluster" in issue


def test_the_app_refuses_a_bad_selection_without_traceback_and_synthesizes_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PLATFORM_FILE": str(PLATFORM_YAML),
        "PLATFORM_TEAMS": "visoin",
        "CDK_OUTDIR": str(tmp_path / "out"),
    }
    result = subprocess.run(
        [sys.executable, "app.py"], check=False, cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        "teams: 'visoin' is not a team of platform 'ml-platform'. Fix: did you mean 'vision'?"
        in result.stderr
    )
    assert not (tmp_path / "out").exists()


def test_the_stage_refuses_a_bad_selection_before_any_stack_exists() -> None:
    app = cdk.App()
    with pytest.raises(PolicyError, match="did you mean 'inference'"):
        PlatformStage(app, "ml-platform", platform=reference_platform(), teams=["inferense"])
    assert app.node.children == []


# ------------------------------------------------------------------------------------------- synthesized
def _synthesize(
    platform: Platform, outdir: Path, teams: list[str] | None
) -> tuple[PlatformStage, dict[str, bytes]]:
    """Every file of the stage's cloud assembly but its manifest (which lists the stacks), by name."""
    app = cdk.App(
        outdir=str(outdir),
        context=cdk_context(),
        analytics_reporting=False,
        builtin_cloud_formation_validation=False,
    )
    stage = PlatformStage(app, platform.name, platform=platform, teams=teams)
    app.synth()
    directory = Path(stage.synth().directory)
    return stage, {
        f.name: f.read_bytes() for f in directory.iterdir() if f.is_file() and f.name != "manifest.json"
    }


def _kueue_platform() -> Platform:
    data = reference_data()
    data["fairnessBackend"] = FairnessBackend.KUEUE.value
    return platform_from_dict(data)


@pytest.fixture(scope="module")
def everyone(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlatformStage, dict[str, bytes]]:
    return _synthesize(reference_platform(), tmp_path_factory.mktemp("everyone"), None)


@pytest.fixture(scope="module")
def everyone_on_kueue(tmp_path_factory: pytest.TempPathFactory) -> tuple[PlatformStage, dict[str, bytes]]:
    return _synthesize(_kueue_platform(), tmp_path_factory.mktemp("everyone-kueue"), None)


def _assert_alone_is_the_same(
    platform: Platform, team: str, everyone: tuple[PlatformStage, dict[str, bytes]], tmp_path: Path
) -> None:
    full_stage, full = everyone
    stage, alone = _synthesize(platform, tmp_path, [team])
    assert list(stage.team_stacks) == [team]
    shared = [full_stage.cluster_stack.artifact_id]
    assert full_stage.chargeback_stack is not None
    shared.append(full_stage.chargeback_stack.artifact_id)
    kept = [*shared, stage.team_stacks[team].artifact_id]
    expected = {name for name in full if name.split(".")[0] in kept or name == "cdk.out"}
    assert set(alone) == expected
    assert {name for name in alone if name.endswith(".template.json")} == {f"{a}.template.json" for a in kept}
    changed = sorted(name for name in alone if alone[name] != full[name])
    assert changed == []
    # the team's stack still waits for the cluster stack it imports from
    manifest = json.loads((Path(stage.synth().directory) / "manifest.json").read_text())
    dependencies = manifest["artifacts"][stage.team_stacks[team].artifact_id]["dependencies"]
    assert full_stage.cluster_stack.artifact_id in dependencies


@pytest.mark.parametrize("team", ["research", "vision", "inference"])
def test_one_team_alone_writes_the_shared_stacks_byte_for_byte(
    team: str, everyone: tuple[PlatformStage, dict[str, bytes]], tmp_path: Path
) -> None:
    _assert_alone_is_the_same(reference_platform(), team, everyone, tmp_path)


def test_one_team_alone_on_kueue_writes_the_shared_stacks_byte_for_byte(
    everyone_on_kueue: tuple[PlatformStage, dict[str, bytes]], tmp_path: Path
) -> None:
    """The Kueue backend renders the team's queues in the team's chart and the cluster's in the cluster stack."""
    _assert_alone_is_the_same(_kueue_platform(), "vision", everyone_on_kueue, tmp_path)
