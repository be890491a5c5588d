"""The node-inventory Lambda: SageMaker's node list and the cluster's Kubernetes nodes, into one snapshot.

Against moto in server mode (``ListClusterNodes``, S3) and a Kubernetes API stand-in over real TLS on loopback that
serves ``/api/v1/nodes`` in pages, as the API server does. A node is schedulable (its GPUs count as capacity teams
could use) only when SageMaker says Running and Kubernetes says Ready, not cordoned, and HyperPod's health label
says Schedulable.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from kube_api_server import KubeApiServer
from moto_server import moto_server, reset
from webhook_server import Certificates

from hyperpod_tenancy.runtime import node_inventory

CLUSTER = "shared-gpu"
BUCKET = "reports"
P5 = "ml.p5.48xlarge"
MOMENT = dt.datetime(2026, 7, 1, 2, 5, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto server on loopback; boto3's default session is pointed at it through env vars."""
    with moto_server() as url:
        yield url


@pytest.fixture
def aws(endpoint: str) -> Iterator[str]:
    """A fresh moto state per test."""
    reset(endpoint)
    yield endpoint


def kube_node(
    instance_id: str,
    *,
    ready: str = "True",
    cordoned: bool = False,
    health: str | None = "Schedulable",
    taints: tuple[dict[str, str], ...] = (),
) -> dict[str, Any]:
    """A HyperPod node as the Kubernetes API lists it (``hyperpod-<instance id>``)."""
    labels = {"node.kubernetes.io/instance-type": P5, "sagemaker.amazonaws.com/cluster-name": CLUSTER}
    if health is not None:
        labels["sagemaker.amazonaws.com/node-health-status"] = health
    spec: dict[str, Any] = {"taints": list(taints)}
    if cordoned:
        spec["unschedulable"] = True
        spec["taints"].append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"hyperpod-{instance_id}", "labels": labels},
        "spec": spec,
        "status": {
            "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
        },
    }


def summary(instance_id: str, status: str = "Running") -> dict[str, Any]:
    return {"InstanceId": instance_id, "InstanceType": P5, "InstanceStatus": {"Status": status}}


#: An instance group's own taint: it keeps other work off the group, it does not remove capacity.
GROUP_TAINT = {"key": "dedicated", "value": "inference", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("status", "node", "expected"),
    [
        ("Running", kube_node("i-1"), True),
        ("Running", kube_node("i-1", taints=(GROUP_TAINT,)), True),
        ("Running", kube_node("i-1", ready="False"), False),  # NotReady
        ("Running", kube_node("i-1", ready="Unknown"), False),  # the kubelet stopped reporting
        ("Running", kube_node("i-1", cordoned=True), False),
        ("Running", kube_node("i-1", health="Unschedulable"), False),
        ("Running", kube_node("i-1", health="UnschedulablePendingReboot"), False),
        ("Running", kube_node("i-1", health="UnschedulablePendingReplacement"), False),
        ("Running", kube_node("i-1", health=None), False),  # the teams' node affinity requires the label
        ("Running", None, False),  # no Kubernetes node (not joined yet)
        ("Running", kube_node("i-2"), False),  # another instance's node
        ("DeepHealthCheckInProgress", kube_node("i-1"), False),
        ("SystemUpdating", kube_node("i-1"), False),
    ],
)
def test_a_node_is_schedulable_when_running_ready_uncordoned_and_healthy(
    status: str, node: dict[str, Any] | None, expected: bool
) -> None:
    kubernetes = node_inventory.nodes_by_instance([node] if node is not None else [])
    body = node_inventory.snapshot_lines(
        [summary("i-1", status)],
        cluster=CLUSTER,
        moment=MOMENT,
        gpus_per_instance={P5: 8},
        kubernetes=kubernetes,
    )
    (line,) = (json.loads(text) for text in body.splitlines())
    assert (line["status"], line["schedulable"]) == (status, expected)


