"""Issue 8, class 2 (backstop): a ResourceQuota per team namespace that holds whatever admission lets through.

A team member who gets a pod past admission (a Job without its queue label, an orphaned pod, a pod template
nobody checked) must still not take more accelerators than the team's guarantee plus its borrowing ceiling,
nor run at a system priority class that preempts other teams through kube-scheduler. The quotas are read
from the synthesized platform on both fairness backends and evaluated with Kubernetes' quota semantics
(tests/support/quota_eval.py); the expected ceiling comes from an independent reading of the fairness
rendering (tests/support/fairness_interpreters.py: Task Governance ComputeQuota or Kueue ClusterQueue).

Sources: ResourceQuota for extended resources allows only the ``requests.`` prefix and quota scopes by
PriorityClass (https://kubernetes.io/docs/concepts/policy/resource-quotas/); system priority classes are
usable in any namespace since Kubernetes 1.17 (https://kubernetes.io/docs/concepts/scheduling-eviction/
pod-priority-preemption/); LimitRange ``default`` applies to every container without a limit
(https://kubernetes.io/docs/concepts/policy/limit-range/).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import platforms
import pytest
import quota_eval
import tenant_admission as ta
from fairness_interpreters import (
    INSTANCE_TYPE_LABEL,
    FairnessForm,
    KueueCohortSimulator,
    from_kueue,
    from_task_governance,
    schedulable_shapes,
)
from rbac_eval import Authorizer, Request, Subject
from synth import Synth, resources_of

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.k8s.team_manifests import team_manifests
from hyperpod_tenancy.policy import FairnessBackend, Team, names

SYSTEM_CLASSES = ("system-node-critical", "system-cluster-critical")
TRAINER_IMAGE = "public.ecr.aws/docker/library/busybox:1.37.0"


def namespace_objects(synth: Synth, team: Team) -> list[dict[str, Any]]:
    ns = names.namespace(team.name)
    return [m for m in synth.manifests() if m.get("metadata", {}).get("namespace") == ns]


def fairness_form(synth: Synth) -> FairnessForm:
    """What the synthesized fairness rendering means (Kueue ClusterQueues or Task Governance ComputeQuotas)."""
    platform = synth.platform
    if "kueue" in {m["apiVersion"].split(".")[0] for m in synth.manifests()}:
        return from_kueue(_kueue_objects(synth), kueue.kueue_helm_values(platform))
    scheduler = next(iter(resources_of(synth.cluster, "AWS::SageMaker::ClusterSchedulerConfig").values()))
    quotas = [
        r["Properties"]
        for t in platform.hosted_teams
        for r in resources_of(synth.team(t.name), "AWS::SageMaker::ComputeQuota").values()
    ]
    return from_task_governance(scheduler["Properties"], quotas, schedulable_shapes(platform))


def _kueue_objects(synth: Synth) -> list[dict[str, Any]]:
    return [m for m in synth.manifests() if m["apiVersion"].startswith("kueue.x-k8s.io")]


def expected_ceilings(synth: Synth) -> dict[str, dict[str, Decimal]]:
    """Per team and accelerator resource: guarantee + borrowing ceiling, as the fairness rendering says."""
    platform = synth.platform
    shapes = schedulable_shapes(platform)
    form = fairness_form(synth)
    accelerators = {r for shape in shapes.values() for r in shape if r not in ("cpu", "memory")}
    out: dict[str, dict[str, Decimal]] = {
        t.name: dict.fromkeys(accelerators, Decimal(0)) for t in platform.teams
    }
    for (team, _itype, resource), share in form.shares.items():
        if resource in accelerators:
            assert share.borrow_ceiling is not None, "a finite ceiling is what the quota mirrors"
            out[team][resource] += share.guaranteed + share.borrow_ceiling
    return out


def gpu_pod(
    name: str, count: int | Decimal, *, resource: str = "nvidia.com/gpu", priority_class: str | None = None
) -> dict[str, Any]:
    """A pod whose container sets only an accelerator *limit* (the request defaults to it)."""
    spec: dict[str, Any] = {
        "containers": [
            {"name": "main", "image": TRAINER_IMAGE, "resources": {"limits": {resource: str(count)}}}
        ]
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def plain_pod(name: str, *, priority_class: str | None = None) -> dict[str, Any]:
    pod = gpu_pod(name, 0)
    pod["spec"]["containers"][0]["resources"] = {}
    if priority_class:
        pod["spec"]["priorityClassName"] = priority_class
    return pod


@pytest.mark.parametrize("priority_class", SYSTEM_CLASSES)
def test_a_pod_at_a_system_priority_class_is_refused_in_every_team_namespace(
    synth: Synth, priority_class: str
) -> None:
    # attack: a pod (through any workload whose template escaped admission) at a system class would preempt
    # other teams' pods through kube-scheduler, outside Kueue
    for team in synth.platform.teams:
        objects = namespace_objects(synth, team)
        refused = quota_eval.refusals(objects, plain_pod("sneaky", priority_class=priority_class))
        assert refused, f"{team.name}: a {priority_class} pod is admitted"
        assert any("no-system-priority" in r for r in refused)
        # honest: the same pod without a system class (Kueue's priority is a label, not a PriorityClass)
        assert quota_eval.refusals(objects, plain_pod("honest")) == []


def test_accelerators_above_the_ceiling_are_refused_and_up_to_it_admitted(synth: Synth) -> None:
    # attack: one pod asking for more accelerators than guarantee + borrowing ceiling
    ceilings = expected_ceilings(synth)
    for team in synth.platform.teams:
        objects = namespace_objects(synth, team)
        for resource, ceiling in ceilings[team.name].items():
            at = gpu_pod("at-ceiling", ceiling, resource=resource)
            over = gpu_pod("over", ceiling + 1, resource=resource)
            if ceiling:
                assert quota_eval.refusals(objects, at) == [], (
                    f"{team.name}: honest work at the ceiling refused"
                )
            assert quota_eval.refusals(objects, over), f"{team.name}: {ceiling + 1} {resource} admitted"


def test_many_small_pods_cannot_add_up_past_the_ceiling(synth: Synth) -> None:
    # attack: stay under the ceiling per pod and add pods (e.g. Jobs without a queue label) until it is exceeded
    ceilings = expected_ceilings(synth)
    for team in synth.platform.teams:
        objects = namespace_objects(synth, team)
        for resource, ceiling in ceilings[team.name].items():
            running = [gpu_pod(f"p{i}", 1, resource=resource) for i in range(int(ceiling))]
            assert quota_eval.refusals(objects, gpu_pod("one-more", 1, resource=resource), running=running), (
                f"{team.name}: pod {int(ceiling) + 1} with one {resource} is admitted"
            )


def test_a_team_cannot_spend_its_ceiling_on_an_instance_type_it_has_no_share_of(synth: Synth) -> None:
    """A ResourceQuota cannot see the node a pod lands on, so the backstop caps a team's accelerators over every
    instance type together: research (a p5 quota only) could spend part of its p5 ceiling on the g5 nodes the
    inference team was promised. Per type the queue decides: work asking for accelerators must name the team's
    queue (admission), and the queue's share of a type the team has no quota on is nothing, on both backends
    (Kueue: the flavor's nominalQuota and borrowingLimit; Task Governance: ComputeQuota per instance type)."""
    team, other_type, gpus = "research", "ml.g5.12xlarge", 4
    assert other_type not in synth.platform.team(team).compute.quotas
    # the backstop alone would let it through: this is what the queue rule is for
    assert quota_eval.refusals(namespace_objects(synth, synth.platform.team(team)), gpu_pod("g5", gpus)) == []
    spec = ta.pod_spec(resources={"nvidia.com/gpu": str(gpus)})
    spec["nodeSelector"] = {INSTANCE_TYPE_LABEL: other_type}
    unqueued = ta.job(team, labels={}, spec=spec)
    assert any("queue-name" in m for m in ta.decide(synth, unqueued).denied)
    queued = ta.job(team, spec=spec, annotations=ta.CHECKPOINT)
    assert ta.decide(synth, queued).denied == []  # queued: admitted, and left to the queue
    share = fairness_form(synth).shares.get((team, other_type, "nvidia.com/gpu"))
    assert share is None or share.guaranteed + (share.borrow_ceiling or 0) == 0, share
    if synth.platform.fairness_backend is FairnessBackend.KUEUE:
        admission = KueueCohortSimulator(_kueue_objects(synth)).admit(
            team, other_type, {"nvidia.com/gpu": Decimal(gpus)}
        )
        assert not admission.admitted and "borrowingLimit 0" in admission.reason, admission


def test_an_init_container_cannot_hide_accelerators_from_the_quota(synth: Synth) -> None:
    # attack: put the GPU request on an init container (charged as the max of init and sum of containers)
    ceilings = expected_ceilings(synth)
    for team in synth.platform.teams:
        objects = namespace_objects(synth, team)
        for resource, ceiling in ceilings[team.name].items():
            pod = plain_pod("init")
            pod["spec"]["initContainers"] = [
                {
                    "name": "grab",
                    "image": TRAINER_IMAGE,
                    "resources": {"limits": {resource: str(ceiling + 1)}},
                }
            ]
            assert quota_eval.refusals(objects, pod), f"{team.name}: init container with {resource} admitted"


def test_the_quotas_exist_and_the_team_cannot_change_them(synth: Synth) -> None:
    objects = synth.manifests()
    authz = Authorizer(objects)
    for team in synth.platform.teams:
        ns = names.namespace(team.name)
        quotas = {
            o["metadata"]["name"] for o in namespace_objects(synth, team) if o["kind"] == "ResourceQuota"
        }
        assert quotas == {"accelerator-ceiling", "compute-ceiling", "no-system-priority"}
        who = Subject("mallory@example.com", (names.kubernetes_group(team.name),))
        for name in sorted(quotas):
            for verb in ("update", "patch", "delete"):
                req = Request(verb, "resourcequotas", "", ns, name)
                assert not authz.check(who, req).allowed, f"{team.name} may {verb} {name}"
        assert not authz.check(who, Request("create", "resourcequotas", "", ns)).allowed


def test_neuron_devices_under_another_resource_name_are_capped_too() -> None:
    # attack: Kueue counts aws.amazon.com/neurondevice; the Neuron device plugin also registers
    # aws.amazon.com/neuron and aws.amazon.com/neuroncore (Neuron docs, k8s-neuron-device-plugin), which
    # no quota would count. The backstop allows none of them.
    platform = platforms.mixed_accelerators()
    for team in platform.teams:
        objects = team_manifests(platform, team, fsx=platforms.FSX)
        for alias in ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore"):
            assert quota_eval.refusals(objects, gpu_pod("alias", 1, resource=alias)), f"{team.name}: {alias}"
        # honest: the resource Kueue counts is admitted within the team's Trainium share
        trn = team.compute.quotas.get("ml.trn1.32xlarge", 0)
        if trn:
            ok = gpu_pod("trn", 16, resource="aws.amazon.com/neurondevice")
            assert quota_eval.refusals(objects, ok) == []


def test_a_gpu_container_that_sets_only_its_gpu_limit_gets_no_memory_limit(synth: Synth) -> None:
    # a LimitRange default memory limit applies to every container without one; a training container that
    # sets only nvidia.com/gpu would be OOM-killed at that default (it was 4Gi)
    for team in synth.platform.teams:
        limit_ranges = [o for o in namespace_objects(synth, team) if o["kind"] == "LimitRange"]
        assert limit_ranges
        stored = quota_eval.apply_limit_ranges(gpu_pod("trainer", 8), limit_ranges)
        resources = stored["spec"]["containers"][0]["resources"]
        assert "memory" not in resources["limits"], resources
        assert "cpu" not in resources["limits"], resources
        assert resources["requests"]["nvidia.com/gpu"] == "8"
        assert resources["requests"]["memory"], "the request default still makes the pod count"
