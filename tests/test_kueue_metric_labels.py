"""The alert rules select Kueue series only by labels Kueue 0.19.2 really writes.

``kueue_evicted_workloads_total`` is declared in kubernetes-sigs/kueue ``pkg/metrics/metrics.go`` (tag v0.19.2,
commit 8eab6877, ``EvictedWorkloadsTotal``) with the labels ``cluster_queue``, ``reason``, ``underlying_cause``,
``priority_class`` and ``replica_role`` (plus the operator's custom ClusterQueue labels, none configured here).
``pkg/workload/evict/evict.go`` (``reportEvictedWorkload``) fills ``priority_class`` with the Workload's
``spec.priorityClassRef.name`` (``patching.PriorityClassName``): the WorkloadPriorityClass, ``<class>-priority``.
``replica_role`` is ``leader``, ``follower`` or ``standalone`` (the ``+metricsdoc`` comments of the same file). A
matcher on any other label name would select nothing, and the alert would never fire.

The waiting and admission-stalled alerts read, from the same file: ``kueue_pending_workloads`` (``PendingWorkloads``,
a gauge with ``cluster_queue``, ``status`` and ``replica_role``; ``status`` is ``active`` or ``inadmissible``,
``PendingStatusActive``/``PendingStatusInadmissible``) and ``kueue_admission_attempts_total``
(``AdmissionAttemptsTotal``, ``result`` and ``replica_role``; ``result`` is ``success`` or ``inadmissible``). The
node alert reads kube-state-metrics' stable node metrics (``kube_node_status_condition``, ``kube_node_spec_taint``,
``kube_node_spec_unschedulable``, ``kube_node_labels``), whose label names are checked the same way.

The POSIX identity webhook's alerts read kube-state-metrics' deployment series (kubernetes/kube-state-metrics
v2.20.0 ``docs/metrics/workload/deployment-metrics.md``, STABLE; ``internal/store/deployment.go``,
``descDeploymentLabelsDefaultLabels = namespace, deployment``) of the webhook's Deployment, and the webhook's own
metrics, whose sample names and labels are taken from a real exposition of
``hyperpod_tenancy.webhook.metrics.WebhookMetrics`` (the server's code), never retyped.
"""

from __future__ import annotations

import json
import re

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from synth import Synth, resources_of

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.runtime import eviction_collector
from hyperpod_tenancy.webhook.metrics import WebhookMetrics

#: Label names of each Kueue 0.19.2 metric a rule reads (pkg/metrics/metrics.go @ v0.19.2).
KUEUE_0_19_2_LABELS = {
    "kueue_evicted_workloads_total": {
        "cluster_queue",
        "reason",
        "underlying_cause",
        "priority_class",
        "replica_role",
    },
    "kueue_pending_workloads": {"cluster_queue", "status", "replica_role"},
    "kueue_admission_attempts_total": {"result", "replica_role"},
}
#: ``status`` values of ``kueue_pending_workloads`` and ``replica_role`` values of every Kueue metric.
PENDING_STATUSES = {"active", "inadmissible"}
REPLICA_ROLES = {"leader", "follower", "standalone"}
#: Label names of the kube-state-metrics node series a rule reads (kubernetes/kube-state-metrics
#: docs/metrics/cluster/node-metrics.md, all STABLE; the
#: ``label_*`` names of ``kube_node_labels`` exist only for labels in ``--metric-labels-allowlist``).
KUBE_STATE_METRICS_LABELS = {
    "kube_node_status_condition": {"node", "condition", "status"},
    "kube_node_spec_taint": {"node", "key", "value", "effect"},
    "kube_node_spec_unschedulable": {"node"},
    "kube_node_labels": {"node", "label_node_kubernetes_io_instance_type"},
    # docs/metrics/workload/deployment-metrics.md (v2.20.0): the webhook Deployment's replicas
    "kube_deployment_spec_replicas": {"namespace", "deployment"},
    "kube_deployment_status_replicas_available": {"namespace", "deployment"},
    "kube_deployment_status_replicas_unavailable": {"namespace", "deployment"},
}


def _webhook_labels() -> dict[str, set[str]]:
    """Sample name → label names of the webhook's exposition (one request of each outcome observed)."""
    metrics = WebhookMetrics(ready=lambda: True, team_namespaces=lambda: 1, team_records_loaded=lambda: True)
    for result in posix_identity.ADMISSION_OUTCOMES:
        metrics.observe(path=posix_identity.MUTATE_PATH, result=result, seconds=0.01, denial="denied:test")
    text = generate_latest(metrics.registry).decode()
    found: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("hyperpod_tenancy_webhook_"):
                found.setdefault(sample.name, set()).update(sample.labels)
    return found


