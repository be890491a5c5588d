"""A team's LimitRange and ResourceQuotas: the backstop that holds whatever admission lets through."""

from __future__ import annotations

from hyperpod_tenancy.k8s.quantities import cpu_millis, cpu_quantity, memory_mib, memory_quantity
from hyperpod_tenancy.k8s.team_manifests._common import Manifest, _meta
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.borrowing import Resource, borrowing_limit, partition_borrowing_limit
from hyperpod_tenancy.policy.grains import guaranteed, partitions
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.mig import offered, partition_resource
from hyperpod_tenancy.policy.model import (
    InstanceGroup,
    Platform,
    ResourceShape,
    Team,
)

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


#: Extended resource of EFA interfaces (the AWS EFA Kubernetes device plugin).
EFA_RESOURCE = "vpc.amazonaws.com/efa"


#: Huge page resources of Linux nodes (Kubernetes "Manage HugePages").
HUGEPAGE_RESOURCES = ("hugepages-2Mi", "hugepages-1Gi")


#: ResourceQuota admitting no pod at a system priority class in a team namespace.
SYSTEM_PRIORITY_QUOTA_NAME = "no-system-priority"


#: The PriorityClasses every Kubernetes cluster creates for its own components. Any namespace may use them
#: (the Priority admission plugin stopped limiting them to ``kube-system`` in Kubernetes 1.17); a pod at
#: one preempts every tenant pod through kube-scheduler, outside Kueue.
SYSTEM_PRIORITY_CLASSES = ("system-node-critical", "system-cluster-critical")


#: Resource names the Neuron device plugin registers besides the one Kueue counts
#: (``aws.amazon.com/neurondevice``): whole devices under the legacy name and single NeuronCores
#: (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/k8s-neuron-device-plugin.html).
#: Requests for them are invisible to the ClusterQueue quota, so the backstop allows none.
_NEURON_ALIASES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore")


_NEURON_DEVICE = "aws.amazon.com/neurondevice"


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


def _shapes(platform: Platform) -> list[tuple[InstanceGroup, ResourceShape]] | None:
    """Return the first instance group of each instance type with its shape (None: a shape is unknown)."""
    found: dict[str, tuple[InstanceGroup, ResourceShape]] = {}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is None:
            return None
        found.setdefault(
            group.instance_type, (group, shape)
        )  # several groups of one type: the quota is per type
    return list(found.values())


def _ceiling(
    platform: Platform, team: Team, per_instance: int, instance_type: str, resource: Resource
) -> int:
    """Guarantee plus borrowing ceiling of ``per_instance`` units on ``instance_type`` (the one rule both use)."""
    nominal = guaranteed(platform, team, instance_type, per_instance, resource)
    return nominal + borrowing_limit(platform, team, instance_type, resource, per_instance)


def accelerator_ceiling(platform: Platform, team: Team) -> dict[str, int] | None:
    """Accelerators the team's pods may request at most, per extended resource name.

    Per instance type: the guarantee (``quotas[type]`` x accelerators per instance) plus what the team may
    borrow on top of it (:func:`~hyperpod_tenancy.policy.borrowing.borrowing_limit`, the rule both fairness
    backends render), summed per resource name. Every accelerator resource of the cluster is listed (0 where the
    team has no quota). ``None`` when an instance group's shape is unknown (neither catalogued nor set
    with ``resources``): its accelerator resource and count cannot be known, and a wrong figure would
    either stop honest work or cap nothing.
    """
    shapes = _shapes(platform)
    if shapes is None:
        return None
    ceiling: dict[str, int] = {}
    for group, shape in shapes:
        if shape.accelerators < 1:
            continue
        ceiling[shape.accelerator_resource] = ceiling.get(shape.accelerator_resource, 0) + _ceiling(
            platform, team, shape.accelerators, group.instance_type, Resource.ACCELERATORS
        )
        # a partitioned type's partitions (one group per type here): the team's own, plus what it may borrow
        held = partitions(platform, team, group.instance_type)
        for partition in offered(platform, group.instance_type, shape.accelerators):
            ceiling[partition_resource(partition)] = (
                ceiling.get(partition_resource(partition), 0)
                + held.get(partition, 0)
                + partition_borrowing_limit(platform, team, group.instance_type, partition)
            )
    if _NEURON_DEVICE in ceiling:
        for alias in _NEURON_ALIASES:
            ceiling.setdefault(alias, 0)
    return ceiling


def compute_ceiling(platform: Platform, team: Team) -> dict[str, str] | None:
    """Return the other resources that gate scheduling on HyperPod nodes, at the same guarantee + ceiling.

    ``requests.cpu`` (physical cores x ``threadsPerCore``, what kubelet offers), ``requests.memory`` (both in
    millicores and MiB before rounding, as the ClusterQueues count them),
    ``requests.vpc.amazonaws.com/efa`` (EFA interfaces: a pod that holds them blocks every multi-node job on the
    node even without a GPU) and ``requests.hugepages-2Mi`` / ``requests.hugepages-1Gi`` (at most the team's
    memory: huge pages are carved out of node memory but counted apart from ``memory``), each summed over the
    instance types like :func:`accelerator_ceiling`. ``None`` when an instance group's shape is unknown.
    """
    shapes = _shapes(platform)
    if shapes is None:
        return None
    millis = mib = efa = 0
    for group, shape in shapes:
        itype = group.instance_type
        # in the ClusterQueues' units, floored where they floor (hyperpod_tenancy.k8s.quantities)
        millis += _ceiling(platform, team, cpu_millis(group, shape), itype, Resource.CPU)
        mib += _ceiling(platform, team, memory_mib(shape), itype, Resource.MEMORY)
        efa += _ceiling(platform, team, shape.efa_interfaces, itype, Resource.EFA)
    memory = memory_quantity(mib)
    return {
        "requests.cpu": str(cpu_quantity(millis)),
        "requests.memory": memory,
        f"requests.{EFA_RESOURCE}": str(efa),
        **{f"requests.{size}": memory for size in HUGEPAGE_RESOURCES},
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
