"""Scheduling rules: priority classes, entitlements, checkpoints, fair-share weights, Kueue objects, admission."""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.model import (
    MAX_CHECKPOINT_INTERVAL_CEILING,
    InstanceGroup,
    Platform,
    PriorityClass,
    Team,
    WorkloadKind,
    interval_minutes,
)
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Severity,
    Stage,
    admission_guardrail,
    group_rule,
    platform_rule,
    priority_class_rule,
    team_rule,
)
from hyperpod_tenancy.policy.rules._common import MAX_PRIORITY_CLASSES, WEIGHT_RANGE, disagreeing_groups
from hyperpod_tenancy.policy.topology import NETWORK_LAYERS, TOPOLOGY_INSTANCE_TYPES


@platform_rule(
    code="HPT-PRIORITY-COUNT",
    domain=Domain.SCHEDULING,
    at="scheduling.priorityClasses",
    reads=(),
    failure="no priority class for jobs to carry, or more than Task Governance accepts",
    guardrail=f"between 1 and {MAX_PRIORITY_CLASSES} priority classes",
)
def priority_class_count(p: Platform) -> Iterator[Finding]:
    """Check that the platform defines between one and Task Governance's maximum number of priority classes."""
    classes = p.scheduling.priority_classes
    if not classes:
        yield Finding(
            "scheduling.priorityClasses",
            "no priority classes are defined.",
            "define at least one, e.g. `training` (weight 50).",
        )
    if len(classes) > MAX_PRIORITY_CLASSES:
        yield Finding(
            "scheduling.priorityClasses",
            f"{len(classes)} priority classes are defined; Task Governance allows at most {MAX_PRIORITY_CLASSES}.",
            "merge classes that share a purpose.",
        )


@priority_class_rule(
    code="HPT-PRIORITY-WEIGHT",
    domain=Domain.SCHEDULING,
    at="scheduling.priorityClasses[*].weight",
    reads=(),
    failure="a priority weight the scheduler rejects",
    guardrail="priority weights between 0 and 100",
)
def priority_weight(p: Platform, i: int, pc: PriorityClass) -> Iterator[Finding]:
    """Check that the priority class weight is within range."""
    lo, hi = WEIGHT_RANGE
    if not lo <= pc.weight <= hi:
        yield Finding(
            f"scheduling.priorityClasses[{i}].weight",
            f"{pc.weight} is outside {lo}-{hi}.",
            f"use a weight between {lo} and {hi}; higher preempts lower.",
        )


@priority_class_rule(
    code="HPT-CHECKPOINT-INTERVAL",
    domain=Domain.SCHEDULING,
    at="scheduling.priorityClasses[*].maxCheckpointInterval",
    reads=(),
    failure='an unbounded checkpoint interval (`9999h`) makes "GPU-hours at risk per eviction" meaningless',
    guardrail=f"`maxCheckpointInterval` per class is whole minutes or hours, at most {MAX_CHECKPOINT_INTERVAL_CEILING}; "
    "enforced at admission",
)
def checkpoint_interval(p: Platform, i: int, pc: PriorityClass) -> Iterator[Finding]:
    """Check that the class's maximum checkpoint interval is a whole number of minutes or hours, at most the ceiling."""
    path = f"scheduling.priorityClasses[{i}].maxCheckpointInterval"
    value = pc.max_checkpoint_interval
    minutes = interval_minutes(value)
    ceiling = interval_minutes(MAX_CHECKPOINT_INTERVAL_CEILING) or 0
    if minutes is None:
        yield Finding(
            path,
            f"{value!r} is not a number of minutes or hours.",
            "write a positive whole number followed by m or h, e.g. `30m` or `1h` (not `1h30m`, write `90m`).",
        )
    elif minutes > ceiling:
        yield Finding(
            path,
            f"{value!r} is longer than {MAX_CHECKPOINT_INTERVAL_CEILING}: an eviction could throw away more than "
            "a day of GPU work.",
            f"use at most {MAX_CHECKPOINT_INTERVAL_CEILING}, e.g. `1h`.",
        )


