"""Why a Kueue Workload waits for quota: its own guarantee, the borrowing ceiling, or lenders without idle capacity.

The reasons are read from the message Kueue v0.19.2 writes on the Workload's ``QuotaReserved=False`` condition
(``pkg/scheduler/scheduler.go``: the entry's ``inadmissibleMsg``, from ``Assignment.Message`` in
``pkg/scheduler/flavorassigner/flavorassigner.go``)::

    couldn't assign flavors to pod set <ps>: insufficient unused quota for <res> in flavor <f>, <n> more needed
    couldn't assign flavors to pod set <ps>: insufficient quota for <res> in flavor <f>, previously considered
        podsets requests (<a>) + current podset request (<b>) > maximum capacity (<max>)
    ...: flavor <f> not found | flavor <f> doesn't match node affinity | untolerated taint <t> in flavor <f>
    ClusterQueue <cq> is inactive

and the numbers from the team's own ClusterQueue: ``spec.resourceGroups`` (nominal quota, borrowing limit) and
``status.flavorsReservation`` (what the team's admitted and reserving work holds, and how much of it is
borrowed). Kueue's "maximum capacity" is the queue's nominal quota plus its borrowing limit
(``potentialAvailable`` in ``pkg/cache/scheduler/resource_node.go``). Whether the lenders have idle capacity
is the one thing that needs other teams' ClusterQueues, so it is the only answer marked "not visible to you".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.borrowing import absolute_limit
from hyperpod_tenancy.tools.explain.objects import (
    Cause,
    Diagnosis,
    Objects,
    condition,
    parse_quantity,
    requested,
)
from hyperpod_tenancy.tools.explain.partitions import partition_diagnosis
from hyperpod_tenancy.tools.explain.team import TeamFacts
from hyperpod_tenancy.tools.explain.topology import topology_diagnosis

__all__ = ["QuotaLine", "diagnose_pending", "quota_lines", "requested"]

_UNUSED = re.compile(
    r"insufficient unused quota for (?P<resource>\S+) in flavor (?P<flavor>[^\s,]+), (?P<more>\S+) more needed"
)
_MAXIMUM = re.compile(
    r"insufficient quota for (?P<resource>\S+) in flavor (?P<flavor>[^\s,]+), previously considered podsets "
    r"requests \((?P<previous>[^)]*)\) \+ current podset request \((?P<request>[^)]*)\) > maximum capacity "
    r"\((?P<maximum>[^)]*)\)"
)
_FLAVOR_NOT_FOUND = re.compile(r"flavor (?P<flavor>[^\s,]+) not found")
_NO_AFFINITY = re.compile(r"flavor (?P<flavor>[^\s,]+) doesn't match node affinity")
_TAINT = re.compile(r"untolerated taint (?P<taint>.+?) in flavor (?P<flavor>[^\s,]+)")
_UNAVAILABLE = re.compile(r"resource (?P<resource>\S+) unavailable in ClusterQueue")
_PREEMPTING = re.compile(r"Pending the preemption of (?P<n>\d+) workload\(s\)")
_INACTIVE = re.compile(
    r"ClusterQueue (?P<cq>\S+) (?:is inactive|not found|is terminating or missing|is stopped)"
    r"|LocalQueue (?P<lq>\S+) is (?:terminating or missing|stopped)"
    r"|doesn't match ClusterQueue selector"
)
_MISSING_FLAVORS = re.compile(r"references missing ResourceFlavor\(s\): (?P<flavors>\S+)")
_ACCELERATOR_HINTS = ("gpu", "neuron", "accelerator")


@dataclass(frozen=True)
class QuotaLine:
    """One (flavor, resource) of the team's ClusterQueue: guarantee, ceiling, and what is reserved now."""

    flavor: str
    resource: str
    nominal: Decimal
    #: ``borrowingLimit``; None: unlimited (what the cohort has).
    borrowing_limit: Decimal | None
    #: Reserved by the team's admitted and reserving workloads (``status.flavorsReservation``).
    used: Decimal
    #: Part of ``used`` above the guarantee (borrowed from other teams).
    borrowed: Decimal

    @property
    def ceiling(self) -> Decimal | None:
        """Guarantee + borrowing limit: the most the team can hold (None: unlimited)."""
        return None if self.borrowing_limit is None else self.nominal + self.borrowing_limit


