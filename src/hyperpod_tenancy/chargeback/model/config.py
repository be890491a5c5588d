"""The chargeback configuration: billing rules and terms, teams, prices, and the row names of the report."""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

__all__ = [
    "ALL_INSTANCE_TYPES",
    "IDLE_ROW",
    "SCHEMA_VERSION",
    "SHARED",
    "SHARED_COSTS_ROW",
    "BillingRule",
    "BillingTerm",
    "ChargebackConfig",
    "PriceSource",
    "SharedCostRule",
    "TeamConfig",
    "UnknownTeams",
    "starts_a_quarter",
]

#: Version of the report format (JSON ``schemaVersion``); bump on any incompatible change.
SCHEMA_VERSION = 1


#: ``idle_owner`` value that splits idle capacity by guarantee instead of naming a cost center.
SHARED = "shared"


#: ``TeamCharge.team`` of the rows carrying idle capacity (paid by the idle owner); not a DNS label, so no team's name.
IDLE_ROW = "(idle)"


#: ``TeamCharge.team`` of the row carrying the shared costs paid by a named idle owner.
SHARED_COSTS_ROW = "(shared)"


#: ``TeamCharge.instance_type`` of a row that is about no one instance type (the shared costs).
ALL_INSTANCE_TYPES = "(all)"


class BillingRule(enum.StrEnum):
    """Who pays for guaranteed capacity."""

    #: A team pays its guaranteed quota whether used or not; a borrower pays what it borrowed; lenders are
    #: credited for lent idle guaranteed capacity pro rata to what each had idle.
    RESERVATION = "reservation"
    #: A team pays what it ran (own quota and borrowed alike).
    USAGE = "usage"


class SharedCostRule(enum.StrEnum):
    """How the cluster's non-GPU lines (FSx, EKS, system nodes, NAT, Prometheus, the pipeline) are split."""

    #: Everything to the idle owner.
    IDLE_OWNER = "idle-owner"
    #: Split by each team's guaranteed GPUs.
    BY_GUARANTEE = "by-guarantee"


class UnknownTeams(enum.StrEnum):
    """What a month does with a namespace that has usage or evictions but is no team of the configuration."""

    #: The reconciliation fails: the report names the teams in its header, the CLI exits 3 and the monthly job's
    #: message says FAILED (a team's stack was removed while it still ran, or a namespace nobody onboarded).
    FAIL = "fail"
    #: Billed under its own name as cost center, without a guarantee; a note names it.
    BILL = "bill"


class PriceSource(enum.StrEnum):
    """Where a GPU-hour price came from."""

    #: SageMaker cluster usage cost ÷ instance-hours ÷ GPUs per instance, from the CUR.
    CUR = "cur"
    #: The configured price table (``chargeback.prices``).
    PRICE_TABLE = "price-table"


@dataclass(frozen=True, kw_only=True)
class BillingTerm:
    """A billing rule and idle owner in force from ``effective_from`` (inclusive) until the next term."""

    effective_from: dt.date
    rule: BillingRule
    #: A cost center name, or :data:`SHARED` (idle split by guarantee).
    idle_owner: str
    shared_costs: SharedCostRule = SharedCostRule.IDLE_OWNER
    #: Who signed the term off (the cost-center owners, or the record of their sign-off); every report names it.
    signed_off_by: str = ""
    #: Why the term starts on a day that is not the first of a quarter (empty: it does).
    mid_quarter_reason: str = ""

    @property
    def starts_a_quarter(self) -> bool:
        """Whether :attr:`effective_from` is the first day of a quarter (January, April, July or October 1st)."""
        return starts_a_quarter(self.effective_from)


def starts_a_quarter(day: dt.date) -> bool:
    """Whether ``day`` is the first day of a calendar quarter: a billing rule changes only there, unless a term says why."""
    return day.day == 1 and day.month in (1, 4, 7, 10)


@dataclass(frozen=True, kw_only=True)
class TeamConfig:
    """What the engine needs to know about one team."""

    name: str
    cost_center: str
    #: Guaranteed instances per instance type (the team's ``compute.quotas``): a fraction where the team holds
    #: accelerators of a type (4 of 8 GPUs: 1/2), so the GPU-hours it is guaranteed are exact.
    quotas: Mapping[str, int | Fraction]
    #: Whether the policy lets the team borrow (its sharing is ``lend-and-borrow``); borrowing by a team that may
    #: not is flagged in the report, not billed silently.
    borrows: bool = True


@dataclass(frozen=True, kw_only=True)
class ChargebackConfig:
    """Everything the engine reads from the policy (built from a ``Platform`` by the policy side)."""

    cluster: str
    #: Sorted by ``effective_from``; the term in force on the first day of a month applies to that month.
    terms: tuple[BillingTerm, ...]
    teams: tuple[TeamConfig, ...]
    #: GPUs per instance, per instance type used by the cluster.
    gpus_per_instance: dict[str, int]
    #: Fallback $/GPU-hour per instance type (used where the CUR has no cluster usage line).
    prices: dict[str, Decimal] = field(default_factory=dict)
    #: Maximum checkpoint interval per Kueue priority class (``<class>-priority``), in minutes.
    max_checkpoint_minutes: dict[str, int] = field(default_factory=dict)
    #: Relative mismatch between Σ charges and the bill above which a report is flagged (0.005 = 0.5 %).
    tolerance: Decimal = Decimal("0.005")
    #: A namespace with usage that is no team here: a reconciliation failure, or billed under its own name.
    unknown_teams: UnknownTeams = UnknownTeams.FAIL
    #: Per instance type whose GPUs are partitioned (``migConfig``): the compute slices of each GPU (of
    #: :data:`~hyperpod_tenancy.chargeback.model.SLICES_PER_GPU`) its layout makes into partitions. The others
    #: are stranded: no team can hold them, so they are the idle owner's, and the report says how many GPU-hours.
    partitioned_slices: dict[str, int] = field(default_factory=dict)
