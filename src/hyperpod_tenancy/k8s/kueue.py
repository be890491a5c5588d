"""Self-managed Kueue (``fairness_backend: kueue``): ``kueue.x-k8s.io/v1beta2`` manifests as plain dicts.

The objects carry the names HyperPod Task Governance uses (:mod:`hyperpod_tenancy.policy.names`), so jobs,
dashboards and runbooks do not change with the backend, and they express the same policy as the Task
Governance rendering (:mod:`hyperpod_tenancy.constructs._private.task_governance`):

* **Flavors.** One ResourceFlavor per instance type, named after it and pinned with
  ``node.kubernetes.io/instance-type``. Every ClusterQueue lists every flavor (``nominalQuota: 0`` where the
  team has no quota), because a ClusterQueue can only ever use a flavor it lists.
* **Resources.** One resource group covering every accelerator kind of the cluster (``nvidia.com/gpu``,
  ``aws.amazon.com/neurondevice``...), then ``cpu`` and ``memory``; Kueue allows a resource in one group
  only, so a mixed GPU/Trainium cluster still has a single group. Quotas are ``count`` x the per-instance
  shape of :func:`hyperpod_tenancy.policy.resource_shape`; schedulable cpu is
  ``vcpus x threadsPerCore / 2`` (``threadsPerCore: 1`` halves the vCPUs EC2 advertises).
* **Sharing.** All ClusterQueues share the cohort :data:`COHORT` (a Cohort object without quota: quota on
  a Cohort is added on top of its members, it is not a split). ``LendAndBorrow``:
  ``borrowingLimit = floor(nominal x borrowLimit / 100)``, lending unlimited; ``Lend``:
  ``borrowingLimit: 0``; ``DontLend``: ``borrowingLimit: 0`` and ``lendingLimit: 0``. With
  ``scheduling.idle_resource_sharing: false`` every team is ``DontLend``. Amounts are floored to whole
  accelerators, millicores and MiB.
* **Preemption.** ``withinClusterQueue`` follows ``preemptTeamTasks`` (``LowerPriority`` or ``Never``).
  Teams that lend reclaim lent quota with ``reclaimWithinCohort: Any``. ``borrowWithinCohort`` is set only
  where it has an effect: classic preemption (fair share off; Kueue ignores it under fair sharing), a
  team that borrows (so ``reclaimWithinCohort`` is set, which Kueue requires), and only against priorities
  that are all ``preemptible`` (``maxPriorityThreshold``), so work that does not checkpoint is never its
  victim.
* **Fair share.** ``fairSharing.weight`` is the team's ``fairShareWeight``; Kueue uses it only when fair
  sharing is enabled in its configuration (:func:`kueue_helm_values`).

The renderers check their own output with :func:`lint_kueue_objects` and raise
:class:`~hyperpod_tenancy.errors.TenancyError` on any finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels, workloads
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import (
    InstanceGroup,
    Platform,
    PreemptTeamTasks,
    SharingStrategy,
    Team,
)

__all__ = [
    "COHORT",
    "CPU",
    "FAIR_SHARING_PREEMPTION_STRATEGIES",
    "INSTANCE_TYPE_LABEL",
    "KUEUE_API_VERSION",
    "KUEUE_FRAMEWORKS",
    "KUEUE_LINT_IDS",
    "LINT_BORROW_WITHOUT_RECLAIM",
    "LINT_COHORT_QUOTA",
    "LINT_FLAVOR_UNDEFINED",
    "LINT_FLOAT_QUANTITY",
    "LINT_LENDING_ABOVE_NOMINAL",
    "LINT_LIMIT_WITHOUT_COHORT",
    "LINT_LOCALQUEUE_TARGET",
    "LINT_NAMESPACE_NOT_SELECTED",
    "LINT_NO_NAMESPACE_SELECTOR",
    "LINT_RESOURCE_ORDER",
    "MANAGED_BY_LABELS",
    "MEMORY",
    "UNMANAGED_RESOURCE_PREFIXES",
    "cluster_objects",
    "kueue_helm_values",
    "lint_kueue_objects",
    "team_objects",
]

#: API version of every Kueue object rendered here (served and stored by Kueue 0.16 and later).
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
#: The one cohort every team ClusterQueue joins. Our own name: the name Task Governance uses internally is
#: not documented, and the two backends never run on the same cluster.
COHORT = "hyperpod-tenancy-cohort"
#: Node label a ResourceFlavor pins its instance type with (set by EKS on every HyperPod node).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Kubernetes resource names.
CPU = "cpu"
MEMORY = "memory"
#: Labels on every rendered object.
MANAGED_BY_LABELS: Mapping[str, str] = labels.MANAGED_BY_LABELS
#: Job integrations enabled in the Kueue configuration: the Kueue integration of every workload kind of
#: :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS` that has one (the one table admission and RBAC read
#: too). Kueue skips an integration whose CRD is not installed.
KUEUE_FRAMEWORKS: tuple[str, ...] = tuple(
    k.kueue_framework for k in workloads.WORKLOAD_KINDS if k.kueue_framework is not None
)
#: EFA interfaces: covered by the ClusterQueues (a job that holds every EFA interface of the nodes blocks every
#: other multi-node job, GPUs or not), quota = EFA interfaces per instance x instances.
EFA = "vpc.amazonaws.com/efa"
#: Resources Kueue does not account: a request for a resource no ClusterQueue covers makes a workload
#: inadmissible. Huge pages and ephemeral storage are capped by the namespace's ResourceQuota backstop
#: (``compute-ceiling``) instead.
UNMANAGED_RESOURCE_PREFIXES: tuple[str, ...] = ("ephemeral-storage", "hugepages-")
#: Fair-sharing preemption strategies (Kueue's defaults), written out so the configuration enables it.
FAIR_SHARING_PREEMPTION_STRATEGIES: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")

# Lint IDs: every one names something upstream rejects or something that silently admits nothing.
#: ClusterQueue without ``namespaceSelector``: no namespace can submit to it.
LINT_NO_NAMESPACE_SELECTOR = "HPT-KUEUE-NO-NAMESPACE-SELECTOR"
#: ``borrowWithinCohort`` without ``reclaimWithinCohort``: rejected by the CRD rule and the webhook.
LINT_BORROW_WITHOUT_RECLAIM = "HPT-KUEUE-BORROW-WITHOUT-RECLAIM"
#: ``borrowingLimit``/``lendingLimit`` without a cohort (ClusterQueue) or parent (Cohort): rejected.
LINT_LIMIT_WITHOUT_COHORT = "HPT-KUEUE-LIMIT-WITHOUT-COHORT"
#: ``lendingLimit`` above ``nominalQuota``: rejected by the webhook.
LINT_LENDING_ABOVE_NOMINAL = "HPT-KUEUE-LENDING-ABOVE-NOMINAL"
#: LocalQueue without ``clusterQueue`` or naming a ClusterQueue that is not rendered: admits nothing.
LINT_LOCALQUEUE_TARGET = "HPT-KUEUE-LOCALQUEUE-TARGET"
#: ClusterQueue flavor without a ResourceFlavor: the ClusterQueue stays inactive.
LINT_FLAVOR_UNDEFINED = "HPT-KUEUE-FLAVOR-UNDEFINED"
#: Non-integer JSON number (or bool) as a quantity: rejected by the CRD schema.
LINT_FLOAT_QUANTITY = "HPT-KUEUE-FLOAT-QUANTITY"
#: Flavor resources not in the order and number of ``coveredResources``: rejected.
LINT_RESOURCE_ORDER = "HPT-KUEUE-RESOURCE-ORDER"
#: Quota on a Cohort: added on top of the members' quotas, over-committing the cluster.
LINT_COHORT_QUOTA = "HPT-KUEUE-COHORT-QUOTA"
#: LocalQueue in a namespace its ClusterQueue's selector does not select: workloads stay pending.
LINT_NAMESPACE_NOT_SELECTED = "HPT-KUEUE-NAMESPACE-NOT-SELECTED"
#: Every lint ID.
KUEUE_LINT_IDS: tuple[str, ...] = (
    LINT_NO_NAMESPACE_SELECTOR,
    LINT_BORROW_WITHOUT_RECLAIM,
    LINT_LIMIT_WITHOUT_COHORT,
    LINT_LENDING_ABOVE_NOMINAL,
    LINT_LOCALQUEUE_TARGET,
    LINT_FLAVOR_UNDEFINED,
    LINT_FLOAT_QUANTITY,
    LINT_RESOURCE_ORDER,
    LINT_COHORT_QUOTA,
    LINT_NAMESPACE_NOT_SELECTED,
)

_MIB_PER_GIB = 1024
_MILLI = 1000


@dataclass(frozen=True)
class _FlavorShape:
    """Schedulable resources of one instance of a flavor, in base units (devices, millicores, MiB)."""

    instance_type: str
    accelerator_resource: str
    accelerators: int
    cpu_millis: int
    memory_mib: int
    efa_interfaces: int = 0

    def amount(self, resource: str) -> int:
        if resource == CPU:
            return self.cpu_millis
        if resource == MEMORY:
            return self.memory_mib
        if resource == EFA:
            return self.efa_interfaces
        return self.accelerators if resource == self.accelerator_resource else 0


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


def _shape_of(index: int, group: InstanceGroup) -> _FlavorShape:
    shape = resource_shape(group)
    if shape is None:
        raise TenancyError(
            f"cluster.instanceGroups[{index}] ({group.name!r}, {group.instance_type}): no resource shape is "
            f"known for {group.instance_type}, so its Kueue quotas cannot be computed. Set `resources:` on "
            f"instance group {group.name!r} (accelerators, vcpus, memoryGiB and, for non-NVIDIA devices, "
            "acceleratorResource)."
        )
    return _FlavorShape(
        instance_type=group.instance_type,
        accelerator_resource=shape.accelerator_resource,
        accelerators=shape.accelerators,
        cpu_millis=shape.vcpus * group.threads_per_core * _MILLI // 2,
        memory_mib=shape.memory_gib * _MIB_PER_GIB,
        efa_interfaces=shape.efa_interfaces,
    )


def _flavor_shapes(platform: Platform) -> dict[str, _FlavorShape]:
    shapes: dict[str, _FlavorShape] = {}
    first: dict[str, InstanceGroup] = {}
    for i, group in enumerate(platform.cluster.instance_groups):
        shape = _shape_of(i, group)
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
    efa = [EFA] if any(s.efa_interfaces for s in shapes) else []
    return [*accelerators, CPU, MEMORY, *efa]


def _quantity(resource: str, base: int) -> int | str:
    """Render a base-unit amount as an int or a Kubernetes quantity string (never a float)."""
    if resource == CPU:
        return base // _MILLI if base % _MILLI == 0 else f"{base}m"
    if resource == MEMORY:
        return f"{base // _MIB_PER_GIB}Gi" if base % _MIB_PER_GIB == 0 else f"{base}Mi"
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


def _flavor_quota(
    shape: _FlavorShape, covered: Sequence[str], count: int, sharing: SharingStrategy, borrow_limit: int
) -> dict[str, Any]:
    resources = []
    for resource in covered:
        nominal = count * shape.amount(resource)
        entry: dict[str, Any] = {"name": resource, "nominalQuota": _quantity(resource, nominal)}
        borrowing = sharing.borrowing_limit(nominal, borrow_limit)
        entry["borrowingLimit"] = _quantity(resource, borrowing)
        if not sharing.lends:
            entry["lendingLimit"] = _quantity(resource, 0)
        resources.append(entry)
    return {"name": shape.instance_type, "resources": resources}


def _raise_on_findings(findings: list[str], what: str) -> None:
    if findings:
        lines = "\n".join(f"  - {f}" for f in findings)
        raise TenancyError(f"the Kueue rendering of {what} failed its self-check:\n{lines}")


def cluster_objects(platform: Platform) -> list[dict[str, Any]]:
    """Cluster-scoped Kueue objects: ResourceFlavors, the Cohort and the WorkloadPriorityClasses.

    One ResourceFlavor per instance type of the instance groups (named after the type), the cohort
    :data:`COHORT` (no quota of its own), and one WorkloadPriorityClass ``<name>-priority`` per priority class
    with ``value`` = weight.

    Raises:
        TenancyError: the rendering fails :func:`lint_kueue_objects`.

    """
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": KUEUE_API_VERSION,
            "kind": "ResourceFlavor",
            "metadata": _metadata(instance_type),
            "spec": {"nodeLabels": {INSTANCE_TYPE_LABEL: instance_type}},
        }
        for instance_type in _instance_types(platform)
    ]
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
                        _flavor_quota(
                            shape, covered, compute.quotas.get(itype, 0), sharing, compute.borrow_limit
                        )
                        for itype, shape in shapes.items()
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


def kueue_helm_values(platform: Platform) -> dict[str, Any]:
    """Values for the upstream Kueue Helm chart (v0.19.2) for the ``kueue`` fairness backend.

    The chart takes the whole manager configuration as one YAML string
    (``managerConfig.controllerManagerConfigYaml``, ``config.kueue.x-k8s.io/v1beta2``); this renders the
    chart's defaults plus:

    * ``fairSharing.preemptionStrategies`` when ``scheduling.fair_share`` is true (in config v1beta2 the
      presence of ``fairSharing`` enables it; without it ClusterQueue weights are ignored);
    * the job integrations of :data:`KUEUE_FRAMEWORKS`;
    * ``manageJobsWithoutQueueName`` limited to tenant namespaces (label ``hyperpod-tenancy.io/tenant``), so
      a workload that slips past the admission policies waits for a queue instead of running outside
      every quota;
    * ``resources.excludeResourcePrefixes`` (:data:`UNMANAGED_RESOURCE_PREFIXES`: huge pages and ephemeral
      storage, which the ResourceQuota backstop caps); EFA interfaces are covered by the ClusterQueues;
    * ``metrics.enableClusterQueueResources`` for per-queue usage and quota metrics (chargeback).
    """
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 5,
                "LocalQueue.kueue.x-k8s.io": 1,
                "Cohort.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {labels.TENANT_LABEL: "true"}},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
        "resources": {"excludeResourcePrefixes": list(UNMANAGED_RESOURCE_PREFIXES)},
    }
    if platform.scheduling.fair_share:
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_PREEMPTION_STRATEGIES)}
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}


# --------------------------------------------------------------------------------------------------- lint

_QUANTITY = re.compile(
    r"^([+-]?)((\d+(\.\d*)?)|(\.\d+))(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?((\d+(\.\d*)?)|(\.\d+))))?$"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUOTA_FIELDS = ("nominalQuota", "borrowingLimit", "lendingLimit")


def _parse_quantity(value: object) -> Decimal | None:
    """Parse a Kubernetes quantity into a Decimal (None when it is not one, e.g. a float or a bool)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    match = _QUANTITY.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    number = Decimal(match.group(1) + match.group(2))
    suffix = match.group(6) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number * (Decimal(10) ** int(suffix[1:]))


