"""Topology-aware placement: the policy's ``topologyAware`` groups, their Kueue objects, and real Kueue placing by them.

A group of an instance type HyperPod labels with its network topology may be ``topologyAware``; on the ``kueue``
backend its flavor then names the platform's Topology (the AWS network's three layers, then the node), and a job
asking ``kueue.x-k8s.io/podset-required-topology: topology.k8s.aws/network-node-layer-3`` is admitted only where
one bottom-layer network node has room for all its pods. The cluster test runs Kueue v0.19.2 on the local control
plane with KWOK nodes carrying the topology labels as EKS writes them.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tenant_admission as ta
import yaml
from cel_admission import evaluate_policies
from cluster_platform import ClusterPlatforms, OnCluster
from hyperpod_sdk import render
from kube_client import wait_until
from kueue_crd_validator import validate_kueue
from platforms import reference_data
from synth import Synth, synthesize
from webhook_server import sso_user

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.k8s.admission import admission_policies
from hyperpod_tenancy.k8s.kueue import cluster_objects
from hyperpod_tenancy.k8s.kueue._common import TOPOLOGY
from hyperpod_tenancy.policy import Platform, platform_from_dict
from hyperpod_tenancy.policy.changes import replacement_warnings
from hyperpod_tenancy.policy.rules import check_warnings
from hyperpod_tenancy.policy.topology import NETWORK_LAYERS, TOPOLOGY_LEVELS
from hyperpod_tenancy.tools.explain.diagnose import diagnose
from hyperpod_tenancy.tools.explain.live import read_live
from hyperpod_tenancy.tools.explain.objects import Cause, Objects

LAYER_3 = NETWORK_LAYERS[-1]


def _topology_platform(*, backend: str = "kueue", edit: Any = None) -> Platform:
    data = reference_data()
    data["fairnessBackend"] = backend
    data["cluster"]["instanceGroups"][0]["topologyAware"] = True  # p5-training
    if edit is not None:
        edit(data)
    return platform_from_dict(data, source="platform.yaml with a topology-aware p5 group")


def _codes(edit: Any) -> list[str]:
    with pytest.raises(PolicyError) as caught:
        _topology_platform(edit=edit)
    return [issue.code for issue in caught.value.issues]


def test_the_flavor_of_a_topology_aware_type_names_the_network_topology() -> None:
    objects = cluster_objects(_topology_platform())
    flavors = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ResourceFlavor"}
    assert flavors["ml.p5.48xlarge"]["spec"]["topologyName"] == TOPOLOGY
    assert "topologyName" not in flavors["ml.g5.12xlarge"]["spec"]
    (topology,) = [o for o in objects if o["kind"] == "Topology"]
    assert topology["metadata"]["name"] == TOPOLOGY
    # top (broadest) layer first, the node last: EKS user guide "Place distributed AI/ML workloads with network
    # topology labels" (layer 1 the top of the hierarchy, layer 3 the bottom); Kueue allows the hostname last only
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "topology.k8s.aws/network-node-layer-1",
        "topology.k8s.aws/network-node-layer-2",
        "topology.k8s.aws/network-node-layer-3",
        "kubernetes.io/hostname",
    ]
    assert validate_kueue(objects) == []


def test_without_a_topology_aware_group_there_is_no_topology() -> None:
    platform = platform_from_dict({**reference_data(), "fairnessBackend": "kueue"})
    objects = cluster_objects(platform)
    assert not [o for o in objects if o["kind"] == "Topology"]
    assert all("topologyName" not in o["spec"] for o in objects if o["kind"] == "ResourceFlavor")


def test_a_type_without_topology_labels_is_refused() -> None:
    def g5(d: dict[str, Any]) -> None:
        d["cluster"]["instanceGroups"][1]["topologyAware"] = True

    assert _codes(g5) == ["HPT-TOPOLOGY-TYPE"]


def test_two_groups_of_one_type_must_agree() -> None:
    def second_p5(d: dict[str, Any]) -> None:
        group = copy.deepcopy(d["cluster"]["instanceGroups"][0])
        group.update(name="p5-more", count=2, reserved=0)
        del group["topologyAware"]
        d["cluster"]["instanceGroups"].append(group)

    assert _codes(second_p5) == ["HPT-TOPOLOGY-CONSISTENT"]


# ---------------------------------------------------------------------------------------- on the real Kueue


#: The p5 nodes' bottom-layer network nodes: p5-training-0 and -1 share one, every other node has its own.
def _layer_3(node: str) -> str:
    index = int(node.rsplit("-", 1)[1])
    return "nn-pair" if index < 2 else f"nn-single-{index}"


@pytest.fixture(scope="module")
def topology_synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return synthesize(_topology_platform(), tmp_path_factory.mktemp("topology"), validate=True)


@pytest.fixture(scope="module")
def on_cluster(cluster_platforms: ClusterPlatforms, topology_synth: Synth) -> Iterator[OnCluster]:
    plane = cluster_platforms.on("topology-kueue", topology_synth)
    for node in plane.nodes:
        name = node["metadata"]["name"]
        if name.startswith("p5-training-"):
            labels = {
                NETWORK_LAYERS[0]: "nn-top",
                NETWORK_LAYERS[1]: "nn-middle",
                LAYER_3: _layer_3(name),
            }
            answer = plane.admin.merge_patch(node, {"metadata": {"labels": labels}})
            assert answer.ok, answer.message
    yield plane
    cluster_platforms.close()


#: KWOK completes a Job's pods after a second or so (its ``pod/general`` stages); these hold them Running.
_HOLD = {
    "pod-complete.stage.kwok.x-k8s.io/delay": "24h",
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "24h",
}


def _placed_job(name: str, *, pods: int, level: str) -> dict[str, Any]:
    """A Job of ``pods`` pods of 8 GPUs each, all required under one ``level`` node."""
    job = ta.runnable_job(name, gpus=8)
    job["spec"].update(parallelism=pods, completions=pods)
    job["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-required-topology": level, **_HOLD}
    }
    # on the instance type, as `hyp --instance-type` pins it: otherwise Kueue also tries the g5 flavor
    job["spec"]["template"]["spec"]["nodeSelector"] = {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    return job


def _workload(plane: OnCluster, job: dict[str, Any]) -> dict[str, Any] | None:
    namespace = job["metadata"]["namespace"]
    for workload in plane.admin.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace):
        owners = workload["metadata"].get("ownerReferences", [])
        if any(o["name"] == job["metadata"]["name"] for o in owners):
            return dict(workload)
    return None


def _condition(workload: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for condition in (workload or {}).get("status", {}).get("conditions", []):
        if condition["type"] == kind:
            return dict(condition)
    return None


def _state(plane: OnCluster, job: dict[str, Any]) -> str:
    """What Kueue and the pods say about ``job`` (for a failure's message)."""
    workload = _workload(plane, job) or {}
    pods = plane.admin.list("v1", "Pod", namespace=job["metadata"]["namespace"])
    return f"workload status: {workload.get('status')}\n" + "\n".join(
        f"pod {p['metadata']['name']}: node={p['spec'].get('nodeName')} phase={p['status'].get('phase')} "
        f"gates={p['spec'].get('schedulingGates')} selector={p['spec'].get('nodeSelector')} "
        f"conditions={p['status'].get('conditions')} deleting={p['metadata'].get('deletionTimestamp')}"
        for p in pods
    )


def _nodes_of(plane: OnCluster, job: dict[str, Any], pods: int) -> list[str] | None:
    selector = f"batch.kubernetes.io/job-name={job['metadata']['name']}"
    found = plane.admin.list("v1", "Pod", namespace=job["metadata"]["namespace"], labelSelector=selector)
    nodes = [p["spec"].get("nodeName") for p in found if p["status"].get("phase") == "Running"]
    return sorted(nodes) if len(nodes) == pods and all(nodes) else None


@pytest.mark.cluster
def test_a_job_required_under_one_network_node_waits_until_one_has_room(on_cluster: OnCluster) -> None:
    plane = on_cluster
    plane.await_admission()
    alice = plane.member("alice", "research")
    first = _placed_job("pair-a", pods=2, level=LAYER_3)
    second = _placed_job("pair-b", pods=2, level=LAYER_3)
    try:
        assert (answer := alice.create(first)).ok, answer.message
        # the only bottom-layer node with two free p5 nodes is the pair: both pods land there
        try:
            nodes = wait_until(lambda: _nodes_of(plane, first, 2), timeout=240, what="pair-a's pods to run")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{_state(plane, first)}") from error
        assert nodes == ["p5-training-0", "p5-training-1"]
        assert (answer := alice.create(second)).ok, answer.message
        # fourteen p5 nodes are free and the team's quota has room, but no network node has two of them
        waiting = wait_until(
            lambda: (
                (c := _condition(_workload(plane, second), "QuotaReserved")) and c["status"] == "False" and c
            ),
            timeout=120,
            what="pair-b to wait for a topology domain",
        )
        assert "topology" in waiting["message"].lower(), waiting
        # explain, as the member reads it with their own kubeconfig, names what it waits for
        user = sso_user("topology-alice", "research")
        kubeconfig = plane.plane.kubeconfig(
            "topology-alice", user=user["username"], groups=tuple(user["groups"])
        )
        objects = read_live(
            namespace=second["metadata"]["namespace"],
            asked="pair-b",
            denials=(),
            kubeconfig=str(kubeconfig),
            context=None,
        )
        (main, *_) = diagnose(plane.synth.platform, objects)
        assert main.cause is Cause.TOPOLOGY_DOMAIN, f"{main.render()}\n{_state(plane, second)}"
        assert main.summary.startswith(
            f"Waiting for a topology domain: one bottom-layer network node ({LAYER_3}) with 16 free nvidia.com/gpu."
        ), main.summary
        assert (
            _condition(_workload(plane, second), "Admitted") is None
            or _condition(_workload(plane, second), "Admitted")["status"] == "False"
        )
        # the first job leaves: the pair is free again and the second is placed there
        plane.admin.delete(first, propagation="Foreground")
        try:
            nodes = wait_until(lambda: _nodes_of(plane, second, 2), timeout=240, what="pair-b's pods to run")
        except AssertionError as error:
            raise AssertionError(f"{error}\n{_state(plane, second)}") from error
        assert nodes == ["p5-training-0", "p5-training-1"]
    finally:
        for job in (first, second):
            plane.admin.delete(job, propagation="Foreground")


@pytest.mark.cluster
def test_a_job_needs_a_topology_request_on_a_topology_aware_type_and_a_wrong_level_is_refused(
    on_cluster: OnCluster,
) -> None:
    """Beside a type that is not placed by topology (the g5 group), Kueue v0.19.2 admits a job on the topology-aware
    p5 flavor only if it asks for a topology (what HPT-TOPOLOGY-REQUEST warns about): one that asks for none waits,
    one with ``podset-unconstrained-topology: "true"`` runs, Kueue naming its node. The API server refuses a level
    the Topology lacks."""
    plane = on_cluster
    plane.await_admission()
    alice = plane.member("alice", "research")
    plain, anywhere = ta.runnable_job("plain", gpus=8), ta.runnable_job("anywhere", gpus=8)
    for job, notes in ((plain, {}), (anywhere, {"kueue.x-k8s.io/podset-unconstrained-topology": "true"})):
        job["spec"]["template"]["metadata"] = {"annotations": {**_HOLD, **notes}}
        job["spec"]["template"]["spec"]["nodeSelector"] = {
            "node.kubernetes.io/instance-type": "ml.p5.48xlarge"
        }
    try:
        for job in (plain, anywhere):
            assert (answer := alice.create(job)).ok, answer.message
        try:
            node = wait_until(
                lambda: _nodes_of(plane, anywhere, 1), timeout=240, what="the anywhere job to run"
            )
        except AssertionError as error:
            raise AssertionError(f"{error}\n{_state(plane, anywhere)}") from error
        selector = "batch.kubernetes.io/job-name=anywhere"
        (pod,) = plane.admin.list("v1", "Pod", namespace="hyperpod-ns-research", labelSelector=selector)
        assert pod["spec"]["nodeSelector"].get("kubernetes.io/hostname") == node[0], pod["spec"][
            "nodeSelector"
        ]
        waiting = wait_until(
            lambda: (
                (c := _condition(_workload(plane, plain), "QuotaReserved")) and c["status"] == "False" and c
            ),
            timeout=120,
            what="the plain job to wait",
        )
        assert 'Flavor "ml.p5.48xlarge" supports only TopologyAwareScheduling' in waiting["message"], waiting
        assert _nodes_of(plane, plain, 1) is None
    finally:
        for job in (plain, anywhere):
            plane.admin.delete(job, propagation="Foreground")
    wrong = _placed_job("far", pods=1, level="topology.k8s.aws/ultraserver-id")
    answer = alice.create(wrong, dry_run=True)
    assert not answer.ok
    assert "may name one of topology.k8s.aws/network-node-layer-1" in answer.message, answer.message


@pytest.mark.cluster
def test_the_topology_and_flavor_are_accepted_by_kueue(on_cluster: OnCluster) -> None:
    topology = on_cluster.admin.get(
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": TOPOLOGY}}
    )
    assert topology is not None
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == list(TOPOLOGY_LEVELS)
    # what `validate --baseline` says about turning topologyAware off, as the API server answers it
    flavor = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": "ml.p5.48xlarge"},
    }
    answer = on_cluster.admin.merge_patch(flavor, {"spec": {"topologyName": None}}, dry_run=True)
    assert not answer.ok
    assert "topologyName is immutable when topologyName is set" in answer.message, answer.message


