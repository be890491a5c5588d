"""Identity Center administered from its own account, the cluster in a workload account.

``examples/identity-center-account`` names the Identity Center account (``identityCenter.account``); each team then
has three stacks: its team stack in the cluster's account (with the policy its permission set references), its
Identity Center stack (the permission set and the assignment to the cluster's account) and its access stack in the
cluster's account (the role lookup and the access entry). What these tests check is what a deploy across the two
accounts needs: each account holds only its resources, nothing crosses the line as a CloudFormation reference, the
order is stack dependencies, and the names that do cross agree on both sides.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
from synth import Synth, render_intrinsics, synthesize
from team_accounts import imports_by_account

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.k8s.audit_record import team_expectation
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.validation import policy_warnings
from hyperpod_tenancy.runtime.drift_audit import TeamExpectation
from hyperpod_tenancy.runtime.drift_audit.identity_center import identity_center_findings
from hyperpod_tenancy.stacks import TeamAccessStack, TeamIdentityStack

IDENTITY_CENTER, WORKLOADS = "999988887777", "111122223333"
#: The only resource types a team's Identity Center stack may hold.
IDENTITY_CENTER_TYPES = {"AWS::SSO::PermissionSet", "AWS::SSO::Assignment"}
#: What a team with Studio adds there: the lookup of its domain's application ARN (aws-cdk-lib's AwsCustomResource,
#: its function, role and logs) and the assignment of its group to that application.
STUDIO_ASSIGNMENT_TYPES = {
    "AWS::SSO::ApplicationAssignment",
    "Custom::AWS",
    "AWS::Lambda::Function",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "AWS::Logs::LogGroup",
}


def _stacks(synth: Synth) -> Iterator[cdk.Stack]:
    yield from (c for c in synth.stage.node.children if isinstance(c, cdk.Stack))


def _identity_center_types(synth: Synth, stack_name: str) -> set[str]:
    """The resource types a team's Identity Center stack holds: the permission set's, and with Studio its lookup's."""
    (team,) = (
        t
        for t in synth.platform.hosted_teams
        if stack_name.endswith("-" + names.team_identity_stack_id(t.name))
    )
    return IDENTITY_CENTER_TYPES | (STUDIO_ASSIGNMENT_TYPES if team.studio else set())


def _types(template: dict[str, Any]) -> set[str]:
    return {r["Type"] for r in template["Resources"].values()}


def _resources(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r["Properties"] for r in template["Resources"].values() if r["Type"] == kind]


def _walk(value: Any) -> Iterator[Any]:
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from _walk(child)


def test_the_example_names_both_accounts() -> None:
    platform = platforms.example("identity-center-account")
    assert (platform.account, platform.identity_center_account) == (WORKLOADS, IDENTITY_CENTER)
    assert platform.identity_center_elsewhere
    assert not platforms.reference_platform().identity_center_elsewhere


def test_each_account_holds_only_its_resources(identity_center_example: Synth) -> None:
    teams = [t.name for t in identity_center_example.platform.hosted_teams]
    by_account: dict[str, list[str]] = {}
    for stack in _stacks(identity_center_example):
        by_account.setdefault(stack.account, []).append(stack.stack_name)
        types = _types(identity_center_example.templates[stack.stack_name])
        if stack.account == IDENTITY_CENTER:
            assert types == _identity_center_types(identity_center_example, stack.stack_name), (
                stack.stack_name
            )
        else:
            assert not {t for t in types if t.startswith("AWS::SSO::")}, stack.stack_name
    assert sorted(by_account[IDENTITY_CENTER]) == sorted(
        names.stage_stack_name("ml-platform-org", names.team_identity_stack_id(t)) for t in teams
    )
    # the cluster, its access entries and the role lookups: only in the cluster's account
    for kind in (
        "AWS::SageMaker::Cluster",
        "AWS::EKS::AccessEntry",
        "Custom::SsoRoleArn",
        "AWS::IAM::ManagedPolicy",
    ):
        holders = {
            s.account
            for s in _stacks(identity_center_example)
            if kind in _types(identity_center_example.templates[s.stack_name])
        }
        assert holders == {WORKLOADS}, kind


