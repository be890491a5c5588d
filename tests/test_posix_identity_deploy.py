"""Deploy realism of the POSIX identity webhook, read out of the synthesized templates (both fairness backends).

Sources for the rules checked here:

* ``admissionregistration.k8s.io/v1`` ``MutatingWebhook`` (Kubernetes API reference, "MutatingWebhookConfiguration
  v1"): ``name``, ``clientConfig``, ``sideEffects`` and ``admissionReviewVersions`` are required; ``timeoutSeconds``
  must be 1-30; the whole object is also validated strictly with ``kubernetes-validate`` by
  ``tests/test_compliance.py`` (as every core object).
* cert-manager ``Issuer``/``Certificate``: the CRDs of cert-manager v1.18.2 (the version the HyperPod chart pins,
  research/hyperpod.md section 3; cert-manager/cert-manager ``deploy/crds/crd-{certificates,issuers}.yaml`` at tag
  v1.18.2, commit 686afa62160249022a0205d3a9bf5f059476c684), vendored in ``tests/support/crds/cert-manager`` and
  validated strictly (unknown fields refused) with the same loader as the Kueue CRDs; CA injection: the
  ``cert-manager.io/inject-ca-from: <namespace>/<certificate>`` annotation of cainjector.
* IAM: ``TransactWriteItems`` is authorized per contained action (Service Authorization Reference for DynamoDB
  lists no ``dynamodb:TransactWriteItems`` action; cfn-lint W3037 refuses it).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import cel
import kueue_crd_validator
import platforms
import pytest
import tenant_admission as ta
from jsonschema import Draft4Validator
from synth import Synth, manifests_in, one, render_intrinsics, resources_of

from hyperpod_tenancy.constructs.posix_identity_webhook import (
    IMAGE_CONTEXT,
    IMAGE_DOCKERFILE,
    TABLE_ACTIONS,
    PosixIdentityWebhook,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels, posix_identity
from hyperpod_tenancy.policy import WebhookFailurePolicy, names
from hyperpod_tenancy.webhook.config import parse_config, parse_team_record

REPO = platforms.REPO
CERT_MANAGER_CRDS = Path(__file__).parent / "support" / "crds" / "cert-manager"
K8S = "Custom::AWSCDK-EKS-KubernetesResource"


def _webhook_objects(synth: Synth) -> list[dict[str, Any]]:
    (logical_id,) = [
        k for k in resources_of(synth.cluster, K8S) if k.startswith("ClusterPosixIdentityObjects")
    ]
    objects: list[dict[str, Any]] = json.loads(
        render_intrinsics(synth.cluster["Resources"][logical_id]["Properties"]["Manifest"])
    )
    return objects


def _by_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _mwc(synth: Synth) -> dict[str, Any]:
    (mwc,) = [o for o in synth.manifests() if o["kind"] == "MutatingWebhookConfiguration"]
    return mwc


def _logical_id(synth: Synth, prefix: str) -> str:
    (found,) = [k for k in synth.cluster["Resources"] if k.startswith(prefix)]
    return found


# ------------------------------------------------------------------------------------------------ webhook config


def test_webhook_configuration_has_what_the_api_requires(synth: Synth) -> None:
    mwc = _mwc(synth)
    (hook,) = mwc["webhooks"]
    assert {"name", "clientConfig", "sideEffects", "admissionReviewVersions"} <= set(hook)
    assert re.fullmatch(r"[a-z0-9-]+(\.[a-z0-9-]+){2,}", hook["name"]), "a fully qualified name"
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["sideEffects"] == "NoneOnDryRun"  # a dry run never allocates a UID (webhook/admission.py)
    assert hook["reinvocationPolicy"] == "IfNeeded"
    assert 1 <= hook["timeoutSeconds"] <= 30
    assert hook["timeoutSeconds"] == synth.platform.cluster.posix_identity.timeout_seconds
    service = hook["clientConfig"]["service"]
    assert service == {
        "name": posix_identity.SERVICE,
        "namespace": posix_identity.WEBHOOK_NAMESPACE,
        "path": "/mutate",
        "port": 443,
    }
    assert "caBundle" not in hook["clientConfig"], "cert-manager's cainjector fills it"
    annotation = mwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert annotation == f"{posix_identity.WEBHOOK_NAMESPACE}/{posix_identity.TLS_CERTIFICATE}"
    # the exec/attach configuration gets its CA the same way (the deploy waits for both bundles)
    (vwc,) = _by_kind(synth.manifests(), "ValidatingWebhookConfiguration")
    assert vwc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == annotation
    assert all("caBundle" not in h["clientConfig"] for h in vwc["webhooks"])


def test_failure_policy_is_the_policy_value(synth: Synth) -> None:
    expected = synth.platform.cluster.posix_identity.failure_policy
    assert expected is not None
    (hook,) = _mwc(synth)["webhooks"]
    assert hook["failurePolicy"] == expected.value


def test_ignore_is_rendered_when_the_owner_chooses_it(tmp_path: Path) -> None:
    def ignore(data: dict[str, Any]) -> None:
        data["cluster"]["posixIdentity"]["failurePolicy"] = "Ignore"
        data["cluster"]["posixIdentity"]["timeoutSeconds"] = 12

    platform = platforms.variant("ignore", ignore)
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111122223333", region="us-east-1"))
    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster

    SharedHyperPodCluster(stack, "Cluster", platform=platform)
    template = app.synth().get_stack_by_name("S").template
    manifest = next(
        json.loads(render_intrinsics(r["Properties"]["Manifest"]))
        for k, r in template["Resources"].items()
        if k.startswith("ClusterPosixIdentityWebhookConfiguration")
    )
    (hook,) = manifest[0]["webhooks"]
    assert (hook["failurePolicy"], hook["timeoutSeconds"]) == ("Ignore", 12)


def test_every_served_workload_kind_is_mutated_on_create_and_update(synth: Synth) -> None:
    from hyperpod_tenancy.k8s import workloads

    (hook,) = _mwc(synth)["webhooks"]
    covered = {
        (group, resource)
        for rule in hook["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        if set(rule["operations"]) == {"CREATE", "UPDATE"}
    }
    # and the ConfigMaps and Secrets whose creator the webhook records (hyperpod_tenancy.webhook.creators)
    recorded = {("", "configmaps"), ("", "secrets")}
    assert {(k.group, k.resource) for k in workloads.served_kinds()} | recorded == covered
    assert ("", "pods") in covered


def _namespaces(synth: Synth) -> list[dict[str, Any]]:
    """Every namespace the webhook could meet, with the labels the API server shows for it."""
    system = [
        {"metadata": {"name": name, "labels": {}}}
        for name in ("kube-system", "default", "kueue-system", "cert-manager", "hyperpod-tenancy-system")
    ]
    own = next(o for o in _webhook_objects(synth) if o["kind"] == "Namespace")
    found = [*system, own]
    for namespace in found:
        namespace["metadata"]["labels"][labels.NAMESPACE_NAME_LABEL] = namespace["metadata"]["name"]
    teams = [ta.namespace(synth, t.name) for t in synth.platform.hosted_teams]
    return found + teams


def test_namespace_selector_selects_team_namespaces_only(synth: Synth) -> None:
    (hook,) = _mwc(synth)["webhooks"]
    selector = hook["namespaceSelector"]
    validator = kueue_crd_validator.validator_module()
    conditions = [cel.compile(c["expression"]) for c in hook["matchConditions"]]

    def called(name: str, ns_labels: dict[str, str]) -> bool:
        """The API server's order: the namespace selector, then every match condition (on the request)."""
        context = cel.Context({"request": {"namespace": name}})
        return validator.selector_matches(selector, ns_labels) and all(
            c.execute(context) is True for c in conditions
        )

    selected = {
        ns["metadata"]["name"]
        for ns in _namespaces(synth)
        if called(ns["metadata"]["name"], ns["metadata"]["labels"])
    }
    assert selected == {f"hyperpod-ns-{t.name}" for t in synth.platform.hosted_teams}
    # a mislabelled kube-system or webhook namespace is still excluded, by its name
    for name in ("kube-system", posix_identity.WEBHOOK_NAMESPACE):
        mislabelled = {labels.TENANT_LABEL: "true", labels.NAMESPACE_NAME_LABEL: name}
        assert not called(name, mislabelled), name
    # a team namespace whose labels were rewritten is still selected, by its name
    for team in synth.platform.hosted_teams:
        name = f"hyperpod-ns-{team.name}"
        assert called(name, {labels.NAMESPACE_NAME_LABEL: name}), name


