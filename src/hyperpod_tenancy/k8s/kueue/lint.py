"""A self-check of rendered Kueue objects against the mistakes Kueue accepts silently (each finding a code)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from hyperpod_tenancy.k8s import labels

__all__ = [
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
    "lint_kueue_objects",
]

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
