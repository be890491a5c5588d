"""Parsing each field of the configuration, collecting every problem with its field and fix."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs
from hyperpod_tenancy.k8s.posix_identity import SSO_ROLE_PREFIX
from hyperpod_tenancy.webhook.config.types import (
    _DOMAIN_ID,
    _MISSING,
    _ROLE_ARN,
    _SSM_PATH,
    DEFAULT_REFRESH_SECONDS,
    ID_MAX,
    ID_MIN,
    IdentityCenterPrincipal,
    NamespaceConfig,
    Principal,
    StudioPrincipal,
    TeamRecords,
)


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
