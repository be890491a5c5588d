"""The layering is a checked contract: no import cycle anywhere in the package.

``make lint`` runs import-linter with the contracts in ``pyproject.toml`` (layers cli/stacks → constructs →
k8s → policy → errors; no jsii in the policy model and renderers; runtime code imports no CDK). Import-linter
has no contract for cycles between sibling modules, so this test checks the whole import graph with grimp,
the graph library import-linter is built on, and proves on a small package that it would see a cycle.

mypy reads only the ``aws_cdk`` modules named in ``pyproject.toml`` (the rest are skipped, for speed): every
``aws_cdk`` module the package imports must be named there, or its types would silently be ``Any``.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]


def _cycles(package: str) -> set[tuple[str, str]]:
    graph = grimp.build_graph(package, cache_dir=None)
    found = set()
    for module in graph.modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                found.add(tuple(sorted((module, imported))))
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert _cycles("hyperpod_tenancy") == set()


def test_a_cycle_would_be_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "cyclic_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyclic_pkg import b\n")
    (pkg / "b.py").write_text("from cyclic_pkg import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _cycles("cyclic_pkg") == {("cyclic_pkg.a", "cyclic_pkg.b")}
    sys.modules.pop("cyclic_pkg", None)


def test_the_layer_contract_names_every_top_level_part_of_the_package() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    named = {part.strip() for layer in layers for part in layer.split("|")}
    package = REPO / "src" / "hyperpod_tenancy"
    parts = {
        f"hyperpod_tenancy.{p.stem}"
        for p in package.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    parts -= {"hyperpod_tenancy.__init__", "hyperpod_tenancy.runtime"}  # runtime: its own forbidden contract
    assert parts <= named, f"not in any layer: {sorted(parts - named)}"


def _aws_cdk_imports(paths: list[Path]) -> set[str]:
    """Every ``aws_cdk`` module the files import (``from aws_cdk import aws_s3`` is ``aws_cdk.aws_s3``)."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.split(".")[0] == "aws_cdk"}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "aws_cdk":
                found.add(node.module)
                if node.module == "aws_cdk":
                    found |= {f"aws_cdk.{a.name}" for a in node.names if a.name.islower()}
    return found


def _mypy_reads() -> set[str]:
    overrides = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"][
        "overrides"
    ]
    return {m for o in overrides if o.get("follow_imports") == "normal" for m in o["module"]}


def test_mypy_reads_every_aws_cdk_module_the_package_imports() -> None:
    files = [*sorted((REPO / "src").rglob("*.py")), REPO / "app.py"]
    imported = _aws_cdk_imports(files)
    assert {"aws_cdk", "aws_cdk.aws_eks_v2", "aws_cdk.lambda_layer_kubectl_v33"} <= imported
    assert imported <= _mypy_reads(), (
        f"add to [[tool.mypy.overrides]] follow_imports = normal: {sorted(imported - _mypy_reads())}"
    )


def test_an_unlisted_aws_cdk_import_would_be_found(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import aws_cdk.aws_sqs\nfrom aws_cdk import aws_sns as sns, Duration\nfrom aws_cdk.aws_ecs import Cluster\n"
    )
    assert _aws_cdk_imports([probe]) == {"aws_cdk", "aws_cdk.aws_sqs", "aws_cdk.aws_sns", "aws_cdk.aws_ecs"}
    assert "aws_cdk.aws_sqs" not in _mypy_reads()
