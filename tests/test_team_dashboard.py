"""A team's own dashboard: live GPUs against guarantee and ceiling, readable by the team and by no other team.

* The gauges come from the teams' ClusterQueues (the ones the Kueue renderer writes, with a status as Kueue
  reports it) and go to CloudWatch (moto in server mode); the team's widget function reads them back and draws
  them, the real handler against the real API shape.
* The dashboard, its widget function and the permission-set grant are in the team's stack; the grant is evaluated
  with the offline IAM evaluator: its own dashboard and function only, no metric read at all.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from iam_eval import is_allowed
from moto_server import moto_server, reset
from synth import Synth, render_intrinsics, resources_of

from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import (
    EVICTION_COLLECTOR_HANDLER,
    METRIC_NAMESPACE,
)
from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.runtime import eviction_collector, gpu_widget

ACCOUNT = "111122223333"


def _cluster_queues(platform: Platform) -> list[dict[str, Any]]:
    queues = [
        o
        for team in platform.hosted_teams
        for o in kueue.team_objects(platform, team)
        if o["kind"] == "ClusterQueue"
    ]
    assert {q["metadata"]["name"] for q in queues} == {
        names.cluster_queue(t.name) for t in platform.hosted_teams
    }
    return queues


def _with_usage(queue: dict[str, Any], flavor: str, total: int, borrowed: int) -> dict[str, Any]:
    """The queue with Kueue's ``status.flavorsUsage`` for ``nvidia.com/gpu`` on one flavor."""
    usage = {
        "name": flavor,
        "resources": [{"name": "nvidia.com/gpu", "total": str(total), "borrowed": str(borrowed)}],
    }
    return {**queue, "status": {"flavorsUsage": [usage]}}


