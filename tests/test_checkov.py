"""checkov over every synthesized template: no failed check, and every skip carries its reason.

The templates of both fairness backends, of the platform key (created, and imported by ARN) and of the Task
Governance documentation example go into one directory and checkov runs once over it (one process: checkov's
start-up dominates; see tests/support/checkov_scan.py). A canary template with an unencrypted log group and no
skip proves the gate reports what it should.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from checkov_scan import Finding, Report, scan, write_templates
from synth import Synth, synthesize

from hyperpod_tenancy.constructs._private.annotations import (
    CDK_HANDLER_CHECKOV_SKIPS,
    CHECKOV_METADATA_KEY,
    acknowledge,
    skip_checkov,
    skip_handler_checks,
)

CANARY = "canary"
#: The checks a platform key makes pass instead of being skipped.
KEY_CHECKS = {"CKV_AWS_158", "CKV_AWS_187"}


@pytest.fixture(scope="module")
def doc_example(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The Task Governance documentation example (two teams on Kueue), synthesized."""
    return synthesize(platforms.doc_example(), tmp_path_factory.mktemp("doc-example"))


#: Template labels and the fixtures they come from.
SCANNED = {
    "tg": "reference",
    "kueue": "kueue_reference",
    "kms": "kms_reference",
    "kmsarn": "kms_arn_reference",
    "doc": "doc_example",
    "borrowing": "borrowing_example",
    "idc": "identity_center_example",
    "acct": "team_accounts_example",
    "mig": "partitions_example",
}


@pytest.fixture(scope="module")
def scanned(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Report, dict[str, dict[str, Any]]]:
    """One checkov run over every template, and the templates by file name."""
    directory = tmp_path_factory.mktemp("checkov")
    labelled: dict[str, Synth] = {label: request.getfixturevalue(name) for label, name in SCANNED.items()}
    for label, synth in labelled.items():
        write_templates(directory, label, synth.templates)
    write_templates(directory, CANARY, {"logs": _canary()})
    templates = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in directory.iterdir()}
    return scan(directory), templates


def _canary() -> dict[str, Any]:
    return {
        "Resources": {
            "Unencrypted": {"Type": "AWS::Logs::LogGroup", "Properties": {"RetentionInDays": 30}},
        }
    }


#: Resource types checkov has no CloudFormation check for: a template holding only these is parsed
#: (``parsing_errors``) but has no result (a team's Identity Center and access stacks).
UNCHECKED_TYPES = {
    "AWS::SSO::PermissionSet",
    "AWS::SSO::Assignment",
    "AWS::EKS::AccessEntry",
    "Custom::SsoRoleArn",
}


def _of(findings: list[Finding], *, canary: bool = False) -> list[Finding]:
    return [f for f in findings if f.file.startswith(f"{CANARY}-") == canary]


def test_checkov_reads_every_template(scanned: tuple[Report, dict[str, dict[str, Any]]]) -> None:
    report, templates = scanned
    assert report.parsing_errors == []
    seen = {f.file for f in (*report.passed, *report.failed, *report.skipped)}
    checked = {
        name
        for name, template in templates.items()
        if {r["Type"] for r in template.get("Resources", {}).values()} - UNCHECKED_TYPES
    }
    assert seen == checked
    # the Identity Center and access stacks, but for the Identity Center stack of a team with Studio (its lookup)
    studio = {f"{layout}-ml-platform-org-Team-Research-Identity.template.json" for layout in ("idc", "acct")}
    assert (
        set(templates) - checked
        == {n for n in templates if n.endswith(("-Identity.template.json", "-Access.template.json"))} - studio
    )
    assert studio <= checked


def test_no_template_fails_a_checkov_check(scanned: tuple[Report, dict[str, dict[str, Any]]]) -> None:
    report, _ = scanned
    failed = _of(report.failed)
    assert not failed, "checkov findings without a recorded skip:\n" + "\n".join(map(str, failed))


def test_the_checkov_gate_reports_an_unskipped_finding(
    scanned: tuple[Report, dict[str, dict[str, Any]]],
) -> None:
    report, _ = scanned
    assert [(f.check_id, f.resource) for f in _of(report.failed, canary=True)] == [
        ("CKV_AWS_158", "AWS::Logs::LogGroup.Unencrypted")
    ]


def test_every_skip_is_one_recorded_in_the_resource_with_its_reason(
    scanned: tuple[Report, dict[str, dict[str, Any]]],
) -> None:
    report, templates = scanned
    skipped = _of(report.skipped)
    assert skipped
    for finding in skipped:
        _, logical_id = finding.resource.split(".", 1)
        metadata = templates[finding.file]["Resources"][logical_id]["Metadata"][CHECKOV_METADATA_KEY]
        recorded = {s["id"]: s["comment"] for s in metadata["skip"]}
        assert finding.comment == recorded[finding.check_id]
        assert finding.comment is not None and len(finding.comment) > 40, finding


