"""GPU partitions (MIG): the layouts HyperPod's GPU operator applies, quotas in partitions, Kueue admitting them.

The layouts are the HyperPod chart's (checked name by name); a group's layout reaches its nodes as HyperPod's
``nvidia.com/mig.config`` label with the chart's GPU operator installed and hardened; quotas in partitions become
Task Governance ``AcceleratorPartition`` and Kueue quotas of ``nvidia.com/mig-<profile>``. On the real control
plane (Kueue v0.19.2, KWOK nodes advertising the partitions the layout makes and no whole GPU), a partition-only
team runs on its slices and waits, with explain saying why, for a whole GPU or a profile it holds no quota for.
``hyp --accelerator-partition-type`` writes the resource the queues count. The chargeback does not bill
partitions yet, so a platform with ``chargeback`` refuses them.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import cfnlint
import pytest
import tenant_admission as ta
from cel_admission import evaluate_policies
from cluster_platform import ClusterPlatforms, OnCluster
from hyperpod_sdk import render
from kube_client import wait_until
from kueue_crd_validator import validate_kueue
from matplotlib.patches import Rectangle
from platforms import example, reference_data
from synth import Synth, resources_of, synthesize
from webhook_server import sso_user

from hyperpod_tenancy.chargeback.model import config_from_json, config_to_json
from hyperpod_tenancy.constructs._private.task_governance import resource_config
from hyperpod_tenancy.constructs.cluster.hyperpod import HYPERPOD_HELM_RELEASE, gpu_operator_values
from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.ceilings import accelerator_ceiling, accelerator_ceilings_known
from hyperpod_tenancy.k8s.kueue import cluster_objects, team_objects
from hyperpod_tenancy.k8s.labels import (
    ACCELERATOR_LABEL_PREFIX,
    accelerator_entitlement_label,
    namespace_labels,
    revoked_namespace_labels,
)
from hyperpod_tenancy.policy import Platform, names, platform_from_dict
from hyperpod_tenancy.policy.changes import replacement_warnings
from hyperpod_tenancy.policy.chargeback import chargeback_config
from hyperpod_tenancy.policy.mig import PARTITIONED_TYPES, layout, mig_configs, profiles
from hyperpod_tenancy.runtime.eviction_collector.gauges import team_gpu_gauges
from hyperpod_tenancy.runtime.eviction_collector.partitions import partition_rows
from hyperpod_tenancy.tools.explain.diagnose import diagnose
from hyperpod_tenancy.tools.explain.live import read_live
from hyperpod_tenancy.tools.explain.objects import Cause, Objects
from hyperpod_tenancy.tools.plan.chart import render_chart
from hyperpod_tenancy.tools.plan.command import text_lines
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

#: The layouts of the chart's ConfigMap ``default-mig-config`` for A100 40GB, A100 80GB/H100 and H200
#: (aws/sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/charts/gpu-operator/config/default-mig-config.yaml at
#: 011ca927), by the profile of their 1g partition.
CHART = {
    family: [
        f"all-1g.{a}",
        f"all-3g.{c}",
        f"all-7g.{g}",
        f"mixed-1-3g.{c}-1-4g.{c}",
        f"mixed-1-1g.{a}-1-2g.{b}-1-4g.{c}",
        f"mixed-3-1g.{a}-1-4g.{c}",
        f"mixed-1-1g.{a}-1-2g.{b}-1-3g.{c}",
        f"mixed-3-1g.{a}-1-3g.{c}",
        f"mixed-2-2g.{b}-1-3g.{c}",
        f"mixed-2-1g.{a}-1-2g.{b}-1-3g.{c}",
        f"mixed-4-1g.{a}-1-3g.{c}",
        f"mixed-1-1g.{a}-3-2g.{b}",
        f"mixed-3-1g.{a}-2-2g.{b}",
        f"mixed-5-1g.{a}-1-2g.{b}",
    ]
    for family, (a, b, c, g) in {
        "ml.p4d.24xlarge": ("5gb", "10gb", "20gb", "40gb"),
        "ml.p5.48xlarge": ("10gb", "20gb", "40gb", "80gb"),
        "ml.p5e.48xlarge": ("18gb", "35gb", "71gb", "141gb"),
    }.items()
}


@pytest.mark.parametrize("instance_type", sorted(CHART))
def test_the_layouts_are_the_charts(instance_type: str) -> None:
    assert sorted(mig_configs(instance_type)) == sorted(CHART[instance_type])


def test_a_layout_is_partitions_per_gpu() -> None:
    assert layout("ml.p5.48xlarge", "mixed-3-1g.10gb-1-4g.40gb") == {"mig-1g.10gb": 3, "mig-4g.40gb": 1}
    assert layout("ml.p5.48xlarge", "all-1g.5gb") is None
    assert "ml.p6-b200.48xlarge" not in PARTITIONED_TYPES


def _partitioned(edit: Any = None, *, backend: str = "kueue") -> Platform:
    data = reference_data()
    data["fairnessBackend"] = backend
    data.pop("chargeback")  # scheduling only (the chargeback of partitions: test_chargeback_partitions.py)
    data["cluster"]["instanceGroups"][0]["migConfig"] = "all-1g.10gb"
    research, vision = data["teams"][0], data["teams"][1]
    research["compute"]["quotas"] = {
        "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 14}}
    }
    vision["compute"]["quotas"] = {
        "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 56}}
    }
    if edit is not None:
        edit(data)
    return platform_from_dict(data, source="platform.yaml with partitioned p5 nodes")


def _codes(edit: Any) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        _partitioned(edit)
    return [issue.code for issue in caught.value.issues]


def test_partition_quotas_become_kueue_quotas_of_the_partition_resource() -> None:
    platform = _partitioned()
    research = platform.team("research")
    objects = [*cluster_objects(platform), *team_objects(platform, research)]
    assert validate_kueue(objects) == []
    (queue,) = [o for o in objects if o["kind"] == "ClusterQueue"]
    (group,) = queue["spec"]["resourceGroups"]
    assert "nvidia.com/mig-1g.10gb" in group["coveredResources"]
    p5 = {r["name"]: r for r in group["flavors"][0]["resources"]}
    assert p5["nvidia.com/mig-1g.10gb"]["nominalQuota"] == 14
    assert p5["nvidia.com/gpu"]["nominalQuota"] == 0  # partitioned GPUs are offered as partitions only
    # 14 one-slice partitions of 8 GPUs x 7 slices: a quarter of the instance's 96 cores (one thread per core)
    assert p5["cpu"]["nominalQuota"] == 24


def test_task_governance_gets_the_partition() -> None:
    platform = _partitioned(backend="task-governance")
    quota = platform.team("research").compute.quotas["ml.p5.48xlarge"]
    assert resource_config("ml.p5.48xlarge", quota) == {
        "InstanceType": "ml.p5.48xlarge",
        "AcceleratorPartition": {"Type": "mig-1g.10gb", "Count": 14},
    }


def test_a_layout_the_chart_does_not_have_is_refused() -> None:
    def wrong(d: dict[str, Any]) -> None:
        d["cluster"]["instanceGroups"][0]["migConfig"] = "all-2g.20gb"

    assert _codes(wrong) == ["HPT-MIG-CONFIG"]


def test_whole_gpus_on_partitioned_nodes_are_refused() -> None:
    def whole(d: dict[str, Any]) -> None:
        d["teams"][0]["compute"]["quotas"] = {"ml.p5.48xlarge": 2}

    assert "HPT-QUOTA-PARTITION" in _codes(whole)


def test_more_partitions_than_the_nodes_make_are_refused() -> None:
    def many(d: dict[str, Any]) -> None:
        d["teams"][1]["compute"]["quotas"] = {
            "ml.p5.48xlarge": {"acceleratorPartition": {"type": "mig-1g.10gb", "count": 900}}
        }

    assert "HPT-PARTITION-CAPACITY" in _codes(many)


def test_the_chargeback_knows_the_partitioned_types_and_guarantees() -> None:
    def billed(d: dict[str, Any]) -> None:
        d["chargeback"] = reference_data()["chargeback"]

    config = chargeback_config(_partitioned(billed))
    assert config.partitioned_slices == {"ml.p5.48xlarge": 7}
    # 14 one-slice partitions of 8 x 7 slices: a quarter of an instance, 2 GPUs
    assert {t.name: t.quotas.get("ml.p5.48xlarge") for t in config.teams} == {
        "research": Fraction(1, 4),
        "vision": 1,
        "inference": None,
    }
    assert config_from_json(config_to_json(config)) == config


# ---------------------------------------------------------------------------------------- on the real Kueue


@pytest.fixture(scope="module")
def mig_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(_partitioned(), tmp_path_factory.mktemp("mig"), validate=True)


@pytest.fixture(scope="module")
def on_cluster(cluster_platforms: ClusterPlatforms, mig_synth: Synth) -> Iterator[OnCluster]:
    yield cluster_platforms.on("mig-kueue", mig_synth)
    cluster_platforms.close()


def _job(name: str, resource: str, amount: int) -> dict[str, Any]:
    """A research member's Job of one pod asking ``amount`` of ``resource`` (request = limit), held Running."""
    job = ta.runnable_job(name, gpus=1)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    container["resources"] = {"requests": {resource: str(amount)}, "limits": {resource: str(amount)}}
    job["spec"]["template"]["metadata"] = {"annotations": dict(_HOLD)}
    return job


