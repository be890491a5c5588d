"""What ``hyperpod-tenancy explain`` reads and what it answers: the objects around one Kueue Workload, and a diagnosis.

:class:`Objects` holds them as the API returns them (plain JSON dicts); :func:`objects_from_documents` builds it
from the documents of an offline file (a Workload, a ``List``, or several documents one after the other, as
``kubectl get ... -o json`` writes them). The helpers read conditions and Kubernetes quantities.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from hyperpod_tenancy.policy import names

__all__ = [
    "KUEUE_GROUP",
    "Cause",
    "Diagnosis",
    "ExplainInputError",
    "Objects",
    "condition",
    "flatten",
    "objects_from_documents",
    "owner_names",
    "parse_quantity",
    "requested",
    "select_workload",
]

#: API group of the Kueue objects.
KUEUE_GROUP = "kueue.x-k8s.io"

Obj = dict[str, Any]

_SUFFIXES = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


class Cause(enum.StrEnum):
    """What holds a workload (the ``cause`` of a :class:`Diagnosis`)."""

    #: Waiting for the team's own guaranteed quota (in use by the team's own work, or lent and being reclaimed).
    OWN_QUOTA = "own-quota"
    #: The team's borrowing ceiling (guarantee + ``borrowLimit``) is reached, or the job is larger than it.
    BORROWING_CEILING = "borrowing-ceiling"
    #: Needs to borrow, within the ceiling, and the lenders have no idle capacity (other teams' queues).
    LENDERS_BUSY = "lenders-busy"
    #: The ClusterQueue names a ResourceFlavor that does not exist, or the job selects an instance type its
    #: queue has no flavor for.
    FLAVOR_MISSING = "flavor-missing"
    #: The job's priority class is not one the team is entitled to.
    PRIORITY_NOT_ENTITLED = "priority-not-entitled"
    #: Preempted by a reclaiming or higher-priority workload.
    PREEMPTED = "preempted"
    #: Admitted, and its pods are running (or starting).
    ADMITTED = "admitted"
    #: Admitted, but Kubernetes cannot place its pods (taints, EFA, affinity, no node of the type).
    PODS_UNSCHEDULABLE = "pods-unschedulable"
    #: The home-directory init container the POSIX identity webhook injects fails.
    HOME_DIRECTORY = "home-directory"
    #: Denied at admission by one of the platform's policies or webhooks.
    ADMISSION_DENIED = "admission-denied"
    #: The POSIX identity webhook does not answer and its ``failurePolicy`` is ``Fail``.
    WEBHOOK_UNAVAILABLE = "webhook-unavailable"
    #: The job asked for a network topology level and no domain of that level has room for all its pods at once.
    TOPOLOGY_DOMAIN = "topology-domain"
    #: The job asks for a GPU partition profile the team holds no quota for.
    PARTITION_PROFILE = "partition-profile"
    #: The team's queue cannot admit anything (inactive, stopped, missing or not selecting the namespace).
    QUEUE_INACTIVE = "queue-inactive"
    #: Kueue has not looked at the workload yet.
    NOT_EVALUATED = "not-evaluated"
    #: The workload finished.
    FINISHED = "finished"
    #: Pending for a reason this tool does not know; Kueue's own message is shown.
    OTHER = "other"


@dataclass(frozen=True)
class Diagnosis:
    """What holds the workload, for a team member: a plain sentence, then the numbers, then what to do.

    ``not_visible`` is set only for :attr:`Cause.LENDERS_BUSY`: the one fact that needs other teams'
    ClusterQueues, which a team member may not read.
    """

    cause: Cause
    #: One plain sentence.
    summary: str
    #: The numbers and facts behind it, one per line.
    details: tuple[str, ...] = ()
    #: What to do: exact commands or policy fields.
    fix: tuple[str, ...] = ()
    #: Part of the answer depends on objects the team member cannot read.
    not_visible: bool = False

    def render(self) -> str:
        """Render the diagnosis as the command prints it."""
        lines = [self.summary]
        lines += [f"  {d}" for d in self.details]
        if self.fix:
            lines.append("What to do:")
            lines += [f"  - {f}" for f in self.fix]
        lines.append(f"(cause: {self.cause.value})")
        return "\n".join(lines)


class ExplainInputError(Exception):
    """The input cannot be explained: unreadable, malformed, or the object is not there (one line, for the user)."""


def parse_quantity(value: object) -> Decimal | None:
    """Return a Kubernetes quantity (``8``, ``500m``, ``64Gi``) as a number; None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if match is None:
        return None
    try:
        return Decimal(match[1]) * _SUFFIXES[match[2] or ""]
    except InvalidOperation:
        return None


def condition(obj: Mapping[str, Any] | None, kind: str) -> Obj | None:
    """Return the status condition of type ``kind`` of ``obj`` (None when absent)."""
    if not obj:
        return None
    for cond in (obj.get("status") or {}).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def owner_names(obj: Mapping[str, Any]) -> list[str]:
    """Names of the owners of ``obj`` (its ownerReferences), controller first."""
    refs = [r for r in (obj.get("metadata") or {}).get("ownerReferences") or () if isinstance(r, dict)]
    refs.sort(key=lambda r: not r.get("controller"))
    return [str(r.get("name")) for r in refs if r.get("name")]


def flatten(documents: Iterable[object]) -> list[Obj]:
    """Every object of ``documents``, the items of ``List``-kinded documents (``kubectl -o json``) expanded.

    Raises:
        ExplainInputError: a document is not a Kubernetes object (no ``kind``).

    """
    out: list[Obj] = []
    for doc in documents:
        if doc is None:
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
            raise ExplainInputError(
                "every document must be a Kubernetes object with a `kind` (or a List of them)"
            )
        if doc["kind"] == "List" or (doc["kind"].endswith("List") and isinstance(doc.get("items"), list)):
            out += flatten(doc.get("items") or ())
        else:
            out.append(doc)
    return out


