"""Each team's live GPU gauges (in use, borrowed, guarantee, ceiling), from the ClusterQueues and Workloads."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from hyperpod_tenancy.runtime.eviction_collector._common import (
    _TEAM,
    GAUGES,
    GPU_RESOURCE,
    WORKLOADS_PATH,
    _quantity,
)
from hyperpod_tenancy.runtime.eviction_collector.partitions import (
    PARTITION_RESOURCE_PREFIX,
    SLICES_PER_GPU,
    partition_slices,
)
from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
    list_objects,
)

__all__ = ["gauge_metric_data", "gpu_flavors", "list_workloads", "team_gpu_gauges"]


# ---------------------------------------------------------------------- EKS access
def list_workloads(endpoint: str, token: str, ca_pem: str, *, timeout: float = 30) -> list[dict[str, Any]]:
    """Return every Workload of the cluster (all namespaces, all pages), over TLS verified against ``ca_pem``."""
    return list_objects(endpoint, token, ca_pem, WORKLOADS_PATH, timeout=timeout)


# ---------------------------------------------------------------------- live gauges
#: A queue's quota of one resource in one flavor: (nominal, borrowing limit, lending limit).
_Quota = tuple[int, int | None, int | None]


def _weight(resource: str) -> Fraction | None:
    """GPUs one unit of ``resource`` is: 1 of ``nvidia.com/gpu``, slices / 7 of a partition; None: not a GPU."""
    if resource == GPU_RESOURCE:
        return Fraction(1)
    slices = partition_slices(resource) if resource.startswith(PARTITION_RESOURCE_PREFIX) else None
    return None if slices is None else Fraction(slices, SLICES_PER_GPU)


def _quotas(queue: Mapping[str, Any]) -> dict[tuple[str, str], _Quota]:
    """(flavor, resource) -> quota of every GPU resource (whole GPUs and partitions) in a ClusterQueue's spec."""
    found: dict[tuple[str, str], _Quota] = {}
    for group in (queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                name = str(resource.get("name"))
                if _weight(name) is not None:
                    borrow, lend = resource.get("borrowingLimit"), resource.get("lendingLimit")
                    found[(str(flavor.get("name")), name)] = (
                        _quantity(resource.get("nominalQuota")),
                        None if borrow is None else _quantity(borrow),
                        None if lend is None else _quantity(lend),
                    )
    return found


def _gpu_quotas(queue: Mapping[str, Any]) -> dict[str, _Quota]:
    """Flavor -> (nominal, borrowing limit, lending limit) of ``nvidia.com/gpu`` in a ClusterQueue's spec."""
    return {flavor: quota for (flavor, resource), quota in _quotas(queue).items() if resource == GPU_RESOURCE}


def _gpus(count: Fraction) -> int | float:
    """Write a count of GPUs as published: whole, or to a thousandth where partitions make a fraction of one."""
    return count.numerator if count.denominator == 1 else round(float(count), 3)


def team_gpu_gauges(
    cluster_queues: Sequence[Mapping[str, Any]], *, queue_prefix: str, queue_suffix: str
) -> dict[str, dict[str, int | float]]:
    """Team -> :data:`GAUGES` (GPUs) from the teams' ClusterQueues, sorted by team.

    A team's ClusterQueue is named ``<queue_prefix><team><queue_suffix>`` (the platform passes its names'
    ``NAMESPACE_PREFIX`` and ``CLUSTER_QUEUE_SUFFIX``).

    ``GpuGuarantee`` is the queue's ``nominalQuota`` of ``nvidia.com/gpu`` summed over flavors; ``GpuCeiling`` what
    it may reach by borrowing: per flavor the guarantee plus what the other queues of its cohort may lend
    (their ``lendingLimit``, else their nominal quota), capped by its own ``borrowingLimit`` (the guarantee
    alone without a cohort); ``GpusInUse`` and ``GpusBorrowed`` are ``status.flavorsUsage``'s ``total`` and
    ``borrowed``. GPU partitions (``nvidia.com/mig-<g>g.<m>gb``) count the same way, each at ``g / 7`` of a GPU
    (its compute slices), so a team holding 14 one-slice partitions has 2 GPUs in use. Queues that are not a
    team's are not reported.
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    quotas = {str((q.get("metadata") or {}).get("name")): _quotas(q) for q in cluster_queues}
    cohorts = {
        str((q.get("metadata") or {}).get("name")): (q.get("spec") or {}).get("cohortName")
        for q in cluster_queues
    }
    gauges: dict[str, dict[str, int | float]] = {}
    for queue in cluster_queues:
        name = str((queue.get("metadata") or {}).get("name"))
        match = team_queue.match(name)
        if match is None:
            continue
        guarantee = ceiling = Fraction(0)
        for key, (nominal, borrow, _lend) in quotas[name].items():
            weight = _weight(key[1]) or Fraction(0)
            guarantee += nominal * weight
            cohort = cohorts[name]
            lendable = 0
            for other_name, other in quotas.items():
                if other_name == name or not cohort or cohorts[other_name] != cohort or key not in other:
                    continue
                other_nominal, _borrow, other_lend = other[key]
                lendable += other_nominal if other_lend is None else other_lend
            ceiling += (nominal + (min(lendable, borrow) if borrow is not None else lendable)) * weight
        used = borrowed = Fraction(0)
        for flavor_usage in (queue.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor_usage.get("resources") or []:
                held = _weight(str(resource.get("name")))
                if held is not None:
                    used += _quantity(resource.get("total")) * held
                    borrowed += _quantity(resource.get("borrowed")) * held
        gauges[match["team"]] = {
            "GpusInUse": _gpus(used),
            "GpusBorrowed": _gpus(borrowed),
            "GpuGuarantee": _gpus(guarantee),
            "GpuCeiling": _gpus(ceiling),
        }
    return dict(sorted(gauges.items()))


def gpu_flavors(
    cluster_queues: Sequence[Mapping[str, Any]], *, queue_prefix: str, queue_suffix: str
) -> dict[str, list[str]]:
    """Team namespace (``<queue_prefix><team>``) -> the flavors in which the team's ClusterQueue can hold GPUs.

    A flavor counts where the queue's ``nvidia.com/gpu`` has a nominal quota, or may borrow it from a cohort
    (``borrowingLimit`` unset or above 0). Kueue clears a preempted Workload's ``status.admission`` (the flavor
    it ran on) as soon as its pods are gone, before the collector's next run, so the flavor of an eviction is
    read from here: unambiguous where the team's queue can hold GPUs in one flavor only.
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    found: dict[str, list[str]] = {}
    for queue in cluster_queues:
        match = team_queue.match(str((queue.get("metadata") or {}).get("name")))
        if match is None:
            continue
        in_cohort = bool((queue.get("spec") or {}).get("cohortName"))
        found[f"{queue_prefix}{match['team']}"] = [
            flavor
            for flavor, (nominal, borrow, _lend) in _gpu_quotas(queue).items()
            if nominal > 0 or (in_cohort and (borrow is None or borrow > 0))
        ]
    return found


def gauge_metric_data(
    gauges: Mapping[str, Mapping[str, int | float]], *, cluster: str, timestamp: dt.datetime
) -> list[dict[str, Any]]:
    """``PutMetricData`` entries of :func:`team_gpu_gauges` (dimensions ``Cluster`` and ``Team``)."""
    return [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": "Cluster", "Value": cluster}, {"Name": "Team", "Value": team}],
            "Timestamp": timestamp,
            "Value": float(values[metric]),
            "Unit": "Count",
        }
        for team, values in gauges.items()
        for metric in GAUGES
    ]
