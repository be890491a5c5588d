"""Offline checks on every synthesized template: cfn-lint, cdk-nag AwsSolutions, Kubernetes schemas.

checkov runs over the same templates in tests/test_checkov.py (its own venv, one run for all of them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import kueue_crd_validator
import platforms
import pytest
from cfn_lint import lint_template
from synth import Synth, synthesize

from hyperpod_tenancy.policy import Platform

#: cfn-lint warnings accepted on purpose, with the reason. Anything else fails the suite.
ACCEPTED_CFN_LINT_WARNINGS = {
    "W3010": "availability zones are named on purpose: GPU capacity (reservations, training plans) is per zone",
    "W3005": "aws-cdk-lib adds DependsOn next to Ref/GetAtt on its own constructs (EKS, kubectl provider, "
    "bucket deployment); harmless",
}
KUBERNETES_VERSION = "1.33.0"
KUEUE_GROUP = "kueue.x-k8s.io/"


@pytest.mark.parametrize(
    "backend",
    [
        "reference",
        "kueue_reference",
        "kms_reference",
        "kms_arn_reference",
        "borrowing_example",
        "identity_center_example",
        "team_accounts_example",
        "partitions_example",
    ],
)
def test_cfn_lint_has_no_errors_and_only_accepted_warnings(
    backend: str, request: pytest.FixtureRequest
) -> None:
    synth: Synth = request.getfixturevalue(backend)
    for name, template in synth.templates.items():
        matches = lint_template(template, synth.platform.region)
        errors = [
            f"{m.rule.id} {m.message} at {'/'.join(map(str, m.path))}"
            for m in matches
            if m.rule.id.startswith("E")
        ]
        assert not errors, f"{name}: {errors}"
        unexpected = [
            f"{m.rule.id} {m.message}"
            for m in matches
            if not m.rule.id.startswith("E") and m.rule.id not in ACCEPTED_CFN_LINT_WARNINGS
        ]
        assert not unexpected, f"{name}: {unexpected}"


FIXTURES = [
    "reference",
    "kueue_reference",
    "four_teams",
    "kms_reference",
    "kms_arn_reference",
    "borrowing_example",
    "identity_center_example",
    "team_accounts_example",
    "partitions_example",
]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_cdk_builtin_template_validation_ran_and_found_nothing(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """``cdk synth`` validates every template with the CloudFormation Validate plugin; the session's platforms
    are synthesized with it, and its report has no violation at all (not even a warning)."""
    synth: Synth = request.getfixturevalue(fixture)
    assert synth.outdir is not None
    report = json.loads((synth.outdir / "validation-report.json").read_text(encoding="utf-8"))
    plugins = {p["pluginName"]: p["violations"] for p in report["pluginReports"]}
    assert plugins.get("CloudFormation Validate") == [], plugins


def test_cfn_lint_catches_a_broken_template(reference: Synth) -> None:
    """The lint gate is not vacuous: a bad value in the HyperPod cluster is an error."""
    template = json.loads(json.dumps(reference.cluster))
    hp = next(r for r in template["Resources"].values() if r["Type"] == "AWS::SageMaker::Cluster")
    hp["Properties"]["NodeRecovery"] = "Sometimes"
    assert any(m.rule.id.startswith("E") for m in lint_template(template, "us-east-1"))


@pytest.mark.parametrize(
    "backend",
    [
        "task-governance",
        "kueue",
        "kms",
        "borrowing-example",
        "identity-center-example",
        "team-accounts-example",
        "partitions-example",
    ],
)
def test_cdk_nag_aws_solutions_has_no_unacknowledged_findings(
    backend: str, reference_platform: Platform, kueue_platform: Platform, tmp_path: Path
) -> None:
    platform = {
        "task-governance": reference_platform,
        "kueue": kueue_platform,
        "kms": platforms.kms_platform(),
        "borrowing-example": platforms.example("borrowing-range"),
        "identity-center-example": platforms.example("identity-center-account"),
        "team-accounts-example": platforms.example("team-accounts"),
        "partitions-example": platforms.example("partitions-and-topology"),
    }[backend]
    # raises ValidationFailed on any unacknowledged finding
    synth = synthesize(platform, tmp_path, nag=True)
    report = json.loads((tmp_path / "validation-report.json").read_text())
    failing = [
        (p["pluginName"], v["ruleName"])
        for p in report["pluginReports"]
        for v in p["violations"]
        if v.get("severity") in ("error", "fatal")
    ]
    assert not failing
    # every acknowledgment carries a reason
    acknowledgments = [
        (construct.node.path, rule, reason)
        for construct in synth.app.node.find_all()
        for entry in construct.node.metadata
        if entry.type == "aws:cdk:acknowledged-rules"
        for rule, reason in entry.data.items()
    ]
    assert acknowledgments
    assert all(isinstance(reason, str) and len(reason) > 20 for _, _, reason in acknowledgments), (
        acknowledgments
    )


def test_cdk_nag_fails_on_an_unacknowledged_finding(tmp_path: Path) -> None:
    """The nag gate is not vacuous."""
    import aws_cdk as cdk
    from aws_cdk import aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks

    app = cdk.App(outdir=str(tmp_path))
    sqs.Queue(cdk.Stack(app, "S"), "Q")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match="ValidationFailed"):
        app.synth()


def _core(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Kueue and cert-manager objects are validated against their CRDs (test_fairness_kueue.py,
    # test_posix_identity_deploy.py)
    return [m for m in manifests if not m["apiVersion"].startswith((KUEUE_GROUP, "cert-manager.io/"))]


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_core_kubernetes_object_validates_strictly(
    backend: str, request: pytest.FixtureRequest
) -> None:
    synth: Synth = request.getfixturevalue(backend)
    objects = _core(synth.manifests())
    kinds = {m["kind"] for m in objects}
    assert {
        "Namespace",
        "Role",
        "RoleBinding",
        "NetworkPolicy",
        "LimitRange",
        "ServiceAccount",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "Job",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    } <= kinds
    for obj in objects:
        # SchemaNotFoundError is a failure too: an unknown apiVersion must not pass silently
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)


def test_kubernetes_validation_is_strict() -> None:
    bad = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "x", "namespace": "y"},
        "spec": {"podSelector": {}, "policyType": ["Ingress"]},
    }
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, KUBERNETES_VERSION, strict=True)


def _kueue_validator() -> Any:
    validate = kueue_crd_validator.validator_module()
    return validate, validate.load_crds(str(kueue_crd_validator.crds_dir()))


def test_every_kueue_object_in_the_templates_validates_against_upstream_crds(kueue_reference: Synth) -> None:
    validate, crds = _kueue_validator()
    objects = [m for m in kueue_reference.manifests() if m["apiVersion"].startswith(KUEUE_GROUP)]
    kinds = {m["kind"] for m in objects}
    assert kinds == {"ResourceFlavor", "Cohort", "WorkloadPriorityClass", "ClusterQueue", "LocalQueue"}
    assert all(m["apiVersion"] == "kueue.x-k8s.io/v1beta2" for m in objects)
    # all manifests, so the validator's cross-object checks (namespaces selected, queues resolved) run too
    issues = validate.validate_manifests(
        kueue_reference.manifests(), crds, api_version="kueue.x-k8s.io/v1beta2"
    )
    assert not [str(i) for i in issues], [str(i) for i in issues]


def test_task_governance_backend_leaves_kueue_objects_to_the_service(reference: Synth) -> None:
    assert not [m for m in reference.manifests() if m["apiVersion"].startswith(KUEUE_GROUP)]
    assert not [
        m
        for m in reference.manifests()
        if m["kind"] == "Namespace" and m["metadata"]["name"].startswith("hyperpod-ns-")
    ]


# ------------------------------------------------------------------ docs/compliance.md lists
def _readme_lists() -> str:
    from hyperpod_tenancy.stacks.compliance import END_MARKER, START_MARKER

    text = (platforms.REPO / "docs" / "compliance.md").read_text(encoding="utf-8")
    assert text.count(START_MARKER) == 1 and text.count(END_MARKER) == 1
    return text.split(START_MARKER + "\n", 1)[1].split(END_MARKER, 1)[0]


def test_readme_lists_every_accepted_finding_with_its_reason(
    reference: Synth, kueue_reference: Synth
) -> None:
    from hyperpod_tenancy.stacks.compliance import acceptances, compliance_markdown

    columns = {
        "task-governance": acceptances(reference.app, reference.templates.values()),
        "kueue": acceptances(kueue_reference.app, kueue_reference.templates.values()),
    }
    assert _readme_lists() == compliance_markdown(columns), (
        "docs/compliance.md's lists are stale: run `python -m hyperpod_tenancy.stacks.compliance --write docs/compliance.md`"
    )
    # the lists are not empty and cover the three scanners
    assert {a.scanner for counts in columns.values() for a in counts} == {"checkov", "cdk-nag", "cfn-lint"}


def test_acceptances_count_skips_and_acknowledgments_as_recorded() -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_logs as logs

    from hyperpod_tenancy.constructs._private.annotations import acknowledge
    from hyperpod_tenancy.stacks.compliance import Acceptance, acceptances, compliance_markdown

    app = cdk.App()
    stack = cdk.Stack(app, "S")
    for name in ("A", "B"):
        acknowledge(
            logs.LogGroup(stack, name),
            "AwsSolutions-X1[Detail::a|b]",
            "a reason with a | pipe",
            checkov="CKV_AWS_158",
        )
    counts = acceptances(app, [app.synth().get_stack_by_name("S").template])
    assert counts == {
        Acceptance("cdk-nag", "AwsSolutions-X1", "a reason with a | pipe"): 2,
        Acceptance("checkov", "CKV_AWS_158", "a reason with a | pipe"): 2,
    }
    rendered = compliance_markdown({"p": counts})
    assert "| `CKV_AWS_158` | 2 | a reason with a \\| pipe |" in rendered
    assert "| `AwsSolutions-X1` | 2 | a reason with a \\| pipe |" in rendered
