"""A team's stacks when Identity Center is administered from another account than the cluster's.

The permission set and its assignment must be created in the Identity Center account (the organization's
management account or a delegated administrator); the role Identity Center then provisions, its lookup and the
EKS access entry that maps it belong to the cluster's account. Nothing crosses that line as a CloudFormation
reference: the permission set references the team stack's policy by name and path, the assignment targets the
cluster's account by its ID, the lookup finds the role by the permission set's name. The order is three stack
dependencies: the team stack (its policy must exist before the assignment is provisioned), then this Identity
Center stack, then the access stack (the role exists once the assignment is provisioned).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_sso as sso
from constructs import Construct, IValidation

from hyperpod_tenancy.constructs._private.memo import once
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.tenant.identity import (
    DEFAULT_SSO_ROLE_TIMEOUT,
    access_entry,
    sso_role_lookup,
    team_assignment,
    team_permission_set,
)
from hyperpod_tenancy.constructs.tenant.studio_assignment import (
    StudioAssignment,
    assign_studio_from_identity_center,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.policy import Platform, Team, names

__all__ = ["TeamAccessStack", "TeamIdentityStack", "built_stacks", "policy_team", "require_team_stacks"]


def built_stacks(scope: Construct) -> set[tuple[str, str]]:
    """Return the (kind, team) of every Identity Center, access and team account stack of the app ``scope`` is in."""
    return once(scope.node.root, "identity-center-stacks", set)


def _required(platform: Platform, team: Team) -> tuple[str, ...]:
    """Return the kinds of stack a team's stack needs beside it in the app (none in one account)."""
    elsewhere = ("TeamIdentityStack", "TeamAccessStack") if platform.identity_center_elsewhere else ()
    own = ("TeamAccountStack",) if platform.team_in_own_account(team) else ()
    return own + elsewhere


@jsii.implements(IValidation)
class _RequireTeamStacks:
    """Refuses a team stack whose team lacks the stacks of its other accounts in the app."""

    def __init__(self, scope: Construct, platform: Platform, team: Team) -> None:
        self.scope, self.platform, self.team = scope, platform, team

    def validate(self) -> list[str]:
        built = built_stacks(self.scope)
        missing = [
            kind for kind in _required(self.platform, self.team) if (kind, self.team.name) not in built
        ]
        if not missing:
            return []
        where = (
            f"its own account {self.platform.team_account(self.team)}"
            if self.platform.team_in_own_account(self.team)
            else f"the cluster's account {self.platform.account}"
        )
        return [
            f"team {self.team.name!r} lives in {where}, Identity Center in {self.platform.identity_center_account}, "
            f"and this app has no {' and no '.join(missing)} for the team: its data, its pods' role or its "
            "members' access would be missing. Add them beside the team stack (PlatformStage does)."
        ]


def require_team_stacks(scope: Construct, platform: Platform, team: str) -> None:
    """Refuse at synthesis a team stack whose stacks in other accounts (Identity Center, the team's) are missing."""
    spec = platform.team(team)
    if _required(platform, spec):
        scope.node.add_validation(_RequireTeamStacks(scope, platform, spec))


def policy_team(platform: Platform, team: str, where: str) -> Team:
    """Return the team ``team`` of the policy.

    Raises:
        TenancyError: the policy has no such team (naming ``where``, the stack being built).

    """
    try:
        return platform.team(team)
    except KeyError:
        raise TenancyError(f"{where}: no team {team!r} in the platform policy.") from None


def _team(platform: Platform, team: str, where: str) -> Team:
    if not platform.identity_center_elsewhere:
        raise TenancyError(
            f"{where}: Identity Center is administered from the cluster's account {platform.account}; the team "
            "stack creates the permission set itself. Set `identityCenter.account` to use this stack."
        )
    return policy_team(platform, team, where)


class TeamIdentityStack(cdk.Stack):
    """The team's permission set and its assignment, in the Identity Center account; with Studio, its domain's too.

    Args:
        scope: parent (the platform stage).
        id: stack ID (``Team-<Team>-Identity`` under ``PlatformStage``).
        platform: the policy (``identityCenter.account`` another account than ``account``).
        team: name of a team of the policy.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the Identity Center account and region).

    Raises:
        TenancyError: Identity Center is in the cluster's account, or the team is not in the policy.

    """

    def __init__(self, scope: Construct, id: str, *, platform: Platform, team: str, **kwargs: Any) -> None:
        spec = _team(platform, team, f"TeamIdentityStack {id!r}")
        kwargs.setdefault(
            "env",
            cdk.Environment(account=platform.identity_center_account, region=platform.identity_center.region),
        )
        super().__init__(scope, id, **kwargs)
        built_stacks(self).add(("TeamIdentityStack", spec.name))
        #: The team's permission set: it references the team stack's policy by name and path.
        self.permission_set: sso.CfnPermissionSet = team_permission_set(self, platform=platform, team=spec)
        #: Its assignment to the team's group in the team's account (the cluster's, or the team's own).
        self.assignment: sso.CfnAssignment = team_assignment(
            self,
            platform=platform,
            team=spec,
            permission_set=self.permission_set,
            account=platform.team_account(spec),
        )
        #: The team's group assigned to its Studio domain's application, whose ARN is read from the cluster's
        #: account (``None`` when ``studio: false``).
        self.studio: StudioAssignment | None = (
            assign_studio_from_identity_center(self, platform=platform, team=spec) if spec.studio else None
        )


class TeamAccessStack(cdk.Stack):
    """The team's Identity Center role resolved in the cluster's account, and its EKS access entry.

    Args:
        scope: parent (the platform stage).
        id: stack ID (``Team-<Team>-Access`` under ``PlatformStage``).
        cluster: the shared cluster.
        team: name of a team of the cluster's policy.
        sso_role_timeout: how long to wait for Identity Center to provision the role. Default: 15 minutes.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the cluster's).

    Raises:
        TenancyError: Identity Center is in the cluster's account, or the team is not in the policy.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        team: str,
        sso_role_timeout: cdk.Duration | None = None,
        **kwargs: Any,
    ) -> None:
        platform = cluster.platform
        spec = _team(platform, team, f"TeamAccessStack {id!r}")
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        built_stacks(self).add(("TeamAccessStack", spec.name))
        #: Full ARN (with its /aws-reserved/... path) of the team's Identity Center role in this account.
        self.sso_role_arn: str = sso_role_lookup(
            self, cluster=cluster, team=spec, timeout=sso_role_timeout or DEFAULT_SSO_ROLE_TIMEOUT
        )
        #: The role's access entry, mapped to the team's Kubernetes group only.
        self.access_entry: eks.CfnAccessEntry = access_entry(
            self,
            "SsoAccess",
            cluster=cluster,
            principal_arn=self.sso_role_arn,
            group=names.kubernetes_group(spec.name),
        )
        description = onboarding.DEPLOY_TIME_OUTPUTS["SsoRoleArn"]
        #: The role's ARN, which ``hyperpod-tenancy onboarding`` tells members to read here.
        self.output: cdk.CfnOutput = cdk.CfnOutput(
            self, "SsoRoleArn", value=self.sso_role_arn, description=description
        )