def test_nothing_crosses_the_accounts_as_a_cloudformation_reference(identity_center_example: Synth) -> None:
    imports = imports_by_account(identity_center_example)
    assert imports  # the team stacks do import the cluster's attributes, within the cluster's account
    assert [(name, mine, theirs) for name, mine, theirs in imports if mine != theirs] == []
    for stack in _stacks(identity_center_example):
        if stack.account == IDENTITY_CENTER:
            text = str(identity_center_example.templates[stack.stack_name])
            assert "Fn::ImportValue" not in text and "SSMParameter" not in text


def test_the_deploy_order_is_stack_dependencies(identity_center_example: Synth) -> None:
    assembly = identity_center_example.stage.synth()
    depends = {
        s.stack_name: {d.id for d in s.dependencies if isinstance(d, cdk.cx_api.CloudFormationStackArtifact)}
        for s in assembly.stacks
    }
    by_name = {s.stack_name: s.id for s in assembly.stacks}
    for team in identity_center_example.platform.hosted_teams:
        stack = names.stage_stack_name("ml-platform-org", names.team_stack_id(team.name))
        identity = names.stage_stack_name("ml-platform-org", names.team_identity_stack_id(team.name))
        access = names.stage_stack_name("ml-platform-org", names.team_access_stack_id(team.name))
        assert by_name[stack] in depends[identity]  # its policy exists before the assignment is provisioned
        assert by_name[identity] in depends[access]  # the role exists once the assignment is provisioned


def test_the_permission_set_references_the_policy_the_team_stack_creates(
    identity_center_example: Synth,
) -> None:
    for team in identity_center_example.platform.hosted_teams:
        prefix = "ml-platform-org-" + names.team_stack_id(team.name)
        (permission_set,) = _resources(
            identity_center_example.templates[f"{prefix}-Identity"], "AWS::SSO::PermissionSet"
        )
        (assignment,) = _resources(
            identity_center_example.templates[f"{prefix}-Identity"], "AWS::SSO::Assignment"
        )
        (policy,) = _resources(identity_center_example.templates[prefix], "AWS::IAM::ManagedPolicy")
        assert "InlinePolicy" not in permission_set
        assert permission_set["CustomerManagedPolicyReferences"] == [
            {"Name": policy["ManagedPolicyName"], "Path": policy["Path"]}
        ]
        assert permission_set["Name"] == team.permission_set
        assert (assignment["TargetId"], assignment["TargetType"]) == (WORKLOADS, "AWS_ACCOUNT")
        assert assignment["PrincipalId"] == team.identity.group_id
        assert not _resources(identity_center_example.templates[prefix], "AWS::SSO::PermissionSet")


def _statements(document: dict[str, Any]) -> dict[str, Any]:
    return {s["Sid"]: render_intrinsics(s) for s in document["Statement"]}