def _is_kueue(obj: Mapping[str, Any], kind: str) -> bool:
    return obj.get("kind") == kind and str(obj.get("apiVersion", "")).startswith(f"{KUEUE_GROUP}/")


@dataclass(frozen=True)
class Objects:
    """The objects a diagnosis reads, as the API returns them (plain dicts).

    ``workload`` is the Workload to explain (None: none exists, e.g. admission denied the job), ``cluster_queue``
    the team's own ClusterQueue (None when unknown), ``workloads`` every Workload of the team's namespace (the
    target included: what uses the quota), ``events`` and ``pods`` those of the workload and its job, and
    ``denials`` admission error texts given on the command line (``--denial``).
    """

    namespace: str
    workload: Obj | None = None
    cluster_queue: Obj | None = None
    workloads: tuple[Obj, ...] = ()
    events: tuple[Obj, ...] = ()
    pods: tuple[Obj, ...] = ()
    denials: tuple[str, ...] = ()
    #: Name asked for (a Workload or its job), when one was.
    asked: str | None = None
    #: Reads made to build this (live only): ``(verb, group, resource, namespace or None, name)``.
    reads: tuple[tuple[str, str, str, str | None, str], ...] = field(default=(), compare=False)

    @property
    def owner_uids(self) -> set[str]:
        """UIDs of the workload's owners (its job), to find the job's pods and events."""
        if self.workload is None:
            return set()
        refs = (self.workload.get("metadata") or {}).get("ownerReferences") or ()
        return {str(r["uid"]) for r in refs if isinstance(r, dict) and r.get("uid")}


def select_workload(workloads: Sequence[Obj], asked: str | None) -> Obj | None:
    """Return the Workload named ``asked``, or owned by a job named ``asked``; the only one when nothing is asked.

    Raises:
        ExplainInputError: nothing is asked and there are several Workloads to choose from.

    """
    if asked is None:
        if len(workloads) > 1:
            found = ", ".join(sorted(str((w.get("metadata") or {}).get("name")) for w in workloads))
            raise ExplainInputError(f"the input holds several Workloads ({found}); name the one to explain")
        return workloads[0] if workloads else None
    for wl in workloads:
        if (wl.get("metadata") or {}).get("name") == asked:
            return wl
    for wl in workloads:
        if asked in owner_names(wl):
            return wl
    return None


def objects_from_documents(
    documents: Iterable[object], *, asked: str | None, namespace: str | None, denials: Sequence[str] = ()
) -> Objects:
    """Build :class:`Objects` from the documents of an offline file.

    The file holds a Workload and whatever else is at hand: its ClusterQueue, the Events and Pods of the
    namespace, other Workloads of the namespace. ``asked`` picks the Workload (by its name or its job's name)
    when there are several; ``namespace`` defaults to the Workload's.

    Raises:
        ExplainInputError: a document is not a Kubernetes object, several Workloads and none asked for, or no
            namespace can be told.

    """
    objs = flatten(documents)
    workloads = [o for o in objs if _is_kueue(o, "Workload")]
    if namespace is not None:
        workloads = [w for w in workloads if (w.get("metadata") or {}).get("namespace") in (None, namespace)]
    target = select_workload(workloads, asked)
    if namespace is None:
        if target is not None:
            namespace = (target.get("metadata") or {}).get("namespace")
        else:
            spaces = {(o.get("metadata") or {}).get("namespace") for o in objs} - {None}
            namespace = spaces.pop() if len(spaces) == 1 else None
    if not namespace:
        raise ExplainInputError(
            f"cannot tell the team namespace from the input: pass -n {names.namespace('<team>')}"
        )
    queues = [o for o in objs if _is_kueue(o, "ClusterQueue")]
    admitted_in = ((target or {}).get("status") or {}).get("admission") or {}
    # the team's own queue: where it was admitted, else the one named after the namespace
    wanted = admitted_in.get("clusterQueue") or f"{namespace}{names.CLUSTER_QUEUE_SUFFIX}"
    # never another team's queue, even when the file holds one
    cluster_queue = next((q for q in queues if q.get("metadata", {}).get("name") == wanted), None)
    in_namespace = [o for o in objs if (o.get("metadata") or {}).get("namespace") in (None, namespace)]
    return Objects(
        namespace=str(namespace),
        workload=target,
        cluster_queue=cluster_queue,
        workloads=tuple(workloads),
        events=tuple(o for o in in_namespace if o.get("kind") == "Event"),
        pods=tuple(o for o in in_namespace if o.get("kind") == "Pod" and o.get("apiVersion") == "v1"),
        denials=tuple(denials),
        asked=asked,
    )


def _amount(value: object) -> Decimal:
    return parse_quantity(value) or Decimal(0)


def requested(workload: dict[str, Any], resource: str) -> Decimal:
    """Total ``resource`` the workload asks for, over its pod sets (``status.resourceRequests``, else the spec)."""
    status = (workload.get("status") or {}).get("resourceRequests")
    if status:
        return sum((_amount((ps.get("resources") or {}).get(resource)) for ps in status), Decimal(0))
    total = Decimal(0)
    for ps in (workload.get("spec") or {}).get("podSets") or ():
        spec = ((ps.get("template") or {}).get("spec")) or {}
        per_pod = Decimal(0)
        for container in spec.get("containers") or ():
            res = container.get("resources") or {}
            per_pod += _amount(
                (res.get("requests") or {}).get(resource, (res.get("limits") or {}).get(resource))
            )
        total += per_pod * int(ps.get("count", 1))
    return total
