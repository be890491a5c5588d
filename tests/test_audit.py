"""``hyperpod-tenancy audit``: one test per kind of drift, and nothing on a platform that matches its policy.

AWS: Identity Center, IAM, SSM and the Studio domains are moto's (server mode, real HTTP); EKS access entries and
Task Governance compute quotas, which moto 5.2 does not serve, are botocore ``Stubber`` responses validated against
botocore's service models. Kubernetes: the checks on what the API server lists of the platform's own rendered team
charts (plus the objects a real EKS cluster has of its own), mutated one way at a time; the command line reading
the real API server, as the audit's own identity, is ``test_cluster_drift_audit.py``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from botocore.stub import Stubber
from drift_world import NOW, TRUST, AwsWorld
from hypothesis import given, settings
from hypothesis import strategies as st
from kube_world import named, rendered_cluster
from kubernetes.utils.quantity import parse_quantity as kubernetes_quantity
from moto_server import reset
from platforms import PLATFORM_YAML, kueue_platform, reference_platform

from hyperpod_tenancy import cli
from hyperpod_tenancy.k8s.labels import TENANT_LABEL
from hyperpod_tenancy.k8s.team_manifests import ACCELERATOR_QUOTA_NAME, DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.runtime.drift_audit import AwsClients, Finding
from hyperpod_tenancy.runtime.kube_drift import parse_quantity
from hyperpod_tenancy.tools.audit.aws import run_aws_checks
from hyperpod_tenancy.tools.audit.kube import LiveCluster, kube_findings
from hyperpod_tenancy.tools.audit.model import team_expectations, team_stack

PLATFORMS = {"task-governance": reference_platform, "kueue": kueue_platform}
TEAM = "research"


@pytest.fixture
def aws(moto: str) -> Iterator[AwsWorld]:
    reset(moto)
    yield AwsWorld(reference_platform())


def kinds(findings: list[Finding]) -> list[tuple[str, str]]:
    return sorted((f.kind, f.team) for f in findings)


@pytest.mark.parametrize("backend", PLATFORMS)
def test_a_platform_matching_its_policy_has_no_aws_finding(moto: str, backend: str) -> None:
    reset(moto)
    world = AwsWorld(PLATFORMS[backend]())
    assert world.run() == []
    # the Task Governance platform's quotas were compared, the Kueue one has none
    assert bool(world.quotas) is (backend == "task-governance")


def test_permission_set_missing(aws: AwsWorld) -> None:
    aws.delete_assignment(TEAM)
    aws.sso.delete_permission_set(InstanceArn=aws.instance, PermissionSetArn=aws.permission_sets[TEAM])
    findings = aws.run()
    assert kinds(findings) == [("permission-set-missing", TEAM)]
    assert (
        findings[0].fix
        == "cdk deploy ml-platform/Team-Research -c hyperpod-tenancy:ssoRoleLookup=$(date +%s) (re-creates it, its assignment and the role lookup)"
    )


def test_managed_policy_attached_to_a_permission_set(aws: AwsWorld) -> None:
    aws.sso.attach_managed_policy_to_permission_set(
        InstanceArn=aws.instance,
        PermissionSetArn=aws.permission_sets[TEAM],
        ManagedPolicyArn="arn:aws:iam::aws:policy/AdministratorAccess",
    )
    findings = aws.run()
    assert kinds(findings) == [("permission-set-policy-added", TEAM)]
    assert "AdministratorAccess" in findings[0].actual


def test_assignment_missing(aws: AwsWorld) -> None:
    aws.delete_assignment(TEAM)
    findings = aws.run()
    assert kinds(findings) == [("assignment-missing", TEAM)]
    assert findings[0].actual == "no assignment"


def test_recreated_permission_set_leaves_the_access_entry_on_a_dead_role(aws: AwsWorld) -> None:
    old = aws.sso_roles[TEAM]
    aws.iam.delete_role(RoleName=old["RoleName"])
    new = aws.new_sso_role(TEAM)  # Identity Center provisions a role with a new suffix
    findings = aws.run()
    assert kinds(findings) == [("access-entry-stale", TEAM)]
    finding = findings[0]
    assert new["Arn"] in finding.expected
    assert old["Arn"] in finding.actual
    assert "hyperpod-tenancy:ssoRoleLookup=" in finding.fix
    assert finding.fix.startswith("cdk deploy ml-platform/Team-Research ")


def test_role_recreated_with_the_same_arn_after_the_access_entry(aws: AwsWorld) -> None:
    role = aws.sso_roles[TEAM]
    entry = aws.entries[role["Arn"]]
    aws.add_entry(role["Arn"], entry["kubernetesGroups"], created=NOW - dt.timedelta(days=30))
    findings = aws.run()
    assert kinds(findings) == [("access-entry-stale", TEAM)]
    assert findings[0].fix.startswith(
        f"aws eks delete-access-entry --cluster-name shared-gpu --principal-arn {role['Arn']}, then aws eks create-access-entry"
    )


def test_undeclared_access_entry_mapping_to_a_team_group(aws: AwsWorld) -> None:
    intruder = "arn:aws:iam::123456789012:role/contractor"
    aws.add_entry(intruder, [names.kubernetes_group(TEAM)])
    findings = aws.run()
    assert kinds(findings) == [("access-entry-undeclared", TEAM)]
    assert findings[0].fix.startswith(
        f"aws eks delete-access-entry --cluster-name shared-gpu --principal-arn {intruder}"
    )


def test_declared_access_entry_given_another_group(aws: AwsWorld) -> None:
    role = aws.sso_roles[TEAM]["Arn"]
    aws.add_entry(role, [names.kubernetes_group(TEAM), names.kubernetes_group("vision")])
    assert kinds(aws.run()) == [("access-entry-groups", TEAM)]


def test_studio_execution_role_changed(aws: AwsWorld) -> None:
    other = aws.iam.create_role(RoleName="console-made-role", AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    aws.replace_domain(TEAM, other)
    findings = aws.run()
    assert kinds(findings) == [("studio-execution-role", TEAM)]
    assert other in findings[0].actual
    assert aws.execution_roles[TEAM] in findings[0].expected


def test_compute_quota_edited(aws: AwsWorld) -> None:
    quota = aws.quotas[names.compute_quota(TEAM)]
    quota["ComputeQuotaConfig"]["ComputeQuotaResources"][0]["Count"] += 3
    quota["ComputeQuotaConfig"]["ResourceSharingConfig"]["BorrowLimit"] = 100
    findings = aws.run()
    assert kinds(findings) == [("compute-quota-edited", TEAM)]
    assert "ResourceSharingConfig.BorrowLimit 50 -> 100" in findings[0].actual
    assert "ComputeQuotaResources" in findings[0].actual


def test_compute_quota_fields_the_service_adds_are_no_drift(aws: AwsWorld) -> None:
    quota = aws.quotas[names.compute_quota(TEAM)]
    quota["ComputeQuotaConfig"]["ComputeQuotaResources"][0]["Accelerators"] = 8
    assert aws.run() == []


def test_team_stack_not_deployed(aws: AwsWorld) -> None:
    ssm = aws.session.client("ssm")
    ssm.delete_parameter(Name=names.drift_audit_record("shared-gpu", TEAM))
    # the audit then does not know the team's quota as deployed: it is not asked for
    aws.expectations[TEAM] = dataclasses.replace(aws.expectations[TEAM], compute_quota=None)
    findings = aws.run()
    # without the record the deployed values are unknown: the quota is not compared, the role is still
    assert kinds(findings) == [("audit-record-missing", TEAM)]


# ---------------------------------------------------------------------- Kubernetes
def audit(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["audit", *args])
    return status, out.getvalue(), err.getvalue()


def kube_kinds(platform: Platform, objects: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    stacks = {t.name: team_stack(platform, t.name) for t in platform.hosted_teams}
    live = LiveCluster(
        namespaces=objects["Namespace"], objects={k: v for k, v in objects.items() if k != "Namespace"}
    )
    return kinds(kube_findings(platform, live, stack_of=stacks))


@pytest.mark.parametrize("backend", PLATFORMS)
def test_a_cluster_matching_its_policy_has_no_kubernetes_finding(backend: str) -> None:
    """What the API server lists of the platform as applied (the command line on the real control plane:
    ``test_cluster_drift_audit.py``, which also checks :func:`rendered_cluster` against it)."""
    platform = PLATFORMS[backend]()
    assert kube_kinds(platform, rendered_cluster(platform)) == []


def test_namespace_lost_its_tenancy_label() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    namespace = named(objects["Namespace"], "", names.namespace(TEAM))
    del namespace["metadata"]["labels"][TENANT_LABEL]
    assert kube_kinds(platform, objects) == [("namespace-label", TEAM)]
    live = LiveCluster(namespaces=objects["Namespace"], objects=objects)
    (finding,) = kube_findings(platform, live, stack_of={t.name: "s" for t in platform.hosted_teams})
    assert finding.fix == f"kubectl label namespace {names.namespace(TEAM)} --overwrite {TENANT_LABEL}=true"
    assert "admission policies" in finding.actual


def _binding(
    kind: str, name: str, role: str, subjects: list[dict[str, Any]], namespace: str | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name} | ({"namespace": namespace} if namespace else {})
    obj = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    }
    kubernetes_validate.validate(obj, "1.33.0", strict=True)
    return obj


def test_extra_rolebinding_in_a_team_namespace() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    ns = names.namespace(TEAM)
    objects["RoleBinding"].append(
        _binding(
            "RoleBinding",
            "alice-edit",
            "edit",
            [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
            ns,
        )
    )
    # a binding of the cluster's own components in a team namespace is expected
    objects["RoleBinding"].append(
        _binding(
            "RoleBinding",
            "controller",
            "view",
            [{"kind": "ServiceAccount", "name": "x", "namespace": "kube-system"}],
            ns,
        )
    )
    assert kube_kinds(platform, objects) == [("rolebinding-undeclared", TEAM)]


def test_declared_rolebinding_edited() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    binding = next(
        b for b in objects["RoleBinding"] if b["metadata"].get("namespace") == names.namespace(TEAM)
    )
    binding["subjects"].append(
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": names.kubernetes_group("vision")}
    )
    assert kube_kinds(platform, objects) == [("rolebinding-edited", TEAM)]


def test_extra_clusterrolebinding_reaching_a_team() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    objects["ClusterRoleBinding"].append(
        _binding(
            "ClusterRoleBinding",
            "research-admin",
            "admin",
            [
                {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Group",
                    "name": names.kubernetes_group(TEAM),
                }
            ],
        )
    )
    objects["ClusterRoleBinding"].append(
        _binding(
            "ClusterRoleBinding",
            "team-sa-view",
            "view",
            [
                {
                    "kind": "ServiceAccount",
                    "name": DEFAULT_SERVICE_ACCOUNT,
                    "namespace": names.namespace("vision"),
                }
            ],
        )
    )
    objects["ClusterRoleBinding"].append(
        _binding(
            "ClusterRoleBinding",
            "everyone-view",
            "view",
            [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:authenticated"}],
        )
    )
    # a cluster-wide binding of someone who is no team member reaches no team namespace through a team subject
    objects["ClusterRoleBinding"].append(
        _binding(
            "ClusterRoleBinding",
            "ops-view",
            "view",
            [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "platform-oncall"}],
        )
    )
    assert kube_kinds(platform, objects) == [
        ("clusterrolebinding-undeclared", "every team"),
        ("clusterrolebinding-undeclared", TEAM),
        ("clusterrolebinding-undeclared", "vision"),
    ]


def test_resource_quota_edited() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    quota = named(objects["ResourceQuota"], names.namespace(TEAM), ACCELERATOR_QUOTA_NAME)
    key = next(iter(quota["spec"]["hard"]))
    quota["spec"]["hard"][key] = "1000"
    assert kube_kinds(platform, objects) == [("resourcequota-edited", TEAM)]


def test_resource_quota_removed() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    quota = named(objects["ResourceQuota"], names.namespace(TEAM), ACCELERATOR_QUOTA_NAME)
    objects["ResourceQuota"].remove(quota)
    assert kube_kinds(platform, objects) == [("resourcequota-missing", TEAM)]


def test_quantities_are_compared_by_value() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    limits = named(objects["LimitRange"], names.namespace(TEAM), "container-defaults")
    limits["spec"]["limits"][0]["defaultRequest"]["memory"] = "536870912"  # 512Mi, in bytes
    assert kube_kinds(platform, objects) == []


_SUFFIXES = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"]


@settings(max_examples=400, deadline=None)
@given(
    number=st.decimals(min_value=-(10**6), max_value=10**6, allow_nan=False, allow_infinity=False, places=3),
    suffix=st.sampled_from(_SUFFIXES) | st.integers(-6, 6).map(lambda e: f"e{e}"),
)
def test_the_lambdas_quantity_parser_agrees_with_the_kubernetes_client(number: Decimal, suffix: str) -> None:
    """The standard-library parser the Lambda compares quantities with is the official client's, value for value."""
    text = f"{number.normalize():f}{suffix}"
    assert parse_quantity(text) == kubernetes_quantity(text)