def _gauges(queues: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    return eviction_collector.team_gpu_gauges(
        queues, queue_prefix=names.NAMESPACE_PREFIX, queue_suffix=names.CLUSTER_QUEUE_SUFFIX
    )


def test_gauges_are_the_queues_usage_guarantee_and_ceiling(kueue_platform: Platform) -> None:
    queues = _cluster_queues(kueue_platform)
    research = names.cluster_queue("research")
    queues = [
        _with_usage(q, "ml.p5.48xlarge", 80, 8) if q["metadata"]["name"] == research else q for q in queues
    ]
    gauges = _gauges(queues)
    # research: 9 p5 (72 GPUs), borrowLimit 50 % -> at most 36 more, of vision's lendable 48
    assert gauges["research"] == {"GpusInUse": 80, "GpusBorrowed": 8, "GpuGuarantee": 72, "GpuCeiling": 108}
    # vision: 6 p5 (48 GPUs), borrowLimit 100 % -> at most 48 more, of research's 72
    assert gauges["vision"] == {"GpusInUse": 0, "GpusBorrowed": 0, "GpuGuarantee": 48, "GpuCeiling": 96}
    # inference lends and never borrows: its ceiling is its guarantee
    assert gauges["inference"] == {"GpusInUse": 0, "GpusBorrowed": 0, "GpuGuarantee": 12, "GpuCeiling": 12}
    # a queue that is no team's is not reported
    other = {**queues[0], "metadata": {**queues[0]["metadata"], "name": "platform-batch"}}
    assert set(_gauges([*queues, other])) == set(gauges)


@pytest.fixture
def cloudwatch() -> Iterator[Any]:
    with moto_server() as url:
        reset(url)
        yield boto3.client("cloudwatch")


def test_the_widget_draws_what_the_collector_published(
    kueue_platform: Platform, cloudwatch: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    queues = _cluster_queues(kueue_platform)
    research = names.cluster_queue("research")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    for minutes, used in ((10, 64), (5, 80)):
        snapshot = [
            _with_usage(q, "ml.p5.48xlarge", used, used - 72 if used > 72 else 0)
            if q["metadata"]["name"] == research
            else q
            for q in queues
        ]
        data = eviction_collector.gauge_metric_data(
            _gauges(snapshot),
            cluster="shared-gpu",
            timestamp=now - dt.timedelta(minutes=minutes),
        )
        cloudwatch.put_metric_data(Namespace=METRIC_NAMESPACE, MetricData=data)
    monkeypatch.setenv("CLUSTER", "shared-gpu")
    monkeypatch.setenv("TEAM", "research")
    monkeypatch.setenv("NAMESPACE", METRIC_NAMESPACE)
    end = now + dt.timedelta(minutes=1)
    event = {
        "widgetContext": {
            "timeRange": {"start": (end.timestamp() - 3600) * 1000, "end": end.timestamp() * 1000}
        }
    }
    page = gpu_widget.handler(event)
    assert "GpusInUse: 80" in page and "GpuGuarantee: 72" in page and "GpuCeiling: 108" in page
    assert "GpusBorrowed: 8" in page and page.count("<polyline") == 4
    # another team's widget sees only its own gauges
    monkeypatch.setenv("TEAM", "inference")
    assert "GpuCeiling: 12" in gpu_widget.handler(event) and "108" not in gpu_widget.handler(event)
    assert "No GPU gauges" in gpu_widget.render("nobody", {g: [] for g in gpu_widget.GAUGES})
    assert gpu_widget.GAUGES == eviction_collector.GAUGES


def _permission_set_policy(synth: Synth, team: str) -> dict[str, Any]:
    ((_, permission_set),) = resources_of(synth.team(team), "AWS::SSO::PermissionSet").items()
    rendered = render_intrinsics(permission_set["Properties"]["InlinePolicy"])
    policy: dict[str, Any] = json.loads(rendered) if isinstance(rendered, str) else rendered
    return policy


def _dashboard_arn(team: str) -> str:
    return f"arn:aws:cloudwatch::{ACCOUNT}:dashboard/{names.chargeback_team_dashboard('shared-gpu', team)}"


def _function_arn(team: str) -> str:
    return f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:{names.team_gpu_widget('shared-gpu', team)}"


def test_a_team_reads_its_own_dashboard_and_nothing_of_another_team(reference: Synth) -> None:
    teams = [t.name for t in reference.platform.hosted_teams]
    for team in teams:
        policy = _permission_set_policy(reference, team)
        assert is_allowed(policy, "cloudwatch:GetDashboard", _dashboard_arn(team)), team
        assert is_allowed(policy, "lambda:InvokeFunction", _function_arn(team)), team
        for other in teams:
            if other != team:
                assert not is_allowed(policy, "cloudwatch:GetDashboard", _dashboard_arn(other)), (team, other)
                assert not is_allowed(policy, "lambda:InvokeFunction", _function_arn(other)), (team, other)
        # no metric read at all (IAM cannot limit it to one team's dimensions), no dashboard edits
        for action in (
            "cloudwatch:GetMetricData",
            "cloudwatch:GetMetricStatistics",
            "cloudwatch:ListMetrics",
        ):
            assert not is_allowed(policy, action, "*"), (team, action)
        for action in ("cloudwatch:PutDashboard", "cloudwatch:DeleteDashboards"):
            assert not is_allowed(policy, action, _dashboard_arn(team)), (team, action)


def test_the_dashboard_and_its_widget_are_the_teams_own(reference: Synth) -> None:
    for team in reference.platform.hosted_teams:
        template = reference.team(team.name)
        (function,) = [
            f["Properties"]
            for f in resources_of(template, "AWS::Lambda::Function").values()
            if f["Properties"].get("FunctionName") == names.team_gpu_widget("shared-gpu", team.name)
        ]
        assert function["Environment"]["Variables"] == {
            "CLUSTER": "shared-gpu",
            "TEAM": team.name,
            "NAMESPACE": METRIC_NAMESPACE,
        }
        source = (Path(gpu_widget.__file__)).read_text(encoding="utf-8")
        assert function["Code"]["ZipFile"] == source and len(source) <= 4096  # CloudFormation's inline limit
        (dashboard,) = resources_of(template, "AWS::CloudWatch::Dashboard").values()
        body = json.loads(render_intrinsics(dashboard["Properties"]["DashboardBody"]))
        (custom,) = [
            w for w in body["widgets"] if w["type"] == "custom" and "GPUs now" in w["properties"]["title"]
        ]
        assert custom["properties"]["endpoint"] == "cfn-token"  # the function of this stack (GetAtt)


def test_the_collector_may_publish_the_gauges_and_read_the_queues(reference: Synth) -> None:
    stage = reference.stage
    assert stage.chargeback_stack is not None
    template = reference.templates[stage.chargeback_stack.stack_name]
    (collector,) = [
        f["Properties"]
        for f in resources_of(template, "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == EVICTION_COLLECTOR_HANDLER
    ]
    variables = collector["Environment"]["Variables"]
    assert variables["GAUGE_NAMESPACE"] == METRIC_NAMESPACE
    assert (variables["TEAM_QUEUE_PREFIX"], variables["TEAM_QUEUE_SUFFIX"]) == (
        names.NAMESPACE_PREFIX,
        names.CLUSTER_QUEUE_SUFFIX,
    )
    statements = [
        s
        for p in resources_of(template, "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Sid") == "Gauges"
    ]
    assert [(s["Action"], s["Condition"]) for s in statements] == [
        ("cloudwatch:PutMetricData", {"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}})
    ]
    rbac = [
        o
        for r in resources_of(template, "Custom::AWSCDK-EKS-KubernetesResource").values()
        for o in json.loads(render_intrinsics(r["Properties"]["Manifest"]))
        if o["kind"] == "ClusterRole"
    ]
    (role,) = [r for r in rbac if r["metadata"]["name"] == eviction_collector_role()]
    assert role["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads", "clusterqueues"],
            "verbs": ["get", "list"],
        }
    ]


def eviction_collector_role() -> str:
    from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import EVICTION_COLLECTOR_ROLE

    return EVICTION_COLLECTOR_ROLE
