"""Evaluate ValidatingAdmissionPolicies offline with a standard CEL engine (``common-expression-language``).

Mirrors the API server's order: resource rules and namespace selectors (policy and binding), then every
match condition, then each validation; a failed validation reports its ``messageExpression`` (falling back
to ``message``) and the binding's ``validationActions`` decide whether it denies or warns.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import cel

#: CEL functions and macros that every standard engine evaluates (no Kubernetes-only libraries).
STANDARD_CEL_FUNCTIONS = frozenset(
    {
        "has",
        "startsWith",
        "endsWith",
        "contains",
        "matches",
        "exists",
        "all",
        "exists_one",
        "size",
        "filter",
        "map",
        # the type conversions of the CEL specification (language-definition.md, "Type Conversions")
        "int",
        "string",
    }
)
#: ``request.userInfo`` of a person in a team's group (the default requester).
TEAM_MEMBER: Mapping[str, Any] = {
    "username": "arn:aws:sts::111122223333:assumed-role/AWSReservedSSO_Research_0123456789abcdef/alice",
    "groups": ["hyperpod-ns-research-namespace-level-group", "system:authenticated"],
}
#: Where :func:`evaluate_policies` records each request it judges (a directory; one JSON-lines file a process),
#: for the differential test that replays them on the real API server (``tests/test_cluster_admission_replay.py``).
RECORD_DIR = "HYPERPOD_TENANCY_RECORD_ADMISSION"
POLICY_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_STRING = re.compile(r"'[^']*'")


def functions_used(expression: str) -> set[str]:
    """Names of the functions and macros an expression calls (string literals ignored)."""
    return set(_CALL.findall(_STRING.sub("''", expression)))


@dataclass
class PolicyOutcome:
    """What one matched policy decided."""

    policy: str
    actions: list[str]
    failures: list[str] = field(default_factory=list)


@dataclass
class AdmissionDecision:
    """Combined outcome of every policy for one request."""

    outcomes: list[PolicyOutcome]

    @property
    def denied(self) -> list[str]:
        """Messages of failed validations bound with ``Deny``."""
        return [m for o in self.outcomes if "Deny" in o.actions for m in o.failures]

    @property
    def warnings(self) -> list[str]:
        """Messages of failed validations bound with ``Warn``."""
        return [m for o in self.outcomes if "Warn" in o.actions for m in o.failures]

    @property
    def allowed(self) -> bool:
        """Whether the request is admitted."""
        return not self.denied

    def policies(self) -> set[str]:
        """Names of the policies that matched the request."""
        return {o.policy for o in self.outcomes}

    def failed_policies(self) -> set[str]:
        """Names of the policies that matched and failed (denied or warned)."""
        return {o.policy for o in self.outcomes if o.failures}


def _selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    assert not selector.get("matchExpressions"), "simulator only models matchLabels"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def _rule_matches(rules: Sequence[Mapping[str, Any]], group: str, resource: str, operation: str) -> bool:
    return any(
        group in r["apiGroups"] and resource in r["resources"] and operation in r["operations"] for r in rules
    )


@cache
def _program(expression: str) -> cel.Program:
    """The expression compiled once: every request of the session evaluates the same few hundred."""
    return cel.compile(expression)


def _evaluate(expression: str, context: cel.Context) -> Any:
    return _program(expression).execute(context)


def _match(spec: Mapping[str, Any], context: cel.Context, outcome: PolicyOutcome) -> bool:
    """Whether every match condition holds; one that errors refuses the request (``failurePolicy: Fail``)."""
    for condition in spec.get("matchConditions", []):
        try:
            result = _evaluate(condition["expression"], context)
        except Exception as error:  # any evaluation error is the server's "resulted in error"
            if spec.get("failurePolicy", "Fail") == "Fail":
                outcome.failures.append(f"match condition {condition['name']} resulted in error: {error}")
            return False
        if result is not True:
            return False
    return True


def evaluate_policies(
    objects: Sequence[Mapping[str, Any]],
    *,
    obj: Mapping[str, Any],
    namespace: Mapping[str, Any],
    group: str,
    resource: str,
    operation: str = "CREATE",
    user_info: Mapping[str, Any] | None = None,
    old_object: Mapping[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
) -> AdmissionDecision:
    """Evaluate every policy/binding pair in ``objects`` for one request on ``obj`` in ``namespace``.

    ``user_info`` is ``request.userInfo`` (``username``, ``groups``); default: a team member.
    ``resource`` may name a subresource (``pods/ephemeralcontainers``): rules match it whole, and the request
    carries ``resource.resource`` and ``subResource`` apart, as the API server's does. ``old_object`` is
    ``oldObject`` of an ``UPDATE``. For ``DELETE``, ``obj`` is the object being deleted: the API server passes it as
    ``oldObject`` with ``object`` null, and the ``DeleteOptions`` as ``request.options``
    (``staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/filter.go``, ``CreateAdmissionRequest``);
    ``options`` are those ``DeleteOptions`` fields (none: an empty ``DeleteOptions``).
    """
    policies = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"}
    bindings = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    ns_labels = namespace["metadata"].get("labels", {})
    base, _, subresource = resource.partition("/")
    current: Mapping[str, Any] | None = obj
    old = old_object
    request_options: dict[str, Any] = dict(options or {})
    if operation == "DELETE":
        assert old_object is None, "for DELETE, pass the object being deleted as obj"
        current, old = None, obj
        request_options = {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", **request_options}
    context = {
        "object": current,
        "oldObject": old,
        "namespaceObject": namespace,
        "request": {
            "operation": operation,
            "namespace": namespace["metadata"]["name"],
            "resource": {"group": group, "resource": base},
            "subResource": subresource,
            "userInfo": dict(user_info) if user_info is not None else dict(TEAM_MEMBER),
            "options": request_options,
        },
    }
    # converted to CEL values once for the request, not once per expression; the API server gives match
    # conditions no namespaceObject (k8s.io/apiserver admission/plugin/webhook/matchconditions: ForInput is
    # passed no namespace)
    cel_context = cel.Context(context)
    match_context = cel.Context({k: v for k, v in context.items() if k != "namespaceObject"})
    outcomes = []
    for binding in bindings:
        policy = policies[binding["spec"]["policyName"]]
        spec = policy["spec"]
        constraints = spec["matchConstraints"]
        if not _rule_matches(constraints["resourceRules"], group, resource, operation):
            continue
        if not _selector_matches(constraints.get("namespaceSelector", {}), ns_labels):
            continue
        if not _selector_matches(
            binding["spec"].get("matchResources", {}).get("namespaceSelector", {}), ns_labels
        ):
            continue
        outcome = PolicyOutcome(policy["metadata"]["name"], list(binding["spec"]["validationActions"]))
        matched = _match(spec, match_context, outcome)
        if not matched:
            if outcome.failures:
                outcomes.append(outcome)
            continue
        for validation in spec["validations"]:
            result = _evaluate(validation["expression"], cel_context)
            assert isinstance(result, bool), f"{validation['expression']} returned {result!r}"
            if not result:
                message = validation.get("message", "")
                if "messageExpression" in validation:
                    message = _evaluate(validation["messageExpression"], cel_context)
                    assert isinstance(message, str) and message
                outcome.failures.append(message)
        outcomes.append(outcome)
    decision = AdmissionDecision(outcomes)
    if os.environ.get(RECORD_DIR):
        _record(objects, context, decision)
    return decision


def _record(
    objects: Sequence[Mapping[str, Any]], context: Mapping[str, Any], decision: AdmissionDecision
) -> None:
    """Append one judged request and its verdict to this process's file; the policies it was judged by are kept
    once, under their digest (:func:`policy_digest`)."""
    policies = [o for o in objects if o["kind"] in POLICY_KINDS]
    digest = policy_digest(policies)
    folder = Path(os.environ[RECORD_DIR])
    kept = folder / f"policies-{digest}.json"
    if not kept.exists():
        kept.write_text(json.dumps(policies))
    case = {
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0],
        "policies": digest,
        "context": context,
        "denied": {o.policy: o.failures for o in decision.outcomes if "Deny" in o.actions and o.failures},
    }
    with (folder / f"{os.getpid()}.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(case, default=str) + "\n")


def policy_digest(policies: Sequence[Mapping[str, Any]]) -> str:
    """A digest naming one set of policies and bindings, whatever their order."""
    kept = sorted(json.dumps(p, sort_keys=True) for p in policies if p["kind"] in POLICY_KINDS)
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()[:16]
