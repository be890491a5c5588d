"""This project's reading of HyperPod Task Governance as Kueue objects: what a synthesized
``AWS::SageMaker::ClusterSchedulerConfig`` and the teams' ``AWS::SageMaker::ComputeQuota`` properties are taken
to become on the cluster, so that the fairness scenarios can be played on real Kueue for the Task Governance
backend too.

**This is not the service.** Task Governance generates its Kueue objects itself and AWS does not publish that
translation; every field below says where its reading comes from, and the docs list it among what stays
simulated. Sources:

* [API] SageMaker API reference: ``ComputeQuotaConfig`` (``PreemptTeamTasks``: "When set to LowerPriority, the
  entity's lower priority tasks are preempted by their own higher priority tasks"),
  ``ResourceSharingConfig`` (``DontLend``: "entities do not lend idle compute"; ``Lend``: "can lend idle
  compute"; ``LendAndBorrow``: "can lend idle compute and borrow idle compute"; ``BorrowLimit``: "percent of
  idle compute that the team is allowed to borrow", default 50; ``AbsoluteBorrowLimits``: "the maximum amount
  of specific resource types ... that an entity can borrow, regardless of the percentage-based BorrowLimit"),
  ``ComputeQuotaResourceConfig`` (``Count`` instances of ``InstanceType``; ``Accelerators``, ``VCpu`` or
  ``MemoryInGiB`` with the others filled by ratio: :func:`fairness_interpreters.absolute_ceilings`),
  ``ComputeQuotaTarget`` (``FairShareWeight``), ``SchedulerConfig``
  (``PriorityClasses`` ``Name``/``Weight``, ``FairShare``, ``IdleResourceSharing``):
  https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ComputeQuotaConfig.html and the pages it links.
* [TG-DOCS] HyperPod task governance for model deployment: "Reserve sufficient GPU resources in your team's
  ``ClusterQueue``"; borrowed pods "may be evicted if the lending team reclaims capacity":
  https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-model-deployment-task-gov.md
* [NAMES] ``research/hyperpod.md`` §4.5: namespace ``hyperpod-ns-<team>``, ClusterQueue
  ``hyperpod-ns-<team>-clusterqueue``, LocalQueue ``hyperpod-ns-<team>-localqueue`` (HyperPod CLI constants,
  the task-governance README's ``kubectl get workloads``), ResourceFlavor named after the instance type (the
  README's error text "... in flavor ml.g5.8xlarge ..."), WorkloadPriorityClass ``<Name>-priority``.
* [QUOTA] ``research/hyperpod.md`` §4.5 (third-party report, not confirmed by AWS): quotas are instance
  resources times ``Count`` (4 x ml.m5.xlarge -> cpu 16, borrowingLimit 8 at 50 %); the per-instance shape is
  :func:`fairness_interpreters.schedulable_shapes` (AWS's published specs), as the fairness interpreters read it.
* [COHORT] not confirmed anywhere: one cohort for all teams (a third-party note names it
  ``hyperpod-default-cohort``, unverified); the name here is this project's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from fairness_interpreters import INSTANCE_TYPE_LABEL, NAMESPACE_PREFIX, absolute_ceilings, floor_to_unit
from synth import Synth, render_intrinsics, resources_of

API_VERSION = "kueue.x-k8s.io/v1beta2"
#: [COHORT] The cohort every team's ClusterQueue joins in this reading.
COHORT = "task-governance-reading"
#: Kueue's units for the quantities: GPUs whole, cpu in millicores, memory in MiB.
_MILLI = Decimal("0.001")
_MIB = Decimal(2**20)


def _quantity(resource: str, amount: Decimal) -> int | str:
    amount = floor_to_unit(resource, amount)
    if resource == "cpu":
        return int(amount) if amount == int(amount) else f"{int(amount / _MILLI)}m"
    if resource == "memory":
        return f"{int(amount / _MIB)}Mi"
    return int(amount)


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"hyperpod-tenancy.io/reading": "task-governance"}}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def kueue_objects(
    scheduler_config: Mapping[str, Any],
    compute_quotas: Iterable[Mapping[str, Any]],
    shapes: Mapping[str, Mapping[str, Decimal]],
    ec2: Mapping[str, tuple[Decimal, Decimal]] | None = None,
) -> list[dict[str, Any]]:
    """The Kueue objects this project reads the cluster policy and the compute quotas as (see the module).

    ``scheduler_config`` and ``compute_quotas`` are CloudFormation properties as synthesized; ``shapes`` the
    per-instance schedulable resources by instance type; ``ec2`` EC2's vCPUs and GiB per instance type
    (:func:`fairness_interpreters.published_vcpus`), for absolute borrow limits in ``VCpu`` or ``MemoryInGiB``.
    """
    sched = scheduler_config["SchedulerConfig"]
    # [API] IdleResourceSharing Disabled: nobody lends or borrows
    sharing_on = sched.get("IdleResourceSharing", "Enabled") == "Enabled"
    objects: list[dict[str, Any]] = []
    quotas = list(compute_quotas)
    instance_types = list(
        dict.fromkeys(
            r["InstanceType"]
            for q in quotas
            for r in (
                *q["ComputeQuotaConfig"].get("ComputeQuotaResources", []),
                *q["ComputeQuotaConfig"].get("ResourceSharingConfig", {}).get("AbsoluteBorrowLimits", []),
            )
        )
    )
    # [NAMES] one ResourceFlavor per instance type, named after it, on the nodes of that type
    for itype in instance_types:
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "ResourceFlavor",
                "metadata": _meta(itype),
                "spec": {"nodeLabels": {INSTANCE_TYPE_LABEL: itype}},
            }
        )
    objects.append({"apiVersion": API_VERSION, "kind": "Cohort", "metadata": _meta(COHORT), "spec": {}})
    # [API] + [NAMES] PriorityClasses[].Name/Weight -> WorkloadPriorityClass <Name>-priority, value = Weight
    for pc in sched.get("PriorityClasses", []):
        objects.append(
            {
                "apiVersion": API_VERSION,
                "kind": "WorkloadPriorityClass",
                "metadata": _meta(f"{pc['Name']}-priority"),
                "value": int(pc["Weight"]),
            }
        )
    covered = list(dict.fromkeys(r for itype in instance_types for r in shapes[itype]))
    for quota in quotas:
        objects += _team_objects(quota, covered, instance_types, shapes, ec2 or {}, sharing_on=sharing_on)
    return objects


def _team_objects(
    quota: Mapping[str, Any],
    covered: list[str],
    instance_types: list[str],
    shapes: Mapping[str, Mapping[str, Decimal]],
    ec2: Mapping[str, tuple[Decimal, Decimal]],
    *,
    sharing_on: bool,
) -> list[dict[str, Any]]:
    team = quota["ComputeQuotaTarget"]["TeamName"]
    config = quota["ComputeQuotaConfig"]
    # [API] Strategy (default LendAndBorrow) and BorrowLimit (percent of the guarantee, default 50)
    rsc = config.get("ResourceSharingConfig", {"Strategy": "LendAndBorrow"})
    strategy = rsc["Strategy"] if sharing_on else "DontLend"
    percent = Decimal(rsc.get("BorrowLimit", 50))
    held = {
        r["InstanceType"]: absolute_ceilings(r, shapes[r["InstanceType"]], ec2.get(r["InstanceType"]))
        for r in config.get("ComputeQuotaResources", [])
    }
    absolute = {
        r["InstanceType"]: absolute_ceilings(r, shapes[r["InstanceType"]], ec2.get(r["InstanceType"]))
        for r in rsc.get("AbsoluteBorrowLimits", [])
    }
    flavors = []
    for itype in instance_types:
        resources = []
        for resource in covered:
            # [QUOTA] Count instances x the instance's resources, or Accelerators and the rest in the ratio [API] (a
            # flavor the team has no quota of is listed at 0: a Kueue ClusterQueue can only borrow a flavor it lists)
            nominal = held.get(itype, {}).get(resource, Decimal(0))
            entry: dict[str, Any] = {"name": resource, "nominalQuota": _quantity(resource, nominal)}
            # [API] + [QUOTA] BorrowLimit percent of the guarantee, in whole units, or the absolute limit on the type;
            # Lend and DontLend borrow nothing
            if strategy != "LendAndBorrow":
                borrow = Decimal(0)
            elif itype in absolute:
                borrow = absolute[itype].get(resource, Decimal(0))
            else:
                borrow = nominal * percent / 100
            entry["borrowingLimit"] = _quantity(resource, borrow)
            if strategy == "DontLend":
                entry["lendingLimit"] = 0
            resources.append(entry)
        flavors.append({"name": itype, "resources": resources})
    namespace = f"{NAMESPACE_PREFIX}{team}"
    preemption = {
        # [API] PreemptTeamTasks, default LowerPriority
        "withinClusterQueue": "LowerPriority"
        if config.get("PreemptTeamTasks", "LowerPriority") == "LowerPriority"
        else "Never",
        # [TG-DOCS] a lender reclaims what it lent: borrowed work is evicted when the lending team needs it
        "reclaimWithinCohort": "Any" if strategy in ("Lend", "LendAndBorrow") else "Never",
    }
    cluster_queue = {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": _meta(f"{namespace}-clusterqueue"),
        "spec": {
            "cohortName": COHORT,
            # [NAMES] the team namespace the service creates
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
            "resourceGroups": [{"coveredResources": covered, "flavors": flavors}],
            "preemption": preemption,
            # [API] FairShareWeight (default 0); Kueue uses it only with fair sharing on in its configuration
            "fairSharing": {"weight": int(quota["ComputeQuotaTarget"].get("FairShareWeight", 0))},
        },
    }
    local_queue = {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": _meta(f"{namespace}-localqueue", namespace),
        "spec": {"clusterQueue": f"{namespace}-clusterqueue"},
    }
    return [cluster_queue, local_queue]


def synthesized_properties(synth: Synth) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The cluster policy's and every team's compute quota's CloudFormation properties in ``synth``'s templates."""
    (scheduler,) = resources_of(synth.cluster, "AWS::SageMaker::ClusterSchedulerConfig").values()
    quotas = [
        render_intrinsics(resource["Properties"])
        for template in synth.templates.values()
        for resource in resources_of(template, "AWS::SageMaker::ComputeQuota").values()
    ]
    return render_intrinsics(scheduler["Properties"]), quotas
