"""A team's Studio stack in its own account: the domain, its routes to the cluster and its execution role.

Deployed after the team stack (which peers the cluster's VPC with the team's Studio VPC) and before the team's
Identity Center stack (which assigns the team's group to the domain's application).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.tenant.team_account import TeamAccount
from hyperpod_tenancy.constructs.tenant.team_account_studio import TeamAccountStudio
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.onboarding import SSO_START_URL_CONTEXT
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.stacks.identity_center import policy_team

__all__ = ["TeamStudioStack"]


class TeamStudioStack(cdk.Stack):
    """The team's Studio domain in its own account (:class:`TeamAccountStudio`).

    Args:
        scope: parent (the platform stage).
        id: stack ID (``Team-<Team>-Studio`` under ``PlatformStage``).
        platform: the policy.
        team: name of a team with an account of its own, a Studio domain and its ``studioNetwork``.
        account_resources: the team's resources in its account (its data bucket and key).
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the team's account and the platform's region).

    Raises:
        TenancyError: the team is not in the policy, or has no Studio domain in an account of its own.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        team: str,
        account_resources: TeamAccount,
        **kwargs: Any,
    ) -> None:
        spec = policy_team(platform, team, f"TeamStudioStack {id!r}")
        if not platform.studio_in_team_account(spec):
            raise TenancyError(
                f"TeamStudioStack {id!r}: team {team!r} has no Studio domain in an account of its own; set "
                "`account`, `studio: true` and `studioNetwork` on the team."
            )
        kwargs.setdefault("env", cdk.Environment(account=platform.team_account(spec), region=platform.region))
        super().__init__(scope, id, **kwargs)
        start_url = self.node.try_get_context(SSO_START_URL_CONTEXT)
        #: The team's Studio domain, its routes, execution role and published application.
        self.studio: TeamAccountStudio = TeamAccountStudio(
            self,
            "Studio",
            platform=platform,
            team=spec,
            data_bucket=account_resources.data_bucket,
            data_key=account_resources.key,
            sso_start_url=start_url if isinstance(start_url, str) and start_url else None,
        )
