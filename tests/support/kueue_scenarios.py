"""Fairness scenarios played on real Kueue and on the cohort simulator, step by step, with the same observations.

A :class:`Scenario` is a list of :class:`Step`: one workload submitted by a team member (a suspended
``batch/v1`` Job labelled with the team's LocalQueue and a priority class, pods of whole GPUs), then the state
every workload of the scenario must settle to (:class:`Expected`): admitted, pending with Kueue's reason, or
preempted with Kueue's reason, and per team the GPUs in use and the GPUs of that borrowed. The figures come
from the tenancy plan (:func:`hyperpod_tenancy.tools.plan.tenancy_plan.build_plan`: guarantees and burst ceilings),
never written here.

* :func:`play_on_kueue` submits each step as ``OnCluster.member`` on the real control plane and reads the
  Workloads' conditions and the ClusterQueues' ``status.flavorsUsage`` until they match the expectation (or
  the time runs out), returning what it saw at each step.
* :func:`play_on_simulator` plays the same steps through
  :class:`fairness_interpreters.KueueWorkloadSimulator` on the objects of the same rendering.
* :func:`reference_scenarios` and :func:`doc_example_scenario` build the scenarios for the reference platform
  and the Task Governance documentation example.

Both players return one :class:`Observed` per step, so a differential test compares them directly.
"""

from __future__ import annotations

import contextlib
import copy
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from fairness_interpreters import KueueWorkloadSimulator, exceeds_capacity, insufficient_quota
from kube_client import KubeClient, wait_until
from tenant_admission import place_checkpoint

from hyperpod_tenancy.k8s.labels import CHECKPOINT_DIR_ENV, CHECKPOINT_INTERVAL_ENV
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.tools.plan.tenancy_plan import TenancyPlan

GPU = "nvidia.com/gpu"
WORKLOADS = ("kueue.x-k8s.io/v1beta2", "Workload")
CLUSTER_QUEUES = ("kueue.x-k8s.io/v1beta2", "ClusterQueue")
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1"
#: KWOK stands in for the kubelets and completes a Job's running pod after about a second
#: (``stages/pod/general/pod-complete.yaml``); these annotations make the pod run for a day instead, as training
#: does, so that quota stays in use until the scenario ends.
RUNS_FOR_A_DAY = {
    "pod-complete.stage.kwok.x-k8s.io/delay": "24h",
    "pod-complete.stage.kwok.x-k8s.io/jitter-delay": "24h",
}

ADMITTED = "admitted"
PENDING = "pending"
PREEMPTED = "preempted"


@dataclass(frozen=True)
class Submission:
    """One workload: ``pods`` pods of ``gpus_per_pod`` GPUs each, at ``priority_class``, as a ``batch/v1`` Job
    or a Kubeflow ``PyTorchJob`` (one Master, the rest Workers)."""

    name: str
    team: str
    pods: int
    gpus_per_pod: int
    priority_class: str
    kind: str = "Job"

    @property
    def gpus(self) -> int:
        """GPUs the whole workload requests."""
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True)
class State:
    """A workload's state: admitted, pending (reason: Kueue's message part) or preempted (Kueue's reason)."""

    status: str
    reason: str = ""


@dataclass(frozen=True)
class Observed:
    """What a step settled to: each workload's state; per team the GPUs in use and the borrowed part."""

    workloads: Mapping[str, State]
    usage: Mapping[str, tuple[int, int]]


@dataclass(frozen=True)
class Step:
    """Submit one workload (or none), then expect the state."""

    submit: Submission | None
    expected: Observed
    #: Delete these workloads first (a lender's work finishing...).
    delete: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    """A named list of steps on one flavor (instance type)."""

    name: str
    flavor: str
    teams: tuple[str, ...]
    steps: tuple[Step, ...]
    description: str = ""

    def submissions(self) -> list[Submission]:
        """Every workload of the scenario, in submission order."""
        return [s.submit for s in self.steps if s.submit is not None]


# ----------------------------------------------------------------------------------------------- scenarios


def _share(plan: TenancyPlan, team: str, flavor: str) -> tuple[int, int]:
    """The plan's guarantee and burst ceiling of ``team`` on ``flavor``, in GPUs."""
    (share,) = (s for s in plan.shares if s.team == team and s.instance_type == flavor)
    return share.guaranteed_gpus, share.burst_ceiling_gpus


