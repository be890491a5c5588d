"""Identity rules: Identity Center, the teams' groups, permission sets and POSIX GIDs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, Team
from hyperpod_tenancy.policy.rules._base import Domain, Finding, platform_rule, team_rule
from hyperpod_tenancy.policy.rules._common import REGION, valid_team_name

_SSO_INSTANCE = re.compile(r"^arn:aws[a-z-]*:sso:::instance/(sso)?ins-[a-zA-Z0-9-.]{16}$")
_PERMISSION_SET = re.compile(r"^[\w+=,.@-]{1,32}$")
#: Identity store group ID, as AWS::SSO::Assignment PrincipalId accepts it.
_GROUP_ID = re.compile(
    r"^([0-9a-f]{10}-|)[A-Fa-f0-9]{8}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{4}-[A-Fa-f0-9]{12}$"
)
_GID_RANGE = (1000, 2_147_483_647)


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


@team_rule(
    code="HPT-IDENTITY",
    domain=Domain.IDENTITY,
    at="teams[*].identity.groupId",
    reads=(),
    failure="a team assignment AWS::SSO::Assignment rejects, or that grants nobody",
    guardrail="`identity.groupId` must be an Identity Center group ID",
)
def group_id(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's Identity Center group ID is set and has the identity store's form."""
    path = f"teams[{i}].identity.groupId"
    if not team.identity.group_id:
        yield Finding(
            path, "the Identity Center group ID is empty.", "copy it from `aws identitystore list-groups`."
        )
    elif not _GROUP_ID.match(team.identity.group_id):
        yield Finding(
            path,
            f"{team.identity.group_id!r} is not an Identity Center group ID (a UUID, optionally prefixed by "
            "10 hex digits and '-'); AWS::SSO::Assignment would reject it as PrincipalId.",
            "copy the GroupId from `aws identitystore list-groups --identity-store-id d-...`.",
        )


@team_rule(
    code="HPT-POSIX-GID",
    domain=Domain.IDENTITY,
    at="teams[*].identity.posixGid",
    reads=(),
    failure="two teams sharing /fsx files through one POSIX GID, or a system GID",
    guardrail="`identity.posixGid` in 1000-2147483647 and unique per team",
)
def posix_gid(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's POSIX GID is outside the system range and no earlier team uses it."""
    gid = team.identity.posix_gid
    path = f"teams[{i}].identity.posixGid"
    lo, hi = _GID_RANGE
    if not lo <= gid <= hi:
        yield Finding(
            path, f"{gid} is outside 1000-2147483647.", "use a GID reserved for the team in your directory."
        )
        return
    owner = next((t.name for t in p.teams[:i] if t.identity.posix_gid == gid), None)
    if owner is not None:
        yield Finding(
            path,
            f"GID {gid} is already used by team {owner!r}; teams would share /fsx files.",
            "give every team its own GID.",
        )


@team_rule(
    code="HPT-IDENTITY",
    domain=Domain.IDENTITY,
    at="teams[*].identity.permissionSetName",
    reads=("teams[*].name",),
    failure="permission-set names over the Identity Center limit",
    guardrail="`identity.permissionSetName` (or the name derived from the team) fits 32 characters; "
    "the message shows the computed name",
)
def permission_set_name(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's permission set name, given or derived from the team name, is one Identity Center accepts."""
    path = f"teams[{i}].identity.permissionSetName"
    psn = team.identity.permission_set_name
    if psn is not None and not _PERMISSION_SET.match(psn):
        yield Finding(
            path, f"{psn!r} is not a valid permission set name.", "use at most 32 letters, digits or +=,.@-_."
        )
    elif psn is None and valid_team_name(team.name):
        default = names.permission_set(team.name)
        if len(default) > names.PERMISSION_SET_MAX:
            yield Finding(
                path,
                f"the default permission set name {default!r} derived from team {team.name!r} has {len(default)} "
                f"characters; Identity Center allows at most {names.PERMISSION_SET_MAX}.",
                f"set `identity.permissionSetName` to at most {names.PERMISSION_SET_MAX} letters, digits or "
                "+=,.@-_, or shorten the team name.",
            )
