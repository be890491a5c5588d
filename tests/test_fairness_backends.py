"""Fairness backends: one module per backend behind one protocol and a registry.

A third backend, defined in this module and registered, synthesizes the whole platform: only its hooks
run, its objects land where the built-in backends' would, and neither built-in backend is called.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from constructs import Construct
from synth import K8S_RESOURCE, depends_on, manifests_in, resources_of, synthesize

from hyperpod_tenancy.constructs import backends
from hyperpod_tenancy.constructs.backends import (
    ClusterFairness,
    KueueBackend,
    TaskGovernanceBackend,
    TeamFairness,
)
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import PolicyError, PolicyIssue, TenancyError
from hyperpod_tenancy.k8s.team_manifests import SYSTEM_NAMESPACE
from hyperpod_tenancy.policy import FairnessBackend, Platform, Team, names, replacement_warnings
from hyperpod_tenancy.policy.fairness import FairnessWording, fairness_of

#: Registry key of the test backend: no member of ``policy.FairnessBackend``.
DUMMY = "dummy-scheduler"
_HOOKS = ("validate", "cluster_manifests", "team_manifests", "build_cluster", "build_team")


class DummyBackend(backends.Backend):
    """A third fairness backend: a marker resource per cluster and per team, one ConfigMap per chart."""

    key = DUMMY
    policy_rule_codes: tuple[str, ...] = ()
    replacement_wording = FairnessWording(
        team_objects_deleted="its dummy quota is deleted", rename_cause="dummy quotas are keyed by team name"
    )
    creates_team_namespace = True

    def __init__(self, issues: Sequence[PolicyIssue] = ()) -> None:
        self.calls: list[tuple[str, str]] = []
        self._issues = list(issues)

    def validate(self, platform: Platform) -> Sequence[PolicyIssue]:
        self.calls.append(("validate", platform.name))
        return self._issues

    def cluster_manifests(self, platform: Platform) -> list[dict[str, Any]]:
        self.calls.append(("cluster_manifests", platform.name))
        return [_config_map("dummy-scheduler", SYSTEM_NAMESPACE)]

    def team_manifests(self, platform: Platform, team: Team) -> list[dict[str, Any]]:
        self.calls.append(("team_manifests", team.name))
        return [_config_map("dummy-queue", names.namespace(team.name))]

    def build_cluster(
        self, scope: Construct, cluster: IHyperPodCluster, *, after: Construct
    ) -> ClusterFairness:
        self.calls.append(("build_cluster", cluster.platform.name))
        marker = cdk.CfnWaitConditionHandle(scope, "DummyScheduler")
        marker.node.add_dependency(after)
        return ClusterFairness(ready=marker)

    def build_team(self, scope: Construct, cluster: IHyperPodCluster, team: Team) -> TeamFairness:
        self.calls.append(("build_team", team.name))
        quota = cdk.CfnWaitConditionHandle(scope, "DummyQuota")
        return TeamFairness(chart_after=(quota,), quota=quota)


def _config_map(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}


@pytest.fixture
def dummy(monkeypatch: pytest.MonkeyPatch) -> Iterator[DummyBackend]:
    """The dummy backend, registered for this test only; the built-in backends refuse every call meanwhile."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a built-in fairness backend was called for the dummy platform")

    for cls in (TaskGovernanceBackend, KueueBackend):
        for hook in _HOOKS:
            monkeypatch.setattr(cls, hook, refuse)
    backend = DummyBackend()
    backends.register(backend)
    yield backend
    backends.unregister(DUMMY)


def _dummy_platform(reference_platform: Platform) -> Platform:
    return dataclasses.replace(reference_platform, fairness_backend=DUMMY)  # type: ignore[arg-type]


def test_builtin_backends_are_registered_under_the_policy_keys() -> None:
    registered = backends.registered()
    assert isinstance(registered[FairnessBackend.TASK_GOVERNANCE], TaskGovernanceBackend)
    assert isinstance(registered[FairnessBackend.KUEUE], KueueBackend)
    for key, backend in registered.items():
        assert backend.key == key
        assert fairness_of(key) is backend, "the layers below ask the same object"


