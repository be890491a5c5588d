"""Inputs and outputs of the chargeback engine (standard library only; see the package docstring).

Units: hours are UTC clock hours (``datetime`` at the top of the hour, timezone-aware UTC); GPU-hours are
GPU counts integrated over time; hourly usage and capacity come in whole GPU-milliseconds (the SQL's
integrals); money is ``decimal.Decimal`` in the bill's currency (USD). Other inputs carry any precision; a
:class:`Report` carries money in cents (the engine rounds by largest remainder, so the rows add up to the
reconciled total exactly) and GPU-hours to four decimal places.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

__all__ = [
    "ALL_INSTANCE_TYPES",
    "IDLE_ROW",
    "MS_PER_HOUR",
    "SCHEMA_VERSION",
    "SHARED",
    "SHARED_COSTS_ROW",
    "BillCredit",
    "BillingRule",
    "BillingTerm",
    "ChargebackConfig",
    "CollectionGap",
    "CostInputs",
    "Eviction",
    "HourlyCapacity",
    "HourlyUsage",
    "InstanceTypeCost",
    "PreemptionLoss",
    "PriceSource",
    "Reconciliation",
    "Report",
    "SharedCost",
    "SharedCostRule",
    "TeamCharge",
    "TeamConfig",
    "TeamCost",
    "TeamPeriod",
    "UnknownTeams",
    "UsageInputs",
    "config_from_json",
    "config_to_json",
    "gpu_hours",
    "merge_teams",
    "starts_a_quarter",
    "team_config_from_json",
    "team_config_to_json",
    "with_teams",
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
    #: Guaranteed instances per instance type (the team's ``compute.quotas``).
    quotas: dict[str, int]
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


#: Milliseconds per hour: GPU-hours = GPU-milliseconds / MS_PER_HOUR.
MS_PER_HOUR = 3_600_000


def gpu_hours(gpu_ms: int) -> Decimal:
    """GPU-milliseconds (of :class:`HourlyUsage` or :class:`HourlyCapacity`) in GPU-hours, for reading them."""
    return Decimal(gpu_ms) / MS_PER_HOUR


class HourlyUsage(NamedTuple):
    """GPU-time a team's admitted work held in one clock hour on one instance type (from Kueue snapshots).

    In whole GPU-milliseconds, as the SQL integrates the snapshots: exact, and an ``int`` is a fraction of the cost
    of a ``Decimal`` over the ~10^5-10^6 records of a month. A named tuple rather than a frozen dataclass for the
    same reason (a frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``). Build it with
    keywords, as every other input.
    """

    hour: dt.datetime
    cluster: str
    instance_type: str
    team: str
    #: GPU-milliseconds of everything the team's admitted workloads held (own quota + borrowed).
    gpu_ms: int
    #: The part over the team's nominal quota (Kueue ``borrowed``), GPU-milliseconds.
    borrowed_gpu_ms: int


@dataclass(frozen=True, kw_only=True, slots=True)
class HourlyCapacity:
    """GPU capacity of one instance type in one clock hour (from the node inventory), in GPU-milliseconds."""

    hour: dt.datetime
    cluster: str
    instance_type: str
    #: GPU-milliseconds of every instance of the type in the cluster that hour.
    gpu_ms: int
    #: The part on nodes that were not schedulable (recovering, deep health checks, NotReady).
    unavailable_gpu_ms: int


@dataclass(frozen=True, kw_only=True)
class Eviction:
    """A workload evicted by preemption."""

    time: dt.datetime
    cluster: str
    team: str
    instance_type: str
    workload: str
    priority_class: str
    gpus: int
    #: When the evicted run started (admission time).
    run_started: dt.datetime
    #: Declared checkpoint interval in minutes (admission annotation), ``None`` where none was declared.
    checkpoint_interval_minutes: int | None = None
    #: Newest checkpoint before the eviction, where collected; else the loss is an upper bound.
    last_checkpoint: dt.datetime | None = None


@dataclass(frozen=True, kw_only=True)
class CollectionGap:
    """A stretch of the month in which one collector wrote nothing for longer than its threshold.

    The SQL (``collection_gaps``) finds it between consecutive records of the collector's table, the month's
    start and end standing in for records. Inside a gap the last snapshot before it holds (the usage and the
    capacity are billed as they were last seen): the report lists the gap so that a reader can judge it.
    """

    #: The table whose records stopped: ``node`` (the platform's node inventory) or ``heartdub`` (the heartbeat
    #: of the usage-report operator, which writes the ``clusterqueue`` snapshots).
    table: str
    #: The last record before the gap (or the month's start).
    start: dt.datetime
    #: The first record after it (or the month's end).
    end: dt.datetime

    @property
    def minutes(self) -> int:
        """Length of the gap in whole minutes (rounded down)."""
        return int((self.end - self.start).total_seconds() // 60)

    @property
    def hours(self) -> tuple[dt.datetime, ...]:
        """Every clock hour the gap overlaps (its first hour is the hour of :attr:`start`)."""
        first = self.start.replace(minute=0, second=0, microsecond=0)
        count = max(1, -(-int((self.end - first).total_seconds()) // 3600))
        return tuple(first + dt.timedelta(hours=h) for h in range(count))


@dataclass(frozen=True, kw_only=True)
class TeamPeriod:
    """The clock hours of the month in which a team's quota exists (its queue's snapshots): its billed period.

    The team's guarantee is billed from :attr:`start` to :attr:`end` only; outside them its capacity is the idle
    owner's, whatever the configuration of record says.
    """

    team: str
    #: The first hour (the top of the hour of the queue's first snapshot, or the month's start).
    start: dt.datetime
    #: The end of the last hour (one hour after the top of the hour of the queue's last snapshot of the month).
    end: dt.datetime

    @property
    def hours(self) -> int:
        """The number of clock hours billed."""
        return int((self.end - self.start).total_seconds() // 3600)


@dataclass(frozen=True, kw_only=True)
class UsageInputs:
    """The month's usage data (what the SQL returns)."""

    usage: tuple[HourlyUsage, ...]
    capacity: tuple[HourlyCapacity, ...]
    evictions: tuple[Eviction, ...] = ()
    #: Gaps in the collectors' records (sorted by table, then start).
    collection_gaps: tuple[CollectionGap, ...] = ()
    #: Tables whose gaps could not be checked (no such table in the inputs), with the reason.
    unchecked_collections: tuple[str, ...] = ()
    #: Each team's billed period (sorted by team); ``None``: not known, every team of the configuration is billed
    #: its guarantee for the whole month. A team of the configuration without a period has no guarantee.
    team_periods: tuple[TeamPeriod, ...] | None = None


