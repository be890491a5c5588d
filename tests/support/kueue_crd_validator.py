"""Validate rendered Kueue objects with the offline validator of ``shared/kueue-crds`` (Kueue v0.19.2 CRDs).

The folder comes from ``KUEUE_CRDS_DIR`` (default ``<repo>/../shared/kueue-crds``). A missing folder
fails the calling test with instructions: these checks must never be skipped silently.
"""

from __future__ import annotations

import functools
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
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    from validate import load_crds, validate_manifests  # type: ignore[import-not-found]

    return load_crds(str(folder)), validate_manifests


def validate_kueue(objects: Sequence[dict[str, Any]]) -> list[str]:
    """Every issue (errors and warnings) the upstream-schema validator reports for ``objects``."""
    crds, validate_manifests = _validator()
    return [str(issue) for issue in validate_manifests(list(objects), crds, API_VERSION)]
