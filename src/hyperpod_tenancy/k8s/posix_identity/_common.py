"""The POSIX identity webhook's names: namespace, objects, paths, ports and metrics."""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import labels

__all__ = [
    "ADMISSION_DENIALS_METRIC",
    "ADMISSION_DURATION_METRIC",
    "ADMISSION_OUTCOMES",
    "ADMISSION_REQUESTS_METRIC",
    "API_ACCESS_ROLE",
    "CA_CERTIFICATE",
    "CONFIG_FILE",
    "CONFIG_HASH_ANNOTATION",
    "CONFIG_MAP",
    "CONFIG_VERSION",
    "CONNECT_SUBRESOURCES",
    "CONNECT_WEBHOOK_NAME",
    "DEPLOYMENT",
    "DYNAMODB_CALLS_METRIC",
    "DYNAMODB_OUTCOMES",
    "METRICS_PATH",
    "METRICS_PORT",
    "METRICS_PORT_NAME",
    "MUTATE_PATH",
    "READY_METRIC",
    "REPLICAS",
    "SCRAPE_ANNOTATIONS",
    "SERVER_PORT",
    "SERVICE",
    "SERVICE_ACCOUNT",
    "SSO_ROLE_PREFIX",
    "TEAM_NAMESPACES_METRIC",
    "TEAM_RECORDS_LOADED_METRIC",
    "TLS_CERTIFICATE",
    "UNCOVERED_NAMESPACES_METRIC",
    "VALIDATE_PATH",
    "WEBHOOK_CONFIGURATION",
    "WEBHOOK_NAME",
    "WEBHOOK_NAMESPACE",
]

#: Namespace of the webhook (Pod Security ``restricted``; no tenant label, so no tenant policy or webhook applies).
WEBHOOK_NAMESPACE = "hyperpod-tenancy-posix-identity"


#: Name of its ServiceAccount (bound to the DynamoDB role by an EKS Pod Identity association), Deployment,
#: Service and PodDisruptionBudget.
SERVICE_ACCOUNT = DEPLOYMENT = SERVICE = "posix-identity-webhook"


#: ConfigMap holding :data:`CONFIG_FILE`.
CONFIG_MAP = "posix-identity-config"


#: The configuration file's name in the ConfigMap and under ``/config`` in the container.
CONFIG_FILE = "teams.json"


#: Format version of :func:`webhook_config` (``hyperpod_tenancy.webhook.config.CONFIG_VERSION``).
CONFIG_VERSION = 1


#: Pod-template annotation with the configuration's hash: a changed configuration rolls the Deployment (the
#: server reads the file once, at start).
CONFIG_HASH_ANNOTATION = labels.WEBHOOK_CONFIG_HASH_ANNOTATION


#: cert-manager Certificate (and Secret) of the webhook's own CA, and of its serving certificate.
CA_CERTIFICATE = "posix-identity-ca"


TLS_CERTIFICATE = "posix-identity-tls"


_SELF_SIGNED_ISSUER = "posix-identity-selfsigned"


#: The MutatingWebhookConfiguration, and the name of its one webhook (a fully qualified name, as the API requires).
WEBHOOK_CONFIGURATION = "hyperpod-tenancy-posix-identity"


WEBHOOK_NAME = "posix-identity.hyperpod-tenancy.io"


#: Path the API server posts AdmissionReviews to.
MUTATE_PATH = "/mutate"


#: Path of the validating webhook deciding requests that reach into a running pod.
VALIDATE_PATH = "/validate"


#: The ValidatingWebhookConfiguration's one webhook (the configuration is named :data:`WEBHOOK_CONFIGURATION`).
CONNECT_WEBHOOK_NAME = "posix-identity-connect.hyperpod-tenancy.io"


#: ClusterRole (and binding) letting the webhook read Pods and record Events.
API_ACCESS_ROLE = "hyperpod-tenancy-posix-identity-webhook"


#: Subresources whose CONNECT reaches a running container (``hyperpod_tenancy.webhook.connect``).
CONNECT_SUBRESOURCES = ("pods/exec", "pods/attach", "pods/portforward", "pods/proxy")


#: Port the server listens on in the pod (the Service exposes 443).
SERVER_PORT = 8443


#: Replicas of the Deployment (the PodDisruptionBudget keeps one available during node drains).
REPLICAS = 2


