"""Packaging promises: pure-Python policy model, typed package, the app's error path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from platforms import PLATFORM_YAML, REPO

import hyperpod_tenancy


def test_policy_model_imports_no_jsii() -> None:
    code = (
        "import sys, hyperpod_tenancy.policy, hyperpod_tenancy.cli, hyperpod_tenancy.k8s.kueue\n"
        "import hyperpod_tenancy.k8s.admission, hyperpod_tenancy.k8s.team_manifests\n"
        "import hyperpod_tenancy.constructs._private.task_governance, hyperpod_tenancy.constructs._private.team_iam\n"
        "bad = [m for m in ('jsii', 'aws_cdk', 'cdk8s', 'constructs') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_package_is_typed_and_exports_its_api() -> None:
    package = Path(hyperpod_tenancy.__file__).parent
    assert (package / "py.typed").is_file()
    for name in hyperpod_tenancy.__all__:
        assert getattr(hyperpod_tenancy, name) is not None, name


def test_app_reports_a_bad_policy_without_traceback_and_synthesizes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "platform.yaml"
    bad.write_text(PLATFORM_YAML.read_text().replace("count: 16", "count: -1"))
    env = {**os.environ, "PLATFORM_FILE": str(bad), "CDK_OUTDIR": str(tmp_path / "out")}
    result = subprocess.run(
        [sys.executable, "app.py"], check=False, cwd=REPO, env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "cluster.instanceGroups[0].count: -1 is not a positive number of instances" in result.stderr
    assert not (tmp_path / "out").exists()