def test_explain_names_the_domain_a_workload_waits_for() -> None:
    # the message as Kueue v0.19.2 words it (pkg/cache/scheduler/tas_flavor_snapshot.go notFitMessage, after the
    # flavor assigner's "couldn't assign flavors to pod set <ps>: ")
    message = (
        f'couldn\'t assign flavors to pod set main: topology "{TOPOLOGY}" allows to fit only 1 out of 4 pod(s). '
        'Total nodes: 16; excluded: resource "nvidia.com/gpu": 2'
    )
    pod = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}
    workload = {
        "metadata": {"name": "job-x", "namespace": "hyperpod-ns-research"},
        "spec": {
            "queueName": "hyperpod-ns-research-localqueue",
            "podSets": [
                {
                    "name": "main",
                    "count": 4,
                    "template": {"spec": pod},
                    "topologyRequest": {"required": NETWORK_LAYERS[1]},
                }
            ],
        },
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": message}]},
    }
    objects = Objects(namespace="hyperpod-ns-research", workload=workload)
    (main, *_) = diagnose(_topology_platform(), objects)
    assert main.cause is Cause.TOPOLOGY_DOMAIN
    assert main.summary == (
        f"Waiting for a topology domain: one network node ({NETWORK_LAYERS[1]}) with 32 free nvidia.com/gpu. Your "
        f"team's quota has room, but no single network node ({NETWORK_LAYERS[1]}) has room for its 4 pod(s) at "
        "once (only 1 of them fit)."
    )
    assert main.details[0] == f"asked: required topology {NETWORK_LAYERS[1]}"


