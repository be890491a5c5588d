"""Warnings with stable IDs, and precise acknowledgments of cdk-nag (policy validation) findings.

CDK matches an acknowledgment to a finding by its exact ID, and cdk-nag's IAM findings are granular
(``AwsSolutions-IAM5[Resource::<Bucket.Arn>/teams/*]``). The helpers below compute those IDs from the
resources themselves (rendering intrinsics the way cdk-nag does), so every acknowledgment names one finding
on one construct, with a reason, and a new wildcard added later is reported instead of silently accepted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct, IValidation

#: Prefix of every warning ID this library emits; acknowledge one with
#: ``Annotations.of(scope).acknowledge_warning("hyperpod-tenancy:<CODE>")``.
WARNING_PREFIX = "hyperpod-tenancy:"
T = TypeVar("T")


def warn(scope: IConstruct, code: str, message: str) -> None:
    """Emit a synth-time warning with a stable, acknowledgeable ID (``hyperpod-tenancy:<code>``)."""
    cdk.Annotations.of(scope).add_warning_v2(f"{WARNING_PREFIX}{code}", f"{message} [{WARNING_PREFIX}{code}]")


def acknowledge(scope: IConstruct, rule_ids: str | Iterable[str], reason: str) -> None:
    """Acknowledge findings (exact IDs) on ``scope`` and its children, with the reason."""
    ids = [rule_ids] if isinstance(rule_ids, str) else list(rule_ids)
    for rule_id in ids:
        cdk.Validations.of(scope).acknowledge(cdk.Acknowledgment(id=rule_id, reason=reason))


def _cfn(construct: IConstruct, cls: type[T]) -> T:
    child = construct.node.default_child
    if not isinstance(child, cls):
        raise TypeError(f"{construct.node.path}: expected a {cls.__name__} default child")
    return child


def _render(value: Any) -> str:
    """Render a resolved CloudFormation value the way cdk-nag prints it in finding IDs."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Fn::Join":
            sep, parts = arg
            return str(sep).join(_render(p) for p in parts)
        if key == "Ref":
            return f"<{arg}>"
        if key == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if key == "Fn::ImportValue":
            return _render(arg)
    return json.dumps(value, separators=(",", ":"))


def managed_policy_findings(role: iam.Role) -> list[str]:
    """IDs of the AwsSolutions-IAM4 findings for every AWS managed policy attached to ``role``."""
    stack = cdk.Stack.of(role)
    cfn = _cfn(role, iam.CfnRole)
    arns = stack.resolve(cfn.managed_policy_arns) or []
    return [f"AwsSolutions-IAM4[Policy::{_render(arn)}]" for arn in arns]


def wildcard_findings(policy: iam.Policy | iam.CfnPolicy) -> list[str]:
    """IDs of the AwsSolutions-IAM5 findings for every wildcard action/resource in ``policy`` as it is now."""
    cfn = _cfn(policy, iam.CfnPolicy) if isinstance(policy, iam.Policy) else policy
    return _document_wildcards(cdk.Stack.of(policy).resolve(cfn.policy_document))


def inline_wildcard_findings(role: iam.Role) -> list[str]:
    """IDs of the AwsSolutions-IAM5 findings in the inline policies of ``role`` as they are now."""
    cfn = _cfn(role, iam.CfnRole)
    found: list[str] = []
    for policy in cdk.Stack.of(role).resolve(cfn.policies) or []:
        document = policy.get("PolicyDocument") or policy.get("policyDocument") or {}
        found += _document_wildcards(document)
    return list(dict.fromkeys(found))


def _document_wildcards(document: dict[str, Any]) -> list[str]:
    found: list[str] = []
    for statement in document.get("Statement", []):
        actions = statement.get("Action", [])
        for action in [actions] if isinstance(actions, str) else actions:
            if "*" in action:
                found.append(f"AwsSolutions-IAM5[Action::{action}]")
        resources = statement.get("Resource", [])
        for resource in [resources] if isinstance(resources, (str, dict)) else resources:
            rendered = _render(resource)
            if "*" in rendered:
                found.append(f"AwsSolutions-IAM5[Resource::{rendered}]")
    return list(dict.fromkeys(found))


@jsii.implements(IValidation)
class _AcknowledgeRoleFindings:
    """Computes a role's finding IDs during synthesis, after cross-stack references became imports.

    Construct validations run after references are resolved and before policy-validation plugins read the
    acknowledgments, so the IDs match exactly what cdk-nag reports.
    """

    def __init__(self, role: iam.Role, managed_policies: str | None, wildcards: str | None) -> None:
        self._role = role
        self._managed_policies = managed_policies
        self._wildcards = wildcards

    def validate(self) -> list[str]:
        role = self._role
        if self._managed_policies:
            acknowledge(role, managed_policy_findings(role), self._managed_policies)
        if self._wildcards:
            acknowledge(role, inline_wildcard_findings(role), self._wildcards)
            default_policy = role.node.try_find_child("DefaultPolicy")
            if isinstance(default_policy, iam.Policy):
                acknowledge(default_policy, wildcard_findings(default_policy), self._wildcards)
        return []


def acknowledge_role(
    role: iam.Role, *, managed_policies: str | None = None, wildcards: str | None = None
) -> None:
    """Acknowledge the managed-policy and/or wildcard findings of ``role`` (inline and default policy).

    Each kind of finding gets its reason. The IDs are computed at synthesis, from the role's final policies.
    """
    role.node.add_validation(_AcknowledgeRoleFindings(role, managed_policies, wildcards))


def acknowledge_cdk_handlers(scope: IConstruct, reason: str) -> None:
    """Acknowledge the findings of a subtree that CDK itself creates.

    Covers the kubectl provider, bucket deployment and custom-resource provider framework: managed Lambda
    policies, handler wildcards and Lambda runtimes that CDK pins. Only use it on such subtrees, never on
    constructs of this library.
    """
    for node in scope.node.find_all():
        if isinstance(node, iam.Role):
            acknowledge(node, managed_policy_findings(node), reason)
        elif isinstance(node, iam.Policy):
            acknowledge(node, wildcard_findings(node), reason)
        elif isinstance(node, lambda_.CfnFunction):
            acknowledge(node, "AwsSolutions-L1", reason)