def test_team_namespaces_carry_the_labels_the_webhook_and_policy_read(synth: Synth) -> None:
    for team in synth.platform.hosted_teams:
        got = ta.namespace(synth, team.name)["metadata"]["labels"]
        assert got[labels.TENANT_LABEL] == "true"
        assert got[labels.POSIX_GID_LABEL] == str(team.identity.posix_gid)


# ------------------------------------------------------------------------------------------------ the objects


def test_cert_manager_objects_validate_against_the_cert_manager_crds(synth: Synth) -> None:
    crds = kueue_crd_validator.validator_module().load_crds(str(CERT_MANAGER_CRDS), strict=True)
    objects = [o for o in _webhook_objects(synth) if o["apiVersion"].startswith("cert-manager.io/")]
    assert sorted(o["kind"] for o in objects) == ["Certificate", "Certificate", "Issuer", "Issuer"]
    for obj in objects:
        group, _, version = obj["apiVersion"].partition("/")
        schema = crds[(group, version, obj["kind"])].schema
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in Draft4Validator(schema).iter_errors(obj)]
        assert errors == [], (obj["metadata"]["name"], errors)
    issuers = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Issuer"}
    certificates = {o["metadata"]["name"]: o["spec"] for o in objects if o["kind"] == "Certificate"}
    ca, tls = certificates[posix_identity.CA_CERTIFICATE], certificates[posix_identity.TLS_CERTIFICATE]
    assert ca["isCA"] is True and "selfSigned" in issuers[ca["issuerRef"]["name"]]
    assert issuers[tls["issuerRef"]["name"]] == {"ca": {"secretName": ca["secretName"]}}
    service = f"{posix_identity.SERVICE}.{posix_identity.WEBHOOK_NAMESPACE}.svc"
    assert service in tls["dnsNames"], "the name the API server dials"


