"""The webhook's configuration file (``--teams FILE``): the team namespaces, their GIDs and who may submit there.

The construct renders it into a ConfigMap (``hyperpod_tenancy.k8s.posix_identity``); the server reads it once at
start. JSON, version 1::

    {
      "version": 1,
      "uidRange": {"first": 200000, "last": 299999},
      "cacheTtlSeconds": 300,
      "exemptUsernames": ["system:serviceaccount:kube-system:job-controller", ...],
      "home": {"mountPath": "/home/hyperpod", "claimName": "fsx"},
      "namespaces": {
        "hyperpod-ns-research": {
          "team": "research",
          "gid": 20001,
          "localQueue": "hyperpod-ns-research-localqueue",
          "principals": [
            {"kind": "identity-center", "roleNamePrefix": "AWSReservedSSO_Research_"},
            {"kind": "studio", "roleArn": "arn:aws:iam::111122223333:role/research-studio",
             "domainId": "d-xxxxxxxx"}
          ]
        }
      }
    }

Fields:

``version`` (required, ``1``)
    The format version; another value is refused so an old server never misreads a newer file.
``uidRange`` (required)
    ``first``..``last`` (inclusive) the UIDs are allocated from, ``1000 <= first <= last <= 2147483646``.
    Keep it away from the GIDs and from the UIDs images ship (0-999, 65534).
``cacheTtlSeconds`` (optional, default 300)
    How long a resolved person → UID stays in memory (0 disables the cache). A UID never changes once
    allocated, so the TTL only bounds how long a UID removed from the table by hand keeps being served.
``exemptUsernames`` (required)
    ``request.userInfo.username`` of the controllers whose requests are allowed unchanged:
    ``hyperpod_tenancy.k8s.workloads.controller_usernames()``. Exemption is by who sends a request, never by
    what the object says.
``home`` (required)
    ``claimName``: the team claim in every team namespace (its root is ``/fsx/<team>``); ``mountPath``
    (optional): must be ``hyperpod_tenancy.k8s.fsx_dirs.HOME_MOUNT_PATH`` if given (the one documented path).
``breakGlassGroups`` (optional, default none)
    Kubernetes groups whose members may exec, attach, port-forward, proxy or add an ephemeral container in any
    pod of a team namespace (the platform's on-call); every use is logged and recorded as an Event
    (:mod:`hyperpod_tenancy.webhook.connect`). ``system:`` groups are refused (they hold everyone).
``namespaces`` (required)
    Each team namespace: ``team`` (name), ``gid`` (the team's POSIX GID, ``1000..2147483646``, unique),
    ``localQueue`` (the LocalQueue a job without ``kueue.x-k8s.io/queue-name`` is sent to) and
    ``principals``: whose requests are resolved to a person there:

    * ``{"kind": "identity-center", "roleNamePrefix": "AWSReservedSSO_<PermissionSet>_"}``: the role Identity
      Center provisions for the team's permission set (``AWSReservedSSO_<PermissionSet>_<16 hex>``); the session
      name is the person's Identity Center user name, the person key ``sso:<user name>``.
    * ``{"kind": "studio", "roleArn": ..., "domainId": ...}``: the team's SageMaker Studio execution role. Its
      sessions do not name the person (see :mod:`hyperpod_tenancy.webhook.identity`), so requests from it are
      denied with an explanation; listing it makes the denial specific instead of "unknown role".

``supplementalGroupsPolicy`` (optional, default ``merge``)
    ``strict``: every pod template the webhook stamps or hardens gets ``securityContext.supplementalGroupsPolicy:
    Strict``; ``auto``: the same while every node reports ``status.features.supplementalGroupsPolicy: true``
    (:mod:`hyperpod_tenancy.webhook.node_features`), nothing otherwise; ``merge``: never.

``teamRecords`` (optional)
    ``{"ssmPath": "/hyperpod-tenancy/<cluster>/posix-identity/", "refreshSeconds": 60}``: more team namespaces,
    read at run time from the SSM parameters under ``ssmPath`` (``GetParametersByPath``, re-read every
    ``refreshSeconds``, default 60, 5..3600). Each team stack writes one such parameter, a *team record*: the
    fields of one ``namespaces`` entry plus ``namespace`` (:func:`parse_team_record`). So the configuration of
    the shared cluster lists no team, and a team added later is served within ``refreshSeconds`` of its stack's
    deployment. With ``teamRecords``, ``namespaces`` may be left out.

Unknown keys are refused (a typo must not silently drop a rule). Every problem is reported at once, each
naming its field (``namespaces.hyperpod-ns-research.gid``) and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import fsx_dirs
from hyperpod_tenancy.records.posix_identity import PosixTeamRecord, RecordVersionError

__all__ = [
    "CONFIG_VERSION",
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
    "load_config",
    "parse_config",
    "parse_team_record",
]

#: The only format version this server reads.
CONFIG_VERSION = 1
#: Default of ``cacheTtlSeconds``.
DEFAULT_CACHE_TTL_SECONDS = 300
#: Default of ``teamRecords.refreshSeconds``.
DEFAULT_REFRESH_SECONDS = 60
#: Lowest UID/GID the platform hands out (0-999 are system accounts in most images).
ID_MIN = 1000
#: Highest UID/GID (2^31 - 2: some tools treat 2^31 - 1 and above as invalid or "nobody").
ID_MAX = 2**31 - 2
#: Prefix of every role Identity Center provisions for a permission set.
SSO_ROLE_PREFIX = "AWSReservedSSO_"
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


class _Problems:
    """Collects ``field: message`` problems while parsing (a :data:`_MISSING` value is not reported twice)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, field: str, message: str, fix: str) -> None:
        self.items.append(f"{field}: {message} Fix: {fix}")

    def mapping(
        self, value: object, field: str, keys: set[str], required: set[str]
    ) -> Mapping[str, Any] | None:
        if not isinstance(value, Mapping):
            self.add(field, f"must be an object, got {type(value).__name__}.", "write a JSON object.")
            return None
        for key in sorted(set(value) - keys):
            self.add(
                f"{field}.{key}" if field else key, "unknown key.", f"use only {', '.join(sorted(keys))}."
            )
        for key in sorted(required - set(value)):
            self.add(f"{field}.{key}" if field else key, "is required.", "add it.")
        return value

    def integer(self, value: object, field: str, low: int, high: int) -> int | None:
        if value is _MISSING:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(field, f"must be an integer, got {value!r}.", f"write a number from {low} to {high}.")
            return None
        if not low <= value <= high:
            self.add(field, f"{value} is out of range.", f"use a value from {low} to {high}.")
            return None
        return value

    def string(
        self, value: object, field: str, pattern: re.Pattern[str] | None = None, hint: str = ""
    ) -> str | None:
        if value is _MISSING:
            return None
        if not isinstance(value, str) or not value:
            self.add(field, f"must be a non-empty string, got {value!r}.", hint or "write a string.")
            return None
        if pattern is not None and not pattern.match(value):
            self.add(field, f"{value!r} is not valid.", hint)
            return None
        return value


