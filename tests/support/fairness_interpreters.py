"""Two independent readers of the fairness renderings, and a small Kueue admission simulator.

The simulator (:class:`KueueCohortSimulator`: the quota check; :class:`KueueWorkloadSimulator`: workloads that
wait, are admitted and preempt) is checked against real Kueue: ``tests/test_cluster_fairness*.py`` play the
scenarios of ``kueue_scenarios.py`` on both, step by step, and fail on any disagreement.

``from_task_governance`` reads ``AWS::SageMaker::ClusterSchedulerConfig`` / ``ComputeQuota`` properties
with Task Governance semantics; ``from_kueue`` reads ``kueue.x-k8s.io/v1beta2`` objects and the Kueue
manager configuration with Kueue semantics. Both produce a :class:`FairnessForm`: per (team, instance
type, resource) the guaranteed amount, the amount other teams may borrow from it, and the team's borrowing
ceiling, plus per-team fair-share weights. Neither reader imports the renderers, and per-instance
resources come from AWS's published specs (``instance_specs.py``), not from the product's catalogue.

Task Governance semantics modelled here (from the SageMaker API reference and the policy docs):
``Count`` instances of an instance type are guaranteed; ``Lend``/``LendAndBorrow`` lend all idle
guaranteed capacity, ``DontLend`` none; only ``LendAndBorrow`` borrows, up to ``BorrowLimit`` percent of
the guarantee (default 50), rounded down to a schedulable unit (one accelerator, one millicore, one MiB);
``IdleResourceSharing: Disabled`` stops all lending and borrowing; ``FairShareWeight`` counts only with
``FairShare: Enabled``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

import yaml
from instance_specs import spec

from hyperpod_tenancy.policy import Platform

NAMESPACE_PREFIX = "hyperpod-ns-"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
GIB = Decimal(2**30)
MIB = Decimal(2**20)
#: Smallest schedulable unit per resource (accelerators: one device).
UNITS = {"cpu": Decimal("0.001"), "memory": MIB}

Key = tuple[str, str, str]  # (team, instance type, resource)


@dataclass(frozen=True)
class Share:
    """What one team's quota of one resource on one instance type means."""

    guaranteed: Decimal
    #: How much of the guarantee other teams may borrow while it is idle.
    lendable: Decimal
    #: How much above its guarantee the team may use (None: unlimited).
    borrow_ceiling: Decimal | None

    def is_zero(self) -> bool:
        """Whether the share promises nothing at all."""
        return self.guaranteed == 0 and self.lendable == 0 and self.borrow_ceiling == 0


@dataclass
class FairnessForm:
    """Backend-neutral meaning of a fairness rendering."""

    fair_share: bool
    shares: dict[Key, Share] = field(default_factory=dict)
    #: Fair-share weight per team (None when fair share is off).
    weights: dict[str, Decimal | None] = field(default_factory=dict)

    def normalized(self) -> FairnessForm:
        """The form without shares that promise nothing (a listed-but-empty flavor means the same)."""
        return FairnessForm(
            self.fair_share, {k: v for k, v in self.shares.items() if not v.is_zero()}, dict(self.weights)
        )


def floor_to_unit(resource: str, amount: Decimal) -> Decimal:
    """Round ``amount`` down to whole schedulable units of ``resource``."""
    unit = UNITS.get(resource, Decimal(1))
    return Decimal(math.floor(amount / unit)) * unit


def schedulable_shapes(platform: Platform) -> dict[str, dict[str, Decimal]]:
    """Per-instance schedulable resources by instance type: accelerators, cpu (cores), memory (bytes).

    The figures are the instance group's explicit ``resources`` (part of the policy, the test's input) or
    else AWS's published specs (``tests/support/instance_specs.py``), never the product's catalogue.
    Schedulable cpu is ``vcpus x threadsPerCore / 2``: EC2's vCPU count assumes two threads per core.
    """
    shapes: dict[str, dict[str, Decimal]] = {}
    for group in platform.cluster.instance_groups:
        if group.resources is not None:
            explicit = group.resources
            resource, accelerators = explicit.accelerator_resource, explicit.accelerators
            vcpus, memory_gib = explicit.vcpus, explicit.memory_gib
        else:
            published = spec(group.instance_type)
            resource, accelerators = published.accelerator_resource, published.accelerators
            vcpus, memory_gib = published.vcpus, published.memory_gib
        shapes[group.instance_type] = {
            resource: Decimal(accelerators),
            "cpu": Decimal(vcpus * group.threads_per_core) / 2,
            "memory": Decimal(memory_gib) * GIB,
        }
    return shapes


