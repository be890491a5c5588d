"""The library as users install it: the wheel, without extras, in a fresh venv outside the checkout.

The wheel is built from this checkout, installed into a new virtual environment under a temporary folder (no
``.venv``, no ``src`` on the path) with no extras, and the README's quick-start snippets run there as written,
through the pinned CDK CLI, beside a copy of ``platform.yaml`` and a ``cdk.json`` that names the app and nothing
else (CDK's default context, not this repository's flags), without AWS credentials. What the stage synthesizes
must be the reference platform exactly as the checkout synthesizes it with the same (default) context.
The commands that need an extra must say so in one line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import platforms
import pytest
from platforms import PLATFORM_YAML, REPO
from synth import synthesize

from hyperpod_tenancy.cli import EXTRAS
from hyperpod_tenancy.policy import Platform

#: What the extras bring: none of it may be a core dependency (nor installed by the core package).
EXTRA_DISTRIBUTIONS = {
    "duckdb",
    "sqlglot",
    "rich",
    "uvicorn",
    "uvloop",
    "httptools",
    "orjson",
    "boto3",
    "matplotlib",
    "kubernetes",
}
CDK = REPO / "node_modules" / ".bin" / "cdk"


def _run(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=900)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (outside the checkout) with the wheel of this checkout installed, no extras: its python."""
    root = tmp_path_factory.mktemp("installed")
    assert not root.resolve().is_relative_to(REPO)
    wheels = root / "wheels"
    # uv (what `make` installs the venvs with): the same wheel and resolution as pip, from the set-up's cache
    uv = [sys.executable, "-m", "uv", "--quiet"]
    built = _run([*uv, "build", "--wheel", "--out-dir", str(wheels), str(REPO)], cwd=root)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("cdk_hyperpod_tenancy-*.whl")
    venv = root / "venv"
    assert _run([*uv, "venv", "--python", sys.executable, str(venv)], cwd=root).returncode == 0
    python = venv / "bin" / "python"
    install = _run([*uv, "pip", "install", "--python", str(python), str(wheel)], cwd=root)
    assert install.returncode == 0, install.stderr
    return python


def _user_env(python: Path) -> dict[str, str]:
    """The environment a user's shell has: the venv first on PATH, nothing of this checkout's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "CDK_"))}
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def quick_start_snippets() -> list[str]:
    """The Python blocks of the README's quick start, as written."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def _cdk_synth(
    python: Path,
    snippet: str,
    folder: Path,
    *,
    cached: dict[str, Any] | None = None,
    policy: Path = PLATFORM_YAML,
) -> Path:
    """Run a snippet as a CDK app's ``app.py`` through the CDK CLI, as ``cdk synth`` does; the cloud assembly.

    ``cached`` is the app's ``cdk.context.json``: what earlier lookups with credentials cached.
    """
    folder.mkdir()
    (folder / "app.py").write_text(snippet, encoding="utf-8")
    shutil.copy(policy, folder / "platform.yaml")
    cdk_json = {"app": f"{python} app.py"}  # a user's fresh folder: CDK's default context
    (folder / "cdk.json").write_text(json.dumps(cdk_json), encoding="utf-8")
    if cached is not None:
        (folder / "cdk.context.json").write_text(json.dumps(cached), encoding="utf-8")
    result = _run([str(CDK), "synth", "--quiet"], cwd=folder, env=_user_env(python))
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Traceback" not in result.stderr
    return folder / "cdk.out"


def _templates(assembly: Path) -> dict[str, dict[str, Any]]:
    """Every stack template of a cloud assembly (nested stage assemblies included), by stack name."""
    templates = {}
    for manifest in assembly.rglob("manifest.json"):
        for artifact_id, artifact in json.loads(manifest.read_text())["artifacts"].items():
            if artifact["type"] == "aws:cloudformation:stack":
                properties = artifact["properties"]
                path = manifest.parent / properties["templateFile"]
                templates[properties.get("stackName", artifact_id)] = json.loads(path.read_text())
    return templates