@dataclass
class _Builder:
    flavor: str
    teams: tuple[str, ...]
    steps: list[Step] = field(default_factory=list)
    states: dict[str, State] = field(default_factory=dict)
    usage: dict[str, tuple[int, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.usage = dict.fromkeys(self.teams, (0, 0))

    def step(
        self,
        submit: Submission | None,
        *,
        states: Mapping[str, State],
        usage: Mapping[str, tuple[int, int]],
        delete: tuple[str, ...] = (),
    ) -> None:
        for name in delete:
            self.states.pop(name)
        self.states.update(states)
        self.usage.update(usage)
        self.steps.append(Step(submit, Observed(dict(self.states), dict(self.usage)), delete))


def reference_scenarios(platform: Platform, plan: TenancyPlan) -> list[Scenario]:
    """The scenarios of the reference platform's p5 flavor (teams ``research`` and ``vision``).

    * ``own-quota``: each team admitted on its own guarantee, nothing borrowed.
    * ``burst``: research borrows up to the burst ceiling the plan prints; one more GPU waits on Kueue's
      message ("insufficient unused quota ..., 1 more needed": v0.19.2 does not name the borrowing limit).
    * ``reclaim``: research bursts; vision comes back with its whole guarantee and reclaims what it lent: the
      borrowing workload is preempted, both teams end on their guarantees.
    * ``pytorchjob``: the burst and the reclaim with Kubeflow PyTorchJobs (Kueue's ``kubeflow.org/pytorchjob``
      integration, enabled by the platform's Kueue configuration).
    * ``priority``: the cohort is full (both teams on their guarantees); a research ``training`` job preempts
      research's most recent ``experimentation`` job (``preemptTeamTasks: LowerPriority``).
    """
    flavor = "ml.p5.48xlarge"
    teams = ("research", "vision")
    r_guarantee, r_ceiling = _share(plan, "research", flavor)
    v_guarantee, _ = _share(plan, "vision", flavor)
    per_pod = 4
    assert r_guarantee % per_pod == 0 and v_guarantee % per_pod == 0 and r_ceiling % per_pod == 0
    assert "training" in platform.team("research").allowed_priority_classes
    scenarios = []

    def job(name: str, team: str, gpus: int, priority: str = "training") -> Submission:
        return Submission(name, team, gpus // per_pod, per_pod, priority)

    b = _Builder(flavor, teams)
    b.step(
        job("own-r", "research", r_guarantee),
        states={"own-r": State(ADMITTED)},
        usage={"research": (r_guarantee, 0)},
    )
    b.step(
        job("own-v", "vision", v_guarantee),
        states={"own-v": State(ADMITTED)},
        usage={"vision": (v_guarantee, 0)},
    )
    scenarios.append(Scenario("own-quota", flavor, teams, tuple(b.steps), "each team on its own guarantee"))

    b = _Builder(flavor, teams)
    burst = r_ceiling - r_guarantee
    b.step(
        job("burst-base", "research", r_guarantee),
        states={"burst-base": State(ADMITTED)},
        usage={"research": (r_guarantee, 0)},
    )
    b.step(
        job("burst-up", "research", burst),
        states={"burst-up": State(ADMITTED)},
        usage={"research": (r_ceiling, burst)},
    )
    b.step(
        Submission("burst-one-more", "research", 1, 1, "training"),
        states={"burst-one-more": State(PENDING, f"{insufficient_quota(GPU, flavor)}, 1 more needed")},
        usage={},
    )
    scenarios.append(
        Scenario("burst", flavor, teams, tuple(b.steps), "research up to the plan's burst ceiling")
    )

    b = _Builder(flavor, teams)
    b.step(
        job("reclaim-base", "research", r_guarantee),
        states={"reclaim-base": State(ADMITTED)},
        usage={"research": (r_guarantee, 0)},
    )
    b.step(
        job("reclaim-burst", "research", burst),
        states={"reclaim-burst": State(ADMITTED)},
        usage={"research": (r_ceiling, burst)},
    )
    b.step(
        job("reclaim-lender", "vision", v_guarantee),
        states={
            "reclaim-lender": State(ADMITTED),
            "reclaim-burst": State(PREEMPTED, "InCohortReclamation"),
        },
        usage={"research": (r_guarantee, 0), "vision": (v_guarantee, 0)},
    )
    scenarios.append(Scenario("reclaim", flavor, teams, tuple(b.steps), "vision reclaims what it lent"))

    b = _Builder(flavor, teams)
    b.step(
        job("prio-v", "vision", v_guarantee),
        states={"prio-v": State(ADMITTED)},
        usage={"vision": (v_guarantee, 0)},
    )
    b.step(
        job("prio-exp-a", "research", r_guarantee - 2 * per_pod, "experimentation"),
        states={"prio-exp-a": State(ADMITTED)},
        usage={"research": (r_guarantee - 2 * per_pod, 0)},
    )
    b.step(
        job("prio-exp-b", "research", 2 * per_pod, "experimentation"),
        states={"prio-exp-b": State(ADMITTED)},
        usage={"research": (r_guarantee, 0)},
    )
    b.step(
        job("prio-train", "research", 2 * per_pod, "training"),
        states={"prio-train": State(ADMITTED), "prio-exp-b": State(PREEMPTED, "InClusterQueue")},
        usage={"research": (r_guarantee, 0)},
    )
    scenarios.append(Scenario("priority", flavor, teams, tuple(b.steps), "training preempts experimentation"))

    b = _Builder(flavor, teams)

    def pytorchjob(name: str, gpus: int) -> Submission:
        return Submission(name, "research", gpus // per_pod, per_pod, "training", kind="PyTorchJob")

    b.step(
        pytorchjob("pt-base", r_guarantee),
        states={"pt-base": State(ADMITTED)},
        usage={"research": (r_guarantee, 0)},
    )
    b.step(
        pytorchjob("pt-burst", burst),
        states={"pt-burst": State(ADMITTED)},
        usage={"research": (r_ceiling, burst)},
    )
    b.step(
        job("pt-lender", "vision", v_guarantee),
        states={"pt-lender": State(ADMITTED), "pt-burst": State(PREEMPTED, "InCohortReclamation")},
        usage={"research": (r_guarantee, 0), "vision": (v_guarantee, 0)},
    )
    scenarios.append(
        Scenario("pytorchjob", flavor, teams, tuple(b.steps), "the same burst and reclaim as PyTorchJobs")
    )
    return scenarios


def ceiling_scenario(plan: TenancyPlan, team: str, lender: str, flavor: str, *, name: str) -> Scenario:
    """``team`` fills its guarantee, borrows up to the burst ceiling the plan prints (its limit, or what the others
    lend, whichever binds), and one GPU more waits on Kueue's message; then ``lender`` comes back with its whole
    guarantee and reclaims what it lent: the borrowing workload is preempted, both teams end on their guarantees.

    Pods of 4 GPUs while they divide the figures, else of 1.
    """
    guarantee, ceiling = _share(plan, team, flavor)
    lender_guarantee, _ = _share(plan, lender, flavor)
    burst = ceiling - guarantee
    assert burst > 0, f"{team} must be able to borrow on {flavor} for this scenario"
    per_pod = 4 if guarantee % 4 == burst % 4 == lender_guarantee % 4 == 0 else 1

    def job(job_name: str, who: str, gpus: int) -> Submission:
        return Submission(job_name, who, gpus // per_pod, per_pod, "training")

    b = _Builder(flavor, (team, lender))
    b.step(
        job(f"{name}-base", team, guarantee),
        states={f"{name}-base": State(ADMITTED)},
        usage={team: (guarantee, 0)},
    )
    b.step(
        job(f"{name}-burst", team, burst),
        states={f"{name}-burst": State(ADMITTED)},
        usage={team: (ceiling, burst)},
    )
    b.step(
        Submission(f"{name}-one-more", team, 1, 1, "training"),
        states={f"{name}-one-more": State(PENDING, f"{insufficient_quota(GPU, flavor)}, 1 more needed")},
        usage={},
    )
    b.step(
        job(f"{name}-lender", lender, lender_guarantee),
        states={
            f"{name}-lender": State(ADMITTED),
            f"{name}-burst": State(PREEMPTED, "InCohortReclamation"),
        },
        usage={team: (guarantee, 0), lender: (lender_guarantee, 0)},
        delete=(f"{name}-one-more",),
    )
    description = f"{team} up to the plan's burst ceiling {ceiling} on {flavor}, then {lender} reclaims"
    return Scenario(name, flavor, (team, lender), tuple(b.steps), description)


def doc_example_scenario(plan: TenancyPlan) -> Scenario:
    """The Task Governance documentation example: team A (6 units) uses 2, team B (5 units) uses 4; a
    4-instance job of B runs on 1 idle unit of its own and 3 borrowed from A; one more unit waits."""
    flavor = "ml.g5.8xlarge"
    teams = ("team-a", "team-b")
    a_guarantee, _ = _share(plan, "team-a", flavor)
    b_guarantee, b_ceiling = _share(plan, "team-b", flavor)
    assert (a_guarantee, b_guarantee) == (6, 5), "one GPU per ml.g5.8xlarge: units are GPUs"
    b = _Builder(flavor, teams)
    b.step(
        Submission("doc-a", "team-a", 2, 1, "training"),
        states={"doc-a": State(ADMITTED)},
        usage={"team-a": (2, 0)},
    )
    b.step(
        Submission("doc-b", "team-b", 4, 1, "training"),
        states={"doc-b": State(ADMITTED)},
        usage={"team-b": (4, 0)},
    )
    b.step(
        Submission("doc-b-big", "team-b", 4, 1, "training"),
        states={"doc-b-big": State(ADMITTED)},
        usage={"team-b": (8, 8 - b_guarantee)},
    )
    assert b_ceiling == 8, "the example's 4-instance job takes team B exactly to its burst ceiling"
    b.step(
        Submission("doc-b-one-more", "team-b", 1, 1, "training"),
        states={"doc-b-one-more": State(PENDING, f"{insufficient_quota(GPU, flavor)}, 1 more needed")},
        usage={},
    )
    return Scenario("doc-example", flavor, teams, tuple(b.steps), "Task Governance documentation example")


# -------------------------------------------------------------------------------------------- real Kueue


def job_object(sub: Submission) -> dict[str, Any]:
    """The suspended workload a member submits for ``sub`` (queue and priority labels, checkpoint declaration)."""
    job = _batch_job(sub)
    if sub.kind == "Job":
        return place_checkpoint(job, sub.team)
    assert sub.kind == "PyTorchJob", sub.kind
    template = job["spec"]["template"]
    template["spec"]["restartPolicy"] = "OnFailure"
    template["spec"]["containers"][0]["name"] = "pytorch"  # the container the training operator looks for

    def replicas(count: int) -> dict[str, Any]:
        return {"replicas": count, "restartPolicy": "OnFailure", "template": copy.deepcopy(template)}

    specs = {"Master": replicas(1), **({"Worker": replicas(sub.pods - 1)} if sub.pods > 1 else {})}
    pytorchjob = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": job["metadata"],
        "spec": {"runPolicy": {"suspend": True}, "pytorchReplicaSpecs": specs},
    }
    return place_checkpoint(pytorchjob, sub.team)


def _batch_job(sub: Submission) -> dict[str, Any]:
    namespace = names.namespace(sub.team)
    resources = {GPU: str(sub.gpus_per_pod)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": sub.name,
            "namespace": namespace,
            "labels": {
                "kueue.x-k8s.io/queue-name": names.local_queue(sub.team),
                "kueue.x-k8s.io/priority-class": names.workload_priority_class(sub.priority_class),
            },
            # moved into the containers' environment by job_object (tenant_admission.place_checkpoint)
            "annotations": {
                CHECKPOINT_DIR_ENV: f"/fsx/{sub.team}/runs/{sub.name}",
                CHECKPOINT_INTERVAL_ENV: "30m",
            },
        },
        "spec": {
            "suspend": True,
            "parallelism": sub.pods,
            "completions": sub.pods,
            "template": {
                "metadata": {"annotations": dict(RUNS_FOR_A_DAY)},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "train",
                            "image": IMAGE,
                            "command": ["torchrun", "train.py"],
                            "resources": {"requests": resources, "limits": resources},
                        }
                    ],
                },
            },
        },
    }


