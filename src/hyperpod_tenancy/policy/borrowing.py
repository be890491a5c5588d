"""How much a team may borrow on an instance type: the one rule every consumer of a borrowing ceiling uses.

The Kueue ClusterQueues (``borrowingLimit``), the per-namespace ResourceQuota backstop, ``plan``'s burst ceiling
and ``explain`` all ask :func:`borrowing_limit`; Task Governance receives the same policy as ``BorrowLimit`` and
``AbsoluteBorrowLimits`` and applies it itself.

* A team whose sharing in force does not borrow (:meth:`~hyperpod_tenancy.policy.model.Platform.effective_sharing`)
  borrows nothing.
* On an instance type named in ``absoluteBorrowLimits`` the team may borrow that amount, whatever its
  ``borrowLimit`` (SageMaker API reference, ``ResourceSharingConfig.AbsoluteBorrowLimits``: "the maximum amount
  of specific resource types ... that an entity can borrow, regardless of the percentage-based BorrowLimit"),
  and it may do so without a quota of its own there.
* Elsewhere it may borrow ``floor(guarantee x borrowLimit / 100)`` of each resource.

An absolute amount is resolved per resource as a fraction of one instance (:func:`instance_fractions`), the
way the API fills a ``ComputeQuotaResourceConfig``: accelerators bring vCPUs, memory and EFA interfaces in the
instance's ratio; vCPUs or memory bring the other in the ratio and no accelerators. Each consumer multiplies the
fraction by one instance's amount in its own unit and floors the product.
"""

from __future__ import annotations

import enum
from fractions import Fraction

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import Platform, ResourceAmount, ResourceShape, Team

__all__ = ["Resource", "absolute_limit", "borrowing_limit", "instance_fractions", "may_borrow"]


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
    raise TenancyError(
        f"an amount needs exactly one grain (instances, accelerators, or vcpus/memoryGiB); got {grains}"
    )


def may_borrow(platform: Platform, team: Team) -> bool:
    """Whether ``team`` may borrow anything at all: its sharing in force borrows and some ceiling is above 0."""
    if not platform.effective_sharing(team).borrows:
        return False
    return team.compute.borrow_limit > 0 or any(
        any(a.given.values()) for a in team.compute.absolute_borrow_limits.values()
    )


def absolute_limit(team: Team, instance_type: str) -> ResourceAmount | None:
    """Return the team's absolute borrowing ceiling on ``instance_type``, if ``absoluteBorrowLimits`` names it."""
    return team.compute.absolute_borrow_limits.get(instance_type)


def _shape(platform: Platform, instance_type: str) -> ResourceShape | None:
    shapes = (resource_shape(g) for g in platform.instance_group_for(instance_type))
    return next((s for s in shapes if s is not None), None)


def borrowing_limit(
    platform: Platform, team: Team, instance_type: str, resource: Resource, per_instance: int
) -> int:
    """Most ``team`` may borrow of ``resource`` on ``instance_type``, in the unit ``per_instance`` is stated in.

    Args:
        platform: the platform the team is on.
        team: the borrower.
        instance_type: the instance type (Kueue flavor) borrowed on.
        resource: which resource ``per_instance`` measures.
        per_instance: one instance's amount of ``resource`` in the caller's unit (GPUs, millicores, MiB, ...).

    Raises:
        TenancyError: an absolute limit names a type whose resource shape is unknown.

    """
    sharing = platform.effective_sharing(team)
    if not sharing.borrows:
        return 0
    absolute = absolute_limit(team, instance_type)
    if absolute is None:
        nominal = team.compute.quotas.get(instance_type, 0) * per_instance
        return sharing.borrowing_limit(nominal, team.compute.borrow_limit)
    fraction = instance_fractions(absolute, _shape(platform, instance_type))[resource]
    return int(fraction * per_instance)