def _identity_center(p: _Problems, data: Mapping[str, Any], field: str) -> Principal | None:
    prefix = p.string(data.get("roleNamePrefix", _MISSING), f"{field}.roleNamePrefix")
    if prefix is None:
        return None
    if not (
        prefix.startswith(SSO_ROLE_PREFIX) and prefix.endswith("_") and len(prefix) > len(SSO_ROLE_PREFIX) + 1
    ):
        p.add(
            f"{field}.roleNamePrefix",
            f"{prefix!r} is not an Identity Center role prefix.",
            "write AWSReservedSSO_<PermissionSetName>_ (with both underscores).",
        )
        return None
    return IdentityCenterPrincipal(role_name_prefix=prefix)


def _studio(p: _Problems, data: Mapping[str, Any], field: str) -> Principal | None:
    arn = p.string(
        data.get("roleArn", _MISSING),
        f"{field}.roleArn",
        _ROLE_ARN,
        "write arn:aws:iam::<account>:role/<name>.",
    )
    domain = p.string(
        data.get("domainId", _MISSING),
        f"{field}.domainId",
        _DOMAIN_ID,
        "write the domain ID, d-xxxxxxxxxxxx.",
    )
    match = _ROLE_ARN.match(arn or "")
    if match is None or domain is None:
        return None
    return StudioPrincipal(role_arn=match[0], domain_id=domain, account=match[1], role_name=match[2])


