"""The daily drift audit: the handler end to end (moto server + stubbed EKS and compute quotas, and a fake Kubernetes
API over real TLS reached with an EKS token), its asset, and the construct (schedule, alarm to the platform's topic,
read-only IAM and RBAC, the private API endpoint), the teams' records, and the SSO role lookup re-run."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import fnmatch
import json
import shutil
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import kubernetes_validate
import pytest
from drift_world import AwsWorld
from iam_eval import is_allowed
from kube_world import FakeKube, named, rendered_cluster, write_kube_records
from moto_server import reset
from platforms import CLUSTER_ARN, FSX, reference_data, reference_platform
from rbac_eval import Authorizer, Request, Subject
from synth import Synth, new_app, render_intrinsics, resources_of
from webhook_server import certificates, free_port

from hyperpod_tenancy.constructs._private.lambda_assets import asset_directory
from hyperpod_tenancy.constructs.drift_audit import (
    AUDIT_GROUP,
    METRIC_NAMESPACE,
    audit_asset_files,
    kube_record_parameter,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.audit_record import PLATFORM_NAMESPACES, kube_expectation
from hyperpod_tenancy.k8s.labels import TENANT_LABEL
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import ACCELERATOR_QUOTA_NAME, DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import names, platform_from_dict
from hyperpod_tenancy.runtime import drift_audit, kube_drift
from hyperpod_tenancy.stacks import PlatformStage
from hyperpod_tenancy.tools.audit.model import team_stack

EVENT = {
    "version": "0",
    "id": "53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa",
    "detail-type": "Scheduled Event",
    "source": "aws.events",
    "account": "111122223333",
    "time": "2026-07-01T06:00:00Z",
    "region": "us-east-1",
    "resources": ["arn:aws:events:us-east-1:111122223333:rule/drift-audit"],
    "detail": {},
}


def _environment(monkeypatch: pytest.MonkeyPatch, world: AwsWorld) -> None:
    platform = world.platform
    monkeypatch.setenv("CLUSTER_NAME", platform.cluster.name)
    monkeypatch.setenv("EKS_CLUSTER_NAME", platform.cluster.name)
    monkeypatch.setenv("HYPERPOD_CLUSTER_ARN", CLUSTER_ARN)
    monkeypatch.setenv("ACCOUNT_ID", platform.account)
    monkeypatch.setenv("RECORDS_PATH", names.drift_audit_records(platform.cluster.name))
    monkeypatch.setenv("METRIC_NAMESPACE", METRIC_NAMESPACE)


@dataclasses.dataclass
class Cluster:
    """The fake API server of a run, and the objects it lists (mutable)."""

    server: FakeKube
    objects: dict[str, list[dict[str, Any]]]


def _eks_token(token: str) -> bool:
    """Whether a bearer token is an EKS token: a presigned STS GetCallerIdentity URL with the cluster header signed."""
    if not token.startswith("k8s-aws-v1."):
        return False
    body = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode()
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    return query.get("Action") == ["GetCallerIdentity"] and "x-k8s-aws-id" in query.get(
        "X-Amz-SignedHeaders", [""]
    )[0].split(";")


@pytest.fixture
def cluster(moto: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[AwsWorld, Cluster]]:
    """A deployed reference platform: AWS (moto and stubs) and the cluster's API over TLS, with every record."""
    reset(moto)
    world = AwsWorld(reference_platform())
    _environment(monkeypatch, world)
    platform = world.platform
    write_kube_records(
        world.session.client("ssm"), platform, stack_of=lambda team: team_stack(platform, team)
    )
    objects = rendered_cluster(platform)
    tls = certificates(tmp_path)
    with FakeKube(objects, tls=tls, accept=_eks_token) as server:
        monkeypatch.setenv("KUBE_RECORDS_PATH", names.drift_audit_kubernetes_records(platform.cluster.name))
        monkeypatch.setenv("PLATFORM_NAMESPACES", ",".join(sorted(PLATFORM_NAMESPACES)))
        monkeypatch.setenv("TENANT_LABEL", TENANT_LABEL)
        monkeypatch.setenv("API_ENDPOINT", server.url)
        monkeypatch.setenv("CA_DATA", base64.b64encode(tls.ca.read_bytes()).decode())
        yield world, Cluster(server=server, objects=objects)


