"""What the admission policies share: their names, CEL quoting, the request and label tests, the pod-spec walkers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hyperpod_tenancy.k8s import vap, workloads
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.policy import names

__all__ = [
    "ALLOWED_POD_PRIORITY_CLASSES",
    "CHECKPOINT_POLICY",
    "DELETE_POLICY",
    "FSX_ROOT",
    "POD_SPEC_POLICY",
    "WORKLOAD_POLICY",
    "WORKLOAD_RESOURCES",
]

#: Policy (and binding) checking the Kueue labels, owner references and finalizers of tenant workloads.
WORKLOAD_POLICY = "hyperpod-tenancy-workload-labels"


#: Policy (and binding) requiring a checkpoint declaration on work that can be preempted: at a preemptible class,
#: on borrowed capacity, or by its own team's work at a higher class.
CHECKPOINT_POLICY = "hyperpod-tenancy-checkpoints"


#: Policy (and binding) checking what actually runs: the PodSpecs of workloads and pods.
POD_SPEC_POLICY = "hyperpod-tenancy-pod-specs"


#: Policy (and binding) denying orphaning deletes of workloads.
DELETE_POLICY = "hyperpod-tenancy-workload-deletes"


#: Mount point of the shared FSx for Lustre file system; each team owns ``/fsx/<team>`` (from
#: :mod:`hyperpod_tenancy.policy.names`).
FSX_ROOT = names.FSX_ROOT


#: The workload kinds the policies match: the kinds of the one table of :mod:`hyperpod_tenancy.k8s.workloads`
#: whose API the platform installs (:func:`~hyperpod_tenancy.k8s.workloads.served_kinds`).
WORKLOAD_RESOURCES: tuple[WorkloadKindSpec, ...] = workloads.served_kinds()


#: Kubernetes PriorityClasses a pod in a tenant namespace may name. None: the platform defines no
#: PriorityClass for tenants (workload priority is the Kueue ``kueue.x-k8s.io/priority-class`` label, which
#: kube-scheduler never sees). Should the cluster ever get a ``globalDefault`` PriorityClass, add it here.
ALLOWED_POD_PRIORITY_CLASSES: tuple[str, ...] = ()


_OPERATIONS = ("CREATE", "UPDATE")


# A path segment ".." (would escape the team directory).
_PARENT_SEGMENT = "(^|/)[.][.](/|$)"


_q = vap.cel_quote


_cel_list = vap.cel_list


def _groups() -> dict[str, list[WorkloadKindSpec]]:
    groups: dict[str, list[WorkloadKindSpec]] = {}
    for kind in WORKLOAD_RESOURCES:
        groups.setdefault(kind.group, []).append(kind)
    return groups


def _label_set(key: str) -> str:
    return f"(has(object.metadata.labels) && {_q(key)} in object.metadata.labels)"


def _label(key: str) -> str:
    return f"object.metadata.labels[{_q(key)}]"


def _namespace_label_set(key: str) -> str:
    return f"(has(namespaceObject.metadata.labels) && {_q(key)} in namespaceObject.metadata.labels)"


def _namespace_label(key: str) -> str:
    return f"namespaceObject.metadata.labels[{_q(key)}]"


def _is_resource(kind: WorkloadKindSpec) -> str:
    return f"(request.resource.group == {_q(kind.group)} && request.resource.resource == {_q(kind.resource)})"


def _from_team_member() -> dict[str, str]:
    """Match condition: the request is not sent by a controller of :data:`workloads.CONTROLLERS`."""
    return vap.not_sent_by("sent-by-a-team-member", workloads.controller_usernames())


def _not_being_deleted() -> dict[str, str]:
    """Match condition: finalizers of an object being deleted can always be removed."""
    return {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"}


def _rules(operations: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": list(operations),
            "resources": [k.resource for k in kinds],
            "scope": "Namespaced",
        }
        for group, kinds in _groups().items()
    ]


def _walk(base: str, segments: Sequence[str], check: Callable[[str], str], depth: int = 0) -> str:
    """CEL that applies ``check`` to every value at a ``pod_specs`` path below ``base`` (absent parts pass)."""
    if not segments:
        return check(base)
    segment, rest = segments[0], segments[1:]
    if segment.endswith("[]"):
        field, var = segment[:-2], f"i{depth}"
        inner = _walk(var, rest, check, depth + 1)
        return f"(!has({base}.{field}) || {base}.{field}.all({var}, {inner}))"
    if segment.endswith("{}"):
        field, var = segment[:-2], f"k{depth}"
        inner = _walk(f"{base}.{field}[{var}]", rest, check, depth + 1)
        return f"(!has({base}.{field}) || {base}.{field}.all({var}, {inner}))"
    return f"(!has({base}.{segment}) || {_walk(f'{base}.{segment}', rest, check, depth)})"


def _walk_any(base: str, segments: Sequence[str], check: Callable[[str], str], depth: int = 0) -> str:
    """CEL that is true when ``check`` holds for at least one value at a ``pod_specs`` path (absent: false)."""
    if not segments:
        return check(base)
    segment, rest = segments[0], segments[1:]
    if segment.endswith("[]"):
        field, var = segment[:-2], f"i{depth}"
        return (
            f"(has({base}.{field}) && {base}.{field}.exists({var}, {_walk_any(var, rest, check, depth + 1)}))"
        )
    if segment.endswith("{}"):
        field, var = segment[:-2], f"k{depth}"
        inner = _walk_any(f"{base}.{field}[{var}]", rest, check, depth + 1)
        return f"(has({base}.{field}) && {base}.{field}.exists({var}, {inner}))"
    return f"(has({base}.{segment}) && {_walk_any(f'{base}.{segment}', rest, check, depth)})"


def _for_every_pod_spec(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for every PodSpec of the workload under review, whatever its kind."""
    return " && ".join(
        f"(!{_is_resource(kind)} || ({' && '.join(_walk('object', p.split('.'), check) for p in kind.pod_specs)}))"
        for kind in WORKLOAD_RESOURCES
        if kind.pod_specs
    )


def _for_some_pod_spec(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for at least one PodSpec of the workload under review."""
    return (
        "("
        + " || ".join(
            f"({_is_resource(kind)} && ({' || '.join(_walk_any('object', p.split('.'), check) for p in kind.pod_specs)}))"
            for kind in WORKLOAD_RESOURCES
            if kind.pod_specs
        )
        + ")"
    )
