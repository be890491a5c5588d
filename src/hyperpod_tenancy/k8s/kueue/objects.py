"""The ResourceFlavors, Cohort and WorkloadPriorityClasses of the cluster, and each team's ClusterQueue and LocalQueue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.kueue._common import (
    COHORT,
    CPU,
    EFA,
    INSTANCE_TYPE_LABEL,
    KUEUE_API_VERSION,
    MANAGED_BY_LABELS,
    MEMORY,
    TOPOLOGY,
)
from hyperpod_tenancy.k8s.kueue.lint import lint_kueue_objects
from hyperpod_tenancy.k8s.quantities import cpu_millis, cpu_quantity, memory_mib, memory_quantity
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.borrowing import Resource, borrowing_limit
from hyperpod_tenancy.policy.grains import guaranteed, partitions
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.mig import PARTITION_RESOURCE_PREFIX, offered, partition_resource
from hyperpod_tenancy.policy.model import (
    InstanceGroup,
    Platform,
    PreemptTeamTasks,
    SharingStrategy,
    Team,
)
from hyperpod_tenancy.policy.topology import TOPOLOGY_LEVELS

__all__ = ["cluster_objects", "team_objects", "topology_aware_types"]


@dataclass(frozen=True)
class _FlavorShape:
    """Schedulable resources of one instance of a flavor, in base units (devices, millicores, MiB)."""

    instance_type: str
    accelerator_resource: str
    accelerators: int
    cpu_millis: int
    memory_mib: int
    efa_interfaces: int = 0
    #: Partitions one instance offers, by resource (``nvidia.com/mig-1g.10gb``: 56); its GPUs are then not offered.
    partitions: Mapping[str, int] = field(default_factory=dict)

    def amount(self, resource: str) -> int:
        if resource.startswith(PARTITION_RESOURCE_PREFIX):
            return self.partitions.get(resource, 0)
        kind = _borrowed_resource(resource)
        if kind is Resource.ACCELERATORS:
            return self.accelerators if resource == self.accelerator_resource else 0
        return {
            Resource.CPU: self.cpu_millis,
            Resource.MEMORY: self.memory_mib,
            Resource.EFA: self.efa_interfaces,
        }[kind]


def _metadata(
    name: str, *, namespace: str | None = None, extra: Mapping[str, str] | None = None
) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace is not None:
        md["namespace"] = namespace
    md["labels"] = {**MANAGED_BY_LABELS, **(extra or {})}
    return md


def _instance_types(platform: Platform) -> list[str]:
    """Instance types of the cluster, in instance-group order, each once."""
    return list(dict.fromkeys(g.instance_type for g in platform.cluster.instance_groups))


def topology_aware_types(platform: Platform) -> list[str]:
    """Instance types placed by network topology (``topologyAware`` groups), in instance-group order."""
    return [
        t
        for t in _instance_types(platform)
        if any(g.topology_aware for g in platform.cluster.instance_groups if g.instance_type == t)
    ]


def _shape_of(platform: Platform, index: int, group: InstanceGroup) -> _FlavorShape:
    shape = resource_shape(group)
    if shape is None:
        raise TenancyError(
            f"cluster.instanceGroups[{index}] ({group.name!r}, {group.instance_type}): no resource shape is "
            f"known for {group.instance_type}, so its Kueue quotas cannot be computed. Set `resources:` on "
            f"instance group {group.name!r} (accelerators, vcpus, memoryGiB and, for non-NVIDIA devices, "
            "acceleratorResource)."
        )
    made = {
        partition_resource(partition): n
        for partition, n in offered(platform, group.instance_type, shape.accelerators).items()
    }
    return _FlavorShape(
        instance_type=group.instance_type,
        accelerator_resource=shape.accelerator_resource,
        # partitioned GPUs are offered as their partitions only (the device plugin's mixed strategy)
        accelerators=0 if made else shape.accelerators,
        cpu_millis=cpu_millis(group, shape),
        memory_mib=memory_mib(shape),
        efa_interfaces=shape.efa_interfaces,
        partitions=made,
    )


def _flavor_shapes(platform: Platform) -> dict[str, _FlavorShape]:
    shapes: dict[str, _FlavorShape] = {}
    first: dict[str, InstanceGroup] = {}
    for i, group in enumerate(platform.cluster.instance_groups):
        shape = _shape_of(platform, i, group)
        known = shapes.get(group.instance_type)
        if known is None:
            shapes[group.instance_type] = shape
            first[group.instance_type] = group
        elif known != shape:
            raise TenancyError(
                f"instance groups {first[group.instance_type].name!r} and {group.name!r} are both "
                f"{group.instance_type} but differ in threadsPerCore or resources; Kueue has one flavor per "
                "instance type. Give them the same threadsPerCore and resources."
            )
    return shapes


def _covered_resources(shapes: Iterable[_FlavorShape]) -> list[str]:
    shapes = list(shapes)
    accelerators = list(dict.fromkeys(s.accelerator_resource for s in shapes))
    partitioned = sorted({resource for s in shapes for resource in s.partitions})
    efa = [EFA] if any(s.efa_interfaces for s in shapes) else []
    return [*accelerators, *partitioned, CPU, MEMORY, *efa]


def _quantity(resource: str, base: int) -> int | str:
    """Render a base-unit amount as an int or a Kubernetes quantity string (never a float)."""
    if resource == CPU:
        return cpu_quantity(base)
    if resource == MEMORY:
        return memory_quantity(base)
    return base


def _borrow_victim_threshold(platform: Platform) -> int | None:
    """Return the highest priority value at or below which every class is ``preemptible`` (None: none)."""
    classes = platform.scheduling.priority_classes
    protected = min((pc.weight for pc in classes if not pc.preemptible), default=None)
    eligible = [
        pc.weight for pc in classes if pc.preemptible and (protected is None or pc.weight < protected)
    ]
    return max(eligible, default=None)


def _preemption(platform: Platform, team: Team, sharing: SharingStrategy) -> dict[str, Any]:
    within = (
        "LowerPriority" if team.compute.preempt_team_tasks is PreemptTeamTasks.LOWER_PRIORITY else "Never"
    )
    preemption: dict[str, Any] = {
        "reclaimWithinCohort": "Any" if sharing.lends else "Never",
        "withinClusterQueue": within,
    }
    threshold = _borrow_victim_threshold(platform)
    if not platform.scheduling.fair_share and sharing.borrows and threshold is not None:
        preemption["borrowWithinCohort"] = {"policy": "LowerPriority", "maxPriorityThreshold": threshold}
    return preemption


def _borrowed_resource(resource: str) -> Resource:
    """Return the quota rules' name for a covered resource (every accelerator resource is ``ACCELERATORS``)."""
    if resource == CPU:
        return Resource.CPU
    if resource == MEMORY:
        return Resource.MEMORY
    if resource == EFA:
        return Resource.EFA
    return Resource.ACCELERATORS


