"""A team member's job on the real control plane, through everything the platform renders (Kueue backend).

The reference platform is applied as a deploy applies it (``tests/test_cluster_apply.py``), with the real POSIX
identity webhook on loopback and KWOK nodes of the platform's instance groups (GPUs, EFA, CPU and memory as AWS
publishes them). A research member, as EKS authenticates an Identity Center user (impersonated), submits:

* a Job without Kueue's labels: refused by the platform's admission. Policies take effect asynchronously after
  they are applied, so the test polls until this known refusal is seen;
* an honest Job (queue, priority, checkpoint declaration): stamped with the member's POSIX identity by the
  webhook, admitted by Kueue on the team's ClusterQueue, unsuspended, and its pod bound by the scheduler to a
  p5 node and Running.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import tenant_admission as ta
from cluster_apply import apply_all, operator_crds, posix_webhook, remove_all, synthesized_objects
from control_plane import ControlPlane, kwok_node
from instance_specs import spec as instance_spec
from kube_client import Answer, KubeClient, wait_until
from synth import Synth
from webhook_server import sso_user

from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster


def _nodes(synth: Synth) -> list[dict[str, Any]]:
    nodes = []
    for group in synth.platform.cluster.instance_groups:
        hardware = instance_spec(group.instance_type)
        cpus = hardware.vcpus * group.threads_per_core // 2
        capacity = {
            "cpu": str(cpus),
            "memory": f"{hardware.memory_gib}Gi",
            "pods": "110",
            hardware.accelerator_resource: str(hardware.accelerators),
        }
        if hardware.efa_interfaces:
            capacity["vpc.amazonaws.com/efa"] = str(hardware.efa_interfaces)
        for i in range(group.count):
            labels = {"node.kubernetes.io/instance-type": group.instance_type}
            nodes.append(kwok_node(f"{group.name}-{i}", capacity=capacity, labels=labels))
    return nodes


@pytest.fixture(scope="module")
def platform_on_cluster(
    control_plane: ControlPlane, kueue_reference: Synth, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    """The Kueue-backend reference platform applied, its webhook serving, its nodes Ready."""
    control_plane.install_crds(operator_crds(control_plane.components.operator_crds))
    applied = synthesized_objects("reference-kueue", kueue_reference)
    nodes = _nodes(kueue_reference)
    with posix_webhook(applied, kueue_reference, tmp_path_factory.mktemp("webhook")) as objects:
        outcome = apply_all(control_plane.admin, applied, objects)
        assert outcome.refused == [], outcome.refused
        for node in nodes:
            assert control_plane.admin.create(node).ok
        try:
            yield control_plane
        finally:
            for node in nodes:
                control_plane.admin.delete(node)
            assert remove_all(control_plane.admin, applied, objects) == []


def _member(plane: ControlPlane, person: str, team: str) -> KubeClient:
    user = sso_user(person, team)
    return plane.admin.as_user(user["username"], user["groups"], user["extra"])


def test_a_job_without_kueue_labels_is_refused_by_the_platform(platform_on_cluster: ControlPlane) -> None:
    alice = _member(platform_on_cluster, "alice", "research")
    unlabelled = ta.job(labels={}, annotations=ta.CHECKPOINT, name="unlabelled")

    def refused() -> Answer | None:
        answer = alice.create(unlabelled)
        return None if answer.ok else answer

    answer = wait_until(
        refused, timeout=60, what="the admission policies to refuse a Job without Kueue's labels"
    )
    assert answer.status in (400, 403, 422), answer
    assert "ValidatingAdmissionPolicy 'hyperpod-tenancy-workload-labels'" in answer.message, answer.message
    assert "label kueue.x-k8s.io/priority-class is required" in answer.message, answer.message


def test_an_honest_job_is_stamped_admitted_by_kueue_and_runs_on_a_p5_node(
    platform_on_cluster: ControlPlane,
) -> None:
    plane = platform_on_cluster
    alice = _member(plane, "alice", "research")
    job = ta.job(annotations=ta.CHECKPOINT, name="honest")
    job["spec"]["template"]["spec"] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": ta.IMAGE,
                "command": ["torchrun", "train.py"],
                "resources": {"requests": dict(ta.GPU), "limits": dict(ta.GPU)},
            }
        ],
    }
    answer = alice.create(job)
    assert answer.ok, answer.message
    stored = answer.body
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
