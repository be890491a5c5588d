"""The tenancy plan: what each team is promised, how far it can burst, what an eviction costs, and the bill.

Everything here is derived from the policy with the rules the platform itself enforces, so the plan cannot
promise what the scheduler would not do:

* **Capacity** per instance type: the instances of its groups, the ``reserved`` ones (outside every quota, for
  HyperPod's replacements), what is promisable (``count - reserved``), what the teams are guaranteed and what
  is left unallocated. GPUs are instances x the accelerators of one instance (the groups' ``resources`` or the
  built-in catalogue, as the ClusterQueues count them).
* **Burst** per team and type, in GPUs, as Kueue admits it (both fairness backends render the same limits): a
  team may use its guarantee plus what it may borrow, ``floor(guarantee x borrowLimit / 100)`` or its absolute
  limit on the type (:func:`~hyperpod_tenancy.policy.borrowing.borrowing_limit`, the rule the ClusterQueues use), and
  never more than the other teams lend (every guarantee but those of ``dont-lend`` teams; the cohort has no
  quota of its own, so unallocated capacity is not lent). All of a burst is reclaimable: every lender's
  ClusterQueue reclaims (``reclaimWithinCohort: Any``) when its owner returns.
* **GPU-hours at risk per eviction**: the reclaimable GPUs x the checkpoint bound of each priority class the team
  may use (``maxCheckpointInterval``: admission refuses a longer declared interval) — the most one reclaim of the
  whole burst throws away.
* **Cost** per team for a month under the platform's billing rule in force, computed by the chargeback engine
  (:func:`hyperpod_tenancy.chargeback.engine.compute_report`) over a month in which every team runs exactly its
  guarantee on every node, nothing is borrowed and no node is down, at the configured (or given) prices: what
  a team's guarantee costs, and what the idle owner pays for the reserved and unallocated nodes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

from hyperpod_tenancy.chargeback import engine
from hyperpod_tenancy.chargeback.model import (
    MS_PER_HOUR,
    ChargebackConfig,
    CostInputs,
    HourlyCapacity,
    HourlyUsage,
    Report,
    TeamCharge,
    UsageInputs,
)
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy.borrowing import Resource, absolute_limit, borrowing_limit
from hyperpod_tenancy.policy.grains import as_decimal, guaranteed, partitions, quota_instances
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import Platform, SharingStrategy, Team

__all__ = [
    "ClassRisk",
    "PlanCost",
    "TeamShare",
    "TenancyPlan",
    "TypeCapacity",
    "build_plan",
    "current_month",
    "gpus_per_instance",
]


@dataclass(frozen=True, kw_only=True)
class TypeCapacity:
    """One instance type of the cluster: its nodes and who is promised them."""

    instance_type: str
    #: Accelerators (GPUs, Neuron devices) of one instance; 0 for a type without any.
    gpus_per_instance: int
    #: Instances of every group of the type.
    instances: int
    #: Instances outside every quota (HyperPod replaces a faulty node with one of them).
    reserved: int
    #: Instances the teams' guarantees share out: the sum of their quotas on the type (a fraction of an instance
    #: where a team holds accelerators).
    guaranteed: Decimal
    #: Instances no team is guaranteed (``instances - reserved - guaranteed``).
    unallocated: Decimal

    @property
    def promisable(self) -> int:
        """Instances quotas may promise: ``instances - reserved``."""
        return self.instances - self.reserved

    @property
    def gpus(self) -> int:
        """Accelerators of every instance of the type."""
        return self.instances * self.gpus_per_instance


@dataclass(frozen=True, kw_only=True)
class ClassRisk:
    """What one eviction of a team's whole burst loses at one of its priority classes."""

    priority_class: str
    preemptible: bool
    #: The class's ``maxCheckpointInterval`` in minutes: the most work since the last checkpoint.
    checkpoint_minutes: int
    #: Reclaimable GPUs x the checkpoint bound, in GPU-hours.
    gpu_hours_at_risk: Decimal


