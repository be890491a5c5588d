"""A team's LimitRange and ResourceQuotas: the backstop that holds whatever admission lets through."""

from __future__ import annotations

from hyperpod_tenancy.k8s.ceilings import (
    EFA_RESOURCE,
    HUGEPAGE_RESOURCES,
    accelerator_ceiling,
    compute_ceiling,
)
from hyperpod_tenancy.k8s.team_manifests._common import Manifest, _meta
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, Team

__all__ = [
    "ACCELERATOR_QUOTA_NAME",
    "COMPUTE_QUOTA_NAME",
    "EFA_RESOURCE",
    "HUGEPAGE_RESOURCES",
    "SYSTEM_PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_QUOTA_NAME",
    "accelerator_ceiling",
    "compute_ceiling",
]

#: ResourceQuota capping a team namespace's accelerator requests at guarantee + borrowing ceiling.
ACCELERATOR_QUOTA_NAME = "accelerator-ceiling"


#: ResourceQuota capping CPU, memory, EFA interfaces and huge pages at guarantee + borrowing ceiling.
COMPUTE_QUOTA_NAME = "compute-ceiling"


#: ResourceQuota admitting no pod at a system priority class in a team namespace.
SYSTEM_PRIORITY_QUOTA_NAME = "no-system-priority"


#: The PriorityClasses every Kubernetes cluster creates for its own components. Any namespace may use them
#: (the Priority admission plugin stopped limiting them to ``kube-system`` in Kubernetes 1.17); a pod at
#: one preempts every tenant pod through kube-scheduler, outside Kueue.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


def _limit_range(team: Team) -> Manifest:
    """Container request defaults for the team namespace (applied only where a container sets none).

    ``defaultRequest`` cpu 250m / memory 512Mi: enough for sidecars and small helpers, and it makes every
    container count against the scheduler and Kueue. No default *limit*: a LimitRange ``default`` applies
    to every container without a limit of that resource, and GPU containers routinely set only
    ``nvidia.com/gpu`` (a limit, as extended resources require). A 4Gi default memory limit would OOM-kill
    such a training or inference container on its first batch, and a 2-CPU limit would throttle its data
    loaders; no single figure fits a pod that may own a whole 2 TiB node. A container that uses more than
    it requests is Burstable: kubelet evicts it first under node memory pressure, so it cannot starve
    pods that stay within their requests. No GPU defaults: accelerators must always be requested
    explicitly (Kueue and the ResourceQuota ``accelerator-ceiling`` count them).
    """
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta("container-defaults", team, names.namespace(team.name)),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "defaultRequest": {"cpu": "250m", "memory": "512Mi"},
                }
            ]
        },
    }


def _resource_quotas(platform: Platform, team: Team) -> list[Manifest]:
    """Render the quota backstop that holds whatever admission lets through.

    ``accelerator-ceiling``: ``requests.<resource>`` for every accelerator of the cluster at
    :func:`accelerator_ceiling` (Kubernetes allows only the ``requests.`` prefix for extended resources,
    whose requests always equal their limits; https://kubernetes.io/docs/concepts/policy/resource-quotas/
    #resource-quota-for-extended-resources). Kueue admits no more than that, so the quota never stops
    admitted work; it stops pods that bypass Kueue (a Job whose queue label is missing, a workload
    orphaned from its Workload) from taking GPUs beyond the team's share. Omitted when
    :func:`accelerator_ceiling` is unknown.

    ``compute-ceiling``: CPU, memory, EFA interfaces and huge pages at :func:`compute_ceiling`, so that a pod
    without a GPU cannot hold the cores, memory or EFA interfaces other teams' jobs need on the GPU nodes
    (Task Governance's quotas count accelerators, vCPUs and memory per instance type, not EFA: the
    ``ComputeQuotaResourceConfig`` of the SageMaker API has ``Accelerators``, ``VCpu`` and ``MemoryInGiB`` only).
    Every container has CPU and memory requests (the LimitRange's defaults), as a quota on them requires.

    ``no-system-priority``: ``pods: "0"`` scoped to the PriorityClasses :data:`SYSTEM_PRIORITY_CLASSES`
    (``scopeSelector`` ``PriorityClass`` ``In``; https://kubernetes.io/docs/concepts/policy/resource-quotas/
    #resource-quota-per-priorityclass), so no pod of the namespace can preempt other teams' pods through
    kube-scheduler. The team Role has no verbs on resourcequotas.
    """
    ns = names.namespace(team.name)
    quotas: list[Manifest] = []
    ceiling = accelerator_ceiling(platform, team)
    if ceiling:
        quotas.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": _meta(ACCELERATOR_QUOTA_NAME, team, ns),
                "spec": {"hard": {f"requests.{r}": str(n) for r, n in sorted(ceiling.items())}},
            }
        )
    compute = compute_ceiling(platform, team)
    if compute:
        quotas.append(
            {
                "apiVersion": "v1",
                "kind": "ResourceQuota",
                "metadata": _meta(COMPUTE_QUOTA_NAME, team, ns),
                "spec": {"hard": dict(sorted(compute.items()))},
            }
        )
    quotas.append(
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": _meta(SYSTEM_PRIORITY_QUOTA_NAME, team, ns),
            "spec": {
                "hard": {"pods": "0"},
                "scopeSelector": {
                    "matchExpressions": [
                        {
                            "scopeName": "PriorityClass",
                            "operator": "In",
                            "values": list(SYSTEM_PRIORITY_CLASSES),
                        }
                    ]
                },
            },
        }
    )
    return quotas
