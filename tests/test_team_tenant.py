"""TeamTenant: identity, cluster access, Studio, data roles, quota and chart; one stack per team."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match
from platforms import reference_data
from synth import Synth, one, render_intrinsics, resources_of, synthesize

from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, names, platform_from_dict
from hyperpod_tenancy.stacks import ClusterStack, team_stack_id


def test_one_stack_per_team_far_from_cloudformation_limits(reference: Synth) -> None:
    assert set(reference.stage.team_stacks) == {t.name for t in reference.platform.teams}
    for name, template in reference.templates.items():
        assert len(template["Resources"]) < 200, name
        assert len(json.dumps(template)) < 400_000, name


def test_access_entries_map_roles_to_the_team_group_only(reference: Synth) -> None:
    for team in reference.platform.teams:
        template = reference.template(team.name)
        template.resource_count_is("AWS::EKS::AccessEntry", 2)  # Identity Center role + Studio execution role
        sso_id, _ = one(reference.team(team.name), "Custom::SsoRoleArn")
        # the full ARN (with its /aws-reserved/... path) comes from the resolver
        template.has_resource_properties(
            "AWS::EKS::AccessEntry", {"PrincipalArn": {"Fn::GetAtt": [sso_id, "RoleArn"]}}
        )
        template.all_resources_properties(
            "AWS::EKS::AccessEntry",
            {
                "KubernetesGroups": [f"hyperpod-ns-{team.name}-namespace-level-group"],
                "Type": "STANDARD",
                "AccessPolicies": Match.absent(),  # no EKS access policy: never cluster-admin or cluster-wide
            },
        )


def test_no_stack_grants_cluster_admin_to_a_team(reference: Synth) -> None:
    for name in reference.stage.team_stacks:
        assert "AmazonEKSClusterAdminPolicy" not in json.dumps(reference.team(name))
        assert "system:masters" not in json.dumps(reference.team(name))


#: Permission set names of the reference teams (platform.yaml names vision's explicitly).
PERMISSION_SETS = {"research": "Research", "vision": "ComputerVision", "inference": "Inference"}


def test_permission_set_is_assigned_to_the_team_group(reference: Synth, reference_platform: Platform) -> None:
    assert [t.name for t in reference_platform.teams] == list(PERMISSION_SETS)
    for team in reference_platform.teams:
        template = reference.template(team.name)
        template.resource_count_is("AWS::SSO::PermissionSet", 1)
        template.resource_count_is("AWS::SSO::Assignment", 1)
        ps_id, ps = one(reference.team(team.name), "AWS::SSO::PermissionSet")
        template.has_resource_properties(
            "AWS::SSO::Assignment",
            {
                "PrincipalId": team.identity.group_id,
                "PrincipalType": "GROUP",
                "TargetType": "AWS_ACCOUNT",
                "PermissionSetArn": {"Fn::GetAtt": [ps_id, "PermissionSetArn"]},
            },
        )
        template.has_resource_properties("AWS::SSO::PermissionSet", {"Name": PERMISSION_SETS[team.name]})
        statements = ps["Properties"]["InlinePolicy"]["Statement"]
        actions = {
            a for s in statements for a in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
        }
        assert "*" not in actions and not any(a.endswith(":*") for a in actions)


def test_sso_role_resolver_waits_for_the_assignment(reference: Synth) -> None:
    t = reference.team("research")
    template = reference.template("research")
    template.resource_count_is("Custom::SsoRoleArn", 1)
    assignment_id, _ = one(t, "AWS::SSO::Assignment")
    template.has_resource(
        "Custom::SsoRoleArn",
        {
            "DependsOn": Match.array_with([assignment_id]),
            "Properties": {"PermissionSetName": "Research"},
        },
    )
    _, sso = one(t, "Custom::SsoRoleArn")
    assert int(sso["Properties"]["TimeoutSeconds"]) == 900


def test_every_team_stack_shares_the_cluster_stacks_one_sso_role_provider(reference: Synth) -> None:
    # the handlers and the provider framework live once, in the cluster stack; each team's resource imports its
    # service token (before, each team stack carried two handlers, three framework functions and a state machine)
    cluster = reference.cluster
    handlers = [v["Properties"]["Handler"] for v in resources_of(cluster, "AWS::Lambda::Function").values()]
    assert sorted(h for h in handlers if h.startswith("sso_role_resolver.")) == [
        "sso_role_resolver.is_complete",
        "sso_role_resolver.on_event",
    ]
    assert len(resources_of(cluster, "AWS::StepFunctions::StateMachine")) == 1
    tokens = []
    for team in reference.platform.hosted_teams:
        t = reference.team(team.name)
        # a team stack's only functions are its own dashboard's widgets (inline code, no asset)
        functions = resources_of(t, "AWS::Lambda::Function")
        assert sorted(f["Properties"]["FunctionName"] for f in functions.values()) == sorted(
            [
                names.team_gpu_widget(reference.platform.cluster.name, team.name),
                names.team_alert_widget(reference.platform.cluster.name, team.name),
            ]
        )
        assert all("ZipFile" in f["Properties"]["Code"] for f in functions.values())
        assert not resources_of(t, "AWS::StepFunctions::StateMachine")
        _, sso = one(t, "Custom::SsoRoleArn")
        tokens.append(sso["Properties"]["ServiceToken"])
    assert all("Fn::ImportValue" in token for token in tokens)
    assert len({json.dumps(token) for token in tokens}) == 1


def test_an_sso_role_timeout_beyond_the_shared_providers_is_refused(reference_platform: Platform) -> None:
    app = cdk.App()
    stack = ClusterStack(app, "Cluster", platform=reference_platform)
    with pytest.raises(
        TenancyError,
        match=r"sso_role_timeout is 2 hours; the shared role-lookup provider waits at most 1 hour",
    ):
        stack.cluster.add_team("Research", team="research", sso_role_timeout=cdk.Duration.hours(2))


def test_data_roles_are_limited_to_the_team_prefix(reference: Synth) -> None:
    for team in reference.platform.teams:
        t = reference.team(team.name)
        rendered = json.dumps(
            [r["Properties"].get("Policies") for r in resources_of(t, "AWS::IAM::Role").values()]
        )
        assert f"/teams/{team.name}/*" in rendered
        others = [o.name for o in reference.platform.teams if o.name != team.name]
        assert not any(f"/teams/{o}/" in rendered for o in others)


def test_workload_service_account_bound_by_pod_identity(reference: Synth) -> None:
    t = reference.team("vision")
    _, assoc = one(t, "AWS::EKS::PodIdentityAssociation")
    assert assoc["Properties"]["Namespace"] == "hyperpod-ns-vision"
    roles = resources_of(t, "AWS::IAM::Role")
    role = roles[assoc["Properties"]["RoleArn"]["Fn::GetAtt"][0]]
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Action"]) == {"sts:AssumeRole", "sts:TagSession"}
    assert "aws:SourceArn" in json.dumps(trust["Condition"])


def test_compute_quota_has_the_team_name_and_policy_values(reference: Synth) -> None:
    template = reference.template("research")
    template.resource_count_is("AWS::SageMaker::ComputeQuota", 1)
    template.has_resource_properties(
        "AWS::SageMaker::ComputeQuota",
        {
            "ComputeQuotaTarget": {"TeamName": "research", "FairShareWeight": 60},
            "ComputeQuotaConfig": {
                "ComputeQuotaResources": [{"InstanceType": "ml.p5.48xlarge", "Count": 9}],
                "ResourceSharingConfig": {"Strategy": "LendAndBorrow"},
            },
        },
    )


def test_adding_a_fourth_team_adds_one_stack_and_changes_no_other(
    reference: Synth, four_teams: Synth
) -> None:
    assert set(four_teams.templates) - set(reference.templates) == {"ml-platform-Team-Speech"}
    assert set(reference.templates) <= set(four_teams.templates)
    for team in reference.platform.teams:
        assert four_teams.team(team.name) == reference.team(team.name), team.name
    # the cluster stack does not change at all: the webhook reads the new team's record at run time
    assert four_teams.cluster == reference.cluster
    record = [
        r["Properties"]
        for r in four_teams.team("speech")["Resources"].values()
        if r["Type"] == "AWS::SSM::Parameter" and r["Properties"]["Name"].endswith("/posix-identity/speech")
    ]
    assert len(record) == 1 and json.loads(record[0]["Value"])["namespace"] == "hyperpod-ns-speech"


def test_team_chart_carries_the_namespace_labels_the_admission_policies_read(reference: Synth) -> None:
    t = reference.team("inference")
    _, patch = one(t, "Custom::AWSCDK-EKS-KubernetesPatch")
    labels = json.loads(patch["Properties"]["ApplyPatchJson"])["metadata"]["labels"]
    assert labels["hyperpod-tenancy.io/tenant"] == "true"
    assert labels["hyperpod-tenancy.io/team"] == "inference"
    assert labels["priority.hyperpod-tenancy.io/inference-priority"] == "allowed"
    # every platform class is explicit, so a later patch can revoke it (strategic merge never removes keys)
    assert labels["priority.hyperpod-tenancy.io/training-priority"] == "denied"
    assert labels["hyperpod-tenancy.io/borrows"] in {"true", "false"}
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"


def _cluster(tmp_path: Path, platform: Platform) -> tuple[cdk.App, SharedHyperPodCluster]:
    app = cdk.App(outdir=str(tmp_path))
    return app, ClusterStack(app, "Cluster", platform=platform).cluster


def test_fails_when_the_cni_cannot_enforce_network_policies(
    tmp_path: Path, reference_platform: Platform
) -> None:
    app, cluster = _cluster(tmp_path, reference_platform)
    stack = cdk.Stack(app, "Team", env=cdk.Environment(account="111122223333", region="us-east-1"))
    cluster.add_team("Research", team="research", scope=stack)
    cluster.vpc_cni_addon.configuration_values = json.dumps({"enableNetworkPolicy": "false"})
    with pytest.raises(RuntimeError, match="HPT-NETWORK-POLICY-ENFORCEMENT"):
        app.synth()


def test_fails_for_a_team_not_in_the_policy(tmp_path: Path, reference_platform: Platform) -> None:
    _, cluster = _cluster(tmp_path, reference_platform)
    with pytest.raises(
        TenancyError, match=r"team 'audio' is not in the platform policy \(teams: research, vision"
    ):
        TeamTenant(cluster, "Audio", cluster=cluster, team="audio")


def test_fails_when_a_team_is_added_twice(tmp_path: Path, reference_platform: Platform) -> None:
    _, cluster = _cluster(tmp_path, reference_platform)
    cluster.add_team("Research", team="research")
    with pytest.raises(TenancyError, match="team 'research' was already added to this cluster"):
        cluster.add_team("Research2", team="research")


def _dedicated_platform() -> Platform:
    data: dict[str, Any] = reference_data()
    data["cluster"]["onDataClassificationMismatch"] = "dedicated-cluster"
    data["teams"][1]["dataClassification"] = "restricted"
    return platform_from_dict(data)


def test_a_team_flagged_for_a_dedicated_cluster_gets_no_stack_and_a_warning(tmp_path: Path) -> None:
    platform = _dedicated_platform()
    synth = synthesize(platform, tmp_path)
    assert set(synth.stage.team_stacks) == {"research", "inference"}
    messages = [m for s in synth.stage.synth().stacks for m in s.messages]
    warnings = [str(m.entry.data) for m in messages if "HPT-DEDICATED-CLUSTER" in str(m.entry.data)]
    assert len(warnings) == 1
    assert "team 'vision' ('restricted') is kept off this 'internal' cluster" in warnings[0]


def test_a_team_flagged_for_a_dedicated_cluster_cannot_be_added(tmp_path: Path) -> None:
    _, cluster = _cluster(tmp_path, _dedicated_platform())
    with pytest.raises(TenancyError, match="flagged for a dedicated cluster"):
        cluster.add_team("Vision", team="vision")


def test_team_stack_ids_are_stable() -> None:
    assert team_stack_id("computer-vision") == "Team-ComputerVision"


def test_renaming_a_team_warns_that_its_quota_and_namespace_are_replaced(
    tmp_path: Path, reference_platform: Platform
) -> None:
    data = reference_data()
    data["teams"][1]["name"] = "computer-vision"
    renamed = platform_from_dict(data)
    app = cdk.App(outdir=str(tmp_path))
    from hyperpod_tenancy.stacks import PlatformStage

    stage = PlatformStage(app, "ml-platform", platform=renamed, baseline=reference_platform)
    annotations = Annotations.from_stack(stage.cluster_stack)
    (warning,) = annotations.find_warning("*", Match.string_like_regexp("HPT-REPLACE-TEAM"))
    assert "renamed from 'vision' to 'computer-vision'" in str(warning.entry.data)


def test_primary_children_are_the_escape_hatches(reference: Synth) -> None:
    from aws_cdk import aws_sagemaker as sagemaker

    cluster = reference.stage.cluster_stack.cluster
    assert isinstance(cluster.node.default_child, sagemaker.CfnCluster)
    assert cluster.node.default_child.node.path == cluster.hyperpod_cluster.node.path
    tenant = reference.stage.team_stacks["research"].tenant
    child = tenant.node.default_child
    assert child is not None
    assert child.node.path == f"{tenant.chart_manifest.node.path}/Resource/Default"


# ---------------------------------------------------------------------------------------- imported cluster
IMPORTED = {
    "eks_cluster_name": "shared-gpu",
    "kubectl_provider_service_token": "arn:aws:lambda:us-east-1:111122223333:function:kubectl-provider",
    "kubectl_role_arn": "arn:aws:iam::111122223333:role/kubectl-provider",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-east-1:111122223333:cluster/abcd1234efgh",
    "vpc_id": "vpc-0123456789abcdef0",
    "api_endpoint_security_group_id": "sg-0api0123456789abc",
    "data_bucket_name": "shared-gpu-team-data",
    "file_system_id": "fs-0123456789abcdef0",
    "file_system_dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    "file_system_mount_name": "abcdefgh",
}


def _imported(stack: cdk.Stack, platform: Platform, **overrides: Any) -> Any:
    zones = platform.cluster.availability_zones
    attrs: dict[str, Any] = {
        **IMPORTED,
        "private_subnet_ids": [f"subnet-0{i}" for i in range(len(zones))],
        "network_policy_enforced": True,
        **overrides,
    }
    return SharedHyperPodCluster.from_attributes(stack, "Shared", platform=platform, **attrs)


def _tenant_stack(platform: Platform, **overrides: Any) -> tuple[cdk.Stack, TeamTenant]:
    app = cdk.App()
    stack = cdk.Stack(app, "Tenants", env=cdk.Environment(account=platform.account, region=platform.region))
    cluster = _imported(stack, platform, **overrides)
    return stack, TeamTenant(stack, "Research", cluster=cluster, team="research")


def test_a_tenant_is_added_to_an_imported_cluster_in_another_app(reference_platform: Platform) -> None:
    from aws_cdk.assertions import Match, Template

    stack, tenant = _tenant_stack(reference_platform)
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::EKS::Cluster", 0)
    template.resource_count_is("AWS::SageMaker::Cluster", 0)
    template.has_resource_properties(
        "AWS::EKS::AccessEntry",
        {"ClusterName": "shared-gpu", "KubernetesGroups": ["hyperpod-ns-research-namespace-level-group"]},
    )
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation", {"ClusterName": "shared-gpu", "Namespace": "hyperpod-ns-research"}
    )
    template.has_resource_properties(
        "AWS::SageMaker::ComputeQuota", {"ClusterArn": IMPORTED["hyperpod_cluster_arn"]}
    )
    # kubectl runs through the imported cluster's provider
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-KubernetesResource",
        {
            "ServiceToken": IMPORTED["kubectl_provider_service_token"],
            "Manifest": Match.string_like_regexp("fsx"),
        },
    )
    # Studio reaches the private API endpoint through the imported endpoint group
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"GroupId": IMPORTED["api_endpoint_security_group_id"], "FromPort": 443, "ToPort": 443},
    )
    template.has_resource_properties(
        "AWS::SageMaker::Domain", {"VpcId": IMPORTED["vpc_id"], "SubnetIds": ["subnet-00", "subnet-01"]}
    )
    manifest = json.dumps(template.find_resources("Custom::AWSCDK-EKS-KubernetesResource"))
    assert IMPORTED["file_system_dns_name"] in manifest and IMPORTED["file_system_mount_name"] in manifest
    assert tenant.compute_quota is not None and tenant.compute_quota.node.dependencies == []


def test_team_stack_takes_an_imported_cluster(reference_platform: Platform) -> None:
    from hyperpod_tenancy.stacks import TeamStack

    app = cdk.App()
    env = cdk.Environment(account=reference_platform.account, region=reference_platform.region)
    holder = cdk.Stack(app, "Imports", env=env)
    cluster = _imported(holder, reference_platform)
    team_stack = TeamStack(
        app, "Team-Vision", cluster=cluster, team="vision", sso_role_timeout=cdk.Duration.minutes(5)
    )
    app.synth()
    assert team_stack.tenant.team.name == "vision"
    assembly = app.synth()
    _, sso = one(assembly.get_stack_by_name("Team-Vision").template, "Custom::SsoRoleArn")
    assert sso["Properties"]["TimeoutSeconds"] == "300"
    # without a given provider token, one provider is created beside the import (its stack), not per team
    holder_handlers = resources_of(assembly.get_stack_by_name("Imports").template, "AWS::Lambda::Function")
    assert {"sso_role_resolver.on_event", "sso_role_resolver.is_complete"} <= {
        v["Properties"].get("Handler") for v in holder_handlers.values()
    }
    assert not resources_of(assembly.get_stack_by_name("Team-Vision").template, "AWS::Lambda::Function")


def test_an_imported_cluster_takes_the_sso_role_provider_of_the_cluster_stack(
    reference_platform: Platform,
) -> None:
    from hyperpod_tenancy.stacks import TeamStack

    app = cdk.App()
    env = cdk.Environment(account=reference_platform.account, region=reference_platform.region)
    holder = cdk.Stack(app, "Imports", env=env)
    token = "arn:aws:lambda:us-east-1:111122223333:function:sso-role-provider"
    cluster = _imported(holder, reference_platform, sso_role_service_token=token)
    TeamStack(app, "Team-Vision", cluster=cluster, team="vision")
    assembly = app.synth()
    _, sso = one(assembly.get_stack_by_name("Team-Vision").template, "Custom::SsoRoleArn")
    assert sso["Properties"]["ServiceToken"] == token
    # the import alone creates nothing
    assert not assembly.get_stack_by_name("Imports").template.get("Resources")


def test_an_imported_cluster_must_state_network_policy_enforcement(reference_platform: Platform) -> None:
    stack, _ = _tenant_stack(reference_platform, network_policy_enforced=False)
    errors = [str(e) for e in stack.node.validate()] + [
        e for c in stack.node.find_all() for e in c.node.validate()
    ]
    assert any("HPT-NETWORK-POLICY-ENFORCEMENT" in e for e in errors)


def test_an_imported_cluster_needs_one_subnet_per_zone(reference_platform: Platform) -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Tenants")
    with pytest.raises(
        TenancyError, match=r"private_subnet_ids has 1 subnet\(s\) but cluster.availabilityZones has 2"
    ):
        _imported(stack, reference_platform, private_subnet_ids=["subnet-1"])


def test_add_team_passes_the_tenant_options_through(reference_platform: Platform) -> None:
    app = cdk.App()
    stack = ClusterStack(app, "Cluster", platform=reference_platform)
    tenant = stack.cluster.add_team("Research", team="research", sso_role_timeout=cdk.Duration.minutes(3))
    _, sso = one(app.synth().get_stack_by_name("Cluster").template, "Custom::SsoRoleArn")
    assert sso["Properties"]["TimeoutSeconds"] == "180"
    assert stack.cluster.teams == {"research": tenant}


def test_team_stack_passes_the_sso_start_url_as_an_option_not_through_the_context(
    reference_platform: Platform,
) -> None:
    from hyperpod_tenancy.k8s import onboarding
    from hyperpod_tenancy.stacks import TeamStack

    url = "https://example-portal.awsapps.com/start"
    app = cdk.App()
    cluster = ClusterStack(app, "Cluster", platform=reference_platform).cluster
    stack = TeamStack(app, "Research", cluster=cluster, team="research", sso_start_url=url)
    assert stack.tenant.onboarding.sso_start_url == url
    # nothing else under the stack sees a URL the caller gave to one tenant
    assert stack.node.try_get_context(onboarding.SSO_START_URL_CONTEXT) is None
    direct = cluster.add_team("Vision", team="vision", sso_start_url=url)
    assert direct.onboarding.sso_start_url == url


# ---------------------------------------------------------------------------------------- data grants
def _granted_policies(platform: Platform, grant: str) -> list[dict[str, Any]]:
    from aws_cdk import aws_iam as iam

    stack, tenant = _tenant_stack(platform)
    reader = iam.Role(stack, "Analyst", assumed_by=iam.AccountRootPrincipal())
    result = getattr(tenant, grant)(reader)
    assert isinstance(result, iam.Grant) and result.success
    template = cdk.assertions.Template.from_stack(stack).to_json()
    reader_id = stack.get_logical_id(reader.node.default_child)  # type: ignore[arg-type]
    return [
        render_intrinsics(r["Properties"]["PolicyDocument"])
        for r in resources_of(template, "AWS::IAM::Policy").values()
        if {"Ref": reader_id} in r["Properties"]["Roles"]
    ]


BUCKET = "arn:cfn-token:s3:::shared-gpu-team-data"


@pytest.mark.parametrize("grant", ["grant_read_data", "grant_write_data"])
def test_data_grants_reach_only_the_team_prefix(grant: str, reference_platform: Platform) -> None:
    from iam_eval import is_allowed

    policies = _granted_policies(reference_platform, grant)
    assert policies, "the grant lands on the grantee's policy"
    own, other = f"{BUCKET}/teams/research/ckpt/step-10.pt", f"{BUCKET}/teams/vision/ckpt/step-10.pt"
    assert is_allowed(policies, "s3:GetObject", own)
    assert not is_allowed(policies, "s3:GetObject", other)
    assert not is_allowed(policies, "s3:GetObject", f"{BUCKET}/teams/research-old/x")
    assert not is_allowed(policies, "s3:GetObject", f"{BUCKET}/lifecycle/on_create.sh")
    assert is_allowed(policies, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/research/"})
    assert not is_allowed(policies, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/vision/"})
    assert not is_allowed(policies, "s3:ListBucket", BUCKET, {"s3:prefix": "teams/"})
    assert not is_allowed(policies, "s3:ListBucket", BUCKET)
    writes = grant == "grant_write_data"
    for action in ("s3:PutObject", "s3:DeleteObject"):
        assert is_allowed(policies, action, own) is writes
        assert not is_allowed(policies, action, other)
    assert not is_allowed(policies, "s3:PutBucketPolicy", BUCKET)