@dataclass(frozen=True, kw_only=True)
class InstanceTypeCost:
    """The month's SageMaker cluster usage line for one instance type (CUR ``<region>-Cluster:ml.<type>``)."""

    instance_type: str
    cost: Decimal
    instance_hours: Decimal


@dataclass(frozen=True, kw_only=True)
class SharedCost:
    """One of the cluster's non-GPU cost lines for the month (FSx, EKS, system nodes, NAT, ...)."""

    category: str
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class TeamCost:
    """The month's cost of the lines one team's tag names (its stack's resources, its Studio apps and spaces)."""

    team: str
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class BillCredit:
    """A credit or refund on the month's bill (CUR ``line_item_line_item_type`` ``Credit`` or ``Refund``).

    Never part of a GPU-hour's price nor of a shared cost: the charges are reconciled with the bill before credits
    and refunds, and the report lists each one with its amount.
    """

    #: ``credit`` or ``refund``.
    kind: str
    #: What it is against: an instance type (``ml.p5.48xlarge``), a team, or a shared-cost category (``fsx``).
    name: str
    #: The amount (negative for a credit).
    cost: Decimal


@dataclass(frozen=True, kw_only=True)
class CostInputs:
    """The month's bill for the cluster (from the CUR), or ``None`` parts when only prices are known."""

    instance_types: tuple[InstanceTypeCost, ...] = ()
    shared: tuple[SharedCost, ...] = ()
    #: Lines a team's tag names, per team: charged to that team alone.
    teams: tuple[TeamCost, ...] = ()
    #: The cluster's whole bill for the month (every line above and the credits); ``None`` without a CUR.
    bill_total: Decimal | None = None
    #: Credits and refunds on the bill, by kind and name (in ``bill_total``, in no other line).
    credits: tuple[BillCredit, ...] = ()


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


#: Version of the stored chargeback records (:func:`config_to_json`, :func:`team_config_to_json`). A record
#: without a version was written before records carried one, in this layout, and is read as this version.
RECORD_VERSION = 1


def _check_version(document: Any, what: str) -> None:
    """Refuse a record of another version than :data:`RECORD_VERSION`, with the fix."""
    version = document.get("version", RECORD_VERSION) if isinstance(document, dict) else RECORD_VERSION
    if isinstance(version, bool) or version != RECORD_VERSION:
        raise ValueError(
            f"{what} of version {version!r}; this release reads version {RECORD_VERSION}. Fix: deploy the team "
            "stacks and the chargeback stack with the same library version."
        )


