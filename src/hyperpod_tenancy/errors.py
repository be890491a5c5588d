"""Exceptions raised by the library. All derive from :class:`TenancyError` (a ``ValueError``)."""

from __future__ import annotations

from dataclasses import dataclass


class TenancyError(ValueError):
    """Base class of every error this library raises on bad input."""


@dataclass(frozen=True)
class PolicyIssue:
    """One problem found in a platform policy.

    Attributes:
        path: YAML-style path of the bad value, e.g. ``teams[1].compute.borrowLimit``.
        message: what is wrong, quoting the bad value.
        fix: how to fix it.
        code: stable identifier of the rule, e.g. ``HPT-QUOTA-CAPACITY``.

    """

    path: str
    message: str
    fix: str
    code: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message} Fix: {self.fix} [{self.code}]"


class PolicyError(TenancyError):
    """The platform policy is invalid. ``issues`` lists every problem found, not just the first."""

    def __init__(self, issues: list[PolicyIssue], source: str | None = None) -> None:
        self.issues = list(issues)
        self.source = source
        where = f" in {source}" if source else ""
        lines = [f"{len(self.issues)} problem(s){where}; nothing was synthesized:"]
        lines += [f"  - {issue}" for issue in self.issues]
        super().__init__("\n".join(lines))


#: Exit status: the command succeeded (a valid policy, a report that reconciles).
EXIT_OK = 0
#: Exit status: the policy is invalid or a file cannot be read.
EXIT_INVALID = 1
#: Exit status: the command line is wrong.
EXIT_USAGE = 2
#: Exit status: the chargeback report was written but does not reconcile (a difference from the bill above the
#: tolerance, or teams the configuration does not name).
EXIT_UNRECONCILED = 3
#: The command line's name, as its messages start.
PROG = "hyperpod-tenancy"