def test_a_third_backend_runs_only_its_own_hooks(
    dummy: DummyBackend, reference_platform: Platform, tmp_path: Path
) -> None:
    platform = _dummy_platform(reference_platform)
    synth = synthesize(platform, tmp_path)
    teams = [t.name for t in platform.hosted_teams]
    assert ("validate", platform.name) in dummy.calls
    assert ("build_cluster", platform.name) in dummy.calls
    assert ("cluster_manifests", platform.name) in dummy.calls
    assert [name for hook, name in dummy.calls if hook == "build_team"] == teams
    assert [name for hook, name in dummy.calls if hook == "team_manifests"] == teams

    cluster = synth.stage.cluster_stack.cluster
    assert cluster.fairness_backend is dummy
    assert cluster.scheduler_config is None
    cluster_template = synth.cluster
    text = json.dumps(cluster_template)
    assert "AWS::SageMaker::ClusterSchedulerConfig" not in text
    assert "amazon-sagemaker-hyperpod-taskgovernance" not in text
    assert '"Chart": "kueue"' not in text
    (marker_id,) = resources_of(cluster_template, "AWS::CloudFormation::WaitConditionHandle")
    assert "DummyScheduler" in marker_id
    platform_objects = manifests_in(cluster_template)
    assert {"ConfigMap"} == {
        o["kind"] for o in platform_objects if o["metadata"]["name"] == "dummy-scheduler"
    }
    assert not [o for o in platform_objects if o["apiVersion"].startswith("kueue.x-k8s.io")]

    for team in teams:
        template = synth.team(team)
        assert "AWS::SageMaker::ComputeQuota" not in json.dumps(template)
        (quota_id,) = resources_of(template, "AWS::CloudFormation::WaitConditionHandle")
        tenant = synth.stage.team_stacks[team].tenant
        # a third backend's quota is its own construct (fairness.quota); compute_quota types the Task Governance one
        assert tenant.compute_quota is None and tenant.fairness.quota is not None
        (chart_id,) = [
            k for k, v in resources_of(template, K8S_RESOURCE).items() if "NamespaceLabels" not in k
        ]
        assert quota_id in depends_on(template, chart_id), "the team chart waits for what build_team returned"
        objects = manifests_in(template)
        # the chart renders the Namespace (creates_team_namespace) and the backend's object right after it
        assert [o["kind"] for o in objects[:2]] == ["Namespace", "ConfigMap"]
        meta = objects[1]["metadata"]
        assert (meta["name"], meta["namespace"]) == ("dummy-queue", names.namespace(team))


def test_backend_issues_stop_synthesis(reference_platform: Platform) -> None:
    issue = PolicyIssue("fairnessBackend", "the dummy scheduler needs two zones.", "add a zone.", "HPT-DUMMY")
    backends.register(DummyBackend(issues=[issue]))
    try:
        from hyperpod_tenancy.stacks import ClusterStack

        with pytest.raises(PolicyError, match=r"HPT-DUMMY"):
            ClusterStack(cdk.App(), "Cluster", platform=_dummy_platform(reference_platform))
    finally:
        backends.unregister(DUMMY)


def test_replacement_warnings_take_the_backend_wording(
    dummy: DummyBackend, reference_platform: Platform
) -> None:
    old = _dummy_platform(reference_platform)
    new = dataclasses.replace(old, teams=old.teams[:-1])
    (issue,) = [
        i for i in replacement_warnings(old, new, wording=backends.replacement_wording) if i.path == "teams"
    ]
    assert "its dummy quota is deleted" in issue.message
    (default,) = [i for i in replacement_warnings(old, new) if i.path == "teams"]
    assert default == issue, "the policy layer asks the registered backend for its wording"
    with pytest.raises(TenancyError, match="no fairness backend is registered for 'nope'"):
        replacement_warnings(dataclasses.replace(old, fairness_backend="nope"), new)  # type: ignore[arg-type]


def test_unknown_backend_and_duplicate_registration_are_refused(reference_platform: Platform) -> None:
    with pytest.raises(TenancyError, match=r"no fairness backend is registered for 'nope' \(registered: "):
        backends.backend_for("nope")
    with pytest.raises(TenancyError, match="already registered"):
        backends.register(TaskGovernanceBackend())
    with pytest.raises(TenancyError, match="no fairness backend is registered"):
        backends.unregister("nope")
