"""What every format of the report says: losses to preemption, cost-center totals, billed periods, credits, gaps, the summary."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

from hyperpod_tenancy.chargeback.model import (
    IDLE_ROW,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    LossBasis,
    PreemptionLoss,
    Report,
    SharedCostRule,
)
from hyperpod_tenancy.chargeback.report._format import _CENT, _gpu_hours, _money, _price, _usd

__all__ = ["COLLECTORS", "COLLECTOR_NAMES", "collection", "disallowed", "failure"]


def _losses(report: Report) -> list[PreemptionLoss]:
    return sorted(
        report.preemption_losses, key=lambda p: (p.cluster, p.instance_type, p.team, p.priority_class)
    )


#: How each basis of a preemption loss reads in the tables.
_BASIS_TEXT = {
    LossBasis.MEASURED: "measured",
    LossBasis.DECLARED_INTERVAL: "upper bound: declared checkpoint interval",
    LossBasis.WHOLE_RUN: "whole run: no checkpoint declared",
}


def _basis(loss: PreemptionLoss) -> str:
    return "; ".join(_BASIS_TEXT[basis] for basis in loss.bases)


def _loss_rows(report: Report) -> list[list[str]]:
    return [
        [
            p.instance_type,
            p.team,
            p.priority_class,
            str(p.evictions),
            _gpu_hours(p.lost_gpu_hours),
            _usd(p.lost_usd),
            _basis(p),
        ]
        for p in _losses(report)
    ]


_LOSS_HEADER = [
    "instance type",
    "team",
    "priority class",
    "evictions",
    "lost GPU-hours",
    "lost (USD)",
    "figure",
]


_LOSS_CENTER_HEADER = ["cost center", "evictions", "lost GPU-hours", "lost (USD)"]


def _loss_by_cost_center(report: Report) -> list[tuple[str, int, Decimal, Decimal]]:
    """Preemption loss per cost center: evictions, GPU-hours and their price, sorted by cost center."""
    sums: dict[str, tuple[int, Decimal, Decimal]] = {}
    for p in report.preemption_losses:
        n, hours, usd = sums.get(p.cost_center, (0, Decimal(0), Decimal(0)))
        sums[p.cost_center] = (n + p.evictions, hours + p.lost_gpu_hours, usd + p.lost_usd)
    return [(center, n, hours, usd) for center, (n, hours, usd) in sorted(sums.items())]


def _loss_center_rows(report: Report) -> list[list[str]]:
    centers = _loss_by_cost_center(report)
    return [
        *([c, str(n), _gpu_hours(h), _usd(u)] for c, n, h, u in centers),
        [
            "all",
            str(sum(n for _, n, _, _ in centers)),
            _gpu_hours(sum((h for _, _, h, _ in centers), Decimal(0))),
            _usd(sum((u for _, _, _, u in centers), Decimal(0))),
        ],
    ]


def disallowed(report: Report) -> str | None:
    """Return the line that flags borrowing the policy does not allow, or ``None`` when there is none."""
    if not report.disallowed_borrowing:
        return None
    teams = ", ".join(
        f"{team} ({_gpu_hours(hours)} GPU-hours)" for team, hours in report.disallowed_borrowing
    )
    return (
        f"BORROWING THE POLICY DOES NOT ALLOW: {teams}: their sharing is not lend-and-borrow, yet their usage shows "
        "borrowed GPU-hours (billed as recorded; see the notes)."
    )


def _cost_center_totals(report: Report) -> list[tuple[str, Decimal]]:
    """Each cost center's total (its teams' rows, its idle and shared rows), sorted: they add up to the report."""
    totals: dict[str, Decimal] = {}
    for r in report.rows:
        totals[r.cost_center] = totals.get(r.cost_center, Decimal(0)) + r.total
    return sorted(totals.items())


def _use_of_guarantee(report: Report) -> dict[str, str]:
    """Team → the GPU-hours it used as a share of its guarantee (``-`` without a guarantee)."""
    used: dict[str, tuple[Decimal, Decimal]] = {}
    for r in report.rows:
        if r.team in {IDLE_ROW, SHARED_COSTS_ROW}:
            continue
        u, g = used.get(r.team, (Decimal(0), Decimal(0)))
        used[r.team] = (u + r.used_gpu_hours, g + r.guaranteed_gpu_hours)
    return {
        team: f"{(u / g * 100).quantize(Decimal('0.1'), rounding=ROUND_HALF_EVEN):,} %" if g else "-"
        for team, (u, g) in used.items()
    }


_CENTER_HEADER = ["cost center", "total (USD)"]


def _team_totals(report: Report) -> list[tuple[str, str, Decimal]]:
    totals: dict[tuple[str, str], Decimal] = {}
    for r in report.rows:
        totals[(r.team, r.cost_center)] = totals.get((r.team, r.cost_center), Decimal(0)) + r.total
    return [(team, center, total) for (team, center), total in sorted(totals.items())]


def failure(report: Report) -> str | None:
    """Return the line that says why the report does not reconcile (its header), or ``None`` when it does."""
    rec = report.reconciliation
    if not rec.failed:
        return None
    reasons = []
    if rec.flagged and rec.bill is not None:
        reasons.append(
            f"the rows charge ${_usd(rec.charged)} against a bill of ${_usd(rec.bill)} before credits and refunds, "
            f"a difference of ${_usd(rec.difference or Decimal(0))}{_share(rec.difference, rec.bill)}, above the "
            f"tolerance of {_percent(rec.tolerance)} %. Compare the node inventory's instance-hours with the "
            "CUR's (see the notes) before sending this report."
        )
    if rec.unknown_teams and (rec.unknown_teams_failed or not rec.flagged):
        reasons.append(
            f"{', '.join(rec.unknown_teams)} "
            f"{'is no team' if len(rec.unknown_teams) == 1 else 'are no teams'} of the configuration yet ran on the "
            "cluster or carry its team tag on bill lines, so their GPU-hours raised the borrowing of known teams. "
            "Add each to the platform (its TeamTenant), or set "
            "`chargeback.unknownTeams: bill` to bill such namespaces under their own name."
        )
    return "RECONCILIATION FAILED: " + " Also: ".join(reasons)


def _percent(fraction: Decimal) -> Decimal:
    """Return a fraction as a percentage to hundredths (0.005 → 0.50)."""
    return (fraction * 100).quantize(_CENT, rounding=ROUND_HALF_EVEN)


def _share(difference: Decimal | None, bill: Decimal) -> str:
    """`` (0.99 %)``: the difference as a share of the bill, or nothing for a bill of zero."""
    return "" if not bill else f" ({_percent(abs(difference or Decimal(0)) / abs(bill))} %)"


#: The billed-periods table: teams whose quota did not exist all month, and the hours their guarantee is billed.
_PERIOD_HEADER = ["team", "from (UTC)", "to (UTC)", "hours billed"]


def _period_rows(report: Report) -> list[list[str]]:
    return [
        [p.team, f"{p.start:%Y-%m-%d %H:%M}", f"{p.end:%Y-%m-%d %H:%M}", str(p.hours)]
        for p in report.billed_periods
    ]


#: Kind of a credit line → how the report names it.
_CREDIT_KIND = {"credit": "credit", "refund": "refund"}


_CREDIT_HEADER = ["kind", "against", "USD"]


def _credit_rows(report: Report) -> list[list[str]]:
    return [
        [_CREDIT_KIND.get(c.kind, c.kind), c.name, _usd(_money(c.cost))]
        for c in report.reconciliation.credits
    ]


def _credit_total(report: Report) -> Decimal:
    return _money(sum((c.cost for c in report.reconciliation.credits), Decimal(0)))


#: Table of a collection gap → the collector that writes it.
COLLECTOR_NAMES = {
    "node": "node inventory",
    "heartdub": "usage-report operator",
    "partition_usage": "eviction collector",
}


#: Table of a collection gap → the collector and what it writes, as the report's gap table names it.
COLLECTORS = {
    "node": f"{COLLECTOR_NAMES['node']} (raw/node/)",
    "heartdub": f"{COLLECTOR_NAMES['heartdub']} (its heartbeat, raw/heartdub/; it writes the clusterqueue snapshots)",
    "partition_usage": f"{COLLECTOR_NAMES['partition_usage']} (GPU partitions held, raw/partition_usage/)",
}


def _gap_rows(report: Report) -> list[list[str]]:
    return [
        [
            COLLECTORS[gap.table],
            f"{gap.start:%Y-%m-%d %H:%M}",
            f"{gap.end:%Y-%m-%d %H:%M}",
            f"{gap.minutes // 60} h {gap.minutes % 60:02d} min",
            str(len(gap.hours)),
        ]
        for gap in report.collection_gaps
    ]


_GAP_HEADER = ["collector", "from (UTC)", "to (UTC)", "length", "clock hours"]


def collection(report: Report) -> str:
    """Return the report's line on collection: complete, or how many gaps, how long, which collectors."""
    gaps = report.collection_gaps
    if not gaps:
        return "complete: no collector stopped for longer than its threshold"
    stopped = sorted({COLLECTOR_NAMES[g.table] for g in gaps})
    minutes = sum(g.minutes for g in gaps)
    return (
        f"{len(gaps)} gap{'s' if len(gaps) != 1 else ''} ({minutes // 60} h {minutes % 60:02d} min; "
        f"{', '.join(stopped)}): each is billed as the last snapshot before it, held until the next; see "
        "Collection gaps"
    )