#: KWOK completes a Job's pods after a second or so (its ``pod/general`` stages); these hold them Running.
_HOLD = {
    "pod-complete.stage.kwok.x-k8s.io/delay": "24h",
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "24h",
}


def _quota_message(plane: OnCluster, job: dict[str, Any]) -> str | None:
    namespace = job["metadata"]["namespace"]
    for workload in plane.admin.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace):
        if any(o["name"] == job["metadata"]["name"] for o in workload["metadata"].get("ownerReferences", [])):
            for condition in workload.get("status", {}).get("conditions", []):
                if condition["type"] == "QuotaReserved" and condition["status"] == "False":
                    return str(condition.get("message", ""))
    return None


def _running_on(plane: OnCluster, job: dict[str, Any]) -> str | None:
    selector = f"batch.kubernetes.io/job-name={job['metadata']['name']}"
    for pod in plane.admin.list("v1", "Pod", namespace=job["metadata"]["namespace"], labelSelector=selector):
        if pod["spec"].get("nodeName") and pod["status"].get("phase") == "Running":
            return str(pod["spec"]["nodeName"])
    return None


def _namespace(platform: Platform, team: str) -> dict[str, Any]:
    """The team's namespace with the labels its team stack writes (the product's contract)."""
    name = names.namespace(team)
    labels = {**namespace_labels(platform, platform.team(team)), "kubernetes.io/metadata.name": name}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def _admit(platform: Platform, job: dict[str, Any], team: str = "research") -> list[str]:
    """The refusals of the platform's policies for ``job`` created by a member of ``team`` (CEL engine)."""
    decision = evaluate_policies(
        admission_policies(platform),
        obj=job,
        namespace=_namespace(platform, team),
        group="batch",
        resource="jobs",
        user_info=ta.MEMBER,
    )
    return list(decision.denied)


