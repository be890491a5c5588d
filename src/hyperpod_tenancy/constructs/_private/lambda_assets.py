"""The files of a Lambda asset made of library modules: the handler and every library module it imports.

The modules an asset ships are found by reading the imports of its handler, transitively (module level, inside
functions and relative imports; not under ``if TYPE_CHECKING:``), with the ``__init__`` of each package on the
way: a module split in two, or a new import, is shipped without a list to keep in step. The library's own
``hyperpod_tenancy/__init__.py`` is replaced by a docstring, so the handler imports its siblings by their package
path and nothing else of the library comes along.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = ["asset_directory", "lambda_asset_files", "library_modules"]

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


@functools.cache
def _imports(module: str, path: Path) -> tuple[str, ...]:
    """Library modules ``module`` (at ``path``) imports (read once per process: the sources do not change)."""
    return tuple(_read_imports(module, path))


def _import_statements(text: str) -> list[str]:
    """Return the import statements of a module's source, each on one line (the rest is most of the text).

    Imports under a module-level ``if TYPE_CHECKING:`` are left out: they never run. A line of prose that looks
    like an import (in a docstring) does not parse as one and is skipped by the caller.
    """
    kept: list[str] = []
    open_paren = False
    type_checking = False
    for line in text.splitlines():
        stripped = line.strip()
        if line and not line[0].isspace():
            type_checking = line.startswith("if TYPE_CHECKING")
        if open_paren:
            kept[-1] += " " + stripped.split("#")[0]
            open_paren = ")" not in stripped
            continue
        if not type_checking and (
            (stripped.startswith(("import ", "from ")) and " import " in stripped)
            or stripped.startswith("import ")
        ):
            kept.append(stripped.split("#")[0].rstrip().rstrip("\\"))
            open_paren = "(" in stripped and ")" not in stripped
    return kept


def _read_imports(module: str, path: Path) -> Iterator[str]:
    nodes: list[ast.stmt] = []
    for statement in _import_statements(path.read_text(encoding="utf-8")):
        try:
            nodes += ast.parse(statement).body
        except SyntaxError:
            continue
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in nodes:
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


def asset_directory(kind: str, files: Mapping[str, bytes]) -> str:
    """Return a directory holding exactly ``files`` (relative path → bytes), named by their content hash.

    Building the same files twice gives the same directory and the same asset hash, wherever it is built.
    """
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path] + b"\0")
    root = Path(tempfile.gettempdir()) / "hyperpod-tenancy-assets" / f"{kind}-{digest.hexdigest()[:32]}"
    if not root.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=root.parent if root.parent.is_dir() else None))
        for path, content in sorted(files.items()):
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(root)
        except OSError:  # built concurrently by another process: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
    return str(root)