def published_vcpus(platform: Platform) -> dict[str, tuple[Decimal, Decimal]]:
    """Per instance type: EC2's vCPUs and GiB of one instance (the group's ``resources`` or AWS's specs), the
    figures the SageMaker API's ``VCpu`` and ``MemoryInGiB`` are stated in."""
    figures: dict[str, tuple[Decimal, Decimal]] = {}
    for group in platform.cluster.instance_groups:
        source = group.resources if group.resources is not None else spec(group.instance_type)
        figures[group.instance_type] = (Decimal(source.vcpus), Decimal(source.memory_gib))
    return figures


def absolute_ceilings(
    item: Mapping[str, Any], shape: Mapping[str, Decimal], ec2: tuple[Decimal, Decimal] | None
) -> dict[str, Decimal]:
    """One ``AbsoluteBorrowLimits`` entry as a ceiling per resource, read as the SageMaker API reference says a
    ``ComputeQuotaResourceConfig`` is filled: ``Count`` instances; ``Accelerators`` with vCPU and memory "auto-filled
    by ratio"; ``VCpu`` or ``MemoryInGiB`` with the other filled by ratio and accelerators 0."""
    unsupported = set(item) - {"InstanceType", "Count", "Accelerators", "VCpu", "MemoryInGiB"}
    assert not unsupported, f"interpreter does not model {unsupported}"
    accelerator = next(r for r in shape if r not in ("cpu", "memory"))
    # ratios as exact fractions: 256 GiB of 192 is 4/3, which no decimal holds
    ratios: dict[str, Fraction]
    if "Count" in item:
        ratios = dict.fromkeys(shape, Fraction(item["Count"]))
    elif "Accelerators" in item:
        ratios = dict.fromkeys(shape, Fraction(item["Accelerators"]) / Fraction(shape[accelerator]))
    else:
        assert ec2 is not None, "VCpu and MemoryInGiB are read against EC2's figures: pass them"
        vcpus, gib = ec2
        cpu = Fraction(str(item["VCpu"])) / Fraction(vcpus) if "VCpu" in item else None
        memory = Fraction(str(item["MemoryInGiB"])) / Fraction(gib) if "MemoryInGiB" in item else None
        ratios = {
            accelerator: Fraction(0),
            "cpu": next(r for r in (cpu, memory) if r is not None),
            "memory": next(r for r in (memory, cpu) if r is not None),
        }
    return {
        resource: _floor_exact(resource, ratios[resource] * Fraction(per)) for resource, per in shape.items()
    }


def _floor_exact(resource: str, amount: Fraction) -> Decimal:
    """Round an exact ``amount`` down to whole units of ``resource`` (a whole number of units is a finite decimal)."""
    unit = Fraction(UNITS.get(resource, Decimal(1)))
    return Decimal(math.floor(amount / unit)) * UNITS.get(resource, Decimal(1))


