"""The files of a Lambda asset made of library modules: the handler and every library module it imports.

The modules an asset ships are found by reading the imports of its handler, transitively (module level, inside
functions and relative imports; not under ``if TYPE_CHECKING:``), with the ``__init__`` of each package on the
way: a module split in two, or a new import, is shipped without a list to keep in step. The library's own
``hyperpod_tenancy/__init__.py`` is replaced by a docstring, so the handler imports its siblings by their package
path and nothing else of the library comes along.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

__all__ = ["lambda_asset_files", "library_modules"]

_ROOT = "hyperpod_tenancy"


#: The library's source folder (``hyperpod_tenancy``); modules are found by path, never imported (a handler's
#: imports, boto3 among them, need not be installed where the app synthesizes).
_SOURCE = Path(__file__).resolve().parents[2]


def _file_of(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != _ROOT:
        return None
    base = _SOURCE.joinpath(*parts[1:])
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _is_module(name: str) -> bool:
    return _file_of(name) is not None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def _imports(module: str, path: Path) -> Iterator[str]:
    """Library modules ``module`` (at ``path``) imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names if alias.name.split(".")[0] == _ROOT)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if target.split(".")[0] != _ROOT:
                continue
            yield target
            for alias in node.names:
                if _is_module(f"{target}.{alias.name}"):
                    yield f"{target}.{alias.name}"


def library_modules(*entries: str) -> dict[str, Path]:
    """Every library module the ``entries`` import, transitively, with their packages' ``__init__``, by name."""
    found: dict[str, Path] = {}
    todo = list(entries)
    while todo:
        module = todo.pop()
        if module in found or module == _ROOT:
            continue
        path = _file_of(module)
        if path is None:
            raise ValueError(
                f"{module} is not a module of this library (an asset ships source modules only)."
            )
        found[module] = path
        parts = module.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]
        todo += list(_imports(module, path))
    return found


def lambda_asset_files(what: str, *entries: str) -> dict[str, bytes]:
    """Files of a Lambda asset: the ``entries`` and every library module they import, under a stub package.

    Args:
        what: what the asset is, for the stub's docstring.
        entries: dotted names of the handler modules.

    """
    files = {f"{_ROOT}/__init__.py": f'"""{what} (Lambda asset)."""\n'.encode()}
    for module, path in sorted(library_modules(*entries).items()):
        relative = "/".join(module.split(".")) + ("/__init__.py" if path.name == "__init__.py" else ".py")
        files[relative] = path.read_bytes()
    return files
