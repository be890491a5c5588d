"""``ChargebackStack``: the stack holding a cluster's :class:`ChargebackPipeline`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from decimal import Decimal
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from constructs import Construct

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import ChargebackPipeline, UsageReportChart
from hyperpod_tenancy.constructs.drift_audit import DriftAudit
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, chargeback_config

__all__ = ["ChargebackOptions", "ChargebackStack", "chargeback_options", "pipeline_props"]


@dataclass(frozen=True, kw_only=True)
class ChargebackOptions:
    """Options of the :class:`ChargebackPipeline` a stage passes on top of the policy's ``chargeback:`` section.

    Every field defaults to ``None``: the policy's value, else the construct's default. Without a ``chargeback:``
    section in the policy, ``billing_rule`` and ``idle_owner`` are required. The fields are the construct's
    keyword arguments of the same names (its docstring says what each does).

    Raises:
        TenancyError: a field of the wrong type, named with the type it takes.

    """

    billing_rule: model.BillingRule | None = None
    idle_owner: str | None = None
    effective_from: dt.date | None = None
    earlier_terms: Sequence[model.BillingTerm] | None = None
    shared_costs: model.SharedCostRule | None = None
    signed_off_by: str | None = None
    mid_quarter_reason: str | None = None
    cost_centers: Mapping[str, str] | None = None
    prices: Mapping[str, Decimal] | None = None
    tolerance: Decimal | None = None
    unknown_teams: model.UnknownTeams | None = None
    usage_report_chart: UsageReportChart | None = None
    alert_workspace: aps.CfnWorkspace | None = None
    preemption_alarm_gpu_hours_per_day: float | None = None
    pending_alarm_minutes: float | None = None
    bytes_scanned_cutoff: int | None = None
    raw_retention: cdk.Duration | None = None
    data_export: bool | None = None
    activate_cost_allocation_tags: bool | None = None

    def __post_init__(self) -> None:
        number = (int, float)
        checks: dict[str, tuple[str, Any]] = {
            "billing_rule": ("a BillingRule", lambda v: isinstance(v, model.BillingRule)),
            "idle_owner": ("a string", lambda v: isinstance(v, str)),
            "effective_from": ("a datetime.date", lambda v: isinstance(v, dt.date)),
            "earlier_terms": (
                "a sequence of BillingTerm",
                lambda v: isinstance(v, Sequence) and all(isinstance(t, model.BillingTerm) for t in v),
            ),
            "shared_costs": ("a SharedCostRule", lambda v: isinstance(v, model.SharedCostRule)),
            "signed_off_by": ("a string", lambda v: isinstance(v, str)),
            "mid_quarter_reason": ("a string", lambda v: isinstance(v, str)),
            "cost_centers": (
                "a mapping of team names to cost centers",
                lambda v: isinstance(v, Mapping) and all(isinstance(x, str) for x in (*v, *v.values())),
            ),
            "prices": (
                "a mapping of instance types to Decimal prices",
                lambda v: isinstance(v, Mapping) and all(isinstance(x, Decimal) for x in v.values()),
            ),
            "tolerance": ("a Decimal", lambda v: isinstance(v, Decimal)),
            "unknown_teams": ("an UnknownTeams", lambda v: isinstance(v, model.UnknownTeams)),
            "usage_report_chart": ("a UsageReportChart", lambda v: isinstance(v, UsageReportChart)),
            "alert_workspace": ("an aps.CfnWorkspace", lambda v: hasattr(v, "attr_arn")),
            "preemption_alarm_gpu_hours_per_day": ("a number", lambda v: isinstance(v, number)),
            "pending_alarm_minutes": ("a number", lambda v: isinstance(v, number)),
            "bytes_scanned_cutoff": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
            "raw_retention": ("a cdk.Duration", lambda v: hasattr(v, "to_days")),
            "data_export": ("a bool", lambda v: isinstance(v, bool)),
            "activate_cost_allocation_tags": ("a bool", lambda v: isinstance(v, bool)),
        }
        for name, (expected, ok) in checks.items():
            value = getattr(self, name)
            if value is not None and not ok(value):
                raise TenancyError(
                    f"ChargebackOptions.{name}: {value!r} is not {expected}; pass {expected} or leave it unset."
                )

    def kwargs(self) -> dict[str, Any]:
        """Return the options that are set, as keyword arguments of :class:`ChargebackPipeline`."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


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
    if (
        platform.identity_center_elsewhere
    ):  # a member account: the payer activates the tags (HPT-CHARGEBACK-TAGS-PAYER)
        props["activate_cost_allocation_tags"] = False
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
        options: options of :class:`ChargebackPipeline` on top of what the platform's ``chargeback:`` section
            gives (:func:`pipeline_props`); ``billing_rule`` and ``idle_owner`` are required when the platform has
            no such section. Default: the section's.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the cluster's).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        options: ChargebackOptions | None = None,
        **kwargs: Any,
    ) -> None:
        platform = cluster.platform
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        #: The chargeback pipeline.
        self.pipeline = ChargebackPipeline(
            self,
            "Chargeback",
            cluster=cluster,
            **{**pipeline_props(platform), **chargeback_options(options).kwargs()},
        )
        #: The daily drift audit, alarming on the pipeline's topic (docs/audit.md); it reads the team records,
        #: so this stack lists no team.
        self.drift_audit = DriftAudit(self, "DriftAudit", cluster=cluster, topic=self.pipeline.topic)


def chargeback_options(options: object) -> ChargebackOptions:
    """Return ``options`` once it is a :class:`ChargebackOptions` (``None``: every option at its default).

    Raises:
        TenancyError: something else was given, such as a dict of the construct's keyword arguments.

    """
    if options is None:
        return ChargebackOptions()
    if not isinstance(options, ChargebackOptions):
        raise TenancyError(
            f"chargeback options: {type(options).__name__} given; pass ChargebackOptions(...) "
            "(from hyperpod_tenancy.stacks import ChargebackOptions), e.g. ChargebackOptions(usage_report_chart=...)."
        )
    return options
