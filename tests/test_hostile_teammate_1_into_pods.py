"""A teammate who tries to reach into a teammate's pod: exec, attach, port-forward, proxy, ephemeral containers.

A shell in a pod runs as the pod's UID with that person's 0700 home directory mounted, so it is that person's
identity. The real webhook (``hyperpod-tenancy webhook serve`` over TLS, DynamoDB from moto) decides the
requests the ValidatingWebhookConfiguration routes to it; it reads the Pod from a stand-in API server over TLS
(``tests/support/kube_api_server.py``), since a CONNECT request carries the connect options, not the Pod.

Request shapes: a CONNECT AdmissionReview has ``kind`` ``PodExecOptions`` / ``PodAttachOptions`` /
``PodPortForwardOptions`` / ``PodProxyOptions`` (core/v1), ``resource`` ``pods``, ``subResource`` and ``name`` of
the Pod, and the options as ``object`` (Kubernetes API reference, "Dynamic Admission Control": "CONNECT ...
object is the *Options"; kubernetes ``pkg/registry/core/pod/rest/subresources.go`` ``NewConnectOptions``).
``kubectl debug`` sends UPDATE of ``pods/ephemeralcontainers`` with the Pod as ``object`` and ``oldObject``.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kube_api_server import KubeApiServer
from synth import Synth
from webhook_server import (
    ACCOUNT,
    CONNECT_OPTIONS,
    ON_CALL,
    STUDIO_ROLE,
    UID_FIRST,
    WEBHOOK_TOKEN,
    Certificates,
    WebhookProcess,
    apply_patch,
    connect_review,
    controller,
    create_table,
    kind_named,
    on_call_user,
    review,
    sso_user,
    webhook_config,
    webhook_on_api,
    workload,
)

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.webhook import kube

NS = names.namespace("research")
TOKEN = WEBHOOK_TOKEN
ALICE, MALLORY = "alice@example.com", "mallory@example.com"


def debug_review(pod: dict[str, Any], *, user: dict[str, Any]) -> dict[str, Any]:
    """The AdmissionReview of ``kubectl debug -it <pod> --image=busybox`` (an ephemeral container)."""
    new = copy.deepcopy(pod)
    new["spec"]["ephemeralContainers"] = [
        {"name": "debugger", "image": "busybox", "stdin": True, "tty": True, "targetContainerName": "train"}
    ]
    kind = {"group": "", "version": "v1", "kind": "Pod"}
    resource = {"group": "", "version": "v1", "resource": "pods"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "subResource": "ephemeralcontainers",
            "name": pod["metadata"]["name"],
            "namespace": pod["metadata"]["namespace"],
            "operation": "UPDATE",
            "userInfo": user,
            "object": new,
            "oldObject": pod,
            "dryRun": False,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"},
        },
    }


def studio_user() -> dict[str, Any]:
    """A SageMaker Studio session of team research (its execution role; no person in the session)."""
    arn = f"arn:aws:sts::{ACCOUNT}:assumed-role/{STUDIO_ROLE}/SageMaker"
    return {
        "username": arn,
        "groups": [names.kubernetes_group("research"), "system:authenticated"],
        "extra": {"arn": [arn], "sessionName": ["SageMaker"]},
    }


@pytest.fixture(scope="module")
def api(certs: Certificates) -> Iterator[KubeApiServer]:
    with KubeApiServer(cert=certs.cert, key=certs.key, token=TOKEN) as server:
        yield server


@pytest.fixture(scope="module")
def server(
    moto: str, certs: Certificates, api: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    directory = tmp_path_factory.mktemp("config")
    config = {**webhook_config(), "breakGlassGroups": [ON_CALL]}
    with webhook_on_api(
        certs=certs, config=config, directory=directory, api_url=api.url, token=TOKEN
    ) as proc:
        yield proc


def _pod_of(job: dict[str, Any], name: str) -> dict[str, Any]:
    """The Pod the Kubeflow operator creates from the stamped template of replica ``Worker``."""
    template = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": job["metadata"]["namespace"],
            "uid": str(uuid.uuid4()),
            "labels": dict(template["metadata"].get("labels", {})),
            "annotations": dict(template["metadata"]["annotations"]),
        },
        "spec": copy.deepcopy(template["spec"]),
    }


@pytest.fixture(scope="module")
def alice_pod(server: WebhookProcess, api: KubeApiServer) -> dict[str, Any]:
    """Alice's PyTorchJob, stamped by the webhook, and one of its running Pods (in the API server)."""
    job = workload(kind_named("PyTorchJob"))
    response = server.client.mutate(review(job, user=sso_user(ALICE)))
    assert response["allowed"], response
    pod = _pod_of(apply_patch(job, response), "train-worker-0")
    api.pods[(NS, pod["metadata"]["name"])] = pod
    assert pod["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION] == f"sso:{ALICE}"
    return pod


def _connect(server: WebhookProcess, pod: str, sub: str, user: dict[str, Any]) -> dict[str, Any]:
    status, body = server.client.request(
        "POST", "/validate", json.dumps(connect_review(pod, sub, user=user)).encode()
    )
    assert status == 200, body
    response: dict[str, Any] = body["response"]
    assert "patch" not in response, "a validating webhook never patches"
    return response


@pytest.mark.parametrize("sub", sorted(CONNECT_OPTIONS))
def test_a_teammate_cannot_reach_into_a_teammates_pod(
    server: WebhookProcess, alice_pod: dict[str, Any], sub: str
) -> None:
    response = _connect(server, alice_pod["metadata"]["name"], sub, sso_user(MALLORY))
    assert not response["allowed"]
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    assert f"sso:{ALICE}" in message and "only they may" in message and "break-glass" in message


@pytest.mark.parametrize("sub", sorted(CONNECT_OPTIONS))
def test_the_pods_own_person_may(server: WebhookProcess, alice_pod: dict[str, Any], sub: str) -> None:
    assert _connect(server, alice_pod["metadata"]["name"], sub, sso_user(ALICE))["allowed"]


@pytest.mark.parametrize("sub", sorted(CONNECT_OPTIONS))
def test_a_studio_session_may_not(server: WebhookProcess, alice_pod: dict[str, Any], sub: str) -> None:
    """Studio sessions share one execution role and name no person, so they reach into nobody's pod."""
    response = _connect(server, alice_pod["metadata"]["name"], sub, studio_user())
    assert not response["allowed"]
    assert "Studio" in response["status"]["message"]


def test_another_teams_member_may_not(server: WebhookProcess, alice_pod: dict[str, Any]) -> None:
    response = _connect(
        server, alice_pod["metadata"]["name"], "exec", sso_user("gina@example.com", "inference")
    )
    assert not response["allowed"]


def test_the_mutating_endpoint_decides_them_the_same(
    server: WebhookProcess, alice_pod: dict[str, Any]
) -> None:
    response = server.client.mutate(
        connect_review(alice_pod["metadata"]["name"], "exec", user=sso_user(MALLORY))
    )
    assert not response["allowed"]


def test_kubectl_debug_into_a_teammates_pod_is_refused(
    server: WebhookProcess, alice_pod: dict[str, Any]
) -> None:
    status, body = server.client.request(
        "POST", "/validate", json.dumps(debug_review(alice_pod, user=sso_user(MALLORY))).encode()
    )
    assert status == 200 and not body["response"]["allowed"], body
    assert "ephemeral container" in body["response"]["status"]["message"]
    status, body = server.client.request(
        "POST", "/validate", json.dumps(debug_review(alice_pod, user=sso_user(ALICE))).encode()
    )
    assert status == 200 and body["response"]["allowed"], body


def test_break_glass_is_allowed_logged_and_recorded_on_the_pod(
    server: WebhookProcess, api: KubeApiServer, alice_pod: dict[str, Any]
) -> None:
    before = len(api.events)
    response = _connect(server, alice_pod["metadata"]["name"], "exec", on_call_user())
    assert response["allowed"]
    (event,) = api.events[before:]
    assert event["type"] == "Warning" and event["reason"] == "BreakGlass"
    assert event["regarding"]["name"] == alice_pod["metadata"]["name"]
    assert event["regarding"]["uid"] == alice_pod["metadata"]["uid"]
    assert ON_CALL in event["note"] and f"sso:{ALICE}" in event["note"]
    assert event["eventTime"].endswith("Z") and event["reportingController"] and event["action"]


def test_controllers_keep_their_exemption_by_username(
    server: WebhookProcess, alice_pod: dict[str, Any]
) -> None:
    assert _connect(server, alice_pod["metadata"]["name"], "exec", controller("KubeRay operator"))["allowed"]


def test_a_pod_that_runs_as_a_person_without_saying_whose_is_closed(
    server: WebhookProcess, api: KubeApiServer
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "unrecorded", "namespace": NS, "uid": "u1"},
        "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"runAsUser": UID_FIRST}}]},
    }
    api.pods[(NS, "unrecorded")] = pod
    response = _connect(server, "unrecorded", "exec", sso_user(MALLORY))
    assert not response["allowed"] and "records no person" in response["status"]["message"]


