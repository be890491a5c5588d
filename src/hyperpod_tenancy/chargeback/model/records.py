"""The configuration and team records as stored, with their version, and the month's span."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
from collections.abc import Iterable
from decimal import Decimal
from fractions import Fraction
from typing import Any

from hyperpod_tenancy.chargeback.model.config import (
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    SharedCostRule,
    TeamConfig,
    UnknownTeams,
)

__all__ = [
    "RECORD_VERSION",
    "config_from_json",
    "config_to_json",
    "merge_teams",
    "month_span",
    "team_config_from_json",
    "team_config_to_json",
    "with_teams",
]

#: Version of the stored chargeback records (:func:`config_to_json`, :func:`team_config_to_json`). A record
#: without a version was written before records carried one, in this layout, and is read as this version.
RECORD_VERSION = 1


def _check_version(document: Any, what: str) -> None:
    """Refuse a record of another version than :data:`RECORD_VERSION`, with the fix."""
    version = document.get("version", RECORD_VERSION) if isinstance(document, dict) else RECORD_VERSION
    if isinstance(version, bool) or version != RECORD_VERSION:
        raise ValueError(
            f"{what} of version {version!r}; this release reads version {RECORD_VERSION}. Fix: deploy the team "
            "stacks and the chargeback stack with the same library version."
        )


_MONTH = re.compile(r"(\d{4})-(0[1-9]|1[0-2])")


def month_span(month: str) -> tuple[dt.datetime, dt.datetime] | None:
    """Return the first instant of ``month`` (``YYYY-MM``) and of the month after it (UTC); ``None`` if not a month."""
    match = _MONTH.fullmatch(month)
    if match is None:
        return None
    year, number = int(match.group(1)), int(match.group(2))
    return dt.datetime(year, number, 1, tzinfo=dt.UTC), dt.datetime(
        year + number // 12, number % 12 + 1, 1, tzinfo=dt.UTC
    )


def config_to_json(config: ChargebackConfig) -> str:
    """Serialize ``config`` as canonical JSON (sorted keys, money as strings): the monthly Lambda's copy of it.

    :func:`config_from_json` reads it back to an equal :class:`ChargebackConfig`.
    """
    document = {
        "version": RECORD_VERSION,
        "cluster": config.cluster,
        "terms": [
            {
                "effectiveFrom": term.effective_from.isoformat(),
                "rule": term.rule.value,
                "idleOwner": term.idle_owner,
                "sharedCosts": term.shared_costs.value,
                "signedOffBy": term.signed_off_by,
                "midQuarterReason": term.mid_quarter_reason,
            }
            for term in config.terms
        ],
        "teams": [_team_document(team) for team in config.teams],
        "gpusPerInstance": dict(sorted(config.gpus_per_instance.items())),
        "prices": {k: str(v) for k, v in sorted(config.prices.items())},
        "maxCheckpointMinutes": dict(sorted(config.max_checkpoint_minutes.items())),
        "tolerance": str(config.tolerance),
        "unknownTeams": config.unknown_teams.value,
        **(
            {"partitionedSlices": dict(sorted(config.partitioned_slices.items()))}
            if config.partitioned_slices
            else {}
        ),
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def team_config_to_json(team: TeamConfig) -> str:
    """Serialize one team's record (name, cost center, quotas) as canonical JSON: what its team stack stores.

    The monthly job reads the records of every team at run time (so the shared stack lists no team);
    :func:`team_config_from_json` reads one back.
    """
    return json.dumps({"version": RECORD_VERSION, **_team_document(team)}, sort_keys=True)


def _team_document(team: TeamConfig) -> dict[str, Any]:
    return {
        "name": team.name,
        "costCenter": team.cost_center,
        "quotas": {itype: _count_json(n) for itype, n in sorted(team.quotas.items())},
        **({} if team.borrows else {"borrows": False}),
    }


def _count_json(count: int | Fraction) -> int | str:
    """Write a whole number of instances as a number; a fraction of one (accelerators of a type) as ``"1/2"``."""
    return count if isinstance(count, int) else f"{count.numerator}/{count.denominator}"


def _count_of(value: object) -> int | Fraction:
    """Read what :func:`_count_json` wrote; anything else (a float, a negative count) raises ValueError."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]+/[1-9][0-9]*", value):
        count = Fraction(value)
        return count.numerator if count.denominator == 1 else count
    raise ValueError(
        f"team record: a quota must be a whole number of instances or a fraction 'n/d', got {value!r}"
    )


