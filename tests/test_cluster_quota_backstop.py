"""The accelerator and EFA backstop on the real control plane: quota admission holds what gets past the rest.

The Kueue-backend reference platform is applied (``kueue_on_cluster``). What reaches quota admission in a team
namespace, found on the real server:

* a team member's bare Pod does not: the team Role grants no ``create pods`` (RBAC refuses it first);
* a Pod owned by a Job that does not exist does not: Kueue's pod webhook refuses it;
* a bare Pod sent by a controller identity (the Job controller's, impersonated) with the team's Kueue labels
  and a stamped pod spec passes the platform's policies and the webhook (controllers are exempt by username),
  and meets the ResourceQuotas the platform renders per team namespace. That is the pod this module sends;
* a pod at a system priority class is refused by the pod-spec policy before the ``no-system-priority`` quota.

Over the ceiling the API server refuses with its own ``exceeded quota`` message; within it the pod is admitted.
Usage adds up over real pods (the quota admission charges each one; kube-controller-manager recomputes usage
once they are deleted, which the module waits for before it ends). The ceilings are read from the rendered
ResourceQuotas; ``test_cluster_quota`` checks the model of these quotas case by case, on both backends.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
import tenant_admission as ta
from cluster_platform import OnCluster
from kube_client import Answer, KubeClient, wait_until
from kubernetes.utils.quantity import parse_quantity

from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster

GPU, EFA = "nvidia.com/gpu", "vpc.amazonaws.com/efa"
PREFIX = "backstop-"


def hard(plane: OnCluster, team: str, quota: str, resource: str) -> int:
    """A ceiling as rendered (the applied objects), in whole units."""
    (found,) = [
        o
        for o in plane.objects
        if o["kind"] == "ResourceQuota"
        and o["metadata"] == {**o["metadata"], "name": quota, "namespace": names.namespace(team)}
    ]
    return int(parse_quantity(found["spec"]["hard"][f"requests.{resource}"]))


def used(plane: OnCluster, team: str, quota: str, resource: str) -> Decimal:
    path = f"/api/v1/namespaces/{names.namespace(team)}/resourcequotas/{quota}"
    status = plane.admin.call("GET", path).get("status", {})
    value: Decimal = parse_quantity(status.get("used", {}).get(f"requests.{resource}", "0"))
    return value


def settled(plane: OnCluster, team: str, quota: str, resource: str) -> None:
    """Wait until the quota's ``used`` is what the namespace's pods request: pods another module deleted are gone
    and kube-controller-manager has counted again (a headroom read before that is too small)."""
    ns = names.namespace(team)

    def requested() -> Decimal | None:
        pods = plane.admin.list("v1", "Pod", namespace=ns)
        if any(p["metadata"].get("deletionTimestamp") for p in pods):
            return None
        return sum(
            (
                parse_quantity(c.get("resources", {}).get("requests", {}).get(resource, "0"))
                for p in pods
                if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
                for c in p["spec"]["containers"]
            ),
            Decimal(0),
        )

    wait_until(
        lambda: (want := requested()) is not None and used(plane, team, quota, resource) == want,
        timeout=90,
        what=f"{quota} in {ns} to count only the pods that are there",
    )


def controller_pod(team: str, name: str, resources: dict[str, str], **spec: Any) -> dict[str, Any]:
    """A bare Pod as a controller sends it: the team's Kueue labels, a stamped spec, no owner."""
    pod_spec = {**ta.pod_spec(resources=resources, team=team), **spec}
    meta = {"name": PREFIX + name, "namespace": names.namespace(team), "labels": ta.kueue_labels(team)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod_spec}


def exceeded(answer: Answer, quota: str, resource: str) -> str:
    """The API server's quota refusal naming ``quota`` and ``resource``."""
    assert answer.status == 403 and answer.reason == "Forbidden", answer
    assert f"exceeded quota: {quota}, requested: requests.{resource}=" in answer.message, answer.message
    return answer.message


@pytest.fixture(scope="module")
def plane(kueue_on_cluster: OnCluster) -> Iterator[OnCluster]:
    """The platform; any pod of this module left behind is deleted at the end."""
    kueue_on_cluster.await_admission()
    yield kueue_on_cluster
    admin = kueue_on_cluster.admin
    for team in ("research", "inference"):
        ns = names.namespace(team)
        for pod in admin.list("v1", "Pod", namespace=ns):
            if pod["metadata"]["name"].startswith(PREFIX):
                admin.request(
                    "DELETE",
                    f"/api/v1/namespaces/{ns}/pods/{pod['metadata']['name']}",
                    params={"gracePeriodSeconds": "0"},
                )


@pytest.fixture(scope="module")
def job_controller(plane: OnCluster) -> KubeClient:
    return plane.controller("Job controller")