def test_a_controllers_pod_of_nobody_stays_reachable_by_the_team(
    server: WebhookProcess, api: KubeApiServer
) -> None:
    """An inference operator's pod runs as its image's user with the team GID: nobody's home, on-call debugs it."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "endpoint-abc", "namespace": NS, "uid": "u2"},
        "spec": {
            "securityContext": {"runAsNonRoot": True, "runAsGroup": 20001, "fsGroup": 20001},
            "containers": [{"name": "model", "image": "x"}],
        },
    }
    api.pods[(NS, "endpoint-abc")] = pod
    assert _connect(server, "endpoint-abc", "exec", sso_user(MALLORY))["allowed"]


def test_when_the_pod_cannot_be_read_nothing_is_opened(server: WebhookProcess, api: KubeApiServer) -> None:
    api.fail_with = 500
    try:
        response = _connect(server, "train-worker-0", "exec", sso_user(ALICE))
    finally:
        api.fail_with = None
    assert not response["allowed"] and response["status"]["code"] == 503


def test_the_audit_line_names_the_break_glass_use(
    moto: str, certs: Certificates, api: KubeApiServer, tmp_path: Path, alice_pod: dict[str, Any]
) -> None:
    config = {**webhook_config(), "breakGlassGroups": [ON_CALL]}
    (tmp_path / "teams.json").write_text(json.dumps(config))
    (tmp_path / "token").write_text(TOKEN)
    extra = (
        "--kube-api",
        api.url,
        "--kube-token-file",
        str(tmp_path / "token"),
        "--kube-ca-file",
        str(certs.ca),
    )
    with WebhookProcess(
        certs=certs, table=create_table(), config_path=tmp_path / "teams.json", extra_args=extra
    ) as p:
        assert _connect(p, alice_pod["metadata"]["name"], "portforward", on_call_user())["allowed"]
        assert not _connect(p, alice_pod["metadata"]["name"], "portforward", sso_user(MALLORY))["allowed"]
    lines = [line for line in p.log_lines() if line.get("path") == "/validate"]
    (glass,) = [line for line in lines if line.get("audit") == "break-glass"]
    assert glass["user"].endswith("/oscar") and glass["groups"] == [ON_CALL]
    assert glass["subResource"] == "portforward" and glass["pod"] == alice_pod["metadata"]["name"]
    (denied,) = [line for line in lines if not line["allowed"]]
    assert denied["reason"] == "denied:teammate-pod"


def test_the_platform_routes_every_path_into_a_pod_through_the_webhook(synth: Synth) -> None:
    """The synthesized ValidatingWebhookConfiguration and the webhook's read access to Pods."""
    objects = synth.manifests()
    (config,) = [o for o in objects if o["kind"] == "ValidatingWebhookConfiguration"]
    (hook,) = config["webhooks"]
    assert hook["clientConfig"]["service"]["path"] == posix_identity.VALIDATE_PATH
    routed = {(op, r) for rule in hook["rules"] for op in rule["operations"] for r in rule["resources"]}
    assert routed == {
        ("CONNECT", "pods/exec"),
        ("CONNECT", "pods/attach"),
        ("CONNECT", "pods/portforward"),
        ("CONNECT", "pods/proxy"),
        ("UPDATE", "pods/ephemeralcontainers"),
    }
    assert "matchLabels" not in hook["namespaceSelector"], "team namespaces are selected by name"
    assert hook["matchConditions"] == [
        {"name": "in-a-team-namespace", "expression": "request.namespace.startsWith('hyperpod-ns-')"}
    ]
    (role,) = [
        o
        for o in objects
        if o["kind"] == "ClusterRole" and o["metadata"]["name"] == posix_identity.API_ACCESS_ROLE
    ]
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
        # the team namespaces the admission rules do not cover as set up are counted for an alert
        {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
        # supplementalGroupsPolicy: auto reads which nodes support Strict; nothing else of the nodes
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
    ]
    (deployment,) = [
        o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == posix_identity.DEPLOYMENT
    ]
    assert deployment["spec"]["template"]["spec"]["automountServiceAccountToken"] is True


def test_the_event_of_a_long_pod_name_is_still_a_valid_name() -> None:
    """The Event is named ``<pod>.<hex time>`` (client-go's form); a pod name of the longest length still fits."""
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=datetime.UTC)
    for pod in ("train-worker-0", "a" * 253):
        name = kube.event_name(pod, moment)
        assert len(name) <= 253 and re.fullmatch(
            r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", name
        )
    assert kube.event_name("p", moment) != kube.event_name("p", moment + datetime.timedelta(microseconds=1))
