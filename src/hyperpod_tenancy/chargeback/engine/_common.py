"""The engine's exact arithmetic, its errors, the month's bounds, the term in force and what one eviction loses."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal, localcontext

from hyperpod_tenancy.chargeback.model import (
    BillingTerm,
    Eviction,
    LossBasis,
    month_span,
)

__all__ = ["ChargebackInputError", "month_bounds", "preemption_loss", "term_in_force"]

#: The engine's own arithmetic: enough digits that pro rata shares of a month sum back exactly to the cent.
_CONTEXT = Context(prec=40, rounding=ROUND_HALF_EVEN)


_CENT = Decimal("0.01")


_GPU_HOURS = Decimal("0.0001")


_PRICE = Decimal("0.000001")


_ZERO = Decimal(0)


_ONE = Decimal(1)


_HOUR = dt.timedelta(hours=1)


class ChargebackInputError(ValueError):
    """The month's inputs cannot be billed as given; the message names the record or setting and the fix."""


def month_bounds(month: str) -> tuple[dt.datetime, dt.datetime]:
    """Return the first instant of ``month`` (``YYYY-MM``) and of the next month, in UTC.

    Raises:
        ChargebackInputError: ``month`` is not ``YYYY-MM``.

    """
    span = month_span(month)
    if span is None:
        raise ChargebackInputError(f"month {month!r} is not YYYY-MM; pass e.g. '2026-07'.")
    return span


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