# ---------------------------------------------------------------------------------------- hyp 3.12


_HYP = (
    "hyp create hyp-pytorch-job --job-name near --namespace hyperpod-ns-research "
    "--image 111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1 --instance-type ml.p5.48xlarge --node-count 2 "
    "--queue-name hyperpod-ns-research-localqueue --priority training-priority "
    "--volume name=fsx,type=pvc,mount_path=/fsx/research,claim_name=fsx "
    """--environment '{"HYPERPOD_TENANCY_CHECKPOINT_DIR": "/fsx/research/near", "HYPERPOD_TENANCY_CHECKPOINT_INTERVAL": "1h"}' """
)


def test_hyp_asks_for_a_level_that_exists_and_is_admitted_and_one_that_does_not_is_refused(
    reference: Synth,
) -> None:
    """``hyp`` 3.12 has ``--required-topology`` / ``--preferred-topology``: it writes Kueue's annotations on the job
    and its pod template; the platform admits the levels its Topology has and refuses the ones it does not."""
    lines = {
        "required": _HYP + f"--required-topology {LAYER_3}",
        "preferred": _HYP + f"--preferred-topology {NETWORK_LAYERS[1]}",
        # hyp accepts the UltraServer ID, a label only UltraServers carry: not a level of the platform's Topology
        "ultraserver": _HYP + "--required-topology topology.k8s.aws/ultraserver-id",
    }
    posted = dict(zip(lines, render(list(lines.values())), strict=True))
    required = posted["required"].body
    (replica,) = required["spec"]["replicaSpecs"]
    assert required["metadata"]["annotations"] == {"kueue.x-k8s.io/podset-required-topology": LAYER_3}
    assert replica["template"]["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": LAYER_3
    }
    platform = _topology_platform(backend="task-governance")
    assert _denied(platform, posted["required"].body, reference) == []
    assert _denied(platform, posted["preferred"].body, reference) == []
    refusals = _denied(platform, posted["ultraserver"].body, reference)
    assert any(f"may name one of {', '.join(TOPOLOGY_LEVELS)}" in m for m in refusals), refusals


