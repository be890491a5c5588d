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

from hyperpod_tenancy.chargeback.engine._common import (
    ChargebackInputError,
    month_bounds,
    preemption_loss,
    term_in_force,
)
from hyperpod_tenancy.chargeback.engine.computation import compute_report

__all__ = ["ChargebackInputError", "compute_report", "month_bounds", "preemption_loss", "term_in_force"]
