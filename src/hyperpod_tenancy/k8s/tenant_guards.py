"""ValidatingAdmissionPolicies narrowing what team members may do with the Services and Secrets RBAC grants.

RBAC grants a team's group create/update on ``services`` and ``secrets`` in its namespace but cannot look at
an object's fields. Two policies close what a field can open, bound (like the workload policies of
:mod:`hyperpod_tenancy.k8s.admission`) to namespaces labelled ``hyperpod-tenancy.io/tenant: "true"``, with
``failurePolicy: Fail`` and standard CEL only:

* :data:`SERVICE_POLICY`: a Service in a tenant namespace is a ``ClusterIP`` Service (``type`` unset or
  ``ClusterIP``, headless included) without ``spec.externalIPs``.

  - ``NodePort`` (and ``LoadBalancer``, which allocates node ports too) opens a port on every node. The VPC
    CNI network-policy agent always admits traffic from a pod's own node IP (so that kubelet probes work),
    and kube-proxy forwards node-port traffic with the node's address, so a node port is a path into the
    team's pods around every other team's default-deny ingress and out to the VPC.
  - ``LoadBalancer`` additionally puts the pods on a load balancer reachable from outside the VPC; its
    ``loadBalancerSourceRanges`` only matter for that type, which is refused as a whole.
  - ``ExternalName`` is a DNS alias to any name; teams need none, and any proxy in the cluster that follows
    Services (ingress controllers, the AWS Load Balancer Controller) would be a confused deputy for it.
  - ``spec.externalIPs`` makes kube-proxy on every node capture traffic to those addresses (CVE-2020-8554,
    https://github.com/kubernetes/kubernetes/issues/97076): a team could intercept traffic of other teams
    to any IP.

  The Services the HyperPod inference operator creates for an endpoint (including a ``LoadBalancer``) pass:
  requests from its service accounts (:data:`hyperpod_tenancy.k8s.workloads.INFERENCE_OPERATORS`, decided
  by ``request.userInfo.username``, never by labels or owner references the requester writes) are not
  checked. Other controllers get no exemption: the training, MPI and KubeRay operators create ClusterIP
  (mostly headless) Services, which pass, and a KubeRay head ``serviceType: NodePort`` is refused like a
  team member's.
* :data:`SECRET_POLICY`: no Secret of type ``kubernetes.io/service-account-token``. The token controller
  fills such a Secret with a token that never expires for any ServiceAccount of the namespace
  (https://kubernetes.io/docs/concepts/configuration/secret/#serviceaccount-token-secrets), which would
  undo withholding ``serviceaccounts/token`` from teams. Only kube-controller-manager (whose token
  controller maintains such Secrets; ``system:kube-controller-manager``) is exempt.

* :data:`CONFIG_OWNER_POLICY`: a ConfigMap or Secret is its creator's. Pods read them (``envFrom``, a mounted
  script), so a teammate who edited one a teammate's pods read would run their edit as that teammate. The
  POSIX identity webhook records who created each (annotation ``hyperpod-tenancy.io/created-by``, the
  requester's ``request.userInfo.username``) and keeps the record on every UPDATE; this policy requires the
  record at CREATE to name the requester, lets only that requester UPDATE or DELETE the object unless it was
  created with the label ``hyperpod-tenancy.io/team-shared: "true"`` (then any teammate may), and refuses a
  change of the record or of that label. An object without a record (``kube-root-ca.crt``, or one made before
  the record existed) may be changed only by the controllers (:data:`CONFIG_CONTROLLERS`).

Related holes closed by RBAC, not here: teams have no verbs on ``endpoints``/``endpointslices`` (a
selector-less Service with hand-written endpoints would reach any address) nor on ``services/status``
(``status.loadBalancer.ingress``, the other half of CVE-2020-8554).
"""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import labels, vap, workloads

