"""Teams in their own accounts: the ID, where it may be, and what the layout does not offer."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy.model import Platform, Team
from hyperpod_tenancy.policy.rules._base import Domain, Finding, team_rule
from hyperpod_tenancy.policy.rules._common import ACCOUNT


@team_rule(
    code="HPT-ACCOUNT",
    domain=Domain.IDENTITY,
    at="teams[*].account",
    reads=(),
    failure="a team's bucket and roles synthesized for an account that cannot exist",
    guardrail="`teams[].account` must be a 12-digit string",
)
def team_account_id(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team's own account, when given, is a 12-digit AWS account ID."""
    if team.account is not None and not ACCOUNT.match(team.account):
        yield Finding(
            f"teams[{i}].account",
            f"{team.account!r} is not a 12-digit AWS account ID.",
            'quote the ID of the team\'s account, e.g. "444455556666".',
        )


@team_rule(
    code="HPT-TEAM-ACCOUNT",
    domain=Domain.IDENTITY,
    at="teams[*].account",
    reads=("account",),
    failure="a team that looks like it has an account of its own while it lives in the cluster's",
    guardrail="`teams[].account`, when given, differs from the cluster's `account`",
)
def team_account_own(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team's ``account`` is not the cluster's: the field means an account of the team's own."""
    if team.account is not None and team.account == p.account:
        yield Finding(
            f"teams[{i}].account",
            f"team {team.name!r} names the cluster's account {p.account} as its own: its data would still be "
            "under teams/<team>/ of the shared data bucket, not in an account of the team's.",
            "omit `account` for a team that lives in the cluster's account, or give the team's own account.",
        )


@team_rule(
    code="HPT-IDENTITY-CENTER-WORKLOADS",
    domain=Domain.IDENTITY,
    at="teams[*].account",
    reads=("identityCenter.account", "identityCenter.allowWorkloads"),
    failure="a team's pods' data and roles in the organization's management account, which AWS advises against",
    guardrail="a team's `account` differs from `identityCenter.account` unless `allowWorkloads: true`",
)
def team_account_workloads(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that no team lives in the Identity Center account when the policy forbids workloads there."""
    ic = p.identity_center
    allowed = ic.allow_workloads if ic.allow_workloads is not None else ic.account is None
    if not allowed and team.account is not None and team.account == p.identity_center_account:
        yield Finding(
            f"teams[{i}].account",
            f"team {team.name!r} would keep its data and the role of its pods in {team.account}, the Identity "
            "Center account, where this policy allows no workloads.",
            "give the team an account of its own (a member account of the organization), or omit `account`.",
        )


@team_rule(
    code="HPT-TEAM-ACCOUNT-STUDIO",
    domain=Domain.IDENTITY,
    at="teams[*].studio",
    reads=("teams[*].account",),
    failure="a Studio domain in the team's account with no network path to the cluster's private API endpoint",
    guardrail="a team with an account of its own has `studio: false`",
)
def team_account_studio(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team in its own account has no Studio domain.

    A team's Studio domain runs in the cluster's VPC, whose security group admits it to the EKS API endpoint. In
    the team's account it would need a VPC of its own routed to that private endpoint, which the platform does not
    create, and its execution role would cross as a second principal mapped to the team's group.
    """
    if team.studio and p.team_in_own_account(team):
        yield Finding(
            f"teams[{i}].studio",
            f"team {team.name!r} lives in its own account {p.team_account(team)}, where a Studio domain would have "
            "no network path to the cluster's private API endpoint.",
            "set `studio: false` on the team (members use `hyp` and kubectl with their permission set in the "
            "team's account), or omit `account`.",
        )