@dataclass(frozen=True, kw_only=True)
class TeamShare:
    """One team's promise on one instance type, in GPUs (instances for the guarantee as written)."""

    team: str
    instance_type: str
    #: The team's quota on the type, in instances (a fraction of one where it holds accelerators).
    guaranteed_instances: Decimal
    guaranteed_gpus: int
    #: The guarantee as a fraction of the type's promisable GPUs (0 when nothing is promisable).
    share: Decimal
    #: The strategy in force (``dont-lend`` for everyone when idle sharing is off).
    sharing: SharingStrategy
    #: The team's own borrowing limit: ``floor(guarantee x borrowLimit / 100)``, or its absolute limit on the type;
    #: 0 when it does not borrow.
    borrowing_limit_gpus: int
    #: What the other teams lend on the type when all of it is idle.
    lent_by_others_gpus: int
    #: Guarantee + what it can actually borrow: ``guarantee + min(borrowing limit, lent by others)``.
    burst_ceiling_gpus: int
    #: The borrowed part of a full burst, which the lenders reclaim when their work returns.
    reclaimable_gpus: int
    #: GPU-hours one reclaim of the whole burst may lose, per priority class the team may use.
    risks: tuple[ClassRisk, ...]
    #: GPU partitions the team holds on the type (``{"mig-1g.10gb": 98}``), besides whole GPUs.
    partitions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class PlanCost:
    """The plan's month under the billing rule in force: the chargeback engine's report of it."""

    month: str
    report: Report

    def team_totals(self) -> dict[str, Decimal]:
        """Total charge per row owner (teams, the idle owner's rows, shared costs), in report order."""
        totals: dict[str, Decimal] = {}
        for row in self.report.rows:
            totals[row.team] = totals.get(row.team, Decimal(0)) + row.total
        return totals

    def rows(self) -> tuple[TeamCharge, ...]:
        """Return the report's rows (one per team and instance type, then the idle owner's)."""
        return self.report.rows


@dataclass(frozen=True, kw_only=True)
class TenancyPlan:
    """The whole plan of one platform."""

    platform: str
    cluster: str
    fairness_backend: str
    capacities: tuple[TypeCapacity, ...]
    shares: tuple[TeamShare, ...]
    #: Every guardrail warning of the policy, with its code.
    warnings: tuple[PolicyIssue, ...]
    #: None without a ``chargeback:`` section (no billing rule to apply) or when the month cannot be priced.
    cost: PlanCost | None
    #: Why there is no cost: no ``chargeback:`` section, or the engine's reason (a type without a price, no
    #: billing term in force in the month).
    cost_note: str | None = None

    def shares_of(self, instance_type: str) -> tuple[TeamShare, ...]:
        """Return the teams' shares of one type, largest guarantee first (then by name)."""
        return tuple(
            sorted(
                (s for s in self.shares if s.instance_type == instance_type),
                key=lambda s: (-s.guaranteed_gpus, s.team),
            )
        )


def current_month(today: dt.date | None = None) -> str:
    """``YYYY-MM`` of ``today`` (default: today in UTC): the month a plan prices by default."""
    day = today or dt.datetime.now(dt.UTC).date()
    return f"{day.year:04d}-{day.month:02d}"


def gpus_per_instance(platform: Platform) -> dict[str, int]:
    """Accelerators of one instance per instance type of the cluster (0 for a type without any)."""
    gpus: dict[str, int] = {}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        gpus.setdefault(group.instance_type, shape.accelerators if shape is not None else 0)
    return gpus


def _capacities(platform: Platform, gpus: Mapping[str, int]) -> tuple[TypeCapacity, ...]:
    capacities = []
    for itype in gpus:
        groups = platform.instance_group_for(itype)
        instances = sum(g.count for g in groups)
        reserved = sum(g.reserved for g in groups)
        held = sum((quota_instances(platform, t, itype) for t in platform.hosted_teams), Fraction(0))
        capacities.append(
            TypeCapacity(
                instance_type=itype,
                gpus_per_instance=gpus[itype],
                instances=instances,
                reserved=reserved,
                guaranteed=as_decimal(held),
                unallocated=as_decimal(instances - reserved - held),
            )
        )
    return tuple(capacities)


def _risks(platform: Platform, team: Team, reclaimable: int) -> tuple[ClassRisk, ...]:
    risks = []
    for name in team.allowed_priority_classes:
        pc = platform.priority_class(name)
        minutes = pc.max_checkpoint_minutes or 0
        risks.append(
            ClassRisk(
                priority_class=name,
                preemptible=pc.preemptible,
                checkpoint_minutes=minutes,
                gpu_hours_at_risk=Decimal(reclaimable * minutes) / 60,
            )
        )
    return tuple(risks)


