"""Team IAM documents: team A reaches its own prefix and cluster reads, nothing else.

Evaluated with ``tests/support/iam_eval.py``; the action sweeps use every operation botocore knows
for EKS, SageMaker and IAM, so a new wildcard or a widened resource shows up here.
"""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from iam_eval import Decision, evaluate, is_allowed, statements, wildcard_match

from hyperpod_tenancy.constructs._private import team_iam

ACCOUNT = "111122223333"
REGION = "us-east-1"
BUCKET = "arn:aws:s3:::shared-ml-data"
EKS_ARN = f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/shared-gpu"
HP_ARN = f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/abcd1234efgh"
DOMAIN_A = "d-teama0000001"
DOMAIN_B = "d-teamb0000002"


def ps_policy(team: str = "team-a", domain_id: str | None = DOMAIN_A) -> dict[str, Any]:
    """Team ``team``'s permission-set policy with the fixture ARNs."""
    return team_iam.permission_set_inline_policy(
        team=team,
        eks_cluster_arn=EKS_ARN,
        hyperpod_cluster_arn=HP_ARN,
        bucket_arn=BUCKET,
        domain_id=domain_id,
        region=REGION,
        account=ACCOUNT,
    )


def data_policy(team: str = "team-a") -> dict[str, Any]:
    """Team ``team``'s execution / pod-identity role policy."""
    return team_iam.team_data_policy(team=team, bucket_arn=BUCKET)


#: Both documents of team A: every S3 property must hold for each.
TEAM_A_DOCS = pytest.mark.parametrize(
    "doc", [ps_policy(), data_policy()], ids=["permission-set", "data-role"]
)


def obj(key: str, bucket: str = BUCKET) -> str:
    """ARN of an object."""
    return f"{bucket}/{key}"


def operations(service: str) -> list[str]:
    """Every API operation of ``service`` as an IAM action (``svc:Operation``)."""
    model = botocore.session.get_session().get_service_model(service)
    return [f"{service}:{op}" for op in model.operation_names]


# --------------------------------------------------------------------------- evaluator self-tests


def test_evaluator_admin_policy_allows_everything() -> None:
    """Non-vacuous: an admin policy is evaluated as allowed for arbitrary requests."""
    admin = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    for action, resource in [
        ("iam:CreateRole", "arn:aws:iam::111122223333:role/x"),
        ("s3:GetObject", obj("teams/team-b/secret")),
        ("sagemaker:DeleteCluster", HP_ARN),
        ("eks:CreateAccessEntry", EKS_ARN),
    ]:
        assert evaluate([admin], action, resource) is Decision.ALLOW


