"""The cluster's Prometheus rules: unhealthy nodes, stalled collectors and the POSIX identity webhook's errors and latency."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import labels, posix_identity
from hyperpod_tenancy.k8s.alert_rules.teams import checkpoint_signal_rule

__all__ = [
    "CLUSTER_RULES_SUFFIX",
    "INSTANCE_TYPE_LABEL",
    "NODE_HEALTH_KEY",
    "WEBHOOK_ERROR_RATIO",
    "WEBHOOK_LATENCY_SHARE_OF_TIMEOUT",
    "WEBHOOK_MIN_REQUESTS_PER_MINUTE",
    "cluster_rules",
]

#: HyperPod's node health label (its taint key too).
NODE_HEALTH_KEY = labels.NODE_HEALTH_LABEL


#: kube-state-metrics' name of the node label ``node.kubernetes.io/instance-type`` in ``kube_node_labels``.
INSTANCE_TYPE_LABEL = "label_node_kubernetes_io_instance_type"


#: How long the admission loop may make no attempt while workloads are queued before the alert fires.
_STALL_WINDOW = "10m"


#: Rule group name of the cluster-wide alerts (a dot, which no team name has, keeps it apart from the teams').
CLUSTER_RULES_SUFFIX = ".cluster"


def _unhealthy_nodes() -> str:
    ready = 'kube_node_status_condition{condition="Ready",status="true"} == 0'
    tainted = f'kube_node_spec_taint{{key="{NODE_HEALTH_KEY}",value!="Schedulable"}}'
    cordoned = "kube_node_spec_unschedulable == 1"
    return f"max by (node) ({ready}) or max by (node) ({tainted}) or max by (node) ({cordoned})"


#: Window of the webhook's rate alerts.
_WEBHOOK_WINDOW = "5m"


#: Share of error outcomes above which ``HyperPodTenancyWebhookErrors`` fires.
WEBHOOK_ERROR_RATIO = 0.05


#: Admission requests a minute below which the webhook's ratio and latency alerts stay silent (a quiet cluster's
#: one failed request is not a 100 % error rate worth waking someone for).
WEBHOOK_MIN_REQUESTS_PER_MINUTE = 1


#: The p99 latency alert fires above this share of the webhook's ``timeoutSeconds``: well before the API server
#: gives up on the webhook (and, with ``failurePolicy: Fail``, refuses the request).
WEBHOOK_LATENCY_SHARE_OF_TIMEOUT = 0.2


def _webhook_rules(cluster_labels: Mapping[str, str], *, timeout_seconds: int) -> list[dict[str, Any]]:
    """Return the POSIX identity webhook's alerts (see :func:`cluster_rules`)."""
    window = _WEBHOOK_WINDOW
    requests = posix_identity.ADMISSION_REQUESTS_METRIC
    buckets = f"{posix_identity.ADMISSION_DURATION_METRIC}_bucket"
    count = f"{posix_identity.ADMISSION_DURATION_METRIC}_count"
    per_minute = WEBHOOK_MIN_REQUESTS_PER_MINUTE
    error = posix_identity.ADMISSION_OUTCOMES[2]
    busy = f"sum(rate({requests}[{window}])) * 60 >= {per_minute}"
    busy_observed = f"sum(rate({count}[{window}])) * 60 >= {per_minute}"
    seconds = round(timeout_seconds * WEBHOOK_LATENCY_SHARE_OF_TIMEOUT, 3)
    where = f"namespace {posix_identity.WEBHOOK_NAMESPACE}, Deployment {posix_identity.DEPLOYMENT}"
    deployment = f'namespace="{posix_identity.WEBHOOK_NAMESPACE}",deployment="{posix_identity.DEPLOYMENT}"'
    unavailable = f"max(kube_deployment_status_replicas_unavailable{{{deployment}}})"
    fail = (
        "with failurePolicy Fail every workload and pod creation in every team namespace is refused meanwhile"
    )
    see = "docs/operations.md (Alerts) and docs/posix-identity-server.md"
    return [
        {
            "alert": "HyperPodTenancyWebhookErrors",
            "expr": f'sum(rate({requests}{{outcome="{error}"}}[{window}])) / sum(rate({requests}[{window}])) '
            f"> {WEBHOOK_ERROR_RATIO:g} and on() {busy}",
            "for": "5m",
            "labels": {"severity": "critical", **cluster_labels},
            "annotations": {
                "summary": "{{ $value | humanizePercentage }} of the POSIX identity webhook's admission requests "
                f"failed over {window} (threshold {WEBHOOK_ERROR_RATIO:.0%}).",
                "description": "Errors are HTTP 5xx answers and denials because a dependency failed (DynamoDB or "
                "the API server did not answer, the UID range is used up); "
                f"{fail}. hyperpod_tenancy_webhook_admission_denials_total{{reason}} and the webhook's log "
                f"(kubectl logs -n {posix_identity.WEBHOOK_NAMESPACE} deployment/{posix_identity.DEPLOYMENT}) "
                "name the cause; hyperpod_tenancy_webhook_dynamodb_calls_total shows DynamoDB's answers. "
                f"See {see}.",
            },
        },
        {
            "alert": "HyperPodTenancyWebhookSlow",
            "expr": f"histogram_quantile(0.99, sum by (le) (rate({buckets}[{window}]))) > {seconds:g} "
            f"and on() {busy_observed}",
            "for": "10m",
            "labels": {"severity": "warning", **cluster_labels},
            "annotations": {
                "summary": "The POSIX identity webhook's p99 admission latency is "
                '{{ $value | printf "%.2f" }} s, above '
                f"{seconds:g} s (its timeoutSeconds is {timeout_seconds}).",
                "description": "Past timeoutSeconds the API server gives up on the webhook and, with failurePolicy "
                "Fail, refuses the request. Slow answers are DynamoDB lookups and allocations (a cached person "
                "answers in microseconds): check DynamoDB's latency and throttling "
                "(hyperpod_tenancy_webhook_dynamodb_calls_total) and the webhook pods' CPU. "
                f"See {see}.",
            },
        },
        {
            "alert": "HyperPodTenancyWebhookReplicasUnavailable",
            "expr": f"{unavailable} > 0",
            "for": "10m",
            "labels": {"severity": "warning", **cluster_labels},
            "annotations": {
                "summary": '{{ $value | printf "%.0f" }} replicas of the POSIX identity webhook are unavailable '
                f"({where}).",
                "description": f"kubectl describe deployment -n {posix_identity.WEBHOOK_NAMESPACE} "
                f"{posix_identity.DEPLOYMENT} and its pods: a replica not ready usually waits for its "
                "certificate, DynamoDB (its /readyz) or a system node. One replica left still answers; none "
                f"left and {fail}.",
            },
        },
        {
            "alert": "HyperPodTenancyWebhookDown",
            "expr": f"{unavailable} >= max(kube_deployment_spec_replicas{{{deployment}}}) > 0",
            "for": "2m",
            "labels": {"severity": "critical", **cluster_labels},
            "annotations": {
                "summary": f"Every replica of the POSIX identity webhook is unavailable ({where}): {fail}.",
                "description": f"kubectl get pods -n {posix_identity.WEBHOOK_NAMESPACE}; kubectl describe "
                f"deployment -n {posix_identity.WEBHOOK_NAMESPACE} {posix_identity.DEPLOYMENT}. Team members see "
                "'failed calling webhook' errors; `hyperpod-tenancy explain` on a refused workload says so. "
                f"See {see}.",
            },
        },
        {
            "alert": "HyperPodTenancyWebhookMetricsMissing",
            "expr": f"max(kube_deployment_status_replicas_available{{{deployment}}}) > 0 "
            f"and on() absent({posix_identity.READY_METRIC})",
            "for": "15m",
            "labels": {"severity": "warning", **cluster_labels},
            "annotations": {
                "summary": '{{ $value | printf "%.0f" }} replicas of the POSIX identity webhook are available '
                "but no webhook metric reaches the workspace: its error and latency alerts cannot fire.",
                "description": "The collector does not scrape the webhook pods (prometheus.io/scrape, port "
                f"{posix_identity.METRICS_PORT_NAME} {posix_identity.METRICS_PORT}, path "
                f"{posix_identity.METRICS_PATH}). Add a scrape job for them to the collector (see "
                "docs/posix-identity-server.md, Metrics).",
            },
        },
        {
            "alert": "HyperPodTenancyTeamNamespaceUncovered",
            "expr": f"max({posix_identity.UNCOVERED_NAMESPACES_METRIC}) > 0",
            "for": "2m",
            "labels": {"severity": "critical", **cluster_labels},
            "annotations": {
                "summary": '{{ $value | printf "%.0f" }} team namespaces carry labels other than the platform '
                "set (tenant, team, POSIX GID) or have no team record: the admission rules do not judge them as "
                "set up.",
                "description": "The policies and webhooks still match every team namespace by name, but "
                "what they check there (the team's GID and S3 prefix, Kueue managing its jobs) is read from "
                "those labels. The webhook's log names the namespaces and labels (code HPT-NAMESPACE-UNCOVERED; "
                f"kubectl logs -n {posix_identity.WEBHOOK_NAMESPACE} deployment/{posix_identity.DEPLOYMENT}). "
                "Redeploy the team's stack, which writes the labels back, and find what rewrote them. "
                f"See {see}.",
            },
        },
        {
            "alert": "HyperPodTenancyWebhookDeploymentUnseen",
            "expr": f"absent(kube_deployment_spec_replicas{{{deployment}}})",
            "for": "30m",
            "labels": {"severity": "warning", **cluster_labels},
            "annotations": {
                "summary": f"kube-state-metrics reports no Deployment {posix_identity.DEPLOYMENT} in "
                f"{posix_identity.WEBHOOK_NAMESPACE}: the webhook's replica alerts cannot fire.",
                "description": "Either the Deployment is gone (its webhook configurations still send every team "
                "request to it: redeploy the cluster stack) or kube-state-metrics' deployment series do not "
                "reach the workspace (check the observability add-on).",
            },
        },
    ]


