"""A Studio domain in a team's own account (``examples/team-accounts``: ``research`` with ``studioNetwork``).

The team stack, in the cluster's account, peers the cluster's VPC with the team's Studio VPC through the team's
peering role, routes and admits the team's CIDR, and creates the cluster reader role; the team's Studio stack, in
its account, finds the accepted peering, routes back, and runs the domain. Tested here: the names on both sides of
each line agree, the routes and the one endpoint rule, the IAM cases through the evaluator with the policies as
synthesized (both sides must allow), the lookup's filters against EC2's model, and the lookup's handler run for
real against a moto server holding the two accounts' VPCs and their peering.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import boto3
import botocore.session
import platforms
import pytest
from aws_custom_resource import joined, run_handler
from control_plane import ControlPlane, kubectl_binary
from iam_eval import is_allowed, is_allowed_across
from moto_server import moto_server, reset
from sg_places import platform_places
from synth import Synth
from team_accounts import IDENTITY_CENTER, RESEARCH, WORKLOADS, resources, stack_name

from hyperpod_tenancy.constructs import SharedHyperPodCluster
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.policy import names

CLUSTER = "shared-gpu"
TEAM, ACCOUNT, STUDIO, IDENTITY = (
    stack_name("research", s) for s in ("", "-Account", "-Studio", "-Identity")
)
STUDIO_CIDR = "10.60.0.0/16"
CLUSTER_CIDR = "10.192.0.0/16"
TEAM_VPC = "vpc-0a1b2c3d4e5f60718"
BUCKET_ARN = "arn:aws:s3:::research-data-example"


def _role_arn(account: str, purpose_name: str) -> str:
    return f"arn:aws:iam::{account}:role/{purpose_name}"


EXECUTION = _role_arn(RESEARCH, names.team_studio_role(CLUSTER, "research"))
READER = _role_arn(WORKLOADS, names.team_cluster_reader_role(CLUSTER, "research"))
PEERING = _role_arn(RESEARCH, names.team_peering_role(CLUSTER, "research"))
EKS_CLUSTER = f"arn:aws:eks:us-east-1:{WORKLOADS}:cluster/{CLUSTER}"


def _roles(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["RoleName"]: p for p in resources(template, "AWS::IAM::Role").values() if "RoleName" in p}


def _resolved(value: Any) -> Any:
    """Return ``value`` joined: partition ``aws``, the bucket's ARN :data:`BUCKET_ARN`, others ``<id>.<attr>``."""
    if isinstance(value, list):
        return [_resolved(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "Fn::ImportValue" in value:
        assert "DataBucket" in value["Fn::ImportValue"], value
        return BUCKET_ARN
    if "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(str(_resolved(p)) for p in parts)
    if "Fn::GetAtt" in value or value == {"Ref": "AWS::Partition"}:
        return ".".join(value["Fn::GetAtt"]) if "Fn::GetAtt" in value else "aws"
    return {k: _resolved(v) for k, v in value.items()}


# ------------------------------------------------------------------ the names that cross
def test_the_names_that_cross_agree_on_both_sides(team_accounts_example: Synth) -> None:
    templates = team_accounts_example.templates
    (peering,) = resources(templates[TEAM], "AWS::EC2::VPCPeeringConnection").values()
    assert joined(peering["PeerRoleArn"]) == PEERING
    assert names.team_peering_role(CLUSTER, "research") in _roles(templates[ACCOUNT])
    assert (peering["PeerVpcId"], peering["PeerOwnerId"], peering["PeerRegion"]) == (
        TEAM_VPC,
        RESEARCH,
        "us-east-1",
    )
    reader = _roles(templates[TEAM])[names.team_cluster_reader_role(CLUSTER, "research")]
    (trust,) = reader["AssumeRolePolicyDocument"]["Statement"]
    assert joined(trust["Condition"]["ArnEquals"]["aws:PrincipalArn"]) == EXECUTION
    assert names.team_studio_role(CLUSTER, "research") in _roles(templates[STUDIO])
    # the lifecycle script assumes the reader the team stack created
    for config in resources(templates[STUDIO], "AWS::SageMaker::StudioLifecycleConfig").values():
        script = base64.b64decode(config["StudioLifecycleConfigContent"]).decode()
        assert f"HPT_CLUSTER_ROLE={READER}\n" in script and f"HPT_CLUSTER_ACCOUNT={WORKLOADS}\n" in script
        assert f"HPT_ACCOUNT={RESEARCH}\n" in script  # members sign in to the team's account
    # the Identity Center account reads the application ARN from the team's account, where the domain is
    (lookup,) = resources(templates[IDENTITY], "Custom::AWS").values()
    call = json.loads(joined(lookup["Create"]))
    studio_reader = names.team_studio_reader_role(CLUSTER, "research")
    assert call["assumedRoleArn"] == _role_arn(RESEARCH, studio_reader)
    (reader_trust,) = _roles(templates[STUDIO])[studio_reader]["AssumeRolePolicyDocument"]["Statement"]
    assert joined(reader_trust["Principal"]["AWS"]) == f"arn:aws:iam::{IDENTITY_CENTER}:root"


def test_the_routes_and_the_one_endpoint_rule(team_accounts_example: Synth) -> None:
    templates = team_accounts_example.templates
    cluster_routes = resources(templates[TEAM], "AWS::EC2::Route")
    assert len(cluster_routes) == 2  # one per private subnet's route table (two zones)
    for route in cluster_routes.values():
        assert route["DestinationCidrBlock"] == STUDIO_CIDR
        assert "Fn::ImportValue" in route["RouteTableId"]  # the cluster stack's route tables
        assert route["VpcPeeringConnectionId"]["Ref"].startswith("TenantStudioPeering")
    (ingress,) = resources(templates[TEAM], "AWS::EC2::SecurityGroupIngress").values()
    assert (ingress["CidrIp"], ingress["IpProtocol"], ingress["FromPort"], ingress["ToPort"]) == (
        STUDIO_CIDR,
        "tcp",
        443,
        443,
    )
    studio = templates[STUDIO]
    team_routes = resources(studio, "AWS::EC2::Route")
    assert [r["RouteTableId"] for r in team_routes.values()] == ["rtb-0a1b2c3d4e5f60718"]
    for route in team_routes.values():
        assert route["DestinationCidrBlock"] == CLUSTER_CIDR
        assert (
            route["VpcPeeringConnectionId"]["Fn::GetAtt"][1]
            == "VpcPeeringConnections.0.VpcPeeringConnectionId"
        )
    ((domain_id, domain),) = (
        (k, r) for k, r in studio["Resources"].items() if r["Type"] == "AWS::SageMaker::Domain"
    )
    props = domain["Properties"]
    assert (props["VpcId"], props["SubnetIds"], props["AppNetworkAccessType"]) == (
        TEAM_VPC,
        ["subnet-0a1b2c3d4e5f60718", "subnet-0b1c2d3e4f5061728"],
        "VpcOnly",
    )
    assert set(team_routes) <= set(domain["DependsOn"])  # apps start once they can reach the cluster
    assert domain["DeletionPolicy"] == "Retain"
    assert set(resources(studio, "AWS::SageMaker::Domain")) == {domain_id}


def test_the_peering_lookup_asks_ec2_for_this_connection_only(team_accounts_example: Synth) -> None:
    (lookup,) = resources(team_accounts_example.templates[STUDIO], "Custom::AWS").values()
    call = json.loads(joined(lookup["Create"]))
    assert (call["service"], call["action"]) == ("EC2", "describeVpcPeeringConnections")
    filters = {f["Name"]: f["Values"] for f in call["parameters"]["Filters"]}
    assert filters == {
        "accepter-vpc-info.vpc-id": [TEAM_VPC],
        "requester-vpc-info.owner-id": [WORKLOADS],
        "requester-vpc-info.cidr-block": [CLUSTER_CIDR],
        "status-code": ["active"],
    }
    # each name is one EC2 documents for the call (botocore's service model of DescribeVpcPeeringConnections)
    model = botocore.session.get_session().get_service_model("ec2")
    documented = (
        model.operation_model("DescribeVpcPeeringConnections").input_shape.members["Filters"].documentation
    )
    assert set(filters) <= set(re.findall(r"<code>([a-z.-]+)</code> -", documented))
    assert call["outputPaths"] == ["VpcPeeringConnections.0.VpcPeeringConnectionId"]


def test_the_peering_opens_the_api_endpoint_to_the_team_studio_network_and_nothing_else(
    team_accounts_example: Synth,
) -> None:
    """Through the security groups as synthesized (the reachability model of ``tests/support/sg_model.py``): an app
    of the team's Studio, at an address of its network, reaches the API endpoint on 443 and no node, file system
    or other port; an address outside the team's CIDR (another VPC peered or routed there) does not reach it."""
    model, places = platform_places(team_accounts_example)
    studio = places["studio:research"]
    assert studio.ip is not None and studio.ip.startswith("10.60.")
    assert model.can_reach(studio, places["api"], "tcp", 443)
    for target, port in (
        ("api", 10250),
        ("hyperpod", 10250),
        ("hyperpod", 443),
        ("system", 443),
        ("fsx", 988),
    ):
        assert not model.can_reach(studio, places[target], "tcp", port), (target, port)
    stranger = dataclasses.replace(studio, ip="10.61.0.5")
    assert not model.can_reach(stranger, places["api"], "tcp", 443)


# ------------------------------------------------------------------ IAM across the account line
@pytest.fixture(scope="module")
def iam(team_accounts_example: Synth) -> dict[str, Any]:
    """The documents as synthesized: the execution role's identity policies, the reader's and the peering role's."""
    templates = team_accounts_example.templates
    studio = templates[STUDIO]
    execution = _roles(studio)[names.team_studio_role(CLUSTER, "research")]
    execution_id = next(k for k, r in resources(studio, "AWS::IAM::Role").items() if r is execution)
    attached = [
        p["PolicyDocument"]
        for p in resources(studio, "AWS::IAM::Policy").values()
        if {"Ref": execution_id} in p["Roles"]
    ]
    reader = _roles(templates[TEAM])[names.team_cluster_reader_role(CLUSTER, "research")]
    peering = _roles(templates[ACCOUNT])[names.team_peering_role(CLUSTER, "research")]
    return {
        "execution": [_resolved(p["PolicyDocument"]) for p in execution["Policies"]] + _resolved(attached),
        "reader_trust": _resolved(reader["AssumeRolePolicyDocument"]),
        "reader": [_resolved(p["PolicyDocument"]) for p in reader["Policies"]],
        "peering_trust": _resolved(peering["AssumeRolePolicyDocument"]),
        "peering": [_resolved(p["PolicyDocument"]) for p in peering["Policies"]],
    }


def test_the_studio_apps_describe_the_cluster_through_the_reader(iam: dict[str, Any]) -> None:
    assert is_allowed_across(
        iam["execution"], iam["reader_trust"], principal=EXECUTION, action="sts:AssumeRole", resource=READER
    )
    assert is_allowed(iam["reader"], "eks:DescribeCluster", EKS_CLUSTER)
    for action, resource in (
        ("eks:DescribeCluster", f"arn:aws:eks:us-east-1:{WORKLOADS}:cluster/other"),
        ("eks:ListClusters", "*"),
        ("eks:AccessKubernetesApi", EKS_CLUSTER),
        ("eks:CreateAccessEntry", EKS_CLUSTER),
    ):
        assert not is_allowed(iam["reader"], action, resource), action


@pytest.mark.parametrize(
    "principal",
    [
        # a member signed in to the team's account (their Identity Center role there)
        f"arn:aws:iam::{RESEARCH}:role/aws-reserved/sso.amazonaws.com/AWSReservedSSO_Research_0123456789abcdef",
        # another team's Studio role, in another account
        _role_arn("555566667777", names.team_studio_role(CLUSTER, "vision")),
        # an administrator of the cluster's account
        _role_arn(WORKLOADS, "Admin"),
    ],
    ids=["member", "other-team", "cluster-admin"],
)
def test_no_one_else_becomes_the_reader(iam: dict[str, Any], principal: str) -> None:
    everything = [
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    ]
    assert not is_allowed_across(
        everything, iam["reader_trust"], principal=principal, action="sts:AssumeRole", resource=READER
    )


def test_an_allow_on_one_side_only_is_refused(iam: dict[str, Any]) -> None:
    # the trust names the execution role, whose identity policy no longer allows the call
    assert not is_allowed_across(
        [], iam["reader_trust"], principal=EXECUTION, action="sts:AssumeRole", resource=READER
    )
    # the execution role allows it, a trust that names no one does not
    nobody = {"Version": "2012-10-17", "Statement": []}
    assert not is_allowed_across(
        iam["execution"], nobody, principal=EXECUTION, action="sts:AssumeRole", resource=READER
    )


def test_the_execution_role_reaches_the_team_prefix_of_its_own_bucket_only(iam: dict[str, Any]) -> None:
    assert is_allowed(iam["execution"], "s3:GetObject", f"{BUCKET_ARN}/teams/research/data.bin")
    assert not is_allowed(iam["execution"], "s3:GetObject", f"{BUCKET_ARN}/teams/vision/data.bin")
    assert not is_allowed(iam["execution"], "eks:DescribeCluster", EKS_CLUSTER)  # only through the reader


def test_the_peering_role_accepts_the_cluster_s_peering_onto_the_team_vpc_only(iam: dict[str, Any]) -> None:
    vpc = f"arn:aws:ec2:us-east-1:{RESEARCH}:vpc/{TEAM_VPC}"
    connection = f"arn:aws:ec2:us-east-1:{RESEARCH}:vpc-peering-connection/pcx-0123456789abcdef0"
    cluster_vpc = f"arn:aws:ec2:us-east-1:{WORKLOADS}:vpc/vpc-0cluster0000000000"
    caller = _role_arn(WORKLOADS, "cdk-hnb659fds-cfn-exec-role")  # CloudFormation in the cluster's account
    administrator = [
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    ]
    assert is_allowed_across(
        administrator, iam["peering_trust"], principal=caller, action="sts:AssumeRole", resource=PEERING
    )
    accept = "ec2:AcceptVpcPeeringConnection"
    context = {"ec2:AccepterVpc": vpc, "ec2:RequesterVpc": cluster_vpc}
    assert is_allowed(iam["peering"], accept, vpc)
    assert is_allowed(iam["peering"], accept, connection, context)
    other_vpc = f"arn:aws:ec2:us-east-1:{RESEARCH}:vpc/vpc-0other00000000000"
    assert not is_allowed(iam["peering"], accept, other_vpc)
    assert not is_allowed(iam["peering"], accept, connection, {**context, "ec2:AccepterVpc": other_vpc})
    stranger = "arn:aws:ec2:us-east-1:555566667777:vpc/vpc-0stranger000000000"
    assert not is_allowed(iam["peering"], accept, connection, {**context, "ec2:RequesterVpc": stranger})
    assert not is_allowed(iam["peering"], "ec2:CreateRoute", vpc)
    outsider = _role_arn("555566667777", "Admin")
    assert not is_allowed_across(
        administrator, iam["peering_trust"], principal=outsider, action="sts:AssumeRole", resource=PEERING
    )


def test_members_read_the_domain_s_outputs_from_the_studio_stack(team_accounts_example: Synth) -> None:
    """``hyperpod-tenancy onboarding`` tells members to read ``StudioUrl`` from the Studio stack in their account."""
    (member,) = resources(team_accounts_example.templates[ACCOUNT], "AWS::IAM::ManagedPolicy").values()
    policy = _resolved(member["PolicyDocument"])

    def stack(name: str) -> str:
        return f"arn:aws:cloudformation:us-east-1:{RESEARCH}:stack/{name}/0a1b2c3d"

    for readable in (ACCOUNT, STUDIO):
        assert is_allowed(policy, "cloudformation:DescribeStacks", stack(readable)), readable
    assert not is_allowed(policy, "cloudformation:DescribeStacks", stack(IDENTITY))


# ------------------------------------------------------------------ the lookup, run for real
def _credentials(account: str) -> dict[str, str]:
    """Credentials of ``account`` on the moto server (moto keeps one state per account, keyed by credentials)."""
    c = boto3.client("sts").assume_role(
        RoleArn=_role_arn(account, "test-setup"), RoleSessionName="test-setup"
    )["Credentials"]
    return {
        "AWS_ACCESS_KEY_ID": c["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": c["SecretAccessKey"],
        "AWS_SESSION_TOKEN": c["SessionToken"],
    }


def _ec2(account: str) -> Any:
    c = _credentials(account)
    return boto3.client(
        "ec2",
        region_name="us-east-1",
        aws_access_key_id=c["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=c["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=c["AWS_SESSION_TOKEN"],
    )


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_the_handler_finds_the_accepted_peering_in_the_team_account(
    team_accounts_example: Synth, cfn_response_server: tuple[int, Path], request_type: str
) -> None:
    """The cluster's account requests the peering and the team's accepts it (as the team stack does); the Studio
    stack's lookup, run by aws-cdk-lib's handler as the team account, answers its ID."""
    with moto_server() as endpoint:
        reset(endpoint)
        team, cluster = _ec2(RESEARCH), _ec2(WORKLOADS)
        team_vpc = team.create_vpc(CidrBlock=STUDIO_CIDR)["Vpc"]["VpcId"]
        cluster_vpc = cluster.create_vpc(CidrBlock=CLUSTER_CIDR)["Vpc"]["VpcId"]
        requested = cluster.create_vpc_peering_connection(
            VpcId=cluster_vpc, PeerVpcId=team_vpc, PeerOwnerId=RESEARCH, PeerRegion="us-east-1"
        )["VpcPeeringConnection"]["VpcPeeringConnectionId"]
        team.accept_vpc_peering_connection(VpcPeeringConnectionId=requested)
        answer = run_handler(
            team_accounts_example,
            STUDIO,
            request_type,
            server=cfn_response_server,
            endpoint=endpoint,
            environment=_credentials(RESEARCH),
        )
    assert answer["Status"] == "SUCCESS", answer
    # what the routes read (Fn::GetAtt <lookup>.VpcPeeringConnections.0.VpcPeeringConnectionId), and nothing else
    assert answer["Data"] == {"VpcPeeringConnections.0.VpcPeeringConnectionId": requested}
    assert answer["PhysicalResourceId"] == f"{TEAM_VPC}:{WORKLOADS}:{CLUSTER_CIDR}"


def test_without_the_team_stack_the_lookup_answers_no_connection(
    team_accounts_example: Synth, cfn_response_server: tuple[int, Path]
) -> None:
    """No peering yet (the stack dependency ignored): the answer holds no ID, and CloudFormation fails the routes'
    ``Fn::GetAtt`` on it rather than routing anywhere."""
    with moto_server() as endpoint:
        reset(endpoint)
        answer = run_handler(
            team_accounts_example,
            STUDIO,
            "Create",
            server=cfn_response_server,
            endpoint=endpoint,
            environment=_credentials(RESEARCH),
        )
    assert answer["Status"] == "SUCCESS" and answer["Data"] == {}


# ------------------------------------------------------------------ an imported cluster
def _imported_tenant(**overrides: Any) -> TeamTenant:
    platform = platforms.example("team-accounts")
    app = cdk.App()
    stack = cdk.Stack(app, "Tenants", env=cdk.Environment(account=platform.account, region=platform.region))
    zones = platform.cluster.availability_zones
    cluster = SharedHyperPodCluster.from_attributes(
        stack,
        "Shared",
        platform=platform,
        eks_cluster_name=CLUSTER,
        kubectl_provider_service_token="arn:aws:lambda:us-east-1:111122223333:function:kubectl",
        hyperpod_cluster_arn=f"arn:aws:sagemaker:us-east-1:{WORKLOADS}:cluster/abcd1234efgh",
        vpc_id="vpc-0123456789abcdef0",
        private_subnet_ids=[f"subnet-0{i}" for i in range(len(zones))],
        api_endpoint_security_group_id="sg-0api0123456789abc",
        data_bucket_name="shared-gpu-team-data",
        file_system_id="fs-0123456789abcdef0",
        file_system_dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        file_system_mount_name="abcdefgh",
        network_policy_enforced=True,
        **overrides,
    )
    return TeamTenant(stack, "Research", cluster=cluster, team="research")


def test_an_imported_cluster_routes_the_team_studio_through_the_route_tables_it_is_given() -> None:
    with pytest.raises(TenancyError, match="private_subnet_route_table_ids"):
        _imported_tenant()
    with pytest.raises(TenancyError, match=r"route table\(s\) but private_subnet_ids has 2"):
        _imported_tenant(private_subnet_route_table_ids=["rtb-01"])
    tenant = _imported_tenant(private_subnet_route_table_ids=["rtb-01", "rtb-02"])
    assert tenant.studio_peering is not None
    tables = [cdk.Stack.of(tenant).resolve(r.route_table_id) for r in tenant.studio_peering.routes]
    assert tables == ["rtb-01", "rtb-02"]


# ------------------------------------------------------------------ the lifecycle script, with the real API server
FAKE_STUDIO_AWS = """#!/bin/bash
# a Studio app's aws CLI: the app's own credentials assume the cluster's reader role, which describes the
# cluster; the member's profile signs the token. Records each call with the credentials it ran with.
printf '%s | profile=%s key=%s\\n' "$*" "${AWS_PROFILE:-}" "${AWS_ACCESS_KEY_ID:-}" >> "$AWS_CALLS"
case "$1 $2" in
  "sts get-caller-identity") [ -e "$SIGNED_IN" ] ;;
  "sso login") : > "$SIGNED_IN" ;;
  "sts assume-role") printf 'ASIAREADER\\tsecret\\tsession\\n' ;;
  "eks describe-cluster")
    [ "${AWS_ACCESS_KEY_ID:-}" = ASIAREADER ] || exit 254
    printf '%s\\t%s\\n' "$ENDPOINT" "$CA_DATA" ;;
  *)
    [ "$3 $4" = "eks get-token" ] && [ "${AWS_PROFILE:-}" = "$MEMBER_PROFILE" ] || exit 64
    printf '{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
    printf '"status": {"token": "%s"}}\\n' "$TOKEN" ;;
esac
"""


@pytest.mark.cluster
def test_a_studio_app_in_the_team_account_reaches_the_real_api_server_as_the_member(
    control_plane: ControlPlane, tmp_path: Path
) -> None:
    """The lifecycle script of a domain in the team's account, run with a fake ``aws`` that answers as AWS would:
    it describes the cluster through the reader role with the app's credentials (not the member's profile), writes
    a kubeconfig of its own that real kubectl merges after the default one, and the token is the member's. kubectl
    then reaches the real API server of the test control plane with that context."""
    import base64

    from hyperpod_tenancy.constructs.tenant.studio import studio_lifecycle_script

    facts = onboarding.onboarding_facts(
        platforms.example("team-accounts"), "research", sso_start_url="https://example.awsapps.com/start"
    )
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "aws").write_text(FAKE_STUDIO_AWS)
    (bin_dir / "aws").chmod(0o755)
    script = tmp_path / "lifecycle.sh"
    script.write_text(studio_lifecycle_script(facts))
    calls, signed_in = tmp_path / "calls", tmp_path / "signed-in"
    env = {
        "HOME": str(home),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "AWS_CALLS": str(calls),
        "SIGNED_IN": str(signed_in),
        "ENDPOINT": control_plane.server,
        "CA_DATA": base64.b64encode(control_plane.pki.cert.read_bytes()).decode(),
        "TOKEN": control_plane.service_account_token("kube-system", "default", seconds=600),
        "MEMBER_PROFILE": facts.profile,
        "AWS_PROFILE": facts.profile,  # a terminal that selected the member's profile: the describe must not use it
    }
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert "next, in a terminal: hyperpod_login" in run.stdout  # not signed in yet
    team_kubeconfig = home / ".kube" / f"{facts.kube_context}.yaml"
    assert not team_kubeconfig.exists()
    signed_in.touch()
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert f"wrote context {facts.kube_context}" in run.stdout
    reader = names.role_arn(
        partition="aws", account=WORKLOADS, name=names.team_cluster_reader_role("shared-gpu", "research")
    )
    made = calls.read_text().splitlines()
    assumed = next(c for c in made if c.startswith("sts assume-role"))
    assert f"--role-arn {reader} " in assumed and "profile= key=" in assumed  # the app's own credentials
    described = next(c for c in made if c.startswith("eks describe-cluster"))
    assert "--name shared-gpu --region us-east-1" in described and "profile= key=ASIAREADER" in described
    # a new terminal: the helper adds the file to KUBECONFIG; real kubectl, the member's token, the real server
    terminal = f". {home / '.bashrc'}; kubectl --context {facts.kube_context} auth whoami -o jsonpath='{{.status.userInfo.username}}'; echo; kubectl config view --minify -o jsonpath='{{.contexts[0].context.namespace}}'"
    (bin_dir / "kubectl").symlink_to(kubectl_binary())
    who = subprocess.run(["bash", "-c", terminal], env=env, capture_output=True, text=True, check=False)
    assert who.returncode == 0, who.stderr
    user, namespace = who.stdout.splitlines()
    assert user == "system:serviceaccount:kube-system:default"  # the identity of the token get-token printed
    assert namespace == facts.namespace
    assert (team_kubeconfig.stat().st_mode & 0o077) == 0
    # the member's default kubeconfig is untouched, and a second start writes nothing again
    assert not (home / ".kube" / "config").exists()
    before = len(calls.read_text().splitlines())
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, check=False)
    assert "already has context" in run.stdout
    assert len(calls.read_text().splitlines()) == before