def _as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _lint_resource_groups(
    ref: str, spec: dict[str, Any], *, has_parent: bool, is_cq: bool, out: list[str]
) -> None:
    for i, group in enumerate(_as_list(spec.get("resourceGroups"))):
        covered = _as_list(_as_dict(group).get("coveredResources"))
        for j, item in enumerate(_as_list(_as_dict(group).get("flavors"))):
            flavor = _as_dict(item)
            where = f"resourceGroups[{i}].flavors[{j}] ({flavor.get('name')})"
            resources = [_as_dict(r) for r in _as_list(flavor.get("resources"))]
            listed = [r.get("name") for r in resources]
            if listed != covered:
                out.append(
                    f"{LINT_RESOURCE_ORDER} {ref}: {where} resources {listed} must list exactly "
                    f"coveredResources {covered} in the same order."
                )
            for r in resources:
                _lint_resource(
                    ref, f"{where} {r.get('name')}", r, has_parent=has_parent, is_cq=is_cq, out=out
                )


def _lint_resource(
    ref: str, where: str, r: dict[str, Any], *, has_parent: bool, is_cq: bool, out: list[str]
) -> None:
    parent = "cohortName" if is_cq else "parentName"
    for field in _QUOTA_FIELDS:
        if field in r and _parse_quantity(r[field]) is None:
            out.append(
                f"{LINT_FLOAT_QUANTITY} {ref}: {where}.{field} = {r[field]!r} is not an integer or a "
                "quantity string such as '96' or '2048Gi'."
            )
    for field in ("borrowingLimit", "lendingLimit"):
        if field in r and not has_parent:
            out.append(
                f"{LINT_LIMIT_WITHOUT_COHORT} {ref}: {where}.{field} is set but {parent} is empty; Kueue "
                "rejects limits outside a cohort."
            )
    nominal = _parse_quantity(r.get("nominalQuota"))
    lending = _parse_quantity(r.get("lendingLimit"))
    if is_cq and nominal is not None and lending is not None and lending > nominal:
        out.append(
            f"{LINT_LENDING_ABOVE_NOMINAL} {ref}: {where}.lendingLimit {r.get('lendingLimit')!r} exceeds "
            f"nominalQuota {r.get('nominalQuota')!r}."
        )


