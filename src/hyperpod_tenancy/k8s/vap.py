"""Building blocks shared by every ValidatingAdmissionPolicy the platform renders.

Every policy is cluster-scoped, bound only to tenant namespaces (label ``hyperpod-tenancy.io/tenant:
"true"``), ``failurePolicy: Fail`` explicitly, and written in standard CEL so that the tests can evaluate
it outside Kubernetes. :mod:`hyperpod_tenancy.k8s.admission` (workloads) and
:mod:`hyperpod_tenancy.k8s.tenant_guards` (Services, Secrets) build on these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels

__all__ = [
    "ADMISSION_API_VERSION",
    "cel_list",
    "cel_quote",
    "not_sent_by",
    "policy",
    "policy_binding",
    "tenant_namespace_selector",
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


def tenant_namespace_selector() -> dict[str, Any]:
    """Label selector of tenant namespaces (``hyperpod-tenancy.io/tenant: "true"``)."""
    return {"matchLabels": {labels.TENANT_LABEL: "true"}}


def policy(
    name: str,
    *,
    rules: list[dict[str, Any]],
    match_conditions: list[dict[str, str]],
    validations: list[dict[str, str]],
) -> dict[str, Any]:
    """Render a ValidatingAdmissionPolicy on ``rules`` in tenant namespaces, ``failurePolicy: Fail``.

    It carries the platform's managed-by label (:func:`hyperpod_tenancy.k8s.labels.object_labels`).
    """
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": labels.object_labels()},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"namespaceSelector": tenant_namespace_selector(), "resourceRules": rules},
            "matchConditions": match_conditions,
            "validations": validations,
        },
    }


def policy_binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    """Render the binding of policy ``name`` to tenant namespaces with ``validationActions`` ``actions``."""
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": labels.object_labels()},
        "spec": {
            "policyName": name,
            "validationActions": list(actions),
            "matchResources": {"namespaceSelector": tenant_namespace_selector()},
        },
    }
