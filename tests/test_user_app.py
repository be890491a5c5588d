"""The constructs in a platform engineer's own CDK app: their VPC, their code changing the policy.

The user's app is not this repository: what the constructs are given (a VPC built elsewhere, a policy edited in
code) is checked, and the objects rendered from it describe what is actually deployed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from platforms import PLATFORM_YAML, REPO
from synth import Synth

from hyperpod_tenancy.constructs._private.feature_flags import TEMPLATE_FLAGS
from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.cluster.vpc import VpcAttributes
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
from hyperpod_tenancy.errors import PolicyError, TenancyError
from hyperpod_tenancy.k8s.team_manifests import IMDS_CIDR
from hyperpod_tenancy.policy import Platform, validate_platform
from hyperpod_tenancy.stacks import ClusterOptions, PlatformStage, zone_context

USER_CIDR = "10.50.0.0/16"
SECONDARY_CIDR = "100.64.0.0/16"


class _UserStack(cdk.Stack):
    """A stack of the user's app in the platform's region, with the platform's zones (no lookup)."""

    def __init__(self, scope: cdk.App, id: str, *, platform: Platform) -> None:
        self._zones = list(platform.cluster.availability_zones)
        super().__init__(scope, id, env=cdk.Environment(account=platform.account, region=platform.region))

    @property
    def availability_zones(self) -> list[str]:
        return self._zones


def _user_vpc(stack: cdk.Stack, platform: Platform, *, secondary: str | None = None) -> ec2.Vpc:
    vpc = ec2.Vpc(
        stack,
        "UserVpc",
        ip_addresses=ec2.IpAddresses.cidr(USER_CIDR),
        availability_zones=list(platform.cluster.availability_zones),
        nat_gateways=1,
        restrict_default_security_group=True,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
            ec2.SubnetConfiguration(
                name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=20
            ),
        ],
    )
    if secondary is not None:
        ec2.CfnVPCCidrBlock(stack, "Secondary", vpc_id=vpc.vpc_id, cidr_block=secondary)
    return vpc


def _egress_except(cluster: SharedHyperPodCluster, team: str) -> list[str]:
    tenant = cluster.add_team(team.capitalize(), team=team)
    (policy,) = [
        o
        for o in tenant.chart.to_json()
        if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == "allow-internet-egress"
    ]
    (rule,) = policy["spec"]["egress"]
    (peer,) = rule["to"]
    blocks: list[str] = peer["ipBlock"]["except"]
    return blocks


def test_team_egress_excludes_every_block_of_the_vpc_given(reference_platform: Platform) -> None:
    """A VPC of 10.50.0.0/16 (+ a secondary block) while ``cluster.vpcCidr`` says 10.192.0.0/16."""
    assert reference_platform.cluster.vpc_cidr != USER_CIDR
    app = cdk.App()
    stack = _UserStack(app, "Mine", platform=reference_platform)
    vpc = _user_vpc(stack, reference_platform, secondary=SECONDARY_CIDR)
    cluster = SharedHyperPodCluster(stack, "Cluster", platform=reference_platform, vpc=vpc)
    blocks = _egress_except(cluster, "research")
    assert set(blocks) == {USER_CIDR, SECONDARY_CIDR, IMDS_CIDR, reference_platform.cluster.service_cidr}
    assert cluster.vpc_cidr_blocks == (USER_CIDR, SECONDARY_CIDR)
    warnings = [
        e.data for n in cluster.node.find_all() for e in n.node.metadata if e.type == "aws:cdk:warning"
    ]
    assert any("HPT-VPC-CIDR-GIVEN" in str(w) and USER_CIDR in str(w) for w in warnings), warnings


def test_an_imported_vpc_without_its_blocks_is_refused_naming_the_prop(reference_platform: Platform) -> None:
    app = cdk.App()
    stack = _UserStack(app, "Mine", platform=reference_platform)
    zones = list(reference_platform.cluster.availability_zones)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Imported",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=zones,
        private_subnet_ids=[f"subnet-0{i}23456789abcdef0" for i in range(len(zones))],
    )
    with pytest.raises(TenancyError, match=r"vpc_cidr_blocks=") as raised:
        SharedHyperPodCluster(stack, "Cluster", platform=reference_platform, vpc=vpc)
    assert "primary CIDR block" in str(raised.value)

    cluster = SharedHyperPodCluster(
        stack, "Given", platform=reference_platform, vpc=vpc, vpc_cidr_blocks=[USER_CIDR, "10.51.0.0/16"]
    )
    assert set(_egress_except(cluster, "vision")) >= {USER_CIDR, "10.51.0.0/16"}


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"vpc_cidr_blocks": ["10.50.0.0/33"]}, r"vpc_cidr_blocks: '10.50.0.0/33' is not an IPv4 CIDR"),
        ({"vpc_cidr_blocks": ["172.20.0.0/14"]}, r"serviceCidr '172.20.0.0/16' overlaps the VPC's block"),
    ],
)
def test_bad_vpc_blocks_are_refused(
    reference_platform: Platform, props: dict[str, Any], message: str
) -> None:
    app = cdk.App()
    stack = _UserStack(app, "Mine", platform=reference_platform)
    vpc = _user_vpc(stack, reference_platform)
    with pytest.raises(TenancyError, match=message):
        SharedHyperPodCluster(stack, "Cluster", platform=reference_platform, vpc=vpc, **props)


