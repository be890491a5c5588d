"""The rule registry: the guardrail table of docs/guardrails.md is current and complete, rules behave as declared."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from platforms import PLATFORM_YAML, REPO, reference_data

from hyperpod_tenancy.cli import main
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.k8s import admission, kueue, posix_identity, tenant_guards
from hyperpod_tenancy.policy import HYPERPOD_INSTANCE_TYPES, Platform, Team, load_platform, loader, rules
from hyperpod_tenancy.policy.rules import (
    END_MARKER,
    ERROR_RULES,
    GUARDRAILS,
    RULES,
    START_MARKER,
    WARNING_RULES,
    Domain,
    Finding,
    Guardrail,
    Severity,
    Stage,
)
from hyperpod_tenancy.policy.rules._base import platform_rule, run_rules, team_quota_rule, team_rule
from hyperpod_tenancy.policy.rules._docs import markdown_table

GUARDRAILS_PAGE = REPO / "docs" / "guardrails.md"
SRC = REPO / "src/hyperpod_tenancy"
#: A code as the product writes it (not a prefix such as ``HPT-REPLACE-*`` or ``HPT-...``).
CODE = re.compile(r"HPT-[A-Z0-9]+(?:-[A-Z0-9]+)*(?![-*A-Z0-9])")


def _readme_table() -> str:
    text = GUARDRAILS_PAGE.read_text(encoding="utf-8")
    assert text.count(START_MARKER) == 1
    assert text.count(END_MARKER) == 1
    return text.split(START_MARKER + "\n", 1)[1].split(END_MARKER, 1)[0]


def test_readme_guardrail_table_is_current() -> None:
    assert _readme_table() == rules.guardrails_markdown(), (
        "docs/guardrails.md's guardrail table is stale: run `hyperpod-tenancy guardrails --write docs/guardrails.md`"
    )


def test_readme_lists_every_guardrail_once() -> None:
    rows = [line for line in _readme_table().splitlines() if line.startswith("| `")]
    assert len(rows) == len(GUARDRAILS)
    assert {row.split("`")[1] for row in rows} == {g.code for g in GUARDRAILS}


def test_every_code_in_the_source_is_registered() -> None:
    outside = {
        code
        for path in SRC.rglob("*.py")
        if "policy/rules" not in path.as_posix()
        for code in CODE.findall(path.read_text(encoding="utf-8"))
    }
    registered = {g.code for g in GUARDRAILS}
    assert outside - registered == set()
    # and every documentation-only code is one the product really reports
    documented = {g.code for g in GUARDRAILS if g.stage not in (Stage.POLICY, Stage.ADMISSION)}
    assert documented - outside == set()


def test_admission_entries_are_the_rendered_policies(reference_platform: Platform) -> None:
    rendered = {
        o["metadata"]["name"]
        for o in (
            *admission.admission_policies(reference_platform),
            *tenant_guards.tenant_guard_policies(),
            *posix_identity.posix_identity_policies(),
        )
        if o["kind"] == "ValidatingAdmissionPolicy"
    }
    assert {g.code for g in GUARDRAILS if g.stage is Stage.ADMISSION} == rendered


def test_kueue_lint_entries_are_the_lint_ids() -> None:
    registered = {g.code for g in GUARDRAILS if g.code.startswith("HPT-KUEUE-")}
    assert registered == set(kueue.KUEUE_LINT_IDS)


def test_every_error_rule_code_has_a_bad_value_case() -> None:
    cases = (REPO / "tests/test_policy_errors.py").read_text(encoding="utf-8")
    assert {r.code for r in ERROR_RULES} - set(CODE.findall(cases)) == set()


def test_rules_are_classified_consistently() -> None:
    assert all(r.stage is Stage.POLICY for r in RULES)
    assert {r.severity for r in ERROR_RULES} == {Severity.ERROR}
    assert {r.severity for r in WARNING_RULES} == {Severity.WARNING}
    assert len({r.name for r in RULES}) == len(RULES)
    assert all(g.stage is not Stage.POLICY for g in GUARDRAILS if not isinstance(g, rules.Rule))
    for g in GUARDRAILS:
        assert g.failure
        assert g.guardrail


# --- rules report where they say, read what they say -----------------------------------------------------


def _platform(changes: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> Platform:
    """The reference platform with ``changes`` (dotted paths, ``[i]`` indices), loaded without the rules."""
    data = reference_data()
    for path, value in changes.items():
        tokens: list[str | int] = [
            int(t[1:-1]) if t.startswith("[") else t for t in re.findall(r"\[\d+\]|[^.\[\]]+", path)
        ]
        node: Any = data
        for t in tokens[:-1]:
            node = node[t]
        node[tokens[-1]] = value
    with monkeypatch.context() as m:
        m.setattr(loader, "validate_platform", lambda platform, raise_on_error=True: [])
        return loader.platform_from_dict(data)


P5 = "ml.p5.48xlarge"
#: One platform per scope with many rules failing at once.
BAD = [
    {
        "name": "Bad_Name",
        "account": "123",
        "identityCenter.account": "123",
        "region": "mars-1",
        "identityCenter.region": "eu-west-1",
        "cluster.name": "-x",
        "cluster.availabilityZones": ["x"],
        "cluster.vpcCidr": "10.0.0.0/28",
        "cluster.serviceCidr": "8.8.8.0/24",
        "cluster.systemNodeGroup.count": 0,
        "cluster.fsx.deploymentType": "SCRATCH_9",
        "cluster.fsx.storageCapacityGiB": 100,
        "cluster.dataClassification": "Not A Label",
        "cluster.posixIdentity": {
            "uidRange": {"first": 5, "last": 10},
            "timeoutSeconds": 0,
            "cacheTtlSeconds": 0,
            "imageUri": "webhook:latest",
            "breakGlassGroup": "system:masters",
            "supplementalGroupsPolicy": "strict",
        },
        "cluster.kubernetesVersion": "1.32",
        "chargeback.usageReportChart": {},
        "teams[2].identity.groupId": "906754abcd-11111111-aaaa-bbbb-cccc-111111111111",
    },
    {
        "cluster.instanceGroups[0].name": "-bad",
        "cluster.instanceGroups[0].count": 0,
        "cluster.instanceGroups[0].reserved": -1,
        "cluster.instanceGroups[0].threadsPerCore": 3,
        "cluster.instanceGroups[0].availabilityZone": "us-east-1z",
        "cluster.instanceGroups[0].ebsVolumeGiB": 0,
        "cluster.instanceGroups[1].name": "shared",
        "cluster.instanceGroups[1].trainingPlanArn": "arn:nope",
        "cluster.instanceGroups[1].topologyAware": True,
        "scheduling.priorityClasses[0].weight": 900,
        "scheduling.priorityClasses[1].maxCheckpointInterval": "9999h",
    },
    {
        "teams[0].name": "Research",
        "teams[1].name": "inference",
        "teams[0].compute.quotas": {P5: -1, "ml.p4d.24xlarge": 2},
        "teams[1].compute.borrowLimit": 10_900,
        "teams[1].compute.fairShareWeight": 101,
        "teams[0].identity.groupId": "not-a-group",
        "teams[1].identity.posixGid": 5,
        "teams[2].identity.permissionSetName": "x" * 40,
        "teams[2].allowedPriorityClasses": ["infrence"],
        "teams[2].podSecurity": "privileged",
        "teams[1].dataClassification": "secret",
        "teams[2].requireCustomerManagedKey": True,
    },
    {
        "fairnessBackend": "kueue",
        "encryption": {"kmsKey": "create"},
        "cluster.fsx.deploymentType": "SCRATCH_2",
        "cluster.instanceGroups": [
            *reference_data()["cluster"]["instanceGroups"],
            {
                "name": "p5-more",
                "instanceType": P5,
                "count": 2,
                "reserved": 0,
                "threadsPerCore": 2,
                "topologyAware": True,
            },
            {"name": "cpu", "instanceType": "ml.c5.12xlarge", "count": 2, "reserved": 0},
        ],
    },
    {
        "region": "eu-west-1",
        "identityCenter.region": "eu-west-1",
        "encryption": {
            "kmsKey": "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
        },
        "teams[2].allowedPriorityClasses": ["experimentation"],
        "teams[0].compute.quotas": {P5: 100},
        "cluster.posixIdentity.supplementalGroupsPolicy": "merge",
    },
    {
        "cluster.instanceGroups": [],
        "teams": [],
        "scheduling.priorityClasses": [],
        "identityCenter.instanceArn": "arn:nope",
        "identityCenter.region": "nowhere",
        "cluster.kubernetesVersion": "1.20",
        "cluster.systemNodeGroup.instanceType": "ml.m5.large",
        "cluster.hyperpodHelmChart": {},
        "cluster.fsx.perUnitStorageThroughput": 7,
    },
    {
        "cluster.name": "c" * 63,
        "identityCenter.region": "eu-west-1",
        "cluster.instanceGroups[0].instanceType": "ml.p5.48xlarg",
        "cluster.instanceGroups[0].deepHealthChecks": ["InstanceStress", "InstanceStress"],
        "cluster.instanceGroups[1].name": "p5-training",
        "cluster.instanceGroups[1].resources": {"accelerators": -1, "vcpus": 0, "memoryGiB": 0},
        "scheduling.priorityClasses[0].name": "Bad",
        "scheduling.priorityClasses[2].name": "training",
        "teams[0].compute.quotas": {P5: 100, **dict.fromkeys(sorted(HYPERPOD_INSTANCE_TYPES)[:15], 0)},
    },
    {
        "chargeback.billingTerms": [
            {"effectiveFrom": "2026-07-15", "rule": None, "idleOwner": None},
            {"effectiveFrom": "2026-01-01", "rule": "usage", "idleOwner": "a|b"},
            {"effectiveFrom": "2026-08-01", "rule": "usage", "idleOwner": "shared"},
        ],
        "chargeback.prices": {"ml.p5.48xlarg": 0},
        "chargeback.reconciliationTolerance": 2.0,
        "chargeback.preemptionAlarm": {"gpuHoursPerTeamPerDay": 0},
        "teams[0].costCenter": "shared",
    },
    {
        "chargeback.billingTerms": [],
        "chargeback.reconciliationTolerance": -1.0,
        "teams[1].costCenter": "aws:cost-center",
    },
    {
        "teams[0].compute.borrowLimit": 900,
        "teams[0].compute.absoluteBorrowLimits": {
            itype: {"instances": 1} for itype in sorted(HYPERPOD_INSTANCE_TYPES)[:16]
        },
        "teams[1].compute.sharing": "lend",
        "teams[1].compute.absoluteBorrowLimits": {P5: {"instances": 1}},
        "teams[2].compute.quotas": {"ml.g5.12xlarge": {"accelerators": 1, "vcpus": 8}},
    },
    # Identity Center administered from another account, with Studio domains; teams in accounts of their own
    {
        "identityCenter.account": "999988887777",
        "teams[0].account": "4444",
        "teams[1].account": "111122223333",
        "teams[2].account": "999988887777",
    },
    # Studio domains in teams' own accounts, with Identity Center in the cluster's account
    {
        "teams[0].account": "444455556666",
        "teams[0].studioNetwork": {
            "vpcId": "vpc-1",
            "cidr": "10.192.0.0/24",
            "subnetIds": [],
            "routeTableIds": ["rtb-0a1b2c3d4e5f60718"],
        },
        "teams[1].studioNetwork": {
            "vpcId": "vpc-0a1b2c3d4e5f60718",
            "cidr": "10.60.0.0/16",
            "subnetIds": ["subnet-0a1b2c3d4e5f60718"],
            "routeTableIds": ["rtb-0a1b2c3d4e5f60718"],
        },
    },
    # partitioned GPUs: a layout the chart lacks, groups of one type that disagree, quotas that do not fit them
    {
        "cluster.instanceGroups": [
            {**reference_data()["cluster"]["instanceGroups"][0], "migConfig": "all-1g.10gb"},
            {**reference_data()["cluster"]["instanceGroups"][1], "migConfig": "all-1g.10gb"},
            {"name": "p5-more", "instanceType": P5, "count": 2, "reserved": 0, "migConfig": "all-2g.20gb"},
        ],
        "teams[0].compute.quotas": {P5: 2},
        "teams[1].compute.quotas": {P5: {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 9999}}},
        "teams[2].compute.quotas": {P5: {"acceleratorPartition": {"type": "mig-3g.40gb", "count": 1}}},
    },
    # more teams than the default of every account quota (HPT-QUOTA-*)
    {"teams": [{**reference_data()["teams"][2], "name": f"team-{i:04d}"} for i in range(3501)]},
]


def _by_rule(platform: Platform) -> Iterator[tuple[rules.Rule, PolicyIssue]]:
    for rule in RULES:
        for issue in run_rules((rule,), platform):
            yield rule, issue


@pytest.mark.parametrize(
    "changes",
    BAD,
    ids=[
        "platform",
        "groups-and-classes",
        "teams",
        "kueue",
        "warnings",
        "empty",
        "more",
        "chargeback",
        "no-terms",
        "borrowing",
        "accounts",
        "team-studio",
        "mig",
        "quotas",
    ],
)
def test_each_rule_reports_under_its_code_at_its_path(
    changes: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    platform = _platform(changes, monkeypatch)
    found = list(_by_rule(platform))
    assert len(found) >= 3
    for rule, issue in found:
        assert issue.code == rule.code
        assert rule.reports(issue.path), (rule.name, rule.at, issue.path)
        assert all(not p.endswith("[*]") for p in rule.inputs(issue.path))


def test_the_bad_platforms_exercise_every_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    hit = {rule.name for changes in BAD for rule, _ in _by_rule(_platform(changes, monkeypatch))}
    assert {r.name for r in RULES} - hit == set()


@pytest.mark.parametrize(
    "changes",
    BAD,
    ids=[
        "platform",
        "groups-and-classes",
        "teams",
        "kueue",
        "warnings",
        "empty",
        "more",
        "chargeback",
        "no-terms",
        "borrowing",
        "accounts",
        "team-studio",
        "mig",
        "quotas",
    ],
)
def test_the_registry_order_is_the_reporting_order_of_scoped_loops(
    changes: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule by rule, each issue shows up in check_errors, and the engine keeps each rule's own order."""
    platform = _platform(changes, monkeypatch)
    issues = rules.check_errors(platform)
    by_rule = [issue for _, issue in _by_rule(platform) if issue.code in {r.code for r in ERROR_RULES}]
    assert sorted(map(str, issues)) == sorted(map(str, by_rule))


