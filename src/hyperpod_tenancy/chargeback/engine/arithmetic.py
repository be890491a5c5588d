"""Exact shares and rounding: periods, scattering, the largest-remainder rounding of charges to the cent."""

from __future__ import annotations

import datetime as dt
import operator
from collections.abc import Sequence
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal
from fractions import Fraction

from hyperpod_tenancy.chargeback.engine._common import _CENT, _GPU_HOURS, _ONE, _ZERO, _Acc
from hyperpod_tenancy.chargeback.engine.accumulators import _Row, _TypeAcc
from hyperpod_tenancy.chargeback.model import (
    HourlyUsage,
    TeamCharge,
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


def _exact(count: int | Fraction) -> Decimal:
    """Return a count of instances (a fraction where a team holds accelerators) as a Decimal."""
    return Decimal(count) if isinstance(count, int) else Decimal(count.numerator) / Decimal(count.denominator)


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
