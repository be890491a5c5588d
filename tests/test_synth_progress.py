"""Progress of a long synthesis: a line per 10 % of the team stacks, with the elapsed time, above 50 teams."""

from __future__ import annotations

import io
import re
from pathlib import Path

import aws_cdk as cdk
import platforms
import pytest

from hyperpod_tenancy.stacks import PlatformStage
from hyperpod_tenancy.stacks.progress import PROGRESS_MIN_TEAMS, SynthProgress


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_line_per_tenth_with_the_elapsed_time() -> None:
    out, clock = io.StringIO(), _Clock()
    progress = SynthProgress(1000, stream=out, clock=clock)
    for done in range(1, 1001):
        clock.now += 0.05
        progress.step(done)
    lines = out.getvalue().splitlines()
    assert len(lines) == 10
    assert lines[0] == "hyperpod-tenancy: team stacks 100/1000 (10%) built, 5.0 s"
    assert lines[-1] == "hyperpod-tenancy: team stacks 1000/1000 (100%) built, 50.0 s"
    progress.finish("1000 team stacks synthesized")
    assert out.getvalue().splitlines()[-1].startswith("hyperpod-tenancy: 1000 team stacks synthesized, ")


def test_nothing_is_written_for_a_few_teams() -> None:
    out = io.StringIO()
    progress = SynthProgress(PROGRESS_MIN_TEAMS, stream=out)
    for done in range(1, PROGRESS_MIN_TEAMS + 1):
        progress.step(done)
    progress.finish("done")
    assert out.getvalue() == ""
    assert SynthProgress(PROGRESS_MIN_TEAMS + 1, stream=out).enabled


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    out = _Tty()
    progress = SynthProgress(60, stream=out)
    for done in range(1, 61):
        progress.step(done)
    text = out.getvalue()
    assert text.count("\r") == 10 and text.count("\n") == 1 and text.endswith("(100%) built, 0.0 s\n")


def test_the_stage_reports_its_team_stacks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    platform = platforms.reference_platform()
    app = cdk.App(outdir=str(tmp_path))
    stage = PlatformStage(app, platform.name, platform=platform, progress=True)
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("hyperpod-tenancy:")]
    total = len(stage.team_stacks)
    assert len(lines) == 10
    assert re.fullmatch(
        rf"hyperpod-tenancy: team stacks {total}/{total} \(100%\) built, \d+\.\d s", lines[-1]
    )
    # and the default for three teams is silence
    PlatformStage(cdk.App(outdir=str(tmp_path / "quiet")), platform.name, platform=platform)
    assert "hyperpod-tenancy: team stacks" not in capsys.readouterr().err