def test_admission_refuses_what_a_partition_only_team_is_not_entitled_to() -> None:
    platform = _partitioned()
    assert _admit(platform, _job("slices", "nvidia.com/mig-1g.10gb", 2)) == []
    for resource in (
        "nvidia.com/gpu",
        "nvidia.com/mig-3g.40gb",
        "nvidia.com/mig-1g.10gbx",
        "aws.amazon.com/neuron",
    ):
        (denial,) = _admit(platform, _job("refused", resource, 1))
        assert _NOT_ENTITLED in denial and "nvidia.com/mig-1g.10gb" in denial, denial
    # in limits only, or in an init container, it is the same request
    job = _job("limits-only", "nvidia.com/mig-1g.10gb", 1)
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1"
    assert any(_NOT_ENTITLED in d for d in _admit(platform, job))
    job = _job("init", "nvidia.com/mig-1g.10gb", 1)
    init = copy.deepcopy(job["spec"]["template"]["spec"]["containers"][0])
    init |= {"name": "init", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
    job["spec"]["template"]["spec"]["initContainers"] = [init]
    assert any(_NOT_ENTITLED in d for d in _admit(platform, job))
    # asking for 0 asks for nothing
    assert _admit(platform, _job("zero", "nvidia.com/gpu", 0)) == []
    # a profile the cluster offers, asked by a team that holds none of it and may not borrow (inference lends)
    job = _job("not-held", "nvidia.com/mig-1g.10gb", 1)
    job["metadata"]["namespace"] = "hyperpod-ns-inference"
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "hyperpod-ns-inference-localqueue"
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "inference-priority"
    inference = {
        **ta.MEMBER,
        "groups": ["hyperpod-ns-inference-namespace-level-group", "system:authenticated"],
    }
    decision = evaluate_policies(
        admission_policies(platform),
        obj=job,
        namespace=_namespace(platform, "inference"),
        group="batch",
        resource="jobs",
        user_info=inference,
    )
    assert [d for d in decision.denied if _NOT_ENTITLED in d], decision.denied


def test_a_namespace_without_the_entitlement_label_is_refused_every_accelerator() -> None:
    platform = _partitioned()
    namespace = _namespace(platform, "research")
    namespace["metadata"]["labels"] = {
        k: v for k, v in namespace["metadata"]["labels"].items() if not k.startswith(ACCELERATOR_LABEL_PREFIX)
    }
    decision = evaluate_policies(
        admission_policies(platform),
        obj=_job("slices", "nvidia.com/mig-1g.10gb", 2),
        namespace=namespace,
        group="batch",
        resource="jobs",
        user_info=ta.MEMBER,
    )
    assert any(_NOT_ENTITLED in d for d in decision.denied), decision.denied


def test_the_entitlements_follow_the_ceiling_and_are_revoked_with_the_team() -> None:
    platform = _partitioned()
    research = platform.team("research")
    entitled = {
        k: v
        for k, v in namespace_labels(platform, research).items()
        if k.startswith(ACCELERATOR_LABEL_PREFIX)
    }
    ceiling = accelerator_ceiling(platform, research) or {}
    assert entitled == {
        accelerator_entitlement_label(r): "allowed" if n > 0 else "denied" for r, n in ceiling.items()
    }
    assert entitled[accelerator_entitlement_label("nvidia.com/mig-1g.10gb")] == "allowed"
    assert entitled[accelerator_entitlement_label("nvidia.com/gpu")] == "denied"
    revoked = revoked_namespace_labels(platform, research)
    assert {revoked[k] for k in entitled} == {"denied"}


def _partition_rows(plane: OnCluster) -> list[tuple[Any, ...]]:
    """The eviction collector's partition rows of research's live ClusterQueue, once it counts what is held."""
    queue = plane.admin.get(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": names.cluster_queue("research")},
        }
    )
    rows = partition_rows(
        [queue] if queue else [],
        queue_prefix=names.NAMESPACE_PREFIX,
        queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
        moment=dt.datetime.now(dt.UTC),
    )
    found = [
        (r["namespace"], r["instance_type"], r["profile"], r["slices"], r["total"], r["borrowed"])
        for r in rows
    ]
    return found if any(r[4] for r in found) else []


