"""Each team's Prometheus rules: the same-day preemption alert, overdue checkpoints and long waits, as plain data."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names

__all__ = [
    "CHECKPOINTS_OVERDUE_SERIES",
    "checkpoint_rule",
    "checkpoint_signal_rule",
    "preemption_rules",
    "waiting_rule",
]

#: The window of the same-day preemption alert.
_ALERT_WINDOW = "1d"


def preemption_rules(
    config: model.ChargebackConfig,
    *,
    threshold_gpu_hours_per_day: float,
    priority_classes: Mapping[str, Sequence[str]],
    max_pending_minutes: float | None = None,
    checkpoints: bool = False,
) -> str:
    """Return the Prometheus rule file (YAML, JSON-formatted) of the same-day preemption alert, one rule per team.

    Kueue has no GPU-hours metric for evictions (research/kueue.md section 5). Per team and priority class the
    rule counts preemption evictions over the last day (``kueue_evicted_workloads_total{reason="Preempted"}``,
    the victim's ClusterQueue, leader replica only; Kueue v0.19.2 ``pkg/metrics/metrics.go`` declares the counter
    with ``cluster_queue``, ``reason``, ``underlying_cause``, ``priority_class`` and ``replica_role``, and
    ``pkg/workload/evict/evict.go`` fills ``priority_class`` with the Workload's ``priorityClassRef``) and weighs
    each with the most one eviction of that class
    can throw away: the class's declared checkpoint bound (``maxCheckpointInterval``) times the GPUs of one instance
    of the team's largest instance type. The exact figure is the monthly report's.

    Args:
        config: the chargeback configuration (teams, their quotas, GPUs per instance, checkpoint bounds).
        threshold_gpu_hours_per_day: alert when a team's estimated loss over 24 hours exceeds this.
        priority_classes: team → Kueue priority class names (``<class>-priority``) its work may carry.
        max_pending_minutes: also add, in a second group, each team's :func:`waiting_rule` with this threshold.
            Default: no waiting rule.
        checkpoints: also add, in a third group, each team's :func:`checkpoint_rule`. Default: no such rule.

    """
    rules = []
    for team in sorted(config.teams, key=lambda t: t.name):
        gpus = max((config.gpus_per_instance.get(t, 0) for t in team.quotas), default=0)
        queue = names.cluster_queue(team.name)
        terms = []
        for priority_class in sorted(priority_classes.get(team.name, ())):
            hours = config.max_checkpoint_minutes.get(priority_class, 60) / 60
            selector = f'cluster_queue="{queue}",reason="Preempted",priority_class="{priority_class}",replica_role!="follower"'
            terms.append(
                f"(sum(increase(kueue_evicted_workloads_total{{{selector}}}[{_ALERT_WINDOW}])) or vector(0))"
                f" * {gpus * hours:g}"
            )
        if not terms or gpus == 0:
            continue
        rules.append(
            {
                "alert": "HyperPodTenancyPreemptionLoss",
                "expr": f"({' + '.join(terms)}) > {threshold_gpu_hours_per_day:g}",
                "labels": {"severity": "warning", "team": team.name, "cluster": config.cluster},
                "annotations": {
                    "summary": f'Team {team.name} lost an estimated {{{{ $value | printf "%.0f" }}}} GPU-hours '
                    f"to preemption in the last 24 hours (threshold {threshold_gpu_hours_per_day:g}).",
                    "description": "Estimate: preemption evictions x the priority class's checkpoint bound x GPUs "
                    "of one instance; the monthly chargeback report has the exact figure.",
                },
            }
        )
    groups: list[dict[str, Any]] = [{"name": "hyperpod-tenancy-preemption", "interval": "1m", "rules": rules}]
    if max_pending_minutes is not None:
        groups.append(
            {
                "name": "hyperpod-tenancy-waiting",
                "interval": "1m",
                "rules": [
                    waiting_rule(config.cluster, team.name, max_pending_minutes=max_pending_minutes)
                    for team in sorted(config.teams, key=lambda t: t.name)
                ],
            }
        )
    if checkpoints:
        groups.append(
            {
                "name": "hyperpod-tenancy-checkpoints",
                "interval": "1m",
                "rules": [
                    checkpoint_rule(config.cluster, t.name)
                    for t in sorted(config.teams, key=lambda t: t.name)
                ],
            }
        )
    return json.dumps({"groups": groups}, indent=2)


#: The eviction collector's per-team count of overdue checkpoints, written to the workspace every 5 minutes
#: (:data:`hyperpod_tenancy.runtime.eviction_collector.OVERDUE_SERIES`; labels ``cluster`` and ``team``).
CHECKPOINTS_OVERDUE_SERIES = "hyperpod_tenancy_checkpoints_overdue"


#: Window over which every sample of the count must be at least 1: two of the collector's runs, and a minute.
_OVERDUE_WINDOW = "11m"


#: How long the count may be missing for the whole cluster before the signal-missing alert fires.
_OVERDUE_ABSENT_WINDOW = "30m"


def checkpoint_rule(cluster: str, team: str) -> dict[str, Any]:
    """Return the alerting rule that fires when a team's work on borrowed capacity has stopped checkpointing.

    It reads the series :data:`CHECKPOINTS_OVERDUE_SERIES`, which the eviction collector writes to the workspace
    (Prometheus remote write, :mod:`hyperpod_tenancy.runtime.remote_write`) every 5 minutes for every team:
    the team's admitted workloads, while its ClusterQueue borrows, that have not written their declared checkpoint
    directory within their declared interval plus one scan of the team's checkpoint scanner, or that declare none
    in their containers' environment and were admitted more than one scan ago
    (:func:`hyperpod_tenancy.runtime.eviction_collector.checkpoints_overdue`). Kueue has no checkpoint metric: the
    signal comes from the file system, through the in-cluster scanner's Workload annotation. The rule fires when
    every sample of the last :data:`_OVERDUE_WINDOW` is at least 1 (two runs in a row: one late scan does not page
    anyone); a missing series fires the cluster's ``HyperPodTenancyCheckpointSignalMissing`` instead.

    Args:
        cluster: the cluster name (the series' ``cluster`` label and a label of the alert).
        team: the team whose count is read.

    """
    selector = f'{CHECKPOINTS_OVERDUE_SERIES}{{cluster="{cluster}",team="{team}"}}'
    return {
        "alert": "HyperPodTenancyCheckpointsOverdue",
        "expr": f"min_over_time({selector}[{_OVERDUE_WINDOW}]) >= 1",
        "labels": {"severity": "warning", "team": team, "cluster": cluster},
        "annotations": {
            "summary": f'{{{{ $value | printf "%.0f" }}}} workloads of team {team} on borrowed capacity have not '
            "written their checkpoint directory within their declared interval.",
            "description": "A reclaim of the borrowed capacity now would lose more than the declared interval. "
            f"Check the job's checkpointing (its {labels.CHECKPOINT_DIR_ENV} and the "
            "hyperpod-tenancy.io/last-checkpoint annotation of its Workload) and the team's checkpoint scanner "
            "CronJob.",
        },
    }


def checkpoint_signal_rule(cluster: str) -> dict[str, Any]:
    """Return the cluster-wide rule that fires when no overdue-checkpoint count reached the workspace.

    The eviction collector writes :data:`CHECKPOINTS_OVERDUE_SERIES` for every team on every run, 0 included; no
    sample for :data:`_OVERDUE_ABSENT_WINDOW` means its remote write fails (or it stopped, which its own
    CloudWatch alarm reports too), and no team's :func:`checkpoint_rule` could fire.
    """
    return {
        "alert": "HyperPodTenancyCheckpointSignalMissing",
        "expr": f'absent_over_time({CHECKPOINTS_OVERDUE_SERIES}{{cluster="{cluster}"}}[{_OVERDUE_ABSENT_WINDOW}])',
        "labels": {"severity": "warning", "cluster": cluster},
        "annotations": {
            "summary": f"No overdue-checkpoint count reached the workspace for {_OVERDUE_ABSENT_WINDOW}: the teams' "
            "checkpoint alerts cannot fire.",
            "description": "Check the eviction collector's logs (its remote write to the workspace, aps:RemoteWrite) "
            "and its <cluster>-chargeback-eviction-collector-stopped alarm.",
        },
    }


def waiting_rule(cluster: str, team: str, *, max_pending_minutes: float) -> dict[str, Any]:
    """Return the alerting rule that fires when a team's ClusterQueue has had work waiting for too long.

    It reads Kueue's gauge ``kueue_pending_workloads`` (kubernetes-sigs/kueue v0.19.2 ``pkg/metrics/metrics.go``,
    ``PendingWorkloads``: labels ``cluster_queue``, ``status`` (``active`` or ``inadmissible``) and
    ``replica_role``), which counts every workload not yet admitted, so a workload that is never admitted keeps it
    above zero and the rule fires. ``kueue_admission_wait_time_seconds`` is observed only at admission and could
    never fire for such a workload; Kueue 0.19.2 has no metric of the oldest pending workload's age, so the rule
    is "the queue has not been empty for ``max_pending_minutes``": it fires when one workload waits that long, and
    also when a steady backlog keeps the queue non-empty that long (the team waits either way). A gap in the series
    (Kueue restarting) restarts the clock.

    Args:
        cluster: the cluster name (a label of the alert).
        team: the team whose ClusterQueue (:func:`~hyperpod_tenancy.policy.names.cluster_queue`) is read.
        max_pending_minutes: how long the queue may hold pending work before the alert fires.

    """
    queue = names.cluster_queue(team)
    minutes = f"{max_pending_minutes:g}"
    return {
        "alert": "HyperPodTenancyWorkloadsWaiting",
        "expr": f'sum(kueue_pending_workloads{{cluster_queue="{queue}",replica_role!="follower"}}) > 0',
        "for": f"{minutes}m",
        "labels": {"severity": "warning", "team": team, "cluster": cluster},
        "annotations": {
            "summary": f"Team {team} has had workloads waiting for admission for more than {minutes} minutes "
            '({{ $value | printf "%.0f" }} pending now).',
            "description": f"ClusterQueue {queue} has not been empty for {minutes} minutes, which includes "
            "workloads never admitted. Run `hyperpod-tenancy explain` on a waiting workload to see why.",
        },
    }
