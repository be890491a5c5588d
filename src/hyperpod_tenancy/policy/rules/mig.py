"""Capacity rules of GPU partitions: the layout of a partitioned group, and quotas stated in partitions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from hyperpod_tenancy.policy.grains import partitions, shape_of
from hyperpod_tenancy.policy.mig import PARTITIONED_TYPES, layout, mig_config_of, mig_configs, profiles
from hyperpod_tenancy.policy.model import InstanceGroup, Platform, ResourceAmount, Team
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Severity,
    group_rule,
    platform_rule,
    team_quota_rule,
)
from hyperpod_tenancy.policy.rules._common import disagreeing_groups


@group_rule(
    code="HPT-MIG-CONFIG",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].migConfig",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="a MIG layout the GPU operator does not have: the node's partitioning fails and its GPUs sit unused",
    guardrail="`migConfig` names a layout of HyperPod's GPU operator configuration for the group's GPU",
)
def mig_config(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group's MIG layout is one HyperPod's chart applies to its GPUs."""
    if g.mig_config is None:
        return
    known = mig_configs(g.instance_type)
    if not known:
        yield Finding(
            f"cluster.instanceGroups[{i}].migConfig",
            f"{g.instance_type} is not partitioned by HyperPod's GPU operator (its configuration has layouts for "
            f"{', '.join(PARTITIONED_TYPES)} only).",
            f"remove `migConfig` from group {g.name!r}, or partition one of those types.",
        )
    elif g.mig_config not in known:
        yield Finding(
            f"cluster.instanceGroups[{i}].migConfig",
            f"{g.mig_config!r} is not a layout of HyperPod's GPU operator for {g.instance_type}: the node would be "
            "left with its MIG state `failed`.",
            f"use one of: {', '.join(known)}.",
        )


@platform_rule(
    code="HPT-MIG-CONSISTENT",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].migConfig",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="nodes of one type offering different partitions: one quota cannot describe them",
    guardrail="`migConfig` the same on every group of an instance type",
)
def mig_consistent(p: Platform) -> Iterator[Finding]:
    """Check that every group of an instance type has the same MIG layout (or none)."""
    for i, seen, g in disagreeing_groups(p, "mig_config"):
        yield Finding(
            f"cluster.instanceGroups[{i}].migConfig",
            f"groups {seen.name!r} and {g.name!r} are both {g.instance_type} but partition their GPUs "
            f"differently ({seen.mig_config or 'none'} and {g.mig_config or 'none'}).",
            f"give group {g.name!r} `migConfig: {seen.mig_config}`"
            if seen.mig_config
            else f"remove `migConfig` from group {g.name!r}, or partition {seen.name!r} the same way.",
        )


@team_quota_rule(
    code="HPT-QUOTA-PARTITION",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=("cluster.instanceGroups[*].instanceType", "cluster.instanceGroups[*].migConfig"),
    failure="a quota in whole GPUs on partitioned nodes (they offer none), or in a profile the GPU does not have",
    guardrail="on a type with `migConfig`, quotas are `acceleratorPartition` (or vCPUs/memory); a partition is a "
    "profile of the type's GPU",
)
def quota_partition(
    p: Platform, i: int, team: Team, itype: str, count: int | ResourceAmount
) -> Iterator[Finding]:
    """Check a quota against the type's partitioning: partitions of its GPU; no whole GPUs on partitioned nodes."""
    where = f"teams[{i}].compute.quotas.{itype}"
    partition = count.accelerator_partition if isinstance(count, ResourceAmount) else None
    if partition is not None and partition.type not in profiles(itype):
        offered = ", ".join(profiles(itype)) or "none: the type is not partitioned"
        yield Finding(
            where,
            f"{partition.type} is not a MIG profile of {itype}'s GPUs.",
            f"use one of its profiles ({offered}).",
        )
        return
    whole = isinstance(count, int) or count.instances is not None or count.accelerators is not None
    if mig_config_of(p, itype) is not None and whole and count != 0:
        yield Finding(
            where,
            f"team {team.name!r} has a quota of whole GPUs ({count}) on {itype}, whose nodes are partitioned "
            f"(`migConfig: {mig_config_of(p, itype)}`) and offer no whole GPU.",
            "state it in partitions, e.g. `{acceleratorPartition: {type: "
            f"{next(iter(layout(itype, mig_config_of(p, itype) or '') or {'mig-1g.10gb': 0}))}, count: 7}}}}`.",
        )


@team_quota_rule(
    code="HPT-QUOTA-PARTITION-OFFERED",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=("cluster.instanceGroups[*].migConfig",),
    failure="a quota on partitions no node advertises: the team's jobs wait for ever",
    guardrail="warning on a partition quota the type's `migConfig` does not make",
    severity=Severity.WARNING,
)
def quota_partition_offered(
    p: Platform, i: int, team: Team, itype: str, count: int | ResourceAmount
) -> Iterator[Finding]:
    """Warn when a partition quota names a profile that no node of the type advertises."""
    partition = count.accelerator_partition if isinstance(count, ResourceAmount) else None
    if partition is None or partition.type not in profiles(itype):
        return
    config = mig_config_of(p, itype)
    made = layout(itype, config) if config is not None else None
    if not made or partition.type not in made:
        yield Finding(
            f"teams[{i}].compute.quotas.{itype}",
            f"team {team.name!r} has {partition} on {itype}, but "
            + (f"its layout {config} makes {', '.join(made)}" if made else f"no {itype} group is partitioned")
            + f": no node advertises nvidia.com/{partition.type}, so the team's jobs asking for it wait for ever.",
            f"give the {itype} groups a `migConfig` that makes {partition.type}, or change the quota's profile.",
        )


@platform_rule(
    code="HPT-PARTITION-CAPACITY",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=("cluster.instanceGroups[*].migConfig", "cluster.instanceGroups[*].count"),
    failure="partition quotas promising more partitions than the nodes not in reserve make",
    guardrail="per type and profile, partitions promised <= per GPU x GPUs x (count - reserved)",
)
def partition_capacity(p: Platform) -> Iterator[Finding]:
    """Per instance type and profile, the teams' partitions fit in what the instances not in reserve make."""
    promised: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    for team in p.hosted_teams:
        for itype in team.compute.quotas:
            for profile, n in partitions(p, team, itype).items():
                promised[(itype, profile)].append((team.name, n))
    for (itype, profile), entries in promised.items():
        config, shape = mig_config_of(p, itype), shape_of(p, itype)
        per_gpu = (layout(itype, config) or {}).get(profile, 0) if config is not None else 0
        groups = p.instance_group_for(itype)
        if not per_gpu or shape is None or not groups:
            continue  # HPT-QUOTA-PARTITION-OFFERED or the type's own rules report it
        instances = sum(g.quota_capacity for g in groups)
        capacity = per_gpu * shape.accelerators * instances
        total = sum(n for _, n in entries)
        if total > capacity:
            yield Finding(
                f"teams[*].compute.quotas.{itype}",
                f"{profile} quotas on {itype} sum to {total} ({' + '.join(f'{t} {n}' for t, n in entries)}) but "
                f"the instances not in reserve make {capacity} ({per_gpu} per GPU x {shape.accelerators} GPUs x "
                f"{instances} instances).",
                f"lower the {profile} quotas by {total - capacity}, or add {itype} instances.",
            )