@pytest.mark.parametrize(
    ("issue", "inputs"),
    [
        (
            PolicyIssue("teams[0].compute.quotas.ml.p4d.24xlarge", "", "", "HPT-QUOTA-UNKNOWN-TYPE"),
            ("cluster.instanceGroups",),
        ),
        (
            PolicyIssue("teams[*].compute.quotas.ml.p5.48xlarge", "", "", "HPT-QUOTA-CAPACITY"),
            ("cluster.instanceGroups",),
        ),
        (
            PolicyIssue("teams[2].allowedPriorityClasses[0]", "", "", "HPT-PRIORITY-UNKNOWN"),
            ("scheduling.priorityClasses",),
        ),
        (PolicyIssue("cluster.availabilityZones[1]", "", "", "HPT-AZ"), ("region",)),
        (
            PolicyIssue("cluster.instanceGroups[1].availabilityZone", "", "", "HPT-AZ"),
            ("cluster.availabilityZones",),
        ),
        (
            PolicyIssue("cluster.instanceGroups[1].reserved", "", "", "HPT-RESERVED"),
            ("cluster.instanceGroups[1].count",),
        ),
        (
            PolicyIssue("cluster.instanceGroups[3].resources", "", "", "HPT-RESOURCES"),
            ("fairnessBackend", "cluster.instanceGroups[3].instanceType"),
        ),
        (PolicyIssue("teams[2].identity.permissionSetName", "", "", "HPT-IDENTITY"), ("teams[2].name",)),
        (PolicyIssue("teams[2].identity.groupId", "", "", "HPT-IDENTITY"), ()),
        (PolicyIssue("account", "", "", "HPT-ACCOUNT"), ()),
        (PolicyIssue("teams[0].compute.unknownKey", "", "", "HPT-SCHEMA"), ()),
    ],
)
def test_inputs_of_an_issue_come_from_its_rule(issue: PolicyIssue, inputs: tuple[str, ...]) -> None:
    assert rules.inputs_of(issue) == inputs


