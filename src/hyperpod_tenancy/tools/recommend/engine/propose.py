"""Quotas proposed from the usage: each team's percentile of use, in the grain it holds, scaled to what fits."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from hyperpod_tenancy.policy import grains
from hyperpod_tenancy.policy.model import Platform, ResourceAmount, Team
from hyperpod_tenancy.tools.recommend.engine.history import (
    BORROW_LIMIT_RANGE,
    CEILING_EPSILON,
    History,
    Proposal,
    Reason,
    Series,
    _gpus_per_instance,
    percentile,
)

__all__ = ["recommend"]


@dataclass(frozen=True, kw_only=True)
class _Grain:
    """How a team's quota on one type is stated, and how many GPUs one step of it is."""

    #: The quota in force.
    current: int | ResourceAmount
    #: GPUs per step: one instance's for instances, 1 for accelerators.
    step: int

    def units(self, gpus: int) -> int:
        """Return ``gpus`` in steps of this grain (a whole number of them)."""
        return gpus // self.step

    def written(self, gpus: int) -> int | ResourceAmount:
        """Return ``gpus`` as the quota is written: ``7``, ``{instances: 7}`` or ``{accelerators: 52}``."""
        n = self.units(gpus)
        if isinstance(self.current, int):
            return n
        if self.current.grains == ("instances",):
            return ResourceAmount(instances=n)
        return ResourceAmount(accelerators=n)


def _grain(team: Team, itype: str, per: int) -> _Grain | None:
    """Return the grain of the team's quota on a GPU type; None for vCPUs/memory (the history has no CPU use)."""
    quota = team.compute.quotas[itype]
    if isinstance(quota, int) or quota.grains == ("instances",):
        return _Grain(current=quota, step=per)
    if quota.grains == ("accelerators",):
        return _Grain(current=quota, step=1)
    return None


def recommend(platform: Platform, history: History) -> Proposal:
    """Propose every hosted team's quotas and borrow limit from ``history`` (see the package docstring).

    A quota is proposed in the grain it is written in: whole instances stay instances, accelerators stay
    accelerators. A quota in vCPUs or memory on a GPU type is kept, with a note: the usage report records GPUs.
    """
    gpus = _gpus_per_instance(platform)
    from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan  # noqa: PLC0415

    ceilings = {(s.team, s.instance_type): s.burst_ceiling_gpus for s in build_plan(platform).shares}
    zero = (0.0,) * history.hours
    empty = Series(used=zero, borrowed=zero, waiting=zero)
    quotas: dict[str, dict[str, int | ResourceAmount]] = {}
    wanted: dict[tuple[str, str], tuple[_Grain, int]] = {}  # proposed GPUs, whole steps of the grain
    figures: dict[tuple[str, str], tuple[float, float, float, int, float]] = {}
    notes: list[str] = []
    for team in platform.hosted_teams:
        quotas[team.name] = dict(team.compute.quotas)
        for itype in team.compute.quotas:
            per = gpus.get(itype, 0)
            grain = _grain(team, itype, per) if per else None
            if grain is None:  # no accelerators, or a quota in vCPUs/memory: the GPU history says nothing
                if per:
                    notes.append(
                        f"{team.name}: its {itype} quota ({team.compute.quotas[itype]}) is kept: the usage "
                        "report records GPUs, not the vCPUs or memory a quota in them guarantees."
                    )
                continue
            s = history.series.get((team.name, itype), empty)
            own_and_waiting = [u - b + w for u, b, w in zip(s.used, s.borrowed, s.waiting, strict=True)]
            ceiling = ceilings.get((team.name, itype), grains.guaranteed(platform, team, itype, per))
            at_ceiling = sum(1 for u in s.used if ceiling > 0 and u >= ceiling - CEILING_EPSILON)
            p95_need = percentile(own_and_waiting)
            wanted[(team.name, itype)] = (grain, math.ceil(p95_need / grain.step - 1e-9) * grain.step)
            figures[(team.name, itype)] = (
                percentile(s.used, 50),
                percentile(s.used),
                p95_need,
                at_ceiling,
                sum(s.waiting),
            )
    proposed_gpus = _scale(platform, wanted, gpus, notes)
    for (team_name, itype), (grain, _) in wanted.items():
        quotas[team_name][itype] = grain.written(proposed_gpus[(team_name, itype)])
    borrow_limits, above_of = _borrow_limits(platform, history, proposed_gpus, notes)
    reasons = tuple(
        Reason(
            team=team,
            instance_type=itype,
            p50_used=p50,
            p95_used=p95,
            p95_own_and_waiting=need,
            p95_borrowed_above=above_of[(team, itype)],
            hours_at_ceiling=capped,
            waiting_gpu_hours=waiting,
            current_quota=platform.team(team).compute.quotas[itype],
            proposed_quota=quotas[team][itype],
            current_borrow_limit=platform.team(team).compute.borrow_limit,
            proposed_borrow_limit=borrow_limits[team],
        )
        for (team, itype), (p50, p95, need, capped, waiting) in figures.items()
    )
    if not history.waiting_recorded:
        notes.append(
            "no workload/ table: waiting demand is unknown; a team at its ceiling for many hours may need more "
            "than this proposal gives it."
        )
    return Proposal(quotas=quotas, borrow_limits=borrow_limits, reasons=reasons, notes=tuple(notes))


