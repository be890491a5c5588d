"""The ``hyperpod-tenancy validate`` command: summary on success, every problem on failure, no traceback."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from platforms import PLATFORM_YAML as REFERENCE
from platforms import REPO, reference_data

from hyperpod_tenancy.cli import main


def write(tmp_path: Path, name: str, data: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def words(line: str) -> list[str]:
    return line.split()


def test_reference_summary(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["validate", str(REFERENCE)], capsys)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) <= 40
    assert lines[0] == f"{REFERENCE}: valid. Platform ml-platform, account 111122223333, region us-east-1."
    rows = [words(line) for line in lines]
    assert (
        words("cluster shared-gpu backend task-governance Kubernetes 1.33 zones us-east-1a, us-east-1b")
        in rows
    )
    # instance groups: count, reserved, promisable (= count - reserved), zone
    assert words("p5-training ml.p5.48xlarge 16 1 15 us-east-1a") in rows
    assert words("g5-inference ml.g5.12xlarge 4 1 3 us-east-1b") in rows
    # priority classes with weights, preemptible ones marked
    assert words("inference 100, training 70, experimentation* 30") in rows
    # teams: namespace, quotas, sharing, borrow limit, weight, allowed classes
    assert (
        words(
            "research hyperpod-ns-research ml.p5.48xlarge=9 lend-and-borrow 50% 60 training, experimentation*"
        )
        in rows
    )
    assert (
        words("vision hyperpod-ns-vision ml.p5.48xlarge=6 lend-and-borrow 100% 40 training, experimentation*")
        in rows
    )
    assert words("inference hyperpod-ns-inference ml.g5.12xlarge=3 lend - 50 inference") in rows
    # totals per instance type: promised vs promisable
    assert words("ml.p5.48xlarge 15 15 0 research 9, vision 6") in rows
    assert words("ml.g5.12xlarge 3 3 0 inference 3") in rows
    assert lines[-1] == "warnings: none"


def test_path_defaults_to_platform_yaml(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    status, out, _ = run(["validate"], capsys)
    assert status == 0
    assert out.startswith("platform.yaml: valid.")


def test_invalid_policy_lists_every_problem_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = reference_data()
    data["teams"][1]["compute"]["borrowLimit"] = 10_900
    data["teams"][1]["compute"]["quotas"] = {"ml.p5.48xlarge": 7}
    data["teams"][0]["allowedPriorityClasses"] = ["trainig", "experimentation"]
    path = write(tmp_path, "bad.yaml", data)
    status, out, err = run(["validate", str(path)], capsys)
    assert (status, out) == (1, "")
    lines = err.splitlines()
    assert lines[0] == f"3 problem(s) in {path}; nothing was synthesized:"
    assert lines[1].startswith(
        "  - teams[0].allowedPriorityClasses[0]: priority class 'trainig' is not defined"
    )
    assert lines[1].endswith("did you mean 'training'? [HPT-PRIORITY-UNKNOWN]")
    assert lines[2].startswith(
        "  - teams[1].compute.borrowLimit: 10900 is outside the range the SageMaker API accepts, 0-10,000"
    )
    assert " Fix: use a value between 0 and 10,000" in lines[2]
    assert lines[2].endswith("[HPT-BORROW-LIMIT]")
    assert "sum to 16 (research 9 + vision 7)" in lines[3]
    assert lines[3].endswith("[HPT-QUOTA-CAPACITY]")
    assert len(lines) == 4
    assert "Traceback" not in err


def test_yaml_syntax_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\n  bad: [\n", encoding="utf-8")
    status, out, err = run(["validate", str(path)], capsys)
    assert (status, out) == (1, "")
    assert "  - line 2, column 6: not valid YAML: mapping values are not allowed here." in err
    assert err.rstrip().endswith("[HPT-YAML]")


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    status, out, err = run(["validate", str(missing)], capsys)
    assert (status, out) == (1, "")
    assert (
        err == f"hyperpod-tenancy: error: cannot read policy {str(missing)!r}: No such file or directory.\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "choose a command"),
        (["check"], "invalid choice: 'check'"),
        (["validate", "--bogus"], "unrecognized arguments: --bogus"),
        (["validate", "a.yaml", "b.yaml"], "unrecognized arguments: b.yaml"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(argv, capsys)
    assert (status, out) == (2, "")
    assert err.startswith("usage: hyperpod-tenancy")
    assert message in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["validate", "--help"], capsys)
    assert status == 0
    assert "--baseline OLD_PATH" in out


def test_warnings_are_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = reference_data()
    data["teams"][2]["allowedPriorityClasses"] = ["inference", "experimentation"]
    status, out, _ = run(["validate", str(write(tmp_path, "p.yaml", data))], capsys)
    assert status == 0
    lines = out.splitlines()
    assert lines[-2] == "warnings (1)"
    assert lines[-1].startswith(
        "  teams[2].allowedPriorityClasses: inference team 'inference' may use the lowest"
    )
    assert lines[-1].endswith("[HPT-INFERENCE-LOWEST-PRIORITY]")
    assert words(
        "inference hyperpod-ns-inference ml.g5.12xlarge=3 lend - 50 inference, experimentation*"
    ) in [words(line) for line in lines]


def test_dedicated_cluster_team_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = reference_data()
    data["cluster"]["onDataClassificationMismatch"] = "dedicated-cluster"
    data["teams"][1]["dataClassification"] = "restricted"
    status, out, _ = run(["validate", str(write(tmp_path, "p.yaml", data))], capsys)
    assert status == 0
    rows = [words(line) for line in out.splitlines()]
    assert words("vision - (dedicated cluster: restricted) ml.p5.48xlarge=6 lend-and-borrow 100% 40") == next(
        row[:9] for row in rows if row[:1] == ["vision"]
    )
    assert words("ml.p5.48xlarge 9 15 6 research 9") in rows
    assert "[HPT-DEDICATED-CLUSTER]" in out


def test_baseline_reports_replacements(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = reference_data()
    data["teams"][1]["name"] = "cv"
    data["cluster"]["name"] = "shared-gpu-2"
    new = write(tmp_path, "new.yaml", data)
    status, out, err = run(["validate", str(new), "--baseline", str(REFERENCE)], capsys)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    start = lines.index(f"replacements vs baseline {REFERENCE} (2)")
    assert lines[start + 1].startswith(
        "  cluster.name: cluster.name changes from 'shared-gpu' to 'shared-gpu-2'"
    )
    assert lines[start + 1].endswith("[HPT-REPLACE-CLUSTER]")
    assert lines[start + 2].startswith("  teams[1].name: team renamed from 'vision' to 'cv'")
    assert lines[start + 2].endswith("[HPT-REPLACE-TEAM]")
    assert len(lines) == start + 3


def test_baseline_without_replacements(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(["validate", str(REFERENCE), "--baseline", str(REFERENCE)], capsys)
    assert status == 0
    assert out.splitlines()[-1] == f"replacements vs baseline {REFERENCE}: none"
    assert len(out.splitlines()) <= 40


def test_invalid_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(reference_data())
    data["account"] = "nope"
    old = write(tmp_path, "old.yaml", data)
    status, out, err = run(["validate", str(REFERENCE), "--baseline", str(old)], capsys)
    assert (status, out) == (1, "")
    assert (
        err.splitlines()[0]
        == "hyperpod-tenancy: the baseline policy is invalid, so changes cannot be compared."
    )
    assert "[HPT-ACCOUNT]" in err


def test_missing_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run(["validate", str(REFERENCE), "--baseline", str(tmp_path / "old.yaml")], capsys)
    assert (status, out) == (1, "")
    assert "cannot read baseline policy" in err


def test_installed_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("hyperpod-tenancy")
    assert script.is_file(), f"{script} is not installed; run `make setup`"
    ok = subprocess.run(
        [script, "validate"], cwd=REPO, capture_output=True, text=True, check=False, timeout=60
    )
    assert (ok.returncode, ok.stderr) == (0, "")
    assert ok.stdout.startswith("platform.yaml: valid.")
    data = reference_data()
    data["teams"][0]["compute"]["borrowLimit"] = -1
    bad = subprocess.run(
        [script, "validate", write(tmp_path, "bad.yaml", data)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (bad.returncode, bad.stdout) == (1, "")
    assert "teams[0].compute.borrowLimit: -1 is outside" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """``--version`` prints the installed distribution's version, as pip knows it."""
    import importlib.metadata

    version = importlib.metadata.version("cdk-hyperpod-tenancy")
    assert run(["--version"], capsys) == (0, f"hyperpod-tenancy {version}\n", "")