def test_evaluator_semantics() -> None:
    """Implicit deny, explicit deny wins, NotAction, case rules and conditions behave like IAM."""
    allow_s3 = {"Statement": [{"Effect": "Allow", "Action": "S3:Get*", "Resource": f"{BUCKET}/a/*"}]}
    deny_secret = {"Statement": {"Effect": "Deny", "Action": "s3:*", "Resource": f"{BUCKET}/a/secret*"}}
    assert evaluate([], "s3:GetObject", obj("a/x")) is Decision.IMPLICIT_DENY
    assert evaluate([allow_s3], "s3:getobject", obj("a/x/y")) is Decision.ALLOW  # action: case-insensitive
    assert evaluate([allow_s3], "s3:GetObject", obj("A/x")) is Decision.IMPLICIT_DENY  # resource: sensitive
    assert evaluate([allow_s3], "s3:PutObject", obj("a/x")) is Decision.IMPLICIT_DENY
    assert evaluate([allow_s3, deny_secret], "s3:GetObject", obj("a/secret.txt")) is Decision.EXPLICIT_DENY
    not_iam = {"Statement": [{"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}]}
    assert is_allowed(not_iam, "s3:ListBucket", BUCKET)
    assert not is_allowed(not_iam, "iam:PassRole", "*")
    assert wildcard_match("a?c", "abc")
    assert not wildcard_match("a?c", "abbc")

    cond = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": BUCKET,
                "Condition": {
                    "StringLike": {"s3:prefix": ["x/*"]},
                    "StringEquals": {"aws:RequestedRegion": "r"},
                },
            }
        ]
    }
    assert is_allowed(cond, "s3:ListBucket", BUCKET, {"s3:prefix": "x/y", "aws:RequestedRegion": "r"})
    assert is_allowed(cond, "s3:ListBucket", BUCKET, {"S3:Prefix": "x/", "aws:requestedregion": "r"})
    assert not is_allowed(cond, "s3:ListBucket", BUCKET, {"s3:prefix": "x/y", "aws:RequestedRegion": "R"})
    assert not is_allowed(cond, "s3:ListBucket", BUCKET, {"aws:RequestedRegion": "r"})  # key absent
    negated = {
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "s3:ListBucket",
                "Resource": BUCKET,
                "Condition": {"StringNotLike": {"s3:prefix": "secret/*"}},
            }
        ]
    }
    assert is_allowed(negated, "s3:ListBucket", BUCKET)  # absent key satisfies a negated operator
    assert not is_allowed(negated, "s3:ListBucket", BUCKET, {"s3:prefix": "secret/a"})


@pytest.mark.parametrize(
    "statement",
    [
        {
            "Effect": "Allow",
            "Action": "s3:*",
            "Resource": "*",
            "Condition": {"IpAddress": {"aws:SourceIp": "1"}},
        },
        {
            "Effect": "Allow",
            "Action": "s3:*",
            "Resource": "*",
            "Condition": {"ForAnyValue:StringLike": {"k": "v"}},
        },
        {"Effect": "Allow", "Action": "s3:*", "Resource": "${aws:username}"},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:*", "Resource": "*"},
    ],
)
def test_evaluator_refuses_what_it_does_not_implement(statement: dict[str, Any]) -> None:
    """Unsupported constructs raise instead of being ignored (a silent skip could hide a grant)."""
    with pytest.raises(NotImplementedError):
        evaluate([{"Statement": [statement]}], "s3:GetObject", obj("k"), {"aws:SourceIp": "1.2.3.4"})


# --------------------------------------------------------------------------- S3: own prefix


@TEAM_A_DOCS
@pytest.mark.parametrize(
    "action", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload"]
)
def test_team_reads_and_writes_its_own_prefix(doc: dict[str, Any], action: str) -> None:
    """Object operations anywhere under ``teams/team-a/`` are allowed."""
    for key in ("teams/team-a/data.parquet", "teams/team-a/ckpt/step-100/model.pt"):
        assert is_allowed(doc, action, obj(key)), (action, key)


@TEAM_A_DOCS
@pytest.mark.parametrize("prefix", ["teams/team-a/", "teams/team-a/ckpt/", "teams/team-a/ckpt/step-1"])
def test_team_lists_its_own_prefix(doc: dict[str, Any], prefix: str) -> None:
    """``ListBucket`` with a prefix under the team's own is allowed."""
    assert is_allowed(doc, "s3:ListBucket", BUCKET, {"s3:prefix": prefix})


# --------------------------------------------------------------------------- S3: everything else


