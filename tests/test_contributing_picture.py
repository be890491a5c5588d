"""The layout pictured in docs/contributing.md is the code's: every module it names exists, and its layers are the
import contract's, in the same order.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAGE = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
MODULE = re.compile(r"hyperpod_tenancy(?:\.[A-Za-z_][A-Za-z0-9_]*)*")


def _names() -> set[str]:
    names = set()
    for block in re.findall(r"```mermaid\n(.*?)```", PAGE, re.S):
        names |= set(MODULE.findall(block))
    return names


def _exists(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):  # a module, or a name defined in one
        module = ".".join(parts[:i])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            value: object = importlib.import_module(module)
            for attr in parts[i:]:
                value = getattr(value, attr, None)
            return value is not None
    return False


def test_every_module_the_pictures_name_exists() -> None:
    missing = sorted(name for name in _names() if not _exists(name))
    assert len(_names()) > 20, "the pictures name the modules"
    assert not missing, missing


def test_the_pictured_layers_are_the_import_contracts_in_order() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c["type"] == "layers" and "containers" not in c]
    index = {module.strip(): i for i, layer in enumerate(layers) for module in layer.split("|")}
    (chain,) = [line for line in PAGE.splitlines() if line.strip().startswith("cli -->")]
    pictured = [f"hyperpod_tenancy.{node.strip()}" for node in chain.split("-->")]
    pictured = ["hyperpod_tenancy.errors" if p == "hyperpod_tenancy.base" else p for p in pictured]
    order = [index[p] for p in pictured]
    assert order == sorted(order), "the picture's chain runs down the contract's layers"
    assert set(order) == set(range(1, len(layers))), "every layer below the entry point is pictured"
    every_package = {
        p.name
        for p in (REPO / "src" / "hyperpod_tenancy").iterdir()
        if p.is_dir() and p.name != "__pycache__"
    }
    assert every_package <= {n.split(".")[1] for n in _names() if n.count(".") >= 1}


def test_the_pictured_construct_packages_are_the_import_contract_in_order() -> None:
    contracts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c.get("containers") == ["hyperpod_tenancy.constructs"]]
    (chain,) = [line for line in PAGE.splitlines() if line.strip().startswith("cluster --> tenant")]
    pictured = [node.strip() for node in chain.split("-->")]
    assert [{"pipeline": "chargeback"}.get(p, p) for p in pictured] == contract["layers"]
    packages = {
        p.name
        for p in (REPO / "src" / "hyperpod_tenancy" / "constructs").iterdir()
        if (p / "__init__.py").exists() and p.name not in ("_private", "assets")
    }
    assert packages <= {n.split(".")[2] for n in _names() if n.count(".") >= 2}