@pytest.fixture(scope="module")
def one_account(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The example with Identity Center in the cluster's account (``identityCenter.account`` removed)."""
    data = platforms.example_data("identity-center-account")
    del data["identityCenter"]["account"]
    return synthesize(platforms.platform_from_dict(data), tmp_path_factory.mktemp("one-account"))


def test_the_policy_grants_what_the_inline_policy_grants_in_one_account(
    identity_center_example: Synth, one_account: Synth
) -> None:
    one = one_account
    team = "ml-platform-org-Team-Research"
    (permission_set,) = _resources(one.templates[team], "AWS::SSO::PermissionSet")
    (policy,) = _resources(identity_center_example.templates[team], "AWS::IAM::ManagedPolicy")
    inline, referenced = _statements(permission_set["InlinePolicy"]), _statements(policy["PolicyDocument"])
    assert list(inline) == list(referenced)
    for sid, statement in inline.items():
        if sid != "ReadOwnTeamStackOutputs":
            assert referenced[sid] == statement, sid
    # and members may read their role's ARN where it now is: the access stack
    stacks = referenced["ReadOwnTeamStackOutputs"]["Resource"]
    assert [s.rsplit(":stack/", 1)[1] for s in stacks] == [f"{team}/*", f"{team}-Access/*"]


def test_the_access_stack_finds_the_role_by_name_and_maps_it_to_the_team_group_only(
    identity_center_example: Synth,
) -> None:
    template = identity_center_example.templates["ml-platform-org-Team-Vision-Access"]
    (lookup,) = _resources(template, "Custom::SsoRoleArn")
    assert lookup["PermissionSetName"] == "ComputerVision"  # vision's own permission set name
    assert "PermissionSetArn" not in lookup and "Assignment" not in lookup  # nothing of the other account
    (entry,) = _resources(template, "AWS::EKS::AccessEntry")
    assert entry["KubernetesGroups"] == [names.kubernetes_group("vision")]
    assert "AccessPolicies" not in entry and entry["Type"] == "STANDARD"
    assert entry["PrincipalArn"] == {"Fn::GetAtt": ["SsoRole", "RoleArn"]}
    assert template["Outputs"]["SsoRoleArn"]["Value"] == {"Fn::GetAtt": ["SsoRole", "RoleArn"]}
    # the team stack maps no Identity Center role itself
    assert not _resources(
        identity_center_example.templates["ml-platform-org-Team-Vision"], "AWS::EKS::AccessEntry"
    )


def test_onboarding_reads_the_role_from_the_access_stack(identity_center_example: Synth) -> None:
    facts = onboarding.onboarding_facts(identity_center_example.platform, "research")
    command = onboarding.describe_output_command(facts, "SsoRoleArn")
    assert "--stack-name ml-platform-org-Team-Research-Access " in command
    assert "--stack-name ml-platform-org-Team-Research " in onboarding.describe_output_command(
        facts, "S3Prefix"
    )
    assert "SsoRoleArn" not in identity_center_example.templates["ml-platform-org-Team-Research"]["Outputs"]
    # research has Studio: its domain's ID and URL are the team stack's only values known once deployed
    assert [o.key for o in onboarding.stack_outputs(facts) if o.value is None] == [
        "StudioDomainId",
        "StudioUrl",
    ]
    assert "--stack-name ml-platform-org-Team-Research " in onboarding.describe_output_command(
        facts, "StudioUrl"
    )


def test_one_team_is_synthesized_with_its_three_stacks(tmp_path: Path) -> None:
    synth = synthesize(platforms.example("identity-center-account"), tmp_path, teams=["inference"])
    assert sorted(synth.templates) == [
        "ml-platform-org-Chargeback",
        "ml-platform-org-Cluster",
        "ml-platform-org-Team-Inference",
        "ml-platform-org-Team-Inference-Access",
        "ml-platform-org-Team-Inference-Identity",
    ]


def test_the_single_account_platform_keeps_its_permission_sets_in_the_team_stacks(reference: Synth) -> None:
    assert reference.stage.identity_stacks == {} and reference.stage.access_stacks == {}
    for team in reference.platform.hosted_teams:
        template = reference.templates["ml-platform-" + names.team_stack_id(team.name)]
        (permission_set,) = _resources(template, "AWS::SSO::PermissionSet")
        assert "InlinePolicy" in permission_set and "CustomerManagedPolicyReferences" not in permission_set
        assert not _resources(template, "AWS::IAM::ManagedPolicy")


def test_the_daily_audit_leaves_identity_center_it_cannot_read_from_the_cluster_account() -> None:
    platform = platforms.example("identity-center-account")
    expectation = team_expectation(platform, platform.team("research"), stack="ml-platform-org/Team-Research")
    assert expectation.identity_center_account == IDENTITY_CENTER
    record = expectation.to_record()
    assert record["identityCenterAccount"] == IDENTITY_CENTER
    assert TeamExpectation.from_record(record) == expectation
    # no Identity Center call is made for it from the cluster's account (there is no client to call)
    assert identity_center_findings(None, [expectation], account=WORKLOADS) == []
    # a re-run of the role lookup deploys the access stack, where the lookup is
    assert expectation.lookup_stack == "ml-platform-org/Team-Research-Access"
    one_account = team_expectation(
        platforms.reference_platform(), platforms.reference_platform().team("research"), stack="s"
    )
    assert (
        one_account.identity_center_account is None and "identityCenterAccount" not in one_account.to_record()
    )


@pytest.mark.parametrize("stack_class", ["identity", "access"])
def test_the_stacks_refuse_a_platform_with_identity_center_in_the_cluster_account(
    stack_class: str, reference: Synth
) -> None:
    app = cdk.App(outdir=tempfile.mkdtemp())
    with pytest.raises(TenancyError, match=r"Identity Center is administered from the cluster's account"):
        if stack_class == "identity":
            TeamIdentityStack(app, "Identity", platform=reference.platform, team="research")
        else:
            TeamAccessStack(app, "Access", cluster=reference.stage.cluster_stack.cluster, team="research")


def _activates_tags(synth: Synth) -> bool:
    template = synth.templates[f"{synth.platform.name}-Chargeback"]
    return "ce:UpdateCostAllocationTagsStatus" in str(template)


def test_the_member_account_leaves_the_cost_allocation_tags_to_the_payer(
    identity_center_example: Synth, reference: Synth
) -> None:
    assert not _activates_tags(identity_center_example)
    assert _activates_tags(reference)  # one account: it is the management (payer) account
    (warning,) = (w for w in policy_warnings(identity_center_example.platform) if w.path == "chargeback")
    assert warning.code == "HPT-CHARGEBACK-TAGS-PAYER" and "payer" in warning.fix


def test_the_kubernetes_side_is_the_one_of_one_account(
    identity_center_example: Synth, one_account: Synth
) -> None:
    """The team charts (namespace, RBAC, network policies, quotas) and the access entries' groups do not change
    with the account Identity Center is in: the isolation, RBAC and admission suites on the real control plane
    judge exactly these objects."""

    def objects(synth: Synth, team: str) -> str:
        # the same CDK tokens (the file system's ID...) have other numbers in another app
        text = json.dumps(synth.stage.team_stacks[team].tenant.chart.to_json(), sort_keys=True)
        return re.sub(r"\$\{Token\[[^\]]+\]\}", "TOKEN", text)

    for team in identity_center_example.stage.team_stacks:
        assert objects(identity_center_example, team) == objects(one_account, team), team
    groups = {
        tuple(e["KubernetesGroups"])
        for synth in (identity_center_example, one_account)
        for name, template in synth.templates.items()
        if "-Team-" in name
        for e in _resources(template, "AWS::EKS::AccessEntry")
    }
    assert groups == {(names.kubernetes_group(t.name),) for t in one_account.platform.hosted_teams}


def test_a_user_app_with_the_team_stack_alone_is_refused(tmp_path: Path) -> None:
    """An app that builds the cluster and a team stack itself, without the team's Identity Center stacks."""
    from hyperpod_tenancy.stacks import ClusterStack, TeamStack

    platform = platforms.example("identity-center-account")
    app = cdk.App(outdir=str(tmp_path))
    cluster = ClusterStack(app, "Cluster", platform=platform)
    TeamStack(app, "Research", cluster=cluster.cluster, team="research")
    TeamIdentityStack(app, "ResearchIdentity", platform=platform, team="research")
    with pytest.raises(RuntimeError, match=r"team 'research' .* no TeamAccessStack for the team"):
        app.synth()


def test_validate_names_both_accounts(capsys: pytest.CaptureFixture[str]) -> None:
    from hyperpod_tenancy import cli

    assert cli.main(["validate", str(platforms.EXAMPLES / "identity-center-account" / "platform.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == (
        f"Identity Center in account {IDENTITY_CENTER}: the permission sets and their assignments; the cluster "
        f"and every team stack in {WORKLOADS}."
    )
    assert any("HPT-CHARGEBACK-TAGS-PAYER" in line for line in lines)


def test_the_onboarding_command_sends_members_to_the_access_stack(capsys: pytest.CaptureFixture[str]) -> None:
    from hyperpod_tenancy import cli

    path = str(platforms.EXAMPLES / "identity-center-account" / "platform.yaml")
    assert cli.main(["onboarding", "research", path]) == 0
    out = capsys.readouterr().out
    assert "Known once deployed: outputs of stack ml-platform-org-Team-Research-Access " in out
    assert "sso_account_id = 111122223333" in out  # the assignment targets the workload account


@pytest.mark.parametrize(
    "edit",
    [{"fairnessBackend": "kueue"}, {"encryption": {"kmsKey": "create"}}],
    ids=["kueue-backend", "platform-key"],
)
def test_every_option_keeps_the_accounts_apart(edit: dict[str, Any], tmp_path: Path) -> None:
    """The other backend and a platform key: still nothing but permission sets, assignments and the Studio lookup in
    the Identity Center account, no import across accounts, and cdk-nag clean (the key's grant is in the referenced
    policy)."""
    data = {**platforms.example_data("identity-center-account"), **edit}
    synth = synthesize(platforms.platform_from_dict(data), tmp_path, nag=True, validate=True)
    account_of = {s.stack_name: s.account for s in _stacks(synth)}
    for name, template in synth.templates.items():
        if account_of[name] == IDENTITY_CENTER:
            assert _types(template) == _identity_center_types(synth, name)
            assert "Fn::ImportValue" not in str(template)
    (policy,) = _resources(synth.templates["ml-platform-org-Team-Research"], "AWS::IAM::ManagedPolicy")
    sids = [s["Sid"] for s in policy["PolicyDocument"]["Statement"]]
    assert ("TeamDataKeyThroughS3" in sids) == ("encryption" in edit)


def test_the_referenced_policy_name_and_path_are_what_identity_center_and_iam_accept() -> None:
    """AWS::SSO::PermissionSet CustomerManagedPolicyReference (CloudFormation User Guide): Name 1-128 characters of
    ``[\\w+=,.@-]``, Path 1-512 of ``((/[A-Za-z0-9\\.,\\+@=_-]+)*)/``; IAM managed policy names have the same limit.
    The longest names the policy allows (a 63-character cluster, the longest team name) still fit."""
    from hyperpod_tenancy.policy.rules._common import MAX_TEAM_NAME

    longest = names.permission_set_policy("c" * 63, "t" * MAX_TEAM_NAME)
    assert len(longest) <= 128 and re.fullmatch(r"[\w+=,.@-]+", longest)
    path = names.PERMISSION_SET_POLICY_PATH
    assert len(path) <= 512 and re.fullmatch(r"((/[A-Za-z0-9\.,\+@=_-]+)*)/", path)


def test_adding_a_team_adds_its_three_stacks_and_changes_no_other(tmp_path: Path) -> None:
    """The scale invariant in this layout: the fourth team adds its team, Identity Center and access stacks, and
    every other stack's template, asset manifest and dependencies stay the same bytes."""
    from scale import platform_data, synthesize_assembly, team_name

    from hyperpod_tenancy.policy import FairnessBackend

    def sized(n: int) -> Any:
        data = platform_data(list(range(n)), FairnessBackend.TASK_GOVERNANCE)
        data["identityCenter"]["account"] = IDENTITY_CENTER
        for team in data["teams"]:
            team["studio"] = False
        return synthesize_assembly(platforms.platform_from_dict(data), tmp_path / str(n))

    before, after = sized(3), sized(4)
    stack = "ml-platform-" + names.team_stack_id(team_name(3))
    assert sorted(set(after.templates) - set(before.templates)) == [
        stack,
        f"{stack}-Access",
        f"{stack}-Identity",
    ]
    for name in before.templates:
        assert before.templates[name] == after.templates[name], name
        assert before.assets.get(name) == after.assets.get(name), name
        assert before.dependencies[name] == after.dependencies[name], name


def test_a_role_timeout_given_to_the_team_stack_is_refused_not_ignored(tmp_path: Path) -> None:
    from hyperpod_tenancy.stacks import ClusterStack, TeamStack

    app = cdk.App(outdir=str(tmp_path))
    cluster = ClusterStack(app, "Cluster", platform=platforms.example("identity-center-account"))
    with pytest.raises(
        TenancyError, match=r"sso_role_timeout has no effect here.*Pass it to TeamAccessStack"
    ):
        TeamStack(
            app,
            "Research",
            cluster=cluster.cluster,
            team="research",
            sso_role_timeout=cdk.Duration.minutes(5),
        )
