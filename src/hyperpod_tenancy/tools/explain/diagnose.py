"""The diagnosis of ``hyperpod-tenancy explain``: a pure function of the objects and the policy, no I/O.

:func:`diagnose` returns the causes that hold the workload, the main one first. What it reads, and where Kueue
v0.19.2 writes it:

* admission refusals (``--denial``, Job controller ``FailedCreate`` Events): :mod:`._explain_denials`;
* ``Finished`` (``pkg/workload``), then preemption: ``Evicted=True`` with reason ``Preempted`` and
  ``Preempted=True`` with reason ``InClusterQueue``, ``InCohortReclamation``, ``InCohortFairSharing`` or
  ``InCohortReclaimWhileBorrowing`` and the message ``Preempted to accommodate a workload (UID: <uid>, JobUID:
  <uid>) due to <reason>; preemptor path: /<cohort>/<cq>; preemptee path: ...``
  (``preemptionMessage`` in ``pkg/scheduler/preemption/preemption.go``; ``Evict`` in
  ``pkg/workload/evict/evict.go``);
* ``Admitted=True`` (``SyncAdmittedCondition`` in ``pkg/workload/admissionchecks.go``), then the job's pods:
  ``PodScheduled=False`` with kube-scheduler's ``0/<n> nodes are available: ...``, and the home-directory init
  container of the POSIX identity webhook (:data:`hyperpod_tenancy.k8s.fsx_dirs.HOME_INIT_CONTAINER_NAME`);
* otherwise ``QuotaReserved=False``: :mod:`._explain_quota`.
"""

from __future__ import annotations

import re
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, labels
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.tools.explain.denials import diagnose_denial, find_denials
from hyperpod_tenancy.tools.explain.objects import (
    Cause,
    Diagnosis,
    ExplainInputError,
    Objects,
    condition,
    owner_names,
)
from hyperpod_tenancy.tools.explain.quota import diagnose_pending, requested
from hyperpod_tenancy.tools.explain.team import TeamFacts, from_cluster, from_policy, team_of_queue

__all__ = ["diagnose", "facts_of"]

_PREEMPTOR = re.compile(
    r"Preempted to accommodate a workload \(UID: (?P<uid>[^,]+), JobUID: (?P<job_uid>[^)]+)\) due to "
    r"(?P<why>[^;]+); preemptor path: (?P<path>[^;\s]+)"
)
_NODES = re.compile(
    r"0/(?P<total>\d+) nodes are available: (?P<reasons>.+?)(?:\. preemption:|\.?$)", re.DOTALL
)
_REASON_SPLIT = re.compile(r", (?=\d+ )")
_PREEMPTION_REASONS = {
    "InClusterQueue": "a higher-priority job of your own team needed the quota",
    "InCohortReclamation": "the lending team took back capacity it had lent (your job was running on borrowed quota)",
    "InCohortFairSharing": "fair sharing gave the capacity to a team below its fair share",
    "InCohortReclaimWhileBorrowing": "a higher-priority job of another team, itself borrowing, needed the capacity",
}


def facts_of(platform: Platform | None, objects: Objects) -> TeamFacts:
    """Return what the diagnosis knows of the team of ``objects``: from the policy, or else from the cluster.

    Raises:
        ExplainInputError: the namespace is no team's.

    """
    if platform is not None:
        return from_policy(platform, objects.namespace)
    return from_cluster(objects.namespace, objects.cluster_queue)


