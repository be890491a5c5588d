"""Reaching into a running pod on the real control plane: exec, attach, port-forward, proxy, ephemeral containers.

The Kueue-backend reference platform is applied (``kueue_on_cluster``) with the real POSIX identity webhook on
loopback, reading Pods and writing Events through the API server with its own ServiceAccount's token and the
ClusterRole the platform renders for it. Alice submits an honest Job; the webhook stamps it, Kueue admits it and
its pod runs on a KWOK node. Then the people the platform models reach for that pod through the API server:

* a **teammate** (Mallory, research): the team Role lets her ``create pods/exec`` and ``pods/portforward``, and
  the webhook refuses her: the pod runs as Alice with Alice's home directory;
* the **pod's owner** (Alice): admitted; the request then fails only because no kubelet is there to upgrade to
  (KWOK nodes have none): ``400 Upgrade request required`` is the API server's answer *after* admission
  (``ConnectResource`` runs admission, then the connecter's upgrade-aware proxy); a proxy is sent on to the pod's
  address, where nothing serves;
* **another team's member** (Gina, inference): refused by RBAC before admission (no RoleBinding in research);
* the **on-call engineer** (the break-glass group, bound to ``cluster-admin`` here as an EKS access entry with
  ``AmazonEKSClusterAdminPolicy`` binds it): admitted, and the use recorded as a Warning Event on the pod.

The team Role grants neither ``pods/attach``, ``pods/proxy`` nor ``pods/ephemeralcontainers``: RBAC refuses
those to everyone of the team. For the day a platform widens the Role, the webhook holds there too: a Role
granting them is added for the module's last tests and removed at its end.

Each answer is told apart by who gave it: the webhook's denial (``admission webhook "<name>" denied the
request: ...``), RBAC's (``Forbidden``, ``cannot <verb> resource "<resource>"``), or a failure after admission.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cluster_platform import OnCluster
from kube_client import Answer, KubeClient, wait_until
from webhook_server import ON_CALL, on_call_user

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster

NS = names.namespace("research")
JOB = "connect-alice"
#: The test's own RBAC objects (removed at the module's end).
ON_CALL_BINDING = "connect-test-on-call"
WIDENED = "connect-test-widened"
#: Names the API server's pod proxy resolves to the pod (``SplitSchemeNamePort``), ``{}`` for the pod's name.
PROXY_NAMES = ("{}", "{}:8265", "http:{}:8265", "https:{}:8443", "{}:", "http:{}:")
#: Names that resolve to no pod: refused by the webhook, for break-glass too.
NO_POD_NAMES = ("nobody-0:8265", "ftp:{}:8265", "a:{}:c:d", ":8265")
#: subresource → (method, query) as ``kubectl`` sends them (its SPDY/WebSocket upgrade left out).
CONNECT = {
    "exec": ("POST", "command=bash&container=train&stdin=true&stdout=true&tty=true"),
    "attach": ("POST", "container=train&stdin=true&stdout=true&tty=true"),
    "portforward": ("POST", "ports=8265"),
}
EPHEMERAL = {
    "name": "debugger",
    "image": "public.ecr.aws/docker/library/busybox:1.37.0",
    "stdin": True,
    "tty": True,
    "targetContainerName": "train",
    "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True},
}


# ------------------------------------------------------------------------------------------------ answers


def webhook_denial(answer: Answer) -> str:
    """The POSIX identity webhook's message of a refusal (fails if someone else refused, or nobody did)."""
    prefix = f'admission webhook "{posix_identity.CONNECT_WEBHOOK_NAME}" denied the request: '
    assert answer.status == 403 and answer.message.startswith(prefix), answer
    return answer.message.removeprefix(prefix)


def rbac_denial(answer: Answer, verb: str, resource: str) -> None:
    """RBAC refused the request, before admission."""
    assert answer.status == 403 and answer.reason == "Forbidden", answer
    assert f'cannot {verb} resource "{resource}"' in answer.message, answer.message


def past_admission(answer: Answer) -> None:
    """Admitted: the API server then failed to reach a kubelet or a pod (KWOK runs none).

    exec, attach and port-forward: ``400 Upgrade request required`` (the upgrade-aware proxy, after admission).
    A proxy: the API server's ``Status`` of a failed dial (502/503), or the upstream answer passed through (not a
    ``Status``: only a proxied response has another body; what the network answers for the pod's address).
    """
    body = answer.body
    if not (isinstance(body, dict) and body.get("kind") == "Status"):
        return  # passed through from the pod's address: the request was proxied
    assert "admission webhook" not in answer.message and "forbidden" not in answer.message, answer
    upgrade = (answer.status, answer.message) == (400, "Upgrade request required")
    assert upgrade or answer.status in (502, 503), answer


def connect(client: KubeClient, pod: str, sub: str) -> Answer:
    method, query = CONNECT[sub]
    return client.request(method, f"/api/v1/namespaces/{NS}/pods/{pod}/{sub}?{query}")


def proxy(client: KubeClient, name: str, resource: str = "pods") -> Answer:
    return client.request("GET", f"/api/v1/namespaces/{NS}/{resource}/{name}/proxy/api/jobs/", timeout=40)


def debug(client: KubeClient, pod: str) -> Answer:
    """``kubectl debug -it <pod> --image=busybox``: a patch of ``pods/ephemeralcontainers``."""
    return client.request(
        "PATCH",
        f"/api/v1/namespaces/{NS}/pods/{pod}/ephemeralcontainers",
        body={"spec": {"ephemeralContainers": [EPHEMERAL]}},
        content_type="application/strategic-merge-patch+json",
    )


