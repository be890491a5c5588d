"""Chargeback rules: billing terms signed by the cost-center owners, prices, reconciliation, cost centers.

Every rule but the cost-center one checks the optional ``chargeback:`` section and reports nothing without it.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterator

from hyperpod_tenancy.chargeback.model import SHARED, starts_a_quarter
from hyperpod_tenancy.policy.model import BillingTermSpec, ChargebackSpec, Platform, Team
from hyperpod_tenancy.policy.rules._base import Domain, Finding, Severity, platform_rule, team_rule

__all__ = [
    "COST_CENTER",
    "MAX_RECONCILIATION_TOLERANCE",
    "alarm_threshold",
    "cost_center",
    "effective_from",
    "idle_owner",
    "price_unused",
    "prices",
    "quarter",
    "sign_off",
    "term_rule",
    "terms_defined",
    "tolerance",
]

#: A cost center: a valid AWS tag value (it is tagged on every team resource), at most 256 characters.
COST_CENTER = re.compile(r"^[\w .:/=+\-@]{1,256}$")
#: Largest reconciliation tolerance accepted (10 %): beyond it the reconciliation checks nothing.
MAX_RECONCILIATION_TOLERANCE = 0.1
_SIGN = "the cost-center owners must agree on and sign it; there is no default"


def _terms(p: Platform) -> Iterator[tuple[int, BillingTermSpec]]:
    yield from enumerate(p.chargeback.billing_terms if p.chargeback else ())


@platform_rule(
    code="HPT-CHARGEBACK-TERMS",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms",
    reads=(),
    failure="a chargeback pipeline with no billing rule in force, so no month can be billed",
    guardrail="a `chargeback:` section has at least one billing term",
)
def terms_defined(p: Platform) -> Iterator[Finding]:
    """Check that a chargeback section defines at least one billing term."""
    if p.chargeback is not None and not p.chargeback.billing_terms:
        yield Finding(
            "chargeback.billingTerms",
            "no billing term is defined.",
            f"add a term with `effectiveFrom`, `rule` and `idleOwner`; {_SIGN}.",
        )


@platform_rule(
    code="HPT-CHARGEBACK-EFFECTIVE-FROM",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms[*].effectiveFrom",
    reads=(),
    failure="a rule change that silently rewrites past months, or applies from an unexpected month",
    guardrail="`effectiveFrom` is the first day of a month (`YYYY-MM-01`), terms in strictly increasing order",
)
def effective_from(p: Platform) -> Iterator[Finding]:
    """Check that every term starts on the first day of a month, each later than the one before."""
    previous: dt.date | None = None
    for i, term in _terms(p):
        path = f"chargeback.billingTerms[{i}].effectiveFrom"
        try:
            date = dt.date.fromisoformat(term.effective_from)
        except ValueError:
            date = None
        if date is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", term.effective_from):
            yield Finding(
                path,
                f"{term.effective_from!r} is not a date.",
                "write the first day of a month, e.g. `2026-07-01`.",
            )
            continue
        if date.day != 1:
            first = (date.replace(day=1) + dt.timedelta(days=32)).replace(day=1)
            yield Finding(
                path,
                f"{term.effective_from} is not the first day of a month; reports are monthly, so the term would "
                f"apply only from {first.isoformat()}.",
                f"write `{first.isoformat()}` (or `{date.replace(day=1).isoformat()}` if it applies to that month).",
            )
        if previous is not None and date <= previous:
            yield Finding(
                path,
                f"{term.effective_from} is not after the previous term's {previous.isoformat()}.",
                "list the terms oldest first, one per effective date; never edit a term already in force, add one.",
            )
        previous = date


@platform_rule(
    code="HPT-CHARGEBACK-QUARTER",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms[*].effectiveFrom",
    reads=(),
    failure="a billing rule changed mid-quarter without a reason: quarters billed under two rules nobody can defend",
    guardrail="`effectiveFrom` is the first day of a quarter (January, April, July or October 1st), or the term "
    "says why not in `midQuarterReason`",
)
def quarter(p: Platform) -> Iterator[Finding]:
    """Check that every term starts on the first day of a quarter, or gives the reason it does not."""
    for i, term in _terms(p):
        try:
            date = dt.date.fromisoformat(term.effective_from)
        except ValueError:
            continue  # HPT-CHARGEBACK-EFFECTIVE-FROM
        if date.day != 1 or starts_a_quarter(date) or (term.mid_quarter_reason or "").strip():
            continue
        quarter_start = date.replace(month=(date.month - 1) // 3 * 3 + 1)
        next_quarter = (quarter_start + dt.timedelta(days=95)).replace(day=1)
        yield Finding(
            f"chargeback.billingTerms[{i}].effectiveFrom",
            f"{term.effective_from} is not the first day of a quarter: the months from "
            f"{quarter_start.isoformat()} would be billed under two terms.",
            f"start it on `{next_quarter.isoformat()}` (or `{quarter_start.isoformat()}`), or add "
            "`midQuarterReason: <why>` to the term, agreed with the cost-center owners who sign it.",
        )


@platform_rule(
    code="HPT-CHARGEBACK-SIGN-OFF",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms[*].signedOffBy",
    reads=(),
    failure="a bill under a rule nobody is on record as having agreed to",
    guardrail="every billing term names who signed it off (`signedOffBy`); each report names it",
)
def sign_off(p: Platform) -> Iterator[Finding]:
    """Check that every billing term names who signed it off."""
    for i, term in _terms(p):
        if not (term.signed_off_by or "").strip():
            yield Finding(
                f"chargeback.billingTerms[{i}].signedOffBy",
                "no sign-off is recorded.",
                "add `signedOffBy:` naming the cost-center owners who signed the term (or the ticket that records "
                f"their sign-off); {_SIGN}.",
            )


@platform_rule(
    code="HPT-CHARGEBACK-RULE",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms[*].rule",
    reads=(),
    failure="a billing rule nobody chose: teams charged for guarantees (or not) by a default",
    guardrail="every billing term names its rule (`reservation` or `usage`); there is no default",
)
def term_rule(p: Platform) -> Iterator[Finding]:
    """Check that every billing term names its rule."""
    for i, term in _terms(p):
        if term.rule is None:
            yield Finding(
                f"chargeback.billingTerms[{i}].rule",
                "no billing rule is set.",
                "add `rule: reservation` (a team pays its guarantee used or not, a borrower what it borrowed, "
                f"lenders are credited) or `rule: usage` (a team pays what it ran); {_SIGN}.",
            )


@platform_rule(
    code="HPT-CHARGEBACK-IDLE-OWNER",
    domain=Domain.CHARGEBACK,
    at="chargeback.billingTerms[*].idleOwner",
    reads=(),
    failure="idle and recovering capacity that nobody pays for, or a bill that does not add up",
    guardrail="every billing term names the idle owner: a cost center or `shared` (split by guarantee)",
)
def idle_owner(p: Platform) -> Iterator[Finding]:
    """Check that every billing term names who pays for capacity no quota covers."""
    for i, term in _terms(p):
        path = f"chargeback.billingTerms[{i}].idleOwner"
        if not term.idle_owner:
            yield Finding(
                path,
                "no idle owner is set.",
                "add `idleOwner: <cost center>` (e.g. `platform`) or `idleOwner: shared` (split by guarantee) for "
                f"reserved, unallocated and recovering capacity; {_SIGN}.",
            )
        elif term.idle_owner != SHARED and not COST_CENTER.match(term.idle_owner):
            yield Finding(
                path,
                f"{term.idle_owner!r} is not a valid cost center (an AWS tag value).",
                "use letters, digits, spaces and `_ . : / = + - @`, at most 256 characters.",
            )


@platform_rule(
    code="HPT-CHARGEBACK-PRICE",
    domain=Domain.CHARGEBACK,
    at="chargeback.prices",
    reads=(),
    failure="a fallback price of zero: GPU-hours billed at nothing when the CUR has no line",
    guardrail="`chargeback.prices` are positive USD per GPU-hour",
)
def prices(p: Platform) -> Iterator[Finding]:
    """Check that fallback prices are positive."""
    spec: ChargebackSpec | None = p.chargeback
    for itype, price in (spec.prices if spec else {}).items():
        if not price > 0:
            yield Finding(
                f"chargeback.prices.{itype}",
                f"{price} is not a positive price.",
                "write the USD price of one GPU-hour, e.g. `12.29`.",
            )


@platform_rule(
    code="HPT-CHARGEBACK-PRICE-UNUSED",
    domain=Domain.CHARGEBACK,
    at="chargeback.prices",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="a fallback price under a misspelt instance type, so the real one has none",
    guardrail="warning on a price for an instance type no instance group has, with a did-you-mean hint",
    severity=Severity.WARNING,
)
def price_unused(p: Platform) -> Iterator[Finding]:
    """Check that fallback prices name instance types of the cluster's groups."""
    spec: ChargebackSpec | None = p.chargeback
    types = sorted({g.instance_type for g in p.cluster.instance_groups})
    for itype in spec.prices if spec and types else {}:  # no groups at all is HPT-INSTANCE-GROUPS' error
        if itype not in types:
            close = difflib.get_close_matches(itype, types, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"the cluster has {', '.join(types)}."
            yield Finding(
                f"chargeback.prices.{itype}",
                f"{itype!r} is not an instance type of the cluster's groups; its price is never used.",
                f"remove it, or fix the name; {hint}",
            )


@platform_rule(
    code="HPT-CHARGEBACK-TAGS-PAYER",
    domain=Domain.CHARGEBACK,
    at="chargeback",
    reads=("account", "identityCenter.account"),
    failure="cost allocation tags never activated: the bill's team lines stay untagged and fall to the shared split",
    guardrail="warning when the cluster is in another account than Identity Center: the payer activates the tags",
    severity=Severity.WARNING,
)
def tags_in_payer(p: Platform) -> Iterator[Finding]:
    """Warn that a workload account cannot activate cost allocation tags: the payer account must."""
    if p.chargeback is not None and p.identity_center_elsewhere:
        yield Finding(
            "chargeback",
            f"the cluster's account {p.account} is not the Identity Center account, so it is taken to be a member "
            "account: only the organization's management (payer) account can activate cost allocation tags "
            "(ce:UpdateCostAllocationTagsStatus), so the chargeback stack does not try to.",
            "in the payer account, activate the `hyperpod-tenancy:cluster`, `hyperpod-tenancy:team` and "
            "`hyperpod-tenancy:cost-center` tag keys once they appear on the bill (Billing console, Cost "
            "allocation tags, or `aws ce update-cost-allocation-tags-status`).",
        )


@platform_rule(
    code="HPT-CHARGEBACK-TOLERANCE",
    domain=Domain.CHARGEBACK,
    at="chargeback.reconciliationTolerance",
    reads=(),
    failure="a reconciliation that flags every report, or none",
    guardrail=f"`reconciliationTolerance` between 0 and {MAX_RECONCILIATION_TOLERANCE} (10 %)",
)
def tolerance(p: Platform) -> Iterator[Finding]:
    """Check that the reconciliation tolerance is a sensible fraction."""
    if p.chargeback is None:
        return
    value = p.chargeback.reconciliation_tolerance
    if not 0 <= value <= MAX_RECONCILIATION_TOLERANCE:
        yield Finding(
            "chargeback.reconciliationTolerance",
            f"{value} is outside 0-{MAX_RECONCILIATION_TOLERANCE}.",
            "write a fraction of the bill, e.g. `0.005` for 0.5 %.",
        )


@platform_rule(
    code="HPT-CHARGEBACK-ALARM",
    domain=Domain.CHARGEBACK,
    at="chargeback.preemptionAlarm.gpuHoursPerTeamPerDay",
    reads=(),
    failure="a preemption alarm that fires on every eviction, or never",
    guardrail="`preemptionAlarm.gpuHoursPerTeamPerDay` is at least 1",
)
def alarm_threshold(p: Platform) -> Iterator[Finding]:
    """Check that the preemption alarm's threshold is a positive number of GPU-hours."""
    if p.chargeback is None:
        return
    value = p.chargeback.preemption_alarm.gpu_hours_per_team_per_day
    if value < 1:
        yield Finding(
            "chargeback.preemptionAlarm.gpuHoursPerTeamPerDay",
            f"{value} GPU-hours is not a usable threshold.",
            "write the GPU-hours a team may lose in a day before the alarm fires, e.g. `8`.",
        )


@team_rule(
    code="HPT-CHARGEBACK-COST-CENTER",
    domain=Domain.CHARGEBACK,
    at="teams[*].costCenter",
    reads=(),
    failure="a cost center that cannot be tagged or collides with `shared`, so charges land nowhere",
    guardrail="`costCenter` (default: the team name) is a valid AWS tag value and not `shared`",
)
def cost_center(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's cost center can be tagged and is not the reserved word ``shared``."""
    value = team.cost_center
    if value is None:
        return
    path = f"teams[{i}].costCenter"
    if value == SHARED:
        yield Finding(
            path,
            f"{SHARED!r} is reserved: `idleOwner: shared` splits idle capacity by guarantee.",
            "name the cost center, e.g. the team's budget code.",
        )
    elif not COST_CENTER.match(value) or value.lower().startswith("aws:"):
        yield Finding(
            path,
            f"{value!r} is not a valid cost center (an AWS tag value, tagged on the team's resources).",
            "use letters, digits, spaces and `_ . : / = + - @`, at most 256 characters, not starting with `aws:`.",
        )
