"""A team in its own account: how its members reach the cluster, and how the platform team audits it.

Members sign in to the team's account (``examples/team-accounts``): onboarding writes their profile and kubeconfig
for it, the POSIX identity webhook knows them by the session Identity Center names, the team's Kubernetes objects
are those of any team, ``validate`` names the account and warns when a team moves, and the daily audit reads the
assignment and the access entries (against a moto server).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import platforms
import pytest
from control_plane import kubectl_binary
from moto_server import moto_server, refusing_sts
from synth import Synth, synthesize
from team_accounts import PLATFORM, RESEARCH, WORKLOADS, resources, stack_name, without_team_account_studio

from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.k8s.audit_record import team_expectation
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime.drift_audit import TeamExpectation


# ------------------------------------------------------------------ onboarding and the audit
def test_onboarding_signs_members_in_to_the_team_account_and_writes_the_kubeconfig_by_hand(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hyperpod_tenancy import cli

    assert (
        cli.main(["onboarding", "research", str(platforms.EXAMPLES / "team-accounts" / "platform.yaml")]) == 0
    )
    out = capsys.readouterr().out
    assert f"sso_account_id = {RESEARCH}" in out
    assert "aws eks update-kubeconfig" not in out  # it describes the cluster in the member's account
    assert (
        "--stack-name ml-platform-org-Team-Research-Account" in out and "ClusterStorageDataBucket" not in out
    )
    # its Studio domain is in its account: the domain's outputs are read from the team's Studio stack there
    assert (
        "outputs of stack ml-platform-org-Team-Research-Account and ml-platform-org-Team-Research-Studio"
        in out
    )
    assert (
        "--stack-name ml-platform-org-Team-Research-Studio --query \"Stacks[0].Outputs[?OutputKey=='StudioUrl']"
        in out
    )
    assert "is peered with the cluster's" in out
    facts = onboarding.onboarding_facts(platforms.example("team-accounts"), "research")
    commands = onboarding.kubeconfig_commands(facts)
    assert all(c in out for c in commands)
    # the commands, run by kubectl itself, write the context update-kubeconfig would write
    kubeconfig = tmp_path / "config"
    env = {"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"}
    kubectl = kubectl_binary()
    for command in commands:
        filled = command.replace(
            onboarding.ENDPOINT_PLACEHOLDER, "https://ABC.gr7.us-east-1.eks.amazonaws.com"
        )
        filled = filled.replace(onboarding.CA_PLACEHOLDER, "Q0EK")
        program, *args = filled.split()
        assert program == "kubectl"
        subprocess.run([kubectl, *args], env=env, check=True, capture_output=True)
    view = json.loads(
        subprocess.run(
            [kubectl, "config", "view", "--raw", "-o", "json"], env=env, check=True, capture_output=True
        ).stdout
    )
    assert view["current-context"] == facts.kube_context
    (context,) = view["contexts"]
    assert context["context"]["namespace"] == "hyperpod-ns-research"
    (cluster,) = view["clusters"]
    assert cluster["cluster"] == {
        "server": "https://ABC.gr7.us-east-1.eks.amazonaws.com",
        "certificate-authority-data": "Q0EK",
    }
    (user,) = view["users"]
    plugin = user["user"]["exec"]
    assert plugin["command"] == "aws"
    assert plugin["args"] == [
        "eks",
        "get-token",
        "--cluster-name",
        "shared-gpu",
        "--region",
        "us-east-1",
        "--output",
        "json",
    ]
    assert plugin["env"] == [{"name": "AWS_PROFILE", "value": facts.profile}]


def test_the_audit_record_names_the_team_account_and_its_policy() -> None:
    platform = platforms.example("team-accounts")
    expectation = team_expectation(platform, platform.team("research"), stack=f"{PLATFORM}/Team-Research")
    record = expectation.to_record()
    assert record["teamAccount"] == RESEARCH
    assert record["permissionSetPolicy"] == "/hyperpod-tenancy/hyperpod-tenancy-shared-gpu-research"
    assert TeamExpectation.from_record(record) == expectation
    vision = team_expectation(platform, platform.team("vision"), stack=f"{PLATFORM}/Team-Vision")
    assert "teamAccount" not in vision.to_record()


@pytest.fixture
def aws() -> Iterator[None]:
    """A moto server (real HTTP) that boto3's default session points at."""
    with moto_server():
        yield


