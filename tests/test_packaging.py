"""Packaging promises: pure-Python policy model, typed package, the app's error path."""

from __future__ import annotations

import os
import re
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


def _canonical(name: str) -> str:
    """A distribution name as PEP 503 normalizes it (runs of ``-``, ``_``, ``.`` to ``-``, lower case)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def test_the_cli_knows_the_modules_of_every_extra() -> None:
    """``cli.EXTRAS`` (what a command checks before it runs) is the ``[project.optional-dependencies]`` table."""
    import importlib.metadata
    import tomllib

    from hyperpod_tenancy.cli import EXTRAS

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert set(extras) == set(EXTRAS)
    owners = importlib.metadata.packages_distributions()
    for extra, requirements in extras.items():
        # names compared as PEP 503 normalizes them (prometheus_client's metadata spells its name with "_")
        declared = {_canonical(re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0]) for r in requirements}
        checked = {_canonical(d) for module in EXTRAS[extra] for d in owners[module]}
        assert checked == declared, extra


def _dry_run(target: str) -> str:
    """What ``make TARGET`` would run from scratch (``-n -B``: print every command, run none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    result = subprocess.run(
        ["make", "-n", "-B", "--no-print-directory", target],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_make_synth_installs_only_what_synthesis_needs() -> None:
    synth = _dry_run("synth")
    assert (
        'pip install --quiet --python .venv/bin/python -e ".[plan]"' in synth
        and "npm ci" in synth
        and "npx cdk synth" in synth
    )
    for test_only in (".venv-nca", ".venv-hyperpod", ".venv-checkov", "--group", "prometheus", "[chargeback"):
        assert test_only not in synth, test_only
    test = _dry_run("test")
    for needed in (".venv-nca", ".venv-hyperpod", ".venv-checkov", "--group dev", "-m pytest", "mypy"):
        assert needed in test, needed


def test_jsii_runs_on_a_supported_node() -> None:
    """The ``node`` on PATH (what jsii and the CDK CLI start) is 22 or later; ``make`` puts one there."""
    import shutil

    node = os.environ.get("JSII_NODE") or shutil.which("node")
    assert node, "no node on PATH"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    print(f"jsii runs on Node {version} ({node})")
    assert int(version.lstrip("v").split(".")[0]) >= 22, (
        f"{node} is Node {version}: run the tests through `make test`, which installs a supported Node"
    )


def test_make_synth_selects_the_stage_stacks(tmp_path: Path) -> None:
    """``make synth``'s CDK command, run as the recipe writes it: the stacks live in the platform's stage, so the
    CLI's closing line must list them, not an empty ``Supply a stack id ()``."""
    (line,) = [cmd for cmd in _dry_run("synth").splitlines() if cmd.startswith("npx cdk synth")]
    args = [str(REPO / "node_modules" / ".bin" / "cdk"), *line.split()[2:], "-o", str(tmp_path / "cdk.out")]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    result = subprocess.run(
        [a.strip("'") for a in args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert "Supply a stack id ()" not in output
    assert "Supply a stack id (ml-platform/Cluster, ml-platform/Team-Research" in output
