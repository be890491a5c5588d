"""Class 2, nothing checked the pod template: what actually runs is checked, for every requester.

A Job with entitled labels whose pods set ``priorityClassName: system-node-critical`` preempts other teams'
pods through kube-scheduler (any namespace may use the built-in classes unless a quota stops it:
https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/); a container with
``NVIDIA_VISIBLE_DEVICES=all`` sees GPUs Kueue never counted (NVIDIA container toolkit:
``accept-nvidia-visible-devices-envvar-when-unprivileged``, Bottlerocket settings
``nvidia-container-runtime.visible-devices-envvar-when-unprivileged``). The pod-spec policy has no controller
exemption, so pods a controller creates from such a template are denied too. Template paths per kind come
from :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS` (each cited there).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import tenant_admission as ta
from synth import Synth

from hyperpod_tenancy.k8s import admission, workloads


def _pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "hyperpod-ns-research", "labels": ta.kueue_labels()},
        "spec": spec,
    }


def _objects() -> list[tuple[dict[str, Any], str]]:
    """One honest object per kind of the table, with the path to its first PodSpec, and its team."""
    statefulset = copy.deepcopy(ta.deployment("research"))
    statefulset["kind"] = "StatefulSet"
    statefulset["metadata"]["labels"] = ta.kueue_labels()
    replicaset = copy.deepcopy(statefulset)
    replicaset["kind"] = "ReplicaSet"
    rayjob = {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": "rj", "namespace": "hyperpod-ns-research", "labels": ta.kueue_labels()},
        "spec": {"entrypoint": "python train.py", "rayClusterSpec": copy.deepcopy(ta.raycluster()["spec"])},
    }
    kubeflow = {}
    for kind, field, version in (
        ("TFJob", "tfReplicaSpecs", "v1"),
        ("XGBoostJob", "xgbReplicaSpecs", "v1"),
        ("PaddleJob", "paddleReplicaSpecs", "v1"),
    ):
        kubeflow[kind] = {
            "apiVersion": f"kubeflow.org/{version}",
            "kind": kind,
            "metadata": {"name": "kf", "namespace": "hyperpod-ns-research", "labels": ta.kueue_labels()},
            "spec": {field: {"Worker": {"replicas": 1, "template": {"spec": ta.pod_spec(resources=ta.GPU)}}}},
        }
    return [
        (ta.job(annotations=ta.CHECKPOINT), "research"),
        (ta.pytorchjob(annotations=ta.CHECKPOINT), "research"),
        (ta.mpijob(annotations=ta.CHECKPOINT), "research"),
        (ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT), "research"),
        (ta.raycluster(annotations=ta.CHECKPOINT), "research"),
        (rayjob, "research"),
        (ta.deployment(), "inference"),
        (statefulset, "research"),
        (replicaset, "research"),
        (_pod(ta.pod_spec(resources=ta.GPU)), "research"),
        *((o, "research") for o in kubeflow.values()),
    ]


def _pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every PodSpec of ``obj`` at the paths of its kind in the workload table."""
    group, resource = ta.group_resource(obj)
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if (k.group, k.resource) == (group, resource)]
    found: list[dict[str, Any]] = []
    for path in kind.pod_specs:
        values: list[Any] = [obj]
        for segment in path.split("."):
            name = segment.rstrip("[]{}")
            values = [v[name] for v in values if name in v]
            if segment.endswith("[]"):
                values = [i for v in values for i in v]
            elif segment.endswith("{}"):
                values = [i for v in values for i in v.values()]
        found += values
    return found


def test_every_kind_of_the_table_is_covered_here() -> None:
    covered = {ta.group_resource(o) for o, _ in _objects()}
    assert covered == {(k.group, k.resource) for k in workloads.served_kinds() if k.pod_specs}
    # kinds without a PodSpec are the inference operator's: it renders their pods as a Deployment (above)
    assert {k.installed_by for k in workloads.served_kinds() if not k.pod_specs} == {
        workloads.Installer.HYPERPOD_INFERENCE_ADDON
    }


@pytest.mark.parametrize("index", range(13))
def test_honest_objects_of_every_kind_pass_and_every_pod_spec_is_reached(synth: Synth, index: int) -> None:
    obj, team = _objects()[index]
    user = ta.MEMBER if obj["kind"] not in ("ReplicaSet", "Pod", "StatefulSet") else ta.REPLICASET_CONTROLLER
    decision = ta.decide(synth, obj, team=team, user=user)
    assert admission.POD_SPEC_POLICY in decision.policies()
    pod_spec_failures = [
        m for o in decision.outcomes if o.policy == admission.POD_SPEC_POLICY for m in o.failures
    ]
    assert not pod_spec_failures, pod_spec_failures
    assert _pod_specs(obj), obj["kind"]