#: Plain-HTTP port of the server's Prometheus metrics (``GET`` :data:`METRICS_PATH` only): a port of its own, so
#: the TLS admission port serves nothing but the API server, and a collector needs no certificate.
METRICS_PORT = 9090


#: Name of the container port of :data:`METRICS_PORT` (collectors that select a port by name look for it).
METRICS_PORT_NAME = "metrics"


#: Path of the metrics on :data:`METRICS_PORT`.
METRICS_PATH = "/metrics"


#: The conventional scrape annotations of the webhook's pods (Prometheus' ``kubernetes_sd`` example relabelling and
#: the collectors modelled on it read them; whether the HyperPod observability add-on does is not confirmed: the
#: alert ``HyperPodTenancyWebhookMetricsMissing`` fires when no webhook series arrives).
SCRAPE_ANNOTATIONS = {
    "prometheus.io/scrape": "true",
    "prometheus.io/port": str(METRICS_PORT),
    "prometheus.io/path": METRICS_PATH,
}


# The server's metrics (``hyperpod_tenancy.webhook.metrics`` declares them; the cluster alerts read them): here,
# where both the server and the constructs can import them.
#: Counter of admission requests, labels ``path`` (:data:`MUTATE_PATH`, :data:`VALIDATE_PATH`) and ``outcome``
#: (:data:`ADMISSION_OUTCOMES`).
ADMISSION_REQUESTS_METRIC = "hyperpod_tenancy_webhook_admission_requests_total"


#: Histogram of the seconds from a request's arrival to its answer, label ``path``.
ADMISSION_DURATION_METRIC = "hyperpod_tenancy_webhook_admission_duration_seconds"


#: Counter of denials, labels ``path`` and ``reason`` (the request log's ``reason``, e.g. ``denied:unknown-role``).
ADMISSION_DENIALS_METRIC = "hyperpod_tenancy_webhook_admission_denials_total"


#: Counter of DynamoDB API calls, labels ``operation`` (``GetItem``, ``TransactWriteItems``) and ``outcome``
#: (:data:`DYNAMODB_OUTCOMES`).
DYNAMODB_CALLS_METRIC = "hyperpod_tenancy_webhook_dynamodb_calls_total"


#: Gauge: 1 while ``/readyz`` answers 200, else 0 (no labels: present from the process's start).
READY_METRIC = "hyperpod_tenancy_webhook_ready"


#: Gauge: the team namespaces served (the configuration's and the team records').
TEAM_NAMESPACES_METRIC = "hyperpod_tenancy_webhook_team_namespaces"


#: Gauge: 1 once the team records were read (always 1 without team records).
TEAM_RECORDS_LOADED_METRIC = "hyperpod_tenancy_webhook_team_records_loaded"


#: Gauge of the team namespaces the admission rules do not cover as set up (labels rewritten, no team record):
#: :mod:`hyperpod_tenancy.webhook.namespace_coverage`.
UNCOVERED_NAMESPACES_METRIC = "hyperpod_tenancy_webhook_uncovered_team_namespaces"


#: ``outcome`` of :data:`ADMISSION_REQUESTS_METRIC`: ``allowed``; ``denied`` (the webhook's decision, status code
#: below 500: who asked, or what they asked for); ``error`` (the answer was not the webhook's decision: an HTTP
#: 5xx, or a denial because a dependency failed: DynamoDB or the API server did not answer, the UID range is used
#: up; ``status.code`` 5xx); ``invalid`` (HTTP 4xx: not a well-formed AdmissionReview, too large, wrong method).
ADMISSION_OUTCOMES = ("allowed", "denied", "error", "invalid")


#: ``outcome`` of :data:`DYNAMODB_CALLS_METRIC`: ``ok``; ``canceled`` (a transaction lost an allocation race,
#: retried); ``refused`` (another error answer: throttled, access denied); ``unreachable`` (no answer).
DYNAMODB_OUTCOMES = ("ok", "canceled", "refused", "unreachable")


#: Prefix of the roles IAM Identity Center provisions for a permission set: ``AWSReservedSSO_<set>_<hash>``.
SSO_ROLE_PREFIX = "AWSReservedSSO_"


#: UID/GID the server runs as (the Dockerfile's ``webhook`` user).
_SERVER_ID = 10001


_TLS_DIR = "/tls"


_CONFIG_DIR = "/config"


def _meta(name: str, *, namespace: str | None = WEBHOOK_NAMESPACE, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {**labels.object_labels(), "app.kubernetes.io/name": DEPLOYMENT},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta
