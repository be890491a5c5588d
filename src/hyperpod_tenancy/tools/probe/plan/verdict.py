"""The verdict of each check from what was observed, and the exit status of a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hyperpod_tenancy.tools.probe.plan.checks import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_PASS,
    Check,
    Expect,
    Observed,
    Outcome,
    Result,
    Status,
)

__all__ = ["exit_status", "verdict"]


def _control(check: Check, observed: Mapping[str, Observed]) -> Result | None:
    return verdict(check.control, observed) if check.control is not None else None


def verdict(check: Check, observed: Mapping[str, Observed]) -> Result:  # noqa: PLR0911 - one return per rule
    """Return the verdict of ``check`` given every observation of the run (its control's included), by check id.

    * not observed, an unschedulable pod or an error: inconclusive, never a pass;
    * :attr:`Expect.ALLOWED`: ``ok`` passes; anything definite else (timeout, refused, absent, denied) fails;
    * :attr:`Expect.BLOCKED`: refused or absent passes only once the check's positive control passed, and a
      timeout likewise (before that a timeout or an absence could be a probe that reaches nothing at all);
      ``ok`` fails;
    * :attr:`Expect.DENIED`: a denial whose message contains :attr:`Check.message` passes; a denial by another
      rule is inconclusive (the boundary was not exercised); admission of the request fails.
    """
    seen = observed.get(check.id)
    if seen is None:
        return Result(
            check=check,
            observed=Observed(outcome=Outcome.ERROR),
            status=Status.INCONCLUSIVE,
            why="not observed",
        )

    def result(status: Status, why: str) -> Result:
        return Result(check=check, observed=seen, status=status, why=why)

    detail = f": {seen.detail}" if seen.detail else ""
    if seen.outcome is Outcome.UNSCHEDULABLE:
        return result(Status.INCONCLUSIVE, f"the probe pod found no capacity before the timeout{detail}")
    if seen.outcome is Outcome.ERROR:
        return result(Status.INCONCLUSIVE, f"could not be observed{detail}")
    if check.expect is Expect.ALLOWED:
        if seen.outcome is Outcome.OK:
            return result(Status.PASS, "works as it must for the team itself")
        return result(Status.FAIL, f"honest work of the team is {seen.outcome.value}{detail}")
    if check.expect is Expect.DENIED:
        if seen.outcome is Outcome.DENIED:
            if check.message in seen.detail:
                return result(Status.PASS, f"denied: {check.message}")
            return result(
                Status.INCONCLUSIVE, f"denied by another rule than the one probed ({check.message!r}){detail}"
            )
        if seen.outcome is Outcome.OK:
            return result(Status.FAIL, "the request was admitted")
        return result(Status.INCONCLUSIVE, f"unexpected {seen.outcome.value}{detail}")
    if seen.outcome is Outcome.OK:
        return result(Status.FAIL, "got through")
    if seen.outcome in (Outcome.TIMEOUT, Outcome.REFUSED, Outcome.ABSENT):
        control = _control(check, observed)
        if control is not None and control.status is not Status.PASS:
            return result(
                Status.INCONCLUSIVE,
                f"{seen.outcome.value}, but the positive control {control.check.id} did not pass "
                f"({control.status.value}: {control.why})",
            )
        return result(Status.PASS, f"blocked ({seen.outcome.value})")
    return result(Status.INCONCLUSIVE, f"unexpected {seen.outcome.value}{detail}")


def exit_status(results: Sequence[Result]) -> int:
    """0 when every check passed, 1 when one failed, 3 when none failed but one is inconclusive."""
    statuses = {r.status for r in results}
    if Status.FAIL in statuses:
        return EXIT_FAIL
    if Status.INCONCLUSIVE in statuses or not results:
        return EXIT_INCONCLUSIVE
    return EXIT_PASS
