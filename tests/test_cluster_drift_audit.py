"""The drift audit's Kubernetes half on the real control plane, reading as the audit's own identity.

The Kueue-backend reference platform is applied as a deploy applies it (``kueue_on_cluster``). The audit reads
with a client certificate for the user and group the function's EKS access entry maps it to (``AUDIT_GROUP``),
so the real RBAC authorizer grants it exactly what the platform's own ClusterRoleBinding of ``AUDIT_ROLE``
grants: a list outside that grant is refused and fails the test. Both halves run: the command line's
(``hyperpod-tenancy audit --skip aws --kubeconfig``, the official client) and the daily Lambda's Kubernetes checks,
fed the team stacks' synthesized Kubernetes audit records through SSM on moto, run with the function's synthesized
environment and listing the Lambda's paths in small pages as the same identity (impersonated: the Lambda's EKS
bearer token is not one this API server can verify).

The platform as applied has no finding. Each drift is then injected into the real server as an administrator
would (a namespace's tenancy label removed, a ResourceQuota raised, a cluster-admin ClusterRoleBinding for a
team's group, a LimitRange deleted), the audit reports exactly the expected finding, and the drift is put back
before the next one (the platform stays applied for the other modules).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from cluster_platform import OnCluster
from moto_server import reset
from platforms import reference_data
from synth import resources_of

from hyperpod_tenancy import cli
from hyperpod_tenancy.constructs.drift_audit import AUDIT_GROUP, AUDIT_ROLE
from hyperpod_tenancy.k8s.labels import TENANT_LABEL
from hyperpod_tenancy.k8s.team_manifests import ACCELERATOR_QUOTA_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime import drift_audit, kube_drift
from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding
from hyperpod_tenancy.tools import _audit_kube

pytestmark = pytest.mark.cluster

TEAM = "research"
#: The user EKS names the function's role by (an access entry without a username: the assumed-role ARN), with a
#: short role name (a certificate's common name holds 64 characters); RBAC binds the group, not the user.
AUDIT_USER = "arn:aws:sts::123456789012:assumed-role/DriftAudit/audit"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


@dataclass
class Audit:
    """The platform on the control plane and the audit's two readers, each as the audit's identity."""

    on: OnCluster
    kubeconfig: Path
    policy: Path
    lambda_run: Callable[[], list[Finding]]

    def cli(self, *args: str) -> tuple[int, str, str]:
        """``hyperpod-tenancy audit <policy> --skip aws --kubeconfig <the audit's>``: status, stdout, stderr."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(
                ["audit", str(self.policy), "--skip", "aws", "--kubeconfig", str(self.kubeconfig), *args]
            )
        return status, out.getvalue(), err.getvalue()

    def findings(self) -> list[tuple[str, str, str]]:
        """(kind, team, object) of each finding, the command line's and the Lambda's (which must agree)."""
        status, out, err = self.cli("--format", "json")
        assert err == "", err
        report = json.loads(out)
        by_cli = sorted((f["kind"], f["team"], f["object"]) for f in report["findings"])
        assert status == (1 if by_cli else 0), out
        by_lambda = sorted((f.kind, f.team, f.object) for f in self.lambda_run())
        assert by_lambda == by_cli
        return by_cli


def _function_environment(on: OnCluster) -> dict[str, str]:
    """The drift audit function's synthesized environment (the one with ``KUBE_RECORDS_PATH``)."""
    for template in on.synth.templates.values():
        for function in resources_of(template, "AWS::Lambda::Function").values():
            variables = function["Properties"].get("Environment", {}).get("Variables", {})
            if "KUBE_RECORDS_PATH" in variables:
                return {k: v for k, v in variables.items() if isinstance(v, str)}
    raise AssertionError("no drift audit function in the synthesized platform")


def _kube_records(on: OnCluster) -> dict[str, str]:
    """Each team stack's Kubernetes audit record as synthesized: SSM parameter name -> value."""
    records = {}
    for team in on.synth.platform.hosted_teams:
        name = names.drift_audit_kubernetes_record(on.synth.platform.cluster.name, team.name)
        (value,) = (
            p["Properties"]["Value"]
            for p in resources_of(on.synth.team(team.name), "AWS::SSM::Parameter").values()
            if p["Properties"]["Name"] == name
        )
        records[name] = value
    return records


@pytest.fixture(scope="module")
def audit(
    kueue_on_cluster: OnCluster, moto: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Audit]:
    on = kueue_on_cluster
    workdir = tmp_path_factory.mktemp("drift-audit")
    kubeconfig = on.plane.kubeconfig("drift-audit", user=AUDIT_USER, groups=(AUDIT_GROUP,))
    policy = workdir / "platform.yaml"
    policy.write_text(yaml.safe_dump(reference_data() | {"fairnessBackend": "kueue"}))
    reset(moto)
    ssm = boto3.client("ssm", region_name=on.synth.platform.region)
    for name, value in _kube_records(on).items():
        ssm.put_parameter(Name=name, Value=value, Type="String", Tier="Advanced")
    environment = _function_environment(on)
    reader = on.admin.as_user(AUDIT_USER, [AUDIT_GROUP])

    def read(kind: str, path: str) -> list[Any]:
        """The Lambda's list of ``path``, in small pages (``continue``), as the audit's identity."""
        del kind
        items: list[Any] = []
        query = {"limit": "5"}
        while True:
            page = reader.call("GET", path, params=query)
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = token

    def lambda_run() -> list[Finding]:
        with pytest.MonkeyPatch.context() as patch:
            for key in ("KUBE_RECORDS_PATH", "PLATFORM_NAMESPACES", "TENANT_LABEL"):
                patch.setenv(key, environment[key])
            # the handler's Kubernetes half (its AWS half is test_drift_audit_lambda's)
            audited, findings = drift_audit._kubernetes_findings(
                ssm, path=environment["KUBE_RECORDS_PATH"], cluster="shared-gpu", read=read
            )
        assert audited == len(on.synth.platform.hosted_teams)
        return findings

    yield Audit(on=on, kubeconfig=kubeconfig, policy=policy, lambda_run=lambda_run)


