"""The POSIX identity admission policy: what runs in a team namespace runs as the person's UID and the team's GID."""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.k8s import labels, vap

__all__ = [
    "CONTAINER_FIELDS",
    "POSIX_GID_ANNOTATION",
    "POSIX_IDENTITY_POLICY",
    "POSIX_UID_ANNOTATION",
    "POSIX_USER_ANNOTATION",
    "posix_identity_policies",
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
