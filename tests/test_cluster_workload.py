"""A team member's job on the real control plane, through everything the platform renders (Kueue backend).

The reference platform is applied as a deploy applies it (the ``kueue_on_cluster`` fixture,
``tests/support/cluster_platform.py``), with the real POSIX identity webhook on loopback and KWOK nodes of the
platform's instance groups (GPUs, EFA, CPU and memory as AWS publishes them). A research member, as EKS authenticates an Identity Center user (impersonated), submits:

* a Job without Kueue's labels: refused by the platform's admission. Policies take effect asynchronously after
  they are applied, so the test polls until this known refusal is seen;
* an honest Job (queue, priority, checkpoint declaration): stamped with the member's POSIX identity by the
  webhook, admitted by Kueue on the team's ClusterQueue, unsuspended, and its pod bound by the scheduler to a
  p5 node and Running.
"""

from __future__ import annotations

from typing import Any

import pytest
import tenant_admission as ta
from cluster_platform import OnCluster
from kube_client import wait_until

from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster


def test_a_job_without_kueue_labels_is_refused_by_the_platform(kueue_on_cluster: OnCluster) -> None:
    kueue_on_cluster.await_admission()
    alice = kueue_on_cluster.member("alice", "research")
    answer = alice.create(ta.job(labels={}, annotations=ta.CHECKPOINT, name="unlabelled"))
    assert answer.status in (400, 403, 422), answer
    assert "ValidatingAdmissionPolicy 'hyperpod-tenancy-workload-labels'" in answer.message, answer.message
    assert "label kueue.x-k8s.io/priority-class is required" in answer.message, answer.message


def test_an_honest_job_is_stamped_admitted_by_kueue_and_runs_on_a_p5_node(
    kueue_on_cluster: OnCluster,
) -> None:
    plane = kueue_on_cluster
    plane.await_admission()
    alice = plane.member("alice", "research")
    job = ta.runnable_job("honest", gpus=8)
    answer = alice.create(job)
    assert answer.ok, answer.message
    try:
        _stamped_admitted_and_running(plane, answer.body)
        # `kubectl annotate` / `kubectl label` of the running Job, by its owner and by a teammate: only metadata
        # changes, the identity is kept, and the Job's template (immutable once admitted) is left as it is
        for person in ("alice", "bob"):
            member = plane.member(person, "research")
            note = {
                "metadata": {"annotations": {f"note-{person}": "x"}, "labels": {f"seen-by-{person}": "yes"}}
            }
            patched = member.merge_patch(job, note)
            assert patched.ok, f"{person}: {patched.message}"
            template = patched.body["spec"]["template"]
            assert (
                template["spec"]["securityContext"]
                == answer.body["spec"]["template"]["spec"]["securityContext"]
            )
    finally:
        plane.admin.delete(job, propagation="Foreground")


def _stamped_admitted_and_running(plane: OnCluster, stored: dict[str, Any]) -> None:
    context = stored["spec"]["template"]["spec"]["securityContext"]
    assert context["runAsGroup"] == ta.team_gid("research") and context["runAsUser"] >= 200_000, context
    namespace = names.namespace("research")
    admin = plane.admin

    def admitted_workload() -> dict[str, Any] | None:
        for workload in admin.list("kueue.x-k8s.io/v1beta2", "Workload", namespace=namespace):
            if workload["status"].get("admission") if "status" in workload else None:
                return dict(workload)
        return None

    workload = wait_until(admitted_workload, timeout=60, what="Kueue to admit the Job's Workload")
    assert workload["status"]["admission"]["clusterQueue"] == names.cluster_queue("research")

    def running_pod() -> dict[str, Any] | None:
        for pod in admin.list(
            "v1", "Pod", namespace=namespace, labelSelector="batch.kubernetes.io/job-name=honest"
        ):
            if pod.get("spec", {}).get("nodeName") and pod["status"].get("phase") in ("Running", "Succeeded"):
                return dict(pod)
        return None

    pod = wait_until(running_pod, timeout=90, what="the Job's pod to be bound and running")
    assert pod["spec"]["nodeName"].startswith("p5-training-")
    assert pod["spec"]["securityContext"]["runAsUser"] == context["runAsUser"]
