"""CPU and memory of one instance in Kubernetes base units, and those units written as quantities.

The Kueue ClusterQueues and the ResourceQuota backstop both count in millicores and MiB and floor there, so a
fraction of an instance (a quota in accelerators, vCPUs or memory; a percentage borrowing limit) gives both the
same figure: a pod Kueue admits is never refused by the backstop by a rounding of its own.
"""

from __future__ import annotations

from hyperpod_tenancy.policy.model import InstanceGroup, ResourceShape

__all__ = ["cpu_millis", "cpu_quantity", "memory_mib", "memory_quantity"]

_MILLI = 1000
_MIB_PER_GIB = 1024


def cpu_millis(group: InstanceGroup, shape: ResourceShape) -> int:
    """Return the CPU one instance of ``group`` offers kubelet, in millicores (physical cores x ``threadsPerCore``)."""
    return shape.vcpus * group.threads_per_core * _MILLI // 2


def memory_mib(shape: ResourceShape) -> int:
    """Return one instance's memory in MiB."""
    return shape.memory_gib * _MIB_PER_GIB


def cpu_quantity(millis: int) -> int | str:
    """Write millicores as Kubernetes does: whole cores as an int (``96``), else ``95500m``."""
    return millis // _MILLI if millis % _MILLI == 0 else f"{millis}m"


def memory_quantity(mib: int) -> str:
    """Write MiB as a quantity: ``2048Gi`` when whole GiB, else ``109226Mi``."""
    return f"{mib // _MIB_PER_GIB}Gi" if mib % _MIB_PER_GIB == 0 else f"{mib}Mi"
