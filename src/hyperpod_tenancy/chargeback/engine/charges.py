"""From hours to money: prices, preemption losses, each team's row, idle owners, shared and direct costs, and the reconciliation with the bill."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from decimal import Decimal

from hyperpod_tenancy.chargeback.engine._common import (
    _CENT,
    _GPU_HOURS,
    _ONE,
    _ZERO,
    ChargebackInputError,
    _Acc,
    preemption_loss,
)
from hyperpod_tenancy.chargeback.engine.accumulators import (
    _Loss,
    _Row,
    _TypeAcc,
)
from hyperpod_tenancy.chargeback.engine.arithmetic import (
    _exact,
    _merged,
    _off,
)
from hyperpod_tenancy.chargeback.engine.state import _State
from hyperpod_tenancy.chargeback.model import (
    ALL_INSTANCE_TYPES,
    IDLE_ROW,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    LossBasis,
    PreemptionLoss,
    PriceSource,
    Reconciliation,
    SharedCostRule,
    TeamCharge,
    UnknownTeams,
)


class _Charges(_State):
    """Prices, rows, shared costs and the reconciliation of one run."""

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
                    weights[team.cost_center] += sum(map(_exact, team.quotas.values()), _ZERO)
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
                id(r): _exact(self.teams[r.team].quotas.get(r.instance_type, 0))
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