def _with_limit(job: dict[str, Any], resource: str, amount: str) -> dict[str, Any]:
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][resource] = amount
    return job


def _with_init(job: dict[str, Any], resource: str) -> dict[str, Any]:
    init = copy.deepcopy(job["spec"]["template"]["spec"]["containers"][0])
    init |= {"name": "init", "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}}}
    job["spec"]["template"]["spec"]["initContainers"] = [init]
    return job


def _inference(job: dict[str, Any]) -> dict[str, Any]:
    job["metadata"]["namespace"] = "hyperpod-ns-inference"
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "hyperpod-ns-inference-localqueue"
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "inference-priority"
    return job


#: (case, the Job, its team, admitted?): what a research (or inference) member may ask for on the partitioned
#: platform, judged by the CEL engine and by the real API server alike.
ENTITLEMENT_CASES: list[tuple[str, Any, str, bool]] = [
    ("its own slices", lambda: _job("own-slices", "nvidia.com/mig-1g.10gb", 2), "research", True),
    ("a whole GPU", lambda: _job("whole", "nvidia.com/gpu", 1), "research", False),
    ("a profile no layout makes", lambda: _job("three-g", "nvidia.com/mig-3g.40gb", 1), "research", False),
    ("a malformed profile", lambda: _job("bad-profile", "nvidia.com/mig-1g.10gbx", 1), "research", False),
    ("Neuron devices", lambda: _job("neuron", "aws.amazon.com/neuron", 1), "research", False),
    (
        "a whole GPU in limits only",
        lambda: _with_limit(_job("limits", "nvidia.com/mig-1g.10gb", 1), "nvidia.com/gpu", "1"),
        "research",
        False,
    ),
    (
        "a whole GPU in an init container",
        lambda: _with_init(_job("init", "nvidia.com/mig-1g.10gb", 1), "nvidia.com/gpu"),
        "research",
        False,
    ),
    ("no GPU at all (0)", lambda: _job("zero", "nvidia.com/gpu", 0), "research", True),
    (
        "an offered profile by a team that holds none and lends only",
        lambda: _inference(_job("not-held", "nvidia.com/mig-1g.10gb", 1)),
        "inference",
        False,
    ),
]


def _member(team: str) -> dict[str, Any]:
    return {**ta.MEMBER, "groups": [f"hyperpod-ns-{team}-namespace-level-group", "system:authenticated"]}


@pytest.mark.parametrize(
    ("case", "make", "team", "admitted"), ENTITLEMENT_CASES, ids=[c[0] for c in ENTITLEMENT_CASES]
)
def test_the_entitlement_cases_offline(case: str, make: Any, team: str, admitted: bool) -> None:
    decision = evaluate_policies(
        admission_policies(_partitioned()),
        obj=make(),
        namespace=_namespace(_partitioned(), team),
        group="batch",
        resource="jobs",
        user_info=_member(team),
    )
    refused = [d for d in decision.denied if _NOT_ENTITLED in d]
    assert (not refused) is admitted, (case, decision.denied)


#: What the pod-spec policy answers a container asking for an accelerator the team is not entitled to.
_NOT_ENTITLED = "requests an accelerator its team holds no quota for and may not borrow"


@pytest.mark.cluster
def test_a_partition_only_team_runs_on_its_slices_and_is_refused_a_whole_gpu(on_cluster: OnCluster) -> None:
    plane = on_cluster
    plane.await_admission()
    alice = plane.member("alice", "research")
    slices_job = _job("slices", "nvidia.com/mig-1g.10gb", 2)
    try:
        assert (answer := alice.create(slices_job)).ok, answer.message
        node = wait_until(lambda: _running_on(plane, slices_job), timeout=240, what="the slices job to run")
        assert node.startswith("p5-training-")
        # what the eviction collector records for the chargeback, read from the queue as Kueue reports it
        rows = wait_until(
            lambda: _partition_rows(plane) or None, timeout=60, what="the queue to count the slices"
        )
        assert rows == [("hyperpod-ns-research", "ml.p5.48xlarge", "mig-1g.10gb", 1, 2, 0)], rows
        # no node offers a whole GPU of p5 and the team holds none anywhere, nor a 3g partition (no layout makes
        # it): admission refuses both before Kueue would hold them for ever
        for refused in (
            _job("whole-gpu", "nvidia.com/gpu", 1),
            _job("other-profile", "nvidia.com/mig-3g.40gb", 1),
        ):
            answer = alice.create(refused)
            assert not answer.ok and _NOT_ENTITLED in answer.message, answer.message
        # the backstop stands behind admission: a pod the policy let through on the whole GPU is still refused
        # by the namespace's ResourceQuota (0 nvidia.com/gpu); the policy is what a member meets first
    finally:
        plane.admin.delete(slices_job, propagation="Foreground")


@pytest.mark.cluster
def test_a_job_past_the_quota_waits_and_explain_names_the_profiles_held(on_cluster: OnCluster) -> None:
    """A job entitled to the profile but asking more than the queue can ever hold waits; explain says why."""
    plane = on_cluster
    plane.await_admission()
    alice = plane.member("alice", "research")
    big = _job("too-many-slices", "nvidia.com/mig-1g.10gb", 22)  # ceiling: 14 own + 7 borrowed
    try:
        assert (answer := alice.create(big)).ok, answer.message
        message = wait_until(lambda: _quota_message(plane, big), timeout=120, what="the big job to wait")
        assert "nvidia.com/mig-1g.10gb" in message, message
        user = sso_user("mig-alice", "research")
        kubeconfig = plane.plane.kubeconfig("mig-alice", user=user["username"], groups=tuple(user["groups"]))
        objects = read_live(
            namespace="hyperpod-ns-research",
            asked="too-many-slices",
            denials=(),
            kubeconfig=str(kubeconfig),
            context=None,
        )
        (main, *_) = diagnose(plane.synth.platform, objects)
        assert _running_on(plane, big) is None
        assert "nvidia.com/mig-1g.10gb" in main.render(), main.render()
    finally:
        plane.admin.delete(big, propagation="Foreground")


@pytest.mark.cluster
def test_the_real_api_server_gives_the_entitlement_cases_the_same_verdict(on_cluster: OnCluster) -> None:
    """Each case of :data:`ENTITLEMENT_CASES`, created by a member of its team, is admitted or refused by the
    entitlement exactly as the CEL engine judged it offline (created for real: the POSIX identity webhook gives a
    person no UID on a dry run; what is admitted is deleted after)."""
    on_cluster.await_admission()
    disagreements, created = [], []
    try:
        for case, make, team, admitted in ENTITLEMENT_CASES:
            job = make()
            answer = on_cluster.member("ent-" + team, team).create(job)
            if answer.ok:
                created.append(job)
            refused = not answer.ok and _NOT_ENTITLED in answer.message
            if refused is admitted or (not answer.ok and not refused):
                disagreements.append((case, answer.ok, answer.message))
    finally:
        for job in created:
            on_cluster.admin.delete(job, propagation="Foreground")
    assert not disagreements, disagreements


@pytest.mark.cluster
def test_the_backstop_caps_the_partitions_the_team_may_hold(on_cluster: OnCluster) -> None:
    quota = on_cluster.admin.get(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "accelerator-ceiling", "namespace": "hyperpod-ns-research"},
        }
    )
    assert quota is not None
    # 14 of its own and half of them borrowed (research's borrowLimit), no whole GPU
    assert quota["spec"]["hard"]["requests.nvidia.com/mig-1g.10gb"] == "21", quota["spec"]["hard"]
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "0", quota["spec"]["hard"]


