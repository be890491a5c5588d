"""Each run's snapshot of the GPU partitions the teams' queues hold: the chargeback's ``partition_usage`` table.

The usage-report operator's ``clusterqueue`` snapshots count ``nvidia.com/gpu`` only, which partitioned nodes do not
offer (their GPUs are advertised as ``nvidia.com/mig-<profile>``), so the collector records the partitions
itself, every run, from the same ClusterQueues it reads for the gauges::

    s3://<bucket>/raw/partition_usage/year=YYYY/month=MM/day=DD/hour=HH/cluster=<cluster>/<YYYYMMDDTHHMMSSZ>.json

One JSON line per team ClusterQueue, flavor (the instance type) and partition resource of which the queue holds a
guarantee (nominal quota above 0, held or not: its billed period) or holds some (borrowed), every row of a run
with the run's scheduled time; a retried run rewrites the same object. A queue that covers a partition only to
borrow it writes no row while it holds none, so a run's rows number the teams with partition quotas, not every
team. A cluster where no queue holds or is guaranteed a partition writes nothing. Record (version :data:`SCHEMA_VERSION`)::

    {"schema_version": 1, "timestamp": "2026-07-01 02:05:00", "namespace": "hyperpod-ns-research",
     "instance_type": "ml.p5.48xlarge", "profile": "mig-1g.10gb", "slices": 1, "total": 14, "borrowed": 0}

``total`` and ``borrowed`` are the queue's ``status.flavorsUsage`` of the resource (what its admitted workloads
hold, and the part over its nominal quota); ``slices`` is the compute slices one partition of the profile holds
(``<g>g.<m>gb``: ``g`` of the GPU's 7), which the chargeback bills as ``slices / 7`` of a GPU.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.runtime.eviction_collector._common import _TEAM, LOG, SCHEMA_VERSION, _quantity

__all__ = [
    "PARTITION_RESOURCE_PREFIX",
    "SLICES_PER_GPU",
    "partition_key",
    "partition_lines",
    "partition_rows",
    "partition_slices",
]

#: Prefix of a partition resource: the NVIDIA device plugin's ``mixed`` strategy names one ``nvidia.com/mig-<profile>``.
PARTITION_RESOURCE_PREFIX = "nvidia.com/mig-"
#: A MIG profile as a resource names it, ``mig-<g>g.<m>gb``: ``g`` compute slices (the policy's
#: ``hyperpod_tenancy.policy.mig.slices`` reads the same form; a test keeps the two in step).
_PROFILE = re.compile(r"^mig-(?P<g>[1-7])g\.[0-9]+gb$")
#: Compute slices of a GPU (NVIDIA MIG User Guide): a partition of ``g`` slices is ``g / 7`` of a GPU.
SLICES_PER_GPU = 7


def partition_slices(resource: str) -> int | None:
    """Return the compute slices of one partition of ``resource`` (``nvidia.com/mig-3g.40gb`` -> 3); None if not one."""
    shape = _PROFILE.match(resource.removeprefix("nvidia.com/"))
    return int(shape["g"]) if shape is not None else None


def _guaranteed(queue: Mapping[str, Any]) -> set[tuple[str, str]]:
    """(flavor, resource) of every partition resource of which the queue has a nominal quota above 0."""
    held: set[tuple[str, str]] = set()
    for group in (queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                name = str(resource.get("name", ""))
                if name.startswith(PARTITION_RESOURCE_PREFIX) and _quantity(resource.get("nominalQuota")) > 0:
                    held.add((str(flavor.get("name")), name))
    return held


def partition_rows(
    cluster_queues: Sequence[Mapping[str, Any]], *, queue_prefix: str, queue_suffix: str, moment: dt.datetime
) -> list[dict[str, Any]]:
    """Return the run's rows: each team queue's guaranteed or held partitions, per flavor and profile (sorted).

    A resource whose profile is not ``mig-<g>g.<m>gb`` is left out and logged: its slices are unknown, so it
    cannot be billed (the chargeback then gives its capacity to the idle owner, and the log says why).
    """
    team_queue = re.compile(f"^{re.escape(queue_prefix)}{_TEAM}{re.escape(queue_suffix)}$")
    stamp = moment.strftime("%Y-%m-%d %H:%M:%S")
    rows: list[dict[str, Any]] = []
    for queue in cluster_queues:
        match = team_queue.match(str((queue.get("metadata") or {}).get("name")))
        if match is None:
            continue
        used: dict[tuple[str, str], tuple[int, int]] = {}
        for flavor_usage in (queue.get("status") or {}).get("flavorsUsage") or []:
            for resource in flavor_usage.get("resources") or []:
                name = str(resource.get("name", ""))
                if name.startswith(PARTITION_RESOURCE_PREFIX):
                    key = (str(flavor_usage.get("name")), name)
                    used[key] = (_quantity(resource.get("total")), _quantity(resource.get("borrowed")))
        in_use = {key for key, (total, _) in used.items() if total > 0}
        for flavor, resource in sorted(_guaranteed(queue) | in_use):
            profile, slices = resource.removeprefix("nvidia.com/"), partition_slices(resource)
            if slices is None:
                LOG.error(
                    "%s: %s is not a MIG profile (mig-<g>g.<m>gb); not recorded", match["team"], resource
                )
                continue
            total, borrowed = used.get((flavor, resource), (0, 0))
            rows.append(
                {
                    "schema_version": SCHEMA_VERSION,
                    "timestamp": stamp,
                    "namespace": f"{queue_prefix}{match['team']}",
                    "instance_type": flavor,
                    "profile": profile,
                    "slices": slices,
                    "total": total,
                    "borrowed": borrowed,
                }
            )
    return rows


def partition_key(prefix: str, cluster: str, moment: dt.datetime) -> str:
    """Return the object key of one run's snapshot (partitions of the run's scheduled time)."""
    return (
        f"{prefix}year={moment:%Y}/month={moment:%m}/day={moment:%d}/hour={moment:%H}/"
        f"cluster={cluster}/{moment:%Y%m%dT%H%M%SZ}.json"
    )


def partition_lines(rows: Sequence[Mapping[str, Any]]) -> str:
    """Return the rows as JSON lines (sorted keys), the body of :func:`partition_key`'s object."""
    return "".join(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n" for row in rows)