@TEAM_A_DOCS
@pytest.mark.parametrize("action", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:GetObjectAcl"])
@pytest.mark.parametrize(
    "resource",
    [
        obj("teams/team-b/data.parquet"),
        obj("teams/team-ab/data.parquet"),  # shares the prefix string "team-a" but not the folder
        obj("teams/team-a"),  # the folder marker without its slash is outside the prefix
        obj("teams/shared.txt"),
        obj("README.md"),
        obj("teams/team-a/x", bucket="arn:aws:s3:::another-bucket"),
    ],
)
def test_team_cannot_touch_other_keys(doc: dict[str, Any], action: str, resource: str) -> None:
    """Other teams' keys, the bucket root and other buckets are denied."""
    assert evaluate([doc], action, resource) is Decision.IMPLICIT_DENY


@TEAM_A_DOCS
@pytest.mark.parametrize(
    "context",
    [
        {"s3:prefix": "teams/team-b/"},
        {"s3:prefix": "teams/team-ab/"},
        {"s3:prefix": "teams/"},
        {"s3:prefix": ""},
        {"s3:prefix": "teams/team-a"},  # no trailing slash would also list team-ab's keys
        {},  # no prefix at all: the whole bucket
    ],
    ids=["team-b", "team-ab", "teams-root", "empty", "no-slash", "no-prefix"],
)
def test_team_cannot_list_outside_its_prefix(doc: dict[str, Any], context: dict[str, str]) -> None:
    """``ListBucket`` on another team's prefix, a parent prefix or without a prefix is denied."""
    assert not is_allowed(doc, "s3:ListBucket", BUCKET, context)


@pytest.mark.parametrize("b_doc", [ps_policy("team-b", DOMAIN_B), data_policy("team-b")], ids=["ps", "data"])
def test_team_b_documents_mirror_team_a(b_doc: dict[str, Any]) -> None:
    """Team B's documents grant B's prefix and not A's (the team name is what scopes them)."""
    assert is_allowed(b_doc, "s3:PutObject", obj("teams/team-b/x"))
    assert not is_allowed(b_doc, "s3:PutObject", obj("teams/team-a/x"))
    assert is_allowed(b_doc, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/team-b/"})
    assert not is_allowed(b_doc, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/team-a/"})


# --------------------------------------------------------------------------- clusters, IAM, governance


SWEEP_RESOURCES = [
    "*",
    EKS_ARN,
    HP_ARN,
    f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/other-cluster",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster/zzzz9999yyyy",
    f"arn:aws:eks:{REGION}:{ACCOUNT}:access-entry/shared-gpu/role/{ACCOUNT}/x/1",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/cq-1",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster-scheduler-config/csc-1",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:user-profile/{DOMAIN_A}/alice",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:user-profile/{DOMAIN_B}/bob",
    f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:domain/{DOMAIN_A}",
    f"arn:aws:iam::{ACCOUNT}:role/team-a-role",
    f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_TeamA_0123456789abcdef",
]

PERMISSION_SET_GRANTS = {
    ("eks:DescribeCluster", EKS_ARN),
    ("sagemaker:DescribeCluster", HP_ARN),
    ("sagemaker:DescribeClusterNode", HP_ARN),
    ("sagemaker:ListClusterNodes", HP_ARN),
    (
        "sagemaker:CreatePresignedDomainUrl",
        f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:user-profile/{DOMAIN_A}/alice",
    ),
}


def sweep(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """Every (EKS/SageMaker/IAM action, sweep resource) pair ``doc`` allows."""
    actions = operations("eks") + operations("sagemaker") + operations("iam")
    return {(a, r) for a in actions for r in SWEEP_RESOURCES if is_allowed(doc, a, r)}


def test_permission_set_allows_exactly_the_cluster_reads_and_studio() -> None:
    """Of ~680 EKS/SageMaker/IAM actions on 13 resources, only describe/list-nodes and Studio pass."""
    swept = set(operations("eks") + operations("sagemaker"))
    assert {a for a, _ in PERMISSION_SET_GRANTS} <= swept  # the sweep covers the granted actions
    assert sweep(ps_policy()) == PERMISSION_SET_GRANTS


def test_permission_set_without_domain_has_no_studio_grant() -> None:
    """No domain, no ``CreatePresignedDomainUrl`` at all."""
    grants = sweep(ps_policy(domain_id=None))
    assert grants == {g for g in PERMISSION_SET_GRANTS if g[0] != "sagemaker:CreatePresignedDomainUrl"}


def test_data_policy_grants_nothing_outside_s3() -> None:
    """The execution / pod-identity role policy has no EKS, SageMaker or IAM rights."""
    assert sweep(data_policy()) == set()


@pytest.mark.parametrize("doc", [ps_policy(), data_policy()], ids=["permission-set", "data-role"])
@pytest.mark.parametrize(
    ("action", "resource"),
    [
        ("iam:CreateRole", "*"),
        ("iam:PassRole", f"arn:aws:iam::{ACCOUNT}:role/team-a-role"),
        ("iam:AttachRolePolicy", f"arn:aws:iam::{ACCOUNT}:role/team-a-role"),
        ("iam:PutRolePolicy", "*"),
        ("sagemaker:CreateComputeQuota", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/cq-1"),
        ("sagemaker:CreateComputeQuota", HP_ARN),
        ("sagemaker:UpdateComputeQuota", f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:compute-quota/cq-1"),
        (
            "sagemaker:UpdateClusterSchedulerConfig",
            f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:cluster-scheduler-config/c",
        ),
        ("sagemaker:UpdateClusterSchedulerConfig", HP_ARN),
        ("sagemaker:UpdateCluster", HP_ARN),
        ("sagemaker:BatchDeleteClusterNodes", HP_ARN),
        ("eks:CreateAccessEntry", EKS_ARN),
        ("eks:AssociateAccessPolicy", f"arn:aws:eks:{REGION}:{ACCOUNT}:access-entry/shared-gpu/role/x/1"),
        ("eks:UpdateClusterConfig", EKS_ARN),
        ("eks:ListClusters", "*"),
        ("sagemaker:ListClusters", "*"),
        ("sts:AssumeRole", f"arn:aws:iam::{ACCOUNT}:role/admin"),
        ("s3:PutBucketPolicy", BUCKET),
        ("s3:DeleteBucket", BUCKET),
    ],
)
def test_named_privileged_actions_are_denied(doc: dict[str, Any], action: str, resource: str) -> None:
    """The escalation and governance actions a team must never have."""
    assert evaluate([doc], action, resource) is Decision.IMPLICIT_DENY


# --------------------------------------------------------------------------- static shape


MUTATING_PREFIXES = ("Create", "Put", "Delete", "Update", "Attach", "Detach", "Associate", "Batch", "Tag")
READ_ONLY_PREFIXES = ("Get", "List", "Describe", "Head")


@pytest.mark.parametrize(
    "doc",
    [ps_policy(), ps_policy(domain_id=None), data_policy(), ps_policy("ml-platform-2", "d-x1")],
    ids=["permission-set", "no-domain", "data-role", "other-team"],
)
def test_no_wildcard_actions_and_no_star_resource_on_mutations(doc: dict[str, Any]) -> None:
    """No ``*``/``svc:*`` action; ``Resource: "*"`` only with read-only actions; Allow only."""
    for st in statements(doc):
        assert st["Effect"] == "Allow"
        assert "NotAction" not in st
        assert "NotResource" not in st
        actions = [st["Action"]] if isinstance(st["Action"], str) else st["Action"]
        resources = [st["Resource"]] if isinstance(st["Resource"], str) else st["Resource"]
        for action in actions:
            assert action != "*"
            service, name = action.split(":", 1)
            assert "*" not in name, action
            assert service in {"s3", "eks", "sagemaker"}
        if "*" in resources:
            for action in actions:
                assert action.split(":", 1)[1].startswith(READ_ONLY_PREFIXES), action
        for resource in resources:
            assert resource != "*"


def test_documents_only_concatenate_tokens() -> None:
    """Token-like ARNs pass through untouched; CDK accepts the result as an identity policy."""
    import aws_cdk as cdk
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_s3 as s3

    stack = cdk.Stack(cdk.App(), "S")
    bucket = s3.CfnBucket(stack, "Bucket")
    doc = team_iam.permission_set_inline_policy(
        team="team-a",
        eks_cluster_arn=cdk.Fn.import_value("EksArn"),
        hyperpod_cluster_arn=cdk.Fn.import_value("HyperPodArn"),
        bucket_arn=bucket.attr_arn,
        domain_id=cdk.Fn.import_value("DomainId"),
        region=cdk.Aws.REGION,
        account=cdk.Aws.ACCOUNT_ID,
        partition=cdk.Aws.PARTITION,
    )
    assert iam.PolicyDocument.from_json(doc).validate_for_identity_policy() == []
    resolved = stack.resolve(doc)
    by_sid = {st["Sid"]: st for st in resolved["Statement"]}
    assert by_sid["TeamPrefixObjects"]["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": ["Bucket", "Arn"]}, "/teams/team-a/*"]]
    }
    assert by_sid["ListTeamPrefixOnly"]["Resource"] == {"Fn::GetAtt": ["Bucket", "Arn"]}
    assert by_sid["DescribeSharedEksCluster"]["Resource"] == {"Fn::ImportValue": "EksArn"}
    studio = by_sid["OpenTeamStudioDomain"]["Resource"]["Fn::Join"][1]
    assert {"Fn::ImportValue": "DomainId"} in studio
    assert {"Ref": "AWS::Partition"} in studio
    data = team_iam.team_data_policy(team="team-a", bucket_arn=bucket.attr_arn)
    assert iam.PolicyDocument.from_json(data).validate_for_identity_policy() == []


@pytest.mark.parametrize("team", ["*", "team/a", "Team-A", "team-a-", "", "team?"])
def test_team_names_that_would_widen_grants_are_rejected(team: str) -> None:
    """A wildcard, slash or non-DNS name in the team would change what the prefix covers."""
    with pytest.raises(ValueError, match="DNS label"):
        data_policy(team)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("bucket_arn", "arn:aws:s3:::*"),
        ("eks_cluster_arn", f"arn:aws:eks:{REGION}:{ACCOUNT}:cluster/*"),
        ("hyperpod_cluster_arn", ""),
        ("domain_id", "d-*"),
        ("domain_id", "not-a-domain"),
    ],
)
def test_wildcard_or_malformed_inputs_are_rejected(field: str, value: str) -> None:
    """Concrete inputs with IAM wildcards (or a non-domain ID) are refused."""
    kwargs: dict[str, Any] = {
        "team": "team-a",
        "eks_cluster_arn": EKS_ARN,
        "hyperpod_cluster_arn": HP_ARN,
        "bucket_arn": BUCKET,
        "domain_id": DOMAIN_A,
        "region": REGION,
        "account": ACCOUNT,
        field: value,
    }
    with pytest.raises(ValueError, match=field):
        team_iam.permission_set_inline_policy(**kwargs)


# ------------------------------------------------------------------ Studio execution role
def studio_policy(domain_id: str = DOMAIN_A) -> dict[str, Any]:
    """Studio policy of the execution role of the team owning ``domain_id``."""
    return team_iam.studio_execution_policy(domain_id=domain_id, region=REGION, account=ACCOUNT)


def _sm(resource: str) -> str:
    return f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:{resource}"


# What Studio does for a user opening JupyterLab or Code Editor in a private or shared space
# ("Give your users access to spaces", https://docs.aws.amazon.com/sagemaker/latest/dg/studio-updated-jl-admin-guide-permissions.html)
STUDIO_REQUESTS = [
    ("sagemaker:CreateSpace", "space/{d}/alice-space"),
    ("sagemaker:UpdateSpace", "space/{d}/alice-space"),
    ("sagemaker:DescribeSpace", "space/{d}/alice-space"),
    ("sagemaker:DeleteSpace", "space/{d}/alice-space"),
    ("sagemaker:CreateApp", "app/{d}/alice-space/jupyterlab/default"),
    ("sagemaker:CreateApp", "app/{d}/alice-space/codeeditor/default"),
    ("sagemaker:DescribeApp", "app/{d}/alice-space/jupyterlab/default"),
    ("sagemaker:DeleteApp", "app/{d}/alice-space/jupyterlab/default"),
    ("sagemaker:DescribeDomain", "domain/{d}"),
    ("sagemaker:DescribeUserProfile", "user-profile/{d}/alice"),
]


@pytest.mark.parametrize(("action", "resource"), STUDIO_REQUESTS)
def test_studio_role_manages_apps_and_spaces_of_its_own_domain_only(action: str, resource: str) -> None:
    assert is_allowed(studio_policy(), action, _sm(resource.format(d=DOMAIN_A)))
    assert not is_allowed(studio_policy(), action, _sm(resource.format(d=DOMAIN_B))), "another team's domain"


def test_studio_role_tags_only_what_it_creates_in_its_domain() -> None:
    # Studio tags the apps and spaces it creates; AddTags is granted only as part of those calls
    # (sagemaker:TaggingAction, https://docs.aws.amazon.com/sagemaker/latest/dg/security_iam_id-based-policy-examples.html)
    app = _sm(f"app/{DOMAIN_A}/alice-space/jupyterlab/default")
    space = _sm(f"space/{DOMAIN_A}/alice-space")
    assert is_allowed(studio_policy(), "sagemaker:AddTags", app, {"sagemaker:TaggingAction": "CreateApp"})
    assert is_allowed(studio_policy(), "sagemaker:AddTags", space, {"sagemaker:TaggingAction": "CreateSpace"})
    assert not is_allowed(studio_policy(), "sagemaker:AddTags", app), "retagging an existing app"
    other = _sm(f"space/{DOMAIN_B}/bob-space")
    assert not is_allowed(
        studio_policy(), "sagemaker:AddTags", other, {"sagemaker:TaggingAction": "CreateSpace"}
    )
    profile = _sm(f"user-profile/{DOMAIN_A}/alice")
    assert not is_allowed(
        studio_policy(), "sagemaker:AddTags", profile, {"sagemaker:TaggingAction": "CreateApp"}
    )


def test_studio_role_cannot_change_the_domain_or_its_users() -> None:
    for action, resource in [
        ("sagemaker:UpdateDomain", f"domain/{DOMAIN_A}"),
        ("sagemaker:DeleteDomain", f"domain/{DOMAIN_A}"),
        ("sagemaker:CreateUserProfile", f"user-profile/{DOMAIN_A}/mallory"),
        ("sagemaker:UpdateUserProfile", f"user-profile/{DOMAIN_A}/alice"),
        ("sagemaker:CreatePresignedDomainUrl", f"user-profile/{DOMAIN_A}/alice"),
        ("sagemaker:CreateTrainingJob", "training-job/x"),
    ]:
        assert not is_allowed(studio_policy(), action, _sm(resource)), action


def test_studio_policy_sweep_grants_only_studio_actions() -> None:
    """Of every EKS/SageMaker/IAM action on the sweep resources, only Studio's own calls pass."""
    expected = set(
        team_iam.STUDIO_APP_ACTIONS
        + team_iam.STUDIO_SPACE_ACTIONS
        + team_iam.STUDIO_LIST_ACTIONS
        + ("sagemaker:DescribeDomain", "sagemaker:DescribeUserProfile")
    )
    granted = {a for a, _ in sweep(studio_policy())}
    assert granted <= expected
    assert set(team_iam.STUDIO_LIST_ACTIONS) <= granted


def test_studio_trust_is_limited_to_this_account() -> None:
    # confused-deputy prevention for roles SageMaker assumes
    # (https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html)
    assert team_iam.studio_trust_conditions(account=ACCOUNT) == {
        "StringEquals": {"aws:SourceAccount": ACCOUNT}
    }
    with pytest.raises(ValueError, match="wildcards"):
        team_iam.studio_trust_conditions(account="*")
