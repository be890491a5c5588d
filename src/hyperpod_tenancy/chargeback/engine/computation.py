"""One run of the engine over a month's records and costs."""

from __future__ import annotations

from decimal import localcontext

from hyperpod_tenancy.chargeback.engine._common import (
    _CONTEXT,
    _PRICE,
    month_bounds,
    term_in_force,
)
from hyperpod_tenancy.chargeback.engine.arithmetic import (
    _round,
)
from hyperpod_tenancy.chargeback.engine.charges import _Charges
from hyperpod_tenancy.chargeback.engine.hours import _Hours
from hyperpod_tenancy.chargeback.model import (
    SCHEMA_VERSION,
    ChargebackConfig,
    CostInputs,
    Report,
    UsageInputs,
)

__all__ = ["compute_report"]


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


class _Computation(_Hours, _Charges):
    """One run of :func:`compute_report`: the hours, then the charges, then the report."""

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
