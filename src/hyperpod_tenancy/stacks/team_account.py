"""A team's stack in its own account: its data, the role of its pods, and its permission set's policy.

Deployed first of the team's stacks (the team stack depends on it): the pods' target role and the lookup role
exist before the cluster's account associates the one and assumes the other, and the policy exists before the
permission set that references it is provisioned here.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.tenant.team_account import TeamAccount
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.stacks.identity_center import built_stacks, policy_team

__all__ = ["TeamAccountStack"]


class TeamAccountStack(cdk.Stack):
    """The team's resources in its own account (:class:`~hyperpod_tenancy.constructs.tenant.team_account.TeamAccount`).

    Args:
        scope: parent (the platform stage).
        id: stack ID (``Team-<Team>-Account`` under ``PlatformStage``).
        platform: the policy.
        team: name of a team of the policy with an ``account`` of its own.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the team's account and the platform's region).

    Raises:
        TenancyError: the team is not in the policy, or lives in the cluster's account.

    """

    def __init__(self, scope: Construct, id: str, *, platform: Platform, team: str, **kwargs: Any) -> None:
        spec = policy_team(platform, team, f"TeamAccountStack {id!r}")
        if not platform.team_in_own_account(spec):
            raise TenancyError(
                f"TeamAccountStack {id!r}: team {team!r} lives in the cluster's account {platform.account}. Set "
                "`account` on the team to give it an account of its own."
            )
        kwargs.setdefault("env", cdk.Environment(account=platform.team_account(spec), region=platform.region))
        super().__init__(scope, id, **kwargs)
        built_stacks(self).add(("TeamAccountStack", spec.name))
        #: The team's bucket, pods' role, lookup role and permission set policy.
        self.resources: TeamAccount = TeamAccount(self, "Team", platform=platform, team=spec)
