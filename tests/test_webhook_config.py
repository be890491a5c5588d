"""The webhook's configuration parser: the documented format is accepted, every problem is named by field."""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto_server import moto_server, reset
from webhook_server import GIDS, webhook_config

from hyperpod_tenancy.k8s import workloads
from hyperpod_tenancy.webhook.config import (
    IdentityCenterPrincipal,
    StudioPrincipal,
    TeamRecords,
    WebhookConfigError,
    load_config,
    parse_config,
    parse_team_record,
)
from hyperpod_tenancy.webhook.team_records import TeamDirectory, TeamRecordsUnavailable


def test_the_documented_format_is_parsed() -> None:
    config = parse_config(webhook_config())
    assert config.uid_first == 200_000 and config.uid_last == 299_999 and config.cache_ttl_seconds == 300
    assert config.exempt_usernames == frozenset(workloads.controller_usernames())
    assert config.home_claim_name == "fsx"
    research = config.namespaces["hyperpod-ns-research"]
    assert (research.team, research.gid, research.local_queue) == (
        "research",
        GIDS["research"],
        "hyperpod-ns-research-localqueue",
    )
    sso, studio = research.principals
    assert isinstance(sso, IdentityCenterPrincipal) and sso.matches(
        "AWSReservedSSO_Research_0123456789abcdef"
    )
    assert not sso.matches("AWSReservedSSO_Research_Admins_0123456789abcdef")  # another permission set
    assert not sso.matches("AWSReservedSSO_Research_0123")
    assert isinstance(studio, StudioPrincipal)
    assert (studio.account, studio.role_name) == ("111122223333", "research-studio-execution")


def _problems(doc: Any) -> list[str]:
    with pytest.raises(WebhookConfigError) as err:
        parse_config(doc)
    return err.value.problems


def test_every_problem_is_reported_with_its_field_and_fix() -> None:
    doc = webhook_config()
    doc["version"] = 2
    doc["uidRange"] = {"first": 5000, "last": 4000}
    doc["typo"] = True
    research = doc["namespaces"]["hyperpod-ns-research"]
    research["gid"] = GIDS["inference"]
    research["principals"][0]["roleNamePrefix"] = "Research"
    research["principals"][1]["roleArn"] = "not-an-arn"
    del doc["home"]
    problems = _problems(doc)
    fields = [p.split(":", 1)[0] for p in problems]
    assert fields == [
        "typo",
        "home",
        "version",
        "uidRange",
        "namespaces.hyperpod-ns-research.principals[0].roleNamePrefix",
        "namespaces.hyperpod-ns-research.principals[1].roleArn",
    ], problems
    assert all("Fix:" in p for p in problems)


def test_duplicate_gids_and_gids_inside_the_uid_range_are_refused() -> None:
    doc = webhook_config()
    doc["namespaces"]["hyperpod-ns-research"]["gid"] = GIDS["inference"]
    assert any("is also the GID of" in p for p in _problems(doc))
    doc = webhook_config()
    doc["namespaces"]["hyperpod-ns-inference"]["gid"] = 200_500
    assert any("inside uidRange" in p for p in _problems(doc))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda d: d.update(cacheTtlSeconds=True), "cacheTtlSeconds"),
        (lambda d: d.update(exemptUsernames="job-controller"), "exemptUsernames"),
        (lambda d: d["home"].update(mountPath="/root"), "home.mountPath"),
        (lambda d: d.update(namespaces={}), "namespaces"),
        (
            lambda d: d["namespaces"]["hyperpod-ns-research"].update(principals=[]),
            "namespaces.hyperpod-ns-research.principals",
        ),
        (
            lambda d: d["namespaces"]["hyperpod-ns-research"]["principals"].append({"kind": "iam-user"}),
            "namespaces.hyperpod-ns-research.principals[2].kind",
        ),
        (
            lambda d: d["namespaces"]["hyperpod-ns-research"].pop("localQueue"),
            "namespaces.hyperpod-ns-research.localQueue",
        ),
    ],
)
def test_a_bad_field_is_named(change: Any, field: str) -> None:
    doc = copy.deepcopy(webhook_config())
    change(doc)
    assert [p.split(":", 1)[0] for p in _problems(doc)] == [field]