def test_the_cluster_installs_the_gpu_operator_with_the_hardening(mig_synth: Synth) -> None:
    """The layout's label on the group (HyperPod's "managed" way), and the chart's GPU operator with the same GPU
    hardening as the chart's own device plugin (:func:`gpu_operator_values`, its sources)."""
    (cluster,) = resources_of(mig_synth.cluster, "AWS::SageMaker::Cluster").values()
    groups = {g["InstanceGroupName"]: g for g in cluster["Properties"]["InstanceGroups"]}
    assert groups["p5-training"]["KubernetesConfig"] == {"Labels": {"nvidia.com/mig.config": "all-1g.10gb"}}
    assert "KubernetesConfig" not in groups["g5-inference"]
    (chart,) = [
        c
        for c in resources_of(mig_synth.cluster, "Custom::AWSCDK-EKS-HelmChart").values()
        if c["Properties"]["Release"] == HYPERPOD_HELM_RELEASE
    ]
    values = json.loads(chart["Properties"]["Values"])
    assert values["gpu-operator"] == gpu_operator_values()["gpu-operator"]
    operator = values["gpu-operator"]["gpu-operator"]
    assert {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"} in operator[
        "toolkit"
    ]["env"]
    assert operator["devicePlugin"]["env"] == [{"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"}]
    assert values["nvidia-device-plugin"]["devicePlugin"] == {"enabled": False}


