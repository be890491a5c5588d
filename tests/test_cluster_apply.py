"""Every Kubernetes object the platform renders, applied to a real API server (not dry run) and read back.

The control plane is the real one (``tests/support/control_plane.py``: kube-apiserver 1.34, etcd, the
controllers, the scheduler, Kueue v0.19.2, KWOK), with the CRDs the platform depends on installed
(:func:`cluster_apply.operator_crds`). Each platform's objects go in by server-side apply with
``fieldValidation=Strict`` in the order a deploy applies them; the Task Governance backend's team namespaces
are created first as the service creates them, then labelled by the platform's own patch. The POSIX identity
webhook's configurations point at the real webhook server on loopback (``hyperpod-tenancy webhook serve``,
DynamoDB and SSM on a moto server) through a URL client config and the test CA; every other field is applied
as rendered.

Pass: no object refused, no warning from the server, and each object read back equal to the rendered one but
for what ``tests/support/readback_allowed.yaml`` lists, each entry with its reason.
"""

from __future__ import annotations

from pathlib import Path

import platforms
import pytest
from cluster_apply import (
    AppliedPlatform,
    apply_all,
    chart_objects,
    operator_crds,
    posix_webhook,
    remove_all,
    synthesized_objects,
)
from cluster_platform import ClusterPlatforms
from control_plane import ControlPlane
from synth import Synth

pytestmark = pytest.mark.cluster

#: The two reference platforms and the one with a team in its own account, synthesized as ``cdk synth`` does
#: (every stack's objects and patches).
SYNTHESIZED = {
    "reference": "reference",
    "reference-kueue": "kueue_reference",
    "team-accounts": "team_accounts_example",
}
#: The other fairness platforms of the suite, rendered from their charts.
CHARTS = [n for n in platforms.FAIRNESS_PLATFORM_NAMES if n not in SYNTHESIZED]


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane, cluster_platforms: ClusterPlatforms) -> ControlPlane:
    """The control plane with the operators' CRDs installed and no shared platform applied (this module applies
    each platform itself)."""
    cluster_platforms.close()
    control_plane.install_crds(operator_crds(control_plane.components.operator_crds))
    return control_plane


def _platform(name: str, request: pytest.FixtureRequest) -> tuple[AppliedPlatform, Synth | None]:
    if name in SYNTHESIZED:
        synth: Synth = request.getfixturevalue(SYNTHESIZED[name])
        return synthesized_objects(name, synth), synth
    return chart_objects(name, platforms.fairness_platform(name)), None


@pytest.mark.parametrize("name", [*SYNTHESIZED, *CHARTS])
def test_every_rendered_object_is_applied_and_read_back_as_rendered(
    name: str, request: pytest.FixtureRequest, cluster: ControlPlane, tmp_path: Path
) -> None:
    applied, synth = _platform(name, request)
    with posix_webhook(applied, synth, tmp_path) as objects:
        try:
            outcome = apply_all(cluster.admin, applied, objects)
        finally:
            left = remove_all(cluster.admin, applied, objects)
    assert outcome.refused == [], "\n".join(outcome.refused)
    assert outcome.warnings == [], "\n".join(outcome.warnings)
    assert outcome.changed == [], "\n".join(outcome.changed)
    assert outcome.applied == len(objects)
    assert left == [], f"still there after deletion: {left}"


def test_the_check_fails_on_a_refusal_a_warning_and_an_unlisted_change(cluster: ControlPlane) -> None:
    """The same apply and read-back, on objects the server refuses, warns about, or changes: each is reported."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "apply-check", "labels": {"pod-security.kubernetes.io/warn": "restricted"}},
    }
    unknown_field = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "unknown-field", "namespace": "apply-check"},
        "spec": {"replicas": 1},
    }
    privileged = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "privileged", "namespace": "apply-check"},
        "spec": {
            "selector": {"matchLabels": {"app": "x"}},
            "template": {
                "metadata": {"labels": {"app": "x"}},
                "spec": {
                    "containers": [{"name": "x", "image": "x:1", "securityContext": {"privileged": True}}]
                },
            },
        },
    }
    node_port = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "node-port", "namespace": "apply-check"},
        "spec": {"type": "NodePort", "selector": {"app": "x"}, "ports": [{"port": 80}]},
    }
    objects = [namespace, unknown_field, privileged, node_port]
    applied = AppliedPlatform("apply-check", objects)
    try:
        outcome = apply_all(cluster.admin, applied, objects)
    finally:
        assert remove_all(cluster.admin, applied, objects) == []
    (refused,) = outcome.refused or [""]
    assert len(outcome.refused) == 1, outcome.refused
    assert (
        refused.startswith("ConfigMap apply-check/unknown-field:") and ".spec: field not declared" in refused
    )
    assert any(
        w.startswith("Deployment apply-check/privileged: would violate PodSecurity") for w in outcome.warnings
    )
    assert any(
        c.startswith("Service apply-check/node-port: spec.ports[0].nodePort:") for c in outcome.changed
    )
