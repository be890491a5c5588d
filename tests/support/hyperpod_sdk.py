"""Bodies the real HyperPod CLI and SDK (PyPI ``sagemaker-hyperpod``, pinned) would post, rendered offline.

The SDK pins test tools this project's venv cannot share (pytest 8.3, ruff 0.6, click 8.1), so it lives in
its own venv: ``HYPERPOD_SDK_PYTHON`` or ``<repo>/.venv-hyperpod/bin/python`` (``make .venv-hyperpod/.stamp``).
:func:`render` runs ``tests/support/hyperpod_cli_render.py`` there once for many ``hyp`` command lines: the
CLI parses each line, its template model and the SDK build the object, and the Kubernetes client's
``create_namespaced_custom_object`` is captured instead of sent (telemetry off, sockets refused). A command
line that fails in the CLI fails the test with the CLI's own output.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The pinned SDK version (pyproject ``[dependency-groups] hyperpod-sdk``, Makefile ``.venv-hyperpod``).
SDK_VERSION = "3.12.0"
_RENDERER = Path(__file__).with_name("hyperpod_cli_render.py")


def sdk_python() -> Path:
    """The interpreter of the HyperPod SDK's venv, or a test failure that says how to install it (no skip)."""
    path = Path(os.environ.get("HYPERPOD_SDK_PYTHON", str(REPO / ".venv-hyperpod" / "bin" / "python")))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"the HyperPod SDK venv is missing ({path}). Create it with `make .venv-hyperpod/.stamp` (or "
            f"`python3 -m venv .venv-hyperpod && .venv-hyperpod/bin/pip install sagemaker-hyperpod=={SDK_VERSION}`), "
            "or point HYPERPOD_SDK_PYTHON at its python.",
            pytrace=False,
        )
    return path


@dataclass(frozen=True)
class Posted:
    """One object a ``hyp`` command line would have created."""

    #: The command line, as a shell would split it (``hyp`` first), or ``("sdk", <model>)``.
    command: tuple[str, ...]
    group: str
    version: str
    namespace: str
    plural: str
    #: The request body.
    body: dict[str, Any]
    #: Telemetry sends the renderer suppressed (the CLI and SDK decorators attempt them).
    telemetry_calls: int


@dataclass(frozen=True)
class SdkCall:
    """An SDK model built from ``object`` and created (``Model.model_validate(object).create()``)."""

    #: The model class (``HPJumpStartEndpoint``, ``HPEndpoint``: ``hyperpod_cli_render.SDK_MODELS``).
    model: str
    #: Its fields: ``metadata`` (name, namespace, labels) and the spec fields, camelCase as the CRD has them.
    object: dict[str, Any]


@dataclass(frozen=True)
class SdkSource:
    """Python code calling the SDK (a README example), run as it stands in the SDK's venv."""

    source: str


def render(
    command_lines: Sequence[str | SdkCall | SdkSource], *, kubernetes_version: str = "1.33"
) -> list[Posted]:
    """Run each ``hyp …`` line (one string, shell-quoted) through the real CLI; return what each posts.

    An :class:`SdkCall` runs the SDK's model ``create()`` instead, an :class:`SdkSource` its code. Every line must succeed and create exactly
    one object; otherwise the test fails with the CLI output.
    """
    argv: list[list[str] | dict[str, Any]] = []
    for line in command_lines:
        if isinstance(line, SdkCall):
            argv.append({"sdk": line.model, "object": line.object})
            continue
        if isinstance(line, SdkSource):
            argv.append({"sdk": "source", "source": line.source})
            continue
        words = shlex.split(line)
        assert words[0] == "hyp", line
        argv.append(words[1:])
    proc = subprocess.run(
        [str(sdk_python()), str(_RENDERER), json.dumps(argv), kubernetes_version],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["sdk_version"] == SDK_VERSION, f"the SDK venv has sagemaker-hyperpod {out['sdk_version']}"
    posted = []
    for line, words, result in zip(command_lines, argv, out["results"], strict=True):
        assert result["exit_code"] == 0 and len(result["created"]) == 1, (
            f"{line}\nexit {result['exit_code']}: {result['exception']}\n{result['output']}"
        )
        (call,) = result["created"]
        command = ("sdk", str(words["sdk"])) if isinstance(words, dict) else ("hyp", *words)
        posted.append(
            Posted(
                command=command,
                group=call["group"],
                version=call["version"],
                namespace=call["namespace"],
                plural=call["plural"],
                body=call["body"],
                telemetry_calls=result["telemetry_calls"],
            )
        )
    return posted