def test_the_audit_judges_the_team_account_assignment_policy_and_entries(aws: None) -> None:
    """Identity Center in the cluster's account: the audit reads the permission set, expects its reference to the
    team account's policy, looks for the assignment in the team's account, and takes the team's Identity Center
    role there (which it cannot list) from its access entry."""
    import boto3

    from hyperpod_tenancy.runtime.drift_audit.access_entries import access_entry_findings
    from hyperpod_tenancy.runtime.drift_audit.identity_center import identity_center_findings

    data = platforms.example_data("team-accounts")
    del data["identityCenter"]["account"]
    # a domain in the team's account is assigned from an Identity Center stack
    without_team_account_studio(data)
    platform = platforms.platform_from_dict(data)
    exp = team_expectation(platform, platform.team("research"), stack=f"{PLATFORM}/Team-Research")
    sso, instance = boto3.client("sso-admin"), platform.identity_center.instance_arn
    arn = sso.create_permission_set(InstanceArn=instance, Name="Research")["PermissionSet"][
        "PermissionSetArn"
    ]
    path, _, name = str(exp.permission_set_policy).rpartition("/")
    sso.attach_customer_managed_policy_reference_to_permission_set(
        InstanceArn=instance,
        PermissionSetArn=arn,
        CustomerManagedPolicyReference={"Name": name, "Path": f"{path}/"},
    )
    assignment = {"InstanceArn": instance, "PermissionSetArn": arn, "PrincipalType": "GROUP"}
    sso.create_account_assignment(
        **assignment, TargetId=WORKLOADS, TargetType="AWS_ACCOUNT", PrincipalId=exp.group_id
    )
    (missing,) = identity_center_findings(sso, [exp], account=WORKLOADS)
    assert missing.kind == "assignment-missing" and RESEARCH in missing.object
    sso.create_account_assignment(
        **assignment, TargetId=RESEARCH, TargetType="AWS_ACCOUNT", PrincipalId=exp.group_id
    )
    assert identity_center_findings(sso, [exp], account=WORKLOADS) == []
    sso.attach_customer_managed_policy_reference_to_permission_set(
        InstanceArn=instance,
        PermissionSetArn=arn,
        CustomerManagedPolicyReference={"Name": "Admin", "Path": "/"},
    )
    (added,) = identity_center_findings(sso, [exp], account=WORKLOADS)
    assert added.kind == "permission-set-policy-added" and added.actual == "also attached: /Admin"
    # the access entries: the team's role in its account is its own; another principal mapped to its group is not
    group = names.kubernetes_group("research")
    role = f"arn:aws:iam::{RESEARCH}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Research_0123456789abcdef"
    entries = [{"principalArn": role, "kubernetesGroups": [group]}]
    assert access_entry_findings(boto3.client("iam"), entries, [exp], cluster="shared-gpu") == []
    intruder = {"principalArn": f"arn:aws:iam::{RESEARCH}:role/intruder", "kubernetesGroups": [group]}
    exp = dataclasses.replace(exp, permission_set_arn=arn)  # as the team stack records it
    (undeclared,) = access_entry_findings(
        boto3.client("iam"), [*entries, intruder], [exp], cluster="shared-gpu"
    )
    assert undeclared.kind == "access-entry-undeclared" and "intruder" in undeclared.object


