"""The POSIX identity webhook's team record: what a team stack writes to SSM and the webhook reads at run time.

One class for both sides: the team stack writes :meth:`PosixTeamRecord.to_json` (the policy renders the record in
:func:`hyperpod_tenancy.k8s.posix_identity.team_record`), and the webhook reads each record with
:meth:`PosixTeamRecord.document_of` before it checks the team's GID against its UID range
(:func:`hyperpod_tenancy.webhook.config.parse_team_record`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["IDENTITY_CENTER", "PosixTeamRecord", "RecordVersionError"]

#: ``kind`` of a principal resolved through IAM Identity Center (its role name names the person's session).
IDENTITY_CENTER = "identity-center"


class RecordVersionError(ValueError):
    """A stored record of a version this release does not read."""


@dataclass(frozen=True, kw_only=True)
class PosixTeamRecord:
    """One team as the POSIX identity webhook knows it.

    Records written before the record carried a version have this layout: a record without ``version`` is read
    as version 1, so a webhook upgraded before the team stacks keeps reading them. Any other version is refused
    with the fix, never guessed at.
    """

    #: The version this release writes and reads.
    VERSION: ClassVar[int] = 1

    #: The team's namespace.
    namespace: str
    #: The team's name.
    team: str
    #: The team's POSIX GID.
    gid: int
    #: The team's LocalQueue (the queue label's default).
    local_queue: str
    #: The name prefix of the Identity Center roles of the team's permission set, ``AWSReservedSSO_<set>_``.
    role_name_prefix: str

    def to_document(self) -> dict[str, Any]:
        """Return the record as the JSON object stored."""
        return {
            "version": self.VERSION,
            "namespace": self.namespace,
            "team": self.team,
            "gid": self.gid,
            "localQueue": self.local_queue,
            "principals": [{"kind": IDENTITY_CENTER, "roleNamePrefix": self.role_name_prefix}],
        }

    def to_json(self) -> str:
        """Return the record as stored: canonical JSON (sorted keys)."""
        return json.dumps(self.to_document(), sort_keys=True)

    @classmethod
    def document_of(cls, data: object, *, source: str) -> dict[str, Any]:
        """Return a stored record's fields without its version, once the version is one this release reads.

        The fields are checked by the reader (the webhook lists every problem of a record, naming each field).

        Raises:
            RecordVersionError: the record is of another version (naming ``source``, both versions and the fix).

        """
        if not isinstance(data, Mapping):
            return {"": data}
        version = data.get("version", cls.VERSION)
        if isinstance(version, bool) or version != cls.VERSION:
            raise RecordVersionError(
                f"{source}: POSIX identity team record of version {version!r}; this webhook reads version "
                f"{cls.VERSION}. Fix: deploy the team stack and the cluster stack with the same library version."
            )
        return {k: v for k, v in data.items() if k != "version"}

    @classmethod
    def from_json(cls, text: str, *, source: str = "the record") -> PosixTeamRecord:
        """Read a record written by :meth:`to_json` (fields of the expected types, one Identity Center principal).

        Raises:
            RecordVersionError: the record is of another version.
            ValueError: a field is missing or of the wrong type.

        """
        fields = cls.document_of(json.loads(text), source=source)
        try:
            (principal,) = fields["principals"]
            record = cls(
                namespace=fields["namespace"],
                team=fields["team"],
                gid=fields["gid"],
                local_queue=fields["localQueue"],
                role_name_prefix=principal["roleNamePrefix"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{source}: not a POSIX identity team record ({exc!r}).") from None
        if principal.get("kind") != IDENTITY_CENTER or not isinstance(record.gid, int):
            raise ValueError(f"{source}: not a POSIX identity team record (principal {principal!r}).")
        return record