def _without_cli_metadata(template: dict[str, Any]) -> dict[str, Any]:
    """A template less what the CDK CLI adds and an ``App()`` in a test does not: path and asset metadata,
    the ``CDKMetadata`` resource and its condition."""
    resources = {
        key: {k: v for k, v in resource.items() if k != "Metadata"}
        for key, resource in template["Resources"].items()
        if key != "CDKMetadata"
    }
    conditions = {k: v for k, v in template.get("Conditions", {}).items() if k != "CDKMetadataAvailable"}
    return {**template, "Resources": resources, "Conditions": conditions}


def test_the_readme_has_both_quick_start_snippets() -> None:
    first, second = quick_start_snippets()
    assert "PlatformStage(" in first and "app.synth()" in first
    assert "SharedHyperPodCluster(" in second and "add_team(" in second and "app.synth()" in second


def test_the_core_package_pulls_in_no_extra(installed: Path) -> None:
    probe = (
        "import importlib.metadata as m, json\n"
        "reqs = m.requires('cdk-hyperpod-tenancy') or []\n"
        "core = [r for r in reqs if 'extra ==' not in r]\n"
        "dists = sorted({d.metadata['Name'].lower() for d in m.distributions()})\n"
        "print(json.dumps({'core': core, 'installed': dists}))\n"
    )
    out = _run([str(installed), "-c", probe], cwd=installed.parent)
    assert out.returncode == 0, out.stderr
    facts = json.loads(out.stdout)
    core = {re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0].lower() for r in facts["core"]}
    assert core and not core & EXTRA_DISTRIBUTIONS, core
    assert not set(facts["installed"]) & EXTRA_DISTRIBUTIONS, "a core dependency pulls in an extra's library"
    assert {"aws-cdk-lib", "pydantic", "cdk8s"} <= set(facts["installed"])


def test_the_platform_stage_quick_start_synthesizes_the_reference_platform(
    installed: Path, reference_platform: Platform, tmp_path: Path
) -> None:
    assembly = _cdk_synth(installed, quick_start_snippets()[0], tmp_path / "stage")
    templates = _templates(assembly)
    # the checkout's synthesis with the same context: CDK's default (the constructs warn about its flags)
    expected = synthesize(reference_platform, tmp_path / "checkout", context={}).templates
    assert set(templates) == set(expected)
    for name, template in expected.items():
        ours, theirs = _without_cli_metadata(templates[name]), _without_cli_metadata(template)
        differing = sorted(
            k
            for k in set(ours["Resources"]) | set(theirs["Resources"])
            if ours["Resources"].get(k) != theirs["Resources"].get(k)
        )
        assert ours == theirs, f"{name} differs from the checkout's synthesis in {differing[:10]}"
    assets = [json.loads(p.read_text()) for p in assembly.rglob("*.assets.json")]
    images = [image for manifest in assets for image in manifest.get("dockerImages", {}).values()]
    assert len(images) == 1 and images[0]["source"]["dockerFile"] == "webhook/Dockerfile"


@pytest.mark.parametrize(
    ("example", "stack"),
    [
        # the stacks of three accounts
        ("team-accounts", "ml-platform-org-Team-Research-Account"),
        # Identity Center elsewhere, with a Studio team: its Identity Center stack carries aws-cdk-lib's
        # AwsCustomResource handler as an asset
        ("identity-center-account", "ml-platform-org-Team-Research-Identity"),
        # partitioned GPUs and topology: the cluster stack carries the MIG label and the hardened GPU operator
        ("partitions-and-topology", "ml-platform-Cluster"),
    ],
)
def test_an_accounts_layout_synthesizes_as_in_the_checkout(
    installed: Path, tmp_path: Path, example: str, stack: str
) -> None:
    """The quick start with an accounts example as the user's ``platform.yaml``: each template as the checkout
    synthesizes it with CDK's default context."""
    policy = platforms.EXAMPLES / example / "platform.yaml"
    assembly = _cdk_synth(installed, quick_start_snippets()[0], tmp_path / "accounts", policy=policy)
    templates = _templates(assembly)
    expected = synthesize(platforms.example(example), tmp_path / "checkout", context={}).templates
    assert set(templates) == set(expected)
    assert stack in templates
    for name, template in expected.items():
        assert _without_cli_metadata(templates[name]) == _without_cli_metadata(template), name


