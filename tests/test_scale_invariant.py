"""The scale invariant: adding a team adds one stack and changes no other; removing one removes only its stack.

Synthesized at two sizes (3 -> 4 and 12 -> 13 generated teams beside ``research``), on both fairness backends,
with the reference platform's ``chargeback:`` section. Version reporting is off, so the template files compared
are the bytes CloudFormation receives (the ``CDKMetadata`` resource aside). A removal takes a team out of the
middle (not the last one), so no construct ID or ordering hides behind "the last one went away".
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest
from chargeback_data import generate_month
from scale import Assembly, synthesize_assembly, team_name
from scale import platform as scale_platform
from synth import manifests_in, resources_of
from webhook_server import (
    WebhookProcess,
    apply_patch,
    certificates,
    create_table,
    review,
    serial_moto_server,
    sso_user,
    workload,
)

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.cli import main
from hyperpod_tenancy.k8s import posix_identity, workloads
from hyperpod_tenancy.policy import FairnessBackend, names

BACKENDS = [FairnessBackend.TASK_GOVERNANCE, FairnessBackend.KUEUE]
SIZES = [3, 12]


class Case:
    """``before`` (N teams), ``after`` (N + 1) and ``removed`` (N + 1 without a team from the middle)."""

    def __init__(self, backend: FairnessBackend, size: int, tmp: Path) -> None:
        self.size = size
        self.added = team_name(size)
        self.gone = team_name(size // 2)
        everyone = list(range(size + 1))
        self.before = synthesize_assembly(scale_platform(everyone[:-1], backend), tmp / "before")
        self.after = synthesize_assembly(scale_platform(everyone, backend), tmp / "after")
        kept = [i for i in everyone if team_name(i) != self.gone]
        self.removed = synthesize_assembly(scale_platform(kept, backend), tmp / "removed")


_CASES: dict[tuple[FairnessBackend, int], Case] = {}


def _case(backend: FairnessBackend, size: int, tmp_path_factory: pytest.TempPathFactory) -> Case:
    """One case per backend and size for the whole module (the end-to-end tests reuse the first)."""
    if (backend, size) not in _CASES:
        _CASES[backend, size] = Case(backend, size, tmp_path_factory.mktemp(f"scale-{backend.value}-{size}"))
    return _CASES[backend, size]


@pytest.fixture(
    scope="module",
    params=[(b, n) for b in BACKENDS for n in SIZES],
    ids=[f"{b.value}-{n}" for b in BACKENDS for n in SIZES],
)
def case(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Case:
    backend, size = request.param
    return _case(backend, size, tmp_path_factory)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Case:
    """The smallest case on Task Governance (synthesized once, shared with the invariant tests)."""
    return _case(BACKENDS[0], SIZES[0], tmp_path_factory)


def _unchanged(old: Assembly, new: Assembly) -> list[str]:
    """Every stack of both whose template, asset manifest or dependencies differ (names and what differs)."""
    changed = []
    for stack in sorted(set(old.templates) & set(new.templates)):
        if old.templates[stack] != new.templates[stack]:
            changed.append(f"{stack}: template")
        if old.assets.get(stack) != new.assets.get(stack):
            changed.append(f"{stack}: asset manifest")
        if old.dependencies[stack] != new.dependencies[stack]:
            changed.append(f"{stack}: dependencies {old.dependencies[stack]} -> {new.dependencies[stack]}")
    return changed


def test_templates_carry_no_cdk_metadata(case: Case) -> None:
    """Version reporting is off: the comparison below is of the whole files."""
    for stack, text in case.after.templates.items():
        assert b"CDKMetadata" not in text, stack


def test_adding_a_team_adds_one_stack_and_changes_no_other(case: Case) -> None:
    before, after = case.before, case.after
    assert set(after.templates) - set(before.templates) == {after.team_stack(case.added)}
    assert set(before.templates) <= set(after.templates)
    assert _unchanged(before, after) == []
    # the shared stacks are among the compared ones
    shared = {after.stage.cluster_stack.stack_name}
    assert after.stage.chargeback_stack is not None
    shared.add(after.stage.chargeback_stack.stack_name)
    assert shared <= set(before.templates)


def test_removing_a_team_removes_its_stack_and_changes_no_other(case: Case) -> None:
    after, removed = case.after, case.removed
    assert set(after.templates) - set(removed.templates) == {after.team_stack(case.gone)}
    assert set(removed.templates) <= set(after.templates)
    assert _unchanged(after, removed) == []


def test_the_new_team_stack_depends_on_the_shared_stacks_only(case: Case) -> None:
    """Its own stack references the cluster stack (a few exports that exist already), never another team's."""
    stack = case.after.team_stack(case.added)
    others = {case.after.team_stack(t) for t in case.after.stage.team_stacks if t != case.added}
    assert not set(case.after.dependencies[stack]) & others
    assert case.after.stage.cluster_stack.artifact_id in case.after.dependencies[stack]