def _published(world: AwsWorld) -> list[float]:
    cloudwatch = world.session.client("cloudwatch")
    stats = cloudwatch.get_metric_statistics(
        Namespace=METRIC_NAMESPACE,
        MetricName=drift_audit.METRIC_NAME,
        Dimensions=[{"Name": "Cluster", "Value": world.platform.cluster.name}],
        StartTime=dt.datetime(2026, 6, 30, tzinfo=dt.UTC),
        EndTime=dt.datetime(2026, 7, 2, tzinfo=dt.UTC),
        Period=86400,
        Statistics=["Maximum"],
    )
    return [point["Maximum"] for point in stats["Datapoints"]]


def test_scheduled_run_on_a_matching_platform_publishes_zero(
    moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    reset(moto)
    world = AwsWorld(reference_platform())
    _environment(monkeypatch, world)
    clients, stubs = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert result == {"teams": 3, "kubernetes_teams": 0, "findings": [], "count": 0}
    assert _published(world) == [0.0]


def test_scheduled_run_reads_the_cluster_with_an_eks_token(cluster: tuple[AwsWorld, Cluster]) -> None:
    world, api = cluster
    clients, stubs = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert result == {"teams": 3, "kubernetes_teams": 3, "findings": [], "count": 0}
    assert _published(world) == [0.0]
    # every cluster-wide list, each followed through its pages, each request with an EKS token
    paths = {urllib.parse.urlsplit(p).path for p in api.server.requests}
    assert paths == set(kube_drift.LIST_PATHS.values())
    assert any("continue=" in p for p in api.server.requests)
    assert api.server.tokens and all(t.startswith("k8s-aws-v1.") for t in api.server.tokens)


def _label_dropped(objects: dict[str, list[dict[str, Any]]]) -> None:
    namespace = named(objects["Namespace"], "", names.namespace("vision"))
    del namespace["metadata"]["labels"][TENANT_LABEL]


def _quota_raised(objects: dict[str, list[dict[str, Any]]]) -> None:
    quota = next(
        q
        for q in objects["ResourceQuota"]
        if q["metadata"]["namespace"] == names.namespace("research")
        and q["metadata"]["name"] == ACCELERATOR_QUOTA_NAME
    )
    hard = quota["spec"]["hard"]
    key = next(k for k in hard if "nvidia.com/gpu" in k)
    hard[key] = str(int(hard[key]) * 10)


def _cluster_admin_for_a_team(objects: dict[str, list[dict[str, Any]]]) -> None:
    objects["ClusterRoleBinding"].append(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "inference-admin", "uid": "u-1", "resourceVersion": "900"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "cluster-admin",
            },
            "subjects": [
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Group",
                    "name": names.kubernetes_group("inference"),
                }
            ],
        }
    )


def _limits_removed(objects: dict[str, list[dict[str, Any]]]) -> None:
    objects["LimitRange"] = [
        r for r in objects["LimitRange"] if r["metadata"]["namespace"] != names.namespace("research")
    ]


@pytest.mark.parametrize(
    ("drift", "expected"),
    [
        (_label_dropped, ("namespace-label", "vision")),
        (_quota_raised, ("resourcequota-edited", "research")),
        (_cluster_admin_for_a_team, ("clusterrolebinding-undeclared", "inference")),
        (_limits_removed, ("limitrange-missing", "research")),
    ],
)
def test_scheduled_run_finds_kubernetes_drift(
    cluster: tuple[AwsWorld, Cluster], drift: Any, expected: tuple[str, str]
) -> None:
    world, api = cluster
    drift(api.objects)
    clients, _ = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    assert [(f["kind"], f["team"]) for f in result["findings"]] == [expected]
    (finding,) = result["findings"]
    assert finding["fix"] and finding["expected"] != finding["actual"]
    assert _published(world) == [1.0]


