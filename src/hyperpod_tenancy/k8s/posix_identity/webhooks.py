"""The webhook configurations that send pod and connect requests to the server, and the server's API access."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels, vap, workloads
from hyperpod_tenancy.k8s.posix_identity._common import (
    API_ACCESS_ROLE,
    CONNECT_SUBRESOURCES,
    CONNECT_WEBHOOK_NAME,
    MUTATE_PATH,
    SERVICE,
    SERVICE_ACCOUNT,
    TLS_CERTIFICATE,
    VALIDATE_PATH,
    WEBHOOK_CONFIGURATION,
    WEBHOOK_NAME,
    WEBHOOK_NAMESPACE,
    _meta,
)
from hyperpod_tenancy.policy.model import WebhookFailurePolicy

__all__ = ["connect_webhook_configuration", "mutating_webhook_configuration", "webhook_api_access"]


def _webhook_rules() -> list[dict[str, Any]]:
    """Return one rule per API group of the kinds the platform serves (bare Pods included), and ConfigMaps and Secrets.

    :func:`~hyperpod_tenancy.k8s.workloads.served_kinds`: a kind nothing installs is neither granted nor governed,
    so the webhook is not called for it.
    """
    groups: dict[str, list[str]] = {}
    for kind in workloads.served_kinds():
        groups.setdefault(kind.group, []).append(kind.resource)
    # the creator of each ConfigMap and Secret is recorded (hyperpod_tenancy.webhook.creators)
    groups.setdefault("", []).extend(["configmaps", "secrets"])
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": ["CREATE", "UPDATE"],
            "resources": resources,
            "scope": "Namespaced",
        }
        for group, resources in groups.items()
    ]


def mutating_webhook_configuration(
    *, failure_policy: WebhookFailurePolicy, timeout_seconds: int, excluded_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """Return the MutatingWebhookConfiguration calling the webhook on every workload kind in team namespaces only.

    Team namespaces are selected by name, in a match condition
    (:func:`hyperpod_tenancy.k8s.vap.team_namespace_condition`: a rewritten namespace label switches nothing
    off), and ``namespaceSelector`` excludes, by their immutable ``kubernetes.io/metadata.name`` label,
    ``kube-system``, the webhook's own namespace and ``excluded_namespaces`` (so the webhook can never block its
    own pods or the control plane's). cert-manager's CA injector fills ``caBundle`` from the serving certificate
    (annotation ``cert-manager.io/inject-ca-from``). ``sideEffects: NoneOnDryRun``: the only write, a person's
    first UID, is never made on a dry run (the server looks the UID up and tells a person without one to submit
    for real); ``reinvocationPolicy:
    IfNeeded`` re-runs the webhook when a later mutating webhook changed the object.
    """
    excluded = sorted({"kube-system", WEBHOOK_NAMESPACE, *excluded_namespaces})
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": _meta(
            WEBHOOK_CONFIGURATION,
            namespace=None,
            annotations={"cert-manager.io/inject-ca-from": f"{WEBHOOK_NAMESPACE}/{TLS_CERTIFICATE}"},
        ),
        "webhooks": [
            {
                "name": WEBHOOK_NAME,
                "admissionReviewVersions": ["v1"],
                "sideEffects": "NoneOnDryRun",
                "failurePolicy": failure_policy.value,
                "timeoutSeconds": timeout_seconds,
                "matchPolicy": "Equivalent",
                "reinvocationPolicy": "IfNeeded",
                "clientConfig": {
                    "service": {
                        "name": SERVICE,
                        "namespace": WEBHOOK_NAMESPACE,
                        "path": MUTATE_PATH,
                        "port": 443,
                    }
                },
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": labels.NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": excluded}
                    ],
                },
                "matchConditions": [vap.team_namespace_condition()],
                "rules": _webhook_rules(),
            }
        ],
    }


def webhook_api_access(*, read_nodes: bool = False) -> list[dict[str, Any]]:
    """Return the ClusterRole and ClusterRoleBinding of the webhook's ServiceAccount: ``get pods``, ``create events``.

    A CONNECT request (exec, attach, port-forward, proxy) carries ``PodExecOptions``... as its object, so the
    webhook reads the Pod to learn whose it is, and it records each break-glass use as an Event on the Pod. With
    ``read_nodes`` (``supplementalGroupsPolicy: auto``) it may also ``list nodes``, to read which support
    ``supplementalGroupsPolicy``. It may ``list namespaces``, to count the team namespaces the admission rules do
    not cover as set up (:mod:`hyperpod_tenancy.webhook.namespace_coverage`). Nothing else: no watch, no writes
    to workloads.
    """
    rbac = "rbac.authorization.k8s.io"
    nodes = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}] if read_nodes else []
    return [
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRole",
            "metadata": _meta(API_ACCESS_ROLE, namespace=None),
            "rules": [
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
                {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create"]},
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
                *nodes,
            ],
        },
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": _meta(API_ACCESS_ROLE, namespace=None),
            "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": WEBHOOK_NAMESPACE}],
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": API_ACCESS_ROLE},
        },
    ]


def connect_webhook_configuration(
    *, failure_policy: WebhookFailurePolicy, timeout_seconds: int, excluded_namespaces: Sequence[str] = ()
) -> dict[str, Any]:
    """Return the ValidatingWebhookConfiguration of the requests that reach into a running pod of a team.

    CONNECT of ``pods/exec``, ``pods/attach``, ``pods/portforward`` and ``pods/proxy`` and UPDATE of
    ``pods/ephemeralcontainers`` (``kubectl debug``), in team namespaces only (the namespace selector of
    :func:`mutating_webhook_configuration`). The server allows them only to the pod's recorded person, the
    controllers and the break-glass group (``hyperpod_tenancy.webhook.connect``). The same failure policy and
    timeout as the mutating webhook: with ``Fail`` nobody reaches into a pod while the webhook is down.
    """
    mutating = mutating_webhook_configuration(
        failure_policy=failure_policy,
        timeout_seconds=timeout_seconds,
        excluded_namespaces=excluded_namespaces,
    )
    (base,) = mutating["webhooks"]
    webhook = {
        key: value
        for key, value in base.items()
        if key not in ("reinvocationPolicy", "rules", "clientConfig")
    }
    webhook["name"] = CONNECT_WEBHOOK_NAME
    webhook["clientConfig"] = {"service": {**base["clientConfig"]["service"], "path": VALIDATE_PATH}}
    webhook["rules"] = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CONNECT"],
            "resources": list(CONNECT_SUBRESOURCES),
            "scope": "Namespaced",
        },
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["UPDATE"],
            "resources": ["pods/ephemeralcontainers"],
            "scope": "Namespaced",
        },
    ]
    return {**mutating, "kind": "ValidatingWebhookConfiguration", "webhooks": [webhook]}