__all__ = [
    "CONFIG_CONTROLLERS",
    "CONFIG_OWNER_POLICY",
    "SECRET_POLICY",
    "SERVICE_ACCOUNT_TOKEN_TYPE",
    "SERVICE_POLICY",
    "TOKEN_CONTROLLER_USERNAME",
    "tenant_guard_policies",
]

#: Policy (and binding) limiting tenant Services to ClusterIP without external IPs.
SERVICE_POLICY = "hyperpod-tenancy-tenant-services"
#: Policy (and binding) refusing service-account token Secrets in tenant namespaces.
SECRET_POLICY = "hyperpod-tenancy-tenant-secrets"  # noqa: S105 - a policy name, not a secret
#: Secret type whose data the token controller fills with a non-expiring ServiceAccount token.
SERVICE_ACCOUNT_TOKEN_TYPE = "kubernetes.io/service-account-token"  # noqa: S105 - a Secret type
#: Identity of kube-controller-manager's own client, under which its token controller runs.
TOKEN_CONTROLLER_USERNAME = "system:kube-controller-manager"  # noqa: S105 - a user name


#: Policy (and binding) keeping a ConfigMap or Secret its creator's.
CONFIG_OWNER_POLICY = "hyperpod-tenancy-tenant-config-owners"
#: Who may change a ConfigMap or Secret whatever its record: the controllers of the workload table (the MPI
#: operator's hostfile, the garbage collector) and two of kube-controller-manager's (their service accounts on
#: EKS, ``--use-service-account-credentials``): the root CA publisher, which writes ``kube-root-ca.crt`` into every
#: namespace, and the namespace controller, which deletes a namespace's contents.
CONFIG_CONTROLLERS: tuple[str, ...] = (
    *workloads.controller_usernames(),
    "system:serviceaccount:kube-system:root-ca-cert-publisher",
    "system:serviceaccount:kube-system:namespace-controller",
)

_q = vap.cel_quote


def _rules(resource: str) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": [resource],
            "scope": "Namespaced",
        }
    ]


def _service_validations() -> list[dict[str, str]]:
    return [
        {
            "expression": "!has(object.spec.type) || object.spec.type == 'ClusterIP'",
            "messageExpression": (
                "'Service ' + object.metadata.name + ' has spec.type ' + object.spec.type + ': tenant "
                "namespaces allow only ClusterIP Services (NodePort and LoadBalancer open ports on every node "
                "and around the network policies of other teams; ExternalName aliases any host). Remove spec.type "
                "or set it to ClusterIP; to expose an inference endpoint, let the HyperPod inference operator "
                "create its load balancer.'"
            ),
            "message": "tenant namespaces allow only ClusterIP Services: remove spec.type or set it to ClusterIP.",
            "reason": "Forbidden",
        },
        {
            "expression": "!has(object.spec.externalIPs) || size(object.spec.externalIPs) == 0",
            "messageExpression": (
                "'Service ' + object.metadata.name + ' sets spec.externalIPs: kube-proxy on every node would "
                "capture traffic to those addresses, including those of other teams (CVE-2020-8554). Remove "
                "spec.externalIPs.'"
            ),
            "message": "spec.externalIPs is not allowed in tenant namespaces (CVE-2020-8554): remove it.",
            "reason": "Forbidden",
        },
    ]


def _secret_validations() -> list[dict[str, str]]:
    return [
        {
            "expression": f"!has(object.type) || object.type != {_q(SERVICE_ACCOUNT_TOKEN_TYPE)}",
            "messageExpression": (
                f"'Secret ' + object.metadata.name + ' has type {SERVICE_ACCOUNT_TOKEN_TYPE}: its token "
                "would never expire and would act as a ServiceAccount of the namespace. Pods get their "
                "identity from EKS Pod Identity; use type Opaque for your own credentials.'"
            ),
            "message": (
                f"Secrets of type {SERVICE_ACCOUNT_TOKEN_TYPE} are not allowed in tenant namespaces: use Opaque."
            ),
            "reason": "Forbidden",
        },
    ]


