"""Storage rules: node volumes and the shared FSx for Lustre file system."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy.model import InstanceGroup, Platform
from hyperpod_tenancy.policy.rules._base import Domain, Finding, group_rule, platform_rule

_FSX_TYPES = ("PERSISTENT_2", "PERSISTENT_1", "SCRATCH_2")
_FSX_PERSISTENT_2_THROUGHPUT = (125, 250, 500, 1000)


@group_rule(
    code="HPT-EBS",
    domain=Domain.STORAGE,
    at="cluster.instanceGroups[*].ebsVolumeGiB",
    reads=(),
    failure="a node volume size HyperPod rejects",
    guardrail="`ebsVolumeGiB` between 1 and 16384",
)
def ebs_volume(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group's EBS volume size is within HyperPod's range."""
    if not 1 <= g.ebs_volume_gib <= 16384:
        yield Finding(
            f"cluster.instanceGroups[{i}].ebsVolumeGiB",
            f"{g.ebs_volume_gib} is outside 1-16384.",
            "use e.g. 500.",
        )


@platform_rule(
    code="HPT-FSX",
    domain=Domain.STORAGE,
    at="cluster.fsx.deploymentType",
    reads=(),
    failure="a file system type FSx for Lustre does not have",
    guardrail=f"`fsx.deploymentType` is one of {', '.join(_FSX_TYPES)}",
)
def fsx_deployment_type(p: Platform) -> Iterator[Finding]:
    """Check that the file system is of an FSx for Lustre deployment type."""
    f = p.cluster.fsx
    if f.deployment_type not in _FSX_TYPES:
        yield Finding(
            "cluster.fsx.deploymentType",
            f"{f.deployment_type!r} is not an FSx for Lustre type.",
            f"use one of {', '.join(_FSX_TYPES)}.",
        )


@platform_rule(
    code="HPT-FSX",
    domain=Domain.STORAGE,
    at="cluster.fsx.storageCapacityGiB",
    reads=(),
    failure="a file system size FSx for Lustre rejects at deploy time",
    guardrail="`fsx.storageCapacityGiB` is 1200, 2400 or a multiple of 2400",
)
def fsx_capacity(p: Platform) -> Iterator[Finding]:
    """Check that the file system size is one FSx for Lustre accepts."""
    cap = p.cluster.fsx.storage_capacity_gib
    if cap not in (1200, 2400) and (cap <= 0 or cap % 2400):
        yield Finding(
            "cluster.fsx.storageCapacityGiB",
            f"{cap} GiB is not 1200, 2400 or a multiple of 2400.",
            "use e.g. 4800.",
        )


@platform_rule(
    code="HPT-FSX",
    domain=Domain.STORAGE,
    at="cluster.fsx.perUnitStorageThroughput",
    reads=("cluster.fsx.deploymentType",),
    failure="a PERSISTENT_2 throughput FSx for Lustre rejects at deploy time",
    guardrail="`fsx.perUnitStorageThroughput` is 125, 250, 500 or 1000 for PERSISTENT_2",
)
def fsx_throughput(p: Platform) -> Iterator[Finding]:
    """Check that a PERSISTENT_2 file system has a throughput tier FSx offers."""
    f = p.cluster.fsx
    if (
        f.deployment_type == "PERSISTENT_2"
        and f.per_unit_storage_throughput not in _FSX_PERSISTENT_2_THROUGHPUT
    ):
        yield Finding(
            "cluster.fsx.perUnitStorageThroughput",
            f"{f.per_unit_storage_throughput} MB/s/TiB is not valid for PERSISTENT_2.",
            f"use one of {', '.join(map(str, _FSX_PERSISTENT_2_THROUGHPUT))}.",
        )
