"""The layering is a checked contract: no import cycle anywhere in the package.

``make lint`` runs import-linter with the contracts in ``pyproject.toml`` (layers cli/stacks → constructs →
k8s → policy → errors; no jsii in the policy model and renderers; runtime code imports no CDK). Import-linter
has no contract for cycles between sibling modules, so this test checks the whole import graph with grimp,
the graph library import-linter is built on, and proves on a small package that it would see a cycle.
"""

from __future__ import annotations

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