def _selects_namespace(selector: dict[str, Any], namespace: str) -> bool | None:
    """Tell whether a selector selects ``namespace`` judging by its name label only (None: cannot tell)."""
    if selector.get("matchExpressions"):
        return None
    match_labels = _as_dict(selector.get("matchLabels"))
    if set(match_labels) - {labels.NAMESPACE_NAME_LABEL}:
        return None
    wanted = match_labels.get(labels.NAMESPACE_NAME_LABEL)
    return wanted is None or wanted == namespace


def _lint_cluster_queue(name: str, cq: dict[str, Any], flavors: Mapping[str, Any], out: list[str]) -> None:
    ref = f"ClusterQueue/{name}"
    spec = _as_dict(cq.get("spec"))
    if spec.get("namespaceSelector") is None:
        out.append(
            f"{LINT_NO_NAMESPACE_SELECTOR} {ref}: spec.namespaceSelector is unset, which selects no "
            "namespace: nothing can be admitted. Select the team namespace."
        )
    preemption = _as_dict(spec.get("preemption"))
    policy = _as_dict(preemption.get("borrowWithinCohort")).get("policy", "Never")
    if policy != "Never" and preemption.get("reclaimWithinCohort", "Never") == "Never":
        out.append(
            f"{LINT_BORROW_WITHOUT_RECLAIM} {ref}: preemption.borrowWithinCohort.policy is {policy!r} but "
            "reclaimWithinCohort is Never; Kueue rejects the queue."
        )
    _lint_resource_groups(ref, spec, has_parent=bool(spec.get("cohortName")), is_cq=True, out=out)
    if not flavors:
        return
    for group in _as_list(spec.get("resourceGroups")):
        for flavor in _as_list(_as_dict(group).get("flavors")):
            flavor_name = _as_dict(flavor).get("name")
            if flavor_name not in flavors:
                out.append(
                    f"{LINT_FLAVOR_UNDEFINED} {ref}: flavor {flavor_name!r} has no ResourceFlavor; the "
                    "ClusterQueue stays inactive (FlavorNotFound)."
                )