def test_the_handler_reads_both_apis_and_writes_one_sorted_line_per_node(
    aws: str, certs: Certificates, monkeypatch: pytest.MonkeyPatch
) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    sagemaker = boto3.client("sagemaker")
    lifecycle = {"SourceS3Uri": "s3://sagemaker-lifecycle/lifecycle", "OnCreate": "on_create.sh"}
    group = {
        "LifeCycleConfig": lifecycle,
        "ThreadsPerCore": 1,
        "ExecutionRole": "arn:aws:iam::123456789012:role/x",
    }
    sagemaker.create_cluster(
        ClusterName=CLUSTER,
        InstanceGroups=[
            {"InstanceGroupName": "p5-training", "InstanceType": P5, "InstanceCount": 3, **group},
            {
                "InstanceGroupName": "g5-inference",
                "InstanceType": "ml.g5.12xlarge",
                "InstanceCount": 2,
                **group,
            },
        ],
    )
    summaries = sagemaker.list_cluster_nodes(ClusterName=CLUSTER)["ClusterNodeSummaries"]
    by_group: dict[str, list[str]] = {}
    for s in sorted(summaries, key=lambda s: s["InstanceId"]):
        by_group.setdefault(s["InstanceGroupName"], []).append(s["InstanceId"])
    p5, g5 = by_group["p5-training"], by_group["g5-inference"]
    # p5: one healthy (its group's own taint), one NotReady, one cordoned; g5: one HyperPod is rebooting, and one
    # that has no Kubernetes node yet
    nodes = [
        kube_node(p5[0], taints=(GROUP_TAINT,)),
        kube_node(p5[1], ready="False"),
        kube_node(p5[2], cordoned=True),
        kube_node(g5[0], health="UnschedulablePendingReboot"),
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "ip-10-0-0-1.ec2.internal"}, "status": {}},
    ]
    with KubeApiServer(cert=certs.cert, key=certs.key, token="k8s-aws-v1.", token_prefix=True) as api:
        api.nodes = nodes
        for key, value in {
            "CLUSTER_NAME": CLUSTER,
            "EKS_CLUSTER_NAME": f"{CLUSTER}-eks",
            "BUCKET": BUCKET,
            "GPUS_PER_INSTANCE": json.dumps({P5: 8}),
            "API_ENDPOINT": api.url,
            "CA_DATA": base64.b64encode(certs.ca.read_bytes()).decode(),
        }.items():
            monkeypatch.setenv(key, value)
        result = node_inventory.handler({"time": "2026-07-01T02:05:00Z"})
        # the nodes were listed from the API, in pages (the API server's chunked list)
        assert next(path for method, path in api.requests if method == "GET").startswith(
            "/api/v1/nodes?limit="
        )
        # a retried invocation for the same schedule overwrites the same snapshot
        assert node_inventory.handler({"time": "2026-07-01T02:05:00Z"})["key"] == result["key"]
    key = f"raw/node/year=2026/month=07/day=01/hour=02/cluster={CLUSTER}/20260701T020500Z.json"
    assert result == {"key": key, "nodes": 5}
    lines = [
        json.loads(line)
        for line in s3.get_object(Bucket=BUCKET, Key=key)["Body"].read().decode().splitlines()
    ]
    assert [n["instance_id"] for n in lines] == sorted(p5 + g5)
    assert {n["timestamp"] for n in lines} == {"2026-07-01 02:05:00"}
    assert {n["instance_id"] for n in lines if n["schedulable"]} == {p5[0]}
    assert (
        sorted((n["instance_type"], n["gpus"]) for n in lines) == [("ml.g5.12xlarge", 0)] * 2 + [(P5, 8)] * 3
    )
    assert {n["schema_version"] for n in lines} == {1}


# ---------------------------------------------------------------------- the construct
@pytest.fixture(scope="module")
def pipeline_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from pipeline_template import chargeback_pipeline_template

    return chargeback_pipeline_template(tmp_path_factory.mktemp("node-inventory"))


def _resources(template: dict[str, Any], type_: str, prefix: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_ and k.startswith(prefix)}


def test_the_inventory_reads_the_nodes_from_the_vpc_as_a_read_only_group(
    pipeline_template: dict[str, Any],
) -> None:
    from synth import render_intrinsics

    from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import NODE_INVENTORY_HANDLER

    (function,) = _resources(pipeline_template, "AWS::Lambda::Function", "ChargebackNodeInventory").values()
    props = function["Properties"]
    assert props["Handler"] == NODE_INVENTORY_HANDLER
    assert sorted(props["VpcConfig"]["SubnetIds"]) == ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    env = render_intrinsics(props["Environment"]["Variables"])
    assert env["EKS_CLUSTER_NAME"] == "eks" and "API_ENDPOINT" not in env
    # admitted to the API endpoint's group on 443
    (ingress,) = _resources(
        pipeline_template, "AWS::EC2::SecurityGroupIngress", "ChargebackNodeInventory"
    ).values()
    assert (ingress["Properties"]["FromPort"], ingress["Properties"]["ToPort"]) == (443, 443)
    assert ingress["Properties"]["GroupId"] == "sg-0123456789abcdef0"
    # an access entry without access policies, its group bound to get/list on nodes only
    (entry,) = _resources(pipeline_template, "AWS::EKS::AccessEntry", "ChargebackNodeInventory").values()
    assert entry["Properties"]["KubernetesGroups"] == ["hyperpod-tenancy:node-inventory"]
    assert "AccessPolicies" not in entry["Properties"]
    (rbac,) = _resources(
        pipeline_template, "Custom::AWSCDK-EKS-KubernetesResource", "ChargebackNodeInventoryRbac"
    ).values()
    role, binding = json.loads(render_intrinsics(rbac["Properties"]["Manifest"]))
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}]
    assert binding["subjects"][0]["name"] == "hyperpod-tenancy:node-inventory"
    (rule,) = _resources(pipeline_template, "AWS::Events::Rule", "ChargebackNodeInventorySchedule").values()
    assert set(rule["DependsOn"]) >= {
        next(iter(_resources(pipeline_template, "AWS::EKS::AccessEntry", "ChargebackNodeInventory"))),
    }


