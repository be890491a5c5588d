"""A real Kueue preemption read by the eviction collector from the real server and billed by the chargeback engine.

On the Kueue-backend reference platform, research bursts to its ceiling and vision comes back for its guarantee
(the ``reclaim`` scenario of ``tests/support/kueue_scenarios.py``): real Kueue preempts research's borrowing
workload. The collector's own reading (:func:`eviction_collector.list_workloads` over TLS with a bearer token, as
a service account bound to the platform's read-only collector ClusterRole, then :func:`new_evictions`) turns what
Kueue wrote into the eviction record; the record becomes the chargeback engine's ``Eviction`` as the preemption
notice reads it, and the month's report prices the GPU-hours it lost: the burst's GPUs times the run Kueue cut
short (declared interval 30 min, longer than the run).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from cluster_platform import OnCluster
from kueue_scenarios import PREEMPTED, played_on_kueue, reference_scenarios, workloads_by_job

from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import (
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    CostInputs,
    Eviction,
    HourlyCapacity,
    TeamConfig,
    UsageInputs,
)
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import EVICTION_COLLECTOR_ROLE
from hyperpod_tenancy.k8s.labels import CHECKPOINT_DIR_ENV, CHECKPOINT_INTERVAL_ENV
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.runtime.eviction_collector import (
    CLUSTER_QUEUES_PATH,
    gpu_flavors,
    list_workloads,
    new_evictions,
    parse_time,
)
from hyperpod_tenancy.runtime.kube_api import list_objects
from hyperpod_tenancy.tools.plan.tenancy_plan import build_plan

pytestmark = pytest.mark.cluster

P5 = "ml.p5.48xlarge"
READER = {"namespace": "default", "name": "eviction-collector-test"}


@pytest.fixture(scope="module")
def collector_token(kueue_on_cluster: OnCluster) -> Iterator[str]:
    """A bearer token of a service account bound to the platform's eviction-collector ClusterRole only."""
    admin = kueue_on_cluster.admin
    assert any(
        o["kind"] == "ClusterRole" and o["metadata"]["name"] == EVICTION_COLLECTOR_ROLE
        for o in kueue_on_cluster.objects
    ), "the platform renders the collector's ClusterRole"
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(READER)}
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": READER["name"]},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": EVICTION_COLLECTOR_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", **READER}],
    }
    created = [account, binding]
    try:
        for obj in created:
            assert admin.apply(obj).ok
        yield kueue_on_cluster.plane.service_account_token(READER["namespace"], READER["name"])
    finally:
        for obj in reversed(created):
            admin.delete(obj)


