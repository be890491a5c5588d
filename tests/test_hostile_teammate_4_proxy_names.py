"""A teammate (or an on-call engineer) who names a pod the way the API server's proxy accepts it, not literally.

``GET /api/v1/namespaces/<ns>/pods/<name>/proxy/...`` takes ``<name>`` as ``pod``, ``pod:port`` or
``scheme:pod:port`` (kubernetes ``pkg/registry/core/pod/strategy.go`` ``ResourceLocation`` →
``k8s.io/apimachinery/pkg/util/net`` ``SplitSchemeNamePort``: one to three ``:``-separated parts, a non-empty
name, a scheme of ``""``, ``http`` or ``https``), and the AdmissionReview's ``request.name`` is that string. A
webhook that looks the literal string up finds no pod; if it then allows, a teammate proxies into a teammate's
Ray dashboard (job submission: code as that person), and a break-glass use leaves no audit line and no Event.
The webhook parses the name as the API server does, refuses a pod it cannot find, and logs every break-glass
use. The real webhook over TLS, reading Pods from the stand-in API server, configured as each fairness
backend's platform renders it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import platforms
import pytest
from kube_api_server import KubeApiServer
from webhook_server import (
    ON_CALL,
    WEBHOOK_TOKEN,
    Certificates,
    WebhookProcess,
    apply_patch,
    connect_review,
    kind_named,
    on_call_user,
    platform_webhook_config,
    review,
    sso_user,
    webhook_on_api,
    workload,
)

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy import names

ALICE, MALLORY = "alice@example.com", "mallory@example.com"
NS = names.namespace("research")
TOKEN = WEBHOOK_TOKEN
BACKENDS = {"task-governance": platforms.reference_platform, "kueue": platforms.kueue_platform}
POD = "train-head-0"
#: Names the API server's pod proxy resolves to ``POD``.
PROXY_NAMES = [f"{POD}:8265", f"http:{POD}:8265", f"https:{POD}:8443", f"{POD}:", f"http:{POD}:"]


@pytest.fixture(scope="module")
def api(certs: Certificates) -> Iterator[KubeApiServer]:
    with KubeApiServer(cert=certs.cert, key=certs.key, token=TOKEN) as server:
        yield server


def _start(certs: Certificates, api: KubeApiServer, directory: Path, backend: str) -> WebhookProcess:
    config = platform_webhook_config(BACKENDS[backend]())
    assert config["breakGlassGroups"] == [ON_CALL], "the reference platform names the on-call group"
    return webhook_on_api(certs=certs, config=config, directory=directory, api_url=api.url, token=TOKEN)


@pytest.fixture(scope="module", params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def server(
    moto: str, certs: Certificates, api: KubeApiServer, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    with _start(certs, api, tmp_path_factory.mktemp("config"), backend) as proc:
        yield proc


@pytest.fixture(scope="module")
def alice_pod(server: WebhookProcess, api: KubeApiServer) -> dict[str, Any]:
    """The head pod KubeRay creates from Alice's stamped RayCluster (in the stand-in API server)."""
    cluster = workload(kind_named("RayCluster"))
    response = server.client.mutate(review(cluster, user=sso_user(ALICE)))
    assert response["allowed"], response
    template = apply_patch(cluster, response)["spec"]["headGroupSpec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": POD,
            "namespace": NS,
            "uid": "4c1d-head",
            "annotations": dict(template["metadata"]["annotations"]),
        },
        "spec": template["spec"],
    }
    api.pods[(NS, POD)] = pod
    assert pod["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION] == f"sso:{ALICE}"
    return pod


def _proxy(server: WebhookProcess, name: str, user: dict[str, Any], sub: str = "proxy") -> dict[str, Any]:
    status, body = server.client.request(
        "POST", "/validate", json.dumps(connect_review(name, sub, user=user)).encode()
    )
    assert status == 200, body
    response: dict[str, Any] = body["response"]
    return response


@pytest.mark.parametrize("name", PROXY_NAMES)
def test_a_teammate_cannot_proxy_to_a_teammates_pod_by_naming_a_port(
    server: WebhookProcess, alice_pod: dict[str, Any], name: str
) -> None:
    response = _proxy(server, name, sso_user(MALLORY))
    assert not response["allowed"], response
    assert f"sso:{ALICE}" in response["status"]["message"]
    assert _proxy(server, name, sso_user(ALICE))["allowed"], "the pod's own person still may"


@pytest.mark.parametrize("name", PROXY_NAMES)
def test_break_glass_through_a_port_name_leaves_an_event_on_the_pod(
    server: WebhookProcess, api: KubeApiServer, alice_pod: dict[str, Any], name: str
) -> None:
    before = len(api.events)
    assert _proxy(server, name, on_call_user())["allowed"]
    (event,) = api.events[before:]
    assert event["reason"] == "BreakGlass" and event["regarding"]["name"] == POD
    assert f"sso:{ALICE}" in event["note"]


@pytest.mark.parametrize(
    ("name", "sub"),
    [
        ("nobody-0", "exec"),
        ("nobody-0:8265", "proxy"),
        ("ftp:x:1", "proxy"),
        ("a:b:c:d", "proxy"),
        (":8265", "proxy"),
    ],
)
def test_a_pod_that_cannot_be_found_is_refused(
    server: WebhookProcess, alice_pod: dict[str, Any], name: str, sub: str
) -> None:
    for user in (sso_user(MALLORY), on_call_user()):
        response = _proxy(server, name, user, sub)
        assert not response["allowed"], (name, response)


def test_every_break_glass_use_writes_the_audit_line(
    certs: Certificates,
    api: KubeApiServer,
    backend: str,
    tmp_path: Path,
    alice_pod: dict[str, Any],
) -> None:
    # moto runs for the module (``server``, which ``alice_pod`` stands on); a second webhook for its log
    with _start(certs, api, tmp_path, backend) as proc:
        for name in PROXY_NAMES:
            assert _proxy(proc, name, on_call_user())["allowed"]
    glass = [line for line in proc.log_lines() if line.get("audit") == "break-glass"]
    assert [line["pod"] for line in glass] == [POD] * len(PROXY_NAMES)
    assert [line["name"] for line in glass] == PROXY_NAMES