def test_the_lambda_audits_the_namespaces_its_records_name(cluster: tuple[AwsWorld, Cluster]) -> None:
    """A team whose Kubernetes record is gone is not judged (the Lambda lists no team of its own)."""
    world, api = cluster
    world.session.client("ssm").delete_parameter(
        Name=names.drift_audit_kubernetes_record(world.platform.cluster.name, "vision")
    )
    _label_dropped(api.objects)
    clients, _ = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    assert (result["kubernetes_teams"], result["count"]) == (2, 0)


@pytest.mark.parametrize("trouble", ["closed port", "untrusted certificate", "refused list"])
def test_a_cluster_the_audit_cannot_read_is_a_finding_not_a_quiet_failure(
    cluster: tuple[AwsWorld, Cluster],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
    trouble: str,
) -> None:
    world, api = cluster
    if trouble == "closed port":
        monkeypatch.setenv("API_ENDPOINT", f"https://127.0.0.1:{free_port()}")
    elif trouble == "untrusted certificate":
        other = certificates(tmp_path_factory.mktemp("other-ca"))
        monkeypatch.setenv("CA_DATA", base64.b64encode(other.ca.read_bytes()).decode())
    else:
        api.server.fail_with = 403  # as without the ClusterRole's rules
    clients, _ = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    assert [f["kind"] for f in result["findings"]] == ["kubernetes-unreadable"]
    assert "access entry" in result["findings"][0]["fix"]
    if trouble == "refused list":
        assert "403" in result["findings"][0]["actual"]
    assert _published(world) == [1.0]


def test_scheduled_run_counts_each_drift(moto: str, monkeypatch: pytest.MonkeyPatch) -> None:
    reset(moto)
    world = AwsWorld(reference_platform())
    _environment(monkeypatch, world)
    # privilege creep, a quota edited by hand, a record no stack owns any more
    world.add_entry("arn:aws:iam::123456789012:role/contractor", [names.kubernetes_group("vision")])
    world.quotas[names.compute_quota("research")]["ComputeQuotaTarget"]["FairShareWeight"] = 1000
    world.session.client("ssm").put_parameter(
        Name=names.drift_audit_record(world.platform.cluster.name, "old"), Value="{not json", Type="String"
    )
    clients, stubs = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    for stub in stubs:
        stub.assert_no_pending_responses()
    assert sorted((f["kind"], f["team"]) for f in result["findings"]) == [
        ("access-entry-undeclared", "vision"),
        ("audit-record-unreadable", ""),
        ("compute-quota-edited", "research"),
    ]
    assert result["count"] == 3
    assert _published(world) == [3.0]


