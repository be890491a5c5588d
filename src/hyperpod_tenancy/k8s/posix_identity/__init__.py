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

from hyperpod_tenancy.k8s.posix_identity._common import (
    ADMISSION_DENIALS_METRIC,
    ADMISSION_DURATION_METRIC,
    ADMISSION_OUTCOMES,
    ADMISSION_REQUESTS_METRIC,
    API_ACCESS_ROLE,
    CA_CERTIFICATE,
    CONFIG_FILE,
    CONFIG_HASH_ANNOTATION,
    CONFIG_MAP,
    CONFIG_VERSION,
    CONNECT_WEBHOOK_NAME,
    DEPLOYMENT,
    DYNAMODB_CALLS_METRIC,
    DYNAMODB_OUTCOMES,
    METRICS_PATH,
    METRICS_PORT,
    METRICS_PORT_NAME,
    MUTATE_PATH,
    READY_METRIC,
    REPLICAS,
    SCRAPE_ANNOTATIONS,
    SERVER_PORT,
    SERVICE,
    SERVICE_ACCOUNT,
    SSO_ROLE_PREFIX,
    TEAM_NAMESPACES_METRIC,
    TEAM_RECORDS_LOADED_METRIC,
    TLS_CERTIFICATE,
    UNCOVERED_NAMESPACES_METRIC,
    VALIDATE_PATH,
    WEBHOOK_CONFIGURATION,
    WEBHOOK_NAME,
    WEBHOOK_NAMESPACE,
)
from hyperpod_tenancy.k8s.posix_identity.config import team_record, team_records_path, webhook_config
from hyperpod_tenancy.k8s.posix_identity.deployment import WebhookDeployment, webhook_objects
from hyperpod_tenancy.k8s.posix_identity.policies import (
    CONTAINER_FIELDS,
    POSIX_GID_ANNOTATION,
    POSIX_IDENTITY_POLICY,
    POSIX_UID_ANNOTATION,
    POSIX_USER_ANNOTATION,
    posix_identity_policies,
)
from hyperpod_tenancy.k8s.posix_identity.webhooks import (
    connect_webhook_configuration,
    mutating_webhook_configuration,
    webhook_api_access,
)

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
