"""What an amount of one instance type's compute is, resource by resource: the grains of quotas and borrow limits.

A quota or an absolute borrow limit names whole ``instances``, ``accelerators``, or ``vcpus`` and/or ``memoryGiB``
(:class:`~hyperpod_tenancy.policy.model.ResourceAmount`). :func:`instance_fractions` reads it as a fraction of one
instance per resource, the way the SageMaker API fills a ``ComputeQuotaResourceConfig`` that names one figure:
accelerators bring vCPUs, memory and EFA interfaces in the instance's ratio; vCPUs or memory bring the other in
the ratio and no accelerators. Every consumer (the Kueue ClusterQueues, the ResourceQuota backstop, ``plan``, the
chargeback) multiplies the fraction by one instance's amount in its own unit and floors the product
(:func:`guaranteed`).
"""

from __future__ import annotations

import enum
from decimal import Decimal
from fractions import Fraction

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.mig import COMPUTE_SLICES, slices
from hyperpod_tenancy.policy.model import Platform, ResourceAmount, ResourceShape, Team

__all__ = [
    "Resource",
    "as_decimal",
    "guaranteed",
    "instance_fractions",
    "instances_by_type",
    "instances_text",
    "partitions",
    "quota_fractions",
    "quota_instances",
    "shape_of",
]


class Resource(enum.Enum):
    """A resource a borrowing ceiling is stated for."""

    ACCELERATORS = "accelerators"
    CPU = "cpu"
    MEMORY = "memory"
    EFA = "efa"


def _decimal(value: float) -> Fraction:
    """Return the fraction a YAML number means (``0.1`` is one tenth, not its binary approximation)."""
    return Fraction(str(value))


def instance_fractions(amount: ResourceAmount, shape: ResourceShape | None) -> dict[Resource, Fraction]:
    """Return what ``amount`` is, per resource, in instances of ``shape`` (``{accelerators: 2}`` of 8 GPUs: 1/4 each).

    Raises:
        TenancyError: ``amount`` has no grain or more than one (validation reports these first), names
            accelerators on a type without them, or needs ``shape`` and it is unknown (``None``).

    """
    grains = amount.grains
    if grains == ("instances",) and amount.instances is not None:
        whole = Fraction(amount.instances)
        return dict.fromkeys(Resource, whole)
    if shape is None:
        raise TenancyError(
            f"an amount in {', '.join(grains)} needs the instance type's resource shape; set `resources:` on "
            "its instance group, or state the amount in `instances`."
        )
    if grains == ("accelerators",) and amount.accelerators is not None:
        if shape.accelerators < 1:
            raise TenancyError("an amount in accelerators on an instance type without accelerators")
        share = Fraction(amount.accelerators, shape.accelerators)
        return dict.fromkeys(Resource, share)
    if grains and set(grains) <= {"vcpus", "memoryGiB"}:
        cpu = _decimal(amount.vcpus) / shape.vcpus if amount.vcpus is not None else None
        memory = _decimal(amount.memory_gib) / shape.memory_gib if amount.memory_gib is not None else None
        # the one not given follows the other in the instance's ratio
        return {
            Resource.ACCELERATORS: Fraction(0),
            Resource.CPU: next(f for f in (cpu, memory) if f is not None),
            Resource.MEMORY: next(f for f in (memory, cpu) if f is not None),
            Resource.EFA: Fraction(0),
        }
    if grains == ("acceleratorPartition",) and amount.accelerator_partition is not None:
        if shape.accelerators < 1:
            raise TenancyError("an amount in accelerator partitions on an instance type without accelerators")
        partition = amount.accelerator_partition
        # its compute slices of the instance's: vCPUs and memory follow, no whole accelerator (the HyperPod CLI's
        # and Task Governance's ratio for a partition)
        share = Fraction(partition.count * slices(partition.type), shape.accelerators * COMPUTE_SLICES)
        return {
            Resource.ACCELERATORS: Fraction(0),
            Resource.CPU: share,
            Resource.MEMORY: share,
            Resource.EFA: Fraction(0),
        }
    raise TenancyError(
        "an amount needs exactly one grain (instances, accelerators, vcpus/memoryGiB, or acceleratorPartition); "
        f"got {grains}"
    )


