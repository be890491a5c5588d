"""Test tools that live in venvs of their own (their pins clash with the test venv's): find one or fail."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from platforms import REPO


def venv_tool(env_var: str, relative: str, install: str) -> Path:
    """The executable named by ``env_var``, or ``<repo>/<relative>``; a test failure saying ``install`` if absent.

    A missing tool fails the test, never skips it: ``make test`` installs every one of them.
    """
    path = Path(os.environ.get(env_var, str(REPO / relative)))
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"{path.name} not found at {path}. {install}, or point {env_var} at the executable.",
            pytrace=False,
        )
    return path