#: Label names of each webhook sample (``hyperpod_tenancy.webhook.metrics``, from its exposition).
WEBHOOK_LABELS = _webhook_labels()
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
#: Label names of the series the eviction collector writes to the workspace (its ``handler``: ``cluster``, ``team``).
COLLECTOR_LABELS = {eviction_collector.OVERDUE_SERIES: {"cluster", "team"}}
_SELECTOR = re.compile(r"\b((?:kueue|kube|hyperpod_tenancy)_[a-z_]+)(?:\{([^}]*)\})?")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"\s*')


def _rule_expressions(synth: Synth) -> list[str]:
    found = []
    for template in synth.templates.values():
        for resource in resources_of(template, "AWS::APS::RuleGroupsNamespace").values():
            data = resource["Properties"]["Data"]
            if isinstance(data, str):
                found += [rule["expr"] for group in json.loads(data)["groups"] for rule in group["rules"]]
    return found


def _selectors(synth: Synth) -> list[tuple[str, dict[str, tuple[str, str]]]]:
    found = []
    for expr in _rule_expressions(synth):
        for m in _SELECTOR.finditer(expr):
            body = m[2] or ""
            matchers = [_MATCHER.fullmatch(part) for part in body.split(",") if body]
            assert all(matchers), body
            found.append((m[1], {x[1]: (x[2], x[3]) for x in matchers if x}))
    return found


@pytest.mark.parametrize("backend", ["reference", "kueue_reference"])
def test_every_kueue_selector_uses_labels_and_values_kueue_writes(
    backend: str, request: pytest.FixtureRequest
) -> None:
    synth: Synth = request.getfixturevalue(backend)
    selectors = _selectors(synth)
    metrics = {metric for metric, _ in selectors}
    # the preemption, waiting and admission-stalled alerts, the node alert and the webhook's alerts
    assert metrics >= set(KUEUE_0_19_2_LABELS) | set(KUBE_STATE_METRICS_LABELS), metrics
    histogram = posix_identity.ADMISSION_DURATION_METRIC
    webhook = {
        posix_identity.ADMISSION_REQUESTS_METRIC,
        f"{histogram}_bucket",
        f"{histogram}_count",
        posix_identity.READY_METRIC,
    }
    assert webhook <= metrics and webhook <= set(WEBHOOK_LABELS), metrics
    assert set(COLLECTOR_LABELS) <= metrics, metrics
    classes = {f"{c.name}-priority" for c in synth.platform.scheduling.priority_classes}
    queues = {f"hyperpod-ns-{t.name}-clusterqueue" for t in synth.platform.teams}
    for metric, labels in selectors:
        known = {**KUEUE_0_19_2_LABELS, **KUBE_STATE_METRICS_LABELS, **WEBHOOK_LABELS, **COLLECTOR_LABELS}
        assert metric in known, metric
        assert set(labels) <= known[metric], (metric, set(labels) - known[metric])
        if metric.startswith("kueue_"):
            # every Kueue selector skips the follower replica's copy of the series
            assert labels["replica_role"] == ("!=", "follower") and "follower" in REPLICA_ROLES
        if "cluster_queue" in labels:
            assert labels["cluster_queue"][0] == "=" and labels["cluster_queue"][1] in queues
        if metric == "kueue_evicted_workloads_total":
            assert labels["reason"] == ("=", "Preempted") and "Preempted" in EVICTION_REASONS
            assert labels["priority_class"][0] == "=" and labels["priority_class"][1] in classes
        if metric == "kueue_pending_workloads" and "status" in labels:
            assert labels["status"][0] == "=" and labels["status"][1] in PENDING_STATUSES
        if metric.startswith("kube_deployment_"):
            # the webhook's Deployment, by the names the manifests module renders it with
            assert labels == {
                "namespace": ("=", posix_identity.WEBHOOK_NAMESPACE),
                "deployment": ("=", posix_identity.DEPLOYMENT),
            }
        if metric in COLLECTOR_LABELS:
            assert labels["cluster"] == ("=", synth.platform.cluster.name)
            if "team" in labels:
                assert labels["team"][0] == "=" and labels["team"][1] in {
                    t.name for t in synth.platform.teams
                }
        if "outcome" in labels and metric == posix_identity.ADMISSION_REQUESTS_METRIC:
            assert labels["outcome"][0] == "=" and labels["outcome"][1] in posix_identity.ADMISSION_OUTCOMES