def test_the_audit_reads_the_studio_domain_in_the_team_account_through_the_lookup_role(aws: None) -> None:
    """The domain is in the team's account: the audit lists it there through the team's lookup role, and checks
    its execution role; where the role cannot be assumed it says so rather than reporting the domain missing."""
    import boto3

    from hyperpod_tenancy.runtime.drift_audit.aws import AwsClients
    from hyperpod_tenancy.runtime.drift_audit.sagemaker import studio_findings

    platform = platforms.example("team-accounts")
    research = platform.team("research")
    execution = f"arn:aws:iam::{RESEARCH}:role/{names.team_studio_role('shared-gpu', 'research')}"
    exp = team_expectation(
        platform, research, stack=f"{PLATFORM}/Team-Research", execution_role_arn=execution
    )
    assert (
        exp.lookup_role_arn
        == f"arn:aws:iam::{RESEARCH}:role/{names.team_lookup_role('shared-gpu', 'research')}"
    )
    clients = AwsClients.of(boto3.session.Session(region_name="us-east-1"))
    cluster_account = clients.studio
    (missing,) = studio_findings(cluster_account, [exp], sagemaker_in=clients.sagemaker_in)
    assert missing.kind == "studio-domain-missing" and RESEARCH in missing.object
    assert missing.fix == f"cdk deploy '{PLATFORM}/Team-Research*'"  # its Studio stack among the team's
    team_account = clients.sagemaker_in(str(exp.lookup_role_arn))
    network = research.studio_network
    assert network is not None
    team_account.create_domain(
        DomainName=str(exp.studio_domain),
        AuthMode="SSO",
        DefaultUserSettings={"ExecutionRole": execution},
        SubnetIds=list(network.subnet_ids),
        VpcId=network.vpc_id,
    )
    assert studio_findings(cluster_account, [exp], sagemaker_in=clients.sagemaker_in) == []
    assert cluster_account.list_domains()["Domains"] == []  # it was read in the team's account
    # without the team's lookup role the audit cannot read that account, and says so
    assert studio_findings(cluster_account, [exp], sagemaker_in=None)[0].kind == "team-account-unreadable"
    wrong = dataclasses.replace(exp, execution_role_arn=f"arn:aws:iam::{RESEARCH}:role/other")
    (role,) = studio_findings(cluster_account, [wrong], sagemaker_in=clients.sagemaker_in)
    assert role.kind == "studio-execution-role"


