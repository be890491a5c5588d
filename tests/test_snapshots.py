"""Regression net: snapshots of the rendered charts and templates (behaviour is asserted elsewhere)."""

from __future__ import annotations

import json
import re
from typing import Any

from synth import Synth, manifests_in

_ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def _normalized(template: dict[str, Any]) -> Any:
    """Asset hashes change with any source byte; replace them so snapshots track the template's shape."""
    return json.loads(_ASSET_HASH.sub("<asset-hash>", json.dumps(template, sort_keys=True)))


def test_team_chart_manifests(reference: Synth, snapshot: Any) -> None:
    assert manifests_in(reference.team("research")) == snapshot


def test_platform_chart_manifests(reference: Synth, snapshot: Any) -> None:
    assert manifests_in(reference.cluster) == snapshot


def test_kueue_team_chart_manifests(kueue_reference: Synth, snapshot: Any) -> None:
    assert manifests_in(kueue_reference.team("vision")) == snapshot


def test_team_stack_template(reference: Synth, snapshot: Any) -> None:
    assert _normalized(reference.team("inference")) == snapshot