def _condition(workload: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for condition in workload.get("status", {}).get("conditions", []):
        if condition.get("type") == kind:
            return dict(condition)
    return None


def _true(condition: Mapping[str, Any] | None) -> bool:
    return condition is not None and condition.get("status") == "True"


def workload_state(workload: Mapping[str, Any]) -> State:
    """A Workload's :class:`State` from its conditions (Kueue v0.19.2, ``apis/kueue/v1beta2/workload_types.go``):
    ``Admitted`` True is admitted; else ``Preempted`` True (or ``Evicted`` True for ``Preempted``) is preempted,
    with the ``Preempted`` condition's reason (``InClusterQueue``, ``InCohortReclamation``...); else pending,
    with the ``QuotaReserved`` condition's message."""
    if _true(_condition(workload, "Admitted")):
        return State(ADMITTED)
    preempted = _condition(workload, "Preempted")
    evicted = _condition(workload, "Evicted")
    if _true(preempted) or (_true(evicted) and (evicted or {}).get("reason") == "Preempted"):
        return State(PREEMPTED, str((preempted or {}).get("reason", "")))
    reserved = _condition(workload, "QuotaReserved") or {}
    return State(PENDING, str(reserved.get("message", "")))


def _owner(workload: Mapping[str, Any]) -> str:
    owners = workload["metadata"].get("ownerReferences", [])
    return str(owners[0]["name"]) if owners else ""


def workloads_by_job(admin: KubeClient, teams: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The Workloads of the teams' namespaces by the name of the Job that owns each."""
    found = {}
    for team in teams:
        for workload in admin.list(*WORKLOADS, namespace=names.namespace(team)):
            found[_owner(workload)] = dict(workload)
    return found


def gpu_usage(admin: KubeClient, team: str, flavor: str) -> tuple[int, int]:
    """GPUs in use and borrowed on ``flavor`` in the team's ClusterQueue ``status.flavorsUsage``."""
    queue = admin.call("GET", f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues/{names.cluster_queue(team)}")
    for entry in queue.get("status", {}).get("flavorsUsage", []):
        if entry["name"] != flavor:
            continue
        for resource in entry.get("resources", []):
            if resource["name"] == GPU:
                return int(Decimal(str(resource.get("total", 0)))), int(
                    Decimal(str(resource.get("borrowed", 0)))
                )
    return 0, 0


def normalized(state: State, flavor: str) -> State:
    """A pending state's reason cut to the Kueue reason it contains (the rest names amounts), else as is."""
    if state.status != PENDING:
        return state
    unused = re.search(re.escape(insufficient_quota(GPU, flavor)) + r", \d+ more needed", state.reason)
    if unused:
        return State(PENDING, unused.group(0))
    if exceeds_capacity(GPU, flavor) in state.reason:
        return State(PENDING, exceeds_capacity(GPU, flavor))
    return state


def _matches(expected: State, seen: State) -> bool:
    if expected.status != seen.status:
        return False
    return expected.reason in seen.reason if expected.status == PENDING else expected.reason == seen.reason


def observe(admin: KubeClient, scenario: Scenario, names_now: Sequence[str]) -> Observed:
    """The states of the scenario's workloads now present, and the teams' GPU usage."""
    by_job = workloads_by_job(admin, scenario.teams)
    states = {
        n: normalized(workload_state(by_job[n]), scenario.flavor) if n in by_job else State("missing")
        for n in names_now
    }
    usage = {t: gpu_usage(admin, t, scenario.flavor) for t in scenario.teams}
    return Observed(states, usage)


def _settled(expected: Observed, seen: Observed) -> bool:
    states = all(_matches(e, seen.workloads.get(n, State("missing"))) for n, e in expected.workloads.items())
    return states and dict(expected.usage) == dict(seen.usage)


MemberFor = Callable[[str], KubeClient]


def play_on_kueue(
    admin: KubeClient, member: MemberFor, scenario: Scenario, *, timeout: float = 60
) -> list[Observed]:
    """Play ``scenario`` on the real control plane: each step's Job created by a member of its team
    (``member(team)``), then polled until the state matches the expectation or ``timeout`` runs out (what was
    last seen is returned either way). The caller deletes the Jobs (:func:`cleanup`)."""
    seen: list[Observed] = []
    present: list[str] = []
    for step in scenario.steps:
        for name in step.delete:
            _delete_job(admin, _submission(scenario, name))
            present.remove(name)
        if step.submit is not None:
            answer = member(step.submit.team).create(job_object(step.submit))
            assert answer.ok, (step.submit, answer.message)
            present.append(step.submit.name)
        last: list[Observed] = []

        def settled(step: Step = step, last: list[Observed] = last) -> bool:
            last[:] = [observe(admin, scenario, present)]
            return _settled(step.expected, last[0])

        with contextlib.suppress(AssertionError):
            wait_until(settled, timeout=timeout, what=f"{scenario.name}: {step.submit}", interval=0.3)
        seen.append(last[0])
        # Kueue picks preemption victims newest quota reservation first, to the second, then by UID
        # (pkg/scheduler/preemption/common/ordering.go CandidatesOrdering); the simulator takes the most recently
        # admitted: each step's admissions a second apart keep a tie from choosing another victim
        time.sleep(1.0)
    return seen


def _submission(scenario: Scenario, name: str) -> Submission:
    (sub,) = (s for s in scenario.submissions() if s.name == name)
    return sub


def _delete_job(admin: KubeClient, sub: Submission) -> None:
    admin.delete(job_object(sub), propagation="Background")


def cleanup(admin: KubeClient, scenario: Scenario, *, timeout: float = 90) -> None:
    """Delete the scenario's Jobs and wait until their Workloads are gone and the queues hold nothing of theirs."""
    for sub in scenario.submissions():
        _delete_job(admin, sub)
    wanted = {s.name for s in scenario.submissions()}

    def gone() -> bool:
        left = set(workloads_by_job(admin, scenario.teams)) & wanted
        return not left and all(gpu_usage(admin, t, scenario.flavor) == (0, 0) for t in scenario.teams)

    wait_until(gone, timeout=timeout, what=f"{scenario.name}: its Workloads to be gone")


@contextlib.contextmanager
def played_on_kueue(admin: KubeClient, member: MemberFor, scenario: Scenario) -> Iterator[list[Observed]]:
    """:func:`play_on_kueue`, the Jobs deleted afterwards whatever happened."""
    try:
        yield play_on_kueue(admin, member, scenario)
    finally:
        cleanup(admin, scenario)


# ----------------------------------------------------------------------------------------------- simulator


def play_on_simulator(
    objects: Sequence[Mapping[str, Any]], scenario: Scenario, *, priorities: Mapping[str, int]
) -> list[Observed]:
    """Play ``scenario`` through :class:`KueueWorkloadSimulator` on the rendered Kueue ``objects``."""
    sim = KueueWorkloadSimulator(objects)
    seen = []
    present: list[str] = []
    for step in scenario.steps:
        for name in step.delete:
            sim.delete(name)
            present.remove(name)
        if step.submit is not None:
            sub = step.submit
            request = {GPU: Decimal(sub.gpus)}
            sim.submit(sub.name, sub.team, scenario.flavor, request, priority=priorities[sub.priority_class])
            present.append(sub.name)
        states = {}
        for name in present:
            status, reason = sim.state(name)
            states[name] = normalized(State(status, reason), scenario.flavor)
        usage = {}
        for team in scenario.teams:
            used = sim.usage[(team, scenario.flavor, GPU)]
            nominal = sim.quota[(team, scenario.flavor, GPU)][0]
            usage[team] = (int(used), int(max(Decimal(0), used - nominal)))
        seen.append(Observed(states, usage))
    return seen


def describe(scenario: Scenario, kueue: Sequence[Observed], other: Sequence[Observed], label: str) -> str:
    """Each step where ``kueue`` and ``other`` differ, side by side."""
    lines = []
    for step, a, b in zip(scenario.steps, kueue, other, strict=True):
        if a != b:
            lines.append(f"{scenario.name} after {step.submit}:\n  kueue: {a}\n  {label}: {b}")
    return "\n".join(lines)
