"""What the engine computes: each team's charge, preemption losses, the reconciliation, the report."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from decimal import Decimal

from hyperpod_tenancy.chargeback.model.config import BillingRule, BillingTerm, PriceSource, SharedCostRule
from hyperpod_tenancy.chargeback.model.inputs import BillCredit, CollectionGap, TeamPeriod

__all__ = ["LossBasis", "PreemptionLoss", "Reconciliation", "Report", "TeamCharge"]


@dataclass(frozen=True, kw_only=True)
class TeamCharge:
    """One row of the report: a team (or the idle owner) on one instance type for the month."""

    cluster: str
    team: str
    cost_center: str
    instance_type: str
    #: The team's guarantee over the month (nominal; scaled down only in hours the schedulable capacity was below
    #: the guarantees).
    guaranteed_gpu_hours: Decimal
    #: Everything the team's admitted work held (own guarantee + borrowed).
    used_gpu_hours: Decimal
    borrowed_gpu_hours: Decimal
    #: Idle guaranteed capacity other teams borrowed (idle rows: unallocated capacity lent to borrowers).
    lent_gpu_hours: Decimal
    #: Idle GPU-hours this row pays for: under ``reservation`` the team's unlent idle guarantee, under ``usage``
    #: none; on idle rows the capacity nobody used that the idle owner pays.
    idle_gpu_hours: Decimal
    lost_to_preemption_gpu_hours: Decimal
    #: GPU-hours charged * price, before the lender credit.
    gpu_charge: Decimal
    lender_credit: Decimal
    shared_charge: Decimal
    #: The team's own tagged lines (its stack's resources, its Studio apps and spaces); on their own row.
    direct_charge: Decimal = Decimal(0)
    #: ``gpu_charge - lender_credit + shared_charge + direct_charge``.
    total: Decimal


class LossBasis(enum.StrEnum):
    """What one eviction's preemption loss is computed from."""

    #: The newest checkpoint before the eviction was collected: the loss is exact.
    MEASURED = "measured"
    #: A checkpoint interval was declared at admission: at most that much work since the last checkpoint.
    DECLARED_INTERVAL = "declared interval"
    #: Nothing was declared, so nothing made the workload checkpoint: the whole run since admission.
    WHOLE_RUN = "whole run"


@dataclass(frozen=True, kw_only=True)
class PreemptionLoss:
    """GPU-hours a team lost to preemption in the month on one instance type at one priority class."""

    cluster: str
    team: str
    instance_type: str
    priority_class: str
    evictions: int
    lost_gpu_hours: Decimal
    #: What the losses of these evictions are computed from, each basis once, in :class:`LossBasis` order.
    bases: tuple[LossBasis, ...] = (LossBasis.MEASURED,)
    #: The team's cost center (empty where not known).
    cost_center: str = ""
    #: The lost GPU-hours at the month's GPU-hour price of the instance type, in cents: what the evicted work cost
    #: (already in the team's charge; shown, not billed again).
    lost_usd: Decimal = Decimal(0)

    @property
    def upper_bound(self) -> bool:
        """Whether any of these losses is not measured (a declared interval or the whole run bounds it)."""
        return any(basis is not LossBasis.MEASURED for basis in self.bases)


@dataclass(frozen=True, kw_only=True)
class Reconciliation:
    """Σ team charges + idle + shared against the bill before credits and refunds."""

    charged: Decimal
    #: The bill before credits and refunds (what the charges must add up to); ``None`` without a CUR.
    bill: Decimal | None
    difference: Decimal | None
    #: ``|difference| / bill`` above the configured tolerance: the month fails (:attr:`failed`).
    flagged: bool
    #: Teams with usage or evictions that the configuration does not name, sorted.
    unknown_teams: tuple[str, ...] = ()
    #: The report does not reconcile and must not be sent as is: the difference is above the tolerance
    #: (:attr:`flagged`), or there are unknown teams under :attr:`UnknownTeams.FAIL` (:attr:`unknown_teams_failed`).
    failed: bool = False
    #: Unknown teams fail the month (:attr:`UnknownTeams.FAIL`).
    unknown_teams_failed: bool = False
    #: The relative difference above which the month fails (the configuration's tolerance).
    tolerance: Decimal = Decimal("0.005")
    #: Credits and refunds on the bill, listed with their amounts (allocated to no row).
    credits: tuple[BillCredit, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Report:
    """The month's chargeback report."""

    schema_version: int
    month: str
    cluster: str
    rule: BillingRule
    idle_owner: str
    shared_costs: SharedCostRule
    price_sources: dict[str, PriceSource]
    #: The billing term in force for the month (its date, its sign-off, why it starts mid-quarter if it does).
    term: BillingTerm | None = None
    gpu_hour_prices: dict[str, Decimal]
    rows: tuple[TeamCharge, ...]
    reconciliation: Reconciliation
    #: True where a preemption loss is an upper bound (no last-checkpoint time collected: the declared interval,
    #: the class maximum or the whole run was used).
    preemption_loss_is_upper_bound: bool
    notes: tuple[str, ...] = ()
    #: Preemption loss per team, instance type and priority class (sorted); the rows carry the per-type sums.
    preemption_losses: tuple[PreemptionLoss, ...] = ()
    #: Stretches in which a collector wrote nothing for longer than its threshold (billed by holding the last
    #: snapshot; see :class:`CollectionGap`).
    collection_gaps: tuple[CollectionGap, ...] = ()
    #: The billed period of each team of the configuration whose quota did not exist all month (sorted by team;
    #: empty when every team existed all month or the periods were not known).
    billed_periods: tuple[TeamPeriod, ...] = ()
    #: Teams whose policy does not let them borrow (``sharing`` other than ``lend-and-borrow``) yet whose usage
    #: shows borrowing, with the GPU-hours borrowed (sorted by team): flagged, billed as recorded.
    disallowed_borrowing: tuple[tuple[str, Decimal], ...] = ()