@team_rule(
    code="HPT-FAIR-SHARE-WEIGHT",
    domain=Domain.SCHEDULING,
    at="teams[*].compute.fairShareWeight",
    reads=(),
    failure="a fair-share weight the scheduler rejects",
    guardrail="`fairShareWeight` between 0 and 100",
)
def fair_share_weight(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team's fair-share weight is within range."""
    lo, hi = WEIGHT_RANGE
    weight = team.compute.fair_share_weight
    if not lo <= weight <= hi:
        yield Finding(
            f"teams[{i}].compute.fairShareWeight",
            f"{weight} is outside {lo}-{hi}.",
            f"use a weight between {lo} and {hi}.",
        )


@team_rule(
    code="HPT-PRIORITY-UNKNOWN",
    domain=Domain.SCHEDULING,
    at="teams[*].allowedPriorityClasses",
    reads=("scheduling.priorityClasses[*].name",),
    failure="a team entitled to no class, or to a class that does not exist, so its jobs are all denied",
    guardrail="`allowedPriorityClasses` is non-empty and names defined classes, with a did-you-mean hint",
)
def allowed_priority_classes(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team may use at least one priority class, and only defined ones."""
    path = f"teams[{i}].allowedPriorityClasses"
    if not team.allowed_priority_classes:
        yield Finding(path, "the list is empty.", "allow at least one priority class; jobs must carry one.")
    class_names = {pc.name for pc in p.scheduling.priority_classes}
    for j, name in enumerate(team.allowed_priority_classes):
        if name not in class_names:
            close = difflib.get_close_matches(name, sorted(class_names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else "."
            defined = ", ".join(sorted(class_names)) or "none"
            yield Finding(
                f"{path}[{j}]",
                f"priority class {name!r} is not defined in scheduling.priorityClasses.",
                f"allow only defined classes ({defined}){hint}",
            )


@platform_rule(
    code="HPT-INFERENCE-LOWEST-PRIORITY",
    domain=Domain.SCHEDULING,
    at="teams[*].allowedPriorityClasses",
    reads=("scheduling.priorityClasses[*].weight", "teams[*].workload"),
    failure="inference endpoints evicted first",
    guardrail="warning on an inference team allowed the lowest-weight priority class",
    severity=Severity.WARNING,
)
def inference_lowest_priority(p: Platform) -> Iterator[Finding]:
    """Check that no inference team may use the lowest priority class (its endpoints would be evicted first)."""
    classes = p.scheduling.priority_classes
    # with a single weight no class is below another, so no class is "the lowest"
    if len({pc.weight for pc in classes}) <= 1:
        return
    lowest = min(pc.weight for pc in classes)
    lowest_names = {pc.name for pc in classes if pc.weight == lowest}
    for i, team in enumerate(p.teams):
        used = sorted(lowest_names.intersection(team.allowed_priority_classes))
        if team.workload is WorkloadKind.INFERENCE and used:
            yield Finding(
                f"teams[{i}].allowedPriorityClasses",
                f"inference team {team.name!r} may use the lowest priority class {used}; its endpoints "
                "would be the first work evicted when capacity is reclaimed.",
                "allow inference teams only priority classes above the lowest weight.",
            )


@group_rule(
    code="HPT-TOPOLOGY-TYPE",
    domain=Domain.SCHEDULING,
    at="cluster.instanceGroups[*].topologyAware",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="jobs asking to be placed under one network node wait forever: the nodes carry no topology labels",
    guardrail="`topologyAware` only on the instance types HyperPod labels with their network topology",
)
def topology_type(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that a topology-aware group is of a type whose nodes carry the network topology labels."""
    if g.topology_aware and g.instance_type not in TOPOLOGY_INSTANCE_TYPES:
        yield Finding(
            f"cluster.instanceGroups[{i}].topologyAware",
            f"{g.instance_type} nodes carry no {NETWORK_LAYERS[0].rsplit('-', 1)[0]}-<n> labels (HyperPod "
            "labels them only on the types of its topology-aware scheduling documentation), so a job asking "
            "for a network node would never be placed.",
            f"remove `topologyAware` from group {g.name!r}, or use one of: {', '.join(sorted(TOPOLOGY_INSTANCE_TYPES))}.",
        )


@platform_rule(
    code="HPT-TOPOLOGY-CONSISTENT",
    domain=Domain.SCHEDULING,
    at="cluster.instanceGroups[*].topologyAware",
    reads=("cluster.instanceGroups[*].instanceType",),
    failure="half the nodes of a type placed by topology: Kueue has one flavor per instance type",
    guardrail="`topologyAware` the same on every group of an instance type",
)
def topology_consistent(p: Platform) -> Iterator[Finding]:
    """Check that every group of an instance type agrees on ``topologyAware`` (one Kueue flavor per type)."""
    for i, seen, g in disagreeing_groups(p, "topology_aware"):
        yield Finding(
            f"cluster.instanceGroups[{i}].topologyAware",
            f"groups {seen.name!r} and {g.name!r} are both {g.instance_type} but only one is topology-aware; "
            "Kueue places an instance type by topology or not at all.",
            f"set `topologyAware: {str(seen.topology_aware).lower()}` on group {g.name!r}, or the opposite on "
            f"{seen.name!r}.",
        )


@platform_rule(
    code="HPT-TOPOLOGY-REQUEST",
    domain=Domain.SCHEDULING,
    at="cluster.instanceGroups[*].topologyAware",
    reads=("fairnessBackend",),
    failure="a job on a topology-aware type that asks for no topology waits for ever beside types that are not",
    guardrail="warning on the kueue backend when some instance types are topology-aware and others are not",
    severity=Severity.WARNING,
)
def topology_request(p: Platform) -> Iterator[Finding]:
    """Warn that, on Kueue beside other types, a job must ask for a topology to run on a topology-aware type."""
    aware = sorted({g.instance_type for g in p.cluster.instance_groups if g.topology_aware})
    plain = {g.instance_type for g in p.cluster.instance_groups if not g.topology_aware} - set(aware)
    if fairness_of(p).needs_topology_request_beside_other_types and aware and plain:
        yield Finding(
            "cluster.instanceGroups[*].topologyAware",
            f"{', '.join(aware)} {'is' if len(aware) == 1 else 'are'} placed by topology and "
            f"{', '.join(sorted(plain))} not: Kueue 0.19 then admits a job on a topology-aware type only if it asks "
            'for a topology ("Flavor ... supports only TopologyAwareScheduling"); a job that asks for none waits '
            "for ever there.",
            "tell the teams to annotate such jobs' pod templates (`kueue.x-k8s.io/podset-unconstrained-topology: "
            '"true"` to be placed anywhere, or a required/preferred level), or make every type topology-aware.',
        )


def _admission(code: str, failure: str, guardrail: str) -> Guardrail:
    return admission_guardrail(code=code, domain=Domain.SCHEDULING, failure=failure, guardrail=guardrail)


#: ValidatingAdmissionPolicies of :mod:`hyperpod_tenancy.k8s.admission` (``code`` is the policy's name).
ADMISSION = (
    _admission(
        "hyperpod-tenancy-workload-labels",
        "job without a priority class / a team labels everything top priority, or bypasses its queue",
        "`kueue.x-k8s.io/priority-class` present and entitled, `kueue.x-k8s.io/queue-name` the namespace's "
        "LocalQueue, no controller owner references or finalizers from team members; with `fairnessBackend: "
        "kueue`, no kind Kueue cannot gang (`HyperPodPyTorchJob`)",
    ),
    _admission(
        "hyperpod-tenancy-checkpoints",
        "borrowed capacity used by work that does not checkpoint",
        "a checkpoint declaration (path under `/fsx/<team>/`, interval ≤ the class's `maxCheckpointInterval`) on "
        "all work of a team that may borrow and on `preemptible` classes (Deny, or Warn per "
        "`checkpointEnforcement`): annotations, or `HYPERPOD_TENANCY_CHECKPOINT_DIR`/`_INTERVAL` in a container "
        "that mounts the team's FSx claim there (what `hyp` can set), never both",
    ),
    _admission(
        "hyperpod-tenancy-workload-deletes",
        "an orphaning delete frees the quota while the pods keep their GPUs",
        "no `propagationPolicy: Orphan` (or a Job deleted without a propagation policy) from team members",
    ),
)


def _kueue_lint(code: str, failure: str) -> Guardrail:
    return Guardrail(
        code=code,
        stage=Stage.SYNTH,
        severity=Severity.ERROR,
        domain=Domain.SCHEDULING,
        failure=failure,
        guardrail="the kueue backend lints every object it renders and fails synthesis",
    )


#: Self-check of the objects the kueue backend renders (``KUEUE_LINT_IDS``).
KUEUE_LINTS = (
    _kueue_lint(
        "HPT-KUEUE-NO-NAMESPACE-SELECTOR", "a ClusterQueue without `namespaceSelector` admits no namespace"
    ),
    _kueue_lint(
        "HPT-KUEUE-BORROW-WITHOUT-RECLAIM", "`borrowWithinCohort` without `reclaimWithinCohort` is rejected"
    ),
    _kueue_lint(
        "HPT-KUEUE-LIMIT-WITHOUT-COHORT", "a borrowing or lending limit without a cohort is rejected"
    ),
    _kueue_lint("HPT-KUEUE-LENDING-ABOVE-NOMINAL", "a `lendingLimit` above `nominalQuota` is rejected"),
    _kueue_lint("HPT-KUEUE-LOCALQUEUE-TARGET", "a LocalQueue naming no rendered ClusterQueue admits nothing"),
    _kueue_lint(
        "HPT-KUEUE-FLAVOR-UNDEFINED", "a ClusterQueue flavor without a ResourceFlavor stays inactive"
    ),
    _kueue_lint("HPT-KUEUE-FLOAT-QUANTITY", "a non-integer quantity is rejected by the CRD schema"),
    _kueue_lint(
        "HPT-KUEUE-RESOURCE-ORDER", "flavor resources out of the order of `coveredResources` are rejected"
    ),
    _kueue_lint("HPT-KUEUE-COHORT-QUOTA", "a quota on a Cohort over-commits the cluster"),
    _kueue_lint(
        "HPT-KUEUE-NAMESPACE-NOT-SELECTED",
        "a LocalQueue in a namespace its ClusterQueue does not select stays pending",
    ),
)
