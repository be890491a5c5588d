"""The webhook's Deployment, Service, certificates and configuration in its own namespace."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.posix_identity._common import (
    _CONFIG_DIR,
    _SELF_SIGNED_ISSUER,
    _SERVER_ID,
    _TLS_DIR,
    CA_CERTIFICATE,
    CONFIG_FILE,
    CONFIG_HASH_ANNOTATION,
    CONFIG_MAP,
    DEPLOYMENT,
    METRICS_PORT,
    METRICS_PORT_NAME,
    REPLICAS,
    SCRAPE_ANNOTATIONS,
    SERVER_PORT,
    SERVICE,
    SERVICE_ACCOUNT,
    TLS_CERTIFICATE,
    WEBHOOK_NAMESPACE,
    _meta,
)
from hyperpod_tenancy.k8s.posix_identity.config import _config_json, webhook_config
from hyperpod_tenancy.k8s.posix_identity.webhooks import webhook_api_access
from hyperpod_tenancy.policy.model import Platform, SupplementalGroupsPolicy

__all__ = ["WebhookDeployment", "webhook_objects"]


@dataclass(frozen=True, kw_only=True)
class WebhookDeployment:
    """What the webhook's Deployment needs from outside the policy (values may be CDK token strings)."""

    #: Container image URI of the server (built from the repository's ``Dockerfile``).
    image: str
    #: Name of the DynamoDB table of the UID map.
    table_name: str
    #: Region of the table (``AWS_REGION`` of the server).
    region: str


def _certificates() -> list[dict[str, Any]]:
    """Return a self-signed issuer, the webhook's own CA certificate, a CA issuer on it and the serving certificate."""
    api = "cert-manager.io/v1"
    key = {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"}
    service_dns = f"{SERVICE}.{WEBHOOK_NAMESPACE}.svc"
    return [
        {
            "apiVersion": api,
            "kind": "Issuer",
            "metadata": _meta(_SELF_SIGNED_ISSUER),
            "spec": {"selfSigned": {}},
        },
        {
            "apiVersion": api,
            "kind": "Certificate",
            "metadata": _meta(CA_CERTIFICATE),
            "spec": {
                "isCA": True,
                "commonName": f"{WEBHOOK_NAMESPACE} CA",
                "secretName": CA_CERTIFICATE,
                "duration": "87600h",  # 10 years: the CA only signs the serving certificate, which rotates
                "renewBefore": "720h",
                "privateKey": key,
                "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": _SELF_SIGNED_ISSUER},
            },
        },
        {
            "apiVersion": api,
            "kind": "Issuer",
            "metadata": _meta(CA_CERTIFICATE),
            "spec": {"ca": {"secretName": CA_CERTIFICATE}},
        },
        {
            "apiVersion": api,
            "kind": "Certificate",
            "metadata": _meta(TLS_CERTIFICATE),
            "spec": {
                "secretName": TLS_CERTIFICATE,
                "dnsNames": [service_dns, f"{service_dns}.cluster.local"],
                "duration": "2160h",  # 90 days, renewed 30 days before it expires
                "renewBefore": "720h",
                "usages": ["server auth", "digital signature"],
                "privateKey": key,
                "issuerRef": {"group": "cert-manager.io", "kind": "Issuer", "name": CA_CERTIFICATE},
            },
        },
    ]


def _probe(path: str, *, period: int, failures: int) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": SERVER_PORT, "scheme": "HTTPS"},
        "periodSeconds": period,
        "timeoutSeconds": 2,
        "failureThreshold": failures,
    }


