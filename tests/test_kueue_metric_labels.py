"""The alert rules select Kueue series only by labels Kueue 0.19.2 really writes.

``kueue_evicted_workloads_total`` is declared in kubernetes-sigs/kueue ``pkg/metrics/metrics.go`` (tag v0.19.2,
commit 8eab6877, ``EvictedWorkloadsTotal``) with the labels ``cluster_queue``, ``reason``, ``underlying_cause``,
``priority_class`` and ``replica_role`` (plus the operator's custom ClusterQueue labels, none configured here).
``pkg/workload/evict/evict.go`` (``reportEvictedWorkload``) fills ``priority_class`` with the Workload's
``spec.priorityClassRef.name`` (``patching.PriorityClassName``): the WorkloadPriorityClass, ``<class>-priority``.
``replica_role`` is ``leader``, ``follower`` or ``standalone`` (the ``+metricsdoc`` comments of the same file). A
matcher on any other label name would select nothing, and the alert would never fire.
"""

from __future__ import annotations

import json
import re

import pytest
from synth import Synth, resources_of

#: Label names of each Kueue 0.19.2 metric a rule reads (pkg/metrics/metrics.go @ v0.19.2).
KUEUE_0_19_2_LABELS = {
    "kueue_evicted_workloads_total": {
        "cluster_queue",
        "reason",
        "underlying_cause",
        "priority_class",
        "replica_role",
    },
}
#: ``reason`` values of ``kueue_evicted_workloads_total`` (its Help text in the same file).
EVICTION_REASONS = {
    "Preempted",
    "PodsReadyTimeout",
    "AdmissionCheck",
    "ClusterQueueStopped",
    "LocalQueueStopped",
    "NodeFailures",
    "Deactivated",
}
_SELECTOR = re.compile(r"(kueue_[a-z_]+)\{([^}]*)\}")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"\s*')


def _rule_expressions(synth: Synth) -> list[str]:
    found = []
    for template in synth.templates.values():
        for resource in resources_of(template, "AWS::APS::RuleGroupsNamespace").values():
            data = resource["Properties"]["Data"]
            if isinstance(data, str):
                found += [rule["expr"] for group in json.loads(data)["groups"] for rule in group["rules"]]
    return found


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_kueue_selector_uses_labels_and_values_kueue_writes(
    backend: str, request: pytest.FixtureRequest
) -> None:
    synth: Synth = request.getfixturevalue(backend)
    selectors = [m for expr in _rule_expressions(synth) for m in _SELECTOR.finditer(expr)]
    assert selectors, "the preemption alert reads kueue_evicted_workloads_total"
    classes = {f"{c.name}-priority" for c in synth.platform.scheduling.priority_classes}
    for metric, body in ((m[1], m[2]) for m in selectors):
        assert metric in KUEUE_0_19_2_LABELS, metric
        matchers = [_MATCHER.fullmatch(part) for part in body.split(",")]
        assert all(matchers), body
        labels = {m[1]: (m[2], m[3]) for m in matchers if m}
        assert set(labels) <= KUEUE_0_19_2_LABELS[metric], set(labels) - KUEUE_0_19_2_LABELS[metric]
        assert labels["reason"] == ("=", "Preempted") and "Preempted" in EVICTION_REASONS
        assert labels["priority_class"][0] == "=" and labels["priority_class"][1] in classes
        assert labels["replica_role"] == ("!=", "follower")
