"""Reading the configuration file and each team record."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hyperpod_tenancy.k8s.posix_identity import CONFIG_VERSION
from hyperpod_tenancy.records.posix_identity import PosixTeamRecord, RecordVersionError
from hyperpod_tenancy.webhook.config.fields import (
    _break_glass,
    _exempt,
    _home_claim,
    _namespaces,
    _Problems,
    _team_records,
    _uid_range,
)
from hyperpod_tenancy.webhook.config.types import (
    _MISSING,
    DEFAULT_CACHE_TTL_SECONDS,
    SUPPLEMENTAL_GROUPS_POLICIES,
    NamespaceConfig,
    WebhookConfig,
    WebhookConfigError,
)

__all__ = ["load_config", "parse_config", "parse_team_record"]


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
