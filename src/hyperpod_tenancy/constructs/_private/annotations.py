"""Warnings with stable IDs, and precise acknowledgments of cdk-nag and checkov findings.

CDK matches an acknowledgment to a finding by its exact ID, and cdk-nag's IAM findings are granular
(``AwsSolutions-IAM5[Resource::<Bucket.Arn>/teams/*]``). The helpers below compute those IDs from the
resources themselves (rendering intrinsics the way cdk-nag does), so every acknowledgment names one finding
on one construct, with a reason, and a new wildcard added later is reported instead of silently accepted.

checkov reads skips from the resource's own metadata (``Metadata.checkov.skip: [{id, comment}]``,
https://www.checkov.io/2.Basics/Suppressing%20and%20Skipping%20Policies.html, "CloudFormation"):
:func:`skip_checkov` writes them on the resources of ``scope`` that a check applies to, and
:func:`acknowledge` records a cdk-nag acknowledgment and checkov skips of the same concern in one call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeVar

import aws_cdk as cdk
import jsii
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct, IValidation

from hyperpod_tenancy.constructs._private.memo import once, stack_of

#: Prefix of every warning ID this library emits; acknowledge one with
#: ``Annotations.of(scope).acknowledge_warning("hyperpod-tenancy:<CODE>")``.
WARNING_PREFIX = "hyperpod-tenancy:"
T = TypeVar("T")
#: Resource types each checkov check skipped in this library applies to (checkov's CloudFormation checks,
#: ``checkov/cloudformation/checks/resource/aws/<Check>.py`` ``supported_resources``). A skip names its check
#: here so that it lands on exactly the resources the check reads, and an unknown ID is an error.
CHECKOV_RESOURCE_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "CKV_AWS_18": ("AWS::S3::Bucket",),  # S3AccessLogs
    "CKV_AWS_111": ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"),  # IAMWriteAccess
    "CKV_AWS_115": (
        "AWS::Lambda::Function",
        "AWS::Serverless::Function",
    ),  # LambdaFunctionLevelConcurrentExecutionLimit
    "CKV_AWS_116": ("AWS::Lambda::Function", "AWS::Serverless::Function"),  # LambdaDLQConfigured
    "CKV_AWS_117": ("AWS::Lambda::Function", "AWS::Serverless::Function"),  # LambdaInVPC
    "CKV_AWS_119": ("AWS::DynamoDB::Table",),  # DynamoDBTablesEncrypted
    "CKV_AWS_158": ("AWS::Logs::LogGroup",),  # CloudWatchLogGroupKMSKey
    "CKV_AWS_173": (
        "AWS::Lambda::Function",
        "AWS::Serverless::Function",
    ),  # LambdaEnvironmentEncryptionSettings
    "CKV_AWS_187": ("AWS::SageMaker::Domain",),  # SagemakerDomainEncryptedWithCMK
}
#: Metadata key checkov reads skips from.
CHECKOV_METADATA_KEY = "checkov"


def warn(scope: IConstruct, code: str, message: str) -> None:
    """Emit a synth-time warning with a stable, acknowledgeable ID (``hyperpod-tenancy:<code>``)."""
    cdk.Annotations.of(scope).add_warning_v2(f"{WARNING_PREFIX}{code}", f"{message} [{WARNING_PREFIX}{code}]")


def acknowledge(
    scope: IConstruct, rule_ids: str | Iterable[str], reason: str, *, checkov: str | Iterable[str] = ()
) -> None:
    """Acknowledge findings (exact IDs) on ``scope`` and its children, with the reason.

    ``checkov``: checkov checks of the same concern, skipped with the same reason (:func:`skip_checkov`).
    """
    if acknowledgments := [cdk.Acknowledgment(id=rule_id, reason=reason) for rule_id in _ids(rule_ids)]:
        cdk.Validations.of(scope).acknowledge(*acknowledgments)
    if checkov:
        skip_checkov(scope, checkov, reason)


def _ids(ids: str | Iterable[str]) -> list[str]:
    return [ids] if isinstance(ids, str) else list(ids)


def skip_checkov(scope: IConstruct, check_ids: str | Iterable[str], reason: str) -> None:
    """Skip checkov checks, with the reason, on every resource of ``scope`` (itself included) they apply to.

    Writes ``Metadata.checkov.skip: [{id, comment}]``, merged with skips already recorded (same ID: the new
    comment wins).

    Raises:
        ValueError: an ID missing from :data:`CHECKOV_RESOURCE_TYPES`, an empty reason, or no resource of
            ``scope`` the check applies to (a skip that would silence nothing is a mistake).

    """
    skip_checkov_each(scope, dict.fromkeys(_ids(check_ids), reason))


def skip_checkov_each(scope: IConstruct, reasons: Mapping[str, str]) -> None:
    """Skip several checkov checks on the resources of ``scope``, each with its own reason (check ID → reason).

    The same as one :func:`skip_checkov` per check, with the subtree walked once and each resource's metadata
    read and written once.

    Raises:
        ValueError: as :func:`skip_checkov`.

    """
    if not all(reason.strip() for reason in reasons.values()):
        raise ValueError(f"{scope.node.path}: a checkov skip needs a reason")
    resources = [
        (n, _resource_type(n))
        for n in ([scope] if isinstance(scope, cdk.CfnResource) else scope.node.find_all())
        if isinstance(n, cdk.CfnResource)
    ]
    skips: dict[int, tuple[cdk.CfnResource, dict[str, str]]] = {}
    for check_id, reason in reasons.items():
        types = CHECKOV_RESOURCE_TYPES.get(check_id)
        if types is None:
            raise ValueError(
                f"{scope.node.path}: unknown checkov check {check_id!r}; add it to CHECKOV_RESOURCE_TYPES with the "
                "resource types it reads"
            )
        targets = [resource for resource, resource_type in resources if resource_type in types]
        if not targets:
            raise ValueError(f"{scope.node.path}: no {'/'.join(types)} to skip {check_id} on")
        for resource in targets:
            skips.setdefault(id(resource), (resource, {}))[1][check_id] = reason
    for resource, new in skips.values():
        _record_checkov_skips(resource, new)


#: CloudFormation type of each generated L1 class (a class constant: read once, not once per resource).
_L1_TYPES: dict[type, str] = {}


def _resource_type(resource: cdk.CfnResource) -> str:
    cls = type(resource)
    if (found := _L1_TYPES.get(cls)) is not None:
        return found
    found = resource.cfn_resource_type
    # only a generated L1 class (aws_cdk's, with its CFN_RESOURCE_TYPE_NAME) has one type for all its instances
    if cls.__module__.startswith("aws_cdk.") and "CFN_RESOURCE_TYPE_NAME" in vars(cls):
        _L1_TYPES[cls] = found
    return found


def _record_checkov_skips(resource: cdk.CfnResource, new: Mapping[str, str]) -> None:
    current = resource.get_metadata(CHECKOV_METADATA_KEY) or {}
    skips = [s for s in current.get("skip", []) if s["id"] not in new]
    skips += [{"id": check_id, "comment": reason} for check_id, reason in new.items()]
    resource.add_metadata(CHECKOV_METADATA_KEY, {**current, "skip": sorted(skips, key=lambda s: s["id"])})


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
    cfn = _cfn(role, iam.CfnRole)
    arns = stack_of(role).resolve(cfn.managed_policy_arns) or []
    return [f"AwsSolutions-IAM4[Policy::{_render(arn)}]" for arn in arns]


def wildcard_findings(policy: iam.Policy | iam.CfnPolicy) -> list[str]:
    """IDs of the AwsSolutions-IAM5 findings for every wildcard action/resource in ``policy`` as it is now."""
    cfn = _cfn(policy, iam.CfnPolicy) if isinstance(policy, iam.Policy) else policy
    return _document_wildcards(stack_of(policy).resolve(cfn.policy_document))


def inline_wildcard_findings(role: iam.Role) -> list[str]:
    """IDs of the AwsSolutions-IAM5 findings in the inline policies of ``role`` as they are now."""
    cfn = _cfn(role, iam.CfnRole)
    found: list[str] = []
    for policy in stack_of(role).resolve(cfn.policies) or []:
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
    """Computes the finding IDs of a stack's roles during synthesis, after cross-stack references became imports.

    Construct validations run after references are resolved and before policy-validation plugins read the
    acknowledgments, so the IDs match exactly what cdk-nag reports. One per stack, for all its roles: each
    validation is a call from the CDK back into Python at synthesis.
    """

    def __init__(self) -> None:
        #: Each role, with the reason for its managed policies and for its wildcards.
        self.roles: list[tuple[iam.Role, str | None, str | None]] = []

    def validate(self) -> list[str]:
        for role, managed_policies, wildcards in self.roles:
            if managed_policies:
                acknowledge(role, managed_policy_findings(role), managed_policies)
            if wildcards:
                acknowledge(role, inline_wildcard_findings(role), wildcards)
                default_policy = role.node.try_find_child("DefaultPolicy")
                if isinstance(default_policy, iam.Policy):
                    acknowledge(default_policy, wildcard_findings(default_policy), wildcards)
        return []


def _role_findings(stack: cdk.Stack) -> _AcknowledgeRoleFindings:
    validation = _AcknowledgeRoleFindings()
    stack.node.add_validation(validation)
    return validation


def acknowledge_role(
    role: iam.Role, *, managed_policies: str | None = None, wildcards: str | None = None
) -> None:
    """Acknowledge the managed-policy and/or wildcard findings of ``role`` (inline and default policy).

    Each kind of finding gets its reason. The IDs are computed at synthesis, from the role's final policies.
    """
    stack = stack_of(role)
    once(stack, "role-findings", lambda: _role_findings(stack)).roles.append(
        (role, managed_policies, wildcards)
    )


@jsii.implements(IValidation)
class _AcknowledgeDocumentFindings:
    """Acknowledges the wildcard findings of a managed policy in its document at synthesis (later statements too)."""

    def __init__(self, policy: iam.CfnManagedPolicy, reason: str) -> None:
        self.policy, self.reason = policy, reason

    def validate(self) -> list[str]:
        document = stack_of(self.policy).resolve(self.policy.policy_document)
        acknowledge(self.policy, _document_wildcards(document), self.reason)
        return []


def acknowledge_managed_policy(policy: iam.CfnManagedPolicy, *, wildcards: str) -> None:
    """Acknowledge the wildcard findings of ``policy``, computed at synthesis from its final document."""
    policy.node.add_validation(_AcknowledgeDocumentFindings(policy, wildcards))


def acknowledge_cdk_handlers(scope: IConstruct, reason: str) -> None:
    """Acknowledge the findings of a subtree that CDK itself creates.

    Covers the kubectl provider, bucket deployment and custom-resource provider framework: managed Lambda
    policies, handler wildcards and Lambda runtimes that CDK pins. Only use it on such subtrees, never on
    constructs of this library.

    The handler functions' checkov findings about how CDK runs them are skipped too, each with its reason
    (:data:`CDK_HANDLER_CHECKOV_SKIPS`; "not in a VPC" only for a function outside one).
    """
    for node in scope.node.find_all():
        if isinstance(node, iam.Role):
            acknowledge(node, managed_policy_findings(node), reason)
        elif isinstance(node, iam.Policy):
            acknowledge(node, wildcard_findings(node), reason)
        elif isinstance(node, lambda_.CfnFunction):
            acknowledge(node, "AwsSolutions-L1", reason)
        if isinstance(node, cdk.CfnResource) and node.cfn_resource_type == "AWS::Lambda::Function":
            skip_handler_checks(node, reason)


#: Construct ID of aws-cdk-lib's singleton function behind every ``AwsCustomResource`` of a stack (its prefix: the
#: logical ID adds a hash).
AWS_CUSTOM_RESOURCE_FUNCTION_ID = "AWS679f53fac002430cb0da5b7982bd2287"


def acknowledge_aws_custom_resource_handler(stack: cdk.Stack, reason: str) -> None:
    """Acknowledge the findings of the stack's ``AwsCustomResource`` function, which aws-cdk-lib creates once."""
    for child in stack.node.children:
        if child.node.id.startswith(AWS_CUSTOM_RESOURCE_FUNCTION_ID):
            acknowledge_cdk_handlers(child, reason)