def test_without_a_layout_the_chart_keeps_its_own_device_plugin(reference: Synth) -> None:
    (chart,) = [
        c
        for c in resources_of(reference.cluster, "Custom::AWSCDK-EKS-HelmChart").values()
        if c["Properties"]["Release"] == HYPERPOD_HELM_RELEASE
    ]
    values = json.loads(chart["Properties"]["Values"])
    assert "gpu-operator" not in values
    assert values["nvidia-device-plugin"] == {"deviceListStrategy": "volume-mounts"}


def _waiting_for(resource: str) -> Objects:
    message = f"couldn't assign flavors to pod set main: resource {resource} unavailable in ClusterQueue"
    platform = _partitioned()
    research = platform.team("research")
    (queue,) = [o for o in team_objects(platform, research) if o["kind"] == "ClusterQueue"]
    workload = {
        "metadata": {"name": "job-z", "namespace": "hyperpod-ns-research"},
        "spec": {"queueName": "hyperpod-ns-research-localqueue", "podSets": []},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": message}]},
    }
    return Objects(namespace="hyperpod-ns-research", workload=workload, cluster_queue=queue)


def test_explain_names_the_profile_without_quota_and_the_ones_held() -> None:
    (main, *_) = diagnose(_partitioned(), _waiting_for("nvidia.com/mig-3g.40gb"))
    assert main.cause is Cause.PARTITION_PROFILE
    assert main.summary.startswith("No quota for this partition profile: your team's queue has none of ")
    assert (
        main.details[1]
        == "partitions your team holds: nvidia.com/mig-1g.10gb (your quota: 14 on ml.p5.48xlarge)"
    )
    page = (Path(__file__).resolve().parents[1] / "docs" / "explain.md").read_text(encoding="utf-8")
    assert f"```text\n{main.render()}\n```" in page


