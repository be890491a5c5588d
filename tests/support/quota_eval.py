"""ResourceQuota and LimitRange admission for Pods, offline, with the API server's semantics.

Modelled from the Kubernetes documentation and the quota evaluator it describes:

* a container's request of a resource defaults to its limit when only the limit is set (Pod defaulting,
  which runs before admission; https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/);
* the LimitRanger then fills, per container and resource, ``defaultRequest`` where no request is set and
  ``default`` where no limit is set (https://kubernetes.io/docs/concepts/policy/limit-range/);
* a pod's usage of a resource is ``max(sum over containers, max over init containers)`` plus overhead
  (``pkg/quota/v1/evaluator/core/pods.go``, ``PodUsageFunc``); ``requests.<name>`` and ``<name>`` count
  requests, ``limits.<name>`` limits, ``pods`` counts non-terminal pods;
* a quota applies to a pod only if its ``scopeSelector`` matches (``PriorityClass`` with ``In``, ``NotIn``,
  ``Exists``, ``DoesNotExist`` on ``spec.priorityClassName``;
  https://kubernetes.io/docs/concepts/policy/resource-quotas/#quota-scopes);
* a request that would raise any tracked usage above ``hard`` is refused (``exceeded quota``).

``tests/test_cluster_quota.py`` replays every call the hostile quota suites make of this model on the real
control plane's quota and LimitRange admission, and fails on any verdict that differs.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from fairness_interpreters import quantity

Manifest = Mapping[str, Any]


def _containers(pod: Manifest, key: str) -> list[dict[str, Any]]:
    return list(pod.get("spec", {}).get(key, []) or [])


def apply_limit_ranges(pod: Manifest, limit_ranges: Sequence[Manifest]) -> dict[str, Any]:
    """The pod as stored: Pod defaulting (requests from limits), then every LimitRange's Container defaults."""
    out = copy.deepcopy(dict(pod))
    for key in ("initContainers", "containers"):
        for container in out.get("spec", {}).get(key, []) or []:
            res = container.setdefault("resources", {})
            limits = res.setdefault("limits", {})
            requests = res.setdefault("requests", {})
            for name, value in limits.items():
                requests.setdefault(name, value)
            for lr in limit_ranges:
                for item in lr["spec"]["limits"]:
                    if item["type"] != "Container":
                        continue
                    for name, value in item.get("defaultRequest", {}).items():
                        requests.setdefault(name, value)
                    for name, value in item.get("default", {}).items():
                        if name not in limits:
                            limits[name] = value
                            requests.setdefault(name, value)
    return out


def pod_usage(pod: Manifest, kind: str) -> dict[str, Decimal]:
    """Per resource, what the pod is charged: ``kind`` is ``requests`` or ``limits``."""
    total: dict[str, Decimal] = {}
    for c in _containers(pod, "containers"):
        for name, value in c.get("resources", {}).get(kind, {}).items():
            total[name] = total.get(name, Decimal(0)) + quantity(value)
    for c in _containers(pod, "initContainers"):
        for name, value in c.get("resources", {}).get(kind, {}).items():
            total[name] = max(total.get(name, Decimal(0)), quantity(value))
    for name, value in (pod.get("spec", {}).get("overhead") or {}).items():
        total[name] = total.get(name, Decimal(0)) + quantity(value)
    return total


def _scope_matches(quota: Manifest, pod: Manifest) -> bool:
    spec = quota["spec"]
    assert not spec.get("scopes"), "model only implements scopeSelector"
    pc = pod.get("spec", {}).get("priorityClassName")
    for expr in spec.get("scopeSelector", {}).get("matchExpressions", []):
        assert expr["scopeName"] == "PriorityClass", f"unmodelled scope {expr['scopeName']}"
        op = expr["operator"]
        if op == "In" and pc not in expr["values"]:
            return False
        if op == "NotIn" and pc in expr["values"]:
            return False
        if op == "Exists" and not pc:
            return False
        if op == "DoesNotExist" and pc:
            return False
    return True


def _charged(key: str, pod: Manifest) -> Decimal:
    if key == "pods":
        return Decimal(1)
    if key.startswith("limits."):
        return pod_usage(pod, "limits").get(key[len("limits.") :], Decimal(0))
    name = key[len("requests.") :] if key.startswith("requests.") else key
    return pod_usage(pod, "requests").get(name, Decimal(0))


def refusals(
    namespace_objects: Sequence[Manifest], pod: Manifest, *, running: Sequence[Manifest] = ()
) -> list[str]:
    """Why the namespace's quotas refuse ``pod`` given the ``running`` pods (empty: admitted).

    ``namespace_objects`` are the objects of one namespace; its LimitRanges are applied to ``pod`` and to
    ``running`` first, as the API server stored them.
    """
    limit_ranges = [o for o in namespace_objects if o["kind"] == "LimitRange"]
    quotas = [o for o in namespace_objects if o["kind"] == "ResourceQuota"]
    new = apply_limit_ranges(pod, limit_ranges)
    existing = [apply_limit_ranges(p, limit_ranges) for p in running]
    out = []
    for quota in quotas:
        if not _scope_matches(quota, new):
            continue
        for key, hard in quota["spec"]["hard"].items():
            used = sum((_charged(key, p) for p in existing if _scope_matches(quota, p)), Decimal(0))
            asked = _charged(key, new)
            if asked and used + asked > quantity(hard):
                out.append(
                    f"exceeded quota: {quota['metadata']['name']}, requested: {key}={asked}, "
                    f"used: {key}={used}, limited: {key}={hard}"
                )
    return out