def _lint_cohort(name: str, cohort: dict[str, Any], out: list[str]) -> None:
    spec = _as_dict(cohort.get("spec"))
    if spec.get("resourceGroups"):
        out.append(
            f"{LINT_COHORT_QUOTA} Cohort/{name}: has resourceGroups; Cohort quota is added on top of its "
            "ClusterQueues' quotas (it is not split among them) and over-commits the cluster."
        )
    has_parent = bool(spec.get("parentName"))
    _lint_resource_groups(f"Cohort/{name}", spec, has_parent=has_parent, is_cq=False, out=out)


def _lint_local_queue(name: str, lq: dict[str, Any], queues: Mapping[str, Any], out: list[str]) -> None:
    ref = f"LocalQueue/{name}"
    target = _as_dict(lq.get("spec")).get("clusterQueue")
    if not target:
        out.append(f"{LINT_LOCALQUEUE_TARGET} {ref}: spec.clusterQueue is unset; the queue admits nothing.")
        return
    if target not in queues:
        out.append(
            f"{LINT_LOCALQUEUE_TARGET} {ref}: spec.clusterQueue {target!r} is not among the rendered "
            "ClusterQueues; its workloads would never be admitted."
        )
        return
    namespace = str(_as_dict(lq.get("metadata")).get("namespace", ""))
    selector = _as_dict(queues[target].get("spec")).get("namespaceSelector")
    if isinstance(selector, dict) and _selects_namespace(selector, namespace) is False:
        out.append(
            f"{LINT_NAMESPACE_NOT_SELECTED} {ref}: namespace {namespace!r} is not selected by "
            f"ClusterQueue {target!r} (namespaceSelector {selector}); its workloads would stay pending."
        )


