"""The drift audit's Kubernetes half on the real control plane, reading as the audit's own identity.

The Kueue-backend reference platform is applied as a deploy applies it (``kueue_on_cluster``). The audit reads
with a client certificate for the user and group the function's EKS access entry maps it to (``AUDIT_GROUP``),
so the real RBAC authorizer grants it exactly what the platform's own ClusterRoleBinding of ``AUDIT_ROLE``
grants: a list outside that grant is refused and fails the test. Both readers run and must agree: the command
line's (``hyperpod-tenancy audit --skip aws --kubeconfig``, the official client) and the daily Lambda's Kubernetes
checks, fed the team stacks' synthesized Kubernetes audit records through SSM on moto, run with the function's
synthesized environment and its own reader (:func:`hyperpod_tenancy.runtime.kube_api.list_objects`: TLS verified
against the cluster's CA, a bearer token, pages of 5 here). The Lambda's bearer token is an EKS token, which only
EKS verifies: here it is a service account's token, bound to the same ClusterRole by a binding of the test's own.

The platform as applied has no finding, and what ``kube_world.rendered_cluster`` (the unit tests' stand-in) says
such a cluster lists is what the real server lists. Each drift is then injected into the real server as an
administrator would (a namespace's tenancy label removed, a ResourceQuota raised, a cluster-admin
ClusterRoleBinding for a team's group, a LimitRange deleted, a LimitRange given a default): the audit reports
exactly the expected finding, the fix it prints, run with ``kubectl``, clears it, and the drift is put back in any
case before the next one (the platform stays applied for the other modules).
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import urllib.error
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from cluster_platform import OnCluster
from kube_client import KubeClient, wait_until
from kube_world import PRUNE_LABEL_PREFIX, rendered_cluster
from platforms import reference_data
from synth import resources_of

from hyperpod_tenancy import cli
from hyperpod_tenancy.constructs.drift_audit import AUDIT_GROUP, AUDIT_ROLE
from hyperpod_tenancy.k8s.labels import TENANT_LABEL
from hyperpod_tenancy.k8s.team_manifests import ACCELERATOR_QUOTA_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime import drift_audit, kube_api, kube_drift
from hyperpod_tenancy.runtime.audit_findings import Finding
from hyperpod_tenancy.tools.audit import kube as _audit_kube

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
    #: The bearer token of the service account the Lambda's reader uses.
    token: str
    #: A cluster administrator's kubeconfig, for ``kubectl`` to run the fixes with.
    admin_kubeconfig: Path

    def cli(self, *args: str) -> tuple[int, str, str]:
        """``hyperpod-tenancy audit <policy> --skip aws --kubeconfig <the audit's>``: status, stdout, stderr."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(
                ["audit", str(self.policy), "--skip", "aws", "--kubeconfig", str(self.kubeconfig), *args]
            )
        return status, out.getvalue(), err.getvalue()

    def findings(self) -> list[dict[str, str]]:
        """Each finding, the command line's and the Lambda's (which must agree, fix included)."""
        status, out, err = self.cli("--format", "json")
        assert err == "", err
        by_cli = sorted(json.loads(out)["findings"], key=lambda f: (f["kind"], f["object"]))
        assert status == (1 if by_cli else 0), out
        by_lambda = sorted((f.to_dict() for f in self.lambda_run()), key=lambda f: (f["kind"], f["object"]))
        assert by_lambda == by_cli
        return by_cli

    def found(self) -> list[tuple[str, str, str]]:
        """(kind, team, object) of each finding (:meth:`findings`)."""
        return [(f["kind"], f["team"], f["object"]) for f in self.findings()]

    def run_fix(self, finding: dict[str, str]) -> None:
        """Run the finding's fix as printed (its command: a parenthesised note after it is for the reader) with
        ``kubectl`` as a cluster administrator."""
        fix = finding["fix"]
        command = fix.rsplit(" (", 1)[0] if fix.endswith(")") else fix
        done = subprocess.run(
            ["bash", "-c", command],
            env=os.environ | {"KUBECONFIG": str(self.admin_kubeconfig)},
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 0, (command, done.stderr)


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


#: The service account the Lambda's reader runs as here, bound to the platform's ClusterRole of the audit.
LAMBDA_ACCOUNT = {
    "apiVersion": "v1",
    "kind": "ServiceAccount",
    "metadata": {"name": "drift-audit-test", "namespace": "kube-system"},
}


def _lambda_binding() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "drift-audit-test-lambda"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": AUDIT_ROLE},
        "subjects": [{"kind": "ServiceAccount", "name": "drift-audit-test", "namespace": "kube-system"}],
    }