def test_a_quota_in_accelerators_is_compared_in_the_figure_it_is_stated_in(
    moto: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service fills vCPUs and memory of a quota stated in accelerators: that is no drift; editing the
    accelerators, or an absolute borrow limit, is."""
    data = reference_data()
    data["teams"][1]["compute"]["quotas"] = {"ml.p5.48xlarge": {"accelerators": 44}}
    data["teams"][1]["compute"]["absoluteBorrowLimits"] = {"ml.p5.48xlarge": {"accelerators": 4}}
    platform = platform_from_dict(data)
    quota = names.compute_quota("vision")
    kinds = []
    for edit in ("filled by the service", "accelerators", "absolute limit"):
        reset(moto)
        world = AwsWorld(platform)
        _environment(monkeypatch, world)
        config = world.quotas[quota]["ComputeQuotaConfig"]
        config["ComputeQuotaResources"][0] |= {"VCpu": 528.0, "MemoryInGiB": 11264.0}
        config["ResourceSharingConfig"]["AbsoluteBorrowLimits"][0] |= {"VCpu": 48.0, "MemoryInGiB": 1024.0}
        if edit == "accelerators":
            config["ComputeQuotaResources"][0]["Accelerators"] = 40
        elif edit == "absolute limit":
            config["ResourceSharingConfig"]["AbsoluteBorrowLimits"][0]["Accelerators"] = 64
        clients, _ = world.clients()
        result = drift_audit.handler(EVENT, None, clients=clients)
        kinds.append([(f["kind"], f["team"]) for f in result["findings"]])
    assert kinds == [[], [("compute-quota-edited", "vision")], [("compute-quota-edited", "vision")]]


def test_the_lambda_learns_the_teams_from_the_records(moto: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A team whose record is gone is not audited by the Lambda (which lists no team of its own)."""
    reset(moto)
    world = AwsWorld(reference_platform())
    _environment(monkeypatch, world)
    world.session.client("ssm").delete_parameter(Name=names.drift_audit_record("shared-gpu", "vision"))
    world.expectations = {k: v for k, v in world.expectations.items() if k != "vision"}
    # vision's own entries still map to its group, but nobody declares the group any more: nothing to judge
    clients, _ = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    assert result["teams"] == 2
    assert result["count"] == 0


def test_a_record_of_another_schema_version_is_reported() -> None:
    record = dataclasses.replace(
        drift_audit.TeamExpectation(
            team="t", stack="s", permission_set_name="T", instance_arn="i", group_id="g", kubernetes_group="k"
        )
    ).to_record()
    record["schemaVersion"] = 2
    with pytest.raises(drift_audit.AuditError, match="schemaVersion 2, this audit reads 1"):
        drift_audit.TeamExpectation.from_record(record)


def test_a_kubernetes_record_the_lambda_cannot_read_is_a_finding(cluster: tuple[AwsWorld, Cluster]) -> None:
    world, _ = cluster
    ssm = world.session.client("ssm")
    name = names.drift_audit_kubernetes_record(world.platform.cluster.name, "vision")
    record = json.loads(ssm.get_parameter(Name=name)["Parameter"]["Value"])
    record["schemaVersion"] = 2
    ssm.put_parameter(Name=name, Value=json.dumps(record), Type="String", Overwrite=True)
    with pytest.raises(
        drift_audit.AuditError, match="Kubernetes audit record of team 'vision' has schemaVersion 2"
    ):
        kube_drift.KubeExpectation.from_record(record)
    clients, _ = world.clients()
    result = drift_audit.handler(EVENT, None, clients=clients)
    assert [(f["kind"], f["object"]) for f in result["findings"]] == [
        ("audit-record-unreadable", f"SSM parameter {name}")
    ]
    assert result["kubernetes_teams"] == 2


def test_the_asset_runs_with_the_standard_library_and_boto3_only(tmp_path: Path) -> None:
    asset = Path(asset_directory("drift-audit", audit_asset_files()))
    # run a copy: importing from the asset itself would write __pycache__ into it, and change its hash for every
    # later synthesis on this machine
    directory = tmp_path / "asset"
    shutil.copytree(asset, directory)
    assert sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*.py")) == [
        "hyperpod_tenancy/__init__.py",
        "hyperpod_tenancy/runtime/__init__.py",
        "hyperpod_tenancy/runtime/audit_findings.py",
        "hyperpod_tenancy/runtime/drift_audit/__init__.py",
        "hyperpod_tenancy/runtime/drift_audit/_common.py",
        "hyperpod_tenancy/runtime/drift_audit/access_entries.py",
        "hyperpod_tenancy/runtime/drift_audit/aws.py",
        "hyperpod_tenancy/runtime/drift_audit/daily.py",
        "hyperpod_tenancy/runtime/drift_audit/identity_center.py",
        "hyperpod_tenancy/runtime/drift_audit/sagemaker.py",
        "hyperpod_tenancy/runtime/kube_api.py",
        "hyperpod_tenancy/runtime/kube_drift.py",
        "hyperpod_tenancy/runtime/sso_role_resolver.py",
    ]
    probe = (
        "import sys, hyperpod_tenancy.runtime.drift_audit as m, hyperpod_tenancy.runtime.kube_drift as k; "
        "import hyperpod_tenancy.runtime.kube_api; "
        "assert m.__file__.startswith(sys.argv[1]), m.__file__; "
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in {'pydantic', 'yaml', 'aws_cdk', 'jsii', 'kubernetes'}); "
        "assert not bad, bad; print(m.handler.__name__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(directory)],
        env={"PYTHONPATH": str(directory), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "handler\n"


# ---------------------------------------------------------------------- the construct
def _chargeback(reference: Synth) -> dict[str, Any]:
    stack = reference.stage.chargeback_stack
    assert stack is not None
    return reference.templates[stack.stack_name]


def _function(template: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    (found,) = (
        (lid, r)
        for lid, r in resources_of(template, "AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") == "hyperpod_tenancy.runtime.drift_audit.handler"
    )
    return found


def test_the_function_runs_daily_and_its_alarm_notifies_the_topic(reference: Synth) -> None:
    template = _chargeback(reference)
    function_id, function = _function(template)
    env = function["Properties"]["Environment"]["Variables"]
    assert env["RECORDS_PATH"] == "/hyperpod-tenancy/shared-gpu/drift-audit/"
    assert env["METRIC_NAMESPACE"] == METRIC_NAMESPACE
    (rule,) = (
        r
        for r in resources_of(template, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    )
    assert rule["Properties"]["ScheduleExpression"] == "rate(1 day)"
    (alarm,) = (
        a
        for a in resources_of(template, "AWS::CloudWatch::Alarm").values()
        if a["Properties"].get("MetricName") == drift_audit.METRIC_NAME
    )
    props = alarm["Properties"]
    assert props["AlarmName"] == names.drift_audit_alarm("shared-gpu")
    assert props["Namespace"] == METRIC_NAMESPACE
    assert props["Dimensions"] == [{"Name": "Cluster", "Value": "shared-gpu"}]
    assert (props["ComparisonOperator"], props["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1)
    (topic_id,) = resources_of(template, "AWS::SNS::Topic")
    assert props["AlarmActions"] == [{"Ref": topic_id}]
    # the topic lets CloudWatch publish for the alarms of its own name pattern only: this alarm is one of them
    (publish,) = (
        s
        for p in resources_of(template, "AWS::SNS::TopicPolicy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    )
    pattern = render_intrinsics(publish["Condition"]["ArnLike"]["aws:SourceArn"]).rsplit(":", 1)[1]
    assert fnmatch.fnmatchcase(props["AlarmName"], pattern), (props["AlarmName"], pattern)


def _policy(template: dict[str, Any], function: dict[str, Any]) -> dict[str, Any]:
    role = function["Properties"]["Role"]["Fn::GetAtt"][0]
    (policy,) = (
        p["Properties"]["PolicyDocument"]
        for p in resources_of(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
    )
    return dict(render_intrinsics(policy))


def test_the_function_can_read_and_cannot_write(reference: Synth) -> None:
    template = _chargeback(reference)
    policy = _policy(template, _function(template)[1])
    actions = {
        a
        for s in policy["Statement"]
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    verbs = {
        a.split(":")[1].removeprefix("List").removeprefix("Describe").removeprefix("Get") != a.split(":")[1]
        for a in actions - {"cloudwatch:PutMetricData"}
    }
    assert verbs == {True}, sorted(actions)
    anything = "*"
    for action in (
        "sso:CreatePermissionSet",
        "sso:DeletePermissionSet",
        "sso:PutInlinePolicyToPermissionSet",
        "sso:CreateAccountAssignment",
        "iam:CreateRole",
        "iam:UpdateAssumeRolePolicy",
        "iam:PassRole",
        "eks:CreateAccessEntry",
        "eks:DeleteAccessEntry",
        "eks:AssociateAccessPolicy",
        "sagemaker:UpdateDomain",
        "sagemaker:UpdateComputeQuota",
        "sagemaker:DeleteComputeQuota",
        "ssm:PutParameter",
        "ssm:GetParametersByPath",  # only the audit records, below
    ):
        assert not is_allowed(policy, action, anything), action
    assert is_allowed(
        policy,
        "ssm:GetParametersByPath",
        "arn:aws:ssm:us-east-1:111122223333:parameter/hyperpod-tenancy/shared-gpu/drift-audit",
    )
    assert not is_allowed(
        policy,
        "ssm:GetParametersByPath",
        "arn:aws:ssm:us-east-1:111122223333:parameter/hyperpod-tenancy/shared-gpu/posix-identity",
    )
    assert is_allowed(
        policy,
        "eks:DescribeAccessEntry",
        "arn:aws:eks:us-east-1:111122223333:access-entry/cfn-token/role/111122223333/x/abc",
    )
    assert is_allowed(policy, "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": METRIC_NAMESPACE})
    assert not is_allowed(
        policy, "cloudwatch:PutMetricData", "*", {"cloudwatch:namespace": "HyperPodTenancy/Chargeback"}
    )


def _by_path(template: dict[str, Any], type_: str, path: str) -> dict[str, Any]:
    """The one resource of ``type_`` whose logical ID is ``path``'s (construct IDs joined, then a hash)."""
    prefix = path.replace("/", "")
    (found,) = (
        r
        for logical, r in resources_of(template, type_).items()
        if logical.startswith(prefix) and len(logical) == len(prefix) + 8
    )
    return found


def test_the_function_reaches_the_private_api_endpoint_as_a_read_only_group(reference: Synth) -> None:
    template = _chargeback(reference)
    function_id, function = _function(template)
    props = function["Properties"]
    env = props["Environment"]["Variables"]
    assert env["KUBE_RECORDS_PATH"] == "/hyperpod-tenancy/shared-gpu/drift-audit-kubernetes/"
    assert env["PLATFORM_NAMESPACES"].split(",") == sorted(PLATFORM_NAMESPACES)
    assert env["TENANT_LABEL"] == TENANT_LABEL
    assert "API_ENDPOINT" not in env  # DescribeCluster at run time
    # in the cluster's VPC, its own security group admitted to the endpoint's group on 443
    (group,) = props["VpcConfig"]["SecurityGroupIds"]
    ingress = _by_path(template, "AWS::EC2::SecurityGroupIngress", "DriftAudit/ApiAccess")
    assert ingress["Properties"]["SourceSecurityGroupId"] == group
    assert (ingress["Properties"]["FromPort"], ingress["Properties"]["ToPort"]) == (443, 443)
    # an access entry with no access policy, mapping the role to the audit's group only
    entry = _by_path(template, "AWS::EKS::AccessEntry", "DriftAudit/ClusterAccess")
    assert entry["Properties"]["KubernetesGroups"] == [AUDIT_GROUP]
    assert "AccessPolicies" not in entry["Properties"] and entry["Properties"]["Type"] == "STANDARD"
    assert entry["Properties"]["PrincipalArn"] == {"Fn::GetAtt": [props["Role"]["Fn::GetAtt"][0], "Arn"]}
    rbac = _by_path(template, "Custom::AWSCDK-EKS-KubernetesResource", "DriftAudit/ClusterRbac")
    manifests = json.loads(render_intrinsics(rbac["Properties"]["Manifest"]))
    for manifest in manifests:
        kubernetes_validate.validate(manifest, "1.33.0", strict=True)
    authorizer = Authorizer(manifests, bootstrap=False)
    auditor = Subject(user="arn:aws:sts::111122223333:assumed-role/audit/x", groups=(AUDIT_GROUP,))
    for kind, path in kube_drift.LIST_PATHS.items():
        group = "rbac.authorization.k8s.io" if "rbac" in path else ""
        resource = path.rsplit("/", 1)[1]
        assert authorizer.check(auditor, Request(verb="list", resource=resource, api_group=group)), kind
        for verb in ("create", "update", "patch", "delete", "watch"):
            assert not authorizer.check(auditor, Request(verb=verb, resource=resource, api_group=group))
    for resource, group in (
        ("secrets", ""),
        ("pods", ""),
        ("configmaps", ""),
        ("workloads", "kueue.x-k8s.io"),
    ):
        assert not authorizer.check(auditor, Request(verb="list", resource=resource, api_group=group))
    # the schedule starts once the function can read the cluster
    rule = next(
        r
        for r in resources_of(template, "AWS::Events::Rule").values()
        if r["Properties"]["Targets"][0]["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
    )
    depends = set(rule.get("DependsOn", []))
    assert {_logical(template, entry), _logical(template, rbac)} <= depends


def test_no_two_access_entries_of_the_platform_name_one_principal(reference: Synth) -> None:
    """EKS API Reference, CreateAccessEntry ``principalArn``: "You can't specify the same ARN in more than one
    access entry." The audit, the eviction collector and the teams each bring their own principal."""
    principals = [
        json.dumps([name, entry["Properties"]["PrincipalArn"]], sort_keys=True)
        for name, template in reference.templates.items()
        for entry in resources_of(template, "AWS::EKS::AccessEntry").values()
    ]
    assert len(principals) == len(set(principals)), sorted(principals)
    chargeback = _chargeback(reference)
    audit_role = _function(chargeback)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    entries = resources_of(chargeback, "AWS::EKS::AccessEntry").values()
    assert sum(audit_role in json.dumps(e["Properties"]["PrincipalArn"]) for e in entries) == 1


def _logical(template: dict[str, Any], resource: dict[str, Any]) -> str:
    return next(k for k, v in template["Resources"].items() if v is resource)


def test_the_function_may_describe_its_cluster_and_read_both_record_paths(reference: Synth) -> None:
    template = _chargeback(reference)
    policy = _policy(template, _function(template)[1])
    ssm = "arn:aws:ssm:us-east-1:111122223333:parameter/hyperpod-tenancy/shared-gpu/"
    assert is_allowed(policy, "ssm:GetParametersByPath", ssm + "drift-audit-kubernetes")
    assert is_allowed(policy, "eks:DescribeCluster", "cfn-token")  # the cluster's ARN, a token here
    role = _function(template)[1]["Properties"]["Role"]["Fn::GetAtt"][0]
    (describe,) = (
        st
        for p in resources_of(template, "AWS::IAM::Policy").values()
        if {"Ref": role} in p["Properties"]["Roles"]
        for st in p["Properties"]["PolicyDocument"]["Statement"]
        if st["Action"] == "eks:DescribeCluster"
    )
    # the cluster stack's EKS cluster, imported: that one cluster only
    assert (
        list(describe["Resource"]) == ["Fn::ImportValue"]
        and "ClusterEks" in describe["Resource"]["Fn::ImportValue"]
    )


def test_each_team_stack_records_what_its_chart_declares(reference: Synth) -> None:
    """The record the Lambda compares with is the rendering the command line compares with."""
    platform = reference.platform
    for team in platform.hosted_teams:
        template = reference.team(team.name)
        (param,) = (
            p["Properties"]
            for p in resources_of(template, "AWS::SSM::Parameter").values()
            if p["Properties"]["Name"] == names.drift_audit_kubernetes_record("shared-gpu", team.name)
        )
        assert param["Tier"] == "Standard" and len(param["Value"]) <= 4096
        record = kube_drift.KubeExpectation.from_record(json.loads(param["Value"]))
        chart = TeamChart(platform, team, fsx=FSX, service_account=DEFAULT_SERVICE_ACCOUNT).to_json()
        assert record == kube_expectation(platform, team, chart, stack=team_stack(platform, team.name))
        assert {m["kind"] for m in record.objects} == set(kube_drift.AUDITED_KINDS)


def test_a_kubernetes_record_beyond_a_standard_parameter_is_advanced_and_beyond_that_refused() -> None:
    def record(size: int) -> kube_drift.KubeExpectation:
        return kube_drift.KubeExpectation(
            team="t",
            stack="p/Team-T",
            namespace="ns",
            kubernetes_group="g",
            labels={"padding": "x" * size},
            objects=[],
        )

    def tier(size: int) -> str:
        app = cdk.App()
        stack = cdk.Stack(app, "S")
        kube_record_parameter(stack, "R", cluster="c", expectation=record(size))
        (param,) = resources_of(app.synth().get_stack_by_name("S").template, "AWS::SSM::Parameter").values()
        return str(param["Properties"]["Tier"])

    assert tier(3000) == "Standard"
    assert tier(5000) == "Advanced"
    with pytest.raises(TenancyError, match=r"team t: the Kubernetes audit record \(\d+ characters\) exceeds"):
        tier(9000)


def test_each_team_stack_writes_its_audit_record(reference: Synth) -> None:
    for team in reference.platform.hosted_teams:
        template = reference.team(team.name)
        (param,) = (
            p["Properties"]
            for p in resources_of(template, "AWS::SSM::Parameter").values()
            if p["Properties"]["Name"] == names.drift_audit_record("shared-gpu", team.name)
        )
        record = drift_audit.TeamExpectation.from_record(json.loads(render_intrinsics(param["Value"])))
        assert record.team == team.name
        assert record.stack == f"ml-platform/{names.team_stack_id(team.name)}"
        assert record.kubernetes_group == names.kubernetes_group(team.name)
        assert record.compute_quota is not None
        assert record.compute_quota["ComputeQuotaTarget"]["TeamName"] == team.name


def test_no_team_stack_asks_for_a_new_lookup_without_the_context(reference: Synth) -> None:
    for team in reference.platform.hosted_teams:
        (lookup,) = resources_of(reference.team(team.name), "Custom::SsoRoleArn").values()
        assert "Lookup" not in lookup["Properties"]


def test_the_context_value_reruns_the_lookup(tmp_path: Path) -> None:
    """`cdk deploy <team stack> -c hyperpod-tenancy:ssoRoleLookup=<new value>` changes one property of the lookup."""
    platform = reference_platform()
    app = new_app(tmp_path)
    app.node.set_context(drift_audit.SSO_ROLE_LOOKUP_CONTEXT, "1751349600")
    stage = PlatformStage(app, platform.name, platform=platform)
    assembly = stage.synth()
    for team, stack in stage.team_stacks.items():
        template = assembly.get_stack_by_name(stack.stack_name).template
        (lookup,) = resources_of(template, "Custom::SsoRoleArn").values()
        assert lookup["Properties"]["Lookup"] == "1751349600", team


def test_the_constructs_import_the_record_format_without_boto3() -> None:
    """The base install has no boto3: the team stacks read the record format and the context key without it."""
    probe = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('boto3', 'botocore'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import hyperpod_tenancy.constructs.tenant.team_tenant, hyperpod_tenancy.constructs.drift_audit\n"
        "import hyperpod_tenancy.runtime.drift_audit as m\n"
        "print(m.SSO_ROLE_LOOKUP_CONTEXT)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == drift_audit.SSO_ROLE_LOOKUP_CONTEXT
