"""The team's admission rules, checked at synth on the objects a user adds to a team.

Objects given to ``TeamTenant.add_manifest`` (or its cdk8s chart) are applied by the deploying identity, which
no policy exempts (only controllers are exempt, by ``request.userInfo``): the API server would refuse at deploy
what the team's ValidatingAdmissionPolicies refuse. This module evaluates the very policies the platform chart
renders (:func:`~hyperpod_tenancy.k8s.admission.admission_policies`, the tenant and operator guards), their
CEL run by a CEL library (``common-expression-language``, the ``[admission]`` extra; without it an object a
policy matches is refused naming the extra), in the API server's order: resource rules and
namespace selectors, match conditions, then each validation, whose ``messageExpression`` (or ``message``) says
why; the binding's ``validationActions`` decide between a refusal (``Deny``) and a warning (``Warn``).

Left to the deploy: the POSIX identity policies (they judge what the identity webhook stamps first, which has
not happened at synth), and objects in another namespace than the team's.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.operator_guards import operator_guard_policies
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.k8s.workloads import WORKLOAD_KINDS
from hyperpod_tenancy.policy import Platform, Team, names

__all__ = ["DEPLOYER", "AdmissionFinding", "check_team_objects"]

#: ``request.userInfo`` of the deploying identity (CDK's kubectl provider): no controller, no team group.
DEPLOYER: Mapping[str, Any] = {"username": "hyperpod-tenancy:deployer", "groups": ["system:authenticated"]}
#: (API group, kind) -> plural resource of every kind a platform policy matches (the rules list resources).
_RESOURCES: Mapping[tuple[str, str], str] = {
    **{(k.group, k.kind): k.resource for k in WORKLOAD_KINDS},
    ("", "Service"): "services",
    ("", "Secret"): "secrets",
}


@dataclass(frozen=True)
class AdmissionFinding:
    """One validation an object fails: the object, the policy, the rule's message and the binding's action."""

    #: ``<Kind>/<name>`` of the object.
    object: str
    #: Name of the ValidatingAdmissionPolicy.
    policy: str
    #: What the failed validation says (its ``messageExpression`` or ``message``).
    message: str
    #: ``Deny`` (the API server refuses the object) or ``Warn``.
    action: str

    def __str__(self) -> str:
        """One line: the object, the policy that refuses it and why."""
        return f"{self.object}: {self.policy} ({self.action}): {self.message}"


def _cel_engine(what: str) -> Any:
    """Return the CEL engine's module, or refuse naming the extra that installs it (unknown means refused)."""
    if importlib.util.find_spec("cel") is None:
        raise TenancyError(
            f"{what}: checking it against the team's admission policies at synth needs the CEL engine: "
            "pip install 'cdk-hyperpod-tenancy[admission]' (common-expression-language)."
        )
    return importlib.import_module("cel")


@cache
def _program(expression: str) -> Any:
    return _cel_engine("a team's admission policy").compile(expression)


def _run(expression: str, context: Any) -> Any:
    """Return what ``expression`` evaluates to, or a sentence (a ``str``) when it does not evaluate.

    The API server treats an evaluation error as a failure under ``failurePolicy: Fail``, as every platform
    policy is: the object is refused.
    """
    try:
        return _program(expression).execute(context)
    except Exception as exc:
        return f"the rule did not evaluate on this object ({exc}); the API server refuses it (failurePolicy: Fail)"


def _message(validation: Mapping[str, Any] | str, context: Any) -> str:
    """Return what a failed validation says: its ``messageExpression``, else its ``message`` (or an error)."""
    if isinstance(validation, str):
        return validation
    if "messageExpression" in validation:
        text = _run(validation["messageExpression"], context)
        if isinstance(text, str) and text:
            return text
    return str(validation.get("message") or validation["expression"])


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    if selector.get("matchExpressions"):
        raise ValueError(
            "a platform policy selects namespaces by matchExpressions, which this check does not model"
        )
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _rules_match(rules: Sequence[Mapping[str, Any]], group: str, resource: str) -> bool:
    return any(
        group in r["apiGroups"] and resource in r["resources"] and "CREATE" in r["operations"] for r in rules
    )


def check_team_objects(
    platform: Platform, team: Team, objects: Sequence[Mapping[str, Any]]
) -> list[AdmissionFinding]:
    """Evaluate the platform's admission policies on ``objects`` created in ``team``'s namespace by the deployer.

    Args:
        platform: the tenancy policy (the policies are rendered from it).
        team: the team whose namespace (and its labels: entitlements, borrowing) the objects are created in.
        objects: the objects, each with its ``metadata.namespace`` set; others than the team's are skipped.

    Returns:
        Every failed validation of every object, ``Deny`` and ``Warn`` alike, in object order.

    """
    namespace_name = names.namespace(team.name)
    labels = namespace_labels(platform, team)
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace_name, "labels": labels},
    }
    rendered = [*admission_policies(platform), *tenant_guard_policies(), *operator_guard_policies()]
    policies = {o["metadata"]["name"]: o for o in rendered if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = [o for o in rendered if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    findings: list[AdmissionFinding] = []
    for obj in objects:
        metadata = obj.get("metadata", {})
        if metadata.get("namespace") != namespace_name:
            continue
        group = str(obj.get("apiVersion", "")).rpartition("/")[0]
        resource = _RESOURCES.get((group, str(obj.get("kind"))))
        if resource is None:
            continue
        cel = _cel_engine(f"{obj.get('kind')}/{metadata.get('name')}")
        context = cel.Context(
            {
                "object": dict(obj),
                "oldObject": None,
                "namespaceObject": namespace,
                "request": {
                    "operation": "CREATE",
                    "namespace": namespace_name,
                    "resource": {"group": group, "resource": resource},
                    "subResource": "",
                    "userInfo": dict(DEPLOYER),
                    "options": {},
                },
            }
        )
        for binding in bindings:
            spec = policies[binding["spec"]["policyName"]]["spec"]
            constraints = spec["matchConstraints"]
            if not _rules_match(constraints["resourceRules"], group, resource):
                continue
            selectors = (
                constraints.get("namespaceSelector", {}),
                binding["spec"].get("matchResources", {}).get("namespaceSelector", {}),
            )
            if not all(_selector_matches(s, labels) for s in selectors):
                continue
            conditions = [_run(c["expression"], context) for c in spec.get("matchConditions", [])]
            if any(isinstance(c, str) for c in conditions):
                failed: list[Any] = [next(c for c in conditions if isinstance(c, str))]
            elif not all(c is True for c in conditions):
                continue
            else:
                failed = [v for v in spec["validations"] if _run(v["expression"], context) is not True]
            for validation in failed:
                message = _message(validation, context)
                for action in binding["spec"]["validationActions"]:
                    who = f"{obj.get('kind')}/{metadata.get('name')}"
                    findings.append(AdmissionFinding(who, binding["spec"]["policyName"], message, action))
    return findings