#: Principal kinds: their keys and parsers.
_PRINCIPAL_KINDS = {
    "identity-center": ({"kind", "roleNamePrefix"}, _identity_center),
    "studio": ({"kind", "roleArn", "domainId"}, _studio),
}


def _principal(p: _Problems, raw: object, field: str) -> Principal | None:
    kind = raw.get("kind") if isinstance(raw, Mapping) else None
    if not isinstance(kind, str) or kind not in _PRINCIPAL_KINDS:
        p.add(f"{field}.kind", f"{kind!r} is not a principal kind.", "use 'identity-center' or 'studio'.")
        return None
    keys, parse = _PRINCIPAL_KINDS[kind]
    data = p.mapping(raw, field, keys, keys)
    return parse(p, data, field) if data is not None else None


def _namespace(p: _Problems, name: str, raw: object) -> NamespaceConfig | None:
    field = f"namespaces.{name}"
    keys = {"team", "gid", "localQueue", "principals"}
    data = p.mapping(raw, field, keys, keys)
    if data is None:
        return None
    team = p.string(data.get("team", _MISSING), f"{field}.team")
    gid = p.integer(data.get("gid", _MISSING), f"{field}.gid", ID_MIN, ID_MAX)
    queue = p.string(data.get("localQueue", _MISSING), f"{field}.localQueue")
    raw_principals = data.get("principals", _MISSING)
    principals: list[Principal] = []
    if raw_principals is _MISSING:
        raw_principals = []
    elif not isinstance(raw_principals, list) or not raw_principals:
        p.add(
            f"{field}.principals",
            "must be a non-empty list.",
            "list the team's identity-center (and studio) principals.",
        )
        raw_principals = []
    for i, item in enumerate(raw_principals):
        principal = _principal(p, item, f"{field}.principals[{i}]")
        if principal is not None:
            principals.append(principal)
    if (
        team is None
        or gid is None
        or queue is None
        or not principals
        or len(principals) != len(raw_principals)
    ):
        return None
    return NamespaceConfig(
        namespace=name, team=team, gid=gid, local_queue=queue, principals=tuple(principals)
    )


def _uid_range(p: _Problems, raw: object) -> tuple[int, int] | None:
    if raw is _MISSING:
        return None
    data = p.mapping(raw, "uidRange", {"first", "last"}, {"first", "last"})
    if data is None:
        return None
    first = p.integer(data.get("first", _MISSING), "uidRange.first", ID_MIN, ID_MAX)
    last = p.integer(data.get("last", _MISSING), "uidRange.last", ID_MIN, ID_MAX)
    if first is None or last is None:
        return None
    if first > last:
        p.add("uidRange", f"first {first} is above last {last}.", "make first <= last.")
        return None
    return first, last


def _home_claim(p: _Problems, raw: object) -> str | None:
    if raw is _MISSING:
        return None
    data = p.mapping(raw, "home", {"mountPath", "claimName"}, {"claimName"})
    if data is None:
        return None
    mount = data.get("mountPath", fsx_dirs.HOME_MOUNT_PATH)
    if mount != fsx_dirs.HOME_MOUNT_PATH:
        p.add(
            "home.mountPath",
            f"{mount!r} is not the platform's home path.",
            f"write {fsx_dirs.HOME_MOUNT_PATH!r} or leave it out.",
        )
    return p.string(data.get("claimName", _MISSING), "home.claimName")


