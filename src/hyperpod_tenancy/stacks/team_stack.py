"""``TeamStack``: one stack per team, so no stack nears CloudFormation's limits at any team count."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs._private.memo import arn
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import ChargebackPipeline
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.tenant.chargeback import TeamChargeback
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.stacks.identity_center import require_team_stacks

__all__ = ["TeamStack"]


class TeamStack(cdk.Stack):
    """Stack with the :class:`TeamTenant` of one team, and what a team member needs as its outputs.

    The outputs (:attr:`outputs`) are :func:`hyperpod_tenancy.k8s.onboarding.stack_outputs` of the tenant's
    onboarding facts, the ones ``hyperpod-tenancy onboarding`` prints: profile, permission set, cluster,
    namespace, queue, priority classes with their checkpoint rule, FSx and home directories, S3 prefix and Studio
    domain; and the values known only once deployed (the Identity Center role, the Studio domain's ID and URL),
    which the command prints as the ``describe-stacks`` call that reads them; the team's permission set may make
    that call on this stack (``cloudformation:DescribeStacks``, this stack's ARN only).

    Args:
        scope: parent (an App or the platform stage).
        id: stack ID.
        cluster: the shared cluster (in another stack: a few of its attributes become cross-stack references),
            or one imported with :meth:`SharedHyperPodCluster.from_attributes`.
        team: name of a team of the cluster's platform policy.
        sso_role_timeout: as for :class:`TeamTenant`. Default: 15 minutes.
        sso_start_url: as for :class:`TeamTenant`. Default: the ``hyperpod-tenancy:ssoStartUrl`` context.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the cluster's).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        team: str,
        sso_role_timeout: cdk.Duration | None = None,
        sso_start_url: str | None = None,
        **kwargs: Any,
    ) -> None:
        platform = cluster.platform
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        #: The team's tenant (registered with the cluster: :attr:`SharedHyperPodCluster.teams`).
        self.tenant: TeamTenant = TeamTenant(
            self,
            "Tenant",
            cluster=cluster,
            team=team,
            sso_role_timeout=sso_role_timeout,
            sso_start_url=sso_start_url,
        )
        require_team_stacks(self, platform, team)
        #: The onboarding outputs by output key.
        self.outputs: dict[str, cdk.CfnOutput] = self._onboarding_outputs()
        #: The team's part of the chargeback (``None`` until :meth:`add_chargeback`).
        self.chargeback: TeamChargeback | None = None

    def _onboarding_outputs(self) -> dict[str, cdk.CfnOutput]:
        tenant = self.tenant
        # the role's ARN is the access stack's output where Identity Center is in another account
        deployed = {} if tenant.sso_role_arn is None else {"SsoRoleArn": tenant.sso_role_arn}
        if tenant.domain is not None:
            deployed["StudioDomainId"] = tenant.domain.attr_domain_id
            deployed["StudioUrl"] = tenant.domain.attr_url
        # members read these outputs themselves (`hyperpod-tenancy onboarding` prints the command): this stack only,
        # and the team's access stack where Identity Center is in another account (its role's ARN is there). A team
        # in its own account signs in there, where its account stack's policy lets members read that stack.
        if not tenant.in_own_account:
            stacks = [self.stack_name]
            if tenant.sso_role_arn is None:
                stacks.append(tenant.onboarding.output_stack("SsoRoleArn"))
            # arn:<partition>:cloudformation:<region>:<account>:stack/<stack name>/<its ID>
            resources = [
                arn(self, service="cloudformation", resource="stack", resource_name=f"{n}/*") for n in stacks
            ]
            tenant.allow_in_permission_set(
                {
                    "Sid": "ReadOwnTeamStackOutputs",
                    "Effect": "Allow",
                    "Action": "cloudformation:DescribeStacks",
                    "Resource": resources[0] if len(resources) == 1 else resources,
                }
            )
        return {
            output.key: cdk.CfnOutput(
                self,
                output.key,
                value=output.value if output.value is not None else deployed[output.key],
                description=output.description,
            )
            for output in onboarding.stack_outputs(tenant.onboarding)
        }

    def add_chargeback(self, pipeline: ChargebackPipeline) -> TeamChargeback:
        """Create the team's part of ``pipeline`` in this stack: its record, dashboard and same-day alert.

        The pipeline's stack gains nothing and this stack no reference to it (names are derived from the
        cluster's), so a team is added to the chargeback by its own stack alone.
        """
        team = self.tenant.team.name
        self.chargeback = TeamChargeback(
            self,
            "Chargeback",
            cluster=self.tenant.cluster,
            team=team,
            config=pipeline.config,
            cost_center=pipeline.cost_center(team),
            alert_workspace=pipeline.alert_workspace,
            preemption_alarm_gpu_hours_per_day=pipeline.preemption_alarm_gpu_hours_per_day,
            pending_alarm_minutes=pipeline.pending_alarm_minutes,
            tenant=self.tenant,
        )
        return self.chargeback