def _edited_in_code(platform: Platform) -> Platform:
    """A team with 50 p5 instances and another team's POSIX GID, changed with ``dataclasses.replace``."""
    research, vision, *rest = platform.teams
    greedy = replace(research, compute=replace(research.compute, quotas={"ml.p5.48xlarge": 50}))
    thief = replace(vision, identity=replace(vision.identity, posix_gid=research.identity.posix_gid))
    return replace(platform, teams=(greedy, thief, *rest))


def test_a_policy_changed_in_code_is_validated_by_the_stage(reference_platform: Platform) -> None:
    edited = _edited_in_code(reference_platform)
    codes = {issue.code for issue in validate_platform(edited, raise_on_error=False)}
    app = cdk.App()
    with pytest.raises(PolicyError) as raised:
        PlatformStage(app, "edited", platform=edited)
    assert {issue.code for issue in raised.value.issues} == codes
    assert codes >= {"HPT-QUOTA-CAPACITY"} and "teams[1].identity.posixGid" in str(raised.value)
    assert "PlatformStage 'edited'" in str(raised.value)
    assert not app.node.children, "nothing is partially built"


@pytest.mark.parametrize("construct", ["cluster", "tenant"])
def test_a_policy_changed_in_code_is_validated_by_each_construct(
    reference_platform: Platform, construct: str
) -> None:
    edited = _edited_in_code(reference_platform)
    app = cdk.App()
    stack = _UserStack(app, "Mine", platform=reference_platform)
    with pytest.raises(PolicyError, match=r"the policy given to Mine/"):
        if construct == "cluster":
            SharedHyperPodCluster(stack, "Cluster", platform=edited)
        else:
            imported = SharedHyperPodCluster.from_attributes(
                stack,
                "Shared",
                platform=edited,
                eks_cluster_name="shared-gpu",
                kubectl_provider_service_token="arn:aws:lambda:us-east-1:111122223333:function:kubectl",
                hyperpod_cluster_arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdef123456",
                vpc_id="vpc-0123456789abcdef0",
                private_subnet_ids=["subnet-01", "subnet-02"],
                api_endpoint_security_group_id="sg-0123456789abcdef0",
                data_bucket_name="shared-gpu-team-data",
                file_system_id="fs-0123456789abcdef0",
                file_system_dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
                file_system_mount_name="abcdefgh",
                network_policy_enforced=True,
            )
            TeamTenant(stack, "Research", cluster=imported, team="research")


def test_a_valid_policy_changed_in_code_synthesizes(reference_platform: Platform) -> None:
    research, *rest = reference_platform.teams
    lighter = replace(research, compute=replace(research.compute, quotas={"ml.p5.48xlarge": 8}))
    edited = replace(reference_platform, teams=(lighter, *rest))
    stage = PlatformStage(cdk.App(), "edited", platform=edited)
    assert set(stage.team_stacks) == {t.name for t in reference_platform.teams}


def _readme_quick_starts() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


@pytest.mark.parametrize("which", [0, 1], ids=["platform-stage", "compose-yourself"])
def test_the_readme_quick_starts_need_no_lookup(
    which: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as written, with CDK's default context: no context lookup is left for ``cdk synth`` (credentials)."""
    shutil.copy(PLATFORM_YAML, tmp_path / "platform.yaml")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(_readme_quick_starts()[which], "app.py", "exec"), namespace)
    directory = Path(namespace["app"].synth().directory)
    missing = [
        m["key"]
        for f in directory.rglob("manifest.json")
        for m in json.loads(f.read_text()).get("missing", [])
    ]
    assert not missing


def _other_stage_vpc(app: cdk.App, platform: Platform) -> ec2.Vpc:
    network = cdk.Stage(app, "Network", env=cdk.Environment(account=platform.account, region=platform.region))
    return _user_vpc(_UserStack(network, "Vpc", platform=platform), platform)


def test_a_vpc_object_of_another_stage_is_refused_naming_the_prop(reference_platform: Platform) -> None:
    app = cdk.App(context=zone_context(reference_platform))
    vpc = _other_stage_vpc(app, reference_platform)
    with pytest.raises(
        TenancyError, match=r"vpc is the VPC object 'Network/Vpc/UserVpc' of another stage"
    ) as raised:
        PlatformStage(app, "mine", platform=reference_platform, cluster_options=ClusterOptions(vpc=vpc))
    assert "VpcAttributes(vpc_id=..., cidr_blocks=[...], private_subnets=" in str(raised.value)