@pytest.mark.parametrize("text", ["", "Gi", "1.2.3", "1Gb", "one", "1e"])
def test_what_is_not_a_quantity_is_refused_by_both_parsers(text: str) -> None:
    with pytest.raises(ValueError):
        kubernetes_quantity(text)
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity(text)


def test_limit_range_edited() -> None:
    platform = reference_platform()
    objects = rendered_cluster(platform)
    limits = named(objects["LimitRange"], names.namespace(TEAM), "container-defaults")
    limits["spec"]["limits"][0]["default"] = {"memory": "4Gi"}
    kubernetes_validate.validate(limits, "1.33.0", strict=True)
    assert kube_kinds(platform, objects) == [("limitrange-edited", TEAM)]
    live = LiveCluster(namespaces=objects["Namespace"], objects=objects)
    (finding,) = kube_findings(platform, live, stack_of={t.name: "s" for t in platform.hosted_teams})
    assert finding.object == f"LimitRange {names.namespace(TEAM)}/container-defaults"
    assert finding.fix.startswith("echo ") and finding.fix.endswith(" | kubectl apply -f -")
    # the fix applies the rendered object (run with kubectl on the real server: test_cluster_drift_audit.py)
    applied = json.loads(finding.fix.removeprefix("echo '").removesuffix("' | kubectl apply -f -"))
    assert "default" not in applied["spec"]["limits"][0]


