"""The stand-in API server the webhook's unit tests call, against the real one, call by call.

``tests/support/kube_api_server.py`` answers the webhook's unit tests (the hostile-teammate suites, strict
supplemental groups, the node inventory): it serves Pods, Nodes and Namespaces and takes Events. Here the
webhook's own client (:class:`hyperpod_tenancy.webhook.kube.KubeApi`) makes every kind of call the webhook
makes — with the webhook's own ServiceAccount token, so the ClusterRole the platform renders for it decides on
the real server — once to the real API server with the Kueue-backend reference platform applied and once to the
stand-in holding the same objects. Each outcome (the value the client returns, or that it raises) must be the
same; one different answer fails.

What the stand-in cannot be compared on is named: ``fail_with`` (an API server in trouble, a failure chosen by
the unit tests) and its bearer-token prefix mode (an EKS token, which this control plane does not issue).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cluster_platform import OnCluster
from kube_api_server import KubeApiServer
from webhook_server import certificates

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.webhook.kube import KubeApi, KubeApiUnavailable

pytestmark = pytest.mark.cluster

NS = names.namespace("research")
JOB = "stand-in-alice"


def outcome(call: Callable[[], Awaitable[Any]]) -> Any:
    """What one client call gives, in comparable form: a Pod's identity, a list's names, ``None``, or the error."""
    try:
        value = asyncio.run(call())
    except KubeApiUnavailable:
        return "raises KubeApiUnavailable"
    if isinstance(value, dict):
        meta = value["metadata"]
        return ("Pod", meta["namespace"], meta["name"], meta["uid"], meta.get("annotations", {}))
    if isinstance(value, list):
        return sorted(item["metadata"]["name"] for item in value)
    return value


@pytest.fixture(scope="module")
def pod(kueue_on_cluster: OnCluster) -> Iterator[dict[str, Any]]:
    """Alice's honest Job's pod, stamped by the webhook and running on a KWOK node."""
    kueue_on_cluster.await_admission()
    with kueue_on_cluster.running_job("alice", "research", JOB) as running:
        yield running


def test_the_stand_in_answers_the_webhooks_calls_as_the_real_server(
    kueue_on_cluster: OnCluster, pod: dict[str, Any], tmp_path: Path
) -> None:
    on = kueue_on_cluster
    token = on.plane.service_account_token(posix_identity.WEBHOOK_NAMESPACE, posix_identity.SERVICE_ACCOUNT)
    token_file = tmp_path / "token"
    token_file.write_text(token)
    wrong_token = tmp_path / "wrong-token"
    wrong_token.write_text("not-a-token")
    certs = certificates(tmp_path / "tls")
    real = KubeApi(url=on.plane.server, token_file=token_file, ca_file=on.plane.pki.cert)
    name = pod["metadata"]["name"]
    with KubeApiServer(cert=certs.cert, key=certs.key, token=token) as api:
        api.pods[(NS, name)] = pod
        api.nodes = list(on.admin.list("v1", "Node"))
        api.namespaces = list(on.admin.list("v1", "Namespace"))
        fake = KubeApi(url=api.url, token_file=token_file, ca_file=certs.ca)

        def calls(client: KubeApi) -> dict[str, Callable[[], Awaitable[Any]]]:
            refused = KubeApi(url=client.url, token_file=wrong_token, ca_file=client.ca_file)
            return {
                "the pod a CONNECT names": lambda: client.get_pod(NS, name),
                "a pod that does not exist": lambda: client.get_pod(NS, "nobody-0"),
                "the pod's name in another namespace": lambda: client.get_pod(
                    names.namespace("inference"), name
                ),
                "every node (strict supplemental groups)": client.list_nodes,
                "every namespace (the coverage check)": client.list_namespaces,
                "a break-glass Event on the pod": lambda: client.record_event(
                    pod, reason="BreakGlass", action="Exec", note="on-call exec", instance="stand-in-test"
                ),
                "a token the server does not know": lambda: refused.get_pod(NS, name),
            }

        theirs = {what: outcome(call) for what, call in calls(real).items()}
        mine = {what: outcome(call) for what, call in calls(fake).items()}
    different = [
        f"{what}: real {theirs[what]!r}, stand-in {mine[what]!r}"
        for what in theirs
        if theirs[what] != mine[what]
    ]
    assert different == [], "\n".join(different)
    # not an agreement of two refusals: the real server answered the webhook's token
    assert theirs["the pod a CONNECT names"][2] == name
    assert NS in theirs["every namespace (the coverage check)"]
    assert theirs["every node (strict supplemental groups)"]
    assert theirs["a token the server does not know"] == "raises KubeApiUnavailable"
    # the calls reached the real server as the webhook: its Event is there, written by its reporting controller
    events = on.admin.list("events.k8s.io/v1", "Event", namespace=NS)
    assert any(e.get("regarding", {}).get("name") == name and e.get("reason") == "BreakGlass" for e in events)
    assert [e["regarding"]["name"] for e in api.events] == [name]