@pytest.fixture(scope="module")
def audit(
    kueue_on_cluster: OnCluster, moto: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Audit]:
    on = kueue_on_cluster
    workdir = tmp_path_factory.mktemp("drift-audit")
    kubeconfig = on.plane.kubeconfig("drift-audit", user=AUDIT_USER, groups=(AUDIT_GROUP,))
    policy = workdir / "platform.yaml"
    policy.write_text(yaml.safe_dump(reference_data() | {"fairnessBackend": "kueue"}))
    # moto's state is the process's: the POSIX webhook's table lives there too, so nothing is reset, and the
    # records are deleted at the end
    ssm = boto3.client("ssm", region_name=on.synth.platform.region, endpoint_url=moto)
    records = _kube_records(on)
    for name, value in records.items():
        ssm.put_parameter(Name=name, Value=value, Type="String", Tier="Advanced", Overwrite=True)
    environment = _function_environment(on)
    for obj in (LAMBDA_ACCOUNT, _lambda_binding()):
        created = on.admin.create(obj)
        assert created.ok, created.message
    admin_kubeconfig = on.plane.kubeconfig(
        "drift-audit-admin", user="platform-admin", groups=("system:masters",)
    )
    token = on.plane.service_account_token("kube-system", "drift-audit-test", seconds=3600)
    ca_pem = on.plane.pki.cert.read_text()

    def lambda_run() -> list[Finding]:
        with pytest.MonkeyPatch.context() as patch:
            for key in ("KUBE_RECORDS_PATH", "PLATFORM_NAMESPACES", "TENANT_LABEL"):
                patch.setenv(key, environment[key])
            patch.setattr(
                kube_api, "PAGE", 5
            )  # small pages: every list is followed through its continue tokens
            # the handler's Kubernetes half (its AWS half is test_drift_audit_lambda's), with its own reader
            audited, findings = drift_audit.daily._kubernetes_findings(
                ssm,
                path=environment["KUBE_RECORDS_PATH"],
                cluster="shared-gpu",
                read=lambda kind, path: kube_api.list_objects(on.plane.server, token, ca_pem, path),
            )
        assert audited == len(on.synth.platform.hosted_teams)
        return findings

    try:
        yield Audit(
            on=on,
            kubeconfig=kubeconfig,
            policy=policy,
            lambda_run=lambda_run,
            token=token,
            admin_kubeconfig=admin_kubeconfig,
        )
    finally:
        for obj in (_lambda_binding(), LAMBDA_ACCOUNT):
            on.admin.delete(obj)
        ssm.delete_parameters(Names=list(records))


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
    on = audit.on
    with pytest.raises(urllib.error.HTTPError, match="403"):
        kube_api.list_objects(on.plane.server, audit.token, on.plane.pki.cert.read_text(), "/api/v1/secrets")


def test_without_the_binding_the_audit_is_a_one_line_refusal(audit: Audit) -> None:
    """A team member's credentials read nothing cluster-wide: the audit says which list was refused."""
    kubeconfig = audit.on.plane.kubeconfig(
        "drift-audit-member", user="alice", groups=(names.kubernetes_group(TEAM),)
    )
    status, out, err = audit.cli("--kubeconfig", str(kubeconfig))  # the last --kubeconfig is the one used
    assert (status, out) == (2, "")
    assert err.startswith(
        f"hyperpod-tenancy audit: error: list Namespace refused by {audit.on.plane.server}: 403 Forbidden"
    ), err
    assert err.count("\n") == 1


def _compared(kind: str, obj: Mapping[str, Any]) -> Any:
    """What the audit compares of an object of ``kind``."""
    if kind == "Namespace":  # the prune label's hash is of the construct's path in the app
        labels = obj["metadata"].get("labels") or {}
        return {
            (f"{PRUNE_LABEL_PREFIX}*" if k.startswith(PRUNE_LABEL_PREFIX) else k): v
            for k, v in labels.items()
        }
    if kind.endswith("RoleBinding"):
        subjects = sorted((s["kind"], s["name"], s.get("namespace", "")) for s in obj.get("subjects") or [])
        return subjects, obj["roleRef"]["name"]
    return kube_drift._normal(obj["spec"])