# ---------------------------------------------------------------------------------------------- end to end
def _parameter(template: dict[str, Any], name: str) -> str:
    (value,) = [
        r["Properties"]["Value"]
        for r in resources_of(template, "AWS::SSM::Parameter").values()
        if r["Properties"]["Name"] == name
    ]
    assert isinstance(value, str), f"{name} must be a plain string (no CloudFormation token): {value!r}"
    return value


def _webhook_config(cluster_template: dict[str, Any]) -> dict[str, Any]:
    (config_map,) = [
        m
        for m in manifests_in(cluster_template)
        if m["kind"] == "ConfigMap" and m["metadata"]["name"] == posix_identity.CONFIG_MAP
    ]
    config: dict[str, Any] = json.loads(config_map["data"][posix_identity.CONFIG_FILE])
    return config


def _pod(namespace: str) -> dict[str, Any]:
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == "Pod"]
    obj = workload(kind)
    obj["metadata"]["namespace"] = namespace
    return obj


def test_a_team_added_only_through_its_own_stack_is_stamped_by_the_webhook(
    small: Case, tmp_path: Path
) -> None:
    """The webhook runs with the cluster stack's configuration from *before* the team existed, and finds the new
    team's GID in the record the new team's stack writes (moto's SSM, the real server over TLS)."""
    cluster = small.before.template(small.before.stage.cluster_stack.stack_name)
    config = _webhook_config(cluster)
    assert "namespaces" not in config  # the shared configuration lists no team
    new_team = small.after.platform.team(small.added)
    record = _parameter(
        small.after.template(small.after.team_stack(small.added)),
        names.posix_identity_record(small.after.platform.cluster.name, small.added),
    )
    config_path = tmp_path / "teams.json"
    config_path.write_text(json.dumps(config))
    with serial_moto_server():
        ssm = boto3.client("ssm")
        ssm.put_parameter(
            Name=names.posix_identity_record("shared-gpu", small.added), Value=record, Type="String"
        )
        table = create_table()
        with WebhookProcess(certs=certificates(tmp_path), table=table, config_path=config_path) as server:
            obj = _pod(names.namespace(small.added))
            response = server.client.mutate(review(obj, user=sso_user("dana@example.com", team=small.added)))
            assert response["allowed"], response
            patched = apply_patch(obj, response)
            assert patched["spec"]["securityContext"]["runAsGroup"] == new_team.identity.posix_gid
            assert patched["metadata"]["annotations"][posix_identity.POSIX_GID_ANNOTATION] == str(
                new_team.identity.posix_gid
            )
            # a namespace no team stack wrote a record for is still refused
            stranger = _pod(names.namespace("nobody"))
            denied = server.client.mutate(review(stranger, user=sso_user("eve@example.com", team="nobody")))
            assert not denied["allowed"] and "not a team namespace" in denied["status"]["message"]


def test_a_team_added_only_through_its_own_stack_appears_in_the_months_report(
    small: Case, tmp_path: Path
) -> None:
    """The chargeback stack's job asset (unchanged by the new team) plus the record the new team's stack writes:
    the offline report of the month bills the new team."""
    chargeback = small.before.stage.chargeback_stack
    assert chargeback is not None
    asset_config = model.config_from_json(model.config_to_json(chargeback.pipeline.platform_config))
    assert asset_config.teams == ()  # the asset lists no team
    (tmp_path / "chargeback_config.json").write_text(model.config_to_json(asset_config))
    records = tmp_path / "records"
    records.mkdir()
    team_names = sorted(small.after.stage.team_stacks)
    for team in team_names:
        value = _parameter(
            small.after.template(small.after.team_stack(team)),
            names.chargeback_record(small.after.platform.cluster.name, team),
        )
        (records / f"{team}.json").write_text(value)
    usage = tmp_path / "usage"
    usage.mkdir()
    generate_month(
        usage,
        month="2026-07",
        cluster="shared-gpu",
        teams=len(team_names),
        instance_types={"ml.g5.12xlarge": 4},
        nodes_per_type=len(team_names) + 1,
        snapshot_minutes=60,
        node_snapshot_minutes=60,
        team_names=team_names,
    )
    prices = tmp_path / "prices.csv"
    prices.write_text("instance_type,usd_per_gpu_hour\nml.g5.12xlarge,1.77\n")
    out = tmp_path / "report.json"
    status = main(
        [
            "chargeback",
            "--usage",
            str(usage),
            "--prices",
            str(prices),
            "--config",
            str(tmp_path / "chargeback_config.json"),
            "--team-records",
            str(records),
            "--month",
            "2026-07",
            "--format",
            "json",
            "--output",
            str(out),
        ]
    )
    assert status == 0
    rows = json.loads(out.read_text())["rows"]
    billed = {row["team"] for row in rows}
    assert small.added in billed
    (new_row,) = [r for r in rows if r["team"] == small.added]
    assert Decimal(str(new_row["usedGpuHours"])) > 0