def test_a_real_preemption_is_collected_and_billed(kueue_on_cluster: OnCluster, collector_token: str) -> None:
    on = kueue_on_cluster
    on.await_admission()
    platform = on.synth.platform
    plan = build_plan(platform, month="2026-12")
    (scenario,) = (s for s in reference_scenarios(platform, plan) if s.name == "reclaim")
    (research,) = (s for s in plan.shares if s.team == "research" and s.instance_type == P5)
    burst = research.burst_ceiling_gpus - research.guaranteed_gpus
    since = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=1)
    with played_on_kueue(on.admin, lambda team: on.member("billed", team), scenario) as seen:
        assert seen[-1] == scenario.steps[-1].expected, seen[-1]
        assert seen[-1].workloads["reclaim-burst"].status == PREEMPTED
        victim = workloads_by_job(on.admin, ["research"])["reclaim-burst"]
        namespace = names.namespace("research")
        job = on.admin.get(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "reclaim-burst", "namespace": namespace},
            }
        )
        pods = on.admin.list(
            "v1", "Pod", namespace=namespace, labelSelector="batch.kubernetes.io/job-name=reclaim-burst"
        )
        ca_pem = on.plane.pki.cert.read_text()
        workloads = list_workloads(on.plane.server, collector_token, ca_pem)
        queues = list_objects(on.plane.server, collector_token, ca_pem, CLUSTER_QUEUES_PATH)
        flavors = gpu_flavors(
            queues, queue_prefix=names.NAMESPACE_PREFIX, queue_suffix=names.CLUSTER_QUEUE_SUFFIX
        )
        records = list(
            new_evictions(
                workloads,
                cluster=platform.cluster.name,
                since=since,
                interval_env=CHECKPOINT_INTERVAL_ENV,
                dir_env=CHECKPOINT_DIR_ENV,
                team_gpu_flavors=flavors,
            )
        )
    print("what Kueue wrote on the preempted Workload:", _kueue_fields(victim))
    # what Kueue v0.19.2 leaves on a preempted Workload once its pods are gone: Evicted (reason Preempted),
    # Preempted (InCohortReclamation), no admission (the flavor it ran on is gone), no priority-class label
    assert not victim["status"].get("admission"), (
        "Kueue clears the admission: the flavor comes from the queue"
    )
    assert flavors[names.namespace("research")] == [P5]
    # the Job is suspended again and its pods are being deleted: Kueue released the quota (flavorsUsage back to
    # the guarantee) while they may still be terminating
    assert job is not None and job["spec"]["suspend"] is True
    assert all(p["metadata"].get("deletionTimestamp") for p in pods), [p["metadata"]["name"] for p in pods]
    (record,) = records
    assert record["uid"] == victim["metadata"]["uid"]
    assert record["namespace"] == names.namespace("research")
    assert (record["instance_type"], record["gpus"]) == (P5, burst)
    assert record["priority_class"] == names.workload_priority_class("training")
    assert record["checkpoint_interval_minutes"] == 30
    evicted_at = parse_time(record["timestamp"])
    assert since <= evicted_at <= dt.datetime.now(dt.UTC)

    eviction = Eviction(
        time=evicted_at,
        cluster=record["cluster"],
        team=record["namespace"].removeprefix(names.namespace("")),
        instance_type=record["instance_type"],
        workload=record["workload"],
        priority_class=record["priority_class"],
        gpus=record["gpus"],
        run_started=parse_time(record["admitted_at"]),
        checkpoint_interval_minutes=record["checkpoint_interval_minutes"],
    )
    report = compute_report(
        _config(platform.cluster.name), evicted_at.strftime("%Y-%m"), _usage(eviction), CostInputs()
    )
    (loss,) = report.preemption_losses
    run_hours = Decimal((eviction.time - eviction.run_started).total_seconds()) / 3600
    assert (loss.team, loss.instance_type, loss.evictions) == ("research", P5, 1)
    # the run Kueue cut short is shorter than the declared 30 minutes: all of it is lost, on every GPU it held
    assert loss.lost_gpu_hours == pytest.approx(burst * run_hours, abs=Decimal("0.01"))


def _kueue_fields(workload: dict[str, Any]) -> dict[str, Any]:
    status = workload.get("status", {})
    return {
        "conditions": [
            (c["type"], c["status"], c.get("reason"), c.get("message", "")[:80])
            for c in status.get("conditions", [])
        ],
        "admission": bool(status.get("admission")),
        "schedulingStats": status.get("schedulingStats"),
        "labels": workload["metadata"].get("labels"),
    }


def _config(cluster: str) -> ChargebackConfig:
    return ChargebackConfig(
        cluster=cluster,
        terms=(
            BillingTerm(effective_from=dt.date(2026, 1, 1), rule=BillingRule.USAGE, idle_owner="platform"),
        ),
        teams=(TeamConfig(name="research", cost_center="research", quotas={P5: 9}),),
        gpus_per_instance={P5: 8},
        prices={P5: Decimal("12.29")},
    )


def _usage(eviction: Eviction) -> UsageInputs:
    hour = eviction.time.replace(minute=0, second=0)
    capacity = HourlyCapacity(
        hour=hour, cluster=eviction.cluster, instance_type=P5, gpu_ms=128 * 3_600_000, unavailable_gpu_ms=0
    )
    return UsageInputs(usage=(), capacity=(capacity,), evictions=(eviction,))