def test_load_config_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "teams.json"
    path.write_text("{")
    with pytest.raises(WebhookConfigError, match=r"in .*teams\.json:\n  - not JSON"):
        load_config(path)
    path.write_text(json.dumps(webhook_config()))
    assert load_config(path).namespaces.keys() == {"hyperpod-ns-research", "hyperpod-ns-inference"}
    with pytest.raises(WebhookConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.json")


def test_webhook_serve_refuses_a_bad_configuration_or_missing_certificates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperpod_tenancy.cli import main

    bad = tmp_path / "teams.json"
    bad.write_text(json.dumps({**webhook_config(), "version": 7}))
    args = [
        "webhook",
        "serve",
        "--port",
        "8443",
        "--tls-cert",
        str(tmp_path / "tls.crt"),
        "--tls-key",
        str(tmp_path / "tls.key"),
        "--table",
        "t",
    ]
    assert main([*args, "--teams", str(bad)]) == 1
    assert "--teams: 1 problem(s)" in capsys.readouterr().err
    bad.write_text(json.dumps(webhook_config()))
    assert main([*args, "--teams", str(bad)]) == 1
    assert "--tls-cert" in capsys.readouterr().err
    assert main(["webhook"]) == 2


# ---------------------------------------------------------------------------------------------- team records
def _records_config(**records: Any) -> dict[str, Any]:
    doc = webhook_config()
    del doc["namespaces"]
    doc["teamRecords"] = {"ssmPath": "/hyperpod-tenancy/shared-gpu/posix-identity/", **records}
    return doc


def _record(team: str, gid: int) -> dict[str, Any]:
    entry = copy.deepcopy(webhook_config()["namespaces"]["hyperpod-ns-research"])
    entry.update(team=team, gid=gid, localQueue=f"hyperpod-ns-{team}-localqueue")
    return {"namespace": f"hyperpod-ns-{team}", **entry}


def test_team_records_replace_the_namespaces_list() -> None:
    config = parse_config(_records_config())
    assert config.namespaces == {}
    assert config.team_records == TeamRecords(ssm_path="/hyperpod-tenancy/shared-gpu/posix-identity/")
    assert parse_config(_records_config(refreshSeconds=5)).team_records == TeamRecords(
        ssm_path="/hyperpod-tenancy/shared-gpu/posix-identity/", refresh_seconds=5
    )


@pytest.mark.parametrize(
    ("records", "field"),
    [
        ({"ssmPath": "hyperpod-tenancy/x"}, "teamRecords.ssmPath"),
        ({"refreshSeconds": 1}, "teamRecords.refreshSeconds"),
        ({"refreshSeconds": 1, "path": "/x/"}, "teamRecords.path"),
    ],
)
def test_a_bad_team_records_field_is_named(records: dict[str, Any], field: str) -> None:
    problems = _problems(_records_config(**records))
    assert field in [p.split(":", 1)[0] for p in problems], problems


def test_without_team_records_the_namespaces_are_required() -> None:
    doc = webhook_config()
    del doc["namespaces"]
    (problem,) = _problems(doc)
    assert problem.startswith("namespaces: is required.") and "teamRecords" in problem


def test_a_team_record_parses_like_a_namespaces_entry() -> None:
    ns = parse_team_record(_record("vision", 20009), uid_range=(200_000, 299_999), source="/p/vision")
    assert (ns.namespace, ns.team, ns.gid, ns.local_queue) == (
        "hyperpod-ns-vision",
        "vision",
        20009,
        "hyperpod-ns-vision-localqueue",
    )
    with pytest.raises(WebhookConfigError, match=r"in /p/vision:\n  - gid: 200500 is inside uidRange"):
        parse_team_record(_record("vision", 200_500), uid_range=(200_000, 299_999), source="/p/vision")
    bad = _record("vision", 20009)
    del bad["namespace"]
    with pytest.raises(WebhookConfigError, match="namespace: is required"):
        parse_team_record(bad, uid_range=(200_000, 299_999), source="/p/vision")


@pytest.fixture
def ssm() -> Iterator[Any]:
    with moto_server() as url:
        reset(url)
        yield boto3.client("ssm")


def test_the_directory_serves_the_records_under_its_path(ssm: Any) -> None:
    path = "/hyperpod-tenancy/shared-gpu/posix-identity/"
    # more than one page of GetParametersByPath (10 a page), one record elsewhere that is not read
    for i in range(23):
        ssm.put_parameter(
            Name=f"{path}team-{i:03d}", Value=json.dumps(_record(f"team-{i:03d}", 30000 + i)), Type="String"
        )
    ssm.put_parameter(
        Name="/hyperpod-tenancy/other/posix-identity/x", Value=json.dumps(_record("x", 40000)), Type="String"
    )
    directory = TeamDirectory({}, records=TeamRecords(ssm_path=path), uid_range=(200_000, 299_999), ssm=ssm)
    assert not directory.loaded and len(directory) == 0
    assert directory.refresh() == 23
    assert directory.loaded and directory["hyperpod-ns-team-022"].gid == 30022
    assert "hyperpod-ns-x" not in directory
    # a team whose stack is deleted is no longer served after the next refresh
    ssm.delete_parameter(Name=f"{path}team-005")
    directory.refresh()
    assert "hyperpod-ns-team-005" not in directory and len(directory) == 22


def test_a_bad_or_conflicting_record_is_skipped_and_the_others_served(ssm: Any) -> None:
    path = "/hyperpod-tenancy/shared-gpu/posix-identity/"
    static = parse_config(webhook_config()).namespaces
    ssm.put_parameter(Name=f"{path}good", Value=json.dumps(_record("good", 30001)), Type="String")
    ssm.put_parameter(Name=f"{path}broken", Value="{not json", Type="String")
    # the GID of research, which the configuration file lists: refused, research keeps it
    ssm.put_parameter(
        Name=f"{path}thief", Value=json.dumps(_record("thief", GIDS["research"])), Type="String"
    )
    # a record of a listed namespace does not override the file
    ssm.put_parameter(Name=f"{path}research", Value=json.dumps(_record("research", 30002)), Type="String")
    log = logging.getLogger("test.team_records")
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    log.addHandler(handler)
    directory = TeamDirectory(
        static, records=TeamRecords(ssm_path=path), uid_range=(200_000, 299_999), ssm=ssm, log=log
    )
    directory.refresh()
    log.removeHandler(handler)
    assert set(directory) == {*static, "hyperpod-ns-good"}
    assert directory["hyperpod-ns-research"].gid == GIDS["research"]
    skipped = [r.msg["parameter"] for r in records if isinstance(r.msg, dict)]
    assert sorted(skipped) == [f"{path}broken", f"{path}thief"]


def test_a_failed_refresh_keeps_the_namespaces_already_read(ssm: Any) -> None:
    path = "/hyperpod-tenancy/shared-gpu/posix-identity/"
    ssm.put_parameter(Name=f"{path}good", Value=json.dumps(_record("good", 30001)), Type="String")
    directory = TeamDirectory({}, records=TeamRecords(ssm_path=path), uid_range=(200_000, 299_999), ssm=ssm)
    directory.refresh()
    unreachable = boto3.client("ssm", endpoint_url="http://127.0.0.1:9")
    directory._ssm = unreachable
    with pytest.raises(TeamRecordsUnavailable, match="GetParametersByPath"):
        directory.refresh()
    assert set(directory) == {"hyperpod-ns-good"}
