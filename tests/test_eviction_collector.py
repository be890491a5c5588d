"""The eviction collector: Workloads read over TLS from a local API server, records written to moto's S3."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import http.server
import ipaddress
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from moto_server import moto_server, reset
from pipeline_template import chargeback_pipeline_template
from prometheus_server import query, running_prometheus

from hyperpod_tenancy.chargeback.engine import preemption_loss
from hyperpod_tenancy.chargeback.model import Eviction, LossBasis
from hyperpod_tenancy.chargeback.queries import COLLECTOR_COLUMNS
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import (
    EVICTION_COLLECTOR_HANDLER,
    METRIC_NAMESPACE,
    eviction_collector_asset_files,
)
from hyperpod_tenancy.k8s.labels import (
    CHECKPOINT_DIR_ENV,
    CHECKPOINT_INTERVAL_ANNOTATION,
    CHECKPOINT_INTERVAL_ENV,
    LAST_CHECKPOINT_ANNOTATION,
)
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime import eviction_collector, kube_api
from hyperpod_tenancy.runtime.eviction_collector.partitions import partition_rows

CLUSTER = "shared-gpu"
BUCKET = "reports"
PREFIX = "raw/eviction/"
EVENT = {"time": "2026-07-01T02:05:00Z"}


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto server on loopback; boto3's default session is pointed at it through env vars."""
    with moto_server() as url:
        yield url


@pytest.fixture
def aws(endpoint: str) -> Iterator[str]:
    reset(endpoint)
    boto3.client("s3").create_bucket(Bucket=BUCKET)
    yield endpoint


def _certificate(directory: Path) -> tuple[Path, Path, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    pem = cert.public_bytes(serialization.Encoding.PEM).decode()
    cert_file, key_file = directory / "api.crt", directory / "api.key"
    cert_file.write_text(pem)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file, pem


class FakeApi:
    """An HTTPS Kubernetes API serving Workload lists in pages of ``page`` items; it records every request."""

    def __init__(self, directory: Path) -> None:
        self.workloads: list[dict[str, Any]] = []
        #: ClusterQueues served at ``CLUSTER_QUEUES_PATH`` (one page).
        self.cluster_queues: list[dict[str, Any]] = []
        self.page = 2
        self.requests: list[tuple[str, str]] = []
        cert_file, key_file, self.ca_pem = _certificate(directory)
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                api.requests.append((self.path, self.headers.get("Authorization", "")))
                url = urllib.parse.urlsplit(self.path)
                if url.path == eviction_collector.CLUSTER_QUEUES_PATH:
                    self._send({"kind": "ClusterQueueList", "metadata": {}, "items": api.cluster_queues})
                    return
                if url.path != eviction_collector.WORKLOADS_PATH:
                    self.send_error(404)
                    return
                start = int(urllib.parse.parse_qs(url.query).get("continue", ["0"])[0])
                items = api.workloads[start : start + api.page]
                more = start + api.page < len(api.workloads)
                self._send(
                    {
                        "apiVersion": "kueue.x-k8s.io/v1beta2",
                        "kind": "WorkloadList",
                        "metadata": {"continue": str(start + api.page)} if more else {},
                        "items": items,
                    }
                )

            def _send(self, answer: dict[str, Any]) -> None:
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert_file, key_file)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[FakeApi]:
    server = FakeApi(tmp_path)
    yield server
    server.close()


@pytest.fixture
def collector_env(aws: str, api: FakeApi, monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    for key, value in {
        "CLUSTER_NAME": CLUSTER,
        "BUCKET": BUCKET,
        "API_ENDPOINT": api.url,
        "CA_DATA": base64.b64encode(api.ca_pem.encode()).decode(),
        "CHECKPOINT_INTERVAL_ENV": CHECKPOINT_INTERVAL_ENV,
        "CHECKPOINT_DIR_ENV": CHECKPOINT_DIR_ENV,
        # as the construct sets them
        "TEAM_QUEUE_PREFIX": names.NAMESPACE_PREFIX,
        "TEAM_QUEUE_SUFFIX": names.CLUSTER_QUEUE_SUFFIX,
    }.items():
        monkeypatch.setenv(key, value)
    return api


def workload(
    name: str,
    *,
    uid: str,
    evicted_at: str | None = "2026-07-01T02:03:04Z",
    reason: str = "Preempted",
    admitted: bool = True,
    annotations: dict[str, str] | None = None,
    template_annotations: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A Workload of two 8-GPU pods on ml.p5.48xlarge (``admitted``: Kueue still holds the admission); ``env``:
    the training container's environment (where a checkpoint is declared)."""
    train: dict[str, Any] = {"name": "train", "resources": {"requests": {"nvidia.com/gpu": "8"}}}
    if env:
        train["env"] = [{"name": k, "value": v} for k, v in env.items()]
    conditions: list[dict[str, Any]] = [
        {
            "type": "Admitted",
            "status": "True" if admitted else "False",
            "reason": "Admitted" if admitted else "NoReservation",
            "lastTransitionTime": "2026-07-01T00:00:00Z" if admitted else "2026-07-01T02:03:30Z",
        }
    ]
    if evicted_at is not None:
        conditions.append(
            {"type": "Evicted", "status": "True", "reason": reason, "lastTransitionTime": evicted_at}
        )
    status: dict[str, Any] = {"conditions": conditions}
    if admitted:
        status["admission"] = {
            "clusterQueue": "team-a",
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": 2,
                    "flavors": {"nvidia.com/gpu": "ml.p5.48xlarge", "cpu": "ml.p5.48xlarge"},
                    "resourceUsage": {"nvidia.com/gpu": "16", "cpu": "96"},
                }
            ],
        }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "hyperpod-ns-team-a",
            "uid": uid,
            "creationTimestamp": "2026-06-30T23:00:00Z",
            "labels": {"kueue.x-k8s.io/priority-class": "training-priority"},
            "annotations": annotations or {},
        },
        "spec": {
            "queueName": "team-a",
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {
                        "metadata": {"annotations": template_annotations or {}},
                        "spec": {
                            "nodeSelector": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
                            "containers": [
                                train,
                                {"name": "sidecar", "resources": {}},
                            ],
                        },
                    },
                }
            ],
        },
        "status": status,
    }


#: The declaration's variables, as the construct passes them to the collector.
ENVS = {"interval_env": CHECKPOINT_INTERVAL_ENV, "dir_env": CHECKPOINT_DIR_ENV}


def declared(interval: str, directory: str = "/fsx/team-a/ckpt") -> dict[str, str]:
    """The checkpoint declaration of a training container: its directory and interval variables."""
    return {CHECKPOINT_DIR_ENV: directory, CHECKPOINT_INTERVAL_ENV: interval}


def _objects(prefix: str = PREFIX) -> dict[str, list[dict[str, Any]]]:
    s3 = boto3.client("s3")
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {
        o["Key"]: [
            json.loads(line)
            for line in s3.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read().decode().splitlines()
        ]
        for o in listing
    }


# ---------------------------------------------------------------------- handler
def test_each_new_preemption_is_one_json_line_under_its_hour(collector_env: FakeApi) -> None:
    api = collector_env
    api.workloads = [
        workload("train-a", uid="uid-a", env=declared("30m")),
        workload("train-b", uid="uid-b", admitted=False, evicted_at="2026-07-01T01:58:00Z"),
        workload("finished", uid="uid-c", evicted_at=None),
        workload("deactivated", uid="uid-d", reason="Deactivated"),
        workload("old", uid="uid-e", evicted_at="2026-07-01T01:00:00Z"),
    ]

    result = eviction_collector.handler(EVENT)

    base = f"{PREFIX}year=2026/month=07/day=01/hour="
    key_a = f"{base}02/cluster={CLUSTER}/uid-a-20260701T020304Z.json"
    key_b = f"{base}01/cluster={CLUSTER}/uid-b-20260701T015800Z.json"
    assert result == {"keys": [key_b, key_a], "workloads": 5, "gauged_teams": 0}  # no GAUGE_NAMESPACE here
    assert _objects() == {
        key_a: [
            {
                "schema_version": 1,
                "timestamp": "2026-07-01 02:03:04",
                "cluster": CLUSTER,
                "namespace": "hyperpod-ns-team-a",
                "workload": "train-a",
                "uid": "uid-a",
                "priority_class": "training-priority",
                "instance_type": "ml.p5.48xlarge",
                "gpus": 16,
                "admitted_at": "2026-07-01 00:00:00",
                "checkpoint_interval_minutes": 30,
                "last_checkpoint": None,
            }
        ],
        # the admission is already cleared: GPUs from the pod sets, instance type from the node selector, the run
        # start bounded by the Workload's creation, no checkpoint interval declared
        key_b: [
            {
                "schema_version": 1,
                "timestamp": "2026-07-01 01:58:00",
                "cluster": CLUSTER,
                "namespace": "hyperpod-ns-team-a",
                "workload": "train-b",
                "uid": "uid-b",
                "priority_class": "training-priority",
                "instance_type": "ml.p5.48xlarge",
                "gpus": 16,
                "admitted_at": "2026-06-30 23:00:00",
                "checkpoint_interval_minutes": None,
                "last_checkpoint": None,
            }
        ],
    }
    # every page was read with the EKS bearer token: three of Workloads, one of ClusterQueues (the flavors)
    assert len(api.requests) == 4
    assert api.requests[3][0].startswith(eviction_collector.CLUSTER_QUEUES_PATH)
    assert all(auth.startswith("Bearer k8s-aws-v1.") for _, auth in api.requests)
    assert "continue=2" in api.requests[1][0] and "limit=500" in api.requests[0][0]


def test_an_eviction_seen_again_is_not_a_second_row(collector_env: FakeApi) -> None:
    api = collector_env
    api.workloads = [workload("train-a", uid="uid-a")]
    first = eviction_collector.handler(EVENT)
    # the next schedule (window overlaps) and a retry of it: the same key, overwritten with the same line
    second = eviction_collector.handler({"time": "2026-07-01T02:10:00Z"})
    eviction_collector.handler({"time": "2026-07-01T02:10:00Z"})
    assert first["keys"] == second["keys"]
    assert [len(lines) for lines in _objects().values()] == [1]
    # once the window has passed, the same condition is no longer new
    assert eviction_collector.handler({"time": "2026-07-01T02:30:00Z"})["keys"] == []
    # the same workload evicted again later is a new eviction, a new object
    api.workloads = [workload("train-a", uid="uid-a", evicted_at="2026-07-01T02:29:00Z")]
    assert len(eviction_collector.handler({"time": "2026-07-01T02:30:00Z"})["keys"]) == 1
    assert len(_objects()) == 2