def cluster_rules(cluster: str, reserved: Mapping[str, int], *, webhook_timeout_seconds: int) -> str:
    """Return the Prometheus rule file (YAML, JSON-formatted) of the cluster-wide alerts.

    ``HyperPodTenancyAdmissionStalled``: workloads are queued (``kueue_pending_workloads{status="active"}``, the
    workloads in the admission heap) and Kueue made no admission attempt for :data:`_STALL_WINDOW`
    (``kueue_admission_attempts_total``, labels ``result`` and ``replica_role``; both kubernetes-sigs/kueue
    v0.19.2 ``pkg/metrics/metrics.go``). A workload that fails an attempt moves to ``inadmissible``, so queued
    work without attempts means the scheduler is not running (its leader lost, a stuck cache), not a full cluster.

    ``HyperPodTenancyNodesUnavailable``: per instance type, more nodes are NotReady or unschedulable than the
    type's ``reserved`` count (summed over its instance groups), so the team quotas promise capacity that does not
    exist. A node counts when kube-state-metrics reports ``kube_node_status_condition{condition="Ready",
    status="true"} == 0``, a ``kube_node_spec_taint`` with key ``sagemaker.amazonaws.com/node-health-status``
    (HyperPod taints nodes it checks, reboots or replaces) or ``kube_node_spec_unschedulable == 1`` (cordoned);
    these labels (``node``, ``condition``, ``status``, ``key``, ``value``, ``effect``) are kube-state-metrics'
    stable ones. The node's type comes from ``kube_node_labels{label_node_kubernetes_io_instance_type}``, which
    kube-state-metrics exports only for labels in its ``--metric-labels-allowlist``: that the observability add-on
    allowlists ``node.kubernetes.io/instance-type`` is not confirmed, so ``HyperPodTenancyNodeTypeUnknown`` fires
    while no node series carries the label (the per-type alert could not fire).

    The POSIX identity webhook (``failurePolicy: Fail`` stops every team's pod creation while it errors or is down)
    has, from its own metrics (:mod:`hyperpod_tenancy.webhook.metrics`; names in
    :mod:`hyperpod_tenancy.k8s.posix_identity`):

    * ``HyperPodTenancyWebhookErrors`` (critical): over 5 minutes more than :data:`WEBHOOK_ERROR_RATIO` of the
      admission requests had the outcome ``error`` (an HTTP 5xx, or a denial because DynamoDB or the API server
      did not answer or the UID range is used up), while at least :data:`WEBHOOK_MIN_REQUESTS_PER_MINUTE` request
      a minute arrives;
    * ``HyperPodTenancyWebhookSlow`` (warning): the p99 of the admission latency histogram above
      :data:`WEBHOOK_LATENCY_SHARE_OF_TIMEOUT` of ``webhook_timeout_seconds``, with the same minimum traffic;

    and from kube-state-metrics' deployment series (kubernetes/kube-state-metrics v2.20.0
    ``docs/metrics/workload/deployment-metrics.md``, STABLE, labels ``namespace`` and ``deployment``;
    ``internal/store/deployment.go`` reads ``status.unavailableReplicas``, ``status.availableReplicas``,
    ``spec.replicas``) of the webhook's Deployment (:data:`~hyperpod_tenancy.k8s.posix_identity.DEPLOYMENT` in
    :data:`~hyperpod_tenancy.k8s.posix_identity.WEBHOOK_NAMESPACE`):

    * ``HyperPodTenancyWebhookReplicasUnavailable`` (warning): a replica unavailable for 10 minutes;
    * ``HyperPodTenancyWebhookDown`` (critical): every replica unavailable for 2 minutes;
    * ``HyperPodTenancyWebhookMetricsMissing`` (warning): replicas are available but no
      ``hyperpod_tenancy_webhook_ready`` series exists (a gauge every replica exports from its start): that the
      observability add-on scrapes the pods' ``prometheus.io/*`` annotations is not confirmed, so this fires
      when it does not (the two webhook alerts above could not fire);
    * ``HyperPodTenancyWebhookDeploymentUnseen`` (warning): kube-state-metrics reports no such Deployment (it is
      gone, or those series do not arrive: the replica alerts could not fire).

    ``HyperPodTenancyCheckpointSignalMissing``: :func:`checkpoint_signal_rule`.

    Args:
        cluster: the cluster name (a label of every alert).
        reserved: instance type → nodes kept outside every quota (``cluster.instanceGroups[].reserved``, summed).
        webhook_timeout_seconds: the webhook's ``timeoutSeconds`` (:func:`hyperpod_tenancy.constructs.chargeback.chargeback_pipeline.webhook_timeout_seconds`).

    """
    labels = {"cluster": cluster}
    rules: list[dict[str, Any]] = [
        {
            "alert": "HyperPodTenancyAdmissionStalled",
            "expr": 'sum(kueue_pending_workloads{status="active",replica_role!="follower"}) > 0 unless on() '
            f'sum(increase(kueue_admission_attempts_total{{replica_role!="follower"}}[{_STALL_WINDOW}])) > 0',
            "for": "5m",
            "labels": {"severity": "critical", **labels},
            "annotations": {
                "summary": f"Kueue made no admission attempt in {_STALL_WINDOW} while "
                '{{ $value | printf "%.0f" }} workloads are queued.',
                "description": "Check the kueue-controller-manager pods, their logs and leader election; no team's "
                "work is being admitted.",
            },
        }
    ]
    for instance_type, count in sorted(reserved.items()):
        selector = f'{INSTANCE_TYPE_LABEL}="{instance_type}"'
        rules.append(
            {
                "alert": "HyperPodTenancyNodesUnavailable",
                "expr": f"count(({_unhealthy_nodes()}) and on(node) kube_node_labels{{{selector}}}) > {count}",
                "for": "10m",
                "labels": {"severity": "critical", "instance_type": instance_type, **labels},
                "annotations": {
                    "summary": f'{{{{ $value | printf "%.0f" }}}} {instance_type} nodes are NotReady or '
                    f"unschedulable, more than the {count} reserved: team quotas promise capacity that does not "
                    "exist.",
                    "description": "Check HyperPod's node recovery (sagemaker.amazonaws.com/node-health-status); "
                    "lower the quotas of that type or raise reserved if it lasts.",
                },
            }
        )
    if reserved:
        rules.append(
            {
                "alert": "HyperPodTenancyNodeTypeUnknown",
                "expr": f'absent(kube_node_labels{{{INSTANCE_TYPE_LABEL}!=""}})',
                "for": "30m",
                "labels": {"severity": "warning", **labels},
                "annotations": {
                    "summary": "No kube_node_labels series carries node.kubernetes.io/instance-type: the "
                    "unavailable-nodes alert cannot fire.",
                    "description": "Add node.kubernetes.io/instance-type to kube-state-metrics' "
                    "--metric-labels-allowlist (nodes=[...]).",
                },
            }
        )
    rules += _webhook_rules(labels, timeout_seconds=webhook_timeout_seconds)
    rules.append(checkpoint_signal_rule(cluster))
    return json.dumps(
        {"groups": [{"name": "hyperpod-tenancy-cluster", "interval": "1m", "rules": rules}]}, indent=2
    )
