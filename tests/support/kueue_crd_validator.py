"""Validate rendered Kueue objects with the offline validator of ``shared/kueue-crds`` (Kueue v0.19.2 CRDs).

The folder comes from ``KUEUE_CRDS_DIR`` (default ``<repo>/../shared/kueue-crds``). A missing folder
fails the calling test with instructions: these checks must never be skipped silently.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
API_VERSION = "kueue.x-k8s.io/v1beta2"


def crds_dir() -> Path:
    """Folder with the Kueue CRDs and ``validate.py``."""
    return Path(os.environ.get("KUEUE_CRDS_DIR", str(REPO.parent / "shared" / "kueue-crds"))).resolve()


@functools.cache
def _validator() -> tuple[Any, Any]:
    folder = crds_dir()
    script = folder / "validate.py"
    if not script.is_file():
        pytest.fail(
            f"Kueue CRD validator not found: {script} does not exist. Point KUEUE_CRDS_DIR at the folder "
            "with the Kueue v0.19.2 CRDs and validate.py (default <repo>/../shared/kueue-crds); the Kueue "
            "schema checks cannot run without it.",
            pytrace=False,
        )
    module = validator_module()
    return module.load_crds(str(folder)), module.validate_manifests


@functools.cache
def validator_module() -> Any:
    """The upstream ``validate.py`` of :func:`crds_dir`, loaded from its file (no ``sys.path`` change)."""
    script = crds_dir() / "validate.py"
    if not script.is_file():
        pytest.fail(f"Kueue CRDs not found at {script.parent}: set KUEUE_CRDS_DIR to the kueue-crds folder")
    spec = importlib.util.spec_from_file_location("kueue_crds_validate", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def validate_kueue(objects: Sequence[dict[str, Any]]) -> list[str]:
    """Every issue (errors and warnings) the upstream-schema validator reports for ``objects``."""
    crds, validate_manifests = _validator()
    return [str(issue) for issue in validate_manifests(list(objects), crds, API_VERSION)]