# ---------------------------------------------------------------------- errors
def test_no_credentials_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for var in (
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(var, raising=False)
    status, out, err = audit(str(PLATFORM_YAML), "--skip", "kubernetes")
    assert (status, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith(
        "hyperpod-tenancy audit: error: no AWS credentials in the environment, ~/.aws or an instance role"
    )


def test_unknown_profile_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    status, _, err = audit(str(PLATFORM_YAML), "--skip", "kubernetes", "--profile", "nobody")
    assert status == 2
    assert (
        err
        == "hyperpod-tenancy audit: error: AWS profile 'nobody' is not configured: pass --profile NAME of ~/.aws/config\n"
    )


def test_unreadable_kubeconfig_is_a_one_line_error(tmp_path: Path) -> None:
    status, _, err = audit(str(PLATFORM_YAML), "--skip", "aws", "--kubeconfig", str(tmp_path / "missing"))
    assert status == 2
    assert err.startswith("hyperpod-tenancy audit: error: cannot use the kubeconfig")
    assert err.count("\n") == 1


def test_refused_aws_call_is_a_one_line_error(aws: AwsWorld) -> None:
    clients, _ = aws.clients()
    eks, stub = aws.session.client("eks"), None
    stub = Stubber(eks)
    stub.add_client_error(
        "list_access_entries", "AccessDeniedException", "not authorized: eks:ListAccessEntries"
    )
    stub.activate()
    from hyperpod_tenancy.runtime.drift_audit import AuditError

    with pytest.raises(
        AuditError, match=r"^ListAccessEntries refused: AccessDeniedException: not authorized"
    ):
        run_aws_checks(
            aws.platform, session=aws.session, clients=AwsClients(**{**clients.__dict__, "eks": eks})
        )


def test_the_command_expects_what_the_team_stacks_record(aws: AwsWorld) -> None:
    """The names the command derives from the policy are the ones the stacks write into their records."""
    expectations, findings = team_expectations(aws.platform, aws.expectations)
    assert findings == []
    assert {e.team: e for e in expectations} == aws.expectations


def test_a_record_of_a_team_removed_from_the_policy(aws: AwsWorld) -> None:
    gone = dataclasses.replace(aws.expectations[TEAM], team="speech", stack="ml-platform/Team-Speech")
    _, findings = team_expectations(aws.platform, {**aws.expectations, "speech": gone})
    assert kinds(findings) == [("team-not-in-policy", "speech")]
    assert findings[0].fix == "cdk destroy ml-platform/Team-Speech (or put the team back into platform.yaml)"


def test_skipping_every_check_is_an_error_not_no_drift() -> None:
    """``--skip aws --skip kubernetes`` checks nothing: it must not print "No drift" and exit 0."""
    status, out, err = audit(str(PLATFORM_YAML), "--skip", "aws", "--skip", "kubernetes")
    assert (status, out) == (2, "")
    assert err == (
        "hyperpod-tenancy audit: error: --skip aws and --skip kubernetes leave nothing to check; "
        "skip one of them at most.\n"
    )