# ----------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def plane(kueue_on_cluster: OnCluster) -> Iterator[OnCluster]:
    """The platform, with the on-call group bound to ``cluster-admin`` (its EKS access entry's policy)."""
    kueue_on_cluster.await_admission()
    binding = _binding("ClusterRoleBinding", ON_CALL_BINDING, ON_CALL, "ClusterRole", "cluster-admin")
    assert kueue_on_cluster.admin.create(binding).ok
    try:
        yield kueue_on_cluster
    finally:
        kueue_on_cluster.admin.delete(binding)


@pytest.fixture(scope="module")
def alice_pod(plane: OnCluster) -> Iterator[dict[str, Any]]:
    """Alice's honest Job, stamped by the webhook and admitted by Kueue; its pod Running on a KWOK node."""
    with plane.running_job("alice", "research", JOB) as pod:
        assert pod["metadata"]["annotations"][posix_identity.POSIX_USER_ANNOTATION] == "sso:alice"
        yield pod


def _binding(kind: str, name: str, group: str, role_kind: str, role: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **({"namespace": NS} if kind == "RoleBinding" else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": group}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
    }


@pytest.fixture
def widened(plane: OnCluster) -> Iterator[None]:
    """The research Role widened by a platform: attach, proxy and ephemeral containers granted too."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": WIDENED, "namespace": NS},
        "rules": [
            {"apiGroups": [""], "resources": ["pods/attach"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get", "create"]},
            {"apiGroups": [""], "resources": ["pods/ephemeralcontainers"], "verbs": ["patch"]},
        ],
    }
    binding = _binding("RoleBinding", WIDENED, names.kubernetes_group("research"), "Role", WIDENED)
    for obj in (role, binding):
        assert plane.admin.create(obj).ok
    # the RBAC authorizer sees a new binding once its informer has it: wait until the grant is in force
    attach = {"namespace": NS, "resource": "pods", "subresource": "attach", "verb": "create"}
    groups = [names.kubernetes_group("research"), "system:authenticated"]
    wait_until(
        lambda: plane.admin.access_review(user="widened-check", groups=groups, attributes=attach),
        timeout=30,
        what="the widened Role to be in force",
    )
    try:
        yield
    finally:
        for obj in (binding, role):
            plane.admin.delete(obj)


# -------------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("sub", ["exec", "portforward"])
def test_a_teammate_is_refused_by_the_webhook_and_the_owner_admitted(
    plane: OnCluster, alice_pod: dict[str, Any], sub: str
) -> None:
    pod = alice_pod["metadata"]["name"]
    message = webhook_denial(connect(plane.member("mallory", "research"), pod, sub))
    assert "runs as sso:alice" in message and "only they may" in message and "break-glass" in message, message
    past_admission(connect(plane.member("alice", "research"), pod, sub))
    rbac_denial(connect(plane.member("gina", "inference"), pod, sub), "create", f"pods/{sub}")


def test_attach_proxy_and_ephemeral_containers_are_not_the_teams_to_use(
    plane: OnCluster, alice_pod: dict[str, Any]
) -> None:
    pod = alice_pod["metadata"]["name"]
    for person in ("alice", "mallory"):
        client = plane.member(person, "research")
        rbac_denial(connect(client, pod, "attach"), "create", "pods/attach")
        rbac_denial(proxy(client, f"{pod}:8265"), "get", "pods/proxy")
        rbac_denial(proxy(client, "anything:8265", "services"), "get", "services/proxy")
        rbac_denial(debug(client, pod), "patch", "pods/ephemeralcontainers")


def test_a_pod_that_does_not_exist_is_refused_for_everyone(
    plane: OnCluster, alice_pod: dict[str, Any]
) -> None:
    pod = alice_pod["metadata"]["name"]
    on_call = plane.as_identity(on_call_user())
    for client in (plane.member("alice", "research"), on_call):
        assert "does not exist" in webhook_denial(connect(client, "nobody-0", "exec"))
    for name in NO_POD_NAMES:
        message = webhook_denial(proxy(on_call, name.format(pod)))
        assert "does not exist" in message or "names no pod" in message, (name, message)


def test_break_glass_is_admitted_and_recorded_on_the_pod(plane: OnCluster, alice_pod: dict[str, Any]) -> None:
    pod = alice_pod["metadata"]["name"]
    on_call = plane.as_identity(on_call_user())
    past_admission(connect(on_call, pod, "exec"))
    for name in PROXY_NAMES:
        past_admission(proxy(on_call, name.format(pod)))

    def events() -> list[dict[str, Any]] | None:
        found = [
            e
            for e in plane.admin.list("events.k8s.io/v1", "Event", namespace=NS)
            if e.get("reason") == "BreakGlass" and e["regarding"]["name"] == pod
        ]
        return found if len(found) >= 1 + len(PROXY_NAMES) else None

    recorded = wait_until(events, timeout=30, what="a BreakGlass Event per use")
    assert all(ON_CALL in e["note"] and "sso:alice" in e["note"] for e in recorded), recorded


def test_a_widened_role_still_meets_the_webhook(
    plane: OnCluster, alice_pod: dict[str, Any], widened: None
) -> None:
    pod = alice_pod["metadata"]["name"]
    mallory, alice = plane.member("mallory", "research"), plane.member("alice", "research")
    assert "only they may attach" in webhook_denial(connect(mallory, pod, "attach"))
    past_admission(connect(alice, pod, "attach"))
    for name in PROXY_NAMES:
        assert "only they may proxy" in webhook_denial(proxy(mallory, name.format(pod))), name
        past_admission(proxy(alice, name.format(pod)))
    assert "ephemeral container" in webhook_denial(debug(mallory, pod))
    answer = debug(alice, pod)
    assert answer.ok, answer
