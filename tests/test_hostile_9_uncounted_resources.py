"""Resources that gate scheduling but were not counted: EFA interfaces, huge pages, CPU and memory of the GPU nodes.

The attack: a Job of 16 pods, each requesting ``vpc.amazonaws.com/efa: 32``, no GPU and half a CPU. Every EFA
interface of the 16 ``ml.p5.48xlarge`` nodes is held, so no other team's multi-node job can start, while Task
Governance (which counts accelerators, vCPUs and memory per instance type: the SageMaker API's
``ComputeQuotaResourceConfig`` has ``Count``, ``Accelerators``, ``VCpu``, ``MemoryInGiB`` and nothing else,
https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ComputeQuotaResourceConfig.html) sees an idle
cluster. Closed three ways, each checked on both fairness backends from the synthesized platform:

* admission (``POD_SPEC_POLICY``): a container may request at most 4 EFA interfaces per accelerator it requests
  (``ml.p5.48xlarge``: 32 for 8 GPUs), so the Job is refused at submission and its pods at creation;
* the ResourceQuota ``compute-ceiling``: EFA interfaces, CPU, memory and huge pages at guarantee + borrowing
  ceiling, whatever admission lets through;
* with ``fairnessBackend: kueue``, the ClusterQueues cover ``vpc.amazonaws.com/efa`` (no longer excluded from
  accounting), so a workload asking for more than the team's EFA is queued, never admitted.
"""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import quota_eval
import tenant_admission as ta
from fairness_interpreters import KueueCohortSimulator
from synth import Synth

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.k8s.admission import POD_SPEC_POLICY
from hyperpod_tenancy.policy import names

EFA = "vpc.amazonaws.com/efa"


def _namespace_objects(synth: Synth, team: str) -> list[dict[str, Any]]:
    ns = names.namespace(team)
    return [m for m in synth.manifests() if m.get("metadata", {}).get("namespace") == ns]


def _efa_only_spec(team: str = "research") -> dict[str, Any]:
    return ta.pod_spec(resources={EFA: "32", "cpu": "500m"}, team=team)


def _efa_job() -> dict[str, Any]:
    job = ta.job(annotations=dict(ta.CHECKPOINT), spec=_efa_only_spec())
    job["spec"].update({"parallelism": 16, "completions": 16})
    return job


def _pod(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": copy.deepcopy(spec)}


def test_the_16_pod_efa_job_is_refused_at_submission(synth: Synth) -> None:
    decision = ta.decide(synth, _efa_job())
    denials = [m for o in decision.outcomes if o.policy == POD_SPEC_POLICY for m in o.failures]
    assert any("vpc.amazonaws.com/efa without the accelerators" in m for m in denials), decision.outcomes
    # and its pods, should a controller create them anyway (the policy judges every requester)
    pod = ta.child("Pod", _efa_job(), spec=_efa_only_spec(), labels=ta.kueue_labels())
    assert not ta.decide(synth, pod, user=ta.JOB_CONTROLLER).allowed


def test_honest_efa_work_with_its_gpus_passes(synth: Synth) -> None:
    job = ta.job(annotations=dict(ta.CHECKPOINT))  # 8 GPUs and 32 EFA interfaces per pod (ml.p5.48xlarge)
    assert ta.decide(synth, job).allowed
    for malformed in ("32k", "-1"):
        spec = ta.pod_spec(resources={"nvidia.com/gpu": "8", EFA: malformed})
        assert not ta.decide(synth, ta.job(annotations=dict(ta.CHECKPOINT), spec=spec)).allowed, malformed


def test_the_quota_backstop_caps_efa_cpu_memory_and_huge_pages(synth: Synth) -> None:
    """Past admission (a template nobody checked), the namespace quota still holds the team at its ceiling."""
    objects = _namespace_objects(synth, "research")
    (quota,) = [
        o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["name"] == "compute-ceiling"
    ]
    hard = quota["spec"]["hard"]
    # research: 9 x ml.p5.48xlarge guaranteed, borrowLimit 50 % -> 13.5 nodes: 432 EFA (32 each), 96 cores each
    # (threadsPerCore 1) and 2048 GiB each
    assert hard[f"requests.{EFA}"] == "432"
    assert hard["requests.cpu"] == str(9 * 96 + 9 * 96 // 2)
    assert hard["requests.memory"] == f"{9 * 2048 + 9 * 2048 // 2}Gi"
    assert hard["requests.hugepages-2Mi"] == hard["requests.hugepages-1Gi"] == hard["requests.memory"]
    spec = _efa_only_spec()
    running: list[dict[str, Any]] = []
    admitted = 0
    for i in range(16):
        pod = _pod(spec, f"efa-{i}")
        if quota_eval.refusals(objects, pod, running=running):
            break
        running.append(pod)
        admitted += 1
    assert admitted == 432 // 32, "no more EFA interfaces than the team's guarantee + ceiling"
    # CPU-only work cannot strand the GPUs of the nodes either
    cores = int(hard["requests.cpu"])
    assert quota_eval.refusals(objects, _pod(ta.pod_spec(resources={"cpu": str(cores + 1)}), "cpu-hog"))
    assert quota_eval.refusals(objects, _pod(ta.pod_spec(resources={"hugepages-2Mi": "30000Gi"}), "hp"))
    # honest: a whole node's worth of training fits
    node = ta.pod_spec(resources={"nvidia.com/gpu": "8", EFA: "32", "cpu": "90", "memory": "1800Gi"})
    assert quota_eval.refusals(objects, _pod(node, "node")) == []


def test_the_inference_team_has_no_efa_beyond_its_nodes(synth: Synth) -> None:
    objects = _namespace_objects(synth, "inference")
    (quota,) = [
        o for o in objects if o["kind"] == "ResourceQuota" and o["metadata"]["name"] == "compute-ceiling"
    ]
    # 3 x ml.g5.12xlarge, lend only (no borrowing): 3 EFA interfaces, 3 x 48 cores (threadsPerCore 2)
    assert quota["spec"]["hard"][f"requests.{EFA}"] == "3"
    assert quota["spec"]["hard"]["requests.cpu"] == "144"


def test_kueue_counts_efa_so_the_job_is_queued(synth: Synth) -> None:
    if not ta.on_kueue(synth):
        # Task Governance's ClusterQueues are the service's: the policy and the quota above are what hold there
        return
    config = kueue.kueue_helm_values(synth.platform)["managerConfig"]["controllerManagerConfigYaml"]
    assert EFA not in config, "EFA is not excluded from Kueue's accounting"
    objects = [m for m in synth.manifests() if m["apiVersion"].startswith("kueue.x-k8s.io")]
    sim = KueueCohortSimulator(objects)
    request = {EFA: Decimal(16 * 32), "cpu": Decimal(8)}
    assert not sim.admit("research", "ml.p5.48xlarge", request).admitted
    honest = {EFA: Decimal(4 * 32), "nvidia.com/gpu": Decimal(32), "cpu": Decimal(4 * 90)}
    assert sim.admit("research", "ml.p5.48xlarge", honest).admitted