def _flavor_quota(
    platform: Platform, team: Team, shape: _FlavorShape, covered: Sequence[str], sharing: SharingStrategy
) -> dict[str, Any]:
    resources = []
    for resource in covered:
        if resource.startswith(PARTITION_RESOURCE_PREFIX):
            resources.append(_partition_quota(platform, team, shape, resource, sharing))
            continue
        per_instance = shape.amount(resource)
        kind = _borrowed_resource(resource)
        nominal = guaranteed(platform, team, shape.instance_type, per_instance, kind)
        entry: dict[str, Any] = {"name": resource, "nominalQuota": _quantity(resource, nominal)}
        borrowing = borrowing_limit(platform, team, shape.instance_type, kind, per_instance)
        entry["borrowingLimit"] = _quantity(resource, borrowing)
        if not sharing.lends:
            entry["lendingLimit"] = _quantity(resource, 0)
        resources.append(entry)
    return {"name": shape.instance_type, "resources": resources}


def _partition_quota(
    platform: Platform, team: Team, shape: _FlavorShape, resource: str, sharing: SharingStrategy
) -> dict[str, Any]:
    """Return the team's quota of one partition resource on one flavor: its partitions, and what it may borrow.

    It may borrow ``borrowLimit`` percent of them, or its absolute limit's partitions of that profile on the type.
    """
    nominal = sum(
        n
        for partition, n in partitions(platform, team, shape.instance_type).items()
        if partition_resource(partition) == resource and resource in shape.partitions
    )
    entry: dict[str, Any] = {
        "name": resource,
        "nominalQuota": nominal,
        "borrowingLimit": sharing.borrowing_limit(nominal, team.compute.borrow_limit)
        if sharing.borrows
        else 0,
    }
    if not sharing.lends:
        entry["lendingLimit"] = 0
    return entry