def _is_true(obj: dict[str, Any] | None, kind: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == "True"


def _name(obj: dict[str, Any] | None) -> str:
    return str(((obj or {}).get("metadata") or {}).get("name") or "")


def _preempted(team: TeamFacts, objects: Objects) -> list[Diagnosis]:
    workload = objects.workload
    assert workload is not None  # noqa: S101
    cond = condition(workload, "Preempted") or condition(workload, "Evicted") or {}
    reason = str(cond.get("reason") or "")
    message = str(cond.get("message") or "")
    why = _PREEMPTION_REASONS.get(reason, "another workload needed the capacity")
    details = [f"when: {cond.get('lastTransitionTime', 'unknown')}; Kueue reason: {reason}"]
    preemptor = _PREEMPTOR.search(message)
    by = "another workload"
    if preemptor is not None:
        queue = preemptor["path"].rstrip("/").rsplit("/", 1)[-1]
        other = team_of_queue(queue)
        match = next(
            (w for w in objects.workloads if str(w.get("metadata", {}).get("uid")) == preemptor["uid"]), None
        )
        if match is not None:
            pc = (match.get("spec") or {}).get("priorityClassRef", {}).get("name", "no priority class")
            by = f"your team's workload {_name(match)} ({pc})"
        elif other is not None:
            by = f"a workload of team {other}" if other != team.name else "a workload of your team"
        details.append(
            f"preemptor: workload UID {preemptor['uid']} (job UID {preemptor['job_uid']}) in {preemptor['path']}"
        )
    evictions = ((workload.get("status") or {}).get("schedulingStats") or {}).get("evictions") or ()
    count = sum(int(e.get("count", 0)) for e in evictions if e.get("reason") == "Preempted")
    if count:
        details.append(f"preempted {count} time(s) so far")
    fix = [
        "nothing to resubmit: Kueue queued it again, and it resumes from its last checkpoint when admitted"
    ]
    if reason in ("InCohortReclamation", "InCohortReclaimWhileBorrowing", "InCohortFairSharing"):
        fix.append(
            "to be safe from reclamation, size it to fit your team's free guarantee (it then does not borrow)"
        )
    stopping = _is_true(workload, "QuotaReserved")
    state = "is being stopped" if stopping else "was stopped and is queued again"
    diagnosis = Diagnosis(
        Cause.PREEMPTED,
        f"The job was preempted by {by}, because {why}. It {state}.",
        tuple(details),
        tuple(fix),
    )
    # queued again: what it waits for now is a diagnosis of its own
    return [diagnosis] if stopping else [diagnosis, diagnose_pending(team, objects)]


def _pods_of(objects: Objects) -> list[dict[str, Any]]:
    """Return the pods of the workload's job: owned by the job (same UID), else carrying its name as job-name label."""
    uids = objects.owner_uids
    jobs = set(owner_names(objects.workload or {}))
    pods = []
    for pod in objects.pods:
        meta = pod.get("metadata") or {}
        owners = {str(r.get("uid")) for r in meta.get("ownerReferences") or ()}
        job_labels = {
            (meta.get("labels") or {}).get(k)
            for k in ("batch.kubernetes.io/job-name", "job-name", "training.kubeflow.org/job-name")
        }
        if owners & uids or job_labels & jobs:
            pods.append(pod)
    return pods


def _home_failure(pod: dict[str, Any]) -> tuple[int, str] | None:
    for status in (pod.get("status") or {}).get("initContainerStatuses") or ():
        if status.get("name") != fsx_dirs.HOME_INIT_CONTAINER_NAME:
            continue
        for state in (status.get("state") or {}, status.get("lastState") or {}):
            terminated = state.get("terminated") or {}
            if terminated and int(terminated.get("exitCode", 0)) != 0:
                return int(terminated["exitCode"]), str(
                    terminated.get("message") or terminated.get("reason") or ""
                )
    return None


def _home_diagnosis(
    team: TeamFacts, objects: Objects, pod: dict[str, Any], code: int, text: str
) -> Diagnosis:
    meta = pod.get("metadata") or {}
    uid = (meta.get("annotations") or {}).get(labels.POSIX_UID_ANNOTATION) or (
        (pod.get("spec") or {}).get("securityContext") or {}
    ).get("runAsUser", "<your uid>")
    home = f"{names.fsx_directory(team.name)}/{fsx_dirs.home_subpath(int(uid)) if str(uid).isdigit() else 'home/<uid>'}"
    what = {
        fsx_dirs.SQUATTED_EXIT_CODE: f"{home} exists but is not yours (another user created it first, or it is a symbolic link)",
        2: f"{names.fsx_directory(team.name)}/home does not exist yet (the platform's FSx directory Job has not run)",
    }.get(code, f"it exited with status {code}")
    return Diagnosis(
        Cause.HOME_DIRECTORY,
        f"Kueue admitted the job, but its pods cannot start: the init container {fsx_dirs.HOME_INIT_CONTAINER_NAME} "
        f"that creates your home directory fails: {what}.",
        (f"pod: {meta.get('name')}", f"exit status: {code}" + (f" ({text})" if text else "")),
        (
            f"read its message: kubectl logs {meta.get('name')} -c {fsx_dirs.HOME_INIT_CONTAINER_NAME} -n {objects.namespace}",
            "tell the platform team with that message: only they can fix the directory (nothing of yours is lost)",
        ),
    )


def _scheduling_fix(reasons: list[str], objects: Objects) -> list[str]:
    fix: list[str] = []
    text = " ".join(reasons)
    if "vpc.amazonaws.com/efa" in text:
        fix.append(
            "request EFA only on instance types that have it (ml.p5.48xlarge: 32 per node), and no more than a node has"
        )
    if "taint" in text:
        fix.append(
            "nodes with a taint your pods do not tolerate are held back: sagemaker.amazonaws.com/node-health-status taints mark nodes HyperPod is repairing; wait, or tell the platform team"
        )
    if "affinity/selector" in text:
        fix.append(
            "your nodeSelector or affinity matches no node: check node.kubernetes.io/instance-type against the instance types of the cluster"
        )
    if "Insufficient" in text and not fix:
        fix.append(
            "the nodes of that type are full even though Kueue admitted the job: wait; if it persists, tell the platform team"
        )
    fix.append(f"details: kubectl describe pod <pod> -n {objects.namespace}")
    return fix


def _admitted(team: TeamFacts, objects: Objects) -> Diagnosis:
    workload = objects.workload
    assert workload is not None  # noqa: S101
    pods = _pods_of(objects)
    for pod in pods:
        if (failure := _home_failure(pod)) is not None:
            return _home_diagnosis(team, objects, pod, *failure)
    for pod in pods:
        cond = condition(pod, "PodScheduled") or {}
        if cond.get("status") == "False":
            match = _NODES.search(str(cond.get("message") or ""))
            reasons = _REASON_SPLIT.split(match["reasons"]) if match else [str(cond.get("message") or "")]
            return Diagnosis(
                Cause.PODS_UNSCHEDULABLE,
                "Kueue admitted the job, but Kubernetes cannot place its pods on a node; Kueue is not what holds it.",
                (
                    f"pod: {_name(pod)} ({cond.get('reason', 'Unschedulable')})",
                    *(f"{r} (of {match['total']} nodes)" if match else f"scheduler: {r}" for r in reasons),
                ),
                tuple(_scheduling_fix(reasons, objects)),
            )
    admission = (workload.get("status") or {}).get("admission") or {}
    flavors = sorted(
        {f for psa in admission.get("podSetAssignments") or () for f in (psa.get("flavors") or {}).values()}
    )
    phases: dict[str, int] = {}
    for pod in pods:
        phase = str((pod.get("status") or {}).get("phase", "Unknown"))
        phases[phase] = phases.get(phase, 0) + 1
    pods_text = ", ".join(f"{n} {p}" for p, n in sorted(phases.items())) or "none yet"
    gpus = requested(workload, "nvidia.com/gpu")
    return Diagnosis(
        Cause.ADMITTED,
        f"The job is admitted: Kueue reserved its quota in {admission.get('clusterQueue', 'your queue')} and let it start.",
        (
            f"flavor: {', '.join(flavors) or 'unknown'}",
            *([f"GPUs: {gpus}"] if gpus else []),
            f"pods: {pods_text}",
        ),
        (
            f"follow it: kubectl get pods -n {objects.namespace} -l batch.kubernetes.io/job-name={next(iter(owner_names(workload)), '<job>')}",
        ),
    )


def _evicted(objects: Objects) -> Diagnosis:
    """Evicted for another reason than preemption (``PodsReadyTimeout``, ``Deactivated``, a stopped queue...)."""
    cond = condition(objects.workload, "Evicted") or {}
    return Diagnosis(
        Cause.OTHER,
        f"Kueue evicted the job ({cond.get('reason', 'Evicted')}); it was not preempted by another workload.",
        (f"Kueue: {cond.get('message', '')}", f"when: {cond.get('lastTransitionTime', 'unknown')}"),
        (f"kubectl describe workload {_name(objects.workload)} -n {objects.namespace}",),
    )


def _finished(objects: Objects) -> Diagnosis:
    cond = condition(objects.workload, "Finished") or {}
    return Diagnosis(
        Cause.FINISHED,
        f"The job has finished ({cond.get('reason', 'finished')}): nothing holds it.",
        (f"Kueue: {cond.get('message', '')}",),
        (f"its logs: kubectl logs -n {objects.namespace} -l batch.kubernetes.io/job-name=<job>",),
    )


def _entitlement(team: TeamFacts, objects: Objects) -> Diagnosis | None:
    ref = ((objects.workload or {}).get("spec") or {}).get("priorityClassRef") or {}
    wanted = ref.get("name")
    if team.classes is None:  # which classes the team is entitled to is not known without the policy
        return None
    allowed = list(team.classes)
    if ref.get("kind") != "WorkloadPriorityClass" or wanted in allowed:
        return None
    return Diagnosis(
        Cause.PRIORITY_NOT_ENTITLED,
        f"The job carries priority class {wanted}, which team {team.name} is not entitled to.",
        (f"entitled: {', '.join(allowed)} ({team.field('allowedPriorityClasses')})",),
        (
            f"resubmit it with `kueue.x-k8s.io/priority-class:` one of {', '.join(allowed)}; admission refuses any "
            "update of it until then",
        ),
    )


def diagnose(platform: Platform | None, objects: Objects) -> list[Diagnosis]:
    """Every cause that holds the workload of ``objects`` for its team, the main one first.

    With ``platform`` (the policy) the fixes name the fields of ``platform.yaml`` behind the figures; without it
    the team's facts come from what the cluster shows a member (:func:`facts_of`).

    Raises:
        ExplainInputError: the namespace is no team's, or there is neither a Workload nor a refusal to explain.

    """
    team = facts_of(platform, objects)
    found = [diagnose_denial(team, d) for d in find_denials(objects.denials, _events_of(objects))]
    workload = objects.workload
    if workload is None:
        if found:
            return found
        what = f"named {objects.asked} (nor owned by a job of that name) " if objects.asked else ""
        raise ExplainInputError(
            f"no Kueue Workload {what}in namespace {objects.namespace}; if the job was refused when you "
            "submitted it, pass the error with --denial 'TEXT'"
        )
    evicted = _is_true(workload, "Evicted")
    preempted = _is_true(workload, "Preempted") or (
        evicted and (condition(workload, "Evicted") or {}).get("reason") == "Preempted"
    )
    if _is_true(workload, "Finished"):
        main = [_finished(objects)]
    elif preempted:
        main = _preempted(team, objects)
    elif evicted:
        main = [_evicted(objects)]
    elif _is_true(workload, "Admitted"):
        main = [_admitted(team, objects)]
    else:
        main = [diagnose_pending(team, objects)]
    if found and main[0].cause is Cause.ADMITTED:
        # admitted, yet its pods were refused: the refusal is what holds the work
        return [*found, *main]
    extra = [d for d in [_entitlement(team, objects)] if d is not None]
    return [*main, *found, *extra]


def _events_of(objects: Objects) -> list[dict[str, Any]]:
    """Events about the workload, its job or its pods."""
    wanted = {
        _name(objects.workload),
        *owner_names(objects.workload or {}),
        *(_name(p) for p in _pods_of(objects)),
    }
    if objects.asked:
        wanted.add(objects.asked)
    wanted.discard("")
    uids = objects.owner_uids
    out = []
    for event in objects.events:
        involved = event.get("involvedObject") or event.get("regarding") or {}
        if involved.get("name") in wanted or str(involved.get("uid")) in uids:
            out.append(event)
    return out
