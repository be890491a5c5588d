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

from hyperpod_tenancy.k8s.kueue._common import (
    COHORT,
    CPU,
    FAIR_SHARING_PREEMPTION_STRATEGIES,
    INSTANCE_TYPE_LABEL,
    KUEUE_API_VERSION,
    KUEUE_FRAMEWORKS,
    MANAGED_BY_LABELS,
    MEMORY,
    UNMANAGED_RESOURCE_PREFIXES,
)
from hyperpod_tenancy.k8s.kueue.helm import kueue_helm_values
from hyperpod_tenancy.k8s.kueue.lint import (
    KUEUE_LINT_IDS,
    LINT_BORROW_WITHOUT_RECLAIM,
    LINT_COHORT_QUOTA,
    LINT_FLAVOR_UNDEFINED,
    LINT_FLOAT_QUANTITY,
    LINT_LENDING_ABOVE_NOMINAL,
    LINT_LIMIT_WITHOUT_COHORT,
    LINT_LOCALQUEUE_TARGET,
    LINT_NAMESPACE_NOT_SELECTED,
    LINT_NO_NAMESPACE_SELECTOR,
    LINT_RESOURCE_ORDER,
    lint_kueue_objects,
)
from hyperpod_tenancy.k8s.kueue.objects import cluster_objects, team_objects

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