def lint_kueue_objects(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """Self-check rendered Kueue objects; return one ``"<ID> <Kind>/<name>: <problem>"`` per finding.

    IDs (:data:`KUEUE_LINT_IDS`) name what upstream Kueue rejects or what silently admits nothing:
    a ClusterQueue without ``namespaceSelector``; ``borrowWithinCohort`` without ``reclaimWithinCohort``;
    borrowing/lending limits without a cohort (parent for a Cohort); ``lendingLimit`` above
    ``nominalQuota``; a LocalQueue without a ClusterQueue or pointing at one not in ``objects``; a
    ClusterQueue flavor without a ResourceFlavor in ``objects`` (checked when ``objects`` holds any
    ResourceFlavor); float quantities; flavor resources out of ``coveredResources`` order; quota on a
    Cohort; a LocalQueue whose namespace its ClusterQueue does not select.
    """
    out: list[str] = []
    by_kind: dict[str, dict[str, dict[str, Any]]] = {}
    for obj in objects:
        kind = str(obj.get("kind", ""))
        name = str(_as_dict(obj.get("metadata")).get("name", ""))
        by_kind.setdefault(kind, {})[name] = dict(obj)
    flavors = by_kind.get("ResourceFlavor", {})
    queues = by_kind.get("ClusterQueue", {})
    for name, cq in queues.items():
        _lint_cluster_queue(name, cq, flavors, out)
    for name, cohort in by_kind.get("Cohort", {}).items():
        _lint_cohort(name, cohort, out)
    for name, lq in by_kind.get("LocalQueue", {}).items():
        _lint_local_queue(name, lq, queues, out)
    return out
