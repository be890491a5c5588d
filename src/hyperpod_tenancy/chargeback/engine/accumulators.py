"""Running totals per team and instance type, kept in integer pico-GPU-hours so sums are exact."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TypeAlias

from hyperpod_tenancy.chargeback.engine._common import _ZERO, _Acc
from hyperpod_tenancy.chargeback.model import (
    LossBasis,
)


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