_HYP = (
    "hyp create hyp-pytorch-job --job-name notebook --namespace hyperpod-ns-research "
    "--image 111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1 --instance-type ml.p5.48xlarge "
    "--queue-name hyperpod-ns-research-localqueue --priority training-priority "
    "--volume name=fsx,type=pvc,mount_path=/fsx/research,claim_name=fsx "
    """--environment '{"HYPERPOD_TENANCY_CHECKPOINT_DIR": "/fsx/research/nb", "HYPERPOD_TENANCY_CHECKPOINT_INTERVAL": "1h"}' """
    "--accelerator-partition-type mig-1g.10gb --accelerator-partition-count 2"
)


def test_hyp_asks_for_partitions_as_the_queues_count_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """``hyp`` 3.12 writes ``nvidia.com/mig-1g.10gb`` (request = limit), the resource the partitioned flavor's quota
    covers, and the platform admits it. The CLI's own check of the profile against live nodes is off: no cluster
    answers here (``VALIDATE_PROFILE_IN_CLUSTER``, sagemaker/hyperpod/training/accelerator_partition_util.py)."""
    monkeypatch.setenv("VALIDATE_PROFILE_IN_CLUSTER", "false")
    (posted,) = render([_HYP])
    (replica,) = posted.body["spec"]["replicaSpecs"]
    (container,) = replica["template"]["spec"]["containers"]
    assert str(container["resources"]["requests"]["nvidia.com/mig-1g.10gb"]) == "2"
    assert str(container["resources"]["limits"]["nvidia.com/mig-1g.10gb"]) == "2"
    assert "nvidia.com/gpu" not in container["resources"]["requests"]
    platform = _partitioned(backend="task-governance")
    decision = evaluate_policies(
        admission_policies(platform),
        obj=copy.deepcopy(posted.body),
        namespace=_namespace(platform, "research"),
        group="sagemaker.amazonaws.com",
        resource="hyperpodpytorchjobs",
        operation="CREATE",
        user_info=ta.MEMBER,
    )
    assert decision.denied == []


def test_validate_baseline_says_a_layout_change_stops_the_gpus_work() -> None:
    plain = platform_from_dict({**reference_data(), "fairnessBackend": "kueue"} | {"chargeback": None})
    (issue,) = [i for i in replacement_warnings(plain, _partitioned()) if i.code == "HPT-UPGRADE-MIG"]
    assert issue.path == "cluster.instanceGroups[0].migConfig"
    assert "goes from whole GPUs to all-1g.10gb" in issue.message
    assert "drain the group first" in issue.fix


def test_plan_lists_the_partitions_a_team_holds() -> None:
    plan = build_plan(example("partitions-and-topology"), month="2026-12")
    (share,) = [s for s in plan.shares if s.team == "inference"]
    assert (share.guaranteed_gpus, dict(share.partitions)) == (0, {"mig-1g.10gb": 98})
    assert any("0 + 98 mig-1g.10gb" in line for line in text_lines(plan))


def test_a_partition_named_by_its_mig_identifier_is_refused(reference: Synth) -> None:
    """The GPU-visibility rule refuses ``NVIDIA_VISIBLE_DEVICES`` whatever it names, MIG device identifiers too."""
    job = ta.runnable_job("peek", gpus=1)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    container["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": "1"}}
    container.setdefault("env", []).append(
        {"name": "NVIDIA_VISIBLE_DEVICES", "value": "MIG-4a9e0f3c-6c1d-5e8f-9a0b-1c2d3e4f5a6b"}
    )
    decision = evaluate_policies(
        admission_policies(_partitioned()),
        obj=job,
        namespace=ta.namespace(reference, "research"),
        group="batch",
        resource="jobs",
        operation="CREATE",
        user_info=ta.MEMBER,
    )
    assert any("may set NVIDIA_VISIBLE_DEVICES" in m for m in decision.denied), decision.denied


def test_every_partition_type_is_one_the_compute_quota_accepts() -> None:
    """``AWS::SageMaker::ComputeQuota`` rejects a ``AcceleratorPartition.Type`` outside its enum (the CloudFormation
    schema cfn-lint ships, ``AcceleratorPartitionConfig``), and the service one the instance type does not support:
    every profile offered here is in the enum, and each type's are the HyperPod CLI's for it."""
    schemas = Path(cfnlint.__file__).parent / "data" / "schemas" / "resources"
    (schema,) = [
        d
        for f in schemas.glob("*.json")
        if '"AWS::SageMaker::ComputeQuota"' in (text := f.read_text(encoding="utf-8"))
        for d in [json.loads(text)]
    ]
    accepted = set(schema["definitions"]["AcceleratorPartitionConfig"]["properties"]["Type"]["enum"])
    for instance_type in PARTITIONED_TYPES:
        assert set(profiles(instance_type)) <= accepted, instance_type
        for config in mig_configs(instance_type):
            assert set(layout(instance_type, config) or {}) <= set(profiles(instance_type)), config