def shape_of(platform: Platform, instance_type: str) -> ResourceShape | None:
    """One instance's resources of ``instance_type`` (its group's ``resources`` or the catalogue; None: unknown)."""
    shapes = (resource_shape(g) for g in platform.instance_group_for(instance_type))
    return next((s for s in shapes if s is not None), None)


def quota_fractions(platform: Platform, team: Team, instance_type: str) -> dict[Resource, Fraction]:
    """Return the team's guarantee on ``instance_type`` per resource, in instances (no quota: 0 of each).

    Raises:
        TenancyError: the quota names no grain or two (validation reports it first), or needs the type's resource
            shape and it is unknown.

    """
    quota = team.compute.quotas.get(instance_type, 0)
    if isinstance(quota, int):
        return dict.fromkeys(Resource, Fraction(quota))
    return instance_fractions(quota, shape_of(platform, instance_type))


def partitions(platform: Platform, team: Team, instance_type: str) -> dict[str, int]:
    """Return the team's guaranteed partitions on ``instance_type``: ``{"mig-1g.10gb": 14}`` (none: empty)."""
    quota = team.compute.quotas.get(instance_type)
    if isinstance(quota, ResourceAmount) and quota.accelerator_partition is not None:
        return {quota.accelerator_partition.type: quota.accelerator_partition.count}
    return {}


def quota_instances(platform: Platform, team: Team, instance_type: str) -> Fraction:
    """Return what the team's guarantee on ``instance_type`` takes of it, in instances.

    Its largest share of any resource: ``{accelerators: 4}`` of 8 GPUs is 1/2; ``{vcpus: 96}`` of 192 too.
    """
    return max(quota_fractions(platform, team, instance_type).values())


def guaranteed(
    platform: Platform,
    team: Team,
    instance_type: str,
    per_instance: int,
    resource: Resource = Resource.ACCELERATORS,
) -> int:
    """Return the team's guarantee of ``resource`` on ``instance_type`` (one instance has ``per_instance``; floored)."""
    return int(quota_fractions(platform, team, instance_type)[resource] * per_instance)


def instances_by_type(platform: Platform, team: Team) -> dict[str, int | Fraction]:
    """Return the team's guarantee of accelerators per instance type, in instances.

    An int where whole (``4``), else a fraction (``{accelerators: 4}`` of 8 GPUs: 1/2; a quota in vCPUs: 0). GPU
    partitions count at their compute slices' share of the GPUs: 98 one-slice partitions of 8-GPU instances are
    98 / (8 x 7) = 7/4 instances, the GPU-hours the chargeback bills them at.
    """
    out: dict[str, int | Fraction] = {}
    for itype in team.compute.quotas:
        count = quota_fractions(platform, team, itype)[Resource.ACCELERATORS]
        held, shape = partitions(platform, team, itype), shape_of(platform, itype)
        if held and shape is not None and shape.accelerators > 0:
            slices_held = sum(n * slices(p) for p, n in held.items())
            count += Fraction(slices_held, shape.accelerators * COMPUTE_SLICES)
        out[itype] = count.numerator if count.denominator == 1 else count
    return out


def as_decimal(count: Fraction) -> Decimal:
    """Return a count of instances as a Decimal (exact for the accelerator counts of real instance types)."""
    return Decimal(count.numerator) / Decimal(count.denominator)


def instances_text(count: Fraction) -> str:
    """Write a count of instances for people: ``15``, or ``14.5`` where an amount makes a fraction of one."""
    return str(count.numerator) if count.denominator == 1 else f"{float(count):g}"