def _denied(platform: Platform, obj: dict[str, Any], reference: Synth) -> list[str]:
    """What ``platform``'s admission policies refuse of a research member's CREATE of ``obj`` (standard CEL)."""
    group, resource = ta.group_resource(obj)
    return evaluate_policies(
        admission_policies(platform),
        obj=copy.deepcopy(obj),
        namespace=ta.namespace(reference, "research"),
        group=group,
        resource=resource,
        operation="CREATE",
        user_info=ta.MEMBER,
    ).denied


def _docs_job() -> dict[str, Any]:
    """The kubectl Job of docs/submitting-work.md, "Placing a job under one network node"."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "submitting-work.md").read_text(encoding="utf-8")
    section = page.split("## Placing a job under one network node", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    job = yaml.safe_load(block)
    assert isinstance(job, dict)
    return job


def test_the_documented_job_is_admitted_where_a_type_is_topology_aware_and_refused_elsewhere(
    reference: Synth,
) -> None:
    job = _docs_job()
    assert job["spec"]["template"]["metadata"]["annotations"] == {
        "kueue.x-k8s.io/podset-required-topology": LAYER_3
    }
    assert _denied(_topology_platform(), job, reference) == []
    assert any("may name nothing" in m for m in _denied(platform_from_dict(reference_data()), job, reference))


def test_validate_baseline_says_a_type_cannot_stop_being_topology_aware() -> None:
    placed, plain = _topology_platform(), platform_from_dict({**reference_data(), "fairnessBackend": "kueue"})
    (on,) = [
        i for i in replacement_warnings(plain, placed) if i.path == "cluster.instanceGroups[0].topologyAware"
    ]
    assert "places every job of that type itself" in on.message
    (off,) = [
        i for i in replacement_warnings(placed, plain) if i.path == "cluster.instanceGroups[0].topologyAware"
    ]
    assert "the deploy would fail applying the flavor" in off.message
    assert "keep `topologyAware: true` on ml.p5.48xlarge" in off.fix
    assert off.code == "HPT-UPGRADE-SCHEDULER"


def _waiting(message: str, *, pinned: str | None) -> Objects:
    pod: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}
    if pinned is not None:
        pod["nodeSelector"] = {"node.kubernetes.io/instance-type": pinned}
    pod_set = {
        "name": "main",
        "count": 2,
        "template": {"spec": pod},
        "topologyRequest": {"required": LAYER_3},
    }
    workload = {
        "metadata": {"name": "job-y", "namespace": "hyperpod-ns-research"},
        "spec": {"queueName": "hyperpod-ns-research-localqueue", "podSets": [pod_set]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "message": message}]},
    }
    return Objects(namespace="hyperpod-ns-research", workload=workload)


def test_explain_reads_the_message_kueue_leaves_when_other_flavors_were_tried() -> None:
    """With a second flavor in the queue, Kueue's message names only that flavor's refusal (seen on the local control
    plane): the topology-aware flavor's quota fit and its placement did not."""
    message = 'couldn\'t assign flavors to pod set main: Flavor "ml.g5.12xlarge" does not support TopologyAwareScheduling'
    platform = _topology_platform()
    for pinned in ("ml.p5.48xlarge", None):
        (main, *_) = diagnose(platform, _waiting(message, pinned=pinned))
        assert main.cause is Cause.TOPOLOGY_DOMAIN, main.render()
        assert "with 16 free nvidia.com/gpu" in main.summary
        assert "has room for its 2 pod(s) at once." in main.summary
    # a job pinned to the type that is not placed by topology: its request can never be met
    (main, *_) = diagnose(platform, _waiting(message, pinned="ml.g5.12xlarge"))
    assert main.cause is Cause.FLAVOR_MISSING
    assert "ml.g5.12xlarge is not placed by topology on this cluster" in main.summary


