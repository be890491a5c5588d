"""The webhook's configuration as typed values: UIDs, principals, team namespaces, where the team records are."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.errors import TenancyError

__all__ = [
    "DEFAULT_CACHE_TTL_SECONDS",
    "DEFAULT_REFRESH_SECONDS",
    "ID_MAX",
    "ID_MIN",
    "SUPPLEMENTAL_GROUPS_POLICIES",
    "IdentityCenterPrincipal",
    "NamespaceConfig",
    "Principal",
    "StudioPrincipal",
    "TeamRecords",
    "WebhookConfig",
    "WebhookConfigError",
]

#: Default of ``cacheTtlSeconds``.
DEFAULT_CACHE_TTL_SECONDS = 300


#: Default of ``teamRecords.refreshSeconds``.
DEFAULT_REFRESH_SECONDS = 60


#: Lowest UID/GID the platform hands out (0-999 are system accounts in most images).
ID_MIN = 1000


#: Highest UID/GID (2^31 - 2: some tools treat 2^31 - 1 and above as invalid or "nobody").
ID_MAX = 2**31 - 2


_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::(\d{12}):role/(?:[\w+=,.@-]+/)*([\w+=,.@-]{1,64})$")


_DOMAIN_ID = re.compile(r"^d-[a-z0-9]{1,62}$")


_SSM_PATH = re.compile(r"^/(?:[\w.-]+/)+$")


#: The values of ``supplementalGroupsPolicy``.
SUPPLEMENTAL_GROUPS_POLICIES = ("auto", "strict", "merge")


class WebhookConfigError(TenancyError):
    """The configuration file is invalid; ``problems`` lists every ``field: what is wrong. Fix: ...``."""

    def __init__(self, problems: list[str], source: str | None = None) -> None:
        self.problems = list(problems)
        where = f" in {source}" if source else ""
        super().__init__(
            f"{len(self.problems)} problem(s){where}:\n" + "\n".join(f"  - {p}" for p in self.problems)
        )


@dataclass(frozen=True, kw_only=True)
class IdentityCenterPrincipal:
    """Identity Center's role for a team's permission set; the session name names the person."""

    #: ``AWSReservedSSO_<PermissionSet>_``; the role name is this followed by 16 hex digits.
    role_name_prefix: str

    def matches(self, role_name: str) -> bool:
        """Whether ``role_name`` is this permission set's role (the prefix then exactly 16 hex digits)."""
        suffix = role_name.removeprefix(self.role_name_prefix)
        return suffix != role_name and len(suffix) == 16 and all(c in "0123456789abcdef" for c in suffix)


@dataclass(frozen=True, kw_only=True)
class StudioPrincipal:
    """A team's SageMaker Studio execution role (shared by every user profile of the domain)."""

    #: The role ARN (with its path).
    role_arn: str
    #: The Studio domain ID (``d-...``).
    domain_id: str
    #: Account of the role.
    account: str
    #: Role name (the last segment of the ARN; assumed-role ARNs carry no path).
    role_name: str


#: A principal of a team namespace.
Principal = IdentityCenterPrincipal | StudioPrincipal


@dataclass(frozen=True, kw_only=True)
class NamespaceConfig:
    """One team namespace."""

    #: The namespace name.
    namespace: str
    #: The team name.
    team: str
    #: The team's POSIX GID.
    gid: int
    #: The team's LocalQueue (the queue label's default).
    local_queue: str
    #: Whose requests are resolved to a person in this namespace.
    principals: tuple[Principal, ...]


@dataclass(frozen=True, kw_only=True)
class TeamRecords:
    """Where the team records are read at run time (``teamRecords``)."""

    #: SSM path of the records (ends with ``/``).
    ssm_path: str
    #: Seconds between two reads of the records.
    refresh_seconds: int = DEFAULT_REFRESH_SECONDS


@dataclass(frozen=True, kw_only=True)
class WebhookConfig:
    """The parsed configuration file (see the module docstring for the fields)."""

    #: First UID of the allocation range (inclusive).
    uid_first: int
    #: Last UID of the allocation range (inclusive).
    uid_last: int
    #: Seconds a resolved person → UID stays cached.
    cache_ttl_seconds: int
    #: Usernames whose requests are allowed unchanged.
    exempt_usernames: frozenset[str]
    #: The team claim mounted for home directories.
    home_claim_name: str
    #: Team namespaces by name (with ``teamRecords``, the server replaces it by a live view of the records).
    namespaces: Mapping[str, NamespaceConfig]
    #: Groups allowed into any person's pod, each use logged (``breakGlassGroups``).
    break_glass_groups: frozenset[str] = frozenset()
    #: Where more team namespaces are read at run time (``None``: only ``namespaces``).
    team_records: TeamRecords | None = None
    #: ``strict``, ``auto`` or ``merge`` (``supplementalGroupsPolicy``).
    supplemental_groups_policy: str = "merge"


#: A required key that is absent (already reported by :meth:`_Problems.mapping`).
_MISSING: Any = object()
