"""Objects of one's own added to a team (or the cluster) reach it: in the team namespace, after the team chart.

The extension point is ``TeamTenant.add_manifest`` / ``add_cdk8s_chart`` (and the same on
``SharedHyperPodCluster``); the example builds its object with cdk8s-plus, as a user would.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import cdk8s
import cdk8s_plus_33 as kplus
import pytest
import tenant_admission
from aws_cdk import aws_eks_v2 as eks
from cel_admission import evaluate_policies
from synth import K8S_RESOURCE, depends_on, new_app, render_intrinsics

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s._manifest_chart import extension_manifests, is_cluster_scoped
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.admission_check import DEPLOYER, check_team_objects
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.operator_guards import operator_guard_policies
from hyperpod_tenancy.k8s.tenant_guards import tenant_guard_policies
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.stacks import PlatformStage

TEAM = "research"
NAMESPACE = "hyperpod-ns-research"


def _config_map(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def _logical_id(manifest: eks.KubernetesManifest) -> str:
    stack = cdk.Stack.of(manifest)
    element = manifest.node.default_child
    assert isinstance(element, cdk.CfnElement)
    return str(stack.resolve(element.logical_id))


def _objects(template: dict[str, Any], logical_id: str) -> list[dict[str, Any]]:
    resource = template["Resources"][logical_id]
    assert resource["Type"] == K8S_RESOURCE
    objects: list[dict[str, Any]] = json.loads(render_intrinsics(resource["Properties"]["Manifest"]))
    return objects


def _stage(platform: Platform, outdir: Path) -> PlatformStage:
    return PlatformStage(new_app(outdir), platform.name, platform=platform)


class Extended:
    """The reference platform with a cdk8s-plus ConfigMap added to a team and a PriorityClass to the cluster."""

    def __init__(self, platform: Platform, outdir: Path) -> None:
        self.stage = _stage(platform, outdir)
        self.tenant = self.stage.team_stacks[TEAM].tenant
        chart = cdk8s.Chart(cdk8s.App(), "extras")
        kplus.ConfigMap(
            chart,
            "Settings",
            metadata=cdk8s.ApiObjectMetadata(name="training-settings"),
            data={"epochs": "3"},
        )
        self.team_manifest = self.tenant.add_cdk8s_chart("Extras", chart)
        # rendered when added, as eks.Cluster.add_cdk8s_chart does: this one is never applied
        kplus.ConfigMap(chart, "Late", metadata=cdk8s.ApiObjectMetadata(name="added-too-late"))
        self.cluster = self.stage.cluster_stack.cluster
        self.cluster_manifest = self.cluster.add_manifest(
            "PriorityClasses",
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "batch-low"},
                "value": 10,
            },
        )
        assembly = self.stage.synth()
        self.templates = {s.stack_name: s.template for s in assembly.stacks}

    def template(self, stack: cdk.Stack) -> dict[str, Any]:
        """Synthesized template of ``stack``."""
        return self.templates[stack.stack_name]


@pytest.fixture(scope="module")
def extended(reference_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> Extended:
    return Extended(reference_platform, tmp_path_factory.mktemp("extended"))


@pytest.fixture(scope="module")
def stage(reference_platform: Platform, tmp_path_factory: pytest.TempPathFactory) -> PlatformStage:
    """A stage that is never synthesized, for the refusals."""
    return _stage(reference_platform, tmp_path_factory.mktemp("refusals"))


def test_a_cdk8s_plus_object_reaches_the_team_namespace(extended: Extended) -> None:
    template = extended.template(extended.stage.team_stacks[TEAM])
    objects = _objects(template, _logical_id(extended.team_manifest))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [("ConfigMap", "training-settings")]
    assert objects[0]["metadata"]["namespace"] == NAMESPACE
    assert objects[0]["data"] == {"epochs": "3"}


def test_the_object_is_applied_after_the_team_chart(extended: Extended) -> None:
    template = extended.template(extended.stage.team_stacks[TEAM])
    assert _logical_id(extended.tenant.chart_manifest) in depends_on(
        template, _logical_id(extended.team_manifest)
    )


def test_objects_added_to_the_chart_afterwards_are_not_applied(extended: Extended) -> None:
    assert "added-too-late" not in json.dumps(extended.templates)


def test_the_team_chart_itself_is_left_alone(extended: Extended) -> None:
    template = extended.template(extended.stage.team_stacks[TEAM])
    applied = _objects(template, _logical_id(extended.tenant.chart_manifest))
    assert [o["metadata"]["name"] for o in applied] == [
        o["metadata"]["name"] for o in extended.tenant.chart.to_json()
    ]
    assert "training-settings" not in json.dumps(applied)


def test_a_cluster_object_is_applied_after_the_platform_chart(extended: Extended) -> None:
    template = extended.template(extended.stage.cluster_stack)
    objects = _objects(template, _logical_id(extended.cluster_manifest))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [("PriorityClass", "batch-low")]
    assert "namespace" not in objects[0]["metadata"]
    platform_chart = _logical_id(extended.cluster.platform_chart_manifest)
    assert platform_chart in depends_on(template, _logical_id(extended.cluster_manifest))


def test_an_object_in_another_teams_namespace_is_refused(stage: PlatformStage) -> None:
    tenant = stage.team_stacks[TEAM].tenant
    with pytest.raises(TenancyError) as error:
        tenant.add_manifest("Elsewhere", _config_map("spy", "hyperpod-ns-vision"))
    assert str(error.value) == (
        f"{tenant.node.path}/Elsewhere: refused objects:\n"
        "  - ConfigMap 'spy' is in namespace 'hyperpod-ns-vision', not in ['hyperpod-ns-research']; pass "
        "allow_namespaces=['hyperpod-ns-vision'] if it must"
    )
    assert tenant.node.try_find_child("Elsewhere") is None


def test_a_cluster_scoped_kind_is_refused_unless_allowed(stage: PlatformStage) -> None:
    tenant = stage.team_stacks[TEAM].tenant
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "research-nodes-reader"},
        "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
    }
    with pytest.raises(
        TenancyError,
        match=r"ClusterRole 'research-nodes-reader' is cluster-scoped: it would reach beyond the team; pass allow_cluster_scoped=True if it must",
    ):
        tenant.add_manifest("Nodes", role)
    manifest = tenant.add_manifest("NodesAllowed", role, allow_cluster_scoped=True)
    assert manifest.node.id == "NodesAllowed"
    assert "namespace" not in role["metadata"], "the caller's dict is left alone"


def test_the_teams_own_objects_cannot_be_replaced(stage: PlatformStage) -> None:
    tenant = stage.team_stacks[TEAM].tenant
    allow_all = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny"},
        "spec": {"podSelector": {}, "ingress": [{}]},
    }
    with pytest.raises(
        TenancyError,
        match=r"NetworkPolicy 'default-deny' \(NetworkPolicy-hyperpod-ns-research-default-deny\) is already applied",
    ):
        tenant.add_manifest("AllowAll", allow_all)


def test_every_refused_object_is_listed_and_nothing_is_applied(stage: PlatformStage) -> None:
    tenant = stage.team_stacks[TEAM].tenant
    tenant.add_manifest("First", _config_map("shared-settings"))
    with pytest.raises(TenancyError) as error:
        tenant.add_manifest(
            "Second",
            _config_map("shared-settings"),
            _config_map("other", "kube-system"),
            {"apiVersion": "v1", "kind": "Secret", "metadata": {}},
            _config_map("fine"),
        )
    lines = str(error.value).splitlines()[1:]
    assert len(lines) == 3, lines
    assert "already applied" in lines[0]
    assert "namespace 'kube-system'" in lines[1]
    assert "a Secret has no apiVersion, kind or metadata.name" in lines[2]
    assert tenant.node.try_find_child("Second") is None


def test_another_namespace_is_accepted_when_named(stage: PlatformStage) -> None:
    tenant = stage.team_stacks[TEAM].tenant
    manifest = tenant.add_manifest(
        "Monitoring", _config_map("research-dashboards", "monitoring"), allow_namespaces=["monitoring"]
    )
    assert manifest.node.scope is tenant


def test_the_cluster_refuses_objects_of_a_team_namespace(stage: PlatformStage) -> None:
    cluster = stage.cluster_stack.cluster
    with pytest.raises(
        TenancyError,
        match=r"namespace 'hyperpod-ns-vision': it belongs to team 'vision': use TeamTenant\.add_manifest",
    ):
        cluster.add_manifest("TeamThing", _config_map("x", "hyperpod-ns-vision"))
    with pytest.raises(
        TenancyError, match=r"ValidatingAdmissionPolicy 'hyperpod-tenancy-pod-specs' .* is already applied"
    ):
        cluster.add_manifest(
            "Override",
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": "hyperpod-tenancy-pod-specs"},
                "spec": {},
            },
        )


@pytest.mark.parametrize(
    ("api_version", "kind", "scoped"),
    [
        ("v1", "Namespace", True),
        ("v1", "ConfigMap", False),
        ("rbac.authorization.k8s.io/v1", "ClusterRole", True),
        ("rbac.authorization.k8s.io/v1", "Role", False),
        ("kueue.x-k8s.io/v1beta1", "ClusterQueue", True),
        ("kueue.x-k8s.io/v1beta1", "LocalQueue", False),
        ("example.com/v1", "ClusterQueue", False),  # the group counts, not the kind's name alone
    ],
)
def test_cluster_scoped_kinds_are_known_by_group_and_kind(api_version: str, kind: str, scoped: bool) -> None:
    assert is_cluster_scoped({"apiVersion": api_version, "kind": kind}) is scoped


def test_a_cluster_scoped_object_gets_no_namespace() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tools"}}
    (checked,) = extension_manifests("owner", [ns], taken=(), namespace="team-ns")
    assert checked["metadata"] == {"name": "tools"}


# --------------------------------------------------------------------------- admission at synth


def _unlabelled_deployment(team: str) -> dict[str, Any]:
    honest = tenant_admission.deployment(team)
    del honest["metadata"]["labels"]
    del honest["metadata"]["namespace"]
    honest["metadata"]["name"] = "unlabelled"
    return honest


def test_a_workload_the_teams_admission_refuses_stops_synthesis(stage: PlatformStage) -> None:
    """A Deployment without queue or priority labels: refused at synth, naming the policy and its message."""
    tenant = stage.team_stacks["inference"].tenant
    with pytest.raises(TenancyError) as error:
        tenant.add_manifest("Unlabelled", _unlabelled_deployment("inference"))
    text = str(error.value)
    assert "Deployment/unlabelled: hyperpod-tenancy-workload-labels (Deny):" in text
    assert "kueue.x-k8s.io/priority-class" in text and "kueue.x-k8s.io/queue-name" in text
    assert "Unlabelled" not in [c.node.id for c in tenant.node.children]


def test_an_honest_workload_is_added(stage: PlatformStage) -> None:
    tenant = stage.team_stacks["inference"].tenant
    honest = tenant_admission.deployment("inference")
    del honest["metadata"]["namespace"]
    tenant.add_manifest("Llm", honest, _config_map("llm-settings"))


def test_the_check_decides_as_the_admission_harness(reference_platform: Platform) -> None:
    """The synth-time check and the CEL harness the API-server tests are compared with agree, object by object."""
    rendered = [*admission_policies(reference_platform), *tenant_guard_policies(), *operator_guard_policies()]
    honest_job = tenant_admission.job("research")
    cases: list[tuple[str, dict[str, Any]]] = [
        ("inference", tenant_admission.deployment("inference")),
        (
            "inference",
            {
                **_unlabelled_deployment("inference"),
                "metadata": {"name": "x", "namespace": "hyperpod-ns-inference"},
            },
        ),
        ("research", honest_job),
        ("research", tenant_admission.job("research", labels=tenant_admission.kueue_labels("vision"))),
        ("research", tenant_admission.job("research", labels={})),
        ("research", tenant_admission.raycluster("research")),
    ]
    for team_name, obj in cases:
        team = reference_platform.team(team_name)
        ns = {
            "metadata": {
                "name": obj["metadata"]["namespace"],
                "labels": namespace_labels(reference_platform, team),
            }
        }
        group, resource = tenant_admission.group_resource(obj)
        expected = evaluate_policies(
            rendered, obj=obj, namespace=ns, group=group, resource=resource, user_info=DEPLOYER
        )
        found = check_team_objects(reference_platform, team, [obj])
        assert sorted(f.message for f in found if f.action == "Deny") == sorted(expected.denied), obj
        assert sorted(f.message for f in found if f.action == "Warn") == sorted(expected.warnings), obj
    inference = reference_platform.team("inference")
    assert not check_team_objects(reference_platform, inference, [tenant_admission.deployment("inference")])


def test_without_the_cel_engine_a_workload_is_refused_naming_the_extra(
    stage: PlatformStage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check cannot run without the [admission] extra: unknown means refused, a ConfigMap needs no check."""
    monkeypatch.setitem(sys.modules, "cel", None)
    tenant = stage.team_stacks["vision"].tenant
    honest = tenant_admission.deployment("vision")
    del honest["metadata"]["namespace"]
    with pytest.raises(TenancyError, match=r"pip install 'cdk-hyperpod-tenancy\[admission\]'"):
        tenant.add_manifest("NoEngine", honest)
    tenant.add_manifest("PlainSettings", _config_map("plain-settings"))