def _num(value: object) -> Decimal:
    return parse_quantity(value) or Decimal(0)


def _fmt(value: Decimal | None) -> str:
    if value is None:
        return "unlimited"
    return str(value.quantize(Decimal(1))) if value == value.to_integral_value() else str(value.normalize())


def quota_lines(cluster_queue: dict[str, Any] | None) -> dict[tuple[str, str], QuotaLine]:
    """Every (flavor, resource) of ``cluster_queue`` with its quota and reservation."""
    if not cluster_queue:
        return {}
    status = cluster_queue.get("status") or {}
    usage: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    for fl in status.get("flavorsReservation") or status.get("flavorsUsage") or ():
        for res in fl.get("resources") or ():
            usage[(fl.get("name"), res.get("name"))] = (_num(res.get("total")), _num(res.get("borrowed")))
    lines: dict[tuple[str, str], QuotaLine] = {}
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or ():
        for fl in group.get("flavors") or ():
            for res in fl.get("resources") or ():
                key = (str(fl.get("name")), str(res.get("name")))
                limit = res.get("borrowingLimit")
                used, borrowed = usage.get(key, (Decimal(0), Decimal(0)))
                lines[key] = QuotaLine(
                    key[0],
                    key[1],
                    _num(res.get("nominalQuota")),
                    None if limit is None else _num(limit),
                    used,
                    borrowed,
                )
    return lines


def _message(workload: dict[str, Any]) -> str:
    cond = condition(workload, "QuotaReserved") or {}
    return str(cond.get("message") or "")


def _holders(objects: Objects, flavor: str, resource: str) -> list[str]:
    """Return the team's workloads holding ``resource`` of ``flavor`` now, largest first (what uses the quota)."""
    held: list[tuple[Decimal, str]] = []
    for wl in objects.workloads:
        reserved = condition(wl, "QuotaReserved")
        if wl is objects.workload or not reserved or reserved.get("status") != "True":
            continue
        amount = Decimal(0)
        for psa in ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or ():
            if (psa.get("flavors") or {}).get(resource) == flavor:
                amount += _num((psa.get("resourceUsage") or {}).get(resource))
        if amount:
            meta = wl.get("metadata") or {}
            pc = ((wl.get("spec") or {}).get("priorityClassRef") or {}).get("name", "no priority class")
            held.append((amount, f"{meta.get('name')} ({_fmt(amount)} {resource}, {pc})"))
    held.sort(key=lambda h: -h[0])
    return [h[1] for h in held]


def _counts(objects: Objects) -> str:
    status = (objects.cluster_queue or {}).get("status") or {}
    return (
        f"your queue: {status.get('admittedWorkloads', 0)} admitted, {status.get('reservingWorkloads', 0)} "
        f"holding quota, {status.get('pendingWorkloads', 0)} pending"
    )


def _pick(message: str, lines: dict[tuple[str, str], QuotaLine]) -> tuple[re.Match[str], str] | None:
    """Return the quota reason to explain: on an accelerator, and on a flavor the team has quota on, when there is one."""
    found = [(m, "unused") for m in _UNUSED.finditer(message)] + [
        (m, "maximum") for m in _MAXIMUM.finditer(message)
    ]

    def rank(item: tuple[re.Match[str], str]) -> tuple[bool, bool, bool]:
        match = item[0]
        line = lines.get((match["flavor"], match["resource"]))
        accelerator = any(h in match["resource"] for h in _ACCELERATOR_HINTS)
        return (line is not None and line.nominal > 0, accelerator, item[1] == "maximum")

    return max(found, key=rank) if found else None