def test_the_plan_chart_draws_partitions_at_their_share_of_gpus() -> None:
    """98 one-slice partitions are 14 GPUs of the p4de panel, hatched, and the row says what they are."""
    figure = render_chart(build_plan(example("partitions-and-topology"), month="2026-12"))
    figure.canvas.draw()
    bars = {
        str(p.get_gid()): p
        for ax in figure.axes
        for p in ax.patches
        if isinstance(p, Rectangle) and str(p.get_gid()).endswith(":inference")
    }
    assert {gid: bar.get_width() for gid, bar in bars.items()} == {
        "segment:inference": 14,
        "guarantee:inference": 14,
    }
    assert {bar.get_hatch() for bar in bars.values()} == {"xx"}
    texts = [t.get_text() for ax in figure.axes for t in ax.texts]
    assert "98 mig-1g.10gb = 14 GPUs" in texts, texts
    legend = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    assert "in GPU partitions" in legend
    # whole-GPU teams are drawn as before, without the hatch
    whole = [p for ax in figure.axes for p in ax.patches if str(p.get_gid()) == "guarantee:research"]
    assert [(b.get_width(), b.get_hatch()) for b in whole] == [(72, None)]


def test_the_team_dashboards_count_partitions_at_their_share_of_gpus() -> None:
    """The live gauges of a team holding partitions: 14 one-slice partitions are 2 GPUs in use and guaranteed."""
    platform = _partitioned()
    queues = [
        o for t in platform.hosted_teams for o in team_objects(platform, t) if o["kind"] == "ClusterQueue"
    ]
    research = names.cluster_queue("research")
    usage = {
        "name": "ml.p5.48xlarge",
        "resources": [{"name": "nvidia.com/mig-1g.10gb", "total": "17", "borrowed": "3"}],
    }
    queues = [
        {**q, "status": {"flavorsUsage": [usage]}} if q["metadata"]["name"] == research else q for q in queues
    ]
    gauges = team_gpu_gauges(
        queues, queue_prefix=names.NAMESPACE_PREFIX, queue_suffix=names.CLUSTER_QUEUE_SUFFIX
    )
    # research: 14 of its own (2 GPUs), may borrow 7 more of vision's 56 (3 GPUs in all); 17 held, 3 borrowed
    assert gauges["research"] == {
        "GpusInUse": round(17 / 7, 3),
        "GpusBorrowed": round(3 / 7, 3),
        "GpuGuarantee": 2,
        "GpuCeiling": 3,
    }
    # vision: 56 (8 GPUs), may borrow all of research's 14 (borrowLimit 100 %)
    assert gauges["vision"] == {"GpusInUse": 0, "GpusBorrowed": 0, "GpuGuarantee": 8, "GpuCeiling": 10}


def test_where_a_groups_shape_is_unknown_no_entitlement_refuses_honest_work() -> None:
    """An uncatalogued type without `resources` is valid on Task Governance; what its nodes advertise is unknown,
    so (as for the ResourceQuota backstop) no entitlement is checked rather than every GPU job refused."""
    data = reference_data()
    data["cluster"]["instanceGroups"][1]["instanceType"] = "ml.g4dn.12xlarge"  # not in the catalogue
    data["teams"][2]["compute"]["quotas"] = {"ml.g4dn.12xlarge": 3}
    data["chargeback"]["prices"]["ml.g4dn.12xlarge"] = 1.0
    platform = platform_from_dict(data)
    assert not accelerator_ceilings_known(platform)
    assert not [
        k
        for k in namespace_labels(platform, platform.team("research"))
        if k.startswith(ACCELERATOR_LABEL_PREFIX)
    ]
    assert _admit(platform, _job("whole", "nvidia.com/gpu", 8)) == []
    # where every shape is known, the same job is checked (and research holds p5 GPUs)
    assert _admit(platform_from_dict(reference_data()), _job("whole", "nvidia.com/gpu", 8)) == []
    assert any(
        _NOT_ENTITLED in d
        for d in _admit(platform_from_dict(reference_data()), _job("x", "nvidia.com/mig-1g.10gb", 1))
    )