def test_what_reaches_quota_admission(plane: OnCluster, job_controller: KubeClient) -> None:
    pod = controller_pod("research", "probe", dict(ta.GPU))
    answer = plane.member("alice", "research").create(pod, dry_run=True)
    assert answer.status == 403 and 'cannot create resource "pods"' in answer.message, answer
    owned = {
        **pod,
        "metadata": {
            **pod["metadata"],
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "gone", "uid": "0", "controller": True}
            ],
        },
    }
    answer = job_controller.create(owned, dry_run=True)
    assert 'admission webhook "mpod.kb.io"' in answer.message, answer
    assert answer.status == 404 and 'Job.batch "gone" not found' in answer.message, answer
    answer = job_controller.create(pod, dry_run=True)
    assert answer.ok, answer.message


def test_accelerators_over_the_ceiling_are_refused_by_quota_admission(
    plane: OnCluster, job_controller: KubeClient
) -> None:
    ceiling = hard(plane, "research", "accelerator-ceiling", GPU)
    settled(plane, "research", "accelerator-ceiling", GPU)
    headroom = ceiling - int(used(plane, "research", "accelerator-ceiling", GPU))
    # over the GPU ceiling only: with its EFA interfaces over theirs too, quota admission may name either quota
    over = controller_pod("research", "over", {GPU: str(headroom + 1), EFA: str(4 * headroom)})
    exceeded(job_controller.create(over, dry_run=True), "accelerator-ceiling", GPU)
    at = controller_pod("research", "at", {GPU: str(headroom), EFA: str(4 * headroom)})
    answer = job_controller.create(at, dry_run=True)
    assert answer.ok, answer.message


def test_small_pods_add_up_to_the_ceiling_and_no_further(
    plane: OnCluster, job_controller: KubeClient
) -> None:
    """Real pods of 8 GPUs each until the ceiling: each admitted and charged; one more GPU is refused."""
    team, quota = "research", "accelerator-ceiling"
    settled(plane, team, quota, GPU)
    before = int(used(plane, team, quota, GPU))
    headroom = hard(plane, team, quota, GPU) - before
    made: list[dict[str, Any]] = []
    try:
        sizes = [8] * (headroom // 8) + ([headroom % 8] if headroom % 8 else [])
        for i, size in enumerate(sizes):
            pod = controller_pod(team, f"fill-{i}", {GPU: str(size), EFA: str(4 * size)})
            answer = job_controller.create(pod)
            assert answer.ok, (i, answer.message)
            made.append(pod)
        message = exceeded(
            # one GPU and no EFA: at the GPU ceiling the EFA quota is full too, and quota admission may name either
            job_controller.create(controller_pod(team, "one-more", {GPU: "1"}), dry_run=True),
            quota,
            GPU,
        )
        assert f"used: requests.{GPU}={before + headroom}" in message, message
    finally:
        for pod in made:
            plane.admin.request(
                "DELETE",
                f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods/{pod['metadata']['name']}",
                params={"gracePeriodSeconds": "0"},
            )
    # the admission charged the pods; the quota controller gives the usage back once they are gone
    wait_until(
        lambda: used(plane, team, quota, GPU) == before,
        timeout=90,
        what="kube-controller-manager to release usage",
    )


def test_efa_interfaces_over_the_ceiling_are_refused_by_quota_admission(
    plane: OnCluster, job_controller: KubeClient
) -> None:
    """Inference (three g5 nodes, one EFA interface each): 4 interfaces with one GPU pass the policy, not the quota."""
    team = "inference"
    ceiling = hard(plane, team, "compute-ceiling", EFA)
    assert ceiling < 4 <= 4 * hard(plane, team, "accelerator-ceiling", GPU), ceiling
    over = controller_pod(team, "efa", {GPU: "1", EFA: str(ceiling + 1)})
    exceeded(job_controller.create(over, dry_run=True), "compute-ceiling", EFA)
    within = controller_pod(team, "efa-ok", {GPU: "1", EFA: str(ceiling)})
    answer = job_controller.create(within, dry_run=True)
    assert answer.ok, answer.message


@pytest.mark.parametrize("priority_class", ["system-node-critical", "system-cluster-critical"])
def test_a_system_priority_pod_is_refused_before_the_quota(
    plane: OnCluster, job_controller: KubeClient, priority_class: str
) -> None:
    """The pod-spec policy refuses a system priority class for every requester, so the ``no-system-priority``
    quota (``pods: 0`` at those classes) is the second line here: its verdict is checked on the real quota
    admission, without the policy in front, by ``test_cluster_quota``."""
    pod = controller_pod("research", "urgent", dict(ta.GPU), priorityClassName=priority_class)
    answer = job_controller.create(pod, dry_run=True)
    assert answer.status == 403, answer
    assert "ValidatingAdmissionPolicy 'hyperpod-tenancy-pod-specs'" in answer.message, answer.message
    assert "Remove priorityClassName" in answer.message, answer.message