def test_the_compose_yourself_quick_start_synthesizes(
    installed: Path, reference_platform: Platform, tmp_path: Path
) -> None:
    """In stacks of its own, as written: the app takes the policy's zones (``zone_context``), so no lookup and no
    credentials, and no ``cdk.context.json``."""
    assembly = _cdk_synth(installed, quick_start_snippets()[1], tmp_path / "compose")
    templates = _templates(assembly)
    assert set(templates) == {"MyCluster", "MyResearch"}
    cluster = {r["Type"] for r in templates["MyCluster"]["Resources"].values()}
    team = {r["Type"] for r in templates["MyResearch"]["Resources"].values()}
    assert {"AWS::SageMaker::Cluster", "AWS::FSx::FileSystem", "AWS::DynamoDB::Table"} <= cluster
    assert {"AWS::SSO::PermissionSet", "AWS::EKS::AccessEntry", "AWS::IAM::Role"} <= team


def test_explaining_a_denial_needs_no_extra(installed: Path, tmp_path: Path) -> None:
    """A refusal kubectl printed is explained from the message alone: no cluster, so no Kubernetes client."""
    denial = (REPO / "tests" / "support" / "explain_cases" / "priority_denied.txt").read_text(
        encoding="utf-8"
    )
    args = [
        "explain",
        "--denial",
        denial.strip(),
        "-n",
        "hyperpod-ns-research",
        "--platform",
        str(PLATFORM_YAML),
    ]
    result = _run([str(installed.parent / "hyperpod-tenancy"), *args], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "hyperpod-tenancy-workload-labels" in result.stdout


def test_the_text_plan_needs_no_extra(installed: Path, tmp_path: Path) -> None:
    result = _run([str(installed.parent / "hyperpod-tenancy"), "plan", str(PLATFORM_YAML)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "research" in result.stdout


def test_validate_needs_no_extra(installed: Path, tmp_path: Path) -> None:
    result = _run([str(installed.parent / "hyperpod-tenancy"), "validate", str(PLATFORM_YAML)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "research" in result.stdout


@pytest.mark.parametrize(
    ("extra", "args"),
    [
        ("chargeback", ["chargeback", "--usage", ".", "--prices", "prices.json", "--month", "2026-07"]),
        ("plan", ["plan", str(PLATFORM_YAML), "--png", "plan.png"]),
        ("probe", ["probe", str(PLATFORM_YAML), "--teams", "research", "vision"]),
        # a command that needs another command's extra names that extra
        ("chargeback", ["recommend-quotas", "--usage", ".", str(PLATFORM_YAML)]),
        ("explain", ["explain", "my-job", "-n", "hyperpod-ns-research"]),
        (
            "webhook",
            [
                "webhook",
                "serve",
                "--port",
                "8443",
                "--tls-cert",
                "c",
                "--tls-key",
                "k",
                "--table",
                "t",
                "--teams",
                "f",
            ],
        ),
    ],
)
def test_a_command_without_its_extra_names_it_in_one_line(
    installed: Path, tmp_path: Path, extra: str, args: list[str]
) -> None:
    assert extra in EXTRAS
    result = _run([str(installed.parent / "hyperpod-tenancy"), *args], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert f"pip install 'cdk-hyperpod-tenancy[{extra}]'" in lines[0]
