"""POSIX identity of tenant pods: the webhook's annotations, its configuration and the policy that re-checks it.

The mutating webhook (``hyperpod_tenancy.webhook``) stamps every workload and pod template created in a team
namespace with its submitter's UID and the team's GID, and records who it resolved in the annotations below.
This module is the Kubernetes side that both the server and the constructs share (``k8s`` never imports the
webhook package):

* :data:`POSIX_USER_ANNOTATION`, :data:`POSIX_UID_ANNOTATION`, :data:`POSIX_GID_ANNOTATION`: the annotations
  the webhook writes on the workload and on each pod template's metadata;
* :data:`POSIX_IDENTITY_POLICY` (:func:`posix_identity_policies`): the ValidatingAdmissionPolicy that re-checks
  every Pod in a team namespace, whoever creates it;
* :func:`webhook_config` (the server's ``--teams`` file, parsed by ``hyperpod_tenancy.webhook.config``) and
  :func:`webhook_objects` (its Namespace, ServiceAccount, ConfigMap, cert-manager issuers and certificates,
  Deployment, PodDisruptionBudget, Service) and :func:`mutating_webhook_configuration`, which the
  ``PosixIdentityWebhook`` construct applies.

**The policy** (``Deny``, CREATE and UPDATE of ``pods`` and UPDATE of ``pods/ephemeralcontainers``) holds every
Pod to what the webhook stamps:

* it runs non-root: ``runAsNonRoot: true`` at pod level or on every container (a container-level ``false``
  overrides the pod's ``true`` and is refused), and ``runAsUser`` is never 0 where it is set;
* ``runAsGroup`` and ``fsGroup`` at pod level equal the team's GID, no container sets ``runAsGroup`` to another
  value, and ``supplementalGroups`` holds only the team's GID;
* every container, init container and ephemeral container sets ``allowPrivilegeEscalation: false`` (a setuid
  binary in the image could otherwise regain root), and the pod does not ask for a user namespace
  (``hostUsers: false`` maps its UIDs to others on the node and on ``/fsx``).

It reads the team's GID from the namespace label :data:`~hyperpod_tenancy.k8s.labels.POSIX_GID_LABEL` (which the
platform sets and tenants cannot change), so the policy is the same for every team and adding a team changes
no cluster-wide object. It has **no exemption at all**: not by owner reference, label or annotation (the
requester writes those), and not by requester either, because Pods created by controllers (job-controller,
the Kubeflow, MPI, HyperPod and KubeRay operators) are exactly what must be checked; the webhook stamps their
templates when the workload is created, so their Pods pass.

What the policy does not see: supplementary groups that the container runtime adds from the image's
``/etc/group`` for the container's user (``supplementalGroupsPolicy: Merge``, the Kubernetes default; KEP-3619
``Strict`` needs containerd 2.0 or CRI-O 1.31 on the nodes). A crafted image can list its UID in another
team's group there. Under ``posixIdentity.supplementalGroupsPolicy: auto`` the webhook sets ``Strict`` while
every node reports support (``hyperpod_tenancy.webhook.node_features``); under ``strict`` the policy also requires
it of every pod (:func:`posix_identity_policies` ``strict_groups``). See docs/posix-identity.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, labels, vap, workloads
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, SupplementalGroupsPolicy, WebhookFailurePolicy
from hyperpod_tenancy.records.posix_identity import PosixTeamRecord

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
    "CONNECT_WEBHOOK_NAME",
    "CONTAINER_FIELDS",
    "DEPLOYMENT",
    "DYNAMODB_CALLS_METRIC",
    "DYNAMODB_OUTCOMES",
    "METRICS_PATH",
    "METRICS_PORT",
    "METRICS_PORT_NAME",
    "MUTATE_PATH",
    "POSIX_GID_ANNOTATION",
    "POSIX_IDENTITY_POLICY",
    "POSIX_UID_ANNOTATION",
    "POSIX_USER_ANNOTATION",
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
    "WebhookDeployment",
    "connect_webhook_configuration",
    "mutating_webhook_configuration",
    "posix_identity_policies",
    "team_record",
    "team_records_path",
    "webhook_api_access",
    "webhook_config",
    "webhook_objects",
]

#: Who the webhook resolved as the workload's submitter: the person key, e.g. ``sso:alice@example.com``.
POSIX_USER_ANNOTATION = labels.POSIX_USER_ANNOTATION
#: The UID the webhook allocated to that person (a decimal string), the pods' ``runAsUser``.
POSIX_UID_ANNOTATION = labels.POSIX_UID_ANNOTATION
#: The team's GID (a decimal string), the pods' ``runAsGroup``, ``fsGroup`` and only supplemental group.
POSIX_GID_ANNOTATION = labels.POSIX_GID_ANNOTATION

#: Policy (and binding) re-checking the POSIX identity of every Pod in a team namespace.
POSIX_IDENTITY_POLICY = "hyperpod-tenancy-posix-identity"
#: The PodSpec fields holding containers; every one is checked.
CONTAINER_FIELDS = ("containers", "initContainers", "ephemeralContainers")

_q = vap.cel_quote
_GID_KEY = labels.POSIX_GID_LABEL
_NS_LABELS = "namespaceObject.metadata.labels"
_HAS_GID = (
    f"(has({_NS_LABELS}) && {_q(_GID_KEY)} in {_NS_LABELS} && "
    f"{_NS_LABELS}[{_q(_GID_KEY)}].matches('^[1-9][0-9]{{0,9}}$'))"
)
_GID = f"int({_NS_LABELS}[{_q(_GID_KEY)}])"
_GID_TEXT = f"({_HAS_GID} ? {_NS_LABELS}[{_q(_GID_KEY)}] : '<team GID>')"
_POD_SC = "object.spec.securityContext"


def _pod_sets(field: str) -> str:
    return f"(has({_POD_SC}) && has({_POD_SC}.{field}))"


def _container_sets(field: str) -> str:
    return f"(has(c.securityContext) && has(c.securityContext.{field}))"


def _every_container(check: str) -> str:
    """CEL: ``check`` (on ``c``) holds for every container, init container and ephemeral container."""
    return " && ".join(
        f"(!has(object.spec.{k}) || object.spec.{k}.all(c, {check}))" for k in CONTAINER_FIELDS
    )


def _in_namespace(text: str) -> str:
    """Return a messageExpression: ``text`` (CEL string expression) prefixed with the namespace."""
    return f"'pod in namespace ' + request.namespace + ': ' + {text}"


def _validations(*, strict_groups: bool = False) -> list[dict[str, str]]:
    pod_non_root = f"({_pod_sets('runAsNonRoot')} && {_POD_SC}.runAsNonRoot == true)"
    expected = f"'the team GID ' + {_GID_TEXT}"
    fix = (
        "the POSIX identity webhook sets these when the workload is created: remove your own securityContext "
        "identity fields (or set them to the values of your team) and resubmit"
    )
    return [
        {
            "expression": _HAS_GID,
            "messageExpression": (
                "'namespace ' + request.namespace + ' has no valid "
                + _GID_KEY
                + " label, so no pod can be given "
                "its team GID. The platform sets it on every team namespace: ask the platform team to redeploy the "
                "team stack.'"
            ),
            "message": f"the namespace has no valid {_GID_KEY} label; ask the platform team to redeploy the team.",
            "reason": "Forbidden",
        },
        {
            "expression": _every_container(
                f"{_container_sets('runAsNonRoot')} ? c.securityContext.runAsNonRoot == true : {pod_non_root}"
            ),
            "messageExpression": _in_namespace(
                "'runAsNonRoot must be true (in the pod securityContext, and no container may set it to false): "
                f"pods in team namespaces never run as root. {fix}.'"
            ),
            "message": "pods in team namespaces must set runAsNonRoot: true (and no container may set false).",
            "reason": "Forbidden",
        },
        {
            "expression": (
                f"(!{_pod_sets('runAsUser')} || {_POD_SC}.runAsUser != 0) && "
                + _every_container(f"!{_container_sets('runAsUser')} || c.securityContext.runAsUser != 0")
            ),
            "messageExpression": _in_namespace(
                f"'runAsUser 0 (root) is not allowed anywhere in the pod. {fix}.'"
            ),
            "message": "runAsUser 0 (root) is not allowed in team namespaces.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_HAS_GID} || ({_pod_sets('runAsGroup')} && {_POD_SC}.runAsGroup == {_GID})",
            "messageExpression": _in_namespace(
                f"'securityContext.runAsGroup must be ' + {expected} + ': files on /fsx belong to the team. {fix}.'"
            ),
            "message": "the pod securityContext.runAsGroup must be the team's GID.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_HAS_GID} || "
            + _every_container(f"!{_container_sets('runAsGroup')} || c.securityContext.runAsGroup == {_GID}"),
            "messageExpression": _in_namespace(
                f"'a container sets runAsGroup to another group than ' + {expected} + ': containers may not "
                f"override the team group. {fix}.'"
            ),
            "message": "no container may set runAsGroup to another value than the team's GID.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_HAS_GID} || ({_pod_sets('fsGroup')} && {_POD_SC}.fsGroup == {_GID})",
            "messageExpression": _in_namespace(
                f"'securityContext.fsGroup must be ' + {expected} + ': volumes are shared with the team group. "
                f"{fix}.'"
            ),
            "message": "the pod securityContext.fsGroup must be the team's GID.",
            "reason": "Forbidden",
        },
        {
            "expression": f"!{_HAS_GID} || !{_pod_sets('supplementalGroups')} || "
            f"{_POD_SC}.supplementalGroups.all(g, g == {_GID})",
            "messageExpression": _in_namespace(
                f"'securityContext.supplementalGroups may hold only ' + {expected} + ': another group would open "
                f"the files of another team on /fsx. {fix}.'"
            ),
            "message": "securityContext.supplementalGroups may hold only the team's GID.",
            "reason": "Forbidden",
        },
        {
            "expression": _every_container(
                f"{_container_sets('allowPrivilegeEscalation')} && c.securityContext.allowPrivilegeEscalation == false"
            ),
            "messageExpression": _in_namespace(
                "'every container, init container and ephemeral container must set securityContext."
                "allowPrivilegeEscalation: false (a setuid binary would otherwise regain root).'"
            ),
            "message": "every container must set allowPrivilegeEscalation: false.",
            "reason": "Forbidden",
        },
        *(_strict_groups_validations() if strict_groups else []),
        {
            "expression": "!has(object.spec.hostUsers) || object.spec.hostUsers == true",
            "messageExpression": _in_namespace(
                "'hostUsers: false (a user namespace) is not allowed: it maps the pod UIDs to other UIDs on the node "
                "and on /fsx. Remove hostUsers.'"
            ),
            "message": "hostUsers: false is not allowed in team namespaces.",
            "reason": "Forbidden",
        },
    ]


def _strict_groups_validations() -> list[dict[str, Any]]:
    """``supplementalGroupsPolicy: Strict`` at pod level (``posixIdentity.supplementalGroupsPolicy: strict``)."""
    return [
        {
            "expression": f"{_pod_sets('supplementalGroupsPolicy')} && {_POD_SC}.supplementalGroupsPolicy == 'Strict'",
            "messageExpression": _in_namespace(
                "'securityContext.supplementalGroupsPolicy must be Strict: otherwise the container runtime adds the "
                "groups the image lists in /etc/group for its user, which may be the GID of another team. Set it to "
                "Strict (the POSIX identity webhook does for the workloads it stamps).'"
            ),
            "message": "pods in team namespaces must set securityContext.supplementalGroupsPolicy: Strict.",
            "reason": "Forbidden",
        }
    ]


def posix_identity_policies(*, strict_groups: bool = False) -> list[dict[str, Any]]:
    """Return the POSIX identity ValidatingAdmissionPolicy and its ``Deny`` binding (tenant namespaces only).

    The same objects for every team: the team GID comes from the namespace label. See the module docstring.
    ``strict_groups`` (``posixIdentity.supplementalGroupsPolicy: strict``) adds the rule that every pod sets
    ``supplementalGroupsPolicy: Strict``.
    """
    rules = [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["pods"],
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
    return [
        vap.policy(
            POSIX_IDENTITY_POLICY,
            rules=rules,
            match_conditions=[
                {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"}
            ],
            validations=_validations(strict_groups=strict_groups),
        ),
        vap.policy_binding(POSIX_IDENTITY_POLICY, ["Deny"]),
    ]


# --------------------------------------------------------------------------------------------- the webhook

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


def _permission_set_name(platform: Platform, team: str) -> str:
    t = platform.team(team)
    return t.identity.permission_set_name or names.permission_set(t.name)


def webhook_config(platform: Platform) -> dict[str, Any]:
    """Return the server's configuration file (``--teams``): UIDs, exemptions, home claim, team records' path.

    Rendered from the policy only (no CDK tokens), so it can live in the cluster stack and be hashed. It lists no
    team: each team stack writes its own record (:func:`team_record`) under
    ``names.team_records_path(<cluster>, "posix-identity")``, which the server reads at run time, so adding a team
    changes neither this file nor the Deployment. ``exemptUsernames`` are the controllers of
    :data:`hyperpod_tenancy.k8s.workloads.CONTROLLERS`.
    """
    spec = platform.cluster.posix_identity
    break_glass = {} if spec.break_glass_group is None else {"breakGlassGroups": [spec.break_glass_group]}
    return {
        **break_glass,
        "version": CONFIG_VERSION,
        "uidRange": {"first": spec.uid_range.first, "last": spec.uid_range.last},
        "cacheTtlSeconds": spec.cache_ttl_seconds,
        "exemptUsernames": list(workloads.controller_usernames()),
        "home": {"mountPath": fsx_dirs.HOME_MOUNT_PATH, "claimName": FSX_CLAIM_NAME},
        "teamRecords": {"ssmPath": team_records_path(platform)},
        "supplementalGroupsPolicy": spec.supplemental_groups_policy.value,
    }


def team_records_path(platform: Platform) -> str:
    """SSM path of the webhook's team records: ``/hyperpod-tenancy/<cluster>/posix-identity/``."""
    return names.team_records_path(platform.cluster.name, "posix-identity")


def team_record(platform: Platform, team: str) -> PosixTeamRecord:
    """Return a team's record for the webhook (its team stack writes it to ``names.posix_identity_record``).

    The team's namespace, GID, LocalQueue and principal: the Identity Center role of its permission set,
    ``AWSReservedSSO_<PermissionSet>_``. The Studio execution role is not listed: a request from one is denied as
    from an unknown role (a Studio session does not name the person, see ``hyperpod_tenancy.webhook.identity``).
    Read back by ``hyperpod_tenancy.webhook.config.parse_team_record``.
    """
    t = platform.team(team)
    return PosixTeamRecord(
        namespace=names.namespace(t.name),
        team=t.name,
        gid=t.identity.posix_gid,
        local_queue=names.local_queue(t.name),
        role_name_prefix=f"{SSO_ROLE_PREFIX}{_permission_set_name(platform, t.name)}_",
    )


def _config_json(config: dict[str, Any]) -> str:
    return json.dumps(config, indent=2, sort_keys=True)


def _meta(name: str, *, namespace: str | None = WEBHOOK_NAMESPACE, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {**labels.object_labels(), "app.kubernetes.io/name": DEPLOYMENT},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    meta.update(extra)
    return meta


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