def test_duplicate_items_in_one_listing_are_written_once() -> None:
    twice = [workload("train-a", uid="uid-a")] * 2
    since = dt.datetime(2026, 7, 1, 1, 50, tzinfo=dt.UTC)
    assert len(list(eviction_collector.new_evictions(twice, cluster=CLUSTER, since=since, **ENVS))) == 1


def test_an_untrusted_api_certificate_is_refused(
    collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    collector_env.workloads = [workload("train-a", uid="uid-a")]
    other = _certificate(tmp_path_factory.mktemp("other-ca"))[2]
    monkeypatch.setenv("CA_DATA", base64.b64encode(other.encode()).decode())
    with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
        eviction_collector.handler(EVENT)
    assert _objects() == {}


def test_a_malformed_event_is_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match=re.escape('pass {"time"')):
        eviction_collector.snapshot_time({})


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("30m", 30), ("1h", 60), ("45", 45), ("90s", 2), ("2d", 2880), ("soon", None), (None, None)],
)
def test_checkpoint_interval_annotation(text: str | None, minutes: int | None) -> None:
    assert eviction_collector.interval_minutes(text) == minutes


def test_annotations_declare_no_interval_wherever_they_are() -> None:
    """The one declaration is the training container's environment; annotations on the Workload or on a pod
    template (which admission refuses) are not read."""
    record = eviction_collector.eviction_record(
        workload(
            "w",
            uid="u",
            annotations={CHECKPOINT_INTERVAL_ANNOTATION: "1h"},
            template_annotations={CHECKPOINT_INTERVAL_ANNOTATION: "9999h"},
            env=declared("30m"),
        ),
        cluster=CLUSTER,
        **ENVS,
    )
    assert record is not None and record["checkpoint_interval_minutes"] == 30
    bare = workload("w", uid="u", template_annotations={CHECKPOINT_INTERVAL_ANNOTATION: "30m"})
    record = eviction_collector.eviction_record(bare, cluster=CLUSTER, **ENVS)
    assert record is not None and record["checkpoint_interval_minutes"] is None


def test_the_interval_declared_in_the_container_environment_is_read() -> None:
    """``hyp create hyp-pytorch-job --environment`` declares the interval as a container variable."""
    evicted = workload("w", uid="u")
    containers = evicted["spec"]["podSets"][0]["template"]["spec"]["containers"]
    containers[0]["env"] = [
        {"name": "OTHER", "value": "5m"},
        {"name": CHECKPOINT_INTERVAL_ENV, "value": "20m"},
    ]
    record = eviction_collector.eviction_record(evicted, cluster=CLUSTER, **ENVS)
    assert record is not None and record["checkpoint_interval_minutes"] == 20
    # a value from a ConfigMap is invisible to admission, so it declares nothing here either
    containers[0]["env"][1] = {
        "name": CHECKPOINT_INTERVAL_ENV,
        "valueFrom": {"configMapKeyRef": {"name": "c"}},
    }
    record = eviction_collector.eviction_record(evicted, cluster=CLUSTER, **ENVS)
    assert record is not None and record["checkpoint_interval_minutes"] is None


# ---------------------------------------------------------------------- EKS access
def test_the_token_is_a_presigned_get_caller_identity_url_for_the_cluster(aws: str) -> None:
    token = kube_api.eks_token(CLUSTER)
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    encoded = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    split = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qs(split.query)
    assert url.startswith(aws + "/?")
    assert query["Action"] == ["GetCallerIdentity"] and query["Version"] == ["2011-06-15"]
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and query["X-Amz-Expires"] == ["60"]
    assert query["X-Amz-SignedHeaders"] == ["host;x-k8s-aws-id"]
    assert query["X-Amz-Credential"][0].endswith("/us-east-1/sts/aws4_request")
    # the signature covers the cluster header: the same URL presigned for another cluster differs
    other = kube_api.eks_token("other-cluster").removeprefix("k8s-aws-v1.")
    other_url = base64.urlsafe_b64decode(other + "=" * (-len(other) % 4)).decode()
    assert (
        urllib.parse.parse_qs(urllib.parse.urlsplit(other_url).query)["X-Amz-Signature"]
        != query["X-Amz-Signature"]
    )


def test_endpoint_and_ca_come_from_describe_cluster(aws: str, tmp_path: Path) -> None:
    # moto's DescribeCluster serves a fixed endpoint and random (non-PEM) CA bytes, so the CA is stubbed here
    # and the handler tests pass API_ENDPOINT/CA_DATA instead
    pem = _certificate(tmp_path)[2]
    eks = boto3.client("eks")
    with Stubber(eks) as stub:
        stub.add_response(
            "describe_cluster",
            {
                "cluster": {
                    "name": CLUSTER,
                    "endpoint": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
                    "certificateAuthority": {"data": base64.b64encode(pem.encode()).decode()},
                }
            },
            {"name": CLUSTER},
        )
        assert kube_api.cluster_access(eks, CLUSTER) == (
            "https://ABC.gr7.us-east-1.eks.amazonaws.com",
            pem,
        )


