"""JSON Schema of ``platform.yaml``, generated from the policy model (for editors: completion and checks).

The schema is the one the loader validates with (:mod:`._adapter`), so an editor that follows it flags the
same unknown keys and wrong types; the semantic rules (quotas vs capacity, names, CIDRs...) still need
``hyperpod-tenancy validate``. Field descriptions are the ``#:`` comments of the :mod:`.model` modules.

Regenerate the committed copy with ``make schema`` (``python -m hyperpod_tenancy.policy.json_schema``);
``--check`` exits 1 when the file is stale.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import pkgutil
import re
import sys
from pathlib import Path
from typing import Any

from hyperpod_tenancy.policy import _adapter, model

__all__ = ["SCHEMA_PATH", "platform_json_schema", "render_schema"]

#: Where the repository keeps the generated schema (``platform.yaml`` points its editor modeline here).
SCHEMA_PATH = Path("schema/platform.schema.json")
_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def platform_json_schema() -> dict[str, Any]:
    """Return the JSON Schema of a ``platform.yaml`` document (camelCase keys, unknown keys refused)."""
    generated = _adapter.adapter().json_schema(by_alias=True, mode="validation")
    defs: dict[str, Any] = generated["$defs"]
    docs = _field_docs()
    for name, definition in defs.items():
        for key, prop in definition.get("properties", {}).items():
            prop.pop("title", None)
            field_name = _field_names(name).get(key)
            if field_name is not None and (name, field_name) in docs:
                prop["description"] = docs[name, field_name]
    root = defs.pop(model.Platform.__name__)
    return {"$schema": _DIALECT, "title": "cdk-hyperpod-tenancy platform.yaml", **root, "$defs": defs}


def render_schema() -> str:
    """Render the schema as the committed file holds it (sorted keys, two-space indent, final newline)."""
    return json.dumps(platform_json_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _field_names(class_name: str) -> dict[str, str]:
    cls = getattr(model, class_name, None)
    if cls is None:
        return {}
    return {key: f.name for key, f in _adapter.Slot(cls).fields().items()}


def _field_docs() -> dict[tuple[str, str], str]:
    """Collect ``(class, field) -> text`` from the ``#:`` comment lines right above each field of :mod:`.model`."""
    docs: dict[tuple[str, str], str] = {}
    for info in pkgutil.iter_modules(model.__path__):
        module = importlib.import_module(f"{model.__name__}.{info.name}")
        docs.update(_module_field_docs(inspect.getsource(module).splitlines()))
    return docs


def _module_field_docs(lines: list[str]) -> dict[tuple[str, str], str]:
    docs: dict[tuple[str, str], str] = {}
    for node in ast.parse("\n".join(lines)).body:
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
                continue
            comment: list[str] = []
            row = stmt.lineno - 2
            while row >= 0 and lines[row].strip().startswith("#:"):
                comment.insert(0, lines[row].strip()[2:].strip())
                row -= 1
            if comment:
                docs[node.name, stmt.target.id] = _plain(" ".join(comment))
    return docs


def _plain(text: str) -> str:
    """Sphinx markup to plain text: ``:data:`X``` -> ``X``, double backticks -> single."""
    return re.sub(r":\w+:`([^`]+)`", r"\1", text).replace("``", "`")


def main(argv: list[str] | None = None) -> int:
    """Write the schema to ``path`` (default :data:`SCHEMA_PATH`), or with ``--check`` verify it is current."""
    parser = argparse.ArgumentParser(prog="python -m hyperpod_tenancy.policy.json_schema")
    parser.add_argument("path", nargs="?", type=Path, default=SCHEMA_PATH)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file differs from the model")
    args = parser.parse_args(argv)
    text = render_schema()
    path: Path = args.path
    if args.check:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is stale: run `make schema`.", file=sys.stderr)
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
