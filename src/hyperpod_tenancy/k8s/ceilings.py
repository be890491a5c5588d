"""What a team's pods may request at most: its guarantee plus what it may borrow, per resource.

The one derivation of the ceilings that the ResourceQuota backstop (:mod:`hyperpod_tenancy.k8s.team_manifests`)
enforces and the namespace's accelerator entitlement labels (:mod:`hyperpod_tenancy.k8s.labels`) announce to
admission.
"""

from __future__ import annotations

from hyperpod_tenancy.k8s.quantities import cpu_millis, cpu_quantity, memory_mib, memory_quantity
from hyperpod_tenancy.policy.borrowing import Resource, borrowing_limit, partition_borrowing_limit
from hyperpod_tenancy.policy.grains import guaranteed, partitions
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.mig import offered, partition_resource
from hyperpod_tenancy.policy.model import InstanceGroup, Platform, ResourceShape, Team

__all__ = [
    "EFA_RESOURCE",
    "HUGEPAGE_RESOURCES",
    "accelerator_ceiling",
    "accelerator_ceilings_known",
    "accelerator_resources",
    "compute_ceiling",
]

#: Extended resource of EFA interfaces (the AWS EFA Kubernetes device plugin).
EFA_RESOURCE = "vpc.amazonaws.com/efa"


#: Huge page resources of Linux nodes (Kubernetes "Manage HugePages").
HUGEPAGE_RESOURCES = ("hugepages-2Mi", "hugepages-1Gi")


#: Resource names the Neuron device plugin registers besides the one Kueue counts
#: (``aws.amazon.com/neurondevice``): whole devices under the legacy name and single NeuronCores
#: (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/containers/tutorials/k8s-neuron-device-plugin.html).
#: Requests for them are invisible to the ClusterQueue quota, so the backstop allows none.
_NEURON_ALIASES = ("aws.amazon.com/neuron", "aws.amazon.com/neuroncore")


_NEURON_DEVICE = "aws.amazon.com/neurondevice"


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
    ceiling = dict.fromkeys(accelerator_resources(platform), 0)
    for group, shape in shapes:
        if shape.accelerators < 1:
            continue
        ceiling[shape.accelerator_resource] += _ceiling(
            platform, team, shape.accelerators, group.instance_type, Resource.ACCELERATORS
        )
        # a partitioned type's partitions (one group per type here): the team's own, plus what it may borrow
        held = partitions(platform, team, group.instance_type)
        for partition in offered(platform, group.instance_type, shape.accelerators):
            ceiling[partition_resource(partition)] += held.get(partition, 0) + partition_borrowing_limit(
                platform, team, group.instance_type, partition
            )
    return ceiling


def accelerator_ceilings_known(platform: Platform) -> bool:
    """Whether every instance group's shape is known, so that the accelerator ceilings are (not ``None``)."""
    return _shapes(platform) is not None


def accelerator_resources(platform: Platform) -> tuple[str, ...]:
    """Return every accelerator resource the cluster's nodes advertise, sorted.

    Each accelerated type's resource (``nvidia.com/gpu``, ``aws.amazon.com/neurondevice`` with its two other
    names), and the partitions (``nvidia.com/mig-<profile>``) of each partitioned type. Empty when an instance
    group's shape is unknown.
    """
    found: set[str] = set()
    for group, shape in _shapes(platform) or ():
        if shape.accelerators > 0:
            found.add(shape.accelerator_resource)
            found.update(map(partition_resource, offered(platform, group.instance_type, shape.accelerators)))
    if _NEURON_DEVICE in found:
        found.update(_NEURON_ALIASES)
    return tuple(sorted(found))


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
