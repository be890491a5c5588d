"""Borrowing rules: the percentage a team may borrow, and its absolute limits per instance type.

Two sources bound ``borrowLimit``. The SageMaker API accepts 0-10,000 percent (``ResourceSharingConfig.BorrowLimit``,
"Valid Range: Minimum value of 0. Maximum value of 10000", and the CloudFormation schema of
``AWS::SageMaker::ComputeQuota``); the same page documents "1 - 500 percent" as the range to use. So a value the
API refuses is an error, and one outside the documented range a warning that says what it means.
``absoluteBorrowLimits`` is a list of at most 15 ``ComputeQuotaResourceConfig`` (same sources).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import (
    API_BORROW_LIMIT_RANGE,
    DOCUMENTED_BORROW_LIMIT_RANGE,
    Platform,
    ResourceAmount,
    Team,
)
from hyperpod_tenancy.policy.rules._base import Domain, Finding, Severity, team_rule

__all__ = ["ERROR_RULES", "WARNING_RULES", "amount_problem"]

#: ``AbsoluteBorrowLimits``: at most 15 entries; each amount at most 10,000,000 (``ComputeQuotaResourceConfig``).
_MAX_ENTRIES = 15
_MAX_AMOUNT = 10_000_000
_SOURCES = "SageMaker API reference, ResourceSharingConfig"


@team_rule(
    code="HPT-BORROW-LIMIT",
    domain=Domain.CAPACITY,
    at="teams[*].compute.borrowLimit",
    reads=(),
    failure="a borrow limit the service rejects",
    guardrail="`borrowLimit` between 0 and 10,000 percent of the team's guaranteed amount (the API's range)",
)
def borrow_limit(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the borrow limit is within the API's range."""
    lo, hi = API_BORROW_LIMIT_RANGE
    limit = team.compute.borrow_limit
    if not lo <= limit <= hi:
        yield Finding(
            f"teams[{i}].compute.borrowLimit",
            f"{limit} is outside the range the SageMaker API accepts, {lo}-{hi:,} (percent of the team's "
            f"guaranteed amount; {_SOURCES}.BorrowLimit).",
            f"use a value between {lo} and {hi:,}; 50 is the service default.",
        )


