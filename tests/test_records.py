"""Each stored record is one class: the writer's output is what the reader reads, and another version is refused.

The POSIX identity team record is written by each team stack (the SSM parameter in the synthesized template) and
read by the webhook's parser; the chargeback team record by each team stack and the monthly job. A record of a
version this release does not read is refused with the fix, naming where it was read.
"""

from __future__ import annotations

import json

import pytest
from synth import Synth, resources_of

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.records import PosixTeamRecord, RecordVersionError
from hyperpod_tenancy.webhook.config import WebhookConfigError, parse_team_record

UIDS = (200_000, 299_999)


def _stored_posix_records(synth: Synth) -> dict[str, str]:
    """The POSIX identity records the team stacks write, by parameter name (from the synthesized templates)."""
    found: dict[str, str] = {}
    for team in synth.platform.hosted_teams:
        for resource in resources_of(synth.team(team.name), "AWS::SSM::Parameter").values():
            props = resource["Properties"]
            name = props.get("Name")
            if isinstance(name, str) and "/posix-identity/" in name:
                found[name] = props["Value"]
    return found


def test_the_webhook_reads_every_record_the_team_stacks_write(reference: Synth) -> None:
    stored = _stored_posix_records(reference)
    assert len(stored) == len(reference.platform.hosted_teams)
    for name, value in stored.items():
        record = PosixTeamRecord.from_json(value, source=name)
        assert record.to_json() == value, "the writer is the record class"
        team = reference.platform.team(record.team)
        assert record == posix_identity.team_record(reference.platform, team.name)
        ns = parse_team_record(json.loads(value), uid_range=UIDS, source=name)
        assert (ns.namespace, ns.team, ns.gid, ns.local_queue) == (
            names.namespace(team.name),
            team.name,
            team.identity.posix_gid,
            names.local_queue(team.name),
        )


def test_a_record_without_a_version_is_read_as_the_first_one(reference: Synth) -> None:
    """A webhook upgraded before the team stacks still reads the records they wrote without a version."""
    team = reference.platform.hosted_teams[0]
    document = posix_identity.team_record(reference.platform, team.name).to_document()
    del document["version"]
    assert parse_team_record(document, uid_range=UIDS, source="old").team == team.name
    assert PosixTeamRecord.from_json(json.dumps(document)).team == team.name


@pytest.mark.parametrize("version", [0, 2, "1", True])
def test_a_record_of_another_version_is_refused_with_the_fix(reference: Synth, version: object) -> None:
    team = reference.platform.hosted_teams[0]
    document = {**posix_identity.team_record(reference.platform, team.name).to_document(), "version": version}
    with pytest.raises(WebhookConfigError) as refused:
        parse_team_record(document, uid_range=UIDS, source="/hyperpod-tenancy/c/posix-identity/x")
    message = str(refused.value)
    assert "/hyperpod-tenancy/c/posix-identity/x" in message and f"version {version!r}" in message
    assert "same library version" in message
    with pytest.raises(RecordVersionError, match="same library version"):
        PosixTeamRecord.from_json(json.dumps(document))


def test_the_chargeback_records_carry_their_version_and_refuse_another(reference: Synth) -> None:
    from hyperpod_tenancy.chargeback import model
    from hyperpod_tenancy.policy.chargeback import chargeback_config

    config = chargeback_config(reference.platform)
    team = config.teams[0]
    written = json.loads(model.team_config_to_json(team))
    assert written["version"] == model.RECORD_VERSION
    del written["version"]
    assert model.team_config_from_json(json.dumps(written)) == team, (
        "a record written before versions is read"
    )
    assert model.config_from_json(model.config_to_json(config)) == config
    for text, what in (
        (json.dumps({**written, "version": 2}), "chargeback team record"),
        (json.dumps({**json.loads(model.config_to_json(config)), "version": 2}), "chargeback configuration"),
    ):
        with pytest.raises(ValueError, match=f"{what} of version 2; .*same library version"):
            (model.team_config_from_json if "team" in what else model.config_from_json)(text)
