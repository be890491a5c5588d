"""Quotas proposed from the usage: each team's percentile of use, scaled to what the cluster has."""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal

from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.tools.recommend.engine.history import (
    BORROW_LIMIT_RANGE,
    CEILING_EPSILON,
    History,
    Proposal,
    Reason,
    RecommendError,
    Series,
    _gpus_per_instance,
    percentile,
)

__all__ = ["recommend"]


def _whole_instance_quotas(platform: Platform) -> dict[str, dict[str, int]]:
    """Every hosted team's quotas, each a whole number of instances (what the proposals are stated in)."""
    out: dict[str, dict[str, int]] = {}
    for team in platform.hosted_teams:
        out[team.name] = {}
        for itype, quota in team.compute.quotas.items():
            if not isinstance(quota, int):
                raise RecommendError(
                    f"team {team.name!r} holds {itype} as {quota}; recommend-quotas proposes whole instances "
                    "only. Size that quota by hand from `hyperpod-tenancy plan` and the usage report, or state it "
                    "in instances to have it proposed."
                )
            out[team.name][itype] = quota
    return out


def recommend(platform: Platform, history: History) -> Proposal:
    """Propose every hosted team's quotas and borrow limit from ``history`` (see the module docstring).

    Raises:
        RecommendError: a team's quota is an amount (accelerators, vCPUs or memory): proposals are whole
            instances.

    """
    whole = _whole_instance_quotas(platform)
    gpus = _gpus_per_instance(platform)
    from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan  # noqa: PLC0415

    ceilings = {(s.team, s.instance_type): s.burst_ceiling_gpus for s in build_plan(platform).shares}
    zero = (0.0,) * history.hours
    empty = Series(used=zero, borrowed=zero, waiting=zero)
    quotas: dict[str, dict[str, int]] = {}
    figures: dict[tuple[str, str], tuple[float, float, float, int, float]] = {}
    for team in platform.hosted_teams:
        quotas[team.name] = {}
        for itype, count in whole[team.name].items():
            per = gpus.get(itype, 0)
            if per == 0:  # a type without accelerators: the GPU history says nothing about it
                quotas[team.name][itype] = count
                continue
            s = history.series.get((team.name, itype), empty)
            own_and_waiting = [u - b + w for u, b, w in zip(s.used, s.borrowed, s.waiting, strict=True)]
            ceiling = ceilings.get((team.name, itype), count * per)
            at_ceiling = sum(1 for u in s.used if ceiling > 0 and u >= ceiling - CEILING_EPSILON)
            p95_need = percentile(own_and_waiting)
            quotas[team.name][itype] = math.ceil(p95_need / per - 1e-9)
            figures[(team.name, itype)] = (
                percentile(s.used, 50),
                percentile(s.used),
                p95_need,
                at_ceiling,
                sum(s.waiting),
            )
    notes = _scale(platform, quotas, gpus)
    borrow_limits: dict[str, int] = {}
    above_of: dict[tuple[str, str], float] = {}
    for team in platform.hosted_teams:
        needed: list[int] = []
        for itype in team.compute.quotas:
            per = gpus.get(itype, 0)
            if per == 0:
                continue
            s = history.series.get((team.name, itype), empty)
            guaranteed = quotas[team.name][itype] * per
            above = percentile([max(u + w - guaranteed, 0.0) for u, w in zip(s.used, s.waiting, strict=True)])
            above_of[(team.name, itype)] = above
            if guaranteed > 0:
                needed.append(math.ceil(100 * math.ceil(above - 1e-9) / guaranteed))
        current = team.compute.borrow_limit
        if platform.effective_sharing(team).borrows and needed and max(needed) == 0:
            notes.append(
                f"{team.name}: needed nothing above its proposed guarantee this month; borrowLimit kept at "
                f"{current}%."
            )
            borrow_limits[team.name] = current
        elif platform.effective_sharing(team).borrows and needed:
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
            current_instances=whole[team][itype],
            proposed_instances=quotas[team][itype],
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


def _scale(platform: Platform, quotas: dict[str, dict[str, int]], gpus: Mapping[str, int]) -> list[str]:
    """Scale each type's guarantees down pro rata (largest remainder) to its promisable instances."""
    notes: list[str] = []
    for itype, per in gpus.items():
        if per == 0:
            continue
        promisable = sum(g.quota_capacity for g in platform.instance_group_for(itype))
        wanted = {team: q[itype] for team, q in quotas.items() if itype in q}
        total = sum(wanted.values())
        if total <= promisable:
            continue
        exact = {team: Decimal(n) * promisable / total for team, n in wanted.items()}
        scaled = {team: int(value) for team, value in exact.items()}
        left = promisable - sum(scaled.values())
        for team in sorted(exact, key=lambda t: (-(exact[t] - scaled[t]), t))[:left]:
            scaled[team] += 1
        for team, n in scaled.items():
            quotas[team][itype] = n
        shares = ", ".join(f"{team} {wanted[team]} -> {scaled[team]}" for team in sorted(wanted))
        notes.append(
            f"{itype}: the history asks for {total} instances but {promisable} are promisable (count - reserved); "
            f"every guarantee scaled down pro rata: {shares}."
        )
    return notes