def _shares(platform: Platform, capacities: Sequence[TypeCapacity]) -> tuple[TeamShare, ...]:
    shares = []
    teams = platform.hosted_teams
    for cap in capacities:
        per_instance = cap.gpus_per_instance
        # what every team lends on this type while idle (a dont-lend team keeps all of it: lendingLimit 0)
        lends = {
            t.name: guaranteed(platform, t, cap.instance_type, per_instance)
            for t in teams
            if platform.effective_sharing(t).lends
        }
        lent_in_total = sum(lends.values())
        promisable_gpus = cap.promisable * per_instance
        for team in teams:
            if (
                cap.instance_type not in team.compute.quotas
                and absolute_limit(team, cap.instance_type) is None
            ):
                continue
            sharing = platform.effective_sharing(team)
            held = guaranteed(platform, team, cap.instance_type, per_instance)
            limit = borrowing_limit(platform, team, cap.instance_type, Resource.ACCELERATORS, per_instance)
            others = lent_in_total - lends.get(team.name, 0)
            borrowable = min(limit, others)
            shares.append(
                TeamShare(
                    team=team.name,
                    instance_type=cap.instance_type,
                    guaranteed_instances=as_decimal(quota_instances(platform, team, cap.instance_type)),
                    guaranteed_gpus=held,
                    share=Decimal(held) / promisable_gpus if promisable_gpus else Decimal(0),
                    sharing=sharing,
                    borrowing_limit_gpus=limit,
                    lent_by_others_gpus=others,
                    burst_ceiling_gpus=held + borrowable,
                    reclaimable_gpus=borrowable,
                    risks=_risks(platform, team, borrowable),
                    partitions=partitions(platform, team, cap.instance_type),
                )
            )
    return tuple(shares)


def _planned_usage(platform: Platform, capacities: Sequence[TypeCapacity], month: str) -> UsageInputs:
    """Return a month in which every team runs exactly its guarantee on every node, and no node is down."""
    start, end = engine.month_bounds(month)
    hours = [start + dt.timedelta(hours=h) for h in range(int((end - start).total_seconds()) // 3600)]
    cluster = platform.cluster.name
    capacity: list[HourlyCapacity] = []
    usage: list[HourlyUsage] = []
    for cap in capacities:
        if cap.gpus_per_instance == 0:
            continue
        held = [
            (t.name, guaranteed(platform, t, cap.instance_type, cap.gpus_per_instance) * MS_PER_HOUR)
            for t in platform.hosted_teams
            if guaranteed(platform, t, cap.instance_type, cap.gpus_per_instance)
        ]
        for hour in hours:
            capacity.append(
                HourlyCapacity(
                    hour=hour,
                    cluster=cluster,
                    instance_type=cap.instance_type,
                    gpu_ms=cap.gpus * MS_PER_HOUR,
                    unavailable_gpu_ms=0,
                )
            )
            usage.extend(
                HourlyUsage(
                    hour=hour,
                    cluster=cluster,
                    instance_type=cap.instance_type,
                    team=team,
                    gpu_ms=gpu_ms,
                    borrowed_gpu_ms=0,
                )
                for team, gpu_ms in held
            )
    return UsageInputs(usage=tuple(usage), capacity=tuple(capacity))


def build_plan(
    platform: Platform, *, month: str | None = None, prices: Mapping[str, Decimal] | None = None
) -> TenancyPlan:
    """Build the tenancy plan of a validated platform.

    Args:
        platform: a platform that passed validation.
        month: ``YYYY-MM`` to price (its billing term and its number of hours). Default: the current month.
        prices: USD per GPU-hour by instance type, replacing the configured ``chargeback.prices`` where given.

    Returns:
        The plan. Its cost is None, and its ``cost_note`` says why, when the platform has no ``chargeback:``
        section, a type with GPUs has no price (the monthly job takes prices from the bill; a plan needs
        ``chargeback.prices`` or ``prices``) or no billing term is in force in ``month``.

    """
    # imported here: the policy's rule registry is only needed for the warnings
    from hyperpod_tenancy.policy.chargeback import chargeback_config  # noqa: PLC0415
    from hyperpod_tenancy.policy.validation import policy_warnings  # noqa: PLC0415

    gpus = gpus_per_instance(platform)
    capacities = _capacities(platform, gpus)
    cost: PlanCost | None = None
    note: str | None = "no `chargeback:` section, so there is no billing rule to price the plan with"
    if platform.chargeback is not None:
        config = chargeback_config(platform)
        if prices:
            config = _with_prices(config, prices)
        priced = month or current_month()
        try:
            report = engine.compute_report(
                config, priced, _planned_usage(platform, capacities, priced), CostInputs()
            )
        except engine.ChargebackInputError as exc:
            note = f"the month {priced} cannot be priced: {exc}"
        else:
            cost, note = PlanCost(month=priced, report=report), None
    return TenancyPlan(
        platform=platform.name,
        cluster=platform.cluster.name,
        fairness_backend=str(platform.fairness_backend),
        capacities=capacities,
        shares=_shares(platform, capacities),
        warnings=tuple(policy_warnings(platform)),
        cost=cost,
        cost_note=note,
    )


def _with_prices(config: ChargebackConfig, prices: Mapping[str, Decimal]) -> ChargebackConfig:
    return dataclasses.replace(config, prices={**config.prices, **prices})