def test_every_recorded_skip_silences_a_check_checkov_runs(
    scanned: tuple[Report, dict[str, dict[str, Any]]],
) -> None:
    # a skip nobody needs (a typo in an ID, a check that passes anyway) would hide nothing but clutter the list
    report, templates = scanned
    used = {(f.file, f.resource.split(".", 1)[1], f.check_id) for f in report.skipped}
    recorded = {
        (file, logical_id, s["id"])
        for file, template in templates.items()
        for logical_id, resource in template["Resources"].items()
        for s in resource.get("Metadata", {}).get(CHECKOV_METADATA_KEY, {}).get("skip", [])
    }
    assert recorded == used


def test_the_platform_key_makes_the_key_checks_pass_instead_of_skipping_them(
    scanned: tuple[Report, dict[str, dict[str, Any]]],
) -> None:
    report, _ = scanned
    for label in ("kms", "kmsarn"):
        skipped = {f.check_id for f in report.skipped if f.file.startswith(f"{label}-")}
        passed = {f.check_id for f in report.passed if f.file.startswith(f"{label}-")}
        assert not skipped & KEY_CHECKS, label
        assert passed >= KEY_CHECKS, label
    without = {f.check_id for f in report.skipped if f.file.startswith("tg-")}
    assert without >= KEY_CHECKS


# ---------------------------------------------------------------------------------------- the skip helpers
def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S")


def test_a_skip_lands_on_the_resources_the_check_reads_and_merges_by_id() -> None:
    stack = _stack()
    group = logs.LogGroup(stack, "Logs")
    skip_checkov(stack, "CKV_AWS_158", "first reason, long enough to be a reason")
    skip_checkov(group, "CKV_AWS_158", "second reason replaces the first one")
    cfn = group.node.default_child
    assert isinstance(cfn, cdk.CfnResource)
    assert cfn.get_metadata(CHECKOV_METADATA_KEY) == {
        "skip": [{"id": "CKV_AWS_158", "comment": "second reason replaces the first one"}]
    }


def test_a_skip_needs_a_known_check_a_target_and_a_reason() -> None:
    stack = _stack()
    logs.LogGroup(stack, "Logs")
    with pytest.raises(ValueError, match="unknown checkov check 'CKV_AWS_999'"):
        skip_checkov(stack, "CKV_AWS_999", "a reason")
    with pytest.raises(ValueError, match="no AWS::S3::Bucket to skip CKV_AWS_18 on"):
        skip_checkov(stack, "CKV_AWS_18", "a reason")
    with pytest.raises(ValueError, match="needs a reason"):
        skip_checkov(stack, "CKV_AWS_158", " ")


def test_one_acknowledgment_records_the_nag_rule_and_the_checkov_check() -> None:
    stack = _stack()
    group = logs.LogGroup(stack, "Logs")
    acknowledge(group, "AwsSolutions-X1", "one concern, one reason for both scanners", checkov="CKV_AWS_158")
    cfn = group.node.default_child
    assert isinstance(cfn, cdk.CfnResource)
    assert (
        cfn.get_metadata(CHECKOV_METADATA_KEY)["skip"][0]["comment"]
        == "one concern, one reason for both scanners"
    )
    acknowledged = [
        e.data
        for n in group.node.find_all()
        for e in n.node.metadata
        if e.type == "aws:cdk:acknowledged-rules"
    ]
    # CDK records the acknowledgment under the finding's ID (prefixed with its kind)
    assert [
        (rule.rsplit("::", 1)[-1], reason) for entry in acknowledged for rule, reason in entry.items()
    ] == [("AwsSolutions-X1", "one concern, one reason for both scanners")]


def test_a_handler_in_a_vpc_keeps_the_vpc_check() -> None:
    from aws_cdk import aws_ec2 as ec2

    stack = _stack()
    vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0, restrict_default_security_group=False)
    code = lambda_.Code.from_inline("def handler(event, context): return None")
    common: dict[str, Any] = {
        "runtime": lambda_.Runtime.PYTHON_3_14,
        "handler": "index.handler",
        "code": code,
    }
    outside = lambda_.Function(stack, "Outside", **common)
    inside = lambda_.Function(
        stack,
        "Inside",
        vpc=vpc,
        vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
        **common,
    )
    for fn in (outside, inside):
        skip_handler_checks(fn, "a test handler")

    def ids(fn: lambda_.Function) -> set[str]:
        cfn = fn.node.default_child
        assert isinstance(cfn, cdk.CfnResource)
        return {s["id"] for s in cfn.get_metadata(CHECKOV_METADATA_KEY)["skip"]}

    assert ids(outside) == set(CDK_HANDLER_CHECKOV_SKIPS)
    assert ids(inside) == set(CDK_HANDLER_CHECKOV_SKIPS) - {"CKV_AWS_117"}