# ------------------------------------------------------------------ the Kubernetes side
@pytest.fixture(scope="module")
def without_team_account(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """The example with ``research`` back in the cluster's account (``teams[0].account`` removed)."""
    data = platforms.example_data("team-accounts")
    del data["teams"][0]["account"]
    without_team_account_studio(data)  # as in its own account: no domain beside the cluster
    return synthesize(platforms.platform_from_dict(data), tmp_path_factory.mktemp("no-team-account"))


def test_the_kubernetes_side_is_the_one_of_the_cluster_account(
    team_accounts_example: Synth, without_team_account: Synth
) -> None:
    """The team's chart (namespace, RBAC, network policies, quotas) and its access entry's group are what they
    are in the cluster's account: the isolation, RBAC and admission suites on the real control plane judge exactly
    these objects. Only the account of the role the access entry maps differs."""

    def objects(synth: Synth) -> str:
        text = json.dumps(synth.stage.team_stacks["research"].tenant.chart.to_json(), sort_keys=True)
        return re.sub(r"\$\{Token\[[^\]]+\]\}", "TOKEN", text)

    assert objects(team_accounts_example) == objects(without_team_account)
    one = without_team_account.templates[stack_name("research", "-Access")]
    own = team_accounts_example.templates[stack_name("research", "-Access")]
    for template in (one, own):
        (entry,) = resources(template, "AWS::EKS::AccessEntry").values()
        assert entry["KubernetesGroups"] == [names.kubernetes_group("research")]
    (lookup,) = resources(one, "Custom::SsoRoleArn").values()
    assert "LookupRoleArn" not in lookup


def _caller(account: str, role: str, session: str) -> tuple[str, dict[str, list[str]]]:
    arn = f"arn:aws:sts::{account}:assumed-role/{role}/{session}"
    return arn, {
        "arn": [arn],
        "sessionName": [session],
        "canonicalArn": [f"arn:aws:iam::{account}:role/{role}"],
    }


def test_the_posix_identity_webhook_knows_members_signed_in_to_the_team_account() -> None:
    """A member's session in the team's account is the person Identity Center named it after; a session of a role
    whose session name the caller chooses (the team account's own roles) is nobody."""
    from hyperpod_tenancy.k8s.posix_identity import team_record, webhook_config
    from hyperpod_tenancy.webhook.config import parse_config, parse_team_record
    from hyperpod_tenancy.webhook.identity import Denied, Person, resolve

    platform = platforms.example("team-accounts")
    uids = (platform.cluster.posix_identity.uid_range.first, platform.cluster.posix_identity.uid_range.last)
    records = {
        names.namespace(t): parse_team_record(
            team_record(platform, t).to_document(), uid_range=uids, source=t
        )
        for t in ("research", "vision")
    }
    config = dataclasses.replace(parse_config(webhook_config(platform)), namespaces=records)
    research, vision = names.namespace("research"), names.namespace("vision")
    member, extra = _caller(RESEARCH, "AWSReservedSSO_Research_0123456789abcdef", "alice@example.com")
    resolution = resolve(config, namespace=research, username=member, extra=extra)
    assert isinstance(resolution, Person) and resolution.key == "sso:alice@example.com"
    assert isinstance(resolve(config, namespace=vision, username=member, extra=extra), Denied)
    for role in (
        names.team_pods_role("shared-gpu", "research"),
        names.team_lookup_role("shared-gpu", "research"),
    ):
        chosen, extra = _caller(RESEARCH, role, "alice@example.com")
        assert isinstance(resolve(config, namespace=research, username=chosen, extra=extra), Denied), role


def test_validate_names_the_team_account_and_warns_when_a_team_moves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from hyperpod_tenancy import cli

    path = platforms.EXAMPLES / "team-accounts" / "platform.yaml"
    assert cli.main(["validate", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == (
        f"Team research in its own account {RESEARCH}: its data, the role of its pods and its members' sign-in; "
        "its namespace and quota on the cluster."
    )
    # the team lived in the cluster's account before: moving it replaces its role and leaves its data behind
    data = platforms.example_data("team-accounts")
    del data["teams"][0]["account"]
    without_team_account_studio(data)
    baseline = tmp_path / "deployed.yaml"
    baseline.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert cli.main(["validate", str(path), "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert f"team 'research' moves from account {WORKLOADS} to {RESEARCH}" in out
    assert "teams/research/ of the shared data bucket" in out and "aws s3 sync" in out
    assert "Studio domain" not in out  # it had none beside the cluster
    # with a domain beside the cluster before: the move creates another one in the team's account
    del data["teams"][0]["studio"]
    baseline.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert cli.main(["validate", str(path), "--baseline", str(baseline)]) == 0
    out = capsys.readouterr().out
    assert f"Its Studio domain is created anew in {RESEARCH}" in out and "home directories" in out
    assert "copy what they keep in Studio" in out


def test_the_audit_reads_the_team_role_in_its_account_through_the_lookup_role(aws: None) -> None:
    """With the lookup role the audit lists the team's account: a missing role, a current role without an entry and
    a refused lookup role are findings; the team's current role with its entry is not."""
    import boto3

    from hyperpod_tenancy.runtime.drift_audit.access_entries import access_entry_findings
    from hyperpod_tenancy.runtime.drift_audit.aws import AwsClients

    platform = platforms.example("team-accounts")
    exp = team_expectation(platform, platform.team("research"), stack=f"{PLATFORM}/Team-Research")
    assert (
        exp.lookup_role_arn
        == f"arn:aws:iam::{RESEARCH}:role/{names.team_lookup_role('shared-gpu', 'research')}"
    )
    clients = AwsClients.of(boto3.session.Session())
    group = names.kubernetes_group("research")
    findings = access_entry_findings(clients.iam, [], [exp], cluster="shared-gpu", iam_in=clients.iam_in)
    assert [(f.kind, f.actual) for f in findings] == [
        (
            "sso-role-missing",
            f"no such role under /aws-reserved/sso.amazonaws.com/ in the team's account {RESEARCH}",
        )
    ]
    there = clients.iam_in(str(exp.lookup_role_arn))  # moto keeps the team account's state by its credentials
    role = there.create_role(
        RoleName="AWSReservedSSO_Research_0123456789abcdef",
        Path="/aws-reserved/sso.amazonaws.com/",
        AssumeRolePolicyDocument="{}",
    )["Role"]
    (stale,) = access_entry_findings(clients.iam, [], [exp], cluster="shared-gpu", iam_in=clients.iam_in)
    assert stale.kind == "access-entry-stale" and role["Arn"] in stale.expected
    entry = {"principalArn": role["Arn"], "kubernetesGroups": [group], "createdAt": role["CreateDate"]}
    assert (
        access_entry_findings(clients.iam, [entry], [exp], cluster="shared-gpu", iam_in=clients.iam_in) == []
    )

    with refusing_sts() as url:
        refusing = dataclasses.replace(clients, sts=boto3.client("sts", endpoint_url=url))
        (unreadable,) = access_entry_findings(
            refusing.iam, [entry], [exp], cluster="shared-gpu", iam_in=refusing.iam_in
        )
    assert unreadable.kind == "team-account-unreadable" and "AccessDenied" in unreadable.actual
