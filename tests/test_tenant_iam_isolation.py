"""IAM isolation proven on the synthesized templates: every team's roles and permission set, as deployed."""

from __future__ import annotations

from typing import Any

import pytest
from iam_eval import is_allowed
from synth import Synth, one, resources_of

BUCKET = "arn:aws:s3:::shared-data"
EKS = "arn:aws:eks:us-east-1:111122223333:cluster/shared-gpu"
HYPERPOD = "arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdefghijkl"
OTHER_EKS = "arn:aws:eks:us-east-1:111122223333:cluster/another"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": "111122223333"}


def _concrete(value: Any, team: str) -> Any:
    """Replace intrinsics with concrete ARNs; an intrinsic we do not know fails the test."""
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key.startswith("Fn::") or key == "Ref":
                return _intrinsic(key, arg, team)
        return {k: _concrete(v, team) for k, v in value.items()}
    if isinstance(value, list):
        return [_concrete(v, team) for v in value]
    return value


def _intrinsic(key: str, arg: Any, team: str) -> str:
    if key == "Fn::Join":
        return str(arg[0]).join(str(_concrete(p, team)) for p in arg[1])
    if key == "Fn::ImportValue":
        imports = {"DataBucket": BUCKET, "ClusterEks": EKS, "ClusterArn": HYPERPOD}
        (arn,) = [arn for marker, arn in imports.items() if marker in arg] or [f"unknown import {arg}"]
        assert arn.startswith("arn:"), arn
        return arn
    if key == "Ref" and arg in PSEUDO:
        return PSEUDO[arg]
    if key == "Fn::GetAtt" and arg[1] == "DomainId":
        return f"d-{team}domain"
    raise AssertionError(f"unexpected intrinsic {key}: {arg}")


def _team_documents(synth: Synth, team: str) -> dict[str, list[dict[str, Any]]]:
    template = synth.team(team)
    documents: dict[str, list[dict[str, Any]]] = {}
    _, permission_set = one(template, "AWS::SSO::PermissionSet")
    documents["permission-set"] = [_concrete(permission_set["Properties"]["InlinePolicy"], team)]
    for logical_id, role in resources_of(template, "AWS::IAM::Role").items():
        if logical_id.startswith(("TenantExecutionRole", "TenantWorkloadRole")):
            documents[logical_id] = [
                _concrete(p["PolicyDocument"], team) for p in role["Properties"]["Policies"]
            ]
            # managed separately from the role (AWS::IAM::Policy), e.g. the Studio policy that names the domain
            documents[logical_id] += [
                _concrete(p["Properties"]["PolicyDocument"], team)
                for p in resources_of(template, "AWS::IAM::Policy").values()
                if {"Ref": logical_id} in p["Properties"].get("Roles", [])
            ]
    assert len(documents) == 3
    return documents


@pytest.mark.parametrize("team", ["research", "vision", "inference"])
def test_team_identities_reach_only_their_own_prefix(reference: Synth, team: str) -> None:
    others = [t.name for t in reference.platform.teams if t.name != team]
    for who, docs in _team_documents(reference, team).items():
        own = f"{BUCKET}/teams/{team}/checkpoints/model.pt"
        assert is_allowed(docs, "s3:GetObject", own), who
        assert is_allowed(docs, "s3:PutObject", own), who
        assert is_allowed(docs, "s3:ListBucket", BUCKET, {"s3:prefix": f"teams/{team}/"}), who
        assert not is_allowed(docs, "s3:ListBucket", BUCKET), f"{who}: listing without a prefix"
        assert not is_allowed(docs, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/"}), who
        for other in others:
            theirs = f"{BUCKET}/teams/{other}/checkpoints/model.pt"
            for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
                assert not is_allowed(docs, action, theirs), f"{who}: {action} on {other}'s prefix"
            assert not is_allowed(docs, "s3:ListBucket", BUCKET, {"s3:prefix": f"teams/{other}/"}), who
        assert not is_allowed(docs, "s3:PutBucketPolicy", BUCKET), who


@pytest.mark.parametrize("team", ["research", "vision", "inference"])
def test_team_identities_only_describe_the_clusters(reference: Synth, team: str) -> None:
    docs = _team_documents(reference, team)["permission-set"]
    assert is_allowed(docs, "eks:DescribeCluster", EKS)
    assert is_allowed(docs, "sagemaker:DescribeCluster", HYPERPOD)
    assert not is_allowed(docs, "eks:DescribeCluster", OTHER_EKS)
    for action, resource in [
        ("eks:CreateAccessEntry", EKS),
        ("eks:AssociateAccessPolicy", EKS),
        ("eks:UpdateClusterConfig", EKS),
        ("eks:DeleteCluster", EKS),
        ("sagemaker:UpdateCluster", HYPERPOD),
        ("sagemaker:DeleteCluster", HYPERPOD),
        ("sagemaker:CreateComputeQuota", HYPERPOD),
        ("sagemaker:UpdateClusterSchedulerConfig", HYPERPOD),
        ("iam:PassRole", "arn:aws:iam::111122223333:role/anything"),
        ("iam:CreateRole", "arn:aws:iam::111122223333:role/anything"),
    ]:
        assert not is_allowed(docs, action, resource), action


def test_the_check_would_catch_a_leak(reference: Synth) -> None:
    docs = _team_documents(reference, "research")["permission-set"]
    leaky = [
        *docs,
        {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": f"{BUCKET}/teams/*"}]},
    ]
    assert is_allowed(leaky, "s3:GetObject", f"{BUCKET}/teams/vision/x")


@pytest.mark.parametrize("team", ["research", "vision", "inference"])
def test_studio_execution_role_opens_only_its_own_domain(reference: Synth, team: str) -> None:
    # Studio creates spaces and JupyterLab/Code Editor apps with the execution role
    # (https://docs.aws.amazon.com/sagemaker/latest/dg/studio-updated-jl-admin-guide-permissions.html)
    [docs] = [
        d for who, d in _team_documents(reference, team).items() if who.startswith("TenantExecutionRole")
    ]
    others = [t.name for t in reference.platform.teams if t.name != team]
    arn = "arn:aws:sagemaker:us-east-1:111122223333"
    for domain, allowed in [(f"d-{team}domain", True), *((f"d-{o}domain", False) for o in others)]:
        for action, resource in [
            ("sagemaker:CreateSpace", f"space/{domain}/s1"),
            ("sagemaker:CreateApp", f"app/{domain}/s1/jupyterlab/default"),
            ("sagemaker:DeleteApp", f"app/{domain}/s1/jupyterlab/default"),
        ]:
            assert is_allowed(docs, action, f"{arn}:{resource}") is allowed, (team, domain, action)
    [workload] = [
        d for who, d in _team_documents(reference, team).items() if who.startswith("TenantWorkloadRole")
    ]
    assert not is_allowed(workload, "sagemaker:CreateApp", f"{arn}:app/d-{team}domain/s1/jupyterlab/default")


def test_studio_execution_role_trusts_sagemaker_from_this_account_only(reference: Synth) -> None:
    # confused-deputy prevention (https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html)
    for team in reference.platform.teams:
        roles = resources_of(reference.team(team.name), "AWS::IAM::Role")
        [role] = [r for k, r in roles.items() if k.startswith("TenantExecutionRole")]
        [trust] = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
        assert trust["Principal"] == {"Service": "sagemaker.amazonaws.com"}
        assert trust["Condition"] == {"StringEquals": {"aws:SourceAccount": reference.platform.account}}