def test_the_explain_page_shows_what_explain_prints_for_a_topology_wait() -> None:
    message = 'couldn\'t assign flavors to pod set main: Flavor "ml.g5.12xlarge" does not support TopologyAwareScheduling'
    (main, *_) = diagnose(_topology_platform(), _waiting(message, pinned="ml.p5.48xlarge"))
    page = (Path(__file__).resolve().parents[1] / "docs" / "explain.md").read_text(encoding="utf-8")
    assert f"```text\n{main.render()}\n```" in page


def test_beside_other_types_kueue_needs_a_request_and_validation_says_so() -> None:
    codes = [w.code for w in check_warnings(_topology_platform())]
    assert "HPT-TOPOLOGY-REQUEST" in codes
    assert "HPT-TOPOLOGY-REQUEST" not in [
        w.code for w in check_warnings(_topology_platform(backend="task-governance"))
    ]


def test_explain_says_a_job_on_a_topology_aware_type_must_ask_for_a_topology() -> None:
    message = (
        'couldn\'t assign flavors to pod set main: Flavor "ml.p5.48xlarge" supports only TopologyAwareScheduling, '
        "flavor ml.g5.12xlarge doesn't match node affinity"
    )
    objects = _waiting(message, pinned="ml.p5.48xlarge")
    assert objects.workload is not None
    del objects.workload["spec"]["podSets"][0]["topologyRequest"]
    (main, *_) = diagnose(_topology_platform(), objects)
    assert main.cause is Cause.FLAVOR_MISSING
    assert "asks for no topology" in main.summary
    assert 'podset-unconstrained-topology: "true"' in main.fix[0]
