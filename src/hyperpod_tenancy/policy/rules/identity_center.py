"""Identity Center rules: the instance, its home region, and the account it is administered from."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.rules._base import Domain, Finding, platform_rule
from hyperpod_tenancy.policy.rules._common import ACCOUNT, REGION

_SSO_INSTANCE = re.compile(r"^arn:aws[a-z-]*:sso:::instance/(sso)?ins-[a-zA-Z0-9-.]{16}$")


@platform_rule(
    code="HPT-IDENTITY-CENTER",
    domain=Domain.IDENTITY,
    at="identityCenter.instanceArn",
    reads=(),
    failure="permission sets created against an Identity Center instance that does not exist",
    guardrail="`identityCenter.instanceArn` must be an Identity Center instance ARN",
)
def identity_center_instance(p: Platform) -> Iterator[Finding]:
    """Check that the Identity Center instance ARN has the form ``aws sso-admin list-instances`` prints."""
    if not _SSO_INSTANCE.match(p.identity_center.instance_arn):
        yield Finding(
            "identityCenter.instanceArn",
            f"{p.identity_center.instance_arn!r} is not an IAM Identity Center instance ARN.",
            "copy it from `aws sso-admin list-instances` (arn:aws:sso:::instance/ssoins-...).",
        )


@platform_rule(
    code="HPT-REGION",
    domain=Domain.IDENTITY,
    at="identityCenter.region",
    reads=(),
    failure="an Identity Center home region that is not a region",
    guardrail="`identityCenter.region` must be an AWS region name",
)
def identity_center_region_name(p: Platform) -> Iterator[Finding]:
    """Check that the Identity Center home region is an AWS region name."""
    if not REGION.match(p.identity_center.region):
        yield Finding(
            "identityCenter.region",
            f"{p.identity_center.region!r} is not an AWS region name.",
            "use the Identity Center home region, e.g. `us-east-1`.",
        )


@platform_rule(
    code="HPT-IDENTITY-CENTER-REGION",
    domain=Domain.IDENTITY,
    at="identityCenter.region",
    reads=("region",),
    failure="Identity Center resources created outside the Identity Center home region",
    guardrail="`identityCenter.region` must equal `region`",
)
def identity_center_region(p: Platform) -> Iterator[Finding]:
    """Check that the platform deploys in the Identity Center home region.

    CloudFormation creates AWS::SSO::* resources in the stack's region, and Identity Center accepts them only
    in its home region; an SSO-auth SageMaker domain must be in that region too.
    """
    ic_region = p.identity_center.region
    if REGION.match(ic_region) and REGION.match(p.region) and ic_region != p.region:
        yield Finding(
            "identityCenter.region",
            f"Identity Center lives in {ic_region!r} but the platform deploys to {p.region!r}: "
            "the team stacks create the permission sets, account assignments and Studio application assignments "
            "in the stack's region, where Identity Center would reject them, and SSO-auth Studio domains need "
            "the Identity Center region.",
            f"deploy the platform in {ic_region} (set `region: {ic_region}`), or "
            "correct identityCenter.region; the stacks must also deploy in the organization's management account "
            "or an Identity Center delegated administrator account.",
        )


@platform_rule(
    code="HPT-ACCOUNT",
    domain=Domain.IDENTITY,
    at="identityCenter.account",
    reads=(),
    failure="permission sets synthesized for an account that cannot exist",
    guardrail="`identityCenter.account` must be a 12-digit string",
)
def identity_center_account(p: Platform) -> Iterator[Finding]:
    """Check that the Identity Center account, when given, is a 12-digit AWS account ID."""
    given = p.identity_center.account
    if given is not None and not ACCOUNT.match(given):
        yield Finding(
            "identityCenter.account",
            f"{given!r} is not a 12-digit AWS account ID.",
            'quote the ID of the management or Identity Center delegated administrator account, e.g. "999988887777".',
        )


@platform_rule(
    code="HPT-IDENTITY-CENTER-WORKLOADS",
    domain=Domain.IDENTITY,
    at="identityCenter.allowWorkloads",
    reads=("account", "identityCenter.account"),
    failure="GPU workloads in the organization's management account, which AWS advises against",
    guardrail="the cluster's `account` differs from `identityCenter.account` unless `allowWorkloads: true`",
)
def identity_center_workloads(p: Platform) -> Iterator[Finding]:
    """Check that the cluster is not in the Identity Center account when the policy forbids workloads there."""
    ic = p.identity_center
    allowed = ic.allow_workloads if ic.allow_workloads is not None else ic.account is None
    if not allowed and p.identity_center_account == p.account:
        yield Finding(
            "identityCenter.allowWorkloads",
            f"the cluster would run in {p.account}, the Identity Center account, where this policy allows no "
            "workloads (AWS advises against running workloads in the management account).",
            "set `account` to a workload account of the organization (the permission sets then target it from "
            "the Identity Center account), or set `identityCenter.allowWorkloads: true` to accept it.",
        )
