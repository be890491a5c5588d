"""Why a workload asking for a GPU partition waits: the team holds no quota for that MIG profile.

Kueue v0.19.2 leaves ``couldn't assign flavors to pod set <ps>: resource <r> unavailable in ClusterQueue`` on the
Workload when no flavor of the team's queue covers a resource the pods request (``findFlavorForPodSets`` in
``pkg/scheduler/flavorassigner/flavorassigner.go``). For ``nvidia.com/mig-<profile>`` that is a profile no
partitioned group of the cluster makes, or one the team has no quota for: the job waits for ever as written.
The profiles the team may ask for are its queue's partition resources with a quota.
"""

from __future__ import annotations

import re

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.mig import PARTITION_RESOURCE_PREFIX
from hyperpod_tenancy.tools.explain.objects import Cause, Diagnosis, Objects

__all__ = ["partition_diagnosis"]

_UNAVAILABLE = re.compile(r"resource (?P<resource>nvidia\.com/mig-\S+) unavailable in ClusterQueue")


def _held(objects: Objects) -> dict[str, str]:
    """Return the partition resources the team's queue gives it a quota of, and how many (its ClusterQueue)."""
    held: dict[str, str] = {}
    for group in ((objects.cluster_queue or {}).get("spec") or {}).get("resourceGroups") or ():
        for flavor in group.get("flavors") or ():
            for resource in flavor.get("resources") or ():
                name, nominal = str(resource.get("name")), str(resource.get("nominalQuota", "0"))
                if name.startswith(PARTITION_RESOURCE_PREFIX) and nominal not in ("0", ""):
                    held[name] = f"{nominal} on {flavor.get('name')}"
    return held


def partition_diagnosis(team: str, objects: Objects, message: str) -> Diagnosis | None:
    """Diagnose a workload asking for a partition profile the team has no quota for (None: not the cause)."""
    match = _UNAVAILABLE.search(message)
    if match is None:
        return None
    resource = match["resource"]
    held = _held(objects)
    offered = ", ".join(f"{r} (your quota: {n})" for r, n in sorted(held.items()))
    return Diagnosis(
        Cause.PARTITION_PROFILE,
        f"No quota for this partition profile: your team's queue has none of {resource}, so the job waits for "
        "ever as written.",
        (f"Kueue: {message}", f"partitions your team holds: {offered or 'none, or your queue was not read'}"),
        (
            f"ask for a profile your team holds (resources.limits {next(iter(sorted(held)), 'nvidia.com/mig-<profile>')})"
            if held
            else "ask the platform team which partitions your team may use",
            f"or ask the platform team for a quota of {resource.removeprefix('nvidia.com/')} (ClusterQueue "
            f"{names.cluster_queue(team)})",
        ),
    )
