"""GPU partitions billed at their compute slices / 7, worked through by hand on a month the collectors could write.

The month (July 2026, 744 hours) on the platform's partitioned type, two ``ml.p4de.24xlarge`` (8 A100 80GB each,
16 GPUs) in the layout ``all-3g.40gb``: two 3-slice partitions per GPU, 6 of its 7 compute slices, so one slice
of every GPU is in no partition (stranded). ``inference`` holds 7 ``mig-3g.40gb`` all month; ``research`` holds 14
until July 16th 00:00 (360 hours) and none after. The bill: 1,488 instance-hours for $60,948.48, $40.96 an
instance-hour, so $5.12 a GPU-hour.

By hand (a partition's GPU-hours are its slices / 7):

* inference: 7 x 3 / 7 = 3 GPUs x 744 h = 2,232 GPU-hours, $11,427.84;
* research: 14 x 3 / 7 = 6 GPUs x 360 h = 2,160 GPU-hours, $11,059.20 (it holds no other capacity this month);
* capacity: 16 GPUs x 744 h = 11,904 GPU-hours; the idle owner's under ``usage``: 11,904 - 2,232 - 2,160 = 7,512
  GPU-hours, $38,461.44, of which 16 x 744 / 7 = 1,700.57 are the stranded slices;
* under ``reservation``: research pays its guarantee, 14 x 3 / 7 = 6 GPUs x 744 h = 4,464 GPU-hours ($22,855.68);
  the idle owner 11,904 - 2,232 - 4,464 = 5,208 GPU-hours ($26,664.96).

Either way the charges add up to the bill, $60,948.48. The rows are written by the collector's own code
(:func:`partition_rows` from ClusterQueues as Kueue reports them), read by the shared SQL on DuckDB, and billed by
the engine from the configuration the policy derives.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from chargeback_data import cur_line, t, write_cur, write_table
from platforms import reference_data

from hyperpod_tenancy.chargeback.engine import compute_report
from hyperpod_tenancy.chargeback.model import SLICES_PER_GPU, BillingRule, Report
from hyperpod_tenancy.chargeback.queries import gpu_ms_of_slices
from hyperpod_tenancy.policy import Platform, names, platform_from_dict
from hyperpod_tenancy.policy.chargeback import chargeback_config
from hyperpod_tenancy.policy.mig import COMPUTE_SLICES, profiles, slices
from hyperpod_tenancy.runtime.eviction_collector.partitions import SLICES_PER_GPU as COLLECTOR_SLICES_PER_GPU
from hyperpod_tenancy.runtime.eviction_collector.partitions import partition_rows
from hyperpod_tenancy.tools.chargeback.offline import run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-07"
P4DE = "ml.p4de.24xlarge"
START = dt.datetime(2026, 7, 1)
END = dt.datetime(2026, 8, 1)
HALF = dt.datetime(2026, 7, 16)
RUN = dt.timedelta(minutes=5)


def _platform() -> Platform:
    data = reference_data()
    data["cluster"]["instanceGroups"][1] = {
        "name": "p4de-notebooks",
        "instanceType": P4DE,
        "count": 2,
        "reserved": 0,
        "threadsPerCore": 2,
        "availabilityZone": "us-east-1b",
        "deepHealthChecks": ["InstanceStress"],
        "migConfig": "all-3g.40gb",
    }

    def partitions(n: int) -> dict[str, Any]:
        return {"acceleratorPartition": {"type": "mig-3g.40gb", "count": n}}

    data["teams"][0]["compute"]["quotas"] = {"ml.p5.48xlarge": 9, P4DE: partitions(14)}
    data["teams"][2]["compute"]["quotas"] = {P4DE: partitions(7)}
    data["chargeback"]["prices"] = {"ml.p5.48xlarge": 12.29, P4DE: 5.12}
    return platform_from_dict(data)


def _queue(team: str, held: int) -> dict[str, Any]:
    """The team's ClusterQueue as Kueue reports it: its quota covers mig-3g.40gb, ``held`` of them in use."""
    resource = "nvidia.com/mig-3g.40gb"
    return {
        "metadata": {"name": names.cluster_queue(team)},
        "spec": {
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "memory", resource],
                    "flavors": [{"name": P4DE, "resources": [{"name": resource, "nominalQuota": "7"}]}],
                }
            ]
        },
        "status": {
            "flavorsUsage": [
                {"name": P4DE, "resources": [{"name": resource, "total": str(held), "borrowed": "0"}]}
            ]
        },
    }


def _runs() -> list[dict[str, Any]]:
    """Every 5-minute run of the eviction collector in the month: the rows it writes."""
    rows: list[dict[str, Any]] = []
    moment = START
    while moment < END:
        queues = [_queue("inference", 7), _queue("research", 14 if moment < HALF else 0)]
        for row in partition_rows(
            queues,
            queue_prefix=names.NAMESPACE_PREFIX,
            queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
            moment=moment.replace(tzinfo=dt.UTC),
        ):
            rows.append({**row, "timestamp": t(row["timestamp"])})
        moment += RUN
    return rows