def from_task_governance(
    scheduler_config: Mapping[str, Any],
    compute_quotas: Iterable[Mapping[str, Any]],
    shapes: Mapping[str, Mapping[str, Decimal]],
    ec2: Mapping[str, tuple[Decimal, Decimal]] | None = None,
) -> FairnessForm:
    """Read the CloudFormation properties of the cluster policy and every team's compute quota.

    ``ec2`` (:func:`published_vcpus`) is needed to read an absolute borrow limit stated in ``VCpu`` or
    ``MemoryInGiB``.
    """
    sched = scheduler_config["SchedulerConfig"]
    sharing_on = sched.get("IdleResourceSharing", "Enabled") == "Enabled"
    fair = sched.get("FairShare", "Enabled") == "Enabled"
    form = FairnessForm(fair_share=fair)
    for quota in compute_quotas:
        target = quota["ComputeQuotaTarget"]
        team = target["TeamName"]
        config = quota["ComputeQuotaConfig"]
        rsc = config.get("ResourceSharingConfig", {"Strategy": "LendAndBorrow"})
        strategy = rsc["Strategy"]
        percent = Decimal(rsc.get("BorrowLimit", 50))
        lends = sharing_on and strategy in ("Lend", "LendAndBorrow")
        borrows = sharing_on and strategy == "LendAndBorrow"
        absolute = {
            item["InstanceType"]: absolute_ceilings(
                item, shapes[item["InstanceType"]], (ec2 or {}).get(item["InstanceType"])
            )
            for item in rsc.get("AbsoluteBorrowLimits", [])
        }
        # Count instances, or Accelerators with vCPUs and memory filled in the instance's ratio (read as a borrow
        # limit's amount is)
        held = {
            item["InstanceType"]: absolute_ceilings(
                item, shapes[item["InstanceType"]], (ec2 or {}).get(item["InstanceType"])
            )
            for item in config.get("ComputeQuotaResources", [])
        }
        for itype in dict.fromkeys([*held, *absolute]):
            for resource in shapes[itype]:
                guaranteed = held.get(itype, {}).get(resource, Decimal(0))
                if not borrows:
                    ceiling = Decimal(0)
                elif itype in absolute:  # "regardless of the percentage-based BorrowLimit"
                    ceiling = absolute[itype][resource]
                else:
                    ceiling = floor_to_unit(resource, guaranteed * percent / 100)
                form.shares[(team, itype, resource)] = Share(
                    guaranteed=guaranteed,
                    lendable=guaranteed if lends else Decimal(0),
                    borrow_ceiling=ceiling,
                )
        form.weights[team] = Decimal(target.get("FairShareWeight", 0)) if fair else None
    return form


_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$")
_SUFFIX = {
    None: Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}


def quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity (int or string); floats are rejected, as the Kueue CRDs do."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"{value!r} is not an int or a quantity string")
    if isinstance(value, int):
        return Decimal(value)
    match = _QUANTITY.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not a quantity")
    return Decimal(match.group(1)) * _SUFFIX[match.group(2)]


def kueue_config(helm_values: Mapping[str, Any]) -> dict[str, Any]:
    """The Kueue manager configuration inside the Helm values."""
    config = yaml.safe_load(helm_values["managerConfig"]["controllerManagerConfigYaml"])
    assert isinstance(config, dict)
    return config


