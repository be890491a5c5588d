"""What the drift audit reports: a :class:`Finding`, an :class:`AuditError`, and the record version check.

Shared by the AWS checks (:mod:`hyperpod_tenancy.runtime.drift_audit`) and the Kubernetes checks
(:mod:`hyperpod_tenancy.runtime.kube_drift`); only the standard library is imported.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["AuditError", "Finding", "check_version"]


class AuditError(Exception):
    """The audit cannot run (no credentials, an API refused): the message names what is missing."""


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One difference between what the platform declares and what exists."""

    #: What kind of drift (``permission-set-missing``, ``access-entry-stale``, ...).
    kind: str
    #: The team it concerns (``""`` for none).
    team: str
    #: The object: ``<type> <name>``.
    object: str
    #: What the platform expects.
    expected: str
    #: What exists.
    actual: str
    #: How to put it right (a command, or a ``cdk deploy`` of the right stack).
    fix: str

    def render(self) -> str:
        """Return the finding as four lines of text."""
        return (
            f"[{self.kind}] {self.object}" + (f" (team {self.team})" if self.team else "") + "\n"
            f"    expected: {self.expected}\n    actual:   {self.actual}\n    fix:      {self.fix}"
        )

    def to_dict(self) -> dict[str, str]:
        """Return the finding as a JSON object."""
        return asdict(self)


def check_version(record: Mapping[str, Any], version: int, *, what: str) -> None:
    """Refuse a record of another ``schemaVersion`` than ``version``.

    Raises:
        AuditError: naming ``what`` record of which team, both versions, and the fix.

    """
    if record.get("schemaVersion") != version:
        raise AuditError(
            f"{what} of team {record.get('team')!r} has schemaVersion {record.get('schemaVersion')!r}, "
            f"this audit reads {version}: deploy the team stack with this library's version"
        )