def _wait_fix(team: TeamFacts, objects: Objects) -> list[str]:
    fix = [f"wait: it starts by itself when quota frees up (kubectl get workloads -n {objects.namespace})"]
    classes = team.classes or {}
    mine = ((objects.workload or {}).get("spec") or {}).get("priorityClassRef", {}).get("name")
    higher = [c for c, value in classes.items() if c != mine and value > classes.get(mine, 0)]
    if higher and team.preempts_own_work:
        fix.append(
            f"if it matters more than your team's running work, label it `kueue.x-k8s.io/priority-class: "
            f"{higher[0]}`: a higher class preempts your team's lower-priority work"
        )
    return fix


def _quota_diagnosis(
    team: TeamFacts, objects: Objects, *, match: re.Match[str], shape: str, message: str
) -> Diagnosis:
    flavor, resource = match["flavor"], match["resource"]
    from_policy = objects.cluster_queue is None
    lines = quota_lines(objects.cluster_queue if not from_policy else team.policy_queue)
    line = lines.get((flavor, resource))
    if line is not None and line.nominal == 0 and line.borrowing_limit == 0:
        # Kueue's message may name only flavors the team has no quota on (v0.19.2 writes such a message right
        # after a reclamation): then the team's own flavor of that resource decides, by its numbers
        own = max(
            (q for q in lines.values() if q.resource == resource and q.nominal > 0),
            key=lambda q: q.nominal,
            default=None,
        )
        if own is not None:
            line, flavor, shape = own, own.flavor, "unused"
    assert objects.workload is not None  # noqa: S101 - only called for a workload
    request = requested(objects.workload, resource) or _num(match.groupdict().get("request"))
    if line is None:
        return Diagnosis(
            Cause.OTHER,
            f"The job waits for quota of {resource} in flavor {flavor}; without your team's ClusterQueue this tool "
            "cannot tell whose quota.",
            (f"Kueue: {message}",),
            (
                f"add your queue to the input: kubectl get clusterqueue {names.cluster_queue(team.name)} -o json",
            ),
        )
    why_limit = _why_limit(team, line)
    source = " (from platform.yaml: your queue was not read)" if from_policy else ""
    numbers = [
        f"this job asks for {_fmt(request)} {resource} in flavor {flavor}",
        f"your team's guarantee: {_fmt(line.nominal)}; borrowing limit: {_fmt(line.borrowing_limit)} ({why_limit}); "
        f"ceiling: {_fmt(line.ceiling)}{source}",
    ]
    if not from_policy:
        numbers += [
            f"in use by your team now: {_fmt(line.used)} ({_fmt(line.borrowed)} of it borrowed)",
            _counts(objects),
        ]
    holders = _holders(objects, flavor, resource)
    if holders:
        numbers.append("held by: " + "; ".join(holders[:5]) + ("; ..." if len(holders) > 5 else ""))
    numbers.append(f"Kueue: {message}")
    if preempting := _PREEMPTING.search(message):
        numbers.append(f"Kueue is preempting {preempting['n']} workload(s) to make room for it")
    maximum = _num(match["maximum"]) if shape == "maximum" else None
    if from_policy and maximum is None and (line.ceiling is None or request <= line.ceiling):
        return Diagnosis(
            Cause.OTHER,
            f"The job waits for quota of {resource} in flavor {flavor}; it fits your team's ceiling of "
            f"{_fmt(line.ceiling)}, so it can run once quota frees up. What your team holds now is in your queue, "
            "which was not read.",
            tuple(numbers),
            (
                f"add your queue to the input: kubectl get clusterqueue {names.cluster_queue(team.name)} -o json",
                *_wait_fix(team, objects),
            ),
        )
    return _classify(team, objects, line=line, request=request, maximum=maximum, numbers=tuple(numbers))