def _every_run(make: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    moment = START
    while moment < END:
        rows += make(moment)
        moment += RUN
    return rows


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("partitions")
    write_table(root, "partition_usage", _runs(), cluster=CLUSTER)
    write_table(
        root,
        "node",
        _every_run(
            lambda m: [
                {
                    "timestamp": m,
                    "instance_group": "p4de-notebooks",
                    "instance_type": P4DE,
                    "instance_id": f"i-{n}",
                    "status": "Running",
                    "schedulable": True,
                }
                for n in range(2)
            ]
        ),
        cluster=CLUSTER,
    )
    write_table(
        root, "heartdub", _every_run(lambda m: [{"timestamp": m, "cluster": CLUSTER}]), cluster=CLUSTER
    )
    # the usage-report operator counts nvidia.com/gpu only, which partitioned nodes do not offer
    write_table(
        root,
        "clusterqueue",
        [
            {
                "instance_type": P4DE,
                "timestamp": START,
                "namespace": names.namespace(team),
                "resource_version": "1",
                "team": team,
                "gpu_total": 0.0,
                "gpu_borrowed": 0.0,
                "cpu_total": 0.0,
                "cpu_borrowed": 0.0,
                "neuron_core_total": 0.0,
                "neuron_core_borrowed": 0.0,
            }
            for team in ("inference", "research")
        ],
        cluster=CLUSTER,
    )
    cur = write_cur(
        root / "cur.parquet",
        [
            cur_line(
                "AmazonSageMaker", f"USE1-Cluster:{P4DE}", "1488", "60948.48", cluster=CLUSTER, period=MONTH
            )
        ],
    )
    return root, cur


def _report(month: tuple[Path, Path], rule: BillingRule) -> Report:
    usage_dir, cur = month
    config = chargeback_config(_platform())
    config = dataclasses.replace(config, terms=tuple(dataclasses.replace(t, rule=rule) for t in config.terms))
    usage, costs = run_queries(
        usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=config.gpus_per_instance, cur=cur
    )
    return compute_report(config, MONTH, usage, costs)


def test_the_usage_rule_bills_slices_over_seven_and_the_stranded_slice_to_the_idle_owner(
    month: tuple[Path, Path],
) -> None:
    report = _report(month, BillingRule.USAGE)
    rows = {r.team: r for r in report.rows if r.instance_type == P4DE}
    assert rows["inference"].used_gpu_hours == 2232
    assert rows["inference"].total == Decimal("11427.84")
    assert rows["research"].used_gpu_hours == 2160
    assert rows["research"].total == Decimal("11059.20")
    idle = [r for r in rows.values() if r.team not in ("inference", "research")]
    assert sum(r.idle_gpu_hours for r in idle) == 7512
    assert sum(r.total for r in idle) == Decimal("38461.44")
    assert sum(r.total for r in report.rows) == Decimal("60948.48")
    assert report.reconciliation.bill == Decimal("60948.48")
    (note,) = [n for n in report.notes if n.startswith(f"{P4DE}:")]
    assert "compute slices / 7" in note and "1 of each GPU's 7 slices" in note and "1700.57 GPU-hours" in note


def test_the_reservation_rule_bills_the_partition_guarantee(month: tuple[Path, Path]) -> None:
    report = _report(month, BillingRule.RESERVATION)
    rows = {r.team: r for r in report.rows if r.instance_type == P4DE}
    assert (rows["inference"].guaranteed_gpu_hours, rows["inference"].total) == (2232, Decimal("11427.84"))
    assert (rows["research"].guaranteed_gpu_hours, rows["research"].total) == (4464, Decimal("22855.68"))
    idle = [r for r in rows.values() if r.team not in ("inference", "research")]
    assert sum(r.total for r in idle) == Decimal("26664.96")
    assert sum(r.total for r in report.rows) == Decimal("60948.48")


def test_the_policy_derives_the_guarantee_and_the_layouts_slices() -> None:
    config = chargeback_config(_platform())
    assert config.partitioned_slices == {P4DE: 6}
    quotas = {t.name: dict(t.quotas) for t in config.teams}
    # 14 x 3 slices of 8 x 7: 3/4 of an instance; 7 x 3 of 56: 3/8
    assert quotas["research"][P4DE] * 8 == 6 and quotas["inference"][P4DE] * 8 == 3


def test_a_slice_is_a_seventh_of_a_gpu_wherever_it_is_counted() -> None:
    # the engine's constant is the policy's, and the collector reads a profile's slices as the policy does
    assert SLICES_PER_GPU == COMPUTE_SLICES == COLLECTOR_SLICES_PER_GPU
    for itype in ("ml.p4d.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge"):
        for profile in profiles(itype):
            (row,) = partition_rows(
                [_queue_of(profile)],
                queue_prefix=names.NAMESPACE_PREFIX,
                queue_suffix=names.CLUSTER_QUEUE_SUFFIX,
                moment=dt.datetime(2026, 7, 1, tzinfo=dt.UTC),
            )
            assert row["slices"] == slices(profile), profile
    # 7 slice-milliseconds are one GPU-millisecond; a remainder rounds to the nearest
    assert [gpu_ms_of_slices(n) for n in (0, 3, 4, 7, 10, 11, 7 * 3_600_000)] == [0, 0, 1, 1, 1, 2, 3_600_000]


def _queue_of(profile: str) -> dict[str, Any]:
    queue = _queue("inference", 1)
    resource = f"nvidia.com/{profile}"
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["name"] = resource
    queue["status"]["flavorsUsage"][0]["resources"][0]["name"] = resource
    return queue