# ---------------------------------------------------------------------- construct
@pytest.fixture(scope="module")
def pipeline_template(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return chargeback_pipeline_template(tmp_path_factory.mktemp("eviction-collector"))


def _resources(template: dict[str, Any], type_: str, prefix: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_ and k.startswith(prefix)}


def test_the_collector_runs_in_the_vpc_every_five_minutes_with_its_config(
    pipeline_template: dict[str, Any],
) -> None:
    from synth import render_intrinsics

    (function,) = _resources(
        pipeline_template, "AWS::Lambda::Function", "ChargebackEvictionCollector"
    ).values()
    props = function["Properties"]
    assert props["Handler"] == EVICTION_COLLECTOR_HANDLER
    assert sorted(props["VpcConfig"]["SubnetIds"]) == ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"]
    env = render_intrinsics(props["Environment"]["Variables"])
    assert (
        env["CLUSTER_NAME"] == "eks" and env["PREFIX"] == "raw/eviction/" and env["LOOKBACK_MINUTES"] == "15"
    )
    assert "API_ENDPOINT" not in env and "CA_DATA" not in env
    (rule,) = _resources(
        pipeline_template, "AWS::Events::Rule", "ChargebackEvictionCollectorSchedule"
    ).values()
    assert rule["Properties"]["ScheduleExpression"] == "rate(5 minutes)"
    # the collector's group is admitted to the API endpoint's group on 443 only
    (ingress,) = _resources(
        pipeline_template, "AWS::EC2::SecurityGroupIngress", "ChargebackEvictionCollector"
    ).values()
    assert ingress["Properties"]["GroupId"] == "sg-0123456789abcdef0"
    assert (ingress["Properties"]["FromPort"], ingress["Properties"]["ToPort"]) == (443, 443)
    assert "ChargebackEvictionCollectorSecurityGroup" in json.dumps(
        ingress["Properties"]["SourceSecurityGroupId"]
    )


def test_the_collectors_role_may_describe_its_cluster_and_put_evictions_and_partitions_only(
    pipeline_template: dict[str, Any],
) -> None:
    from synth import render_intrinsics

    (role_id,) = _resources(pipeline_template, "AWS::IAM::Role", "ChargebackEvictionCollectorServiceRole")
    statements = [
        s
        for policy in _resources(
            pipeline_template, "AWS::IAM::Policy", "ChargebackEvictionCollector"
        ).values()
        if role_id in json.dumps(policy["Properties"]["Roles"])
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]
    by_action = {
        a: render_intrinsics(s["Resource"])
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert set(by_action) == {
        "eks:DescribeCluster",
        "s3:PutObject",
        "s3:PutObjectLegalHold",
        "s3:PutObjectRetention",
        "s3:PutObjectTagging",
        "s3:PutObjectVersionTagging",
        "s3:Abort*",
        "cloudwatch:PutMetricData",  # the teams' live gauges, in the chargeback namespace only
        "s3:ListBucket",  # its own records only: was this eviction written (and its team told) already?
        "sns:Publish",  # the teams' topics only
        "kms:GenerateDataKey*",  # the teams' topic keys only, through SNS
        "kms:Decrypt",
    }
    (gauges,) = [s for s in statements if s["Action"] == "cloudwatch:PutMetricData"]
    assert gauges["Condition"] == {"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}}
    assert by_action["eks:DescribeCluster"] == "arn:aws:eks:us-east-1:111122223333:cluster/eks"
    puts = [
        render_intrinsics(s["Resource"])
        for s in statements
        if "s3:PutObject" in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    ]
    (resources,) = puts  # one statement, the two prefixes
    assert sorted(str(r).rsplit("/raw/", 1)[1] for r in resources) == ["eviction/*", "partition_usage/*"]
    (listing,) = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert listing["Condition"] == {"StringLike": {"s3:prefix": "raw/eviction/*"}}
    assert by_action["sns:Publish"] == "arn:aws:sns:us-east-1:111122223333:shared-gpu-preemptions-*"
    (keys,) = [s for s in statements if s.get("Sid") == "TeamTopicKeys"]
    assert keys["Condition"] == {
        "StringEquals": {
            # sns.<region>.amazonaws.com (amazonaws.com.cn in China)
            "kms:ViaService": {"Fn::Join": ["", ["sns.us-east-1.", {"Ref": "AWS::URLSuffix"}]]},
            "aws:ResourceTag/hyperpod-tenancy:preemption-topic": "shared-gpu",
        }
    }
    assert all(s["Effect"] == "Allow" for s in statements)


def test_the_collectors_access_entry_maps_it_to_a_read_only_group(pipeline_template: dict[str, Any]) -> None:
    from synth import render_intrinsics

    (entry,) = _resources(pipeline_template, "AWS::EKS::AccessEntry", "ChargebackEvictionCollector").values()
    assert entry["Properties"]["KubernetesGroups"] == ["hyperpod-tenancy:eviction-collector"]
    assert "AccessPolicies" not in entry["Properties"] and entry["Properties"]["Type"] == "STANDARD"
    assert "ChargebackEvictionCollectorServiceRole" in json.dumps(entry["Properties"]["PrincipalArn"])
    (rbac,) = _resources(
        pipeline_template, "Custom::AWSCDK-EKS-KubernetesResource", "ChargebackEvictionCollectorRbac"
    ).values()
    role, binding = json.loads(render_intrinsics(rbac["Properties"]["Manifest"]))
    assert role["kind"] == "ClusterRole" and role["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads", "clusterqueues"],
            "verbs": ["get", "list"],
        }
    ]
    assert binding["kind"] == "ClusterRoleBinding" and binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [
        {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Group",
            "name": "hyperpod-tenancy:eviction-collector",
        }
    ]


# ---------------------------------------------------------------------- last checkpoint
def _record(evicted: dict[str, Any]) -> dict[str, Any]:
    record = eviction_collector.eviction_record(
        evicted,
        cluster=CLUSTER,
        **ENVS,
        last_checkpoint_annotation=LAST_CHECKPOINT_ANNOTATION,
    )
    assert record is not None
    return record


def test_the_last_checkpoint_is_the_scanners_annotation_on_the_workload_itself() -> None:
    scanned = workload("w", uid="u", annotations={LAST_CHECKPOINT_ANNOTATION: "2026-07-01T01:50:00Z"})
    assert _record(scanned)["last_checkpoint"] == "2026-07-01 01:50:00"
    # bounded by the eviction time: a checkpoint written while the evicted pods stopped saved everything
    late = workload("w", uid="u", annotations={LAST_CHECKPOINT_ANNOTATION: "2026-07-01T02:04:00Z"})
    assert _record(late)["last_checkpoint"] == "2026-07-01 02:03:04"
    # unreadable: not collected (the engine bounds the loss instead)
    garbled = workload("w", uid="u", annotations={LAST_CHECKPOINT_ANNOTATION: "yesterday"})
    assert _record(garbled)["last_checkpoint"] is None
    # without the annotation's name (an older deployment) nothing is read
    unnamed = eviction_collector.eviction_record(scanned, cluster=CLUSTER, **ENVS)
    assert unnamed is not None and unnamed["last_checkpoint"] is None


def test_a_last_checkpoint_on_a_pod_template_is_ignored() -> None:
    """The tenant writes pod templates (Kueue copies them into ``spec.podSets``); only the Workload's own
    metadata, which only Kueue and the scanner write, is trusted."""
    forged = workload("w", uid="u", template_annotations={LAST_CHECKPOINT_ANNOTATION: "2026-07-01T02:03:00Z"})
    assert _record(forged)["last_checkpoint"] is None


def test_the_handler_writes_the_last_checkpoint(
    collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAST_CHECKPOINT_ANNOTATION", LAST_CHECKPOINT_ANNOTATION)
    collector_env.workloads = [
        workload("w", uid="uid-a", annotations={LAST_CHECKPOINT_ANNOTATION: "2026-07-01T01:50:00Z"})
    ]
    (key,) = eviction_collector.handler(EVENT)["keys"]
    assert _objects()[key][0]["last_checkpoint"] == "2026-07-01 01:50:00"


def _eviction(record: dict[str, Any]) -> Eviction:
    """The engine's view of a record, as the ``evictions`` query hands it over (UTC times)."""

    def when(text: str | None) -> dt.datetime | None:
        return (
            None if text is None else dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
        )

    started = when(record["admitted_at"])
    moment = when(record["timestamp"])
    assert started is not None and moment is not None
    return Eviction(
        time=moment,
        cluster=record["cluster"],
        team="team-a",
        instance_type=record["instance_type"],
        workload=record["workload"],
        priority_class=record["priority_class"],
        gpus=record["gpus"],
        run_started=started,
        checkpoint_interval_minutes=record["checkpoint_interval_minutes"],
        last_checkpoint=when(record["last_checkpoint"]),
    )


def test_a_measured_last_checkpoint_bills_the_measured_loss() -> None:
    measured = _record(
        workload(
            "w",
            uid="u",
            annotations={LAST_CHECKPOINT_ANNOTATION: "2026-07-01T01:51:04Z"},
            env=declared("30m"),
        )
    )
    # 16 GPUs x 12 minutes since the checkpoint, measured
    assert preemption_loss(_eviction(measured)) == (Decimal("3.2"), LossBasis.MEASURED)
    # without the annotation: the declared 30 minutes, an upper bound
    bounded = _record(workload("w", uid="u", env=declared("30m")))
    assert preemption_loss(_eviction(bounded)) == (Decimal(8), LossBasis.DECLARED_INTERVAL)


# ---------------------------------------------------------------------- overdue checkpoints
NOW = dt.datetime(2026, 7, 1, 2, 5, tzinfo=dt.UTC)


def running(
    name: str,
    *,
    team: str = "team-a",
    last: str | None = None,
    template_last: str | None = None,
    interval: str | None = "30m",
    path: str | None = "/fsx/team-a/ckpt",
    admitted_at: str = "2026-07-01T00:00:00Z",
    evicted: bool = False,
) -> dict[str, Any]:
    """A running Workload of ``team``'s ClusterQueue whose training container declares ``path`` and ``interval``."""
    env = {
        k: v for k, v in ((CHECKPOINT_DIR_ENV, path), (CHECKPOINT_INTERVAL_ENV, interval)) if v is not None
    }
    obj = workload(
        name,
        uid=f"uid-{name}",
        evicted_at="2026-07-01T02:00:00Z" if evicted else None,
        annotations={LAST_CHECKPOINT_ANNOTATION: last} if last else {},
        template_annotations={LAST_CHECKPOINT_ANNOTATION: template_last} if template_last else {},
        env=env,
    )
    obj["status"]["admission"]["clusterQueue"] = names.cluster_queue(team)
    obj["status"]["conditions"][0]["lastTransitionTime"] = admitted_at
    return obj


def _queue(team: str, borrowed: int) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": names.cluster_queue(team)},
        "spec": {
            "cohortName": "all",
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "ml.p5.48xlarge",
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}],
                        }
                    ],
                }
            ],
        },
        "status": {
            "flavorsUsage": [
                {
                    "name": "ml.p5.48xlarge",
                    "resources": [
                        {"name": "nvidia.com/gpu", "total": str(8 + borrowed), "borrowed": str(borrowed)}
                    ],
                }
            ]
        },
    }