def _meta_value(obj: str, field: str, key: str) -> str:
    """CEL: ``obj.metadata.<field>[key]``, or ``''`` when absent."""
    return f"((has({obj}.metadata.{field}) && {_q(key)} in {obj}.metadata.{field}) ? {obj}.metadata.{field}[{_q(key)}] : '')"


def _config_owner_validations() -> list[dict[str, str]]:
    def creator(obj: str) -> str:
        return _meta_value(obj, "annotations", labels.CREATED_BY_ANNOTATION)

    def shared(obj: str) -> str:
        return f"({_meta_value(obj, 'labels', labels.TEAM_SHARED_LABEL)} == 'true')"

    what = "request.resource.resource == 'secrets' ? 'Secret ' : 'ConfigMap '"
    return [
        {
            "expression": f"request.operation != 'CREATE' || {creator('object')} == request.userInfo.username",
            "messageExpression": f"({what}) + object.metadata.name + ' carries no record of who created it (annotation "
            f"{labels.CREATED_BY_ANNOTATION}, which the POSIX identity webhook writes): it cannot be created "
            "while the webhook does not answer. Retry; if it persists, tell the platform team.'",
            "message": f"the {labels.CREATED_BY_ANNOTATION} record must name the requester at CREATE.",
            "reason": "Forbidden",
        },
        {
            "expression": f"request.operation == 'CREATE' || ({creator('oldObject')} != '' && "
            f"({creator('oldObject')} == request.userInfo.username || {shared('oldObject')}))",
            "messageExpression": f"({what}) + oldObject.metadata.name + ' was created by ' + "
            f"({creator('oldObject')} == '' ? 'nobody on record' : {creator('oldObject')}) + ': only they may "
            "change or delete it, because pods that read it run as them. Ask them, or create your own; a "
            f'ConfigMap or Secret for the whole team is created with the label {labels.TEAM_SHARED_LABEL}: "true".\'',
            "message": "only the creator of a ConfigMap or Secret may change or delete it (unless it is team-shared).",
            "reason": "Forbidden",
        },
        {
            "expression": f"request.operation != 'UPDATE' || ({creator('object')} == {creator('oldObject')} && "
            f"{shared('object')} == {shared('oldObject')})",
            "messageExpression": f"({what}) + object.metadata.name + ': the {labels.CREATED_BY_ANNOTATION} "
            f"record and the {labels.TEAM_SHARED_LABEL} label are set at creation and never change. Create a "
            "new object instead.'",
            "message": "the creator record and the team-shared label of a ConfigMap or Secret never change.",
            "reason": "Forbidden",
        },
    ]


def tenant_guard_policies() -> list[dict[str, Any]]:
    """Return the Service, Secret and config-owner policies and their ``Deny`` bindings (the same on every platform)."""
    inference_operators = tuple(c.username for c in workloads.INFERENCE_OPERATORS)
    return [
        vap.policy(
            SERVICE_POLICY,
            rules=_rules("services"),
            match_conditions=[vap.not_sent_by("not-an-exempt-controller", inference_operators)],
            validations=_service_validations(),
        ),
        vap.policy_binding(SERVICE_POLICY, ["Deny"]),
        vap.policy(
            SECRET_POLICY,
            rules=_rules("secrets"),
            match_conditions=[vap.not_sent_by("not-an-exempt-controller", (TOKEN_CONTROLLER_USERNAME,))],
            validations=_secret_validations(),
        ),
        vap.policy_binding(SECRET_POLICY, ["Deny"]),
        vap.policy(
            CONFIG_OWNER_POLICY,
            rules=[
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE", "UPDATE", "DELETE"],
                    "resources": ["configmaps", "secrets"],
                    "scope": "Namespaced",
                }
            ],
            match_conditions=[vap.not_sent_by("not-a-controller", CONFIG_CONTROLLERS)],
            validations=_config_owner_validations(),
        ),
        vap.policy_binding(CONFIG_OWNER_POLICY, ["Deny"]),
    ]
