"""``TeamStack``: one stack per team, so no stack nears CloudFormation's limits at any team count."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.chargeback_pipeline import ChargebackPipeline
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.team_chargeback import TeamChargeback
from hyperpod_tenancy.constructs.team_tenant import TeamTenant

__all__ = ["TeamStack"]


class TeamStack(cdk.Stack):
    """Stack with the :class:`TeamTenant` of one team.

    Args:
        scope: parent (an App or the platform stage).
        id: stack ID.
        cluster: the shared cluster (in another stack: a few of its attributes become cross-stack references),
            or one imported with :meth:`SharedHyperPodCluster.from_attributes`.
        team: name of a team of the cluster's platform policy.
        sso_role_timeout: as for :class:`TeamTenant`. Default: 15 minutes.
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
        **kwargs: Any,
    ) -> None:
        platform = cluster.platform
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        #: The team's tenant (registered with the cluster when it was created in this app).
        self.tenant: TeamTenant = (
            cluster.add_team("Tenant", team=team, scope=self, sso_role_timeout=sso_role_timeout)
            if isinstance(cluster, SharedHyperPodCluster)
            else TeamTenant(self, "Tenant", cluster=cluster, team=team, sso_role_timeout=sso_role_timeout)
        )
        #: The team's part of the chargeback (``None`` until :meth:`add_chargeback`).
        self.chargeback: TeamChargeback | None = None

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
            tenant=self.tenant,
        )
        return self.chargeback