# --- the engine -------------------------------------------------------------------------------------------


def _meta(code: str) -> dict[str, Any]:
    return {"code": code, "domain": Domain.NAMING, "at": "x", "reads": (), "failure": "f", "guardrail": "g"}


@platform_rule(**_meta("A"))
def _a(p: Platform) -> Iterator[Finding]:
    yield Finding("a", "", "")


@team_rule(**_meta("T"))
def _t(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    yield Finding(f"t{i}", "", "")


@team_quota_rule(**_meta("Q"))
def _q(p: Platform, i: int, team: Team, itype: str, count: int) -> Iterator[Finding]:
    yield Finding(f"q{i}.{itype}", "", "")


@team_rule(**_meta("U"))
def _u(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    yield Finding(f"u{i}", "", "")


def test_consecutive_rules_of_one_scope_share_one_loop(reference_platform: Platform) -> None:
    paths = [i.path for i in run_rules((_a, _t, _q, _u, _a), reference_platform)]
    expected = ["a"]
    for i, team in enumerate(reference_platform.teams):
        expected += [f"t{i}", *(f"q{i}.{t}" for t in team.compute.quotas), f"u{i}"]
    assert paths == [*expected, "a"]
    assert len(reference_platform.teams) > 1


# --- the table and the command ----------------------------------------------------------------------------


def test_the_table_refuses_cells_that_break_it() -> None:
    bad = Guardrail(
        code="HPT-X",
        stage=Stage.SYNTH,
        severity=Severity.ERROR,
        domain=Domain.NAMING,
        failure="a | b",
        guardrail="g",
    )
    with pytest.raises(ValueError, match="cannot be a Markdown table cell"):
        markdown_table([bad])


def test_guardrails_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["guardrails", "--markdown"]) == 0
    assert capsys.readouterr().out == rules.guardrails_markdown()


def test_guardrails_command_rewrites_the_readme_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{START_MARKER}\n| stale |\n{END_MARKER}\n\nafter\n", encoding="utf-8")
    assert main(["guardrails", "--write", str(readme)]) == 0
    assert (
        readme.read_text(encoding="utf-8")
        == f"# x\n\n{START_MARKER}\n{rules.guardrails_markdown()}{END_MARKER}\n\nafter\n"
    )
    readme.write_text("# no markers\n", encoding="utf-8")
    assert main(["guardrails", "--write", str(readme)]) == 1
    assert "no '<!-- guardrails:start" in capsys.readouterr().err


def test_reference_platform_passes_every_rule() -> None:
    platform = load_platform(PLATFORM_YAML)
    assert rules.check_errors(platform) == []
    assert rules.check_warnings(platform) == []