#: What each billing rule means, as the summary states it.
_RULE_TEXT = {
    BillingRule.RESERVATION: (
        "each team pays its guaranteed quota whether it used it or not, plus what it borrowed; a lender is "
        "credited for the idle guaranteed capacity other teams borrowed from it"
    ),
    BillingRule.USAGE: "each team pays the GPU-hours it ran, on its own quota and borrowed alike",
}


def _term_text(report: Report) -> str:
    """Return the term in force: since when, who signed it off, and why it starts mid-quarter if it does."""
    term = report.term
    if term is None:
        return "not recorded"
    signed = f"signed off by {term.signed_off_by}" if term.signed_off_by else "sign-off not recorded"
    text = f"in force since {term.effective_from.isoformat()}, {signed}"
    if term.mid_quarter_reason:
        text += f"; starts mid-quarter: {term.mid_quarter_reason}"
    return text


def _summary_lines(report: Report) -> list[tuple[str, str]]:
    rec = report.reconciliation
    prices = ", ".join(
        f"{itype} ${_price(report.gpu_hour_prices[itype])}/GPU-hour"
        f" ({report.price_sources[itype].value if itype in report.price_sources else 'unknown'})"
        for itype in sorted(report.gpu_hour_prices)
    )
    if rec.bill is None:
        reconciled = f"charged ${_usd(rec.charged)}; no bill (no CUR): not reconciled"
    else:
        verdict = (
            f"FLAGGED: the mismatch exceeds the tolerance of {_percent(rec.tolerance)} %"
            if rec.flagged
            else "within tolerance"
        )
        before = " before credits and refunds" if rec.credits else ""
        reconciled = (
            f"charged ${_usd(rec.charged)} against a bill of ${_usd(rec.bill)}{before}; "
            f"difference ${_usd(rec.difference or Decimal(0))}{_share(rec.difference, rec.bill)}, {verdict}"
        )
        if rec.credits:
            reconciled += (
                f"; credits and refunds ${_usd(_credit_total(report))} (listed below, allocated to no team): "
                f"the bill after them is ${_usd(_money(rec.bill + _credit_total(report)))}"
            )
    loss = (
        "upper bound (no last-checkpoint time collected for some evictions: the declared checkpoint interval, or the "
        "whole run since admission where none was declared)"
        if report.preemption_loss_is_upper_bound
        else "measured from the last checkpoint before each eviction"
    )
    idle_owner = "split by guarantee" if report.idle_owner == SHARED else f"charged to {report.idle_owner}"
    others = "the cluster's other bill lines (FSx, EKS, system nodes, NAT, Prometheus, this pipeline)"
    if report.shared_costs is SharedCostRule.IDLE_OWNER and report.idle_owner != SHARED:
        shared = f"{SHARED_COSTS_ROW} is {others}, charged to {report.idle_owner}"
    else:
        shared = f"{others} are in each team's shared column, split by guarantee"
    rows = (
        f"{IDLE_ROW} is capacity no team's quota covers (reserved, unallocated and recovering nodes), "
        f"{idle_owner}; {shared}"
    )
    return [
        ("Billing rule", f"{report.rule.value}: {_RULE_TEXT[report.rule]}"),
        ("Billing term", _term_text(report)),
        ("Idle owner", report.idle_owner),
        ("Rows", rows),
        ("Shared costs", report.shared_costs.value),
        ("Prices", prices or "none"),
        ("Reconciliation", reconciled),
        ("Preemption loss", loss),
        ("Collection", collection(report)),
    ]
