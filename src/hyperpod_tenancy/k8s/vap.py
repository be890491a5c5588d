"""Building blocks shared by every ValidatingAdmissionPolicy the platform renders.

Every policy is cluster-scoped, applies only in team namespaces, ``failurePolicy: Fail`` explicitly, and is
written in standard CEL so that the tests can evaluate it outside Kubernetes. Team namespaces are selected by
the name the platform assigns them (:data:`~hyperpod_tenancy.policy.names.NAMESPACE_PREFIX`), in the first match
condition of every policy (:func:`team_namespace_condition`), never by a label: on Task Governance the service
owns the team namespaces, and whatever rewrote a label would switch every rule off. A label selector cannot
match a prefix, and a list of teams in a shared object would have to change with every team. :mod:`hyperpod_tenancy.k8s.admission` (workloads) and
:mod:`hyperpod_tenancy.k8s.tenant_guards` (Services, Secrets) build on these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names

__all__ = [
    "ADMISSION_API_VERSION",
    "cel_list",
    "cel_quote",
    "not_sent_by",
    "policy",
    "policy_binding",
    "team_namespace_condition",
    "team_namespace_expression",
]

#: API version of the policies and bindings (GA since Kubernetes 1.30).
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"


def cel_quote(text: str) -> str:
    """Quote ``text`` as a CEL string literal (constants of this library only: no quotes or backslashes)."""
    if "'" in text or "\\" in text:  # pragma: no cover - all inputs are constants of this library
        raise ValueError(f"cannot quote {text!r}")
    return f"'{text}'"


def cel_list(items: Sequence[str]) -> str:
    """Render ``items`` as a CEL list of string literals."""
    return "[" + ", ".join(cel_quote(i) for i in items) + "]"


def not_sent_by(name: str, usernames: Sequence[str]) -> dict[str, str]:
    """Match condition named ``name``: the request's ``userInfo.username`` is none of ``usernames``.

    Exemptions are decided by who sends the request, never by fields of the object (labels, annotations
    and owner references are written by the requester).
    """
    return {"name": name, "expression": f"!(request.userInfo.username in {cel_list(usernames)})"}


#: Name of the match condition that selects team namespaces (:func:`team_namespace_condition`).
TEAM_NAMESPACE_CONDITION = "in-a-team-namespace"


def team_namespace_expression() -> str:
    """CEL: the request is in a team namespace (its name starts with the platform's team namespace prefix).

    ``request.namespace`` is the name the API server routes the request by, empty for a cluster-scoped object;
    only the platform's team stacks (and Task Governance for them) create namespaces of that name.
    """
    return f"request.namespace.startsWith({cel_quote(names.NAMESPACE_PREFIX)})"


def team_namespace_condition() -> dict[str, str]:
    """Return the match condition that selects team namespaces by name (policies and webhooks alike)."""
    return {"name": TEAM_NAMESPACE_CONDITION, "expression": team_namespace_expression()}


def policy(
    name: str,
    *,
    rules: list[dict[str, Any]],
    match_conditions: list[dict[str, str]],
    validations: list[dict[str, str]],
) -> dict[str, Any]:
    """Render a ValidatingAdmissionPolicy on ``rules`` in team namespaces, ``failurePolicy: Fail``.

    Team namespaces are selected by :func:`team_namespace_condition`, the first match condition, ahead of
    ``match_conditions``. It carries the platform's managed-by label
    (:func:`hyperpod_tenancy.k8s.labels.object_labels`).
    """
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": labels.object_labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "matchConditions": [team_namespace_condition(), *match_conditions],
            "validations": validations,
        },
    }


def policy_binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    """Render the binding of policy ``name`` with ``validationActions`` ``actions``.

    No ``matchResources``: the binding validates whatever the policy matches, and the policy's match condition
    keeps it to team namespaces.
    """
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": labels.object_labels()},
        "spec": {
            "policyName": name,
            "validationActions": list(actions),
        },
    }