def test_the_stage_takes_a_vpc_by_its_attributes(reference_platform: Platform) -> None:
    zones = reference_platform.cluster.availability_zones
    attributes = VpcAttributes(
        vpc_id="vpc-0123456789abcdef0",
        cidr_blocks=[USER_CIDR, SECONDARY_CIDR],
        private_subnets={zone: f"subnet-0{i}23456789abcdef0" for i, zone in enumerate(zones)},
    )
    stage = PlatformStage(
        cdk.App(), "mine", platform=reference_platform, cluster_options=ClusterOptions(vpc=attributes)
    )
    cluster = stage.cluster_stack.cluster
    assert cluster.vpc.vpc_id == "vpc-0123456789abcdef0"
    assert cluster.vpc_cidr_blocks == (USER_CIDR, SECONDARY_CIDR)
    chart = stage.team_stacks["research"].tenant.chart.to_json()
    (egress,) = [o for o in chart if o["metadata"]["name"] == "allow-internet-egress"]
    assert {USER_CIDR, SECONDARY_CIDR} <= set(egress["spec"]["egress"][0]["to"][0]["ipBlock"]["except"])
    with pytest.raises(TenancyError, match=r"private_subnets=\.\.\.\) names zones"):
        PlatformStage(
            cdk.App(),
            "short",
            platform=reference_platform,
            cluster_options=ClusterOptions(vpc=replace(attributes, private_subnets={zones[0]: "subnet-01"})),
        )


def test_the_templates_do_not_follow_the_apps_flags_silently(reference: Synth, tmp_path: Path) -> None:
    """An app with CDK's default context (no ``cdk.json`` of this repository): the same resources but the log
    groups of CDK's own Lambdas, and a warning naming each flag the templates still depend on."""
    app = cdk.App(outdir=str(tmp_path))
    stage = PlatformStage(app, reference.platform.name, platform=reference.platform)
    templates = {s.stack_name: s.template for s in stage.synth().stacks}
    assert set(templates) == set(reference.templates)
    for name, template in templates.items():
        ours = Counter(r["Type"] for r in template["Resources"].values())
        repo = Counter(r["Type"] for r in reference.templates[name]["Resources"].values())
        assert set(repo - ours) <= {"AWS::Logs::LogGroup"} and not ours - repo, (
            name,
            repo - ours,
            ours - repo,
        )
    cluster = Counter(r["Type"] for r in templates[stage.cluster_stack.stack_name]["Resources"].values())
    assert cluster["AWS::IAM::OIDCProvider"] == 1 and "Custom::AWSCDKOpenIdConnectProvider" not in cluster
    assert cluster["Custom::VpcRestrictDefaultSG"] == 1
    warnings = [
        str(e.data)
        for n in stage.cluster_stack.node.find_all()
        for e in n.node.metadata
        if e.type == "aws:cdk:warning" and "HPT-FEATURE-FLAGS" in str(e.data)
    ]
    assert len(warnings) == 1
    assert all(flag in warnings[0] for flag in TEMPLATE_FLAGS)
    repo_warnings = [
        e
        for n in reference.stage.cluster_stack.node.find_all()
        for e in n.node.metadata
        if "HPT-FEATURE-FLAGS" in str(e.data)
    ]
    assert not repo_warnings


@pytest.mark.parametrize("which", [0, 1], ids=["platform-stage", "compose-yourself"])
def test_a_policy_error_in_the_readme_app_is_its_message_not_a_traceback(which: int, tmp_path: Path) -> None:
    broken = PLATFORM_YAML.read_text(encoding="utf-8").replace("posixGid: 20002", "posixGid: 20001", 1)
    assert broken != PLATFORM_YAML.read_text(encoding="utf-8")
    (tmp_path / "platform.yaml").write_text(broken, encoding="utf-8")
    (tmp_path / "app.py").write_text(_readme_quick_starts()[which], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "app.py"], cwd=tmp_path, capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    problems = [line for line in done.stderr.splitlines() if "problem(s) in platform.yaml" in line]
    assert problems and "posixGid" in done.stderr, done.stderr[-2000:]


def test_compute_quota_is_a_typed_attribute(reference: Synth) -> None:
    """``TeamTenant.compute_quota``: the quota's ARN, ID and name typed, not a bare ``CfnResource`` to dig into."""
    tenant = reference.stage.team_stacks["research"].tenant
    quota = tenant.compute_quota
    assert quota is not None
    stack = cdk.Stack.of(tenant)
    logical_id = stack.resolve(quota.resource.logical_id)
    assert stack.resolve(quota.compute_quota_arn) == {"Ref": logical_id}
    assert stack.resolve(quota.compute_quota_id) == {"Fn::GetAtt": [logical_id, "ComputeQuotaId"]}
    assert quota.name == "research-quota"
    assert quota.resource.cfn_resource_type == "AWS::SageMaker::ComputeQuota"
