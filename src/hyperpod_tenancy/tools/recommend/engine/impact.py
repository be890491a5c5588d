"""What the proposal changes on the bill."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.tools.recommend.engine.history import BillImpact

__all__ = ["bill_impact"]


def bill_impact(
    current: Platform, proposed: Platform, *, month: str, prices: Mapping[str, Decimal] | None = None
) -> BillImpact:
    """Each team's monthly bill under the billing rule for both policies: the tenancy plan's cost of each."""
    from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan  # noqa: PLC0415

    before = build_plan(current, month=month, prices=prices)
    after = build_plan(proposed, month=month, prices=prices)
    if before.cost is None or after.cost is None:
        return BillImpact(
            description=f"month {month}", teams={}, note=f"no bill: {before.cost_note or after.cost_note}"
        )
    a, b = before.cost.team_totals(), after.cost.team_totals()
    teams = {team: (a.get(team, Decimal(0)), b.get(team, Decimal(0))) for team in dict.fromkeys([*a, *b])}
    rule = before.cost.report.rule.value
    return BillImpact(
        description=f"month {month}, rule `{rule}`, each team running its guarantee all month as `plan` prices it",
        teams=teams,
    )