OVERDUE_CASES = [
    running("fresh", last="2026-07-01T01:50:00Z"),  # 15 minutes ago, within 30 + 5
    running("stale", last="2026-07-01T01:20:00Z"),  # 45 minutes ago: overdue
    running("never", admitted_at="2026-07-01T01:00:00Z"),  # none for 65 minutes of admission: overdue
    running("just-admitted", admitted_at="2026-07-01T01:40:00Z"),  # none, but admitted 25 minutes ago
    # a fresh time on the pod template (the tenant's) is ignored: as good as none
    running("forged", template_last="2026-07-01T02:04:00Z"),
    # the annotation of an earlier run, before this admission 10 minutes ago: not yet due
    running("requeued", last="2026-07-01T00:30:00Z", admitted_at="2026-07-01T01:55:00Z"),
    # nothing declared (admitted while the policy warned): nothing saves its work, overdue after one scan
    running("undeclared", path=None),
    running("no-interval", interval=None),
    # an interval on the pod template is no declaration (admission refuses it): as good as none
    running("silenced", path=None, interval=None, template_last=None),
    running("evicted", evicted=True),
    running("lender", team="team-b", last="2026-07-01T00:00:00Z"),  # team-b does not borrow
]


def test_overdue_checkpoints_count_borrowing_teams_running_work_only() -> None:
    gauges = eviction_collector.team_gpu_gauges(
        [_queue("team-a", 8), _queue("team-b", 0)],
        queue_prefix=names.NAMESPACE_PREFIX,
        queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
    )
    overdue = eviction_collector.checkpoints_overdue(
        OVERDUE_CASES,
        gauges,
        now=NOW,
        queue_prefix=names.NAMESPACE_PREFIX,
        queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
        last_checkpoint_annotation=LAST_CHECKPOINT_ANNOTATION,
        **ENVS,
    )
    assert overdue == {"team-a": 6, "team-b": 0}  # stale, never, forged, undeclared, no-interval, silenced