@pytest.mark.parametrize("index", range(13))
def test_a_pod_priority_class_in_any_template_is_denied(synth: Synth, index: int) -> None:
    attack = ("system-node-critical", "system-cluster-critical", "my-high-class")[index % 3]
    obj, team = copy.deepcopy(_objects()[index])
    specs = _pod_specs(obj)
    specs[-1]["priorityClassName"] = attack  # the last PodSpec: a worker group, not just the first template
    for user in (ta.MEMBER, ta.KUEUE):  # no exemption for controllers: the spec is what runs
        denied = ta.decide(synth, obj, team=team, user=user).denied
        assert any(m.startswith(f"{obj['kind']}: priorityClassName must not be set") for m in denied), denied


_WHERE = ("containers", "initContainers", "ephemeralContainers")
#: every (variable, container list) pair, spread over the kinds (13 kinds x 1 pair covers all 9 pairs)
_ENV_CASES = [(i, admission.GPU_VISIBILITY_ENV[i % 3], _WHERE[(i // 3) % 3]) for i in range(13)]


@pytest.mark.parametrize(("index", "variable", "where"), _ENV_CASES)
def test_a_device_visibility_variable_in_any_container_is_denied(
    synth: Synth, index: int, variable: str, where: str
) -> None:
    obj, team = copy.deepcopy(_objects()[index])
    spec = _pod_specs(obj)[-1]
    spec.setdefault(where, []).append(
        {"name": "sidecar", "image": ta.IMAGE, "env": [{"name": variable, "value": "all"}]}
    )
    denied = ta.decide(synth, obj, team=team, user=ta.KUBERAY_OPERATOR).denied
    assert any(m.startswith(f"{obj['kind']}: no container") and variable in m for m in denied), denied


def test_the_hyp_cli_environment_flag_cannot_expose_every_gpu(synth: Synth) -> None:
    # `hyp create hyp-pytorch-job --environment '{"NVIDIA_VISIBLE_DEVICES": "all"}'` renders container env
    obj = ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT, environment={"NVIDIA_VISIBLE_DEVICES": "all"})
    denied = ta.decide(synth, obj).denied
    assert [m for m in denied if not m.startswith(ta.KUEUE_REFUSAL)] == [
        m for m in denied if "NVIDIA_VISIBLE_DEVICES" in m
    ]
    assert any("NVIDIA_VISIBLE_DEVICES" in m for m in denied)
    honest = ta.hyperpod_pytorch_job(
        annotations=ta.CHECKPOINT, environment={"CUDA_VISIBLE_DEVICES": "0,1", "NCCL_DEBUG": "INFO"}
    )
    if ta.on_kueue(synth):
        ta.assert_refused_on_kueue(ta.decide(synth, honest))
    else:
        assert ta.decide(synth, honest).allowed


def test_pods_a_controller_creates_from_a_bad_template_are_denied(synth: Synth) -> None:
    pod = ta.child("Pod", ta.job(), spec={**ta.pod_spec(), "priorityClassName": "system-node-critical"})
    denied = ta.decide(synth, pod, user=ta.JOB_CONTROLLER).denied
    assert any("priorityClassName must not be set" in m for m in denied)


def test_an_ephemeral_container_added_later_is_checked(synth: Synth) -> None:
    old = _pod(ta.pod_spec())
    new = copy.deepcopy(old)
    new["spec"]["ephemeralContainers"] = [
        {"name": "debug", "image": ta.IMAGE, "env": [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]}
    ]
    decision = ta.decide(synth, new, operation="UPDATE", old=old, resource="pods/ephemeralcontainers")
    assert any("NVIDIA_VISIBLE_DEVICES" in m for m in decision.denied), decision.denied


@pytest.mark.parametrize("resource", ["nvidia.com/gpu", "vpc.amazonaws.com/efa", "aws.amazon.com/neuron"])
def test_accelerator_requests_always_go_through_a_queue(synth: Synth, resource: str) -> None:
    # the queue rule applies to every kind a team member writes, whatever owner references it claims
    pod = _pod(ta.pod_spec(resources={resource: "1"}))
    del pod["metadata"]["labels"]
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "1", "controller": True}
    ]
    assert any("queue-name" in m for m in ta.decide(synth, pod).denied)
    sts, _ = _objects()[7]
    sts = copy.deepcopy(sts)
    sts["metadata"]["labels"] = {}
    sts["metadata"]["ownerReferences"] = pod["metadata"]["ownerReferences"]
    assert any("queue-name" in m for m in ta.decide(synth, sts).denied)