def _exempt(p: _Problems, raw: object) -> frozenset[str]:
    if raw is _MISSING:
        return frozenset()
    if not isinstance(raw, list) or not all(isinstance(u, str) and u for u in raw):
        p.add(
            "exemptUsernames",
            "must be a list of non-empty usernames.",
            "render hyperpod_tenancy.k8s.workloads.controller_usernames().",
        )
        return frozenset()
    return frozenset(raw)


def _break_glass(p: _Problems, raw: object) -> frozenset[str]:
    if raw is _MISSING:
        return frozenset()
    if not isinstance(raw, list) or not all(isinstance(g, str) and g for g in raw):
        p.add("breakGlassGroups", "must be a list of non-empty group names.", "list the on-call group(s).")
        return frozenset()
    for group in raw:
        if group.startswith("system:"):
            p.add(
                "breakGlassGroups",
                f"{group!r} is a group Kubernetes assigns to everyone of a kind.",
                "name a group only the on-call people are mapped to.",
            )
    return frozenset(raw)


def _team_records(p: _Problems, raw: object) -> TeamRecords | None:
    if raw is _MISSING:
        return None
    data = p.mapping(raw, "teamRecords", {"ssmPath", "refreshSeconds"}, {"ssmPath"})
    if data is None:
        return None
    path = p.string(
        data.get("ssmPath", _MISSING),
        "teamRecords.ssmPath",
        _SSM_PATH,
        "write an SSM path that starts and ends with /, e.g. /hyperpod-tenancy/<cluster>/posix-identity/.",
    )
    refresh = p.integer(
        data.get("refreshSeconds", DEFAULT_REFRESH_SECONDS), "teamRecords.refreshSeconds", 5, 3600
    )
    if path is None or refresh is None:
        return None
    return TeamRecords(ssm_path=path, refresh_seconds=refresh)


def _namespaces(
    p: _Problems, raw: object, uids: tuple[int, int] | None, *, optional: bool = False
) -> dict[str, NamespaceConfig]:
    if raw is _MISSING:
        if not optional:
            p.add("namespaces", "is required.", "add it (or read the teams at run time with teamRecords).")
        return {}
    if not isinstance(raw, Mapping) or (not raw and not optional):
        p.add(
            "namespaces",
            "must be a non-empty object of team namespaces.",
            "add one entry per team namespace.",
        )
        return {}
    namespaces: dict[str, NamespaceConfig] = {}
    for name, item in raw.items():
        ns = _namespace(p, str(name), item)
        if ns is not None:
            namespaces[ns.namespace] = ns
    by_gid: dict[int, str] = {}
    for ns in namespaces.values():
        if ns.gid in by_gid:
            p.add(
                f"namespaces.{ns.namespace}.gid",
                f"{ns.gid} is also the GID of {by_gid[ns.gid]}.",
                "give every team its own GID.",
            )
        by_gid.setdefault(ns.gid, ns.namespace)
        if uids is not None and uids[0] <= ns.gid <= uids[1]:
            p.add(
                f"namespaces.{ns.namespace}.gid",
                f"{ns.gid} is inside uidRange {uids[0]}..{uids[1]}.",
                "keep team GIDs outside the UID range, so a UID is never mistaken for a team.",
            )
    return namespaces


