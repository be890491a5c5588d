"""A team in an account of its own, on the shared cluster of a workload account.

``examples/team-accounts`` gives ``research`` its own account (``teams[].account``), beside Identity Center in the
management account and the cluster in a workload account. The team then has four stacks: its account stack (its
bucket, its pods' target role, the lookup role, its permission set's policy), its team stack in the cluster's
account, its Identity Center stack (the permission set, assigned in the team's account) and its access stack (its
Identity Center role found through the lookup role, and the access entry). These tests check what a deploy across
the three accounts needs, and that the isolation holds across the account line: the IAM cases run the policies as
synthesized through the evaluator (``tests/support/iam_eval.py``), both sides of each cross-account request.
How members reach the cluster from the team's account is in ``test_team_accounts_members.py``.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
from iam_eval import is_allowed, is_allowed_across
from synth import Synth, synthesize
from team_accounts import (
    IDENTITY_CENTER,
    RESEARCH,
    WORKLOADS,
    imports_by_account,
    resources,
    stack_name,
    stacks,
    walk,
    without_team_account_studio,
)

from hyperpod_tenancy.constructs.tenant.team_account import eks_cluster_arn
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.stacks import TeamAccountStack

#: What a team's account stack may hold (a key only with ``encryption.kmsKey``).
TEAM_ACCOUNT_TYPES = {"AWS::S3::Bucket", "AWS::S3::BucketPolicy", "AWS::IAM::Role", "AWS::IAM::ManagedPolicy"}
#: The team's Studio stack in its account: the domain, its routes and group, the peering's lookup, the application.
TEAM_STUDIO_TYPES = {
    "AWS::SageMaker::Domain",
    "AWS::SageMaker::StudioLifecycleConfig",
    "AWS::EC2::Route",
    "AWS::EC2::SecurityGroup",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "AWS::SSM::Parameter",
    "Custom::AWS",
    "AWS::Lambda::Function",
    "AWS::Logs::LogGroup",
}
#: The team's Identity Center stack: its permission set, and its Studio domain's assignment with the lookup.
IDENTITY_CENTER_TYPES = {
    "AWS::SSO::PermissionSet",
    "AWS::SSO::Assignment",
    "AWS::SSO::ApplicationAssignment",
    "Custom::AWS",
    "AWS::Lambda::Function",
    "AWS::IAM::Role",
    "AWS::IAM::Policy",
    "AWS::Logs::LogGroup",
}
#: A concrete name for the team's bucket, whose ARN the templates hold as ``Fn::GetAtt``.
BUCKET_ARN = "arn:aws:s3:::research-data-example"


def _types(template: dict[str, Any]) -> set[str]:
    return {r["Type"] for r in template["Resources"].values()}


def _resolve(value: Any, template: dict[str, Any]) -> Any:
    """The value with the bucket's ``Fn::GetAtt`` Arn as :data:`BUCKET_ARN` and ``Fn::Join`` joined."""
    if isinstance(value, list):
        return [_resolve(v, template) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::GetAtt" in value:
        logical, attribute = value["Fn::GetAtt"]
        assert template["Resources"][logical]["Type"] == "AWS::S3::Bucket" and attribute == "Arn", value
        return BUCKET_ARN
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(_resolve(p, template) for p in parts)
    return {k: _resolve(v, template) for k, v in value.items()}


def test_the_example_names_three_accounts() -> None:
    platform = platforms.example("team-accounts")
    research = platform.team("research")
    assert (platform.account, platform.identity_center_account, platform.team_account(research)) == (
        WORKLOADS,
        IDENTITY_CENTER,
        RESEARCH,
    )
    assert [t.name for t in platform.teams_in_own_accounts] == ["research"]
    assert not platform.team_in_own_account(platform.team("vision"))


def test_each_account_holds_only_itsresources(team_accounts_example: Synth) -> None:
    synth = team_accounts_example
    by_account: dict[str, list[str]] = {}
    for stack in stacks(synth):
        by_account.setdefault(stack.account, []).append(stack.stack_name)
        types = _types(synth.templates[stack.stack_name])
        if stack.account == IDENTITY_CENTER:
            studio = stack.stack_name == stack_name("research", "-Identity")  # the one team with Studio
            expected = (
                IDENTITY_CENTER_TYPES if studio else {"AWS::SSO::PermissionSet", "AWS::SSO::Assignment"}
            )
            assert types == expected, stack.stack_name
        elif stack.account == RESEARCH:
            studio = stack.stack_name.endswith("-Studio")
            assert types == (TEAM_STUDIO_TYPES if studio else TEAM_ACCOUNT_TYPES), stack.stack_name
        else:
            assert not {t for t in types if t.startswith("AWS::SSO::")}, stack.stack_name
            assert "AWS::SageMaker::Domain" not in types, stack.stack_name
    # the team account holds the team's account and Studio stacks only, and names no other team
    assert by_account[RESEARCH] == [stack_name("research", "-Account"), stack_name("research", "-Studio")]
    for name in by_account[RESEARCH]:
        text = json.dumps(synth.templates[name])
        assert "vision" not in text and "inference" not in text
    # the cluster, the associations, the access entries and the lookups: only in the cluster's account
    for kind in (
        "AWS::SageMaker::Cluster",
        "AWS::EKS::PodIdentityAssociation",
        "AWS::EKS::AccessEntry",
        "Custom::SsoRoleArn",
    ):
        holders = {s.account for s in stacks(synth) if kind in _types(synth.templates[s.stack_name])}
        assert holders == {WORKLOADS}, kind
    # the team keeps no data in the cluster's account: no role of its stack reaches the shared data bucket
    assert "s3:" not in json.dumps(resources(synth.templates[stack_name("research")], "AWS::IAM::Role"))
    assert not resources(synth.templates[stack_name("research")], "AWS::IAM::ManagedPolicy")


def test_nothing_crosses_the_accounts_as_a_cloudformation_reference(team_accounts_example: Synth) -> None:
    imports = imports_by_account(team_accounts_example)
    assert imports  # the team stacks do import the cluster's attributes, within the cluster's account
    assert [(name, mine, theirs) for name, mine, theirs in imports if mine != theirs] == []
    account_stack = team_accounts_example.templates[stack_name("research", "-Account")]
    assert not any(isinstance(v, dict) and "Fn::ImportValue" in v for v in walk(account_stack))
    # its one export, the bucket's ARN, is the Studio stack's, in the same account
    assert len([o for o in account_stack["Outputs"].values() if "Export" in o]) == 1
    assert {(n, mine) for n, mine, theirs in imports if theirs == RESEARCH} == {
        (stack_name("research", "-Studio"), RESEARCH)
    }


def test_the_deploy_order_is_stack_dependencies(team_accounts_example: Synth) -> None:
    assembly = team_accounts_example.stage.synth()
    depends = {
        s.stack_name: {d.id for d in s.dependencies if isinstance(d, cdk.cx_api.CloudFormationStackArtifact)}
        for s in assembly.stacks
    }
    by_name = {s.stack_name: s.id for s in assembly.stacks}
    account, team, studio, identity, access = (
        stack_name("research", s) for s in ("-Account", "", "-Studio", "-Identity", "-Access")
    )
    assert by_name[account] in depends[team]  # target role, lookup role, peering role and policy exist first
    assert by_name[team] in depends[studio]  # the peering is accepted before its routes
    assert by_name[studio] in depends[identity]  # the domain exists before its group is assigned
    assert by_name[identity] in depends[access]  # the role exists once the assignment is provisioned
    assert depends[account] == set()


def test_the_names_that_cross_agree_on_both_sides(team_accounts_example: Synth) -> None:
    synth = team_accounts_example
    account = synth.templates[stack_name("research", "-Account")]
    roles = {p["RoleName"]: p for p in resources(account, "AWS::IAM::Role").values()}
    (association,) = resources(
        synth.templates[stack_name("research")], "AWS::EKS::PodIdentityAssociation"
    ).values()
    pods = names.team_pods_role("shared-gpu", "research")
    assert association["TargetRoleArn"] == f"arn:aws:iam::{RESEARCH}:role/{pods}"
    assert association["Namespace"] == "hyperpod-ns-research"
    (source,) = (
        p
        for p in resources(synth.templates[stack_name("research")], "AWS::IAM::Role").values()
        if p.get("RoleName") == names.team_pods_source_role("shared-gpu", "research")
    )
    trust = roles[pods]["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]
    assert trust["ArnEquals"]["aws:PrincipalArn"] == f"arn:aws:iam::{WORKLOADS}:role/{source['RoleName']}"
    assert trust["StringEquals"]["aws:RequestTag/eks-cluster-arn"] == eks_cluster_arn(
        synth.platform, partition="aws"
    )
    (lookup,) = resources(synth.templates[stack_name("research", "-Access")], "Custom::SsoRoleArn").values()
    lookup_name = names.team_lookup_role("shared-gpu", "research")
    assert lookup["LookupRoleArn"] == f"arn:aws:iam::{RESEARCH}:role/{lookup_name}" and lookup_name in roles
    (permission_set,) = resources(
        synth.templates[stack_name("research", "-Identity")], "AWS::SSO::PermissionSet"
    ).values()
    (policy,) = resources(account, "AWS::IAM::ManagedPolicy").values()
    assert permission_set["CustomerManagedPolicyReferences"] == [
        {"Name": policy["ManagedPolicyName"], "Path": policy["Path"]}
    ]
    (assignment,) = resources(
        synth.templates[stack_name("research", "-Identity")], "AWS::SSO::Assignment"
    ).values()
    assert assignment["TargetId"] == RESEARCH  # members sign in to the team's account
    (vision,) = resources(synth.templates[stack_name("vision", "-Identity")], "AWS::SSO::Assignment").values()
    assert vision["TargetId"] == WORKLOADS
    (entry,) = resources(synth.templates[stack_name("research", "-Access")], "AWS::EKS::AccessEntry").values()
    assert entry["KubernetesGroups"] == [names.kubernetes_group("research")] and "AccessPolicies" not in entry


# ------------------------------------------------------------------ IAM across the account line
@pytest.fixture(scope="module")
def iam_documents(team_accounts_example: Synth) -> dict[str, Any]:
    """The documents as synthesized: the pods' two roles, another team's pods' role, the member policy."""
    synth = team_accounts_example
    account = synth.templates[stack_name("research", "-Account")]
    roles = {p["RoleName"]: p for p in resources(account, "AWS::IAM::Role").values()}
    target = roles[names.team_pods_role("shared-gpu", "research")]

    def identity(template: dict[str, Any], role: dict[str, Any]) -> list[dict[str, Any]]:
        return [_resolve(p["PolicyDocument"], template) for p in role.get("Policies", [])]

    source = next(
        p
        for p in resources(synth.templates[stack_name("research")], "AWS::IAM::Role").values()
        if p.get("RoleName") == names.team_pods_source_role("shared-gpu", "research")
    )
    vision_roles = resources(synth.templates[stack_name("vision")], "AWS::IAM::Role")
    vision = next(p for k, p in vision_roles.items() if k.startswith("TenantWorkloadRole"))
    (member,) = resources(account, "AWS::IAM::ManagedPolicy").values()
    return {
        "target_arn": f"arn:aws:iam::{RESEARCH}:role/{target['RoleName']}",
        "trust": target["AssumeRolePolicyDocument"],
        "target": identity(account, target),
        "source_arn": f"arn:aws:iam::{WORKLOADS}:role/{source['RoleName']}",
        "source": identity(synth.templates[stack_name("research")], source),
        "vision": [p["PolicyDocument"] for p in vision.get("Policies", [])],
        "member": [_resolve(member["PolicyDocument"], account)],
    }


def _tags(namespace: str = "hyperpod-ns-research", cluster: str | None = None) -> dict[str, str]:
    return {
        "aws:RequestTag/eks-cluster-arn": cluster or f"arn:aws:eks:us-east-1:{WORKLOADS}:cluster/shared-gpu",
        "aws:RequestTag/kubernetes-namespace": namespace,
        "aws:RequestTag/kubernetes-service-account": "team-workloads",
    }


@pytest.mark.parametrize("action", ["sts:AssumeRole", "sts:TagSession"])
def test_the_team_pods_chain_into_their_target_role(iam_documents: dict[str, Any], action: str) -> None:
    d = iam_documents
    assert is_allowed_across(
        d["source"],
        d["trust"],
        principal=d["source_arn"],
        action=action,
        resource=d["target_arn"],
        context=_tags(),
    )


@pytest.mark.parametrize(
    ("case", "tags"),
    [
        ("another namespace", _tags(namespace="hyperpod-ns-vision")),
        ("another cluster", _tags(cluster=f"arn:aws:eks:us-east-1:{WORKLOADS}:cluster/other")),
        ("no session tags", {}),
    ],
)
def test_the_target_role_refuses_sessions_of_other_namespaces_or_clusters(
    iam_documents: dict[str, Any], case: str, tags: dict[str, str]
) -> None:
    d = iam_documents
    assert not is_allowed_across(
        d["source"],
        d["trust"],
        principal=d["source_arn"],
        action="sts:AssumeRole",
        resource=d["target_arn"],
        context=tags,
    ), case


def test_another_team_cannot_name_the_target_role(iam_documents: dict[str, Any]) -> None:
    d = iam_documents
    vision = f"arn:aws:iam::{WORKLOADS}:role/vision-pods"
    # vision's pods' role may not assume it, and the trust names research's source role only
    assert not is_allowed_across(
        d["vision"],
        d["trust"],
        principal=vision,
        action="sts:AssumeRole",
        resource=d["target_arn"],
        context=_tags(),
    )


def test_an_allow_on_one_side_only_is_refused(iam_documents: dict[str, Any]) -> None:
    d = iam_documents
    everything = [
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:*", "Resource": "*"}]}
    ]
    # the identity side allows (an admin of the cluster's account), the trust does not name the caller
    admin = f"arn:aws:iam::{WORKLOADS}:role/Admin"
    assert not is_allowed_across(
        everything,
        d["trust"],
        principal=admin,
        action="sts:AssumeRole",
        resource=d["target_arn"],
        context=_tags(),
    )
    # the trust allows the source role, but its identity policy does not (its chain statement removed)
    assert not is_allowed_across(
        [],
        d["trust"],
        principal=d["source_arn"],
        action="sts:AssumeRole",
        resource=d["target_arn"],
        context=_tags(),
    )
    # and the source role may assume no other role of the team's account
    other = f"arn:aws:iam::{RESEARCH}:role/{names.team_lookup_role('shared-gpu', 'research')}"
    assert not is_allowed(d["source"], "sts:AssumeRole", other)


def test_the_target_role_reaches_the_team_prefix_of_its_own_bucket_only(
    iam_documents: dict[str, Any],
) -> None:
    target, member = iam_documents["target"], iam_documents["member"]
    for policies in (target, member):
        assert is_allowed(policies, "s3:GetObject", f"{BUCKET_ARN}/teams/research/x.pt")
        assert is_allowed(policies, "s3:PutObject", f"{BUCKET_ARN}/teams/research/ckpt/1")
        assert not is_allowed(policies, "s3:GetObject", f"{BUCKET_ARN}/teams/vision/x.pt")
        assert not is_allowed(policies, "s3:GetObject", "arn:aws:s3:::shared-data-bucket/teams/research/x.pt")
        assert not is_allowed(policies, "s3:ListBucket", BUCKET_ARN, {"s3:prefix": "teams/"})
        assert is_allowed(policies, "s3:ListBucket", BUCKET_ARN, {"s3:prefix": "teams/research/"})
    # the pods' role grants nothing outside S3; the member may also read its account stack's outputs
    assert not is_allowed(target, "iam:ListRoles", "*")
    assert not is_allowed(target, "s3:DeleteBucket", BUCKET_ARN)


# ------------------------------------------------------------------ validation and guards
def test_a_user_app_without_the_team_account_stack_is_refused(tmp_path: Path) -> None:
    from hyperpod_tenancy.stacks import ClusterStack, TeamAccessStack, TeamIdentityStack, TeamStack

    platform = platforms.example("team-accounts")
    app = cdk.App(outdir=str(tmp_path))
    cluster = ClusterStack(app, "Cluster", platform=platform)
    TeamStack(app, "Research", cluster=cluster.cluster, team="research")
    TeamIdentityStack(app, "ResearchIdentity", platform=platform, team="research")
    TeamAccessStack(app, "ResearchAccess", cluster=cluster.cluster, team="research")
    with pytest.raises(
        RuntimeError, match=r"team 'research' lives in its own account 444455556666.* no TeamAccountStack"
    ):
        app.synth()


def test_the_account_stack_refuses_a_team_of_the_cluster_account() -> None:
    app = cdk.App(outdir=tempfile.mkdtemp())
    with pytest.raises(TenancyError, match=r"team 'vision' lives in the cluster's account 111122223333"):
        TeamAccountStack(app, "Vision", platform=platforms.example("team-accounts"), team="vision")


def test_grants_on_the_cluster_account_are_refused_for_a_team_in_its_own_account(
    team_accounts_example: Synth,
) -> None:
    from aws_cdk import aws_iam as iam

    tenant = team_accounts_example.stage.team_stacks["research"].tenant
    assert tenant.in_own_account and tenant.execution_role is None
    assert (
        tenant.target_role_arn
        == f"arn:aws:iam::{RESEARCH}:role/{names.team_pods_role('shared-gpu', 'research')}"
    )
    role = iam.Role(tenant, "Reader", assumed_by=iam.AccountRootPrincipal())
    with pytest.raises(
        TenancyError, match=r"keeps its data in its own account 444455556666.*TeamAccountStack"
    ):
        tenant.grant_read_data(role)
    with pytest.raises(TenancyError, match=r"signs in to its own account 444455556666"):
        tenant.allow_in_permission_set({"Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "*"})


def test_with_kueue_and_a_platform_key_the_team_account_keeps_its_own_key(tmp_path: Path) -> None:
    """The Kueue backend and ``encryption.kmsKey``: cdk-nag clean, and the team's data under a key of its account."""
    data = platforms.example_data("team-accounts")
    data["fairnessBackend"] = "kueue"
    data["encryption"] = {"kmsKey": "create"}
    synth = synthesize(platforms.platform_from_dict(data), tmp_path, nag=True)  # raises on any finding
    account = synth.templates[stack_name("research", "-Account")]
    assert _types(account) == TEAM_ACCOUNT_TYPES | {"AWS::KMS::Key"}
    ((key_id, key),) = ((k, r) for k, r in account["Resources"].items() if r["Type"] == "AWS::KMS::Key")
    assert key["DeletionPolicy"] == "Retain" and key["Properties"]["EnableKeyRotation"] is True
    (bucket,) = (
        p for k, p in resources(account, "AWS::S3::Bucket").items() if k.startswith("TeamDataBucket")
    )
    rule = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert rule["SSEAlgorithm"] == "aws:kms" and rule["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}
    pods = next(p for p in resources(account, "AWS::IAM::Role").values() if p["RoleName"].endswith("-pods"))
    (statement,) = (
        s for s in pods["Policies"][0]["PolicyDocument"]["Statement"] if s["Sid"] == "TeamDataKeyThroughS3"
    )
    assert statement["Condition"] == {"StringEquals": {"kms:ViaService": "s3.us-east-1.amazonaws.com"}}
    # the team stack in the cluster's account does not use the platform key for the team's data
    assert "kms:" not in json.dumps(resources(synth.templates[stack_name("research")], "AWS::IAM::Role"))


# ------------------------------------------------------------------ the evaluator's cross-account logic
def _policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": list(statements)}


def test_the_evaluator_needs_both_sides_across_accounts_and_one_within() -> None:
    reader = f"arn:aws:iam::{WORKLOADS}:role/reader"
    identity = [
        _policy({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3::*:bucket/key"})
    ]
    everyone = {"Action": "s3:*", "Resource": "*"}
    by_account = _policy(
        {"Effect": "Allow", "Principal": {"AWS": f"arn:aws:iam::{WORKLOADS}:root"}, **everyone}
    )
    silent = _policy({"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::555555555555:root"}, **everyone})
    deny = _policy({"Effect": "Deny", "Principal": "*", **everyone})

    def read(policies: list[dict[str, Any]], bucket_policy: dict[str, Any], owner: str) -> bool:
        # the object's ARN names the bucket owner's account, which decides whether the request crosses accounts
        return is_allowed_across(
            policies,
            bucket_policy,
            principal=reader,
            action="s3:GetObject",
            resource=f"arn:aws:s3::{owner}:bucket/key",
        )

    assert read(identity, by_account, RESEARCH)  # both sides allow
    assert not read(identity, silent, RESEARCH)  # the identity side only
    assert not read([], by_account, RESEARCH)  # the resource side only
    assert read(identity, silent, WORKLOADS)  # within one account the identity policy suffices
    assert not read(identity, deny, WORKLOADS)  # an explicit deny wins
    # a role's trust must allow even within one account; naming only the account leaves it to the identity policy
    role = f"arn:aws:iam::{WORKLOADS}:role/target"
    trust_account = _policy(
        {
            "Effect": "Allow",
            "Principal": {"AWS": f"arn:aws:iam::{WORKLOADS}:root"},
            "Action": "sts:AssumeRole",
        }
    )
    trust_arn = _policy({"Effect": "Allow", "Principal": {"AWS": reader}, "Action": "sts:AssumeRole"})
    may_assume = [_policy({"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": role})]

    def assume(policies: list[dict[str, Any]], trust: dict[str, Any]) -> bool:
        return is_allowed_across(policies, trust, principal=reader, action="sts:AssumeRole", resource=role)

    assert not assume([], trust_account)
    assert assume(may_assume, trust_account)
    assert assume([], trust_arn)
    assert not assume(may_assume, silent)


def test_adding_a_team_in_its_own_account_changes_no_otherstack_name(
    team_accounts_example: Synth, tmp_path: Path
) -> None:
    """Once one team has an account of its own, another one adds its four stacks and changes nothing else."""
    data = platforms.example_data("team-accounts")
    audio = json.loads(json.dumps(data["teams"][2]))
    audio.update(name="audio", account="777788889999")
    audio["identity"] = {"groupId": "906754abcd-44444444-aaaa-bbbb-cccc-444444444444", "posixGid": 20004}
    audio["compute"]["quotas"] = {"ml.g5.12xlarge": 0}
    data["teams"].append(audio)
    more = synthesize(platforms.platform_from_dict(data), tmp_path)
    added = set(more.templates) - set(team_accounts_example.templates)
    assert added == {stack_name("audio", s) for s in ("", "-Account", "-Identity", "-Access")}
    for name, template in team_accounts_example.templates.items():
        assert more.templates[name] == template, name


def test_the_cluster_account_may_assume_the_lookup_roles_only_once_a_team_has_its_own_account(
    team_accounts_example: Synth, reference: Synth
) -> None:
    """The role lookup and the daily audit assume the teams' lookup roles, and nothing else of another account."""

    def assumable(synth: Synth) -> list[Any]:
        shared = [synth.templates[f"{synth.platform.name}-{s}"] for s in ("Cluster", "Chargeback")]
        return [
            s["Resource"]
            for template in shared
            for policy in resources(template, "AWS::IAM::Policy").values()
            for s in policy["PolicyDocument"]["Statement"]
            if "sts:AssumeRole" in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
            and "lookup" in json.dumps(s["Resource"])
        ]

    found = assumable(team_accounts_example)
    assert len(found) == 2  # the role lookup's poller (cluster stack) and the daily audit (chargeback stack)
    assert all(
        json.dumps(r).rstrip('"]}').endswith(":iam::*:role/hyperpod-tenancy-*-lookup") for r in found
    ), found
    assert assumable(reference) == []


def test_the_team_account_stack_carries_the_cost_allocation_tags(team_accounts_example: Synth) -> None:
    """Its bucket's lines on the team account's bill name the cluster, the team and its cost center."""
    account = team_accounts_example.templates[stack_name("research", "-Account")]
    (bucket,) = (
        p for k, p in resources(account, "AWS::S3::Bucket").items() if k.startswith("TeamDataBucket")
    )
    tags = {t["Key"]: t["Value"] for t in bucket["Tags"]}
    assert tags == {
        "hyperpod-tenancy:cluster": "shared-gpu",
        "hyperpod-tenancy:team": "research",
        "hyperpod-tenancy:cost-center": "research",
    }


@pytest.mark.parametrize(
    ("cluster", "team"), [("shared-gpu", "research"), ("c" * 63, "t" * 63), ("a" * 40, "b")]
)
def test_the_fixed_role_names_fit_iam_and_stay_apart(cluster: str, team: str) -> None:
    made = [
        names.team_pods_role(cluster, team),
        names.team_pods_source_role(cluster, team),
        names.team_lookup_role(cluster, team),
    ]
    assert all(len(n) <= 64 and n.startswith("hyperpod-tenancy-") for n in made), made
    assert [n.rsplit("-", 1)[1] for n in made] == ["pods", "workload", "lookup"]
    assert (
        names.team_pods_role(cluster, team) != names.team_pods_role(cluster, team + "x")[:64]
        or len(team) < 40
    )
    # another team of a long-named cluster gets other names (the hash keeps them apart where the cut would not)
    assert names.team_lookup_role(cluster, team) != names.team_lookup_role(cluster, team[:-1] + "z")


def test_with_identity_center_in_the_cluster_account_the_team_stack_assigns_in_the_team_account(
    tmp_path: Path,
) -> None:
    """The other Identity Center layout: no Identity Center or access stack; the team stack holds the permission set
    (referencing the team account's policy), its assignment in the team's account, the lookup through the team's
    lookup role and the access entry. cdk-nag clean."""
    data = platforms.example_data("team-accounts")
    del data["identityCenter"]["account"]
    # a domain in the team's account is assigned from an Identity Center stack
    without_team_account_studio(data)
    synth = synthesize(platforms.platform_from_dict(data), tmp_path, nag=True)  # raises on any finding
    assert sorted(n for n in synth.templates if "Research" in n) == [
        stack_name("research"),
        stack_name("research", "-Account"),
    ]
    team = synth.templates[stack_name("research")]
    (permission_set,) = resources(team, "AWS::SSO::PermissionSet").values()
    assert "InlinePolicy" not in permission_set
    (policy,) = resources(
        synth.templates[stack_name("research", "-Account")], "AWS::IAM::ManagedPolicy"
    ).values()
    assert permission_set["CustomerManagedPolicyReferences"] == [
        {"Name": policy["ManagedPolicyName"], "Path": policy["Path"]}
    ]
    (assignment,) = resources(team, "AWS::SSO::Assignment").values()
    assert assignment["TargetId"] == RESEARCH
    (lookup,) = resources(team, "Custom::SsoRoleArn").values()
    assert (
        lookup["LookupRoleArn"]
        == f"arn:aws:iam::{RESEARCH}:role/{names.team_lookup_role('shared-gpu', 'research')}"
    )
    (entry,) = resources(team, "AWS::EKS::AccessEntry").values()
    assert entry["PrincipalArn"] == {"Fn::GetAtt": ["TenantSsoRole", "RoleArn"]} or "SsoRole" in json.dumps(
        entry
    )
    # members read no stack of the cluster's account: the team stack grants no DescribeStacks to a permission set
    # that is provisioned in another account
    assert "cloudformation:DescribeStacks" not in json.dumps(permission_set)


def test_the_access_entry_of_another_account_is_a_standard_one(team_accounts_example: Synth) -> None:
    """ "If the type is STANDARD, the ARN can be in the same, or different, AWS account than the account that your
    cluster is in" (EKS User Guide, "Create access entries"); any other type must be of the cluster's account.
    The entry also needs the role to exist when it is created: its ARN is the lookup's result, which waits for it."""
    template = team_accounts_example.templates[stack_name("research", "-Access")]
    (entry,) = resources(template, "AWS::EKS::AccessEntry").values()
    assert entry["Type"] == "STANDARD"
    assert entry["PrincipalArn"] == {"Fn::GetAtt": ["SsoRole", "RoleArn"]}