def _deployment(config: dict[str, Any], target: WebhookDeployment) -> dict[str, Any]:
    selector = {"app.kubernetes.io/name": DEPLOYMENT}
    digest = hashlib.sha256(_config_json(config).encode()).hexdigest()
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": mode,
            "labelSelector": {"matchLabels": selector},
        }
        for key, mode in (
            ("kubernetes.io/hostname", "DoNotSchedule"),
            ("topology.kubernetes.io/zone", "ScheduleAnyway"),
        )
    ]
    container = {
        "name": "server",
        "image": target.image,
        "args": [
            "--port",
            str(SERVER_PORT),
            "--tls-cert",
            f"{_TLS_DIR}/tls.crt",
            "--tls-key",
            f"{_TLS_DIR}/tls.key",
            "--table",
            target.table_name,
            "--teams",
            f"{_CONFIG_DIR}/{CONFIG_FILE}",
            "--metrics-port",
            str(METRICS_PORT),
        ],
        "env": [
            {"name": "AWS_REGION", "value": target.region},
            {"name": "AWS_DEFAULT_REGION", "value": target.region},
            {"name": "PYTHONDONTWRITEBYTECODE", "value": "1"},
        ],
        "ports": [
            {"name": "https", "containerPort": SERVER_PORT, "protocol": "TCP"},
            {"name": METRICS_PORT_NAME, "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        "livenessProbe": _probe("/healthz", period=10, failures=3),
        "readinessProbe": _probe("/readyz", period=5, failures=2),
        "resources": {"requests": {"cpu": "250m", "memory": "192Mi"}, "limits": {"memory": "384Mi"}},
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "tls", "mountPath": _TLS_DIR, "readOnly": True},
            {"name": "config", "mountPath": _CONFIG_DIR, "readOnly": True},
            {"name": "tmp", "mountPath": "/tmp"},  # noqa: S108 - an emptyDir: the root file system is read-only
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(DEPLOYMENT),
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": selector},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {
                    "labels": {**labels.object_labels(), **selector},
                    "annotations": {CONFIG_HASH_ANNOTATION: digest, **SCRAPE_ANNOTATIONS},
                },
                "spec": {
                    "serviceAccountName": SERVICE_ACCOUNT,
                    # the one pod of the namespace that talks to the API server (webhook_api_access)
                    "automountServiceAccountToken": True,
                    "priorityClassName": "system-cluster-critical",
                    "enableServiceLinks": False,
                    # the platform's system nodes, as its other controllers (KubeRay)
                    "nodeSelector": {labels.NODE_ROLE_LABEL: labels.SYSTEM_NODE_ROLE},
                    "topologySpreadConstraints": spread,
                    "terminationGracePeriodSeconds": 30,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": _SERVER_ID,
                        "runAsGroup": _SERVER_ID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "tls", "secret": {"secretName": TLS_CERTIFICATE}},
                        {"name": "config", "configMap": {"name": CONFIG_MAP}},
                        {"name": "tmp", "emptyDir": {"sizeLimit": "16Mi"}},
                    ],
                },
            },
        },
    }


def webhook_objects(platform: Platform, target: WebhookDeployment) -> list[dict[str, Any]]:
    """Every object of the webhook but its MutatingWebhookConfiguration, in the order to apply them.

    The Namespace (Pod Security ``restricted``), ServiceAccount, ConfigMap (:func:`webhook_config`), the
    cert-manager issuers and certificates, the Deployment (:data:`REPLICAS` replicas on the system nodes, spread
    over nodes and zones, HTTPS probes on ``/healthz`` and ``/readyz``, non-root with a read-only root file
    system; Prometheus metrics on :data:`METRICS_PORT`, named :data:`METRICS_PORT_NAME`, announced by
    :data:`SCRAPE_ANNOTATIONS`), its PodDisruptionBudget (``minAvailable: 1``) and the Service (443 to
    :data:`SERVER_PORT` only: metrics are scraped per pod, a Service would mix the replicas' counters). The namespace
    has no NetworkPolicy, so nothing stands between a collector and the metrics port; a default-deny policy added
    there would have to admit the observability add-on's namespace to :data:`METRICS_PORT` (and the API server to
    :data:`SERVER_PORT`).
    """
    config = webhook_config(platform)
    restricted = "restricted"
    selector = {"app.kubernetes.io/name": DEPLOYMENT}
    return [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": WEBHOOK_NAMESPACE,
                "labels": {
                    **labels.object_labels(),
                    **labels.pod_security_labels(enforce=restricted, warn=restricted, audit=restricted),
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(SERVICE_ACCOUNT),
            "automountServiceAccountToken": False,
        },
        *webhook_api_access(
            read_nodes=platform.cluster.posix_identity.supplemental_groups_policy
            is SupplementalGroupsPolicy.AUTO
        ),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(CONFIG_MAP),
            "data": {CONFIG_FILE: _config_json(config)},
        },
        *_certificates(),
        _deployment(config, target),
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta(DEPLOYMENT),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": selector}},
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(SERVICE),
            "spec": {
                "type": "ClusterIP",
                "selector": selector,
                "ports": [{"name": "https", "port": 443, "targetPort": SERVER_PORT, "protocol": "TCP"}],
            },
        },
    ]