def parse_config(data: Mapping[str, Any]) -> WebhookConfig:
    """Parse and check the configuration document.

    Args:
        data: the decoded JSON document.

    Returns:
        The configuration.

    Raises:
        WebhookConfigError: listing every problem, each naming its field and the fix.

    """
    p = _Problems()
    keys = {
        "version",
        "uidRange",
        "cacheTtlSeconds",
        "exemptUsernames",
        "home",
        "namespaces",
        "teamRecords",
        "breakGlassGroups",
        "supplementalGroupsPolicy",
    }
    optional = {
        "cacheTtlSeconds",
        "namespaces",
        "teamRecords",
        "breakGlassGroups",
        "supplementalGroupsPolicy",
    }
    root = p.mapping(data, "", keys, keys - optional)
    if root is None:
        raise WebhookConfigError(p.items)
    version = root.get("version", _MISSING)
    if version is not _MISSING and (isinstance(version, bool) or version != CONFIG_VERSION):
        p.add(
            "version",
            f"{version!r} is not supported.",
            f"write {CONFIG_VERSION} (this server reads version {CONFIG_VERSION}).",
        )
    uids = _uid_range(p, root.get("uidRange", _MISSING))
    ttl = p.integer(root.get("cacheTtlSeconds", DEFAULT_CACHE_TTL_SECONDS), "cacheTtlSeconds", 0, 86400)
    exempt = _exempt(p, root.get("exemptUsernames", _MISSING))
    claim = _home_claim(p, root.get("home", _MISSING))
    records = _team_records(p, root.get("teamRecords", _MISSING))
    namespaces = _namespaces(p, root.get("namespaces", _MISSING), uids, optional="teamRecords" in root)
    break_glass = _break_glass(p, root.get("breakGlassGroups", _MISSING))
    groups_policy = root.get("supplementalGroupsPolicy", "merge")
    if groups_policy not in SUPPLEMENTAL_GROUPS_POLICIES:
        p.add(
            "supplementalGroupsPolicy",
            f"{groups_policy!r} is not one of {', '.join(SUPPLEMENTAL_GROUPS_POLICIES)}.",
            "render it from posixIdentity.supplementalGroupsPolicy.",
        )
    if p.items or uids is None or ttl is None or claim is None:
        raise WebhookConfigError(p.items or ["the configuration is incomplete."])
    return WebhookConfig(
        uid_first=uids[0],
        uid_last=uids[1],
        cache_ttl_seconds=ttl,
        exempt_usernames=exempt,
        home_claim_name=claim,
        namespaces=namespaces,
        break_glass_groups=break_glass,
        team_records=records,
        supplemental_groups_policy=str(groups_policy),
    )


def parse_team_record(data: object, *, uid_range: tuple[int, int], source: str) -> NamespaceConfig:
    """Parse one team record (``teamRecords``, :class:`~hyperpod_tenancy.records.PosixTeamRecord`).

    The record's version is checked by the record class; its fields as a ``namespaces`` entry is, plus its
    ``namespace``.

    Args:
        data: the decoded JSON document.
        uid_range: the configuration's ``uidRange`` (a team GID inside it is refused).
        source: where the record was read (named in the error).

    Raises:
        WebhookConfigError: listing every problem of the record.

    """
    p = _Problems()
    try:
        fields = PosixTeamRecord.document_of(data, source=source)
    except RecordVersionError as exc:
        raise WebhookConfigError([str(exc).removeprefix(f"{source}: ")], source) from None
    record = p.mapping(
        fields if isinstance(data, Mapping) else data,
        "",
        {"namespace", "team", "gid", "localQueue", "principals"},
        {"namespace", "gid"},
    )
    if record is None:
        raise WebhookConfigError(p.items, source)
    name = p.string(record.get("namespace", _MISSING), "namespace")
    if name is None:
        raise WebhookConfigError(p.items, source)
    found = _namespaces(p, {name: {k: v for k, v in record.items() if k != "namespace"}}, uid_range)
    if p.items or name not in found:
        # the record's own fields, not those of a namespaces entry
        problems = [item.removeprefix(f"namespaces.{name}.") for item in p.items]
        raise WebhookConfigError(problems or ["the record is incomplete."], source)
    return found[name]


def load_config(path: Path) -> WebhookConfig:
    """Read and parse the configuration file at ``path``.

    Raises:
        WebhookConfigError: the file cannot be read, is not JSON, or is invalid.

    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise WebhookConfigError([f"cannot read the file: {exc.strerror or exc}."], str(path)) from exc
    except json.JSONDecodeError as exc:
        raise WebhookConfigError([f"not JSON: {exc}."], str(path)) from exc
    try:
        return parse_config(data)
    except WebhookConfigError as exc:
        raise WebhookConfigError(exc.problems, str(path)) from None