def test_a_workload_that_declares_nothing_is_overdue_one_scan_after_its_admission() -> None:
    args: dict[str, Any] = {
        "now": NOW,
        "queue_prefix": names.NAMESPACE_PREFIX,
        "queue_suffix": names.CLUSTER_QUEUE_SUFFIX,
        "last_checkpoint_annotation": LAST_CHECKPOINT_ANNOTATION,
        **ENVS,
    }
    gauges = {"team-a": {"GpusBorrowed": 8}}
    within = running("within", path=None, interval=None, admitted_at="2026-07-01T02:01:00Z")  # 4 minutes
    assert eviction_collector.checkpoints_overdue([within], gauges, **args) == {"team-a": 0}
    beyond = running("beyond", path=None, interval=None, admitted_at="2026-07-01T01:59:00Z")  # 6 minutes
    assert eviction_collector.checkpoints_overdue([beyond], gauges, **args) == {"team-a": 1}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus receiving remote writes, standing in for the alert workspace; yields its base URL."""
    with running_prometheus(
        tmp_path_factory.mktemp("workspace"), {"global": {}}, "--web.enable-remote-write-receiver"
    ) as base:
        yield base


def test_the_overdue_count_reaches_the_workspace(
    collector_env: FakeApi, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in {
        "GAUGE_NAMESPACE": METRIC_NAMESPACE,
        "TEAM_QUEUE_PREFIX": names.NAMESPACE_PREFIX,
        "TEAM_QUEUE_SUFFIX": names.CLUSTER_QUEUE_SUFFIX,
        "LAST_CHECKPOINT_ANNOTATION": LAST_CHECKPOINT_ANNOTATION,
        "REMOTE_WRITE_URL": f"{workspace}/api/v1/write",
    }.items():
        monkeypatch.setenv(key, value)
    collector_env.cluster_queues = [_queue("team-a", 8), _queue("team-b", 0)]
    collector_env.workloads = OVERDUE_CASES
    assert eviction_collector.handler(EVENT)["gauged_teams"] == 2

    def written(team: str, at: dt.datetime = NOW) -> list[float]:
        selector = f'{eviction_collector.OVERDUE_SERIES}{{cluster="{CLUSTER}",team="{team}"}}'
        return [float(r["value"][1]) for r in query(workspace, selector, at=at.timestamp())]

    assert written("team-a") == [6.0]  # OVERDUE_CASES: six overdue in team-a
    assert written("team-b") == [0.0]  # a value for every team: no gap
    # the live GPU gauges still go to CloudWatch (the dashboards), the count does not
    cloudwatch = boto3.client("cloudwatch")
    metrics = cloudwatch.list_metrics(Namespace=METRIC_NAMESPACE)["Metrics"]
    assert {m["MetricName"] for m in metrics} == set(eviction_collector.GAUGES)
    # without the scanner's annotation configured there is no count (nothing to judge it by)
    monkeypatch.delenv("LAST_CHECKPOINT_ANNOTATION")
    later = NOW + dt.timedelta(hours=1)
    eviction_collector.handler({"time": later.isoformat()})
    assert written("team-a", later) == []


def test_the_collectors_asset_runs_on_its_own(tmp_path: Path) -> None:
    """The Lambda's asset imports its handler and the modules it uses from itself, not from the library."""
    for path, content in eviction_collector_asset_files().items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_bytes(content)
    module, _, function = EVICTION_COLLECTOR_HANDLER.rpartition(".")
    code = (
        f"import importlib; m = importlib.import_module({module!r}); assert callable(getattr(m, {function!r})); "
        "import hyperpod_tenancy; print(hyperpod_tenancy.__file__)"
    )
    # the asset's directory is the import root, as /var/task is on Lambda
    ran = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    assert ran.stdout.strip() == str(tmp_path / "hyperpod_tenancy" / "__init__.py")


