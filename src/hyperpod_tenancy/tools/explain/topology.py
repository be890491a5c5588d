"""Why a workload that asked for a network topology waits: no node of its level has room for all its pods.

Kueue v0.19.2 says so on the Workload's ``QuotaReserved=False`` condition, after ``couldn't assign flavors to pod
set <ps>: ``, in one of two ways. Where the topology-aware flavor is the last one tried, with its own reason
(``pkg/cache/scheduler/tas_flavor_snapshot.go`` ``notFitMessage``)::

    topology "<name>" doesn't allow to fit any of <n> pod(s)
    topology "<name>" allows to fit only <k> out of <n> pod(s)

and where the queue has other flavors, with theirs only: the topology-aware flavor's quota fits, its placement
does not, and Kueue goes on to the next flavors, each refused with ``Flavor "<f>" does not support
TopologyAwareScheduling`` (``pkg/scheduler/flavorassigner/tas_flavorassigner.go``), which is the message left
(seen on the local control plane). A job that pinned one of those flavors by its instance type asked for a
topology on a type that is not placed by topology, a different answer. The level the pod set asked for is on
the Workload (``spec.podSets[].topologyRequest.required`` or ``.preferred``, from the pod template's
``kueue.x-k8s.io/podset-required-topology`` / ``-preferred-topology``), and the accelerators it needs are its
requests: together, "waiting for a <level> network node with <n> free GPUs".
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from hyperpod_tenancy.policy.topology import NETWORK_LAYERS
from hyperpod_tenancy.tools.explain.objects import Cause, Diagnosis, Objects, requested

__all__ = ["topology_diagnosis"]

_NOT_FIT = re.compile(
    r"topology \"(?P<topology>[^\"]+)\" (?:doesn't allow to fit any of (?P<none>\d+)|allows to fit only "
    r"(?P<some>\d+) out of (?P<total>\d+)) (?P<unit>pod|slice)\(s\)"
)
_NOT_TAS = re.compile(r"Flavor \"(?P<flavor>[^\"]+)\" does not support TopologyAwareScheduling")
_ONLY_TAS = re.compile(r"Flavor \"(?P<flavor>[^\"]+)\" supports only TopologyAwareScheduling")
_INSTANCE_TYPE = "node.kubernetes.io/instance-type"
_ACCELERATORS = ("nvidia.com/gpu", "aws.amazon.com/neurondevice", "aws.amazon.com/neuron")


def _level(workload: dict[str, Any]) -> tuple[str, bool] | None:
    """Return the level the first pod set with a topology request asked for, and whether it is required."""
    for pod_set in (workload.get("spec") or {}).get("podSets") or ():
        request = pod_set.get("topologyRequest") or {}
        for key, required in (("required", True), ("preferred", False)):
            if request.get(key):
                return str(request[key]), required
    return None


def _level_text(level: str) -> str:
    if level in NETWORK_LAYERS:
        return (
            f"bottom-layer network node ({level})"
            if level == NETWORK_LAYERS[-1]
            else f"network node ({level})"
        )
    return f"node ({level})" if level == "kubernetes.io/hostname" else level


def _pinned(workload: dict[str, Any]) -> str | None:
    """Return the instance type the workload's pod sets pin with a node selector, if any."""
    for pod_set in (workload.get("spec") or {}).get("podSets") or ():
        selector = (((pod_set.get("template") or {}).get("spec")) or {}).get("nodeSelector") or {}
        if _INSTANCE_TYPE in selector:
            return str(selector[_INSTANCE_TYPE])
    return None


def topology_diagnosis(objects: Objects, message: str) -> Diagnosis | None:
    """Diagnose a workload waiting for a topology domain with room for it, or None when that is not the cause."""
    workload = objects.workload
    only = _ONLY_TAS.search(message)
    if only is not None and workload is not None and _level(workload) is None:
        return Diagnosis(
            Cause.FLAVOR_MISSING,
            f"The job runs on {only['flavor']}, which is placed by network topology, and asks for no topology: "
            "beside types that are not, Kueue admits a job there only if it asks for one.",
            (f"Kueue: {message}",),
            (
                'annotate the pod template with kueue.x-k8s.io/podset-unconstrained-topology: "true" (placed '
                "anywhere), or with kueue.x-k8s.io/podset-preferred-topology: <level>",
            ),
        )
    asked = _level(workload) if workload is not None else None
    match = _NOT_FIT.search(message)
    not_tas = {m["flavor"] for m in _NOT_TAS.finditer(message)}
    if workload is None or (match is None and not (asked and not_tas)):
        return None
    level, required = asked if asked is not None else ("(not recorded on the workload)", True)
    pinned = _pinned(workload)
    if match is None and pinned in not_tas:
        return Diagnosis(
            Cause.FLAVOR_MISSING,
            f"The job asks to be placed by network topology ({level}) on {pinned}, and {pinned} is not placed by "
            "topology on this cluster: no node of it can satisfy the request.",
            (f"asked: {'required' if required else 'preferred'} topology {level}", f"Kueue: {message}"),
            (
                "remove the kueue.x-k8s.io/podset-required-topology / -preferred-topology annotation, or",
                "choose an instance type the platform places by topology (policy: cluster.instanceGroups[]."
                "topologyAware)",
            ),
        )
    needs = [
        f"{_count(amount)} free {resource}"
        for resource in _ACCELERATORS
        if (amount := requested(workload, resource)) > 0
    ]
    pods = sum(int(ps.get("count", 1)) for ps in (workload.get("spec") or {}).get("podSets") or ())
    need = " and ".join(needs) or f"room for {pods} pod(s)"
    if match is not None:
        pods = int(match["none"] or match["total"])
        fits = f" ({'none' if match['none'] else 'only ' + match['some']} of them fit)"
    else:
        fits = ""
    where = _level_text(level)
    return Diagnosis(
        Cause.TOPOLOGY_DOMAIN,
        f"Waiting for a topology domain: one {where} with {need}. Your team's quota has room, but no single "
        f"{where} has room for its {pods} pod(s) at once{fits}.",
        (f"asked: {'required' if required else 'preferred'} topology {level}", f"Kueue: {message}"),
        (
            "wait: it is admitted as soon as one such domain has room (work on it finishes or is reclaimed)",
            f"or ask for a broader level (e.g. {NETWORK_LAYERS[-2]}) or fewer, larger pods",
            "or use kueue.x-k8s.io/podset-preferred-topology to be placed as close as possible, anywhere",
        ),
    )


def _count(amount: Decimal) -> str:
    return str(amount.normalize()) if amount == amount.to_integral() else str(amount)