def _team_of(cq: Mapping[str, Any]) -> str:
    selected = cq["spec"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
    assert selected.startswith(NAMESPACE_PREFIX), selected
    return str(selected[len(NAMESPACE_PREFIX) :])


def from_kueue(objects: Sequence[Mapping[str, Any]], helm_values: Mapping[str, Any]) -> FairnessForm:
    """Read ResourceFlavors, ClusterQueues and the manager configuration with Kueue semantics."""
    fair = "fairSharing" in kueue_config(helm_values)
    form = FairnessForm(fair_share=fair)
    flavor_type = {
        o["metadata"]["name"]: o["spec"]["nodeLabels"][INSTANCE_TYPE_LABEL]
        for o in objects
        if o["kind"] == "ResourceFlavor"
    }
    for cq in (o for o in objects if o["kind"] == "ClusterQueue"):
        team = _team_of(cq)
        spec = cq["spec"]
        in_cohort = bool(spec.get("cohortName"))
        for group in spec["resourceGroups"]:
            for flavor in group["flavors"]:
                for res in flavor["resources"]:
                    nominal = quantity(res["nominalQuota"])
                    if in_cohort:
                        lendable = quantity(res["lendingLimit"]) if "lendingLimit" in res else nominal
                        ceiling = quantity(res["borrowingLimit"]) if "borrowingLimit" in res else None
                    else:
                        lendable, ceiling = Decimal(0), Decimal(0)
                    form.shares[(team, flavor_type[flavor["name"]], res["name"])] = Share(
                        nominal, lendable, ceiling
                    )
        weight = spec.get("fairSharing", {}).get("weight", 1)
        form.weights[team] = quantity(weight) if fair else None
    return form


# ------------------------------------------------------------------------------------- admission simulation


def exceeds_capacity(resource: str, flavor: str) -> str:
    """Kueue v0.19.2's reason when a workload asks more than its ClusterQueue could ever have (nominal +
    ``borrowingLimit``, or what the cohort holds): ``fitsResourceQuota`` in
    ``pkg/scheduler/flavorassigner/flavorassigner.go``."""
    return f"insufficient quota for {resource} in flavor {flavor}"


def insufficient_quota(resource: str, flavor: str) -> str:
    """Kueue v0.19.2's reason when the workload could fit but not now: the ClusterQueue is at its borrowing
    ceiling or the cohort has nothing idle left (same function; Kueue's message does not say which, and is
    followed by ``, <n> more needed``)."""
    return f"insufficient unused quota for {resource} in flavor {flavor}"


@dataclass(frozen=True)
class Admission:
    """Outcome of one admission attempt."""

    admitted: bool
    #: Amount above the team's guarantee the workload runs on, per resource (when admitted).
    borrowed: dict[str, Decimal]
    reason: str = ""


class KueueCohortSimulator:
    """Kueue's quota check for one cohort of ClusterQueues (no preemption), per flavor and resource.

    A workload of ClusterQueue ``i`` fits when, for every requested resource, ``usage_i + request`` stays
    within ``nominal_i + borrowingLimit_i`` (no limit when unset) and the cohort can lend it: the usage of
    every member beyond what it keeps for itself (``nominal - lendingLimit``; everything when unset) must
    fit in the sum of what the members lend (``lendingLimit``, or ``nominal`` when unset).
    """

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        self.quota: dict[tuple[str, str, str], tuple[Decimal, Decimal | None, Decimal | None]] = {}
        self.usage: dict[tuple[str, str, str], Decimal] = {}
        self.cohort: dict[str, str] = {}
        for cq in (o for o in objects if o["kind"] == "ClusterQueue"):
            team = _team_of(cq)
            self.cohort[team] = cq["spec"].get("cohortName", "")
            for group in cq["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for res in flavor["resources"]:
                        key = (team, flavor["name"], res["name"])
                        self.quota[key] = (
                            quantity(res["nominalQuota"]),
                            quantity(res["borrowingLimit"]) if "borrowingLimit" in res else None,
                            quantity(res["lendingLimit"]) if "lendingLimit" in res else None,
                        )
                        self.usage[key] = Decimal(0)

    def idle_lendable(self, team: str, flavor: str, resource: str) -> Decimal:
        """How much of ``team``'s guarantee is idle and lendable right now."""
        nominal, _, lending = self.quota[(team, flavor, resource)]
        lendable = nominal if lending is None else lending
        return max(Decimal(0), min(lendable, nominal - self.usage[(team, flavor, resource)]))

    def room(self, team: str, flavor: str, resource: str) -> tuple[Decimal, Decimal]:
        """What ``team`` can take now, and at most (every other member idle): Kueue's ``Available`` and
        ``PotentialAvailable`` of a ClusterQueue in a flat cohort (``pkg/cache/scheduler``)."""
        nominal, borrowing, lending = self.quota[(team, flavor, resource)]
        usage = self.usage[(team, flavor, resource)]
        if not self.cohort[team]:
            return max(Decimal(0), nominal - usage), nominal
        kept = Decimal(0) if lending is None else nominal - lending
        pool = others = Decimal(0)
        for member, cohort in self.cohort.items():
            if cohort != self.cohort[team]:
                continue
            m_nominal, _, m_lending = self.quota[(member, flavor, resource)]
            m_kept = Decimal(0) if m_lending is None else m_nominal - m_lending
            pool += m_nominal - m_kept
            if member != team:
                others += max(Decimal(0), self.usage[(member, flavor, resource)] - m_kept)
        available, potential = kept - usage + pool - others, kept + pool
        if borrowing is not None:
            available = min(available, nominal + borrowing - usage)
            potential = min(potential, nominal + borrowing)
        return max(Decimal(0), available), potential

    def _fits(self, team: str, flavor: str, resource: str, amount: Decimal) -> str:
        """Empty when ``amount`` fits; else Kueue's reason (``fitsResourceQuota``), then which limit binds."""
        available, potential = self.room(team, flavor, resource)
        if amount <= available:
            return ""
        if amount > potential:
            kueue = f"{exceeds_capacity(resource, flavor)}: {amount} > maximum capacity ({potential})"
        else:
            kueue = f"{insufficient_quota(resource, flavor)}, {amount - available} more needed"
        nominal, borrowing, _ = self.quota[(team, flavor, resource)]
        new_usage = self.usage[(team, flavor, resource)] + amount
        if not self.cohort[team]:
            return f"{kueue}: above nominal quota and not in a cohort"
        if borrowing is not None and new_usage > nominal + borrowing:
            return f"{kueue}: {new_usage} exceeds nominal {nominal} + borrowingLimit {borrowing}"
        return f"{kueue}: the cohort has no idle {resource} left to lend"

    def admit(self, team: str, flavor: str, request: Mapping[str, Decimal]) -> Admission:
        """Try to admit a workload; on success its usage is recorded."""
        for resource, amount in request.items():
            reason = self._fits(team, flavor, resource, amount)
            if reason:
                return Admission(False, {}, reason)
        borrowed = {}
        for resource, amount in request.items():
            key = (team, flavor, resource)
            before = max(Decimal(0), self.usage[key] - self.quota[key][0])
            self.usage[key] += amount
            borrowed[resource] = max(Decimal(0), self.usage[key] - self.quota[key][0]) - before
        return Admission(True, borrowed)


# -------------------------------------------------------------------------------------- workloads, preemption

#: A workload's states in :class:`KueueWorkloadSimulator`.
ADMITTED, PENDING, PREEMPTED = "admitted", "pending", "preempted"


@dataclass
class SimulatedWorkload:
    """One workload of :class:`KueueWorkloadSimulator`."""

    name: str
    team: str
    flavor: str
    request: dict[str, Decimal]
    priority: int
    #: Submission order (Kueue orders equal priorities by creation time).
    created: int
    status: str = PENDING
    #: Why it waits (Kueue's message part) or why it was preempted (the ``Preempted`` condition's reason).
    reason: str = ""
    #: Admission order (Kueue's preemption takes the most recently admitted of equal priority first).
    admitted: int = -1


class KueueWorkloadSimulator(KueueCohortSimulator):
    """:class:`KueueCohortSimulator` with workloads that wait, are admitted when they fit, and preempt.

    Classic preemption as Kueue v0.19.2 documents it (``site/content/en/docs/concepts/preemption.md``;
    ``pkg/scheduler/preemption/preemption.go``), for one flavor per workload:

    * a pending workload that does not fit may preempt **in its own ClusterQueue** workloads of lower priority
      when ``withinClusterQueue`` is ``LowerPriority``, and **in other ClusterQueues of the cohort** workloads
      of ClusterQueues that are borrowing, when ``reclaimWithinCohort`` is ``Any`` (or ``LowerPriority`` and the
      victim's priority is lower) and the workload fits within its own ClusterQueue's nominal quota;
    * candidates are ordered: other ClusterQueues first, then lower priority, then the most recently admitted;
      taken in that order until the workload fits, then every target not needed for the fit is given back;
    * a preempted workload waits again (``Preempted`` reason ``InClusterQueue`` or ``InCohortReclamation``) and
      is admitted again when it fits; pending workloads are tried by priority, then creation time.

    Every :meth:`submit` and :meth:`delete` settles the queues before it returns.
    """

    def __init__(self, objects: Sequence[Mapping[str, Any]]) -> None:
        super().__init__(objects)
        self.preemption: dict[str, dict[str, Any]] = {
            _team_of(cq): dict(cq["spec"].get("preemption", {}))
            for cq in objects
            if cq["kind"] == "ClusterQueue"
        }
        self.workloads: dict[str, SimulatedWorkload] = {}
        self._clock = 0

    def submit(
        self, name: str, team: str, flavor: str, request: Mapping[str, Decimal], *, priority: int
    ) -> SimulatedWorkload:
        """Queue a workload and settle."""
        self._clock += 1
        workload = SimulatedWorkload(name, team, flavor, dict(request), priority, self._clock)
        self.workloads[name] = workload
        self._settle()
        return workload

    def delete(self, name: str) -> None:
        """Remove a workload (finished or deleted), releasing its quota, and settle."""
        workload = self.workloads.pop(name)
        if workload.status == ADMITTED:
            self._release(workload)
        self._settle()

    def state(self, name: str) -> tuple[str, str]:
        """The workload's status and reason."""
        workload = self.workloads[name]
        return workload.status, workload.reason

    def _release(self, workload: SimulatedWorkload) -> None:
        for resource, amount in workload.request.items():
            self.usage[(workload.team, workload.flavor, resource)] -= amount

    def _take(self, workload: SimulatedWorkload) -> None:
        for resource, amount in workload.request.items():
            self.usage[(workload.team, workload.flavor, resource)] += amount

    def _misfit(self, workload: SimulatedWorkload) -> str:
        for resource, amount in workload.request.items():
            reason = self._fits(workload.team, workload.flavor, resource, amount)
            if reason:
                return reason
        return ""

    def _within_nominal(self, workload: SimulatedWorkload) -> bool:
        return all(
            self.usage[(workload.team, workload.flavor, r)] + a
            <= self.quota[(workload.team, workload.flavor, r)][0]
            for r, a in workload.request.items()
        )

    def _borrowing(self, team: str, flavor: str) -> bool:
        return any(
            self.usage[(team, flavor, r)] > self.quota[(team, flavor, r)][0]
            for (t, f, r) in self.quota
            if t == team and f == flavor
        )

    def _candidates(self, workload: SimulatedWorkload) -> list[tuple[SimulatedWorkload, str]]:
        policy = self.preemption.get(workload.team, {})
        within = policy.get("withinClusterQueue", "Never")
        reclaim = policy.get("reclaimWithinCohort", "Never")
        found: list[tuple[SimulatedWorkload, str]] = []
        for other in self.workloads.values():
            if other.status != ADMITTED or other.flavor != workload.flavor or other is workload:
                continue
            if other.team == workload.team:
                if within == "LowerPriority" and other.priority < workload.priority:
                    found.append((other, "InClusterQueue"))
                continue
            same_cohort = self.cohort[other.team] and self.cohort[other.team] == self.cohort[workload.team]
            if not same_cohort or not self._borrowing(other.team, other.flavor):
                continue
            lower = other.priority < workload.priority
            if reclaim == "Any" or (reclaim == "LowerPriority" and lower):
                found.append((other, "InCohortReclamation"))
        found.sort(key=lambda c: (c[0].team == workload.team, c[0].priority, -c[0].admitted))
        return found

    def _targets(self, workload: SimulatedWorkload) -> list[tuple[SimulatedWorkload, str]]:
        candidates = self._candidates(workload)
        reclaim_allowed = self._within_nominal_after(workload, [c for c, _ in candidates])
        if not reclaim_allowed:  # reclaiming in the cohort needs the workload to fit its own nominal quota
            candidates = [c for c in candidates if c[1] == "InClusterQueue"]
        targets: list[tuple[SimulatedWorkload, str]] = []
        for candidate in candidates:
            self._release(candidate[0])
            targets.append(candidate)
            if not self._misfit(workload):
                break
        else:
            for victim, _ in targets:
                self._take(victim)
            return []
        for candidate in reversed(targets[:-1]):  # give back what the fit does not need
            self._take(candidate[0])
            if self._misfit(workload):
                self._release(candidate[0])
            else:
                targets.remove(candidate)
        for victim, _ in targets:
            self._take(victim)
        return targets

    def _within_nominal_after(
        self, workload: SimulatedWorkload, own_victims: list[SimulatedWorkload]
    ) -> bool:
        freed = [v for v in own_victims if v.team == workload.team]
        for victim in freed:
            self._release(victim)
        fits = self._within_nominal(workload)
        for victim in freed:
            self._take(victim)
        return fits

    def _settle(self) -> None:
        changed = True
        while changed:
            changed = False
            waiting = sorted(
                (w for w in self.workloads.values() if w.status != ADMITTED),
                key=lambda w: (-w.priority, w.created),
            )
            for workload in waiting:
                reason = self._misfit(workload)
                if reason:
                    targets = self._targets(workload)
                    if not targets:
                        if workload.status == PENDING:
                            workload.reason = reason
                        continue
                    for victim, why in targets:
                        self._release(victim)
                        victim.status, victim.reason = PREEMPTED, why
                self._take(workload)
                self._clock += 1
                workload.status, workload.reason, workload.admitted = ADMITTED, "", self._clock
                changed = True
                break
