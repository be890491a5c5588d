"""Run checkov (bridgecrewio, PyPI ``checkov``) over synthesized CloudFormation templates, offline, in one run.

checkov lives in its own venv (its dependency tree pins what the test venv cannot share): ``CHECKOV_BIN`` or
``<repo>/.venv-checkov/bin/checkov`` (``make .venv-checkov/.stamp``). A missing checkov fails the test, never
skips it. ``--skip-download`` keeps it offline (without it checkov calls the Prisma Cloud API for guideline
mappings; research/security.md section 3).

One run over a directory of templates costs a few seconds of start-up plus about half a second per template:
write every template to scan into one directory (:func:`write_templates`) and call :func:`scan` once.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from venv_tools import venv_tool

#: The checkov version the Makefile installs (``.venv-checkov``).
CHECKOV_VERSION = "3.3.30"


def checkov_bin() -> Path:
    """The checkov executable, or a test failure that says how to install it (never a skip)."""
    return venv_tool(
        "CHECKOV_BIN",
        ".venv-checkov/bin/checkov",
        "Install checkov in its own venv with `make .venv-checkov/.stamp` (or `python3 -m venv .venv-checkov && "
        f".venv-checkov/bin/pip install checkov=={CHECKOV_VERSION}`)",
    )


def write_templates(directory: Path, label: str, templates: Mapping[str, dict[str, Any]]) -> list[Path]:
    """Write ``templates`` (by stack name) as ``<label>-<stack>.template.json`` into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for stack, template in templates.items():
        path = directory / f"{label}-{stack}.template.json"
        path.write_text(json.dumps(template, indent=1), encoding="utf-8")
        written.append(path)
    return written


@dataclass(frozen=True)
class Finding:
    """One checkov result on one resource."""

    check_id: str
    #: Template file name (``<label>-<stack>.template.json``).
    file: str
    #: ``<Type>.<LogicalId>``.
    resource: str
    #: The skip's comment (skipped checks only).
    comment: str | None = None

    def __str__(self) -> str:
        return f"{self.check_id} on {self.resource} in {self.file}"


@dataclass(frozen=True)
class Report:
    """checkov's results over a directory."""

    passed: list[Finding]
    failed: list[Finding]
    skipped: list[Finding]
    parsing_errors: list[str]
    resource_count: int


def _findings(results: dict[str, Any], key: str) -> list[Finding]:
    return [
        Finding(
            check_id=r["check_id"],
            file=Path(r["file_path"]).name,
            resource=r["resource"],
            comment=r["check_result"].get("suppress_comment"),
        )
        for r in results.get(key, [])
    ]


def scan(directory: Path) -> Report:
    """Run checkov's CloudFormation checks over every template in ``directory`` (one process)."""
    command = [
        str(checkov_bin()),
        "--directory",
        str(directory),
        "--framework",
        "cloudformation",
        "--output",
        "json",
        "--skip-download",
        # no code blocks in the report: a fifth of the output to parse
        "--compact",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    # exit 1 means "failed checks", which the caller asserts on; anything else is checkov failing
    assert done.returncode in (0, 1), f"checkov exited {done.returncode}: {done.stderr[-2000:]}"
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    (cloudformation,) = [r for r in reports if r.get("check_type") == "cloudformation"]
    results = cloudformation["results"]
    return Report(
        passed=_findings(results, "passed_checks"),
        failed=_findings(results, "failed_checks"),
        skipped=_findings(results, "skipped_checks"),
        parsing_errors=list(results.get("parsing_errors", [])),
        resource_count=int(cloudformation["summary"]["resource_count"]),
    )