def config_to_json(config: ChargebackConfig) -> str:
    """Serialize ``config`` as canonical JSON (sorted keys, money as strings): the monthly Lambda's copy of it.

    :func:`config_from_json` reads it back to an equal :class:`ChargebackConfig`.
    """
    document = {
        "version": RECORD_VERSION,
        "cluster": config.cluster,
        "terms": [
            {
                "effectiveFrom": term.effective_from.isoformat(),
                "rule": term.rule.value,
                "idleOwner": term.idle_owner,
                "sharedCosts": term.shared_costs.value,
                "signedOffBy": term.signed_off_by,
                "midQuarterReason": term.mid_quarter_reason,
            }
            for term in config.terms
        ],
        "teams": [_team_document(team) for team in config.teams],
        "gpusPerInstance": dict(sorted(config.gpus_per_instance.items())),
        "prices": {k: str(v) for k, v in sorted(config.prices.items())},
        "maxCheckpointMinutes": dict(sorted(config.max_checkpoint_minutes.items())),
        "tolerance": str(config.tolerance),
        "unknownTeams": config.unknown_teams.value,
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def team_config_to_json(team: TeamConfig) -> str:
    """Serialize one team's record (name, cost center, quotas) as canonical JSON: what its team stack stores.

    The monthly job reads the records of every team at run time (so the shared stack lists no team);
    :func:`team_config_from_json` reads one back.
    """
    return json.dumps({"version": RECORD_VERSION, **_team_document(team)}, sort_keys=True)


def _team_document(team: TeamConfig) -> dict[str, Any]:
    return {
        "name": team.name,
        "costCenter": team.cost_center,
        "quotas": dict(sorted(team.quotas.items())),
        **({} if team.borrows else {"borrows": False}),
    }


def team_config_from_json(text: str) -> TeamConfig:
    """Read a team record written by :func:`team_config_to_json`.

    Raises:
        ValueError: the text is not JSON, a key is missing, a quota is not a whole number of instances, or the
            record is of another version (:data:`RECORD_VERSION`).

    """
    document = json.loads(text)
    _check_version(document, "chargeback team record")
    try:
        quotas = document["quotas"]
        if not isinstance(quotas, dict) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in quotas.values()
        ):
            raise ValueError(f"team record: quotas must map instance types to whole numbers, got {quotas!r}")
        return TeamConfig(
            name=str(document["name"]),
            cost_center=str(document["costCenter"]),
            quotas=quotas,
            borrows=document.get("borrows", True) is not False,
        )
    except (KeyError, TypeError) as missing:
        raise ValueError(f"team record: missing key {missing}; write it with team_config_to_json") from None


def merge_teams(teams: Iterable[TeamConfig]) -> tuple[TeamConfig, ...]:
    """``teams`` sorted by name, one per name: a later record of a name replaces an earlier one."""
    by_name = {team.name: team for team in teams}
    return tuple(by_name[name] for name in sorted(by_name))


def with_teams(config: ChargebackConfig, teams: Iterable[TeamConfig]) -> ChargebackConfig:
    """``config`` billing ``teams`` (:func:`merge_teams`) instead of its own."""
    return dataclasses.replace(config, teams=merge_teams(teams))


def config_from_json(text: str) -> ChargebackConfig:
    """Read a :class:`ChargebackConfig` written by :func:`config_to_json`.

    Raises:
        ValueError: a required key is missing, a value has the wrong form (the message names the key), or the
            configuration is of another version (:data:`RECORD_VERSION`).

    """
    document: dict[str, Any] = json.loads(text)
    _check_version(document, "chargeback configuration")
    try:
        return ChargebackConfig(
            cluster=document["cluster"],
            terms=tuple(
                BillingTerm(
                    effective_from=dt.date.fromisoformat(term["effectiveFrom"]),
                    rule=BillingRule(term["rule"]),
                    idle_owner=term["idleOwner"],
                    shared_costs=SharedCostRule(term.get("sharedCosts", SharedCostRule.IDLE_OWNER.value)),
                    signed_off_by=str(term.get("signedOffBy", "")),
                    mid_quarter_reason=str(term.get("midQuarterReason", "")),
                )
                for term in document["terms"]
            ),
            teams=tuple(team_config_from_json(json.dumps(team)) for team in document["teams"]),
            gpus_per_instance={k: int(v) for k, v in document["gpusPerInstance"].items()},
            prices={k: Decimal(v) for k, v in document.get("prices", {}).items()},
            max_checkpoint_minutes={k: int(v) for k, v in document.get("maxCheckpointMinutes", {}).items()},
            tolerance=Decimal(document.get("tolerance", "0.005")),
            unknown_teams=UnknownTeams(document.get("unknownTeams", UnknownTeams.FAIL.value)),
        )
    except KeyError as missing:
        raise ValueError(
            f"chargeback configuration: missing key {missing}; write it with config_to_json"
        ) from None