@team_rule(
    code="HPT-BORROW-LIMIT-RANGE",
    domain=Domain.CAPACITY,
    at="teams[*].compute.borrowLimit",
    reads=("teams[*].compute.sharing", "teams[*].compute.absoluteBorrowLimits"),
    failure="a borrow limit outside the documented 1-500 percent, without knowing what it does",
    guardrail="warning on a `borrowLimit` of 0 or above 500, saying what the team may then take",
    severity=Severity.WARNING,
)
def borrow_limit_documented(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Warn when a borrowing team's limit is outside the documented range, saying what it means."""
    lo, hi = DOCUMENTED_BORROW_LIMIT_RANGE
    limit = team.compute.borrow_limit
    if (
        not team.compute.sharing.borrows
        or not API_BORROW_LIMIT_RANGE[0] <= limit <= API_BORROW_LIMIT_RANGE[1]
    ):
        return
    if limit > hi:
        yield Finding(
            f"teams[{i}].compute.borrowLimit",
            f"{limit} is above the documented range {lo}-{hi} percent ({_SOURCES}.BorrowLimit; the API accepts up "
            f"to 10,000). When the other teams are idle, team {team.name!r} may run up to {1 + limit / 100:g} "
            "times its guarantee, and all of that borrowed part is reclaimed when its lenders return.",
            "keep it if the team's work checkpoints and tolerates reclaim; otherwise lower it to 500 or less, or "
            "cap the borrowing per instance type with `absoluteBorrowLimits`.",
        )
    elif limit < lo and not team.compute.absolute_borrow_limits:
        yield Finding(
            f"teams[{i}].compute.borrowLimit",
            f"0 lets team {team.name!r} borrow nothing, though its sharing is lend-and-borrow (the documented "
            f"range is {lo}-{hi} percent; {_SOURCES}.BorrowLimit).",
            "set `sharing: lend` to say the team only lends, or give it `absoluteBorrowLimits`.",
        )


@team_rule(
    code="HPT-ABSOLUTE-BORROW-ENTRIES",
    domain=Domain.CAPACITY,
    at="teams[*].compute.absoluteBorrowLimits",
    reads=(),
    failure="more absolute borrow limits than the service accepts",
    guardrail="at most 15 instance types in `absoluteBorrowLimits`",
)
def absolute_entries(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check the number of absolute limits against the API's maximum."""
    count = len(team.compute.absolute_borrow_limits)
    if count > _MAX_ENTRIES:
        yield Finding(
            f"teams[{i}].compute.absoluteBorrowLimits",
            f"{count} instance types; the limit is {_MAX_ENTRIES} ({_SOURCES}.AbsoluteBorrowLimits).",
            f"keep at most {_MAX_ENTRIES} instance types; the others borrow by `borrowLimit`.",
        )


@team_rule(
    code="HPT-ABSOLUTE-BORROW-SHARING",
    domain=Domain.CAPACITY,
    at="teams[*].compute.absoluteBorrowLimits",
    reads=("teams[*].compute.sharing",),
    failure="borrow limits on a team that never borrows, read as a promise",
    guardrail="`absoluteBorrowLimits` only on a team whose sharing is `lend-and-borrow`",
)
def absolute_sharing(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Refuse absolute limits on a team whose own sharing does not borrow."""
    compute = team.compute
    if compute.absolute_borrow_limits and not compute.sharing.borrows:
        yield Finding(
            f"teams[{i}].compute.absoluteBorrowLimits",
            f"team {team.name!r} has `sharing: {compute.sharing.value}`, so it never borrows and these limits "
            "would do nothing.",
            "remove `absoluteBorrowLimits`, or set `sharing: lend-and-borrow`.",
        )


def amount_problem(amount: ResourceAmount, itype: str, p: Platform) -> tuple[str, str] | None:
    """Return what is wrong with one absolute limit, and the fix (None: nothing)."""
    grains = amount.grains
    if not grains or (len(grains) > 1 and set(grains) != {"vcpus", "memoryGiB"}):
        shown = ", ".join(grains) or "nothing"
        return (
            f"gives {shown}; an amount is whole `instances`, `accelerators`, or `vcpus` and/or `memoryGiB`.",
            "keep one grain, e.g. `{accelerators: 8}`; vCPUs and memory follow an accelerator count in the "
            "instance's ratio.",
        )
    for key, value in amount.given.items():
        if not 0 <= value <= _MAX_AMOUNT:
            return (
                f"{key} {value:g} is outside 0-{_MAX_AMOUNT:,} (ComputeQuotaResourceConfig).",
                f"use a {key} between 0 and {_MAX_AMOUNT:,}.",
            )
    shapes = [s for g in p.instance_group_for(itype) if (s := resource_shape(g)) is not None]
    if grains != ("instances",) and p.instance_group_for(itype) and not shapes:
        return (
            f"is stated in {grains[0]}, but no resource shape is known for {itype} to turn it into quantities.",
            f"set `resources:` on the {itype} instance group, or state the limit in `instances`.",
        )
    if amount.accelerators is not None and shapes and shapes[0].accelerators < 1:
        return (
            f"names accelerators, but {itype} has none.",
            "state the limit in `instances`, or in `vcpus` and `memoryGiB`.",
        )
    return None


@team_rule(
    code="HPT-ABSOLUTE-BORROW-LIMIT",
    domain=Domain.CAPACITY,
    at="teams[*].compute.absoluteBorrowLimits",
    reads=("cluster.instanceGroups[*].instanceType", "cluster.instanceGroups[*].resources"),
    failure="an absolute borrow limit the service rejects, or one no scheduler can turn into quantities",
    guardrail="each absolute limit is on an instance type of the cluster, in one grain the type has",
)
def absolute_limit(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check each absolute limit: an instance type of the cluster, one grain, in range, one the type has."""
    types = sorted({g.instance_type for g in p.cluster.instance_groups})
    for itype, amount in team.compute.absolute_borrow_limits.items():
        at = f"teams[{i}].compute.absoluteBorrowLimits.{itype}"
        if itype not in types:
            close = difflib.get_close_matches(itype, types, n=1)
            hint = f"did you mean {close[0]}?" if close else f"the cluster has {', '.join(types)}."
            yield Finding(at, f"{itype!r} is not an instance type of the cluster's groups.", hint)
            continue
        problem = amount_problem(amount, itype, p)
        if problem is not None:
            message, fix = problem
            yield Finding(at, f"the limit on {itype} {message}", fix)


#: The error rules of this module, in reporting order.
ERROR_RULES = (borrow_limit, absolute_entries, absolute_sharing, absolute_limit)
#: The warning rules of this module, in reporting order.
WARNING_RULES = (borrow_limit_documented,)