def test_the_constants_shared_with_the_stacks_agree() -> None:
    from hyperpod_tenancy.k8s.alert_rules import CHECKPOINTS_OVERDUE_SERIES
    from hyperpod_tenancy.k8s.team_manifests import CHECKPOINT_SCAN_MINUTES, CHECKPOINT_SCAN_SCHEDULE

    assert CHECKPOINTS_OVERDUE_SERIES == eviction_collector.OVERDUE_SERIES
    assert CHECKPOINT_SCAN_MINUTES == eviction_collector.DEFAULT_SCAN_MINUTES
    assert f"*/{CHECKPOINT_SCAN_MINUTES} * * * *" == CHECKPOINT_SCAN_SCHEDULE


# ---------------------------------------------------------------------- the team's preemption notice
PREEMPTOR_UID = "00000000-0000-4000-8000-000000000091"


def _victim() -> dict[str, Any]:
    """train-a: 16 GPUs admitted at 00:00, preempted at 02:03:04 by serve-urgent, no checkpoint interval declared."""
    victim = workload("train-a", uid="uid-a")
    for condition in victim["status"]["conditions"]:
        if condition["type"] == "Evicted":
            condition["message"] = (
                f"Preempted to accommodate a workload (UID: {PREEMPTOR_UID}, JobUID: 00000000-0000-4000-8000-"
                "000000000191) due to prioritization in the ClusterQueue; preemptor path: /hyperpod-tenancy-cohort/"
                "hyperpod-ns-team-a-clusterqueue; preemptee path: /hyperpod-tenancy-cohort/hyperpod-ns-team-a-clusterqueue"
            )
    return victim


def _inbox(queue: str) -> list[dict[str, Any]]:
    got = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return [json.loads(m["Body"]) for m in got.get("Messages", [])]


@pytest.fixture
def team_topic(collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch) -> str:
    """The team's topic ``shared-gpu-preemptions-team-a``, an SQS queue subscribed to it (its member's inbox)."""
    sns, sqs = boto3.client("sns"), boto3.client("sqs")
    topic = sns.create_topic(Name="shared-gpu-preemptions-team-a")["TopicArn"]
    queue = sqs.create_queue(QueueName="team-a-inbox")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn)
    monkeypatch.setenv("TEAM_TOPIC_ARN_PREFIX", topic.removesuffix("team-a"))
    monkeypatch.setenv("TEAM_QUEUE_PREFIX", names.NAMESPACE_PREFIX)  # as the construct sets it
    return queue


def test_the_team_is_told_once_who_preempted_its_work_why_and_what_was_lost(
    collector_env: FakeApi, team_topic: str
) -> None:
    preemptor = workload("serve-urgent", uid=PREEMPTOR_UID, evicted_at=None)
    collector_env.workloads = [_victim(), preemptor]
    eviction_collector.handler(EVENT)
    (body,) = _inbox(team_topic)
    assert body["Subject"] == "Preempted: hyperpod-ns-team-a/train-a on shared-gpu"
    assert body["Message"].splitlines() == [
        "Workload hyperpod-ns-team-a/train-a (team team-a, training-priority) was preempted at 2026-07-01 02:03:04 "
        "UTC on ml.p5.48xlarge, holding 16 GPUs.",
        "Preempted by: hyperpod-ns-team-a/serve-urgent.",
        "Why: prioritization in the ClusterQueue.",
        # nothing declared: the whole run, 16 GPUs x 2 h 3 min 4 s = 118,144 GPU-seconds = 32.8178 GPU-hours
        "GPU-hours lost: 32.82 (the whole run: no checkpoint interval was declared).",
    ]
    # the next run sees the same eviction in its window: its record is rewritten, the team is not told again
    eviction_collector.handler(EVENT)
    assert _inbox(team_topic) == []
    assert boto3.client("s3").list_objects_v2(Bucket=BUCKET)["KeyCount"] == 1


def test_a_preemptor_no_longer_listed_is_named_by_its_uid(collector_env: FakeApi, team_topic: str) -> None:
    collector_env.workloads = [_victim()]
    eviction_collector.handler(EVENT)
    (body,) = _inbox(team_topic)
    assert f"Preempted by: workload UID {PREEMPTOR_UID}." in body["Message"].splitlines()


