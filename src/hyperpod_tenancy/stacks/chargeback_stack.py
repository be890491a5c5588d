"""``ChargebackStack``: the stack holding a cluster's :class:`ChargebackPipeline`."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.chargeback_pipeline import ChargebackPipeline, UsageReportChart
from hyperpod_tenancy.constructs.drift_audit import DriftAudit
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.policy import Platform, chargeback_config

__all__ = ["ChargebackStack", "pipeline_props"]


def pipeline_props(platform: Platform) -> dict[str, Any]:
    """Keyword arguments of :class:`ChargebackPipeline` from the platform's ``chargeback:`` section.

    The newest billing term is the pipeline's ``billing_rule``/``idle_owner``/``effective_from``; the earlier
    ones are ``earlier_terms``; ``usageReportChart`` is the ``usage_report_chart``. Empty without a ``chargeback:``
    section.
    """
    spec = platform.chargeback
    if spec is None:
        return {}
    config = chargeback_config(platform)
    *earlier, current = config.terms
    props: dict[str, Any] = {
        "billing_rule": current.rule,
        "idle_owner": current.idle_owner,
        "effective_from": current.effective_from,
        "shared_costs": current.shared_costs,
        "signed_off_by": current.signed_off_by,
        "mid_quarter_reason": current.mid_quarter_reason,
        "earlier_terms": tuple(earlier),
        "cost_centers": {team.name: team.cost_center for team in config.teams},
        "prices": dict(config.prices),
        "tolerance": config.tolerance,
        "unknown_teams": config.unknown_teams,
        "preemption_alarm_gpu_hours_per_day": spec.preemption_alarm.gpu_hours_per_team_per_day,
    }
    chart = spec.usage_report_chart
    if chart is not None:
        props["usage_report_chart"] = UsageReportChart(
            oci_repository=chart.oci_repository, version=chart.version or "0.1.0", directory=chart.directory
        )
    return props


class ChargebackStack(cdk.Stack):
    """Stack with the :class:`ChargebackPipeline` of a shared cluster.

    Its own stack: it changes with the cost-center owners' sign-off, not with the cluster.

    Args:
        scope: parent (an App or the platform stage).
        id: stack ID.
        cluster: the shared cluster (in another stack: a few of its attributes become cross-stack references).
        pipeline: keyword arguments of :class:`ChargebackPipeline` besides ``cluster``, on top of what the
            platform's ``chargeback:`` section gives (:func:`pipeline_props`); ``billing_rule`` and ``idle_owner``
            are required when the platform has no such section. Default: the section's.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the cluster's).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        pipeline: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        platform = cluster.platform
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        #: The chargeback pipeline.
        self.pipeline = ChargebackPipeline(
            self, "Chargeback", cluster=cluster, **{**pipeline_props(platform), **(pipeline or {})}
        )
        #: The daily drift audit, alarming on the pipeline's topic (docs/audit.md); it reads the team records,
        #: so this stack lists no team.
        self.drift_audit = DriftAudit(self, "DriftAudit", cluster=cluster, topic=self.pipeline.topic)