def test_the_stand_in_lists_what_the_real_server_lists(audit: Audit) -> None:
    """Every object ``kube_world.rendered_cluster`` says a cluster of the platform lists is listed by the real
    server as it says (labels, subjects and role, specs by value): the unit tests' drift cases start from it."""
    live = _audit_kube.read_live(kubeconfig=str(audit.kubeconfig), context=None)
    real = {"Namespace": live.namespaces, **live.objects}
    compared, differences = 0, []
    for kind, objects in rendered_cluster(audit.on.synth.platform).items():
        listed = {(o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in real[kind]}
        for obj in objects:
            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            found = listed.get(key)
            said, served = _compared(kind, obj), None if found is None else _compared(kind, found)
            compared += 1
            if said != served:
                differences.append((kind, key, said, served))
    assert differences == [], json.dumps(differences, indent=1, default=str)
    assert compared >= 20


# ---------------------------------------------------------------------- no drift, then one drift at a time
def test_the_platform_as_applied_has_no_drift(audit: Audit) -> None:
    status, out, err = audit.cli()
    assert (status, err) == (0, ""), out
    assert out == f"No drift: platform ml-platform matches {audit.policy} (Kubernetes checked).\n"
    assert audit.findings() == []


MERGE = "application/merge-patch+json"


def test_a_namespace_that_lost_its_tenancy_label(audit: Audit) -> None:
    admin = audit.on.admin
    namespace = names.namespace(TEAM)
    path = f"/api/v1/namespaces/{namespace}"
    value = admin.call("GET", path)["metadata"]["labels"][TENANT_LABEL]
    admin.call("PATCH", path, body={"metadata": {"labels": {TENANT_LABEL: None}}}, content_type=MERGE)
    try:
        (finding,) = audit.findings()
        assert (finding["kind"], finding["team"], finding["object"]) == (
            "namespace-label",
            TEAM,
            f"Namespace {namespace}",
        )
        status, out, _ = audit.cli()
        assert status == 1
        assert out.splitlines()[:4] == [
            f"[namespace-label] Namespace {namespace} (team {TEAM})",
            f"    expected: {TENANT_LABEL}={value}",
            f"    actual:   {TENANT_LABEL} missing (without it the admission policies do not apply)",
            f"    fix:      kubectl label namespace {namespace} --overwrite {TENANT_LABEL}={value}",
        ]
        audit.run_fix(finding)
        assert audit.findings() == []
    finally:
        admin.call("PATCH", path, body={"metadata": {"labels": {TENANT_LABEL: value}}}, content_type=MERGE)


def test_a_raised_resource_quota(audit: Audit) -> None:
    admin = audit.on.admin
    namespace = names.namespace(TEAM)
    path = f"/api/v1/namespaces/{namespace}/resourcequotas/{ACCELERATOR_QUOTA_NAME}"
    hard = admin.call("GET", path)["spec"]["hard"]
    key = next(k for k in sorted(hard) if "gpu" in k)
    admin.call("PATCH", path, body={"spec": {"hard": {key: "1000"}}}, content_type=MERGE)
    try:
        (finding,) = audit.findings()
        assert (finding["kind"], finding["team"], finding["object"]) == (
            "resourcequota-edited",
            TEAM,
            f"ResourceQuota {namespace}/{ACCELERATOR_QUOTA_NAME}",
        )
        audit.run_fix(finding)
        assert audit.findings() == []
    finally:
        admin.call("PATCH", path, body={"spec": {"hard": {key: hard[key]}}}, content_type=MERGE)


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
        (finding,) = audit.findings()
        assert (finding["kind"], finding["team"], finding["object"]) == (
            "clusterrolebinding-undeclared",
            TEAM,
            "ClusterRoleBinding drift-audit-test-research-admin",
        )
        audit.run_fix(finding)
        assert audit.findings() == []
    finally:
        admin.delete(binding)


def _limit_range(admin: KubeClient) -> dict[str, Any]:
    (listed,) = admin.list("v1", "LimitRange", namespace=names.namespace(TEAM))
    return {"apiVersion": "v1", "kind": "LimitRange"} | listed  # a list's items carry neither


def _put_back(admin: KubeClient, limits: dict[str, Any]) -> None:
    """The LimitRange as the platform applied it (created again when gone)."""
    admin.delete(limits)
    wait_until(lambda: admin.get(limits) is None or None, timeout=30, what="the LimitRange to be gone")
    again = copy.deepcopy(limits)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation"):
        again["metadata"].pop(key, None)
    recreated = admin.create(again)
    assert recreated.ok, recreated.message


def test_a_removed_limit_range(audit: Audit) -> None:
    admin = audit.on.admin
    limits = _limit_range(admin)
    assert admin.delete(limits).ok
    try:
        (finding,) = audit.findings()
        name = limits["metadata"]["name"]
        assert (finding["kind"], finding["team"], finding["object"]) == (
            "limitrange-missing",
            TEAM,
            f"LimitRange {names.namespace(TEAM)}/{name}",
        )
        audit.run_fix(finding)
        assert audit.findings() == []
    finally:
        _put_back(admin, limits)


def test_a_limit_range_given_a_default(audit: Audit) -> None:
    """A field added to a declared object: the printed fix must take it away again, not merge around it."""
    admin = audit.on.admin
    limits = _limit_range(admin)
    edited = copy.deepcopy(limits)
    edited["spec"]["limits"][0]["default"] = {"memory": "4Gi"}
    answer = admin.request("PUT", admin.path_of(edited), body=edited)
    assert answer.ok, answer.message
    try:
        (finding,) = audit.findings()
        assert (finding["kind"], finding["team"]) == ("limitrange-edited", TEAM)
        audit.run_fix(finding)
        assert audit.findings() == []
    finally:
        _put_back(admin, limits)
