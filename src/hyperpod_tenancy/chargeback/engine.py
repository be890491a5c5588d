"""The billing rules: a month of hourly usage, capacity, evictions and costs in, a reconciled :class:`Report` out.

Pure and deterministic: the same inputs give the same report, byte for byte once rendered, whatever the caller's
``decimal`` context (the engine computes in its own) and whatever the order of the input records.

Per instance type ``f`` and clock hour ``h`` (all quantities GPU-hours of that hour):

* ``C`` capacity and ``X`` its unschedulable part come from the node inventory (:class:`~.model.HourlyCapacity`);
* a team's guarantee ``N_t`` is nominal: quota instances * GPUs per instance. Only when the schedulable capacity
  ``C - X`` is below ``Σ N_t`` (more nodes recovering than are reserved, or a group smaller than its quotas) are
  the guarantees of that hour scaled by ``(C - X) / Σ N_t`` (rounded down to 1e-12 GPU-hour), so unavailable
  capacity is always outside every guarantee and owned by the idle owner (a note counts those hours);
* ``own_t = U_t - B_t`` (used within the guarantee; usage above ``N_t`` not recorded as borrowed is counted as
  borrowed, as Kueue defines borrowing, with a note), ``idle_t = N_t - own_t``;
* ``unallocated = C - Σ N_t``: capacity no quota covers (reserved, unallocated and unavailable nodes), from the
  inventory, never the remainder that makes a sum come out;
* borrowing ``B = Σ B_t`` is lent first from the teams' idle guarantees, pro rata to what each had idle
  (``lent_t = min(B, Σ idle) * idle_t / Σ idle``, rounded down to 1e-24 GPU-hour; Kueue records that a queue
  borrowed, not from whom), and the rest ``B_u`` from unallocated capacity, which credits the idle owner.

Billing rules (``p`` the month's price of a GPU-hour of ``f``):

* ``reservation``: a team pays ``(N_t + B_t) * p - lent_t * p`` (the last term is its lender credit); the idle
  owner pays ``unallocated * p - B_u * p``;
* ``usage``: a team pays ``U_t * p``; the idle owner pays every idle GPU-hour: ``(C - Σ U_t) * p``.

Either way the rows of ``f`` add up to ``C * p`` and no charge is negative. The idle owner is a cost center (one
``(idle)`` row per instance type) or ``shared``: then the idle rows are split by guarantee on that type (by the
whole guarantee where no team holds one on it), one row per cost center. Shared costs (FSx, EKS, NAT, ...)
go to the idle owner (a ``(shared)`` row) or are split over the team rows by guaranteed GPU-hours. Lines a
team's tag names (its stack's resources, its Studio apps and spaces, which can be GPU instances) are that team's
alone: a row of the team with instance type ``(all)`` and the cost as its direct charge.

Money is rounded to cents by largest remainder, per column, so the rows add up to the reconciled total exactly;
the reconciliation compares that total with the bill before credits and refunds (which are listed, never in a price)
and fails the month on a relative difference above the tolerance.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Context, Decimal, localcontext
from typing import NoReturn, TypeAlias

from hyperpod_tenancy.chargeback.model import (
    ALL_INSTANCE_TYPES,
    IDLE_ROW,
    SCHEMA_VERSION,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    CostInputs,
    Eviction,
    HourlyUsage,
    LossBasis,
    PreemptionLoss,
    PriceSource,
    Reconciliation,
    Report,
    SharedCostRule,
    TeamCharge,
    TeamConfig,
    TeamPeriod,
    UnknownTeams,
    UsageInputs,
)

__all__ = ["ChargebackInputError", "compute_report", "month_bounds", "preemption_loss", "term_in_force"]

#: The engine's own arithmetic: enough digits that pro rata shares of a month sum back exactly to the cent.
_CONTEXT = Context(prec=40, rounding=ROUND_HALF_EVEN)
_CENT = Decimal("0.01")
_GPU_HOURS = Decimal("0.0001")
_PRICE = Decimal("0.000001")
_ZERO = Decimal(0)
_ONE = Decimal(1)
_HOUR = dt.timedelta(hours=1)
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


class ChargebackInputError(ValueError):
    """The month's inputs cannot be billed as given; the message names the record or setting and the fix."""


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    """Return the first instant of ``month`` (``YYYY-MM``) and of the next month, in UTC.

    Raises:
        ChargebackInputError: ``month`` is not ``YYYY-MM``.

    """
    match = _MONTH.match(month)
    if match is None:
        raise ChargebackInputError(f"month {month!r} is not YYYY-MM; pass e.g. '2026-07'.")
    year, mon = int(match[1]), int(match[2])
    start = dt.datetime(year, mon, 1, tzinfo=dt.UTC)
    end = dt.datetime(year + mon // 12, mon % 12 + 1, 1, tzinfo=dt.UTC)
    return start, end


def term_in_force(terms: Sequence[BillingTerm], first_day: dt.date) -> BillingTerm:
    """Return the billing term in force on ``first_day``: the last one effective on or before it.

    A term effective mid-month applies from the next month, so re-running a past month always uses the rule that
    was in force for all of it.

    Raises:
        ChargebackInputError: no term is effective on or before ``first_day``.

    """
    in_force = [t for t in terms if t.effective_from <= first_day]
    if not in_force:
        earliest = min((t.effective_from for t in terms), default=None)
        since = (
            f"the earliest term starts {earliest.isoformat()}" if earliest else "no billing term is defined"
        )
        raise ChargebackInputError(
            f"no billing term is in force on {first_day.isoformat()} ({since}); add a "
            f"`chargeback.billingTerms` entry with `effectiveFrom` on or before {first_day.isoformat()}, "
            "signed by the cost-center owners."
        )
    return max(in_force, key=lambda t: t.effective_from)


def preemption_loss(eviction: Eviction) -> tuple[Decimal, LossBasis]:
    """Return the GPU-hours one eviction threw away, and what that figure is computed from.

    ``gpus * (eviction - last checkpoint)`` when the last checkpoint was collected (never more than the run:
    :attr:`LossBasis.MEASURED`, exact); otherwise ``gpus * min(declared interval, run)`` when the workload declared
    a checkpoint interval at admission (:attr:`LossBasis.DECLARED_INTERVAL`, an upper bound); otherwise the whole
    run since admission (:attr:`LossBasis.WHOLE_RUN`). A workload that declared nothing was not made to
    checkpoint: under ``checkpointEnforcement: deny`` admission refuses undeclared work wherever a checkpoint is
    mandatory, so a missing declaration means nothing forced one, and the class's ``maxCheckpointInterval``
    says nothing about what was lost.

    Raises:
        ChargebackInputError: the eviction precedes the run's start.

    """
    run = eviction.time - eviction.run_started
    if run < dt.timedelta(0):
        raise ChargebackInputError(
            f"eviction of {eviction.workload!r} (team {eviction.team!r}) at {eviction.time.isoformat()} precedes "
            f"its run start {eviction.run_started.isoformat()}; check the collector's eviction records."
        )
    if eviction.last_checkpoint is not None:
        lost = min(eviction.time - max(eviction.last_checkpoint, eviction.run_started), run)
        lost, basis = max(lost, dt.timedelta(0)), LossBasis.MEASURED
    elif eviction.checkpoint_interval_minutes:
        lost, basis = (
            min(dt.timedelta(minutes=eviction.checkpoint_interval_minutes), run),
            LossBasis.DECLARED_INTERVAL,
        )
    else:
        lost, basis = run, LossBasis.WHOLE_RUN
    with localcontext(_CONTEXT):
        hours = Decimal(lost // dt.timedelta(microseconds=1)) / Decimal(3_600_000_000)
        return eviction.gpus * hours, basis


@dataclass
class _Acc:
    """Month sums of one row (GPU-hours, exact)."""

    guaranteed: Decimal = _ZERO
    used: Decimal = _ZERO
    borrowed: Decimal = _ZERO
    lent: Decimal = _ZERO
    idle: Decimal = _ZERO
    lost: Decimal = _ZERO


@dataclass
class _TypeAcc:
    """Month sums of one instance type (GPU-hours, exact)."""

    capacity: Decimal = _ZERO
    unallocated: Decimal = _ZERO
    from_unallocated: Decimal = _ZERO  # borrowing lent from unallocated capacity (B_u)
    idle_guaranteed_unlent: Decimal = _ZERO
    scaled_hours: int = 0
    reclassified: int = 0
    teams: dict[str, _Acc] = field(default_factory=dict)


#: Picohours (1e-12 GPU-hour) per GPU-hour: the hour loop computes in whole picohours, as ``int`` (several times
#: faster than ``Decimal``). A scaled guarantee is rounded down to the picohour, so the scaled guarantees never
#: exceed the schedulable capacity.
_PICO = 10**12
#: Loan shares are kept in units of 1e-12 picohour (1e-24 GPU-hour), rounded down: a team is never credited
#: more than it had idle, and a month's shares fall short of the lent total by less than 1e-18 GPU-hour.
_FINE = 10**12

#: A quantity in whole picohours.
_Pico: TypeAlias = int


def _ms_to_pico(gpu_ms: list[int]) -> list[int]:
    """GPU-milliseconds → picohours (``ms * 10^12 / 3.6e6``), each to the nearest: 1e-12 GPU-hour resolution.

    ``ms * 2.5e6 / 9`` has a remainder in ninths, never a tie, so rounding half up is rounding to nearest.
    """
    return [(ms * 5_000_000 + 9) // 18 for ms in gpu_ms]


def _from_pico(picohours: int) -> Decimal:
    """Picohours → GPU-hours, exactly."""
    return Decimal(picohours).scaleb(-12)


def _from_fine(fine: int) -> Decimal:
    """Units of :data:`_FINE` per picohour → GPU-hours, exactly."""
    return Decimal(fine).scaleb(-24)


@dataclass(slots=True)
class _PicoTypeAcc:
    """One instance type's sums while the hours are added (picohours): one list per quantity, a slot per team.

    Columns rather than an object per team: each hour's rule is a handful of list comprehensions over the teams
    (the same additions, in the same order, as a loop over team objects, so the same exact sums).
    """

    names: list[str]
    #: Team name → its slot.
    index: dict[str, int]
    #: Each team's nominal guarantee of one hour.
    nominal: list[int]
    #: Sums of the guarantees of the hours whose guarantees were scaled down (the others are ``full_hours`` of
    #: ``nominal``).
    guaranteed: list[int]
    used: list[int]
    borrowed: list[int]
    #: Loan shares, in units of 1e-12 picohour (:data:`_FINE`).
    lent: list[int]
    #: Idle guarantees, lent or not (picohours); the unlent part is ``idle - lent``.
    idle: list[int]
    capacity: _Pico = 0
    unallocated: _Pico = 0
    from_unallocated: _Pico = 0
    idle_guaranteed_unlent: _Pico = 0
    full_hours: int = 0
    scaled_hours: int = 0
    reclassified: int = 0

    @classmethod
    def for_teams(cls, names: list[str], nominal: list[int]) -> _PicoTypeAcc:
        """Zero sums for ``names`` (in the order every hour lists the teams) and their nominal guarantees."""
        k = len(names)
        index = {name: i for i, name in enumerate(names)}
        return cls(names, index, nominal, [0] * k, [0] * k, [0] * k, [0] * k, [0] * k)

    def gpu_hours(self) -> _TypeAcc:
        """Return the same sums in GPU-hours."""
        return _TypeAcc(
            capacity=_from_pico(self.capacity),
            unallocated=_from_pico(self.unallocated),
            from_unallocated=_from_pico(self.from_unallocated),
            idle_guaranteed_unlent=_from_pico(self.idle_guaranteed_unlent),
            scaled_hours=self.scaled_hours,
            reclassified=self.reclassified,
            teams={
                name: _Acc(
                    guaranteed=_from_pico(n * self.full_hours + g),
                    used=_from_pico(u),
                    borrowed=_from_pico(b),
                    lent=_from_fine(lent),
                    idle=_from_pico(idle) - _from_fine(lent),
                )
                for name, n, g, u, b, lent, idle in zip(
                    self.names,
                    self.nominal,
                    self.guaranteed,
                    self.used,
                    self.borrowed,
                    self.lent,
                    self.idle,
                    strict=True,
                )
            },
        )


@dataclass
class _Loss:
    """Preemption loss of one team, instance type and priority class."""

    lost: Decimal = _ZERO
    evictions: int = 0
    bases: set[LossBasis] = field(default_factory=set)


@dataclass
class _Row:
    """A report row before rounding: exact money."""

    team: str
    cost_center: str
    instance_type: str
    acc: _Acc
    gross: Decimal = _ZERO
    credit: Decimal = _ZERO
    shared: Decimal = _ZERO
    direct: Decimal = _ZERO


def compute_report(config: ChargebackConfig, month: str, usage: UsageInputs, costs: CostInputs) -> Report:
    """Compute the month's chargeback report (see the module docstring for every rule).

    Args:
        config: the chargeback policy (built from ``platform.yaml`` by the policy layer).
        month: ``YYYY-MM``.
        usage: hourly usage and capacity of the month, and its evictions.
        costs: the month's bill from the CUR, or nothing but the price table.

    Returns:
        The report: one row per team and instance type, the idle owner's rows, the shared costs, and the
        reconciliation against the bill.

    Raises:
        ChargebackInputError: an input record is outside the month or the cluster, negative or inconsistent
            (usage above capacity), a price or a GPU count is missing, or no billing term is in force.

    """
    start, end = month_bounds(month)
    term = term_in_force(config.terms, start.date())
    with localcontext(_CONTEXT):
        return _Computation(
            config=config, month=month, start=start, end=end, term=term, usage=usage, costs=costs
        ).report()


class _Computation:
    """One run of :func:`compute_report` (exact arithmetic in :data:`_CONTEXT`)."""

    def __init__(
        self,
        *,
        config: ChargebackConfig,
        month: str,
        start: dt.datetime,
        end: dt.datetime,
        term: BillingTerm,
        usage: UsageInputs,
        costs: CostInputs,
    ) -> None:
        self.config, self.month, self.start, self.end, self.term = config, month, start, end, term
        self.inputs, self.costs = usage, costs
        self.teams: dict[str, TeamConfig] = {t.name: t for t in config.teams}
        self.notes: list[str] = []
        self.unknown: list[str] = []
        #: Team → the hours ``[start, end)`` its quota exists this month (clipped to the month).
        self.periods: dict[str, tuple[dt.datetime, dt.datetime]] = {
            p.team: (max(p.start, start), min(p.end, end)) for p in usage.team_periods or ()
        }

    # --- validation ---------------------------------------------------------------------------------------

    def _check_record(self, what: str, cluster: str, hour: dt.datetime, *, on_the_hour: bool = True) -> None:
        """Check a record's cluster and time (``what`` names the record in the error)."""
        if cluster != self.config.cluster:
            raise ChargebackInputError(
                f"{what} is for cluster {cluster!r}, not {self.config.cluster!r}; pass only this cluster's records."
            )
        if hour.tzinfo is None or hour.utcoffset() != dt.timedelta(0):
            raise ChargebackInputError(
                f"{what}: time {hour.isoformat()} is not timezone-aware UTC; pass UTC times."
            )
        if on_the_hour and (hour.minute, hour.second, hour.microsecond) != (0, 0, 0):
            raise ChargebackInputError(f"{what}: hour {hour.isoformat()} is not the top of an hour.")
        if not self.start <= hour < self.end:
            raise ChargebackInputError(
                f"{what}: {hour.isoformat()} is outside {self.month}; pass only the month's records."
            )

    def _team(self, name: str) -> TeamConfig:
        team = self.teams.get(name)
        if team is None:
            team = TeamConfig(name=name, cost_center=name, quotas={})
            self.teams[name] = team
            self.unknown.append(name)
            fix = (
                "add it to the configuration's teams (its TeamTenant), or bill such namespaces under their own "
                "name with `chargeback.unknownTeams: bill`"
                if self.config.unknown_teams is UnknownTeams.FAIL
                else "allowed by `chargeback.unknownTeams: bill`"
            )
            self.notes.append(
                f"team {name!r} has usage, evictions or tagged bill lines but is not in the policy: billed without "
                f"a guarantee, under its own name as cost center; {fix}."
            )
        return team

    def _period(self, name: str) -> tuple[dt.datetime, dt.datetime] | None:
        """Return the hours ``[start, end)`` a team's guarantee is billed, or ``None`` for the whole month."""
        period = self.periods.get(name)
        if self.inputs.team_periods is None or period == (self.start, self.end):
            return None
        return period if period is not None else (self.start, self.start)

    def _billed_periods(self) -> tuple[TeamPeriod, ...]:
        """Return the teams with a guarantee whose quota did not exist all month, with their hours (and note them)."""
        if self.inputs.team_periods is None:
            return ()
        out = []
        for team in sorted(self.config.teams, key=lambda t: t.name):
            if not any(team.quotas.values()):
                continue
            start, end = self.periods.get(team.name, (self.start, self.start))
            if (start, end) != (self.start, self.end):
                out.append(TeamPeriod(team=team.name, start=start, end=end))
                self.notes.append(
                    f"team {team.name!r}: its quota existed {_period_text(start, end)} of {self.month} (its queue's "
                    "snapshots); its guarantee is billed for those hours only, the rest of its capacity is the "
                    "idle owner's."
                )
        return tuple(out)

    def _disallowed_borrowing(self, charges: tuple[TeamCharge, ...]) -> tuple[tuple[str, Decimal], ...]:
        """Return the teams the policy does not let borrow whose usage shows borrowing (and note each)."""
        borrowed: dict[str, Decimal] = defaultdict(Decimal)
        for c in charges:
            team = self.teams.get(c.team)
            if team is not None and not team.borrows and c.borrowed_gpu_hours > 0:
                borrowed[c.team] += c.borrowed_gpu_hours
        for name, hours in sorted(borrowed.items()):
            self.notes.append(
                f"team {name!r} may not borrow (its sharing is not lend-and-borrow), yet its usage shows "
                f"{hours.normalize():f} GPU-hours borrowed: billed as recorded and flagged; check its ClusterQueue's "
                "borrowing limit and the cohort."
            )
        return tuple(sorted(borrowed.items()))

    def _gpus(self, instance_type: str) -> int:
        gpus = self.config.gpus_per_instance.get(instance_type)
        if not gpus or gpus <= 0:
            raise ChargebackInputError(
                f"GPUs per instance of {instance_type} are unknown; set `resources.accelerators` on its instance "
                "group (or use a catalogued instance type)."
            )
        return gpus

    # --- the month ----------------------------------------------------------------------------------------

    def report(self) -> Report:
        billed_periods = self._billed_periods()
        types = self._hours()
        prices, sources = self._prices(sorted(types))
        self._preemption(types, prices)
        rows = self._rows(types, prices)
        self._shared_costs(rows)
        self._team_costs(rows)
        charges = _round(rows, self.config.cluster)
        reconciliation = self._reconcile(charges, types, prices)
        self.notes += self.inputs.unchecked_collections
        return Report(
            schema_version=SCHEMA_VERSION,
            month=self.month,
            cluster=self.config.cluster,
            rule=self.term.rule,
            idle_owner=self.term.idle_owner,
            shared_costs=self.term.shared_costs,
            term=self.term,
            price_sources=sources,
            gpu_hour_prices={f: prices[f].quantize(_PRICE) for f in sorted(prices)},
            rows=charges,
            reconciliation=reconciliation,
            preemption_loss_is_upper_bound=any(loss.upper_bound for loss in self.losses),
            notes=tuple(self.notes),
            preemption_losses=self.losses,
            collection_gaps=self.inputs.collection_gaps,
            billed_periods=billed_periods,
            disallowed_borrowing=self._disallowed_borrowing(charges),
        )

    def _capacity(self) -> dict[tuple[str, dt.datetime], tuple[int, int]]:
        """Check the node inventory; return ``(capacity, unavailable)`` in picohours per instance type and hour."""
        capacity: dict[tuple[str, dt.datetime], tuple[int, int]] = {}
        for cap in self.inputs.capacity:
            what = f"capacity of {cap.instance_type} at {cap.hour.isoformat()}"
            self._check_record(what, cap.cluster, cap.hour)
            total, unavailable = cap.gpu_ms, cap.unavailable_gpu_ms
            if not (_is_int(total) and _is_int(unavailable) and 0 <= unavailable <= total):
                raise ChargebackInputError(
                    f"{what}: {total!r} GPU-ms with {unavailable!r} unavailable; capacity must be a whole number "
                    "of GPU-milliseconds >= 0 and the unavailable part between 0 and the capacity."
                )
            key = (cap.instance_type, cap.hour)
            if key in capacity:
                raise ChargebackInputError(
                    f"{what} appears twice; pass one record per instance type and hour."
                )
            pico_total, pico_unavailable = _ms_to_pico([total, unavailable])
            capacity[key] = (pico_total, pico_unavailable)
        return capacity

    def _usage(
        self, capacity: dict[tuple[str, dt.datetime], tuple[int, int]]
    ) -> dict[tuple[str, dt.datetime], list[HourlyUsage]]:
        """Group the usage records by instance type and hour; each must fall in an hour of the node inventory.

        The hot loop of a month's ~10^5-10^6 records: one lookup each. The records' values are checked an hour
        at a time (:meth:`_hour_usage`).
        """
        used: dict[tuple[str, dt.datetime], list[HourlyUsage]] = {}
        # runs of one key (the SQL's order: by hour and type) are taken whole; any order gives the same groups
        for key, run in itertools.groupby(self.inputs.usage, key=_USAGE_KEY):
            records = used.get(key)
            if records is not None:
                records.extend(run)
            elif key in capacity:
                used[key] = list(run)
            else:
                u = next(run)
                self._check_record(_what_usage(u), u.cluster, u.hour)
                raise ChargebackInputError(
                    f"{_what_usage(u)} has no capacity record for that hour; the node inventory must cover "
                    "every hour with usage (check the collector's node snapshots)."
                )
        return used

    def _hour_usage(self, records: list[HourlyUsage], acc: _PicoTypeAcc) -> tuple[list[int], list[int]]:
        """Check one hour's usage records; return each team's use and borrowing (picohours, slots of ``acc``).

        Column at a time (``map`` over the records), the hot path of a month's ~10^5-10^6 records. Records that
        list every team in slot order (the SQL's order, when each team holds a guarantee) are read as they come.
        """
        teams = list(map(_TEAM, records))
        use = list(map(_GPU_MS, records))
        borrowed = list(map(_BORROWED_MS, records))
        if (
            set(map(type, use)) | set(map(type, borrowed)) != {int}
            or min(borrowed) < 0
            or min(map(operator.sub, use, borrowed)) < 0
            or set(map(_CLUSTER, records)) != {self.config.cluster}
        ):
            self._reject(records)
        if teams != acc.names:
            slots = list(map(acc.index.__getitem__, teams))
            if len(set(slots)) != len(slots):
                self._reject(records)  # a team twice
            k = len(acc.names)
            use, borrowed = _scatter(slots, use, k), _scatter(slots, borrowed, k)
        return _ms_to_pico(use), _ms_to_pico(borrowed)

    def _reject(self, records: list[HourlyUsage]) -> NoReturn:
        """Raise the error of the first malformed record of an hour (the check that found one said no more)."""
        seen: set[str] = set()
        for u in records:
            self._check_record(_what_usage(u), u.cluster, u.hour)
            g, b = u.gpu_ms, u.borrowed_gpu_ms
            if not (_is_int(g) and _is_int(b) and 0 <= b <= g):
                raise ChargebackInputError(
                    f"{_what_usage(u)}: {g!r} GPU-ms with {b!r} borrowed; both must be whole numbers of "
                    "GPU-milliseconds >= 0 and the borrowed part at most the total."
                )
            if u.team in seen:
                raise ChargebackInputError(
                    f"{_what_usage(u)} appears twice; pass one record per team, type and hour."
                )
            seen.add(u.team)
        raise AssertionError("_reject found no malformed record")  # pragma: no cover - called only on one

    def _hours(self) -> dict[str, _TypeAcc]:
        """Apply the per-hour rules; return the month sums per instance type."""
        capacity = self._capacity()
        used = self._usage(capacity)
        by_type: dict[str, list[tuple[dt.datetime, int, int]]] = defaultdict(list)
        for (itype, hour), (cap_gpu, unavailable) in sorted(capacity.items()):
            by_type[itype].append((hour, cap_gpu, unavailable))
        types: dict[str, _PicoTypeAcc] = {}
        for itype, hours in by_type.items():
            gpus = self._gpus(itype)
            nominal = [
                (t.name, t.quotas[itype] * gpus * _PICO)
                for t in sorted(self.teams.values(), key=lambda t: t.name)
                if t.quotas.get(itype, 0) > 0
            ]
            # policy teams in name order, then the others: input order never matters
            names = [name for name, _ in nominal]
            held = set(names)
            extra = sorted({u.team for hour, _, _ in hours for u in used.get((itype, hour), ())} - held)
            for name in extra:
                self._team(name)  # a team with usage but not in the policy: noted once
            nominal_values = [n for _, n in nominal] + [0] * len(extra)
            acc = types[itype] = _PicoTypeAcc.for_teams(names + extra, nominal_values)
            periods = [self._period(name) for name in names] + [None] * len(extra)
            partial = any(p is not None for p in periods)
            for hour, cap_gpu, unavailable in hours:
                records = used.get((itype, hour))
                self._hour(
                    itype=itype,
                    hour=hour,
                    acc=acc,
                    nominal=_in_period(nominal_values, periods, hour) if partial else nominal_values,
                    cap_gpu=cap_gpu,
                    unavailable=unavailable,
                    use=self._hour_usage(records, acc) if records else None,
                )
        for itype, acc in sorted(types.items()):
            if acc.scaled_hours:
                self.notes.append(
                    f"{itype}: in {acc.scaled_hours} hour(s) the schedulable capacity was below the guarantees "
                    "(more nodes unavailable than reserved); those hours' guarantees were scaled down so the "
                    "unavailable capacity stays the idle owner's."
                )
        reclassified = sum(acc.reclassified for acc in types.values())
        if reclassified:
            self.notes.append(
                f"{reclassified} team-hour(s) used more than the guarantee without recording it as borrowed; the "
                "excess was counted as borrowed (Kueue's definition)."
            )
        return {itype: acc.gpu_hours() for itype, acc in types.items()}

    @staticmethod
    def _hour(
        *,
        itype: str,
        hour: dt.datetime,
        acc: _PicoTypeAcc,
        nominal: list[int],
        cap_gpu: int,
        unavailable: int,
        use: tuple[list[int], list[int]] | None,
    ) -> None:
        """Add one hour of one instance type to ``acc`` (every quantity in picohours, one slot per team of ``acc``)."""
        total_nominal = sum(nominal)
        available = cap_gpu - unavailable
        guarantee = nominal  # the same list: an unscaled hour
        if total_nominal > available:  # scaled down to the schedulable capacity, to the picohour below
            guarantee = [n * available // total_nominal for n in nominal]
            acc.scaled_hours += 1
        used = use[0] if use is not None else [0] * len(guarantee)
        borrowed = list(use[1]) if use is not None else [0] * len(guarantee)
        idle = [n - u_t + b_t for n, u_t, b_t in zip(guarantee, used, borrowed, strict=True)]
        if idle and min(idle) < 0:
            for i, n in enumerate(guarantee):
                if (
                    idle[i] < 0
                ):  # used above the guarantee without recording it as borrowed: Kueue's borrowing
                    borrowed[i], idle[i] = used[i] - n, 0
                    acc.reclassified += 1
        total_used = sum(used)
        total_borrowed = sum(borrowed)
        if total_used > cap_gpu:
            raise ChargebackInputError(
                f"usage on {itype} at {hour.isoformat()} is {_from_pico(total_used).normalize():f} GPU-hours, above the "
                f"node inventory's {_from_pico(cap_gpu).normalize():f}; the usage and node snapshots disagree (check the collector)."
            )
        if guarantee is acc.nominal:  # every team's nominal guarantee, unscaled
            acc.full_hours += 1
        else:
            acc.guaranteed = list(map(operator.add, acc.guaranteed, guarantee))
        acc.used = list(map(operator.add, acc.used, used))
        acc.borrowed = list(map(operator.add, acc.borrowed, borrowed))
        total_idle = sum(idle)
        lent = min(total_borrowed, total_idle)
        acc.idle = list(map(operator.add, acc.idle, idle))
        if lent:  # lent pro rata to what each team had idle (rounded down, in 1e-12 picohours)
            fine = lent * _FINE
            acc.lent = [a + fine * i // total_idle for a, i in zip(acc.lent, idle, strict=True)]
        acc.capacity += cap_gpu
        acc.unallocated += cap_gpu - sum(guarantee)
        acc.from_unallocated += total_borrowed - lent
        acc.idle_guaranteed_unlent += total_idle - lent

    def _prices(self, types: Iterable[str]) -> tuple[dict[str, Decimal], dict[str, PriceSource]]:
        cur = {c.instance_type: c for c in self.costs.instance_types}
        prices: dict[str, Decimal] = {}
        sources: dict[str, PriceSource] = {}
        for itype in types:
            line = cur.get(itype)
            if line is not None and line.instance_hours > 0:
                prices[itype] = line.cost / line.instance_hours / self._gpus(itype)
                sources[itype] = PriceSource.CUR
            elif itype in self.config.prices:
                prices[itype] = self.config.prices[itype]
                sources[itype] = PriceSource.PRICE_TABLE
            else:
                raise ChargebackInputError(
                    f"no price for {itype}: the CUR has no SageMaker cluster usage line for it this month and "
                    f"`chargeback.prices` has no entry; add `chargeback.prices: {{{itype}: <USD per GPU-hour>}}` "
                    "to platform.yaml or pass a CUR that covers the month."
                )
        return prices, sources

    def _preemption(self, types: dict[str, _TypeAcc], prices: dict[str, Decimal]) -> None:
        losses: dict[tuple[str, str, str], _Loss] = {}
        for ev in self.inputs.evictions:
            what = f"eviction of {ev.workload!r} (team {ev.team!r})"
            self._check_record(what, ev.cluster, ev.time, on_the_hour=False)
            if ev.gpus < 0:
                raise ChargebackInputError(f"{what}: {ev.gpus} GPUs; pass the evicted workload's GPU count.")
            team = self._team(ev.team)
            lost, basis = preemption_loss(ev)
            acc = types.get(ev.instance_type)
            if acc is None:
                acc = types[ev.instance_type] = _TypeAcc()
            row = acc.teams.get(team.name)
            if row is None:
                row = acc.teams[team.name] = _Acc()
            row.lost += lost
            entry = losses.setdefault((team.name, ev.instance_type, ev.priority_class), _Loss())
            entry.lost += lost
            entry.evictions += 1
            entry.bases.add(basis)
        self.losses = tuple(
            PreemptionLoss(
                cluster=self.config.cluster,
                team=team,
                instance_type=itype,
                priority_class=pc,
                evictions=entry.evictions,
                lost_gpu_hours=entry.lost.quantize(_GPU_HOURS),
                bases=tuple(b for b in LossBasis if b in entry.bases),
                cost_center=self.teams[team].cost_center,
                # priced at the month's GPU-hour price of its type (none where the type had no capacity)
                lost_usd=(entry.lost * prices.get(itype, _ZERO)).quantize(_CENT),
            )
            for (team, itype, pc), entry in sorted(losses.items())
        )

    def _rows(self, types: dict[str, _TypeAcc], prices: dict[str, Decimal]) -> list[_Row]:
        reservation = self.term.rule is BillingRule.RESERVATION
        rows: list[_Row] = []
        for itype, acc in sorted(types.items()):
            # an instance type seen only in evictions has no capacity this month: no price, nothing to charge
            price = prices.get(itype, _ZERO)
            for name, a in sorted(acc.teams.items()):
                row = _Row(name, self.teams[name].cost_center, itype, a)
                if reservation:
                    row.gross, row.credit = (a.guaranteed + a.borrowed) * price, a.lent * price
                else:
                    row.gross = a.used * price
                    a.idle = _ZERO  # under `usage` the idle owner pays the idle guarantees
                rows.append(row)
            if not acc.capacity:
                continue
            idle = _Acc(lent=acc.from_unallocated, idle=acc.unallocated - acc.from_unallocated)
            if reservation:
                gross, credit = acc.unallocated * price, acc.from_unallocated * price
            else:
                idle.idle += acc.idle_guaranteed_unlent
                gross, credit = idle.idle * price, _ZERO
            for cost_center, share in self._idle_owners(itype, types):
                part = _Acc(lent=idle.lent * share, idle=idle.idle * share)
                rows.append(_Row(IDLE_ROW, cost_center, itype, part, gross * share, credit * share))
        return rows

    def _idle_owners(self, itype: str, types: dict[str, _TypeAcc]) -> list[tuple[str, Decimal]]:
        """Who pays a type's idle capacity: the named idle owner, or every cost center by its guarantee."""
        if self.term.idle_owner != SHARED:
            return [(self.term.idle_owner, _ONE)]
        weights = self._guarantee_by_cost_center(types[itype].teams)
        if not weights:  # no guarantee on this type: split by the whole guarantee
            weights = self._guarantee_by_cost_center(_merged(types))
        if not weights:  # every guarantee scaled to nothing (no schedulable capacity): by the policy's quotas
            weights = defaultdict(Decimal)
            for team in self.teams.values():
                if any(team.quotas.values()):
                    weights[team.cost_center] += sum(team.quotas.values())
        if not weights:
            raise ChargebackInputError(
                f"idle owner `shared` splits idle capacity by guarantee, but no team has a guarantee in "
                f"{self.month}; name a cost center as `idleOwner` in the billing term."
            )
        total = sum(weights.values(), _ZERO)
        return [(cc, w / total) for cc, w in sorted(weights.items())]

    def _guarantee_by_cost_center(self, teams: dict[str, _Acc]) -> dict[str, Decimal]:
        weights: dict[str, Decimal] = defaultdict(Decimal)
        for name, a in teams.items():
            if a.guaranteed:
                weights[self.teams[name].cost_center] += a.guaranteed
        return dict(weights)

    def _shared_costs(self, rows: list[_Row]) -> None:
        if not self.costs.shared:
            return
        total = sum((s.cost for s in self.costs.shared), _ZERO)
        if self.term.shared_costs is SharedCostRule.IDLE_OWNER and self.term.idle_owner != SHARED:
            rows.append(
                _Row(SHARED_COSTS_ROW, self.term.idle_owner, ALL_INSTANCE_TYPES, _Acc(), shared=total)
            )
            return
        weights = {id(r): r.acc.guaranteed for r in rows if r.team != IDLE_ROW}
        if not any(weights.values()):  # every guarantee scaled to nothing: by the policy's quotas
            weights = {
                id(r): Decimal(self.teams[r.team].quotas.get(r.instance_type, 0))
                for r in rows
                if r.team != IDLE_ROW
            }
        teams = [r for r in rows if weights.get(id(r))]
        guaranteed = sum((weights[id(r)] for r in teams), _ZERO)
        if not guaranteed:
            raise ChargebackInputError(
                f"shared costs are split by guarantee, but no team has a guarantee in {self.month}; set the "
                "billing term's `sharedCosts: idle-owner` with a named `idleOwner`."
            )
        for r in teams:
            r.shared = total * weights[id(r)] / guaranteed

    def _team_costs(self, rows: list[_Row]) -> None:
        """Add a row per team whose tag names bill lines: those lines are that team's alone."""
        for line in self.costs.teams:
            team = self._team(line.team)
            rows.append(_Row(team.name, team.cost_center, ALL_INSTANCE_TYPES, _Acc(), direct=line.cost))

    def _reconcile(
        self, charges: tuple[TeamCharge, ...], types: dict[str, _TypeAcc], prices: dict[str, Decimal]
    ) -> Reconciliation:
        charged = sum((c.total for c in charges), _ZERO)
        lines = {c.instance_type: c.cost for c in self.costs.instance_types}
        bill = self.costs.bill_total
        if bill is None and self.costs.instance_types:
            bill = (
                sum(lines.values(), _ZERO)
                + sum((s.cost for s in self.costs.shared), _ZERO)
                + sum((t.cost for t in self.costs.teams), _ZERO)
            )
        listed = self.costs.credits
        if bill is not None and self.costs.bill_total is not None:
            # the bill before credits and refunds: they are listed, not allocated, so no price is lowered unseen
            bill -= sum((c.cost for c in listed), _ZERO)
        tolerance = self.config.tolerance
        unknown = tuple(sorted(self.unknown))
        unknown_failed = bool(unknown) and self.config.unknown_teams is UnknownTeams.FAIL
        for itype, cost in sorted(lines.items()):
            acc = types.get(itype)
            inventory = acc.capacity * prices[itype] if acc is not None and itype in prices else _ZERO
            if _off(inventory, cost, tolerance):
                self.notes.append(
                    f"{itype}: the node inventory prices to {inventory.quantize(_CENT)}, the CUR bills "
                    f"{cost.quantize(_CENT)}; compare the inventory's instance-hours with the CUR's."
                )
        if bill is None:
            self.notes.append("no bill for the month: charges use the price table and are not reconciled.")
        flagged = bill is not None and _off(charged, bill, tolerance)
        return Reconciliation(
            charged=charged,
            bill=bill,
            difference=None if bill is None else charged - bill,
            flagged=flagged,
            unknown_teams=unknown,
            failed=flagged or unknown_failed,
            unknown_teams_failed=unknown_failed,
            tolerance=tolerance,
            credits=listed,
        )


def _in_period(
    nominal: list[int], periods: list[tuple[dt.datetime, dt.datetime] | None], hour: dt.datetime
) -> list[int]:
    """Return the hour's nominal guarantees: zero outside a team's billed period (``nominal`` itself if none is)."""
    if all(p is None or p[0] <= hour < p[1] for p in periods):
        return nominal
    return [n if p is None or p[0] <= hour < p[1] else 0 for n, p in zip(nominal, periods, strict=True)]


def _period_text(start: dt.datetime, end: dt.datetime) -> str:
    if end <= start:
        return "no hour"
    return f"from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC ({int((end - start).total_seconds()) // 3600} hours)"


def _scatter(slots: list[int], values: list[int], k: int) -> list[int]:
    """``values`` placed at ``slots`` of a list of ``k`` zeros."""
    out = [0] * k
    for slot, value in zip(slots, values, strict=True):
        out[slot] = value
    return out


#: The key usage records are grouped by, (instance type, hour), and the fields an hour's check reads.
_USAGE_KEY = operator.itemgetter(2, 0)
_CLUSTER = operator.itemgetter(1)
_TEAM = operator.itemgetter(3)
_GPU_MS = operator.itemgetter(4)
_BORROWED_MS = operator.itemgetter(5)


def _is_int(value: object) -> bool:
    return type(value) is int


def _what_usage(u: HourlyUsage) -> str:
    return f"usage of team {u.team!r} on {u.instance_type} at {u.hour.isoformat()}"


def _merged(types: dict[str, _TypeAcc]) -> dict[str, _Acc]:
    merged: dict[str, _Acc] = {}
    for acc in types.values():
        for name, a in acc.teams.items():
            m = merged.setdefault(name, _Acc())
            m.guaranteed += a.guaranteed
    return merged


def _off(charged: Decimal, bill: Decimal, tolerance: Decimal) -> bool:
    """Whether ``charged`` differs from ``bill`` by more than ``tolerance`` of it."""
    difference = abs(charged - bill)
    return difference > tolerance * abs(bill) if bill else difference > 0


def _largest_remainder(values: Sequence[Decimal]) -> list[Decimal]:
    """Round ``values`` (>= 0) to cents so that they sum to their exact sum rounded to cents (ties: first row)."""
    cents = [v * 100 for v in values]
    floors = [c.to_integral_value(rounding=ROUND_FLOOR) for c in cents]
    target = sum(cents, _ZERO).quantize(_ONE, rounding=ROUND_HALF_EVEN)
    extra = int(target - sum(floors, _ZERO))
    order = sorted(range(len(values)), key=lambda i: (-(cents[i] - floors[i]), i))
    for i in order[: max(extra, 0)]:
        floors[i] += 1
    return [(f / 100).quantize(_CENT) for f in floors]


def _round(rows: list[_Row], cluster: str) -> tuple[TeamCharge, ...]:
    """Round money to cents (net, shared and direct charges by largest remainder; credit half-even)."""
    rows = sorted(rows, key=lambda r: (r.instance_type, r.team, r.cost_center))
    nets = _largest_remainder([r.gross - r.credit for r in rows])
    shared = _largest_remainder([r.shared for r in rows])
    direct = _largest_remainder([r.direct for r in rows])
    out = []
    for r, net, sh, own in zip(rows, nets, shared, direct, strict=True):
        credit = r.credit.quantize(_CENT)
        a = r.acc
        out.append(
            TeamCharge(
                cluster=cluster,
                team=r.team,
                cost_center=r.cost_center,
                instance_type=r.instance_type,
                guaranteed_gpu_hours=a.guaranteed.quantize(_GPU_HOURS),
                used_gpu_hours=a.used.quantize(_GPU_HOURS),
                borrowed_gpu_hours=a.borrowed.quantize(_GPU_HOURS),
                lent_gpu_hours=a.lent.quantize(_GPU_HOURS),
                idle_gpu_hours=a.idle.quantize(_GPU_HOURS),
                lost_to_preemption_gpu_hours=a.lost.quantize(_GPU_HOURS),
                gpu_charge=net + credit,
                lender_credit=credit,
                shared_charge=sh,
                direct_charge=own,
                total=net + sh + own,
            )
        )
    return tuple(out)