def test_a_bad_cert_manager_object_fails_the_crd_check() -> None:
    crds = kueue_crd_validator.validator_module().load_crds(str(CERT_MANAGER_CRDS), strict=True)
    bad = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "x"},
        "spec": {"secretName": "x", "issuerRef": {"name": "ca"}, "dnsName": ["typo"]},
    }
    assert list(Draft4Validator(crds[("cert-manager.io", "v1", "Certificate")].schema).iter_errors(bad))


def test_deployment_runs_two_hardened_replicas_on_system_nodes(synth: Synth) -> None:
    objects = _webhook_objects(synth)
    (deployment,) = _by_kind(objects, "Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    assert pod["nodeSelector"] == {labels.NODE_ROLE_LABEL: labels.SYSTEM_NODE_ROLE}
    assert {c["topologyKey"] for c in pod["topologySpreadConstraints"]} == {
        "kubernetes.io/hostname",
        "topology.kubernetes.io/zone",
    }
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8443, "scheme": "HTTPS"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 8443, "scheme": "HTTPS"}
    assert container["resources"]["requests"].keys() == {"cpu", "memory"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    args = container["args"]
    assert args[args.index("--teams") + 1] == "/config/teams.json"
    assert args[args.index("--tls-cert") + 1] == "/tls/tls.crt"
    assert args[args.index("--table") + 1] == "cfn-token", "the table's name, a reference"
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == posix_identity.TLS_CERTIFICATE
    (pdb,) = _by_kind(objects, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"] == spec["selector"]
    (service,) = _by_kind(objects, "Service")
    assert service["spec"]["ports"] == [{"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]
    assert service["spec"]["selector"] == spec["selector"]["matchLabels"]
    (namespace,) = _by_kind(objects, "Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    assert labels.TENANT_LABEL not in namespace["metadata"]["labels"]


def test_rendered_config_parses_with_the_server_parser(synth: Synth) -> None:
    objects = _webhook_objects(synth)
    (config_map,) = _by_kind(objects, "ConfigMap")
    text = config_map["data"][posix_identity.CONFIG_FILE]
    config = parse_config(json.loads(text))
    # the cluster's configuration lists no team: each team stack writes its record, which the server parses
    assert config.namespaces == {}
    assert config.team_records is not None
    path = config.team_records.ssm_path
    assert path == names.team_records_path(synth.platform.cluster.name, "posix-identity")
    hosted = synth.platform.hosted_teams
    uids = (
        synth.platform.cluster.posix_identity.uid_range.first,
        synth.platform.cluster.posix_identity.uid_range.last,
    )
    for team in hosted:
        (record,) = [
            r["Properties"]
            for r in resources_of(synth.team(team.name), "AWS::SSM::Parameter").values()
            if r["Properties"]["Name"] == names.posix_identity_record(synth.platform.cluster.name, team.name)
        ]
        assert record["Name"].startswith(path)
        ns = parse_team_record(json.loads(record["Value"]), uid_range=uids, source=record["Name"])
        assert (ns.namespace, ns.team, ns.gid) == (
            names.namespace(team.name),
            team.name,
            team.identity.posix_gid,
        )
    uid_range = synth.platform.cluster.posix_identity.uid_range
    assert (config.uid_first, config.uid_last) == (uid_range.first, uid_range.last)
    from hyperpod_tenancy.k8s import workloads

    assert config.exempt_usernames == frozenset(workloads.controller_usernames())
    (deployment,) = _by_kind(objects, "Deployment")
    digest = deployment["spec"]["template"]["metadata"]["annotations"][posix_identity.CONFIG_HASH_ANNOTATION]
    assert digest == hashlib.sha256(text.encode()).hexdigest(), "a changed configuration rolls the pods"


def test_policy_bounds_match_the_server_parser() -> None:
    from hyperpod_tenancy.policy.rules import identity
    from hyperpod_tenancy.webhook import config

    assert identity._GID_RANGE[0] == config.ID_MIN
    assert identity._UID_MAX == config.ID_MAX
    assert posix_identity.CONFIG_VERSION == config.CONFIG_VERSION


# --------------------------------------------------------------------------------------------------- AWS side


def test_table_is_retained_with_point_in_time_recovery(synth: Synth) -> None:
    logical_id, table = one(synth.cluster, "AWS::DynamoDB::Table")
    assert logical_id.startswith("ClusterPosixIdentity")
    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
    props = table["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_pod_identity_role_is_least_privilege(synth: Synth) -> None:
    resources = synth.cluster["Resources"]
    table_id, _ = one(synth.cluster, "AWS::DynamoDB::Table")
    (association,) = [
        r["Properties"]
        for r in resources_of(synth.cluster, "AWS::EKS::PodIdentityAssociation").values()
        if r["Properties"]["Namespace"] == posix_identity.WEBHOOK_NAMESPACE
    ]
    assert association["ServiceAccount"] == posix_identity.SERVICE_ACCOUNT
    role_id = association["RoleArn"]["Fn::GetAtt"][0]
    role = resources[role_id]["Properties"]
    assert role.get("ManagedPolicyArns") is None
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Condition"]["StringEquals"]["aws:SourceAccount"]
    policies = [
        r["Properties"]
        for r in resources_of(synth.cluster, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in r["Properties"]["Roles"]
    ]
    statements = [s for p in policies for s in p["PolicyDocument"]["Statement"]]
    assert len(statements) == 2
    statement, records = statements
    assert statement["Effect"] == "Allow"
    assert sorted(statement["Action"]) == sorted(TABLE_ACTIONS)
    assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}, "this table only, no index, no *"
    # the team records: read-only, under the webhook's path only
    assert records["Effect"] == "Allow" and records["Action"] == "ssm:GetParametersByPath"
    rendered = [render_intrinsics(r) for r in records["Resource"]]
    path = names.team_records_path(synth.platform.cluster.name, "posix-identity")
    assert rendered and all(
        re.fullmatch(rf"arn:[^:]+:ssm:us-east-1:111122223333:parameter{re.escape(path.rstrip('/'))}(/\*)?", r)
        for r in rendered
    ), rendered
    (deployment,) = _by_kind(_webhook_objects(synth), "Deployment")
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == association["ServiceAccount"]


def test_table_actions_are_the_ones_the_server_documents() -> None:
    from hyperpod_tenancy.webhook import uids

    doc = uids.__doc__ or ""
    documented = set(
        re.findall(r"``(dynamodb:[A-Za-z]+)``", doc.split("The IAM actions needed on the table:")[1])
    )
    documented -= {"dynamodb:ConditionCheckItem"}  # named there as *not* used
    assert set(TABLE_ACTIONS) == documented


def test_webhook_is_ready_before_any_team_object(synth: Synth) -> None:
    resources = synth.cluster["Resources"]
    ca_injected = _logical_id(synth, "ClusterPosixIdentityCaInjected")
    connect_injected = _logical_id(synth, "ClusterPosixIdentityConnectCaInjected")
    webhook_config = _logical_id(synth, "ClusterPosixIdentityWebhookConfiguration")
    deployment_ready = _logical_id(synth, "ClusterPosixIdentityDeploymentReady")
    objects = _logical_id(synth, "ClusterPosixIdentityObjects")
    # both configurations' CA bundles are waited for (kubectl get <kind> -o jsonpath=...caBundle)
    waited = {
        r["Properties"]["ObjectType"]: k
        for k, r in resources.items()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesObjectValue"
        and r["Properties"]["JsonPath"] == ".webhooks[0].clientConfig.caBundle"
    }
    assert waited == {
        "mutatingwebhookconfiguration": ca_injected,
        "validatingwebhookconfiguration": connect_injected,
    }
    assert webhook_config in resources[connect_injected]["DependsOn"]
    assert {webhook_config, connect_injected} <= set(resources[ca_injected]["DependsOn"])
    assert deployment_ready in resources[webhook_config]["DependsOn"]
    assert objects in resources[deployment_ready]["DependsOn"]
    cert_manager = _logical_id(synth, "ClusterCertManager")
    assert cert_manager in resources[objects]["DependsOn"]
    (platform_chart,) = [k for k in resources if k.startswith("ClusterEksPlatformChart")]
    assert ca_injected in resources[platform_chart]["DependsOn"]
    # team stacks deploy after the cluster stack (they import its outputs), so after the webhook is ready
    cluster_stack = synth.stage.cluster_stack
    for team in synth.platform.hosted_teams:
        assert cluster_stack in synth.stage.team_stacks[team.name].dependencies


# ------------------------------------------------------------------------------------------------- the image


def _docker_assets(synth: Synth) -> list[dict[str, Any]]:
    assert synth.outdir is not None
    found = []
    for manifest in synth.outdir.rglob("*.assets.json"):
        found += json.loads(manifest.read_text()).get("dockerImages", {}).values()
    return found


def test_image_asset_is_built_from_the_package_with_only_what_the_server_runs(synth: Synth) -> None:
    """The build context is the installed package (a pip install builds it too), less what the server never imports."""
    assets = _docker_assets(synth)
    assert assets, "the webhook image is a docker image asset (synthesized without Docker)"
    sources = {a["source"]["directory"] for a in assets}
    assert len(sources) == 1
    (source,) = sources
    assert synth.outdir is not None
    staged = next(p for p in synth.outdir.rglob(source) if p.is_dir())
    files = {p.relative_to(staged).as_posix() for p in staged.rglob("*") if p.is_file()}
    package = REPO / "src" / "hyperpod_tenancy"
    expected = {
        p.relative_to(package).as_posix()
        for p in package.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.suffix != ".pyc"
        and p.relative_to(package).parts[0] not in {"constructs", "stacks", "runtime"}
        and p.relative_to(package).parts[:3] != ("tools", "chargeback", "offline")
    }
    assert files == expected, "constructs, tests, cdk.out and the venvs never change the image hash"
    assert {"webhook/Dockerfile", "webhook/server.py", "cli.py", "__main__.py"} <= files
    assert {a["source"].get("dockerFile") for a in assets} == {IMAGE_DOCKERFILE}
    assert package.resolve() == IMAGE_CONTEXT


def test_the_staged_context_runs_the_server_entry_point(synth: Synth, tmp_path: Path) -> None:
    """The image's ENTRYPOINT, run from the staged asset as the Dockerfile lays it out (PYTHONPATH=/opt/...)."""
    (source,) = {a["source"]["directory"] for a in _docker_assets(synth)}
    assert synth.outdir is not None
    staged = next(p for p in synth.outdir.rglob(source) if p.is_dir())
    root = tmp_path / "opt"
    shutil.copytree(staged, root / "hyperpod_tenancy")
    entrypoint = json.loads(re.findall(r"^ENTRYPOINT (\[.*\])$", _dockerfile(), re.M)[-1])
    assert entrypoint[:3] == ["python", "-m", "hyperpod_tenancy"]
    env = {"PYTHONPATH": str(root), "PATH": ""}
    result = subprocess.run(
        [sys.executable, *entrypoint[1:], "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
        env=env,
    )
    where = subprocess.run(
        [sys.executable, "-c", "import hyperpod_tenancy.webhook.server as s; print(s.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    )
    assert Path(where.stdout.strip()).is_relative_to(root), (
        "the staged package, not the checkout, is imported"
    )
    assert result.returncode == 0, result.stderr
    assert "--tls-cert" in result.stdout


def _dockerfile() -> str:
    return (IMAGE_CONTEXT / IMAGE_DOCKERFILE).read_text(encoding="utf-8")


def _pip_pins() -> dict[str, str]:
    return dict(re.findall(r'"([A-Za-z0-9_.-]+)==([0-9][^"]*)"', _dockerfile()))


def test_dockerfile_is_slim_non_root_and_installs_only_the_server_stack() -> None:
    text = _dockerfile()
    assert re.search(r"^FROM \S*python:3\.12-slim\s*$", text, re.M)
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in {"0", "root"}
    assert re.search(r"^COPY \. /opt/hyperpod-tenancy/hyperpod_tenancy/$", text, re.M)
    assert "PYTHONPATH=/opt/hyperpod-tenancy" in text
    assert re.search(r'ENTRYPOINT \["python", "-m", "hyperpod_tenancy", "webhook", "serve"\]', text)
    assert not {"aws-cdk-lib", "constructs", "cdk8s", "duckdb"} & {k.lower() for k in _pip_pins()}
    # the server stack is pinned as in the package's `webhook` extra
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "webhook"
    ]
    pinned = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", "\n".join(extra), re.M))
    assert pinned and {k: _pip_pins()[k] for k in pinned} == pinned


def _requirements_closure(roots: set[str]) -> set[str]:
    seen: set[str] = set()
    todo = [r.lower() for r in roots]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for requirement in importlib.metadata.requires(name) or []:
            if "extra ==" in requirement:
                continue
            todo.append(re.split(r"[ ;<>=!~\[(]", requirement, maxsplit=1)[0].lower().replace("_", "-"))
    return seen


def test_the_image_holds_every_distribution_the_server_imports() -> None:
    probe = (
        "import sys, json; before = set(sys.modules); import hyperpod_tenancy.cli; "
        "import hyperpod_tenancy.webhook.server; "
        "print(json.dumps(sorted({m.split('.')[0] for m in set(sys.modules) - before})))"
    )
    env = {"PYTHONPATH": str(REPO / "src"), "PATH": ""}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    # botocore imports certifi when present and falls back to its own bundled CA file (botocore/httpsession.py)
    modules = set(json.loads(out.stdout)) - {"certifi"}
    owners = importlib.metadata.packages_distributions()
    needed = {
        dist.lower().replace("_", "-")
        for module in modules
        if module not in sys.stdlib_module_names and module != "hyperpod_tenancy"
        for dist in owners.get(module, [])
    }
    assert needed, modules
    installed = _requirements_closure(set(_pip_pins()))
    assert needed - installed == set(), "add them to the Dockerfile's pip install"
    assert "aws-cdk-lib" not in needed and "jsii" not in needed


def test_an_incomplete_install_asks_for_an_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hyperpod_tenancy.constructs import posix_identity_webhook as module
    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster

    monkeypatch.setattr(module, "IMAGE_CONTEXT", tmp_path)
    app = cdk.App(outdir=str(tmp_path / "out"))
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111122223333", region="us-east-1"))
    with pytest.raises(TenancyError, match=r"incomplete\. Reinstall .* cluster\.posixIdentity\.imageUri"):
        SharedHyperPodCluster(stack, "Cluster", platform=platforms.reference_platform())


def test_failure_policy_must_be_given_explicitly(tmp_path: Path) -> None:
    import dataclasses

    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster

    platform = platforms.reference_platform()
    spec = dataclasses.replace(platform.cluster.posix_identity, failure_policy=None)
    undecided = dataclasses.replace(
        platform, cluster=dataclasses.replace(platform.cluster, posix_identity=spec)
    )
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "S", env=cdk.Environment(account="111122223333", region="us-east-1"))
    with pytest.raises(
        TenancyError, match=r"failurePolicy: no failure policy is set .*HPT-POSIX-FAILURE-POLICY"
    ):
        SharedHyperPodCluster(stack, "Cluster", platform=undecided)
    with pytest.raises(TypeError):
        PosixIdentityWebhook(stack, "W", cluster=None)  # type: ignore[call-arg,arg-type]
    with pytest.raises(TenancyError, match="pass WebhookFailurePolicy"):
        PosixIdentityWebhook(stack, "W2", cluster=_FakeCluster(platform), failure_policy="Fail")  # type: ignore[arg-type]
    with pytest.raises(TenancyError, match="timeout_seconds is 31"):
        PosixIdentityWebhook(
            stack,
            "W3",
            cluster=_FakeCluster(platform),
            failure_policy=WebhookFailurePolicy.FAIL,
            timeout_seconds=31,
        )


class _FakeCluster:
    """Just the policy: the argument checks run before anything touches the cluster."""

    def __init__(self, platform: Any) -> None:
        self.platform = platform


def test_manifests_in_team_stacks_are_untouched_by_the_webhook(synth: Synth) -> None:
    for team in synth.platform.hosted_teams:
        kinds = {o["kind"] for o in manifests_in(synth.team(team.name))}
        assert "MutatingWebhookConfiguration" not in kinds