def skip_handler_checks(function: IConstruct, reason: str) -> None:
    """Skip the checkov function checks that do not fit a custom-resource handler (:data:`CDK_HANDLER_CHECKOV_SKIPS`).

    For a handler CloudFormation (or the provider framework) invokes during deployments only, ours or CDK's;
    ``reason`` says whose handler it is. "Not in a VPC" is skipped only for a function outside one.
    """
    node = function.node.default_child if isinstance(function, lambda_.Function) else function
    if not isinstance(node, cdk.CfnResource):
        raise TypeError(f"{function.node.path}: not a Lambda function")
    in_vpc = isinstance(node, lambda_.CfnFunction) and node.vpc_config is not None
    for check_id, comment in CDK_HANDLER_CHECKOV_SKIPS.items():
        if not (check_id == "CKV_AWS_117" and in_vpc):
            skip_checkov(node, check_id, f"{comment} ({reason})")


#: Why custom-resource handlers (this library's, and those aws-cdk-lib creates: kubectl provider, provider
#: framework, bucket deployment, AwsCustomResource, the default security group restriction) may do without what
#: checkov asks of a function.
CDK_HANDLER_CHECKOV_SKIPS: Final[dict[str, str]] = {
    "CKV_AWS_115": "a custom-resource handler runs only while CloudFormation deploys the stack; reserving "
    "concurrency for it would take that capacity from every other function of the account",
    "CKV_AWS_116": "CloudFormation and the provider framework invoke the handler synchronously and receive its "
    "errors; a dead-letter queue only receives failed asynchronous invocations, so it would stay empty",
    "CKV_AWS_117": "the handler calls AWS APIs only and reaches nothing inside the VPC",
    "CKV_AWS_173": "the handler's environment holds settings and resource names, no secret; Lambda encrypts it "
    "at rest with its AWS-managed key",
}