def _why_limit(team: TeamFacts, line: QuotaLine) -> str:
    """Say where the borrowing limit comes from: the policy's field, or the team's queue."""
    if team.policy is None:
        return "from your team's ClusterQueue" if line.borrowing_limit else "your team does not borrow"
    platform, spec = team.policy.platform, team.policy.team
    sharing = platform.effective_sharing(spec)
    if not sharing.borrows:
        return f"sharing {sharing.value}: your team does not borrow"
    absolute = absolute_limit(spec, line.flavor)
    if absolute is not None:
        return f"{team.field(f'compute.absoluteBorrowLimits.{line.flavor}')} = {absolute}"
    return f"{team.field('compute.borrowLimit')} = {spec.compute.borrow_limit}% of the guarantee"


def _limit_field(team: TeamFacts, flavor: str) -> str:
    """Name the policy field that sets the team's borrowing limit on ``flavor``."""
    if team.policy is not None and absolute_limit(team.policy.team, flavor) is not None:
        return team.field(f"compute.absoluteBorrowLimits.{flavor}")
    return team.field("compute.borrowLimit")


def _classify(
    team: TeamFacts,
    objects: Objects,
    *,
    line: QuotaLine,
    request: Decimal,
    maximum: Decimal | None,
    numbers: tuple[str, ...],
) -> Diagnosis:
    ceiling = line.ceiling if maximum is None else maximum
    res = line.resource
    where = " in platform.yaml" if team.policy is not None else ""
    raise_limit = (
        f"ask the platform team to raise {_limit_field(team, line.flavor)} or "
        f"{team.field('compute.quotas')} (team {team.name}){where}"
    )
    if maximum is not None or (ceiling is not None and request > ceiling):
        return Diagnosis(
            Cause.BORROWING_CEILING,
            f"The job is larger than the most your team may ever hold: {_fmt(request)} {res} against a ceiling of "
            f"{_fmt(ceiling)} (guarantee {_fmt(line.nominal)} + borrowing limit {_fmt(line.borrowing_limit)}); "
            "it will never be admitted as it is.",
            numbers,
            (f"make the job smaller: at most {_fmt(ceiling)} {res} in flavor {line.flavor}", raise_limit),
        )
    if ceiling is not None and line.used + request > ceiling:
        if line.borrowing_limit == 0:
            return Diagnosis(
                Cause.OWN_QUOTA,
                f"The job waits for your team's own quota: {_fmt(line.used)} of your {_fmt(line.nominal)} {res} "
                f"are in use by your team's work, and your team does not borrow.",
                numbers,
                tuple(_wait_fix(team, objects)),
            )
        return Diagnosis(
            Cause.BORROWING_CEILING,
            f"Your team has reached its borrowing ceiling: it holds {_fmt(line.used)} {res} ({_fmt(line.borrowed)} "
            f"borrowed) of at most {_fmt(ceiling)}, and this job needs {_fmt(request)} more.",
            numbers,
            (*_wait_fix(team, objects), raise_limit),
        )
    if line.used + request > line.nominal:
        free = max(line.nominal - line.used, Decimal(0))
        return Diagnosis(
            Cause.LENDERS_BUSY,
            f"The job needs to borrow {_fmt(line.used + request - line.nominal)} {res} (within your ceiling of "
            f"{_fmt(ceiling)}), and the teams that lend have no idle capacity right now. Their queues are not "
            "visible to you.",
            numbers,
            (
                "wait: it starts when another team's idle capacity frees up or is returned",
                *(
                    [
                        f"or make it fit your own free guarantee ({_fmt(free)} {res} free now): it then runs "
                        "without borrowing and cannot be reclaimed"
                    ]
                    if free > 0
                    else []
                ),
            ),
            not_visible=True,
        )
    return Diagnosis(
        Cause.OWN_QUOTA,
        f"The job fits your team's guarantee ({_fmt(line.used)} + {_fmt(request)} <= {_fmt(line.nominal)} {res}), "
        "but part of it is lent to other teams' work right now; Kueue takes it back by preempting that work.",
        numbers,
        ("wait: reclaiming lent capacity takes as long as the borrowers need to stop (usually minutes)",),
    )