def _restored(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as it can be created again: without what the server wrote."""
    again = copy.deepcopy(obj)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        again["metadata"].pop(key, None)
    again.pop("status", None)
    return again


# ---------------------------------------------------------------------- the identity and its grant
def test_the_platform_binds_the_audit_group_to_a_read_only_cluster_role(audit: Audit) -> None:
    admin = audit.on.admin
    binding = admin.call("GET", f"{RBAC}/clusterrolebindings/{AUDIT_ROLE}")
    assert binding["roleRef"]["name"] == AUDIT_ROLE
    assert [(s["kind"], s["name"]) for s in binding["subjects"]] == [("Group", AUDIT_GROUP)]
    role = admin.call("GET", f"{RBAC}/clusterroles/{AUDIT_ROLE}")
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"get", "list"}


def test_a_read_outside_the_grant_is_refused_to_the_audit(audit: Audit) -> None:
    """The identity the audit reads with is not an administrator: the real authorizer holds it to its grant."""
    reader = audit.on.admin.as_user(AUDIT_USER, [AUDIT_GROUP])
    for path in ("/api/v1/secrets", "/api/v1/pods", "/api/v1/configmaps", f"{RBAC}/clusterroles"):
        assert reader.request("GET", path).status == 403, path
    for path in kube_drift.LIST_PATHS.values():
        assert reader.request("GET", path, params={"limit": "1"}).ok, path


def test_without_the_binding_the_audit_is_a_one_line_refusal(audit: Audit, tmp_path: Path) -> None:
    """A team member's credentials read nothing cluster-wide: the audit says which list was refused."""
    kubeconfig = audit.on.plane.kubeconfig(
        "drift-audit-member", user="alice", groups=(names.kubernetes_group(TEAM),)
    )
    with pytest.raises(AuditError, match=r"list Namespace refused by .*: 403 Forbidden"):
        _audit_kube.read_live(kubeconfig=str(kubeconfig), context=None)


# ---------------------------------------------------------------------- no drift, then one drift at a time
def test_the_platform_as_applied_has_no_drift(audit: Audit) -> None:
    status, out, err = audit.cli()
    assert (status, err) == (0, ""), out
    assert out == f"No drift: platform ml-platform matches {audit.policy} (Kubernetes checked).\n"
    assert audit.findings() == []


def test_a_namespace_that_lost_its_tenancy_label(audit: Audit) -> None:
    admin = audit.on.admin
    namespace = names.namespace(TEAM)
    path = f"/api/v1/namespaces/{namespace}"
    value = admin.call("GET", path)["metadata"]["labels"][TENANT_LABEL]
    merge = "application/merge-patch+json"
    admin.call("PATCH", path, body={"metadata": {"labels": {TENANT_LABEL: None}}}, content_type=merge)
    try:
        assert audit.findings() == [("namespace-label", TEAM, f"Namespace {namespace}")]
    finally:
        admin.call("PATCH", path, body={"metadata": {"labels": {TENANT_LABEL: value}}}, content_type=merge)
    assert audit.findings() == []


def test_a_raised_resource_quota(audit: Audit) -> None:
    admin = audit.on.admin
    namespace = names.namespace(TEAM)
    path = f"/api/v1/namespaces/{namespace}/resourcequotas/{ACCELERATOR_QUOTA_NAME}"
    hard = admin.call("GET", path)["spec"]["hard"]
    key = next(k for k in sorted(hard) if "gpu" in k)
    merge = "application/merge-patch+json"
    admin.call("PATCH", path, body={"spec": {"hard": {key: "1000"}}}, content_type=merge)
    try:
        assert audit.findings() == [
            ("resourcequota-edited", TEAM, f"ResourceQuota {namespace}/{ACCELERATOR_QUOTA_NAME}")
        ]
    finally:
        admin.call("PATCH", path, body={"spec": {"hard": {key: hard[key]}}}, content_type=merge)
    assert audit.findings() == []


def test_a_cluster_admin_binding_for_a_team_group(audit: Audit) -> None:
    admin = audit.on.admin
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "drift-audit-test-research-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": names.kubernetes_group(TEAM)}
        ],
    }
    created = admin.create(binding)
    assert created.ok, created.message
    try:
        assert audit.findings() == [
            ("clusterrolebinding-undeclared", TEAM, "ClusterRoleBinding drift-audit-test-research-admin")
        ]
    finally:
        assert admin.delete(binding).ok
    assert audit.findings() == []


def test_a_removed_limit_range(audit: Audit) -> None:
    admin = audit.on.admin
    namespace = names.namespace(TEAM)
    (listed,) = admin.list("v1", "LimitRange", namespace=namespace)
    limits = {"apiVersion": "v1", "kind": "LimitRange"} | listed  # a list's items carry neither
    name = limits["metadata"]["name"]
    assert admin.delete(limits).ok
    try:
        assert audit.findings() == [("limitrange-missing", TEAM, f"LimitRange {namespace}/{name}")]
    finally:
        recreated = admin.create(_restored(limits))
        assert recreated.ok, recreated.message
    assert audit.findings() == []
