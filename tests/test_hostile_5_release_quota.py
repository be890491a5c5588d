"""Class 5, releasing quota while keeping the GPUs: team finalizers and orphaning deletes are denied.

A team member holds a deleted Job with its own finalizer, or deletes it with ``--cascade=orphan``: Kueue
finishes the Workload and frees the quota while the pods keep running. A ValidatingAdmissionPolicy sees a
DELETE's ``DeleteOptions`` as ``request.options`` and the object as ``oldObject`` (Kubernetes
``staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/filter.go`` ``CreateAdmissionRequest`` sets
``Options`` from ``attr.GetOperationOptions()``). A batch/v1 Job deleted without a propagation policy orphans
its pods (``pkg/registry/batch/job/strategy.go`` ``DefaultGarbageCollectionPolicy``: OrphanDependents for
batch/v1 "for backwards compatibility"). The ``orphan`` finalizer makes the garbage collector orphan the
dependents (https://kubernetes.io/docs/concepts/architecture/garbage-collection/). The ResourceQuota backstop
keeps orphaned pods counted whatever admission misses.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import tenant_admission as ta
from synth import Synth

from hyperpod_tenancy.k8s import admission

WORKLOADS = [
    ta.job(annotations=ta.CHECKPOINT),
    ta.pytorchjob(annotations=ta.CHECKPOINT),
    ta.hyperpod_pytorch_job(annotations=ta.CHECKPOINT),
    ta.raycluster(annotations=ta.CHECKPOINT),
]
IDS = [w["kind"] for w in WORKLOADS]


@pytest.mark.parametrize("obj", WORKLOADS, ids=IDS)
@pytest.mark.parametrize("finalizer", ["example.com/keep", "orphan", "foregroundDeletion"])
def test_a_team_finalizer_on_create_is_denied(synth: Synth, obj: dict[str, Any], finalizer: str) -> None:
    obj = copy.deepcopy(obj)
    obj["metadata"]["finalizers"] = [finalizer]
    denied = ta.decide(synth, obj).denied
    assert any("metadata.finalizers must be empty" in m for m in denied), denied


@pytest.mark.parametrize("obj", WORKLOADS, ids=IDS)
def test_adding_a_finalizer_on_update_is_denied_removing_is_allowed(
    synth: Synth, obj: dict[str, Any]
) -> None:
    old = copy.deepcopy(obj)
    new = copy.deepcopy(obj)
    new["metadata"]["finalizers"] = ["orphan"]
    denied = ta.decide(synth, new, operation="UPDATE", old=old).denied
    assert any("cannot add finalizers" in m for m in denied), denied
    # a finalizer a controller set (Kueue, an operator) can stay, and a team member may remove it
    old["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    kept = copy.deepcopy(old)
    kept["metadata"]["labels"]["note"] = "x"
    assert ta.decide(synth, kept, operation="UPDATE", old=old).allowed
    removed = copy.deepcopy(old)
    removed["metadata"]["finalizers"] = []
    assert ta.decide(synth, removed, operation="UPDATE", old=old).allowed


@pytest.mark.parametrize("obj", WORKLOADS, ids=IDS)
@pytest.mark.parametrize(
    "options",
    [{"propagationPolicy": "Orphan"}, {"orphanDependents": True}],
    ids=["cascade-orphan", "orphanDependents"],
)
def test_an_orphaning_delete_is_denied(synth: Synth, obj: dict[str, Any], options: dict[str, Any]) -> None:
    decision = ta.decide(synth, obj, operation="DELETE", options=options)
    assert admission.DELETE_POLICY in decision.policies()
    assert any("not allowed in tenant namespaces" in m for m in decision.denied), decision.denied


def test_a_job_deleted_without_a_propagation_policy_is_denied(synth: Synth) -> None:
    # the Python client's delete_namespaced_job(name, ns) sends no body: batch/v1 then orphans the pods
    (message,) = ta.decide(synth, ta.job(), operation="DELETE").denied
    assert "propagationPolicy: Background or Foreground" in message


@pytest.mark.parametrize("obj", WORKLOADS, ids=IDS)
@pytest.mark.parametrize("policy", ["Background", "Foreground"])
def test_honest_deletes_pass(synth: Synth, obj: dict[str, Any], policy: str) -> None:
    # kubectl delete sends propagationPolicy Background (its --cascade default); hyp delete sends none for
    # the custom resources, whose default is background deletion
    assert ta.decide(synth, obj, operation="DELETE", options={"propagationPolicy": policy}).allowed
    if obj["kind"] != "Job":
        assert ta.decide(synth, obj, operation="DELETE").allowed


def test_controllers_may_delete_and_finalize(synth: Synth) -> None:
    obj = ta.job()
    gc = ta.CONTROLLER["garbage collector"]
    assert ta.decide(synth, obj, operation="DELETE", options={"propagationPolicy": "Orphan"}, user=gc).allowed
    old = ta.job(annotations=ta.CHECKPOINT)
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    assert ta.decide(synth, new, operation="UPDATE", old=old, user=ta.KUEUE).allowed


def test_an_object_being_deleted_can_always_drop_its_finalizers(synth: Synth) -> None:
    old = ta.job(labels={})
    old["metadata"]["finalizers"] = ["example.com/keep"]
    old["metadata"]["deletionTimestamp"] = "2026-12-01T00:00:00Z"
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    assert ta.decide(synth, new, operation="UPDATE", old=old).allowed