def team_config_from_json(text: str) -> TeamConfig:
    """Read a team record written by :func:`team_config_to_json`.

    Raises:
        ValueError: the text is not JSON, a key is missing, a quota is neither a whole number of instances nor a
            fraction ``"n/d"``, or the record is of another version (:data:`RECORD_VERSION`).

    """
    document = json.loads(text)
    _check_version(document, "chargeback team record")
    try:
        written = document["quotas"]
        if not isinstance(written, dict):
            raise ValueError(f"team record: quotas must map instance types to instances, got {written!r}")
        return TeamConfig(
            name=str(document["name"]),
            cost_center=str(document["costCenter"]),
            quotas={str(itype): _count_of(n) for itype, n in written.items()},
            borrows=document.get("borrows", True) is not False,
        )
    except (KeyError, TypeError) as missing:
        raise ValueError(f"team record: missing key {missing}; write it with team_config_to_json") from None


def merge_teams(teams: Iterable[TeamConfig]) -> tuple[TeamConfig, ...]:
    """``teams`` sorted by name, one per name: a later record of a name replaces an earlier one."""
    by_name = {team.name: team for team in teams}
    return tuple(by_name[name] for name in sorted(by_name))


def with_teams(config: ChargebackConfig, teams: Iterable[TeamConfig]) -> ChargebackConfig:
    """``config`` billing ``teams`` (:func:`merge_teams`) instead of its own."""
    return dataclasses.replace(config, teams=merge_teams(teams))


def config_from_json(text: str) -> ChargebackConfig:
    """Read a :class:`ChargebackConfig` written by :func:`config_to_json`.

    Raises:
        ValueError: a required key is missing, a value has the wrong form (the message names the key), or the
            configuration is of another version (:data:`RECORD_VERSION`).

    """
    document: dict[str, Any] = json.loads(text)
    _check_version(document, "chargeback configuration")
    try:
        return ChargebackConfig(
            cluster=document["cluster"],
            terms=tuple(
                BillingTerm(
                    effective_from=dt.date.fromisoformat(term["effectiveFrom"]),
                    rule=BillingRule(term["rule"]),
                    idle_owner=term["idleOwner"],
                    shared_costs=SharedCostRule(term.get("sharedCosts", SharedCostRule.IDLE_OWNER.value)),
                    signed_off_by=str(term.get("signedOffBy", "")),
                    mid_quarter_reason=str(term.get("midQuarterReason", "")),
                )
                for term in document["terms"]
            ),
            teams=tuple(team_config_from_json(json.dumps(team)) for team in document["teams"]),
            gpus_per_instance={k: int(v) for k, v in document["gpusPerInstance"].items()},
            prices={k: Decimal(v) for k, v in document.get("prices", {}).items()},
            max_checkpoint_minutes={k: int(v) for k, v in document.get("maxCheckpointMinutes", {}).items()},
            tolerance=Decimal(document.get("tolerance", "0.005")),
            unknown_teams=UnknownTeams(document.get("unknownTeams", UnknownTeams.FAIL.value)),
            partitioned_slices={k: int(v) for k, v in document.get("partitionedSlices", {}).items()},
        )
    except KeyError as missing:
        raise ValueError(
            f"chargeback configuration: missing key {missing}; write it with config_to_json"
        ) from None