def _borrow_limits(
    platform: Platform, history: History, proposed_gpus: Mapping[tuple[str, str], int], notes: list[str]
) -> tuple[dict[str, int], dict[tuple[str, str], float]]:
    """Each team's borrow limit for its proposed guarantees, and the p95 of its need above them per type."""
    zero = (0.0,) * history.hours
    empty = Series(used=zero, borrowed=zero, waiting=zero)
    borrow_limits: dict[str, int] = {}
    above_of: dict[tuple[str, str], float] = {}
    for team in platform.hosted_teams:
        needed: list[int] = []
        for itype in team.compute.quotas:
            if (team.name, itype) not in proposed_gpus:
                continue
            s = history.series.get((team.name, itype), empty)
            guaranteed = proposed_gpus[(team.name, itype)]
            above = percentile([max(u + w - guaranteed, 0.0) for u, w in zip(s.used, s.waiting, strict=True)])
            above_of[(team.name, itype)] = above
            if guaranteed > 0:
                needed.append(math.ceil(100 * math.ceil(above - 1e-9) / guaranteed))
        current = team.compute.borrow_limit
        borrows = platform.effective_sharing(team).borrows
        if borrows and needed and max(needed) == 0:
            notes.append(
                f"{team.name}: needed nothing above its proposed guarantee this month; borrowLimit kept at "
                f"{current}%."
            )
            borrow_limits[team.name] = current
        elif borrows and needed:
            low, documented = BORROW_LIMIT_RANGE
            high = max(documented, current)
            borrow_limits[team.name] = min(max(*needed, low), high)
            if max(needed) > high:
                notes.append(
                    f"{team.name}: borrowing would need {max(needed)}% of its guarantee; capped at {high}% "
                    f"(the documented range ends at {documented}%; above it is a limit you set yourself)."
                )
        else:
            borrow_limits[team.name] = current
    return borrow_limits, above_of


def _scale(
    platform: Platform,
    wanted: Mapping[tuple[str, str], tuple[_Grain, int]],
    gpus: Mapping[str, int],
    notes: list[str],
) -> dict[tuple[str, str], int]:
    """Scale each type's proposed GPUs down pro rata (largest remainder, whole steps) to what it can promise.

    What it can promise is its instances not held in reserve, less what the quotas kept as written (vCPUs or
    memory) take of their cores and memory: per resource, the sum of the quotas fits (``HPT-QUOTA-CAPACITY``).
    """
    out = {key: n for key, (_, n) in wanted.items()}
    for itype, per in gpus.items():
        keys = sorted(k for k in wanted if k[1] == itype)
        if per == 0 or not keys:
            continue
        kept = [
            grains.quota_fractions(platform, team, itype)
            for team in platform.hosted_teams
            if itype in team.compute.quotas and (team.name, itype) not in wanted
        ]
        taken = max((sum((f[r] for f in kept), Fraction(0)) for r in grains.Resource), default=Fraction(0))
        instances = sum(g.quota_capacity for g in platform.instance_group_for(itype))
        budget = max(math.floor((instances - taken) * per), 0)
        total = sum(out[k] for k in keys)
        if total <= budget:
            continue
        exact = {k: Fraction(out[k] * budget, total) for k in keys}
        step = {k: wanted[k][0].step for k in keys}
        scaled = {k: math.floor(exact[k] / step[k]) * step[k] for k in keys}
        left = budget - sum(scaled.values())
        order = sorted(keys, key=lambda k: (-(exact[k] - scaled[k]), k[0]))
        for k in order:  # largest remainder: a step each, where it fits
            if step[k] <= left:
                scaled[k] += step[k]
                left -= step[k]
        for k in order:  # what a coarse step left over goes to finer ones, up to what each asked for
            while step[k] <= left and scaled[k] + step[k] <= out[k]:
                scaled[k] += step[k]
                left -= step[k]
        shares = ", ".join(
            f"{k[0]} {wanted[k][0].written(out[k])} -> {wanted[k][0].written(scaled[k])}" for k in keys
        )
        less = f" less {grains.instances_text(taken)} held by quotas in vCPUs or memory" if taken else ""
        notes.append(
            f"{itype}: the history asks for {total} GPUs ({grains.instances_text(Fraction(total, per))} instances) "
            f"but {budget} ({grains.instances_text(Fraction(budget, per))} instances) are promisable (count - "
            f"reserved{less}); every guarantee scaled down pro rata: {shares}."
        )
        out.update(scaled)
    return out
