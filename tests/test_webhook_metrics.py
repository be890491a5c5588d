"""The POSIX identity webhook's Prometheus metrics: the real server scraped over a socket, and the Deployment.

The server runs as in ``tests/test_webhook_server.py`` (``hyperpod-tenancy webhook serve`` in a child process,
TLS on loopback, DynamoDB from moto in server mode); its metrics port is plain HTTP and is scraped with
``http.client`` and parsed with ``prometheus_client.parser.text_string_to_metric_families`` (the client library's
own parser of the text exposition format). DynamoDB "goes down" by stopping the moto server under the running
webhook, so the third request meets a real connection refusal.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from prometheus_client.parser import text_string_to_metric_families
from synth import Synth, render_intrinsics, resources_of
from webhook_server import (
    SRC,
    Certificates,
    WebhookProcess,
    create_table,
    free_port,
    kind_named,
    review,
    serial_moto_server,
    sso_user,
    webhook_config,
    workload,
)

from hyperpod_tenancy.cli import EXIT_INVALID
from hyperpod_tenancy.cli import _parser as cli_parser
from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.team_manifests import OBSERVABILITY_NAMESPACE
from hyperpod_tenancy.webhook.metrics import DURATION_BUCKETS, outcome

#: The Kubernetes version the manifests are validated against (as ``tests/test_compliance.py``).
KUBERNETES_VERSION = "1.33.0"
MUTATE = posix_identity.MUTATE_PATH
VALIDATE = posix_identity.VALIDATE_PATH
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("config") / "teams.json"
    path.write_text(json.dumps(webhook_config()))
    return path


def scrape(port: int, path: str = posix_identity.METRICS_PATH) -> tuple[int, str, str]:
    """GET ``path`` over plain HTTP on loopback: status, Content-Type and body."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read().decode()
    finally:
        conn.close()


def samples(text: str) -> Samples:
    """Every sample of an exposition: (name, sorted labels) → value."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def of(found: Samples, name: str, **match: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of ``name`` whose labels include ``match``, by their labels."""
    return {
        labels: value
        for (sample, labels), value in found.items()
        if sample == name and match.items() <= dict(labels).items()
    }


def _value(found: Samples, name: str, **labels: str) -> float:
    (value,) = of(found, name, **labels).values()
    return value


def test_an_allowed_a_denied_and_an_error_request_are_counted_exactly(
    certs: Certificates, config_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        dynamodb = contextlib.ExitStack()
        stack.callback(dynamodb.close)
        dynamodb.enter_context(serial_moto_server())
        table = create_table()
        server = stack.enter_context(WebhookProcess(certs=certs, table=table, config_path=config_path))
        job = workload(kind_named("Job"))
        allowed = server.client.mutate(review(job, user=sso_user("metrics-alice@example.com")))
        assert allowed["allowed"], allowed
        # not an IAM role session: denied by the webhook's own rule (403)
        denied = server.client.mutate(review(job, user={"username": "kubernetes-admin", "groups": []}))
        assert not denied["allowed"] and denied["status"]["code"] == 403, denied
        dynamodb.close()  # DynamoDB stops answering; the next person is not cached
        error = server.client.mutate(review(job, user=sso_user("metrics-bob@example.com")))
        assert not error["allowed"] and error["status"]["code"] == 503, error

        status, content_type, text = scrape(server.metrics_port)
        assert status == 200 and content_type.startswith("text/plain"), (status, content_type)
        found = samples(text)
        # the metrics are not on the TLS admission port, and nothing but /metrics is on the metrics port
        assert server.client.request("GET", "/metrics")[0] == 404
        assert scrape(server.metrics_port, "/mutate")[0] == 404
    requests = posix_identity.ADMISSION_REQUESTS_METRIC
    counts = {
        (dict(labels)["path"], dict(labels)["outcome"]): value
        for labels, value in of(found, requests).items()
    }
    # every path and outcome is exported from the start; exactly the three requests are counted
    assert counts == {
        (path, result): float((path, result) in {(MUTATE, "allowed"), (MUTATE, "denied"), (MUTATE, "error")})
        for path in (MUTATE, VALIDATE)
        for result in posix_identity.ADMISSION_OUTCOMES
    }
    duration = posix_identity.ADMISSION_DURATION_METRIC
    assert _value(found, f"{duration}_count", path=MUTATE) == 3
    assert _value(found, f"{duration}_count", path=VALIDATE) == 0
    assert 0 < _value(found, f"{duration}_sum", path=MUTATE) < 3 * 5
    buckets = {float(dict(k)["le"]): v for k, v in of(found, f"{duration}_bucket", path=MUTATE).items()}
    assert sorted(buckets) == [*DURATION_BUCKETS, float("inf")]
    assert buckets[float("inf")] == 3
    values = [buckets[le] for le in sorted(buckets)]
    assert values == sorted(values), "cumulative buckets"
    denials = {dict(k)["reason"]: v for k, v in of(found, posix_identity.ADMISSION_DENIALS_METRIC).items()}
    assert denials == {"denied:not-a-role-session": 1, "denied:dynamodb-unavailable": 1}
    calls = {
        (dict(k)["operation"], dict(k)["outcome"]): v
        for k, v in of(found, posix_identity.DYNAMODB_CALLS_METRIC).items()
    }
    # the readiness read, then the allocation (the person's item, the counter, the transaction), then the
    # lookup that found no server
    assert calls == {("GetItem", "ok"): 3, ("TransactWriteItems", "ok"): 1, ("GetItem", "unreachable"): 1}
    assert _value(found, posix_identity.READY_METRIC) == 1
    assert _value(found, posix_identity.TEAM_NAMESPACES_METRIC) == len(webhook_config()["namespaces"])
    assert _value(found, posix_identity.TEAM_RECORDS_LOADED_METRIC) == 1
    assert _value(found, "process_resident_memory_bytes") > 0
    prefix = "hyperpod_tenancy_webhook_"
    assert all(name.startswith((prefix, "process_", "python_")) for name, _ in found), set(found)
    # no person, user or namespace is ever a label
    assert {k for _, labels in found for k, _ in labels} <= {
        "path",
        "outcome",
        "reason",
        "operation",
        "le",
    } | {
        "implementation",
        "major",
        "minor",
        "patchlevel",
        "version",
        "generation",
    }
    # the request log still has one line per admission request
    lines = [line for line in server.log_lines() if line.get("path") == MUTATE]
    assert Counter(line["status"] for line in lines) == {200: 3}


def test_a_taken_metrics_port_is_a_clear_error(certs: Certificates, config_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--metrics-port",
            str(port),
            "--tls-cert",
            str(certs.cert),
            "--tls-key",
            str(certs.key),
            "--table",
            "posix-uids",
            "--teams",
            str(config_path),
        ]
        result = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from hyperpod_tenancy.cli import main; sys.exit(main())",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": str(SRC), "AWS_DEFAULT_REGION": "us-east-1", "PATH": ""},
            check=False,
        )
    assert result.returncode == EXIT_INVALID, result
    assert f"the metrics port 127.0.0.1:{port} cannot be bound" in result.stderr
    assert "--metrics-port" in result.stderr and "Traceback" not in result.stderr + result.stdout


