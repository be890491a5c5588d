"""Capacity rules: instance groups, system nodes, per-instance resources, team quotas and what they promise."""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import fairness
from hyperpod_tenancy.policy._accepted_types import HYPERPOD_INSTANCE_TYPES
from hyperpod_tenancy.policy.grains import Resource, instances_text, quota_fractions
from hyperpod_tenancy.policy.model import InstanceGroup, Platform, ResourceAmount, Team
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Severity,
    group_rule,
    platform_rule,
    team_quota_rule,
    team_rule,
)
from hyperpod_tenancy.policy.rules.borrowing import amount_problem

_TRAINING_PLAN = re.compile(r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*$")
_MAX_INSTANCE_COUNT = 6758
_MAX_QUOTA_ENTRIES = 15


#: How alike two instance type names must be (difflib ratio) to be taken for a typo of each other: above
#: ml.p5.48xlarge / ml.g5.12xlarge (0.79), two real types, not a typo; ml.p5.48xlarg is 0.96.
_TYPO = 0.9


@platform_rule(
    code="HPT-INSTANCE-GROUPS",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups",
    reads=(),
    failure="a cluster with no GPU capacity to share",
    guardrail="at least one instance group",
)
def instance_groups_defined(p: Platform) -> Iterator[Finding]:
    """Check that the cluster has at least one instance group."""
    if not p.cluster.instance_groups:
        yield Finding(
            "cluster.instanceGroups",
            "no instance groups are defined.",
            "add at least one GPU instance group.",
        )


@group_rule(
    code="HPT-INSTANCE-TYPE",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].instanceType",
    reads=(),
    failure="an instance type HyperPod rejects at deploy time",
    guardrail="`instanceType` is a SageMaker ClusterInstanceType, with a did-you-mean hint",
)
def group_instance_type(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group's instance type is one HyperPod accepts."""
    if g.instance_type not in HYPERPOD_INSTANCE_TYPES:
        close = difflib.get_close_matches(g.instance_type, sorted(HYPERPOD_INSTANCE_TYPES), n=1)
        hint = f"did you mean {close[0]}?" if close else "HyperPod types look like ml.p5.48xlarge."
        yield Finding(
            f"cluster.instanceGroups[{i}].instanceType",
            f"{g.instance_type!r} is not an instance type HyperPod accepts (SageMaker ClusterInstanceType).",
            f"use an accepted `ml.` instance type; {hint}",
        )


@group_rule(
    code="HPT-COUNT",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].count",
    reads=(),
    failure="an empty instance group, or one over HyperPod's instance limit",
    guardrail="`count` between 1 and 6758",
)
def group_count(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group has between 1 and HyperPod's maximum number of instances."""
    path = f"cluster.instanceGroups[{i}].count"
    if g.count < 1:
        yield Finding(
            path,
            f"{g.count} is not a positive number of instances.",
            "set count to 1 or more, or remove the group.",
        )
    elif g.count > _MAX_INSTANCE_COUNT:
        yield Finding(
            path,
            f"{g.count} exceeds HyperPod's limit of {_MAX_INSTANCE_COUNT}.",
            f"use at most {_MAX_INSTANCE_COUNT}.",
        )


@group_rule(
    code="HPT-RESERVED",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].reserved",
    reads=("cluster.instanceGroups[*].count",),
    failure="quotas that cannot hold while HyperPod replaces a node",
    guardrail="`reserved` between 0 and `count`",
)
def group_reserved(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group's reserve is between 0 and its count."""
    if g.reserved < 0 or (g.count >= 1 and g.reserved > g.count):
        yield Finding(
            f"cluster.instanceGroups[{i}].reserved",
            f"{g.reserved} must be between 0 and count ({g.count}).",
            "keep at least 1 node in reserve so quotas hold while HyperPod replaces a node.",
        )


@group_rule(
    code="HPT-THREADS",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].threadsPerCore",
    reads=(),
    failure="a threads-per-core setting HyperPod rejects",
    guardrail="`threadsPerCore` is 1 or 2",
)
def group_threads(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group runs one or two threads per core."""
    if g.threads_per_core not in (1, 2):
        yield Finding(
            f"cluster.instanceGroups[{i}].threadsPerCore",
            f"{g.threads_per_core} is not 1 or 2.",
            "use 1 (no hyperthreading) or 2.",
        )


@group_rule(
    code="HPT-TRAINING-PLAN",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].trainingPlanArn",
    reads=(),
    failure="an instance group bound to a training plan that does not exist",
    guardrail="`trainingPlanArn` is a SageMaker training plan ARN",
)
def group_training_plan(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group's training plan, when given, is a training plan ARN."""
    if g.training_plan_arn is not None and not _TRAINING_PLAN.match(g.training_plan_arn):
        yield Finding(
            f"cluster.instanceGroups[{i}].trainingPlanArn",
            f"{g.training_plan_arn!r} is not a training plan ARN.",
            "copy it from `aws sagemaker list-training-plans`.",
        )


@group_rule(
    code="HPT-DUPLICATE",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].deepHealthChecks",
    reads=(),
    failure="a deep health check listed twice, which HyperPod rejects",
    guardrail="each deep health check once per group",
)
def deep_health_checks_unique(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the group lists each deep health check once."""
    if len(set(g.deep_health_checks)) != len(g.deep_health_checks):
        yield Finding(
            f"cluster.instanceGroups[{i}].deepHealthChecks",
            "a deep health check is listed twice.",
            "list each check once.",
        )


@group_rule(
    code="HPT-RESOURCES",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].resources",
    reads=(),
    failure="quotas computed from non-positive per-instance figures",
    guardrail="given `resources` have accelerators ≥ 0, vcpus ≥ 1 and memoryGiB ≥ 1",
)
def group_resources(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Per-instance resources, when given, are positive."""
    if g.resources is not None and (
        g.resources.accelerators < 0 or g.resources.vcpus < 1 or g.resources.memory_gib < 1
    ):
        yield Finding(
            f"cluster.instanceGroups[{i}].resources",
            f"{g.resources} has a non-positive cpu/memory figure.",
            "give the per-instance accelerators (>=0), vcpus (>=1) and memoryGiB (>=1).",
        )


@group_rule(
    code="HPT-RESOURCES",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*].resources",
    reads=("fairnessBackend", "cluster.instanceGroups[*].instanceType"),
    failure="Kueue quotas for an instance type whose GPU/CPU/memory figures are unknown",
    guardrail="with `fairnessBackend: kueue`, a type outside the built-in catalogue needs `resources`",
)
def kueue_group_resources(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the kueue backend knows the per-instance resources of every group."""
    for problem in fairness.fairness_of(p).resource_figure_problems(p, i, g):
        yield Finding(*problem)


@platform_rule(
    code="HPT-COUNT",
    domain=Domain.CAPACITY,
    at="cluster.systemNodeGroup.count",
    reads=(),
    failure="a cluster without nodes for its controllers",
    guardrail="`systemNodeGroup.count` of at least 1",
)
def system_node_count(p: Platform) -> Iterator[Finding]:
    """Check that the cluster runs at least one system node."""
    count = p.cluster.system_node_group.count
    if count < 1:
        yield Finding(
            "cluster.systemNodeGroup.count",
            f"{count} is not positive.",
            "run at least one system node (two for availability).",
        )


@platform_rule(
    code="HPT-INSTANCE-TYPE",
    domain=Domain.CAPACITY,
    at="cluster.systemNodeGroup.instanceType",
    reads=(),
    failure="a SageMaker type for the EKS managed system nodes",
    guardrail="`systemNodeGroup.instanceType` is an EC2 type",
)
def system_node_instance_type(p: Platform) -> Iterator[Finding]:
    """System nodes are EKS managed EC2 nodes, not SageMaker instances."""
    itype = p.cluster.system_node_group.instance_type
    if itype.startswith("ml."):
        yield Finding(
            "cluster.systemNodeGroup.instanceType",
            f"{itype!r} is a SageMaker type; system nodes are EKS managed EC2 nodes.",
            "use an EC2 type such as m7i.xlarge.",
        )


@platform_rule(
    code="HPT-RESOURCES",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*]",
    reads=("fairnessBackend",),
    failure="two groups of one type that one Kueue ResourceFlavor cannot describe",
    guardrail="with `fairnessBackend: kueue`, groups of one type share `threadsPerCore` and `resources`",
)
def kueue_flavor_shapes(p: Platform) -> Iterator[Finding]:
    """Kueue has one ResourceFlavor per instance type: groups of one type must describe the same nodes."""
    for problem in fairness.fairness_of(p).flavor_shape_problems(p):
        yield Finding(*problem)


@platform_rule(
    code="HPT-TEAMS",
    domain=Domain.CAPACITY,
    at="teams",
    reads=(),
    failure="a shared cluster nobody can use",
    guardrail="at least one team",
)
def teams_defined(p: Platform) -> Iterator[Finding]:
    """Check that the platform has at least one team."""
    if not p.teams:
        yield Finding("teams", "no teams are defined.", "add at least one team.")


@team_rule(
    code="HPT-QUOTA",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=(),
    failure="more quota entries than a ComputeQuota accepts",
    guardrail="at most 15 instance types per team",
)
def quota_entries(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team quotas at most 15 instance types."""
    quotas = team.compute.quotas
    if len(quotas) > _MAX_QUOTA_ENTRIES:
        yield Finding(
            f"teams[{i}].compute.quotas",
            f"{len(quotas)} instance types; the limit is 15.",
            "quota at most 15 instance types per team.",
        )


@team_quota_rule(
    code="HPT-QUOTA-UNKNOWN-TYPE",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="a quota on an instance type the cluster does not have",
    guardrail="every quota names the type of an instance group, with a did-you-mean hint",
)
def quota_type(p: Platform, i: int, team: Team, itype: str, count: int | ResourceAmount) -> Iterator[Finding]:
    """Check that a quota names the instance type of an instance group."""
    types = {g.instance_type for g in p.cluster.instance_groups}
    if itype not in types:
        misspelt_groups = sorted(types - HYPERPOD_INSTANCE_TYPES)
        if itype in HYPERPOD_INSTANCE_TYPES and difflib.get_close_matches(
            itype, misspelt_groups, n=1, cutoff=_TYPO
        ):
            # the quota names a real type and a group misspells it: HPT-INSTANCE-TYPE names the group's fix
            return
        close = difflib.get_close_matches(itype, sorted(types & HYPERPOD_INSTANCE_TYPES), n=1, cutoff=_TYPO)
        hint = f"; did you mean {close[0]}?" if close else "."
        yield Finding(
            f"teams[{i}].compute.quotas.{itype}",
            f"{itype!r} is not the instance type of any instance group ({', '.join(sorted(types))}).",
            f"quota only instance types the cluster has, or add an instance group of that type{hint}",
        )


@team_quota_rule(
    code="HPT-QUOTA",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=(),
    failure="a negative quota",
    guardrail="quotas are 0 or more instances",
)
def quota_count(
    p: Platform, i: int, team: Team, itype: str, count: int | ResourceAmount
) -> Iterator[Finding]:
    """Check that a quota is not negative."""
    if isinstance(count, int) and count < 0:
        yield Finding(
            f"teams[{i}].compute.quotas.{itype}", f"{count} is negative.", "use 0 or more instances."
        )


@team_quota_rule(
    code="HPT-QUOTA-GRAIN",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=("cluster.instanceGroups[*].instanceType", "cluster.instanceGroups[*].resources"),
    failure="a quota in two grains, out of range, or in a resource the instance type does not have",
    guardrail="a quota is whole instances, `{accelerators: N}`, or `{vcpus: N}` and/or `{memoryGiB: N}`, in range, "
    "on a type with that resource and a known shape",
)
def quota_grain(
    p: Platform, i: int, team: Team, itype: str, count: int | ResourceAmount
) -> Iterator[Finding]:
    """Check that a quota stated as an amount has one grain, in range, that the type has."""
    if isinstance(count, int) or itype not in {g.instance_type for g in p.cluster.instance_groups}:
        return
    problem = amount_problem(count, itype, p)
    if problem is not None:
        message, fix = problem
        yield Finding(f"teams[{i}].compute.quotas.{itype}", f"the quota on {itype} {message}", fix)


@platform_rule(
    code="HPT-QUOTA-CAPACITY",
    domain=Domain.CAPACITY,
    at="teams[*].compute.quotas",
    reads=(
        "cluster.instanceGroups[*].instanceType",
        "cluster.instanceGroups[*].count",
        "cluster.instanceGroups[*].reserved",
    ),
    failure="quotas promise capacity that is recovering",
    guardrail="per instance type, sum of quotas ≤ count - reserved; the message shows the arithmetic",
)
def quota_capacity(p: Platform) -> Iterator[Finding]:
    """Per instance type, the hosted teams' quotas fit in the instances not held in reserve."""
    promised: dict[str, list[tuple[str, int | ResourceAmount, dict[Resource, Fraction]]]] = defaultdict(list)
    for team in p.hosted_teams:
        for itype, count in team.compute.quotas.items():
            try:
                fractions = quota_fractions(p, team, itype)
            except TenancyError:
                continue  # a grain or shape HPT-QUOTA-GRAIN reports
            promised[itype].append((team.name, count, fractions))
    for itype, entries in promised.items():
        groups = p.instance_group_for(itype)
        if not groups or any(g.count < 1 for g in groups):
            continue  # reported by HPT-QUOTA-UNKNOWN-TYPE / HPT-COUNT
        # per resource: accelerators, cores, memory and EFA interfaces each fit (the largest share binds)
        total = max(sum((n[r] for _, _, n in entries), Fraction(0)) for r in Resource)
        count = sum(g.count for g in groups)
        reserved = sum(g.reserved for g in groups)
        capacity = count - reserved
        if total > capacity:
            parts = " + ".join(
                f"{name} {c}"
                if isinstance(c, int)
                else f"{name} {c} ({instances_text(max(n.values()))} instances)"
                for name, c, n in entries
            )
            yield Finding(
                f"teams[*].compute.quotas.{itype}",
                f"quotas for {itype} sum to {instances_text(total)} ({parts}) but the cluster can promise only "
                f"{capacity} ({count} instances - {reserved} reserved = {capacity}); quotas would promise "
                "capacity that is recovering.",
                f"lower the quotas by {instances_text(total - capacity)} instances in total, or add instances to the "
                f"{itype} group.",
            )


@group_rule(
    code="HPT-UNUSED-INSTANCE-TYPE",
    domain=Domain.CAPACITY,
    at="cluster.instanceGroups[*]",
    reads=("teams[*].compute.quotas",),
    failure="nodes no team can use: borrowing is a share of a team's own quota on the type",
    guardrail="warning on an instance group no team has a quota on",
    severity=Severity.WARNING,
)
def unused_instance_type(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that some hosted team has a quota on the group's instance type."""
    if not any(g.instance_type in team.compute.quotas for team in p.hosted_teams):
        yield Finding(
            f"cluster.instanceGroups[{i}]",
            f"no team has a quota on {g.instance_type}; borrowing is a percentage of a team's own quota on "
            "an instance type, so no team can borrow these nodes either and they stay idle.",
            "give a team a quota on it, or remove the group.",
        )
