"""The webhook's configuration parser: the documented format is accepted, every problem is named by field."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from webhook_server import GIDS, webhook_config

from hyperpod_tenancy.k8s import workloads
from hyperpod_tenancy.webhook.config import (
    IdentityCenterPrincipal,
    StudioPrincipal,
    WebhookConfigError,
    load_config,
    parse_config,
)


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