def test_the_metrics_port_must_differ_from_the_admission_port(
    certs: Certificates, config_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperpod_tenancy.cli import main

    code = main(
        [
            "webhook",
            "serve",
            "--port",
            "8443",
            "--metrics-port",
            "8443",
            "--tls-cert",
            str(certs.cert),
            "--tls-key",
            str(certs.key),
            "--table",
            "posix-uids",
            "--teams",
            str(config_path),
        ]
    )
    assert code == EXIT_INVALID
    assert "--metrics-port 8443 is not a TCP port (0-65535) other than --port" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("status", "allowed", "code", "expected"),
    [
        (200, True, 403, "allowed"),
        (200, False, 403, "denied"),
        (200, False, 503, "error"),  # DynamoDB or the API server did not answer
        (200, False, 507, "error"),  # the UID range is used up
        (500, None, None, "error"),
        (400, None, None, "invalid"),
        (405, None, None, "invalid"),
    ],
)
def test_outcome_of_an_answer(status: int, allowed: bool | None, code: int | None, expected: str) -> None:
    assert outcome(status, allowed=allowed, code=code) == expected


# ----------------------------------------------------------------------------------------------- the Deployment


def _webhook_objects(synth: Synth) -> list[dict[str, Any]]:
    (logical_id,) = [
        k
        for k in resources_of(synth.cluster, "Custom::AWSCDK-EKS-KubernetesResource")
        if k.startswith("ClusterPosixIdentityObjects")
    ]
    objects: list[dict[str, Any]] = json.loads(
        render_intrinsics(synth.cluster["Resources"][logical_id]["Properties"]["Manifest"])
    )
    return objects


def test_the_pods_announce_and_expose_the_metrics_port(reference: Synth) -> None:
    objects = _webhook_objects(reference)
    (deployment,) = [o for o in objects if o["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    annotations = template["metadata"]["annotations"]
    assert {k: v for k, v in annotations.items() if k.startswith("prometheus.io/")} == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(posix_identity.METRICS_PORT),
        "prometheus.io/path": "/metrics",
    }
    (container,) = template["spec"]["containers"]
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {
        "https": posix_identity.SERVER_PORT,
        "metrics": int(annotations["prometheus.io/port"]),
    }
    # the server the image runs listens where the port and the annotation say (the real CLI parser)
    args = cli_parser().parse_args(["webhook", "serve", *container["args"]])
    assert args.metrics_port == posix_identity.METRICS_PORT and args.port == posix_identity.SERVER_PORT
    # metrics are scraped per pod: the Service carries only the admission port
    (service,) = [o for o in objects if o["kind"] == "Service"]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [posix_identity.SERVER_PORT]
    for obj in objects:
        if not obj["apiVersion"].startswith("cert-manager.io/"):  # those are checked against their CRDs
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_no_network_policy_stands_between_the_collector_and_the_metrics_port(reference: Synth) -> None:
    """The webhook namespace has no NetworkPolicy, so the observability namespace reaches the metrics port.

    Should one be added, it must admit the observability add-on's namespace to the metrics port: this test then
    fails and says so.
    """
    everything = reference.manifests()
    assert any(m["kind"] == "NetworkPolicy" for m in everything), "team namespaces have NetworkPolicies"
    in_webhook_namespace = [
        m
        for m in everything
        if m["kind"] == "NetworkPolicy" and m["metadata"].get("namespace") == posix_identity.WEBHOOK_NAMESPACE
    ]
    assert in_webhook_namespace == [], (
        f"a NetworkPolicy in {posix_identity.WEBHOOK_NAMESPACE} must admit namespace {OBSERVABILITY_NAMESPACE} to "
        f"port {posix_identity.METRICS_PORT} (and the API server to {posix_identity.SERVER_PORT})"
    )
