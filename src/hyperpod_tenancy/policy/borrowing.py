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

An absolute amount is resolved per resource as a fraction of one instance
(:func:`~hyperpod_tenancy.policy.grains.instance_fractions`); each consumer multiplies the fraction by one
instance's amount in its own unit and floors the product.
"""

from __future__ import annotations

from hyperpod_tenancy.policy.grains import Resource, guaranteed, instance_fractions, partitions, shape_of
from hyperpod_tenancy.policy.model import Platform, ResourceAmount, Team

__all__ = ["Resource", "absolute_limit", "borrowing_limit", "may_borrow", "partition_borrowing_limit"]


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
        nominal = guaranteed(platform, team, instance_type, per_instance, resource)
        return sharing.borrowing_limit(nominal, team.compute.borrow_limit)
    fraction = instance_fractions(absolute, shape_of(platform, instance_type))[resource]
    return int(fraction * per_instance)


def partition_borrowing_limit(platform: Platform, team: Team, instance_type: str, partition: str) -> int:
    """Most partitions of profile ``partition`` (``mig-1g.10gb``) ``team`` may borrow on ``instance_type``.

    ``borrowLimit`` percent of its own partitions of that profile there, or the partitions of that profile its
    absolute limit on the type names (none when the limit is stated otherwise).
    """
    sharing = platform.effective_sharing(team)
    if not sharing.borrows:
        return 0
    absolute = absolute_limit(team, instance_type)
    if absolute is None:
        nominal = partitions(platform, team, instance_type).get(partition, 0)
        return sharing.borrowing_limit(nominal, team.compute.borrow_limit)
    given = absolute.accelerator_partition
    return given.count if given is not None and given.type == partition else 0