def _flavor_diagnosis(team: TeamFacts, objects: Objects, message: str) -> Diagnosis | None:
    lines = quota_lines(objects.cluster_queue)
    flavors = sorted({f for f, _ in lines}) or ["(your queue was not read)"]
    owned = sorted({f for (f, _), line in lines.items() if line.nominal > 0})
    cq_active = condition(objects.cluster_queue, "Active") or {}
    missing = _MISSING_FLAVORS.search(str(cq_active.get("message") or ""))
    not_found = _FLAVOR_NOT_FOUND.search(message)
    if missing or not_found:
        which = (missing["flavors"] if missing else (not_found["flavor"] if not_found else "")).rstrip(".,")
        return Diagnosis(
            Cause.FLAVOR_MISSING,
            f"Your team's queue names a ResourceFlavor that does not exist ({which}), so Kueue admits nothing "
            "from it. This is a platform problem, not your job's.",
            (f"ClusterQueue {names.cluster_queue(team.name)}: {cq_active.get('message') or message}",),
            (
                "tell the platform team: one ResourceFlavor per cluster.instanceGroups[].instanceType must exist "
                "(kubectl get resourceflavors)",
            ),
        )
    if _NO_AFFINITY.search(message) or _TAINT.search(message) or _UNAVAILABLE.search(message):
        return Diagnosis(
            Cause.FLAVOR_MISSING,
            "No flavor of your team's queue fits the job: it selects an instance type, a toleration or a "
            "resource that your queue does not offer.",
            (
                f"flavors of your queue: {', '.join(flavors)}",
                f"with quota for your team: {', '.join(owned) or 'none'}",
                f"Kueue: {message}",
            ),
            (
                "set the job's nodeSelector node.kubernetes.io/instance-type to one of: "
                + (", ".join(owned) or ", ".join(flavors)),
                "or remove the nodeSelector and let Kueue choose the flavor",
            ),
        )
    return None


def _placement_diagnosis(team: TeamFacts, objects: Objects, message: str) -> Diagnosis | None:
    """Return the first of: a partition profile without quota, a topology wait or request, no flavor that fits."""
    return (
        partition_diagnosis(team.name, objects, message)
        or topology_diagnosis(objects, message)
        or _flavor_diagnosis(team, objects, message)
    )


def diagnose_pending(team: TeamFacts, objects: Objects) -> Diagnosis:
    """Why the workload has no quota reservation: the first cause that its condition message and queue show."""
    assert objects.workload is not None  # noqa: S101 - the caller checked
    message = _message(objects.workload)
    if (placement := _placement_diagnosis(team, objects, message)) is not None:
        return placement
    if _INACTIVE.search(message):
        return Diagnosis(
            Cause.QUEUE_INACTIVE,
            "Your team's queue cannot admit work right now; this is not about your job.",
            (f"Kueue: {message}",),
            (
                f"tell the platform team (LocalQueue {names.local_queue(team.name)}, ClusterQueue {names.cluster_queue(team.name)})",
            ),
        )
    # without the team's queue, the policy's rendering tells which flavor the team has quota on
    queue = objects.cluster_queue or team.policy_queue
    if (picked := _pick(message, quota_lines(queue))) is not None:
        return _quota_diagnosis(team, objects, match=picked[0], shape=picked[1], message=message)
    if not message:
        return Diagnosis(
            Cause.NOT_EVALUATED,
            "Kueue has not looked at the job yet.",
            (f"its queue label: {(objects.workload.get('spec') or {}).get('queueName') or 'none'}",),
            (f"wait a few seconds, then run this again; the queue must be {names.local_queue(team.name)}",),
        )
    return Diagnosis(
        Cause.OTHER,
        "Kueue has not admitted the job; its message says why.",
        (f"Kueue: {message}", _counts(objects)),
        (
            f"kubectl describe workload {objects.workload.get('metadata', {}).get('name')} -n {objects.namespace}",
        ),
    )