def test_a_team_without_its_topic_does_not_stop_the_collection(
    collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_TOPIC_ARN_PREFIX", "arn:aws:sns:us-east-1:123456789012:shared-gpu-preemptions-")
    monkeypatch.setenv("TEAM_QUEUE_PREFIX", names.NAMESPACE_PREFIX)
    collector_env.workloads = [_victim()]
    assert len(eviction_collector.handler(EVENT)["keys"]) == 1


def as_kueue_leaves_it(name: str, *, uid: str) -> dict[str, Any]:
    """A preempted Workload as Kueue v0.19.2 leaves it once the Job's pods are gone (read from the real server in
    ``test_cluster_preemption_bill.py``): admission cleared, the pod sets as the Job wrote them (no node selector:
    Kueue injects the flavor's into the Job only while admitted), the class in ``spec.priorityClassRef`` and no
    priority-class label."""
    found = workload(name, uid=uid, admitted=False, evicted_at="2026-07-01T01:58:00Z")
    del found["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"]
    found["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": f"job-{uid}"}
    found["spec"]["priorityClassRef"] = {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "training-priority",
    }
    return found


def test_the_instance_type_of_a_cleared_admission_is_the_team_queues_only_gpu_flavor(
    collector_env: FakeApi,
) -> None:
    collector_env.workloads = [as_kueue_leaves_it("train-real", uid="uid-real")]
    queue = _queue("team-a", 0)
    g5 = {
        "name": "ml.g5.12xlarge",
        "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 0}],
    }
    queue["spec"]["resourceGroups"][0]["flavors"].append(g5)  # listed, but the team can hold no GPU there
    collector_env.cluster_queues = [queue]
    (key,) = eviction_collector.handler(EVENT)["keys"]
    ((record,),) = [v for k, v in _objects().items() if k == key]
    assert (record["instance_type"], record["gpus"], record["priority_class"]) == (
        "ml.p5.48xlarge",
        16,
        "training-priority",
    )


def test_two_gpu_flavors_leave_the_instance_type_unknown() -> None:
    queue = _queue("team-a", 0)
    other = copy.deepcopy(queue["spec"]["resourceGroups"][0]["flavors"][0])
    other["name"] = "ml.g5.12xlarge"
    queue["spec"]["resourceGroups"][0]["flavors"].append(other)
    flavors = eviction_collector.gpu_flavors(
        [queue], queue_prefix=names.NAMESPACE_PREFIX, queue_suffix=names.CLUSTER_QUEUE_SUFFIX
    )
    assert flavors == {"hyperpod-ns-team-a": ["ml.p5.48xlarge", "ml.g5.12xlarge"]}
    record = eviction_collector.eviction_record(
        as_kueue_leaves_it("w", uid="u"),
        cluster=CLUSTER,
        interval_env=CHECKPOINT_INTERVAL_ENV,
        dir_env=CHECKPOINT_DIR_ENV,
        team_gpu_flavors=flavors["hyperpod-ns-team-a"],
    )
    assert record is not None and record["instance_type"] == ""


# ---------------------------------------------------------------------- partitions held, for the chargeback
PARTITION_PREFIX = "raw/partition_usage/"


def _partition_queue(team: str, held: str, borrowed: str = "0") -> dict[str, Any]:
    resource = "nvidia.com/mig-1g.10gb"
    return {
        "metadata": {"name": f"{names.NAMESPACE_PREFIX}{team}{names.CLUSTER_QUEUE_SUFFIX}"},
        "spec": {
            "cohortName": "shared",
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", resource],
                    "flavors": [
                        {"name": "ml.p5.48xlarge", "resources": [{"name": resource, "nominalQuota": "14"}]}
                    ],
                }
            ],
        },
        "status": {
            "flavorsUsage": [
                {
                    "name": "ml.p5.48xlarge",
                    "resources": [{"name": resource, "total": held, "borrowed": borrowed}],
                }
            ]
        },
    }


def test_each_run_writes_the_partitions_the_team_queues_hold(
    collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTITION_PREFIX", PARTITION_PREFIX)
    collector_env.cluster_queues = [
        _partition_queue("research", "16", "2"),
        _partition_queue("vision", "0"),
        {"metadata": {"name": "not-a-team"}, "spec": {}},
    ]
    eviction_collector.handler(EVENT)
    key = f"{PARTITION_PREFIX}year=2026/month=07/day=01/hour=02/cluster={CLUSTER}/20260701T020500Z.json"
    row = {
        "schema_version": 1,
        "timestamp": "2026-07-01 02:05:00",
        "instance_type": "ml.p5.48xlarge",
        "profile": "mig-1g.10gb",
        "slices": 1,
    }
    assert _objects(PARTITION_PREFIX) == {
        key: [
            {**row, "namespace": "hyperpod-ns-research", "total": 16, "borrowed": 2},
            {**row, "namespace": "hyperpod-ns-vision", "total": 0, "borrowed": 0},
        ]
    }
    # the same run again (a retry) rewrites the same object
    eviction_collector.handler(EVENT)
    assert list(_objects(PARTITION_PREFIX)) == [key]


def test_a_cluster_without_partitions_writes_no_partition_snapshot(
    collector_env: FakeApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PARTITION_PREFIX", PARTITION_PREFIX)
    collector_env.cluster_queues = [{"metadata": {"name": "hyperpod-ns-research-clusterqueue"}, "spec": {}}]
    eviction_collector.handler(EVENT)
    assert _objects(PARTITION_PREFIX) == {}


def test_the_partition_rows_match_the_glue_table() -> None:
    (row,) = partition_rows(
        [_partition_queue("research", "1")],
        queue_prefix=names.NAMESPACE_PREFIX,
        queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
        moment=dt.datetime(2026, 7, 1, tzinfo=dt.UTC),
    )
    assert list(row) == [name for name, _ in COLLECTOR_COLUMNS["partition_usage"]]