def _raise_on_findings(findings: list[str], what: str) -> None:
    if findings:
        lines = "\n".join(f"  - {f}" for f in findings)
        raise TenancyError(f"the Kueue rendering of {what} failed its self-check:\n{lines}")


def cluster_objects(platform: Platform) -> list[dict[str, Any]]:
    """Cluster-scoped Kueue objects: ResourceFlavors, the Cohort and the WorkloadPriorityClasses.

    One ResourceFlavor per instance type of the instance groups (named after the type; a topology-aware type's
    names the Topology :data:`TOPOLOGY` of :data:`~hyperpod_tenancy.policy.topology.TOPOLOGY_LEVELS`, rendered
    when there is one), the cohort
    :data:`COHORT` (no quota of its own), and one WorkloadPriorityClass ``<name>-priority`` per priority class
    with ``value`` = weight.

    Raises:
        TenancyError: the rendering fails :func:`lint_kueue_objects`.

    """
    placed = topology_aware_types(platform)
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": KUEUE_API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": _metadata(instance_type),
            "spec": {
                "nodeLabels": {INSTANCE_TYPE_LABEL: instance_type},
                **({"topologyName": TOPOLOGY} if instance_type in placed else {}),
            },
        }
        for instance_type in _instance_types(platform)
    ]
    if placed:
        objects.append(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": "Topology",
                "metadata": _metadata(TOPOLOGY),
                "spec": {"levels": [{"nodeLabel": level} for level in TOPOLOGY_LEVELS]},
            }
        )
    objects.append(
        {"apiVersion": KUEUE_API_VERSION, "kind": "Cohort", "metadata": _metadata(COHORT), "spec": {}}
    )
    for pc in platform.scheduling.priority_classes:
        objects.append(
            {
                "apiVersion": KUEUE_API_VERSION,
                "kind": "WorkloadPriorityClass",
                "metadata": _metadata(names.workload_priority_class(pc.name)),
                "value": pc.weight,
                "description": (
                    f"Priority class {pc.name!r} of platform {platform.name!r} (weight {pc.weight}"
                    f"{', preemptible: jobs must declare a checkpoint' if pc.preemptible else ''})."
                ),
            }
        )
    _raise_on_findings(lint_kueue_objects(objects), "the cluster objects")
    return objects


def team_objects(platform: Platform, team: Team) -> list[dict[str, Any]]:
    """Render the team's ClusterQueue and LocalQueue.

    ClusterQueue ``hyperpod-ns-<team>-clusterqueue``; LocalQueue ``hyperpod-ns-<team>-localqueue`` in
    namespace ``hyperpod-ns-<team>``. The module documentation says how quotas, sharing, preemption and
    fair share are expressed.

    Raises:
        TenancyError: the team is not hosted on this cluster; an instance group has no resource shape (set
            ``resources:`` on it); or the rendering fails :func:`lint_kueue_objects`.

    """
    if team not in platform.hosted_teams:
        raise TenancyError(
            f"team {team.name!r} is not hosted on cluster {platform.cluster.name!r} (its data classification "
            "needs a dedicated cluster); it gets no ClusterQueue here."
        )
    shapes = _flavor_shapes(platform)
    covered = _covered_resources(shapes.values())
    sharing = platform.effective_sharing(team)
    compute = team.compute
    namespace = names.namespace(team.name)
    team_labels = {labels.TEAM_LABEL: team.name}
    cluster_queue = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "ClusterQueue",
        "metadata": _metadata(names.cluster_queue(team.name), extra=team_labels),
        "spec": {
            "cohortName": COHORT,
            "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: namespace}},
            "queueingStrategy": "BestEffortFIFO",
            "resourceGroups": [
                {
                    "coveredResources": covered,
                    "flavors": [
                        _flavor_quota(platform, team, shape, covered, sharing) for shape in shapes.values()
                    ],
                }
            ],
            "preemption": _preemption(platform, team, sharing),
            "fairSharing": {"weight": compute.fair_share_weight},
        },
    }
    local_queue = {
        "apiVersion": KUEUE_API_VERSION,
        "kind": "LocalQueue",
        "metadata": _metadata(names.local_queue(team.name), namespace=namespace, extra=team_labels),
        "spec": {"clusterQueue": names.cluster_queue(team.name)},
    }
    objects: list[dict[str, Any]] = [cluster_queue, local_queue]
    _raise_on_findings(lint_kueue_objects([*cluster_objects(platform), *objects]), f"team {team.name!r}")
    return objects
