"""``supplementalGroupsPolicy: Strict``: an image's ``/etc/group`` cannot add a group to a tenant pod.

Under Kubernetes' default (``Merge``) the container runtime adds the groups an image lists for its user, so a
crafted image can join another team's GID (KEP-3619). kubelet refuses a pod asking for ``Strict`` on a node whose
runtime cannot honour it (it reports ``Node.status.features.supplementalGroupsPolicy``), and the scheduler does not
look. So under ``posixIdentity.supplementalGroupsPolicy: auto`` the real webhook (over TLS, against a stand-in API
server over TLS) sets it on what it creates only while every node reports support, and under ``strict`` always,
with the validating policy requiring it of every pod.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tenant_admission as ta
from cel_admission import evaluate_policies
from kube_api_server import KubeApiServer
from synth import Synth
from webhook_server import (
    Certificates,
    WebhookProcess,
    apply_patch,
    controller,
    create_table,
    kind_named,
    pod_specs_of,
    review,
    sso_user,
    webhook_config,
    workload,
)

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.posix_identity import POSIX_IDENTITY_POLICY
from hyperpod_tenancy.webhook.node_features import WARNING_CODE

TOKEN = "webhook-service-account-token"
REFRESH = 0.1
JOB = kind_named("Job")


def _node(name: str, supported: bool | None) -> dict[str, Any]:
    status: dict[str, Any] = {"nodeInfo": {"containerRuntimeVersion": "containerd://2.1.4"}}
    if supported is not None:  # kubelet before 1.31 reports no features at all
        status["features"] = {"supplementalGroupsPolicy": supported}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": status}


@pytest.fixture(scope="module")
def api(certs: Certificates) -> Iterator[KubeApiServer]:
    with KubeApiServer(cert=certs.cert, key=certs.key, token=TOKEN) as server:
        yield server


def _server(moto: str, certs: Certificates, api: KubeApiServer, folder: Path, policy: str) -> WebhookProcess:
    (folder / "teams.json").write_text(json.dumps({**webhook_config(), "supplementalGroupsPolicy": policy}))
    (folder / "token").write_text(TOKEN + "\n")
    extra = (
        "--kube-api",
        api.url,
        "--kube-token-file",
        str(folder / "token"),
        "--kube-ca-file",
        str(certs.ca),
    )
    return WebhookProcess(
        certs=certs,
        table=create_table(),
        config_path=folder / "teams.json",
        extra_args=extra,
        env={"HYPERPOD_TENANCY_WEBHOOK_NODE_REFRESH_SECONDS": str(REFRESH)},
    )


@pytest.fixture(scope="module")
def auto(
    moto: str, certs: Certificates, api: KubeApiServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    with _server(moto, certs, api, tmp_path_factory.mktemp("auto"), "auto") as proc:
        yield proc


def _listed(api: KubeApiServer) -> None:
    """Wait until a whole listing of the nodes began and ended after now: two more first pages were asked for
    (the webhook applies a listing before it sleeps and starts the next)."""
    before = len(api.requests)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        firsts = [
            p for _, p in api.requests[before:] if p.startswith("/api/v1/nodes?") and "continue=" not in p
        ]
        if len(firsts) >= 2:
            return
        time.sleep(REFRESH / 2)
    raise AssertionError("the webhook did not list the nodes twice in 15 s")


def _nodes(api: KubeApiServer, nodes: list[dict[str, Any]]) -> None:
    """Put ``nodes`` in the cluster and wait for the webhook to have read them."""
    api.fail_with = None
    api.nodes = nodes
    _listed(api)


def _policies(server: WebhookProcess, obj: dict[str, Any], **kwargs: Any) -> list[Any]:
    response = server.client.mutate(review(obj, **kwargs))
    assert response["allowed"], response
    patched = apply_patch(obj, response)
    return [
        spec.get("securityContext", {}).get("supplementalGroupsPolicy") for spec in pod_specs_of(patched, JOB)
    ]


def test_a_job_gets_strict_while_every_node_supports_it(auto: WebhookProcess, api: KubeApiServer) -> None:
    _nodes(api, [_node("hyperpod-i-0a", True), _node("hyperpod-i-0b", True), _node("system-1", True)])
    assert _policies(auto, workload(JOB), user=sso_user("alice")) == ["Strict"]


def test_one_node_without_it_turns_it_off_for_everyone(auto: WebhookProcess, api: KubeApiServer) -> None:
    """The scheduler would place the pod on it, and kubelet would refuse to start it there."""
    for without in (False, None):
        _nodes(api, [_node("hyperpod-i-0a", True), _node("hyperpod-i-0b", without)])
        assert _policies(auto, workload(JOB), user=sso_user("alice")) == [None], without


def test_support_unknown_is_support_absent(auto: WebhookProcess, api: KubeApiServer) -> None:
    """No node listed, or the API server not answering: the default, never a pod that cannot start."""
    _nodes(api, [])
    assert _policies(auto, workload(JOB), user=sso_user("alice")) == [None]
    _nodes(api, [_node("hyperpod-i-0a", True)])
    api.fail_with = 503
    _listed(api)
    assert _policies(auto, workload(JOB), user=sso_user("alice")) == [None]
    api.fail_with = None


def test_every_page_of_a_large_cluster_is_read(auto: WebhookProcess, api: KubeApiServer) -> None:
    """The nodes are listed in pages of 500: the one node without support is on the third page."""
    nodes = [_node(f"hyperpod-i-{i:04d}", True) for i in range(1200)]
    _nodes(api, nodes)
    assert _policies(auto, workload(JOB), user=sso_user("alice")) == ["Strict"]
    nodes[1100] = _node("hyperpod-i-1100", False)
    _nodes(api, nodes)
    assert _policies(auto, workload(JOB), user=sso_user("alice")) == [None]


def test_a_member_asking_for_merge_gets_strict(auto: WebhookProcess, api: KubeApiServer) -> None:
    _nodes(api, [_node("hyperpod-i-0a", True)])
    job = workload(JOB)
    job["spec"]["template"]["spec"]["securityContext"] = {"supplementalGroupsPolicy": "Merge"}
    assert _policies(auto, job, user=sso_user("alice")) == ["Strict"]


def test_a_controllers_pod_gets_it_where_unset(auto: WebhookProcess, api: KubeApiServer) -> None:
    _nodes(api, [_node("hyperpod-i-0a", True)])
    pod = workload(kind_named("Pod"))
    patched = apply_patch(pod, auto.client.mutate(review(pod, user=controller("Job controller"))))
    assert patched["spec"]["securityContext"]["supplementalGroupsPolicy"] == "Strict"


def test_an_update_never_adds_it(auto: WebhookProcess, api: KubeApiServer) -> None:
    """A Job's pod template is immutable: an UPDATE (Kueue suspends and resumes Jobs) adding the field would be
    refused once the nodes start to support it."""
    _nodes(api, [_node("hyperpod-i-0a", False)])
    job = workload(JOB)
    created = apply_patch(job, auto.client.mutate(review(job, user=sso_user("alice"))))
    _nodes(api, [_node("hyperpod-i-0a", True)])
    updated = copy.deepcopy(created)
    updated["spec"]["suspend"] = True
    response = auto.client.mutate(review(updated, user=sso_user("alice"), operation="UPDATE", old=created))
    assert _policies_of(apply_patch(updated, response)) == [None]


DEPLOYMENT = kind_named("Deployment")


def _template_policy(obj: dict[str, Any]) -> Any:
    (spec,) = pod_specs_of(obj, DEPLOYMENT)
    return spec.get("securityContext", {}).get("supplementalGroupsPolicy")


@pytest.mark.parametrize("updater", ["alice", "bob"])
def test_an_update_cannot_take_it_back(auto: WebhookProcess, api: KubeApiServer, updater: str) -> None:
    """A Deployment's template is mutable: its person, or a teammate, writing Merge into it by UPDATE gets Strict
    back (the stored object had it). An unchanged UPDATE is left alone."""
    _nodes(api, [_node("hyperpod-i-0a", True)])
    deployment = workload(DEPLOYMENT, "inference")
    created = apply_patch(
        deployment, auto.client.mutate(review(deployment, user=sso_user("alice", "inference")))
    )
    assert _template_policy(created) == "Strict"
    _nodes(api, [_node("hyperpod-i-0a", False)])  # even once a node no longer supports it
    unchanged = auto.client.mutate(
        review(created, user=sso_user("alice", "inference"), operation="UPDATE", old=created)
    )
    assert unchanged["allowed"] and "patch" not in unchanged, unchanged
    merged = copy.deepcopy(created)
    (spec,) = pod_specs_of(merged, DEPLOYMENT)
    spec["securityContext"]["supplementalGroupsPolicy"] = "Merge"
    response = auto.client.mutate(
        review(merged, user=sso_user(updater, "inference"), operation="UPDATE", old=created)
    )
    if response["allowed"]:
        assert _template_policy(apply_patch(merged, response)) == "Strict"


def _policies_of(obj: dict[str, Any]) -> list[Any]:
    return [
        spec.get("securityContext", {}).get("supplementalGroupsPolicy") for spec in pod_specs_of(obj, JOB)
    ]


def test_the_webhook_logs_the_guardrail_code_while_a_node_lacks_it(
    moto: str, certs: Certificates, api: KubeApiServer, tmp_path: Path
) -> None:
    _nodes(api, [_node("hyperpod-i-0a", True), _node("hyperpod-i-0b", False)])
    with _server(moto, certs, api, tmp_path, "auto") as proc:
        _listed(api)
    (line,) = [entry for entry in proc.log_lines() if entry.get("code") == WARNING_CODE]
    assert line["nodes_without"] == ["hyperpod-i-0b"] and line["level"] == "warning"


def test_strict_sets_it_whatever_the_nodes_say(
    moto: str, certs: Certificates, api: KubeApiServer, tmp_path: Path
) -> None:
    _nodes(api, [_node("hyperpod-i-0a", False)])
    with _server(moto, certs, api, tmp_path, "strict") as proc:
        assert _policies(proc, workload(JOB), user=sso_user("alice")) == ["Strict"]


def _pod(security_context: dict[str, Any]) -> dict[str, Any]:
    spec = ta.posix_stamp(ta.pod_spec(resources=ta.GPU), "research")
    spec["securityContext"].update(security_context)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "hyperpod-ns-research", "labels": ta.kueue_labels()},
        "spec": spec,
    }


def _denials(reference: Synth, policies: list[dict[str, Any]], pod: dict[str, Any]) -> list[str]:
    decision = evaluate_policies(
        policies, obj=pod, namespace=ta.namespace(reference, "research"), group="", resource="pods"
    )
    return [m for o in decision.outcomes if o.policy == POSIX_IDENTITY_POLICY for m in o.failures]


def test_under_strict_the_validating_policy_requires_it_of_every_pod(reference: Synth) -> None:
    """The backstop that does not depend on the webhook: a pod without Strict, or with Merge, is refused."""
    strict = posix_identity.posix_identity_policies(strict_groups=True)
    assert _denials(reference, strict, _pod({"supplementalGroupsPolicy": "Strict"})) == []
    for attack in ({}, {"supplementalGroupsPolicy": "Merge"}):
        (denial,) = _denials(reference, strict, _pod(attack))
        assert "supplementalGroupsPolicy must be Strict" in denial, attack
    # auto and merge: the policy does not look (no pod could start on a node without support)
    assert _denials(reference, posix_identity.posix_identity_policies(), _pod({})) == []


def test_the_webhook_may_list_nodes_only_under_auto(reference_platform: Any) -> None:
    import dataclasses

    from hyperpod_tenancy.policy import SupplementalGroupsPolicy

    def rules(policy: SupplementalGroupsPolicy) -> list[dict[str, Any]]:
        spec = dataclasses.replace(
            reference_platform.cluster.posix_identity, supplemental_groups_policy=policy
        )
        platform = dataclasses.replace(
            reference_platform, cluster=dataclasses.replace(reference_platform.cluster, posix_identity=spec)
        )
        assert posix_identity.webhook_config(platform)["supplementalGroupsPolicy"] == policy.value
        (role,) = [
            o
            for o in posix_identity.webhook_objects(
                platform, posix_identity.WebhookDeployment(image="x:1", table_name="uids", region="us-east-1")
            )
            if o["kind"] == "ClusterRole"
        ]
        return list(role["rules"])

    nodes = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}
    assert nodes in rules(SupplementalGroupsPolicy.AUTO)
    assert nodes not in rules(SupplementalGroupsPolicy.STRICT)
    assert nodes not in rules(SupplementalGroupsPolicy.MERGE)
