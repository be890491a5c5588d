"""The chargeback part of the policy: billing terms, prices, tolerance and the preemption alarm."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_tenancy.chargeback.model import BillingRule, SharedCostRule, UnknownTeams
from hyperpod_tenancy.policy.model.cluster import HelmChartSource

__all__ = [
    "DEFAULT_PREEMPTION_ALARM_GPU_HOURS",
    "DEFAULT_RECONCILIATION_TOLERANCE",
    "BillingTermSpec",
    "ChargebackSpec",
    "PreemptionAlarmSpec",
]

#: Default relative mismatch between the month's charges and the bill above which a report is flagged (0.5 %).
DEFAULT_RECONCILIATION_TOLERANCE = 0.005


#: Default GPU-hours a team may lose to preemption in a day before the preemption alarm fires
#: (8 a day is the "240 GPU-hours a month thrown away" of the chargeback issue).
DEFAULT_PREEMPTION_ALARM_GPU_HOURS = 8


@dataclass(frozen=True, kw_only=True)
class BillingTermSpec:
    """A billing rule and idle owner, signed by the cost-center owners, in force from a date until the next term.

    ``rule`` and ``idleOwner`` have no default: who pays for guaranteed and idle capacity is a decision, not a
    setting (``HPT-CHARGEBACK-RULE``, ``HPT-CHARGEBACK-IDLE-OWNER``).
    """

    #: First day of a month (``YYYY-MM-01``) from which the term applies; re-running an earlier month keeps the
    #: term that was in force then.
    effective_from: str = field(metadata={"examples": ["2026-07-01"]})
    #: ``reservation`` (a team pays its guarantee used or not, a borrower what it borrowed, lenders are credited)
    #: or ``usage`` (a team pays what it ran).
    rule: BillingRule | None = None
    #: Who pays for capacity no quota covers (reserved, unallocated and recovering nodes): a cost center, or
    #: ``shared`` (split by guarantee).
    idle_owner: str | None = None
    #: How the cluster's other lines (FSx, EKS, system nodes, NAT, Prometheus, the pipeline) are split.
    shared_costs: SharedCostRule = SharedCostRule.IDLE_OWNER
    #: Who signed the term off: the cost-center owners, or where their sign-off is recorded; every report names it
    #: (``HPT-CHARGEBACK-SIGN-OFF``).
    signed_off_by: str | None = field(
        default=None, metadata={"examples": ["cc-research and cc-platform, FIN-1234"]}
    )
    #: Why the term starts on a day that is not the first of a quarter; without it such a term is an error
    #: (``HPT-CHARGEBACK-QUARTER``): changing the billing rule mid-quarter is not defensible unless acknowledged.
    mid_quarter_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class PreemptionAlarmSpec:
    """The alarm on GPU time thrown away by preemption (it fires within minutes, not at month end)."""

    #: GPU-hours lost by one team in one day above which the alarm fires.
    gpu_hours_per_team_per_day: int = DEFAULT_PREEMPTION_ALARM_GPU_HOURS


@dataclass(frozen=True, kw_only=True)
class ChargebackSpec:
    """The monthly chargeback: billing terms, fallback prices, reconciliation and the preemption alarm.

    Optional: without a ``chargeback:`` section the platform has no chargeback pipeline.
    """

    #: Billing terms by effective date (at least one).
    billing_terms: tuple[BillingTermSpec, ...]
    #: USD per GPU-hour per instance type, used where the month's CUR has no cluster usage line for it.
    prices: dict[str, float] = field(
        default_factory=dict,
        metadata={
            "examples": [{"ml.p5.48xlarge": 12.29}],
            "json_schema_extra": {"x-unit": "USD per GPU-hour"},
        },
    )
    #: Relative mismatch between the month's charges and the bill above which the report is flagged (0.005 = 0.5 %).
    reconciliation_tolerance: float = DEFAULT_RECONCILIATION_TOLERANCE
    #: A namespace with usage or evictions that is no team of this platform: ``fail`` (the reconciliation fails:
    #: the report's header names it, the offline command exits 3, the monthly message says FAILED) or ``bill``
    #: (billed under its own name as cost center, without a guarantee, with a note).
    unknown_teams: UnknownTeams = UnknownTeams.FAIL
    #: The preemption alarm.
    preemption_alarm: PreemptionAlarmSpec = field(default_factory=PreemptionAlarmSpec)
    #: Where the usage-report operator's Helm chart is mirrored (``ociRepository`` + ``version``, or a vendored
    #: ``directory``; it is published only in the ``awslabs/sagemaker-hyperpod-usage-report`` repository).
    #: Default: the operator is not installed and the collectors' tables come from elsewhere (a warning says so).
    usage_report_chart: HelmChartSource | None = None
