"""Isolation that does not depend on a label of the team namespace.

On Task Governance the service owns the team namespaces (``hyperpod-ns-<team>``) and may rewrite their labels;
anything with ``patch namespaces`` could too. If the admission policies and the webhooks selected team
namespaces by the label ``hyperpod-tenancy.io/tenant: "true"``, removing or changing it would switch every rule
off until the daily audit noticed. They select them by the name the platform assigns (the prefix of
``names.NAMESPACE_PREFIX``, in a match condition on ``request.namespace``: Kubernetes "Dynamic Admission
Control", ``matchConditions``, and "Validating Admission Policy", ``spec.matchConditions``; a label selector
cannot match a prefix), never by a list of teams. Checked on the synthesized platform on both fairness
backends: the policies with the standard CEL engine, the webhooks' selection by evaluating their
``namespaceSelector`` and ``matchConditions`` the way the API server does.
"""

from __future__ import annotations

import copy
from typing import Any

import cel
import pytest
import tenant_admission as ta
from cel_admission import evaluate_policies
from synth import Synth

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names

LABEL_EDITS = {
    "removed": lambda ls: {k: v for k, v in ls.items() if k != labels.TENANT_LABEL},
    "false": lambda ls: {**ls, labels.TENANT_LABEL: "false"},
    "all-removed": lambda ls: {labels.NAMESPACE_NAME_LABEL: ls[labels.NAMESPACE_NAME_LABEL]},
}


def _node_port() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "open", "namespace": names.namespace("research")},
        "spec": {"type": "NodePort", "ports": [{"port": 80}], "selector": {"app": "x"}},
    }


def _root_job() -> dict[str, Any]:
    job = ta.job()
    job["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0
    job["spec"]["template"]["spec"]["priorityClassName"] = "system-node-critical"
    return job


#: Requests every rule set refuses in a team namespace: (object, resource).
HOSTILE = {"node-port-service": (_node_port, "services"), "root-job": (_root_job, "jobs")}


def _decide(synth: Synth, obj: dict[str, Any], resource: str, namespace: dict[str, Any]) -> Any:
    group = obj["apiVersion"].rpartition("/")[0]
    return evaluate_policies(
        ta.policies(synth), obj=obj, namespace=namespace, group=group, resource=resource, user_info=ta.MEMBER
    )


@pytest.mark.parametrize("edit", list(LABEL_EDITS))
@pytest.mark.parametrize("request_name", list(HOSTILE))
def test_rewriting_the_tenant_label_switches_no_policy_off(
    synth: Synth, edit: str, request_name: str
) -> None:
    make, resource = HOSTILE[request_name]
    labelled = ta.namespace(synth, "research")
    assert labelled["metadata"]["labels"][labels.TENANT_LABEL] == "true"
    relabelled = copy.deepcopy(labelled)
    relabelled["metadata"]["labels"] = LABEL_EDITS[edit](labelled["metadata"]["labels"])
    before = _decide(synth, make(), resource, labelled)
    after = _decide(synth, make(), resource, relabelled)
    assert not before.allowed and not after.allowed, after
    if edit != "all-removed":  # with every label gone, rules that read a label (borrowing) read its absence
        assert before.policies() <= after.policies(), "every policy that applied still applies"


@pytest.mark.parametrize("name", ["kube-system", "default", "hyperpod-inference-system", "ns-hyperpod-ns-x"])
def test_namespaces_the_platform_did_not_name_for_a_team_are_not_selected(synth: Synth, name: str) -> None:
    """Even labelled as a tenant: the name decides, so a platform namespace is never governed by mistake."""
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "labels": {labels.NAMESPACE_NAME_LABEL: name, labels.TENANT_LABEL: "true"},
        },
    }
    obj = _node_port()
    obj["metadata"]["namespace"] = name
    assert _decide(synth, obj, "services", namespace).policies() == set()


def _selector_matches(selector: dict[str, Any], ns_labels: dict[str, str]) -> bool:
    """A label selector as the API server evaluates it (``matchLabels`` and ``In``/``NotIn``/``Exists``)."""
    if any(ns_labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for expr in selector.get("matchExpressions", []):
        value = ns_labels.get(expr["key"])
        ok = {
            "In": value in expr.get("values", []),
            "NotIn": value not in expr.get("values", []),
            "Exists": expr["key"] in ns_labels,
            "DoesNotExist": expr["key"] not in ns_labels,
        }[expr["operator"]]
        if not ok:
            return False
    return True


def _webhook_calls(webhook: dict[str, Any], namespace: dict[str, Any]) -> bool:
    """Whether the API server sends a request in ``namespace`` to ``webhook`` (selector, then match conditions)."""
    if not _selector_matches(webhook.get("namespaceSelector", {}), namespace["metadata"]["labels"]):
        return False
    context = cel.Context(
        {
            "request": {
                "namespace": namespace["metadata"]["name"],
                "userInfo": dict(ta.MEMBER),
                "operation": "CREATE",
            }
        }
    )
    return all(
        cel.compile(c["expression"]).execute(context) is True for c in webhook.get("matchConditions", [])
    )


@pytest.mark.parametrize("edit", list(LABEL_EDITS))
def test_both_webhooks_still_see_a_relabelled_team_namespace(synth: Synth, edit: str) -> None:
    configs = [
        o
        for o in synth.manifests()
        if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    ]
    assert {c["kind"] for c in configs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for team in ("research", "inference"):
        namespace = ta.namespace(synth, team)
        namespace["metadata"]["labels"] = LABEL_EDITS[edit](namespace["metadata"]["labels"])
        for config in configs:
            for webhook in config["webhooks"]:
                assert _webhook_calls(webhook, namespace), (config["kind"], team)
    platform_ns = {
        "metadata": {"name": "kube-system", "labels": {labels.NAMESPACE_NAME_LABEL: "kube-system"}}
    }
    for config in configs:
        assert not any(_webhook_calls(w, platform_ns) for w in config["webhooks"])


def test_no_admission_object_selects_by_a_label_a_namespace_owner_can_change(synth: Synth) -> None:
    """Only the API server's own ``kubernetes.io/metadata.name`` label may appear in a namespace selector."""
    for obj in synth.manifests():
        selectors = []
        if obj["kind"] == "ValidatingAdmissionPolicy":
            selectors.append(obj["spec"]["matchConstraints"].get("namespaceSelector", {}))
        elif obj["kind"] == "ValidatingAdmissionPolicyBinding":
            selectors.append(obj["spec"].get("matchResources", {}).get("namespaceSelector", {}))
        elif obj["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            selectors += [w.get("namespaceSelector", {}) for w in obj["webhooks"]]
        for selector in selectors:
            keys = set(selector.get("matchLabels", {})) | {
                e["key"] for e in selector.get("matchExpressions", [])
            }
            assert keys <= {labels.NAMESPACE_NAME_LABEL}, (obj["kind"], obj["metadata"]["name"], selector)