def test_the_inventorys_asset_runs_on_its_own(tmp_path: Path) -> None:
    """The Lambda's asset imports its handler and the Kubernetes client from itself, not from the library."""
    from hyperpod_tenancy.constructs._private.lambda_assets import lambda_asset_files
    from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import NODE_INVENTORY_HANDLER

    for path, content in lambda_asset_files(
        "The node inventory", NODE_INVENTORY_HANDLER.rpartition(".")[0]
    ).items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    module, _, function = NODE_INVENTORY_HANDLER.rpartition(".")
    code = f"import importlib; assert callable(getattr(importlib.import_module({module!r}), {function!r}))"
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        cwd=tmp_path,
    )


@pytest.mark.parametrize("rule", ["reservation", "usage"])
def test_a_notready_nodes_hours_are_the_idle_owners_not_the_teams(tmp_path: Path, rule: str) -> None:
    """June 2026, two p5 instances (16 GPUs), team a guaranteed both; i-2's Kubernetes node is NotReady from June
    21 (480 hours in): its GPUs are not capacity a team could use, so they are the idle owner's under both rules."""
    from decimal import Decimal

    from chargeback_data import month_config

    from hyperpod_tenancy.chargeback.engine import compute_report
    from hyperpod_tenancy.chargeback.model import BillingRule
    from hyperpod_tenancy.tools.chargeback.offline import run_queries

    raw = tmp_path / "usage"
    for moment, second_ready in (
        (dt.datetime(2026, 6, 1, tzinfo=dt.UTC), "True"),
        (dt.datetime(2026, 6, 21, tzinfo=dt.UTC), "False"),
    ):
        kubernetes = node_inventory.nodes_by_instance(
            [kube_node("i-1"), kube_node("i-2", ready=second_ready)]
        )
        body = node_inventory.snapshot_lines(
            [summary("i-1"), summary("i-2")],
            cluster=CLUSTER,
            moment=moment,
            gpus_per_instance={P5: 8},
            kubernetes=kubernetes,
        )
        path = raw / node_inventory.object_key("node/", CLUSTER, moment)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    queue = (
        raw
        / "clusterqueue"
        / "year=2026"
        / "month=06"
        / "day=01"
        / "hour=00"
        / f"cluster={CLUSTER}"
        / "q.json"
    )
    queue.parent.mkdir(parents=True)
    # team a's queue exists all June (its first and last snapshots in the first and last hours)
    queue.write_text(
        "".join(
            json.dumps(
                {
                    "instance_type": P5,
                    "timestamp": stamp,
                    "namespace": "hyperpod-ns-a",
                    "resource_version": str(rv),
                    "team": "a",
                    "gpu_total": 0.0,
                    "gpu_borrowed": 0.0,
                }
            )
            + "\n"
            for rv, stamp in enumerate(("2026-06-01 00:00:00", "2026-06-30 23:30:00"))
        ),
        encoding="utf-8",
    )
    inputs, costs = run_queries(usage=raw, month="2026-06", cluster=CLUSTER, gpus_per_instance={P5: 8})
    config = month_config(
        cluster=CLUSTER,
        teams=["a"],
        quotas={P5: 2},
        gpus={P5: 8},
        rule=BillingRule(rule),
        prices={P5: Decimal(10)},
    )
    rows = {r.team: r.total for r in compute_report(config, "2026-06", inputs, costs).rows}
    if rule == "reservation":
        # a: 16 GPUs x 480 h + 8 GPUs x 240 h (its guarantee scaled to the 8 schedulable GPUs) = 9,600 GPU-hours;
        # the idle owner: 8 GPUs x 240 h = 1,920 GPU-hours
        assert rows == {"a": Decimal("96000.00"), "(idle)": Decimal("19200.00")}
    else:
        # nothing ran: all 16 x 720 = 11,520 GPU-hours are the idle owner's
        assert rows == {"a": Decimal("0.00"), "(idle)": Decimal("115200.00")}
