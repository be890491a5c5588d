"""Teams in their own accounts: the ID, where it may be, and the network of a Studio domain there."""

from __future__ import annotations

import ipaddress
import re
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


#: AWS resource IDs the Studio network names (``vpc-``, ``subnet-``, ``rtb-`` and 8 or 17 hex digits).
_RESOURCE_ID = {
    prefix: re.compile(rf"^{prefix}-(?:[0-9a-f]{{8}}|[0-9a-f]{{17}})$") for prefix in ("vpc", "subnet", "rtb")
}
#: Private IPv4 blocks (RFC 1918): a peered VPC's CIDR lies in one of them.
_PRIVATE = tuple(ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


@team_rule(
    code="HPT-TEAM-STUDIO-NETWORK",
    domain=Domain.NETWORKING,
    at="teams[*].studioNetwork",
    reads=("teams[*].account", "teams[*].studio"),
    failure="a Studio domain in the team's account with no network path to the cluster's private API endpoint",
    guardrail="a team with an account of its own and a Studio domain names `studioNetwork` (its VPC, private "
    "subnets and their route tables); no other team does",
)
def team_studio_network(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a Studio domain in a team's own account has a VPC there, named by well-formed IDs."""
    net = team.studio_network
    if net is None:
        if p.studio_in_team_account(team):
            yield Finding(
                f"teams[{i}].studioNetwork",
                f"team {team.name!r} has a Studio domain in its own account {p.team_account(team)}, and no VPC "
                "there is named for it: its apps would have no path to the cluster's private API endpoint.",
                "name the VPC of the team's account, its private subnets and their route tables under "
                "`studioNetwork` (the platform peers it with the cluster's VPC), or set `studio: false`.",
            )
        return
    if not p.studio_in_team_account(team):
        yield Finding(
            f"teams[{i}].studioNetwork",
            f"team {team.name!r} has no Studio domain in an account of its own, so nothing would use "
            "`studioNetwork`.",
            "remove `studioNetwork` (a domain in the cluster's account runs in the cluster's VPC).",
        )
        return
    checks = (
        ("vpcId", "vpc", (net.vpc_id,)),
        ("subnetIds", "subnet", net.subnet_ids),
        ("routeTableIds", "rtb", net.route_table_ids),
    )
    for key, prefix, values in checks:
        if not values:
            yield Finding(
                f"teams[{i}].studioNetwork.{key}",
                f"team {team.name!r} names no {prefix}- ID under `{key}`.",
                f"list at least one {prefix}- ID of the team's account.",
            )
        for j, value in enumerate(values):
            if not _RESOURCE_ID[prefix].match(value):
                at = f"teams[{i}].studioNetwork.{key}" + ("" if key == "vpcId" else f"[{j}]")
                yield Finding(
                    at,
                    f"{value!r} is not a {prefix}- ID.",
                    f"use the ID as the EC2 console shows it ({prefix}-0123456789abcdef0).",
                )
        if len(set(values)) != len(values):
            yield Finding(f"teams[{i}].studioNetwork.{key}", f"`{key}` names an ID twice.", "list each once.")


def _studio_cidr(team: Team) -> ipaddress.IPv4Network | None:
    if team.studio_network is None:
        return None
    try:
        net = ipaddress.ip_network(team.studio_network.cidr)
    except ValueError:
        return None
    return net if isinstance(net, ipaddress.IPv4Network) and any(net.subnet_of(b) for b in _PRIVATE) else None


@team_rule(
    code="HPT-TEAM-STUDIO-CIDR",
    domain=Domain.NETWORKING,
    at="teams[*].studioNetwork.cidr",
    reads=("cluster.vpcCidr", "cluster.serviceCidr", "teams[*].studioNetwork.cidr"),
    failure="a VPC peering AWS refuses (overlapping CIDRs) or routes that send a team's traffic to another team's VPC",
    guardrail="`studioNetwork.cidr` is a private IPv4 CIDR apart from `cluster.vpcCidr`, `cluster.serviceCidr` and "
    "every other team's Studio network",
)
def team_studio_cidr(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team's Studio network can be peered with the cluster's VPC and routed alone."""
    if team.studio_network is None or not p.studio_in_team_account(team):
        return
    at = f"teams[{i}].studioNetwork.cidr"
    net = _studio_cidr(team)
    if net is None:
        yield Finding(
            at,
            f"{team.studio_network.cidr!r} is not a private IPv4 CIDR (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16).",
            "give the IPv4 CIDR of the team's VPC, e.g. 10.60.0.0/16.",
        )
        return
    for key, other in (
        ("cluster.vpcCidr", p.cluster.vpc_cidr),
        ("cluster.serviceCidr", p.cluster.service_cidr),
    ):
        try:
            theirs = ipaddress.ip_network(other)
        except ValueError:
            continue  # HPT-VPC-CIDR and HPT-SERVICE-CIDR report it
        if net.overlaps(theirs):
            yield Finding(
                at,
                f"{str(net)!r} overlaps {key} {other!r}: AWS refuses to peer VPCs whose CIDRs overlap, and the "
                "cluster's routes could not tell the two apart.",
                "peer a VPC of the team's account whose CIDR lies outside the cluster's VPC and Service CIDRs.",
            )
    for j, other_team in enumerate(p.teams):
        peer = _studio_cidr(other_team)
        if j < i and peer is not None and p.studio_in_team_account(other_team) and net.overlaps(peer):
            yield Finding(
                at,
                f"{str(net)!r} overlaps the Studio network of team {other_team.name!r} ({str(peer)!r}): the "
                "cluster's route tables would send one team's traffic to the other's VPC.",
                "give each team's Studio a VPC with a CIDR of its own.",
            )


@team_rule(
    code="HPT-TEAM-STUDIO-IDENTITY-CENTER",
    domain=Domain.IDENTITY,
    at="teams[*].studio",
    reads=("teams[*].account", "identityCenter.account"),
    failure="a Studio domain in the team's account that no Identity Center stack assigns the team's group to",
    guardrail="a team with an account of its own has a Studio domain only when `identityCenter.account` names the "
    "Identity Center account",
)
def team_studio_identity_center(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a Studio domain in a team's account has an Identity Center stack to assign its group.

    The group is assigned to the domain's application from the Identity Center account, after the domain exists
    in the team's account: the team's Identity Center stack does it. With Identity Center administered from the
    cluster's account there is no such stack; the team stack, deployed before the domain, cannot.
    """
    if p.studio_in_team_account(team) and not p.identity_center_elsewhere:
        yield Finding(
            f"teams[{i}].studio",
            f"team {team.name!r} would have its Studio domain in its own account {p.team_account(team)}, and "
            f"Identity Center is administered from the cluster's account {p.account}, where no stack follows the "
            "domain to assign the team's group to it.",
            "name the Identity Center account (`identityCenter.account`, the management or delegated "
            "administrator account; AWS advises against workloads there anyway), or set `studio: false`.",
        )
