"""Class 1, trusting what the requester writes: owner references exempt nothing; who sends the request does.

Attacks a team member who has read the policies would try, through the real CEL of the synthesized platform
(both fairness backends): spoofed controller owner references on CREATE (to skip the queue and priority
rules, the checkpoint rule, or to make Kueue treat a large Job as a small admitted Job's child), and changed
owner references on UPDATE. The honest flows (a labelled Job, an MPIJob and the launcher Job its operator
creates, a PyTorchJob, a HyperPodPyTorchJob, a RayCluster, an inference Deployment and its ReplicaSet and
Pods, Kueue suspending a Job) must still pass. Exemptions are ``request.userInfo.username`` of the
controllers in :data:`hyperpod_tenancy.k8s.workloads.CONTROLLERS` (issue 8, class 1).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import tenant_admission as ta
from synth import Synth

from hyperpod_tenancy.k8s import admission, labels


def _owner(kind: str, api_version: str, name: str = "small") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": "spoofed-uid", "controller": True}


SPOOFED_OWNERS = [
    _owner("MPIJob", "kubeflow.org/v2beta1"),
    _owner("Job", "batch/v1"),
    _owner("PyTorchJob", "kubeflow.org/v1"),
    _owner("RayCluster", "ray.io/v1"),
]


@pytest.mark.parametrize("owner", SPOOFED_OWNERS, ids=lambda o: o["kind"])
def test_a_spoofed_controller_owner_does_not_let_an_unlabelled_job_skip_its_queue(
    synth: Synth, owner: dict[str, Any]
) -> None:
    obj = ta.job(labels={}, annotations=ta.CHECKPOINT)
    obj["metadata"]["ownerReferences"] = [owner]
    denied = ta.decide(synth, obj).denied
    assert any("ownerReferences must not name a controller" in m for m in denied), denied
    assert any("kueue.x-k8s.io/queue-name" in m for m in denied)
    assert any("kueue.x-k8s.io/priority-class is required" in m for m in denied)


def test_pointing_a_large_job_at_a_small_admitted_job_is_denied(synth: Synth) -> None:
    # Kueue treats a Job whose controller is a Job it admitted as that Job's child (no Workload of its own).
    small = ta.job(annotations=ta.CHECKPOINT, name="small")
    assert ta.decide(synth, small).allowed
    large = ta.job(
        annotations=ta.CHECKPOINT, name="large", spec=ta.pod_spec(resources={"nvidia.com/gpu": "64"})
    )
    large["metadata"]["ownerReferences"] = [_owner("Job", "batch/v1", "small")]
    (message,) = ta.decide(synth, large).denied
    assert "ownerReferences must not name a controller" in message


def test_a_spoofed_owner_does_not_skip_the_checkpoint_rule(synth: Synth) -> None:
    obj = ta.job(labels=ta.kueue_labels(priority="experimentation-priority"))
    obj["metadata"]["ownerReferences"] = [_owner("MPIJob", "kubeflow.org/v2beta1")]
    denied = ta.decide(synth, obj).denied
    assert any(labels.CHECKPOINT_DIR_ENV in m for m in denied), denied
    assert any(labels.CHECKPOINT_INTERVAL_ENV in m for m in denied)


def test_a_bare_gpu_pod_with_a_spoofed_replicaset_owner_still_needs_a_queue(synth: Synth) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "namespace": "hyperpod-ns-research",
            "ownerReferences": [_owner("ReplicaSet", "apps/v1")],
        },
        "spec": ta.pod_spec(resources=ta.GPU),
    }
    denied = ta.decide(synth, pod).denied
    assert any("queue-name" in m for m in denied), denied


def test_relabelling_a_controller_created_job_to_an_unentitled_class_is_denied(synth: Synth) -> None:
    launcher = ta.mpi_launcher(ta.mpijob())
    assert ta.decide(synth, launcher, user=ta.MPI_OPERATOR).allowed
    relabelled = copy.deepcopy(launcher)
    relabelled["metadata"]["labels"] = ta.kueue_labels(priority="inference-priority")
    denied = ta.decide(synth, relabelled, operation="UPDATE", old=launcher).denied
    assert any("inference-priority is not allowed in namespace hyperpod-ns-research" in m for m in denied)


@pytest.mark.parametrize("change", ["add", "repoint", "remove"])
def test_a_team_member_cannot_change_controller_owner_references_on_update(synth: Synth, change: str) -> None:
    old = ta.job(annotations=ta.CHECKPOINT)
    new = copy.deepcopy(old)
    if change == "add":
        new["metadata"]["ownerReferences"] = [_owner("Job", "batch/v1")]
    else:  # an object a controller created, whose reference the team member edits
        old["metadata"]["ownerReferences"] = [_owner("MPIJob", "kubeflow.org/v2beta1", "mpi")]
        new["metadata"]["ownerReferences"] = (
            [_owner("MPIJob", "kubeflow.org/v2beta1", "other")] if change == "repoint" else []
        )
    denied = ta.decide(synth, new, operation="UPDATE", old=old).denied
    assert any("controller owner references" in m and "cannot be added, changed" in m for m in denied), denied


def test_an_unchanged_owner_reference_on_update_is_not_itself_denied(synth: Synth) -> None:
    old = ta.job(annotations=ta.CHECKPOINT)
    old["metadata"]["ownerReferences"] = [_owner("MPIJob", "kubeflow.org/v2beta1", "mpi")]
    new = copy.deepcopy(old)
    new["metadata"]["annotations"]["note"] = "relabel"
    assert ta.decide(synth, new, operation="UPDATE", old=old).allowed


def test_a_non_controller_owner_reference_is_allowed(synth: Synth) -> None:
    # only controller references make Kueue (jobframework) and the GC treat an object as a child
    obj = ta.job(annotations=ta.CHECKPOINT)
    obj["metadata"]["ownerReferences"] = [{**_owner("ConfigMap", "v1"), "controller": False}]
    assert ta.decide(synth, obj).allowed


def test_a_lookalike_username_is_not_a_controller(synth: Synth) -> None:
    obj = ta.job(labels={})
    for username in (
        "system:serviceaccount:hyperpod-ns-research:kueue-controller-manager",  # same SA name, team namespace
        "kueue-controller-manager",
        "system:serviceaccount:kueue-system:kueue-controller-manager-x",
    ):
        assert not ta.decide(synth, obj, user={"username": username}).allowed, username


# ------------------------------------------------------------------------------------------- honest flows


def test_honest_labelled_job_passes(synth: Synth) -> None:
    decision = ta.decide(synth, ta.job(annotations=ta.CHECKPOINT))
    assert decision.allowed, decision.denied
    assert admission.WORKLOAD_POLICY in decision.policies()


def test_honest_mpijob_and_the_launcher_its_operator_creates_pass(synth: Synth) -> None:
    mpi = ta.mpijob(annotations=ta.CHECKPOINT)
    assert ta.decide(synth, mpi).allowed
    launcher = ta.mpi_launcher(mpi)
    decision = ta.decide(synth, launcher, user=ta.MPI_OPERATOR)
    assert decision.allowed, decision.denied
    pod = ta.child("Pod", launcher, spec=ta.pod_spec())
    assert ta.decide(synth, pod, user=ta.JOB_CONTROLLER).allowed


def test_honest_pytorchjob_and_its_pods_pass(synth: Synth) -> None:
    pt = ta.pytorchjob(annotations=ta.CHECKPOINT)
    assert ta.decide(synth, pt).allowed
    pod = ta.child("Pod", pt, spec=ta.pod_spec(resources=ta.GPU))
    assert ta.decide(synth, pod, user=ta.KUBEFLOW_OPERATOR).allowed


def test_honest_hyperpod_pytorch_job_and_its_pods_pass(synth: Synth) -> None:
    hp = ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT)
    decision = ta.decide(synth, hp)
    if ta.on_kueue(synth):
        ta.assert_refused_on_kueue(decision)
    else:
        assert decision.allowed, decision.denied
    pod = ta.child("Pod", hp, spec=hp["spec"]["replicaSpecs"][0]["template"]["spec"])
    assert ta.decide(synth, pod, user=ta.HYPERPOD_OPERATOR).allowed


def test_honest_raycluster_and_its_pods_pass(synth: Synth) -> None:
    ray = ta.raycluster(annotations=ta.CHECKPOINT)
    assert ta.decide(synth, ray).allowed
    pod = ta.child("Pod", ray, spec=ta.pod_spec(resources=ta.GPU))
    assert ta.decide(synth, pod, user=ta.KUBERAY_OPERATOR).allowed


def test_honest_inference_deployment_replicaset_and_pods_pass(synth: Synth) -> None:
    dep = ta.deployment()
    decision = ta.decide(synth, dep, team="inference")
    assert decision.allowed, decision.denied
    rs = ta.child("ReplicaSet", dep, spec=copy.deepcopy(dep["spec"]), api_version="apps/v1")
    assert ta.decide(synth, rs, team="inference", user=ta.DEPLOYMENT_CONTROLLER).allowed
    pod = ta.child("Pod", rs, spec=dep["spec"]["template"]["spec"])
    assert ta.decide(synth, pod, team="inference", user=ta.REPLICASET_CONTROLLER).allowed


def test_honest_kueue_suspends_and_places_a_job(synth: Synth) -> None:
    old = ta.job(annotations=ta.CHECKPOINT)
    new = copy.deepcopy(old)
    new["spec"]["suspend"] = False
    new["spec"]["template"]["spec"]["nodeSelector"] = {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    assert ta.decide(synth, new, operation="UPDATE", old=old, user=ta.KUEUE).allowed
    # the same change by a team member is also fine on a labelled Job: the labels are still checked
    assert ta.decide(synth, new, operation="UPDATE", old=old).allowed
