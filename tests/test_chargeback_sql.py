"""The chargeback's Athena SQL (Trino), transpiled with sqlglot and executed on DuckDB over generated Parquet.

The data is small and written by hand in the collector's schema (``chargeback_data``), so every expected
aggregate below can be checked with pencil and paper; the comments show the arithmetic.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlglot
from chargeback_data import (
    SCHEMAS,
    cur_line,
    generate_month,
    heartbeats,
    register_tables,
    t,
    write_cur,
    write_table,
)

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.chargeback.model import (
    BillCredit,
    Eviction,
    InstanceTypeCost,
    SharedCost,
    UsageRecords,
    gpu_hours,
)
from hyperpod_tenancy.tools.chargeback.offline import OfflineInputError, run_queries, transpile
from hyperpod_tenancy.tools.chargeback.offline.tables import _register_usage

CLUSTER = "shared-gpu"
MONTH = "2026-07"
GPUS = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 4}
HOURS_IN_JULY = 31 * 24


def _utc(text: str) -> dt.datetime:
    return t(text).replace(tzinfo=dt.UTC)


def _cq(
    ts: str, ns: str, itype: str, gpus: float, borrowed: float, *, rv: str, team: str = ""
) -> dict[str, object]:
    return {
        "instance_type": itype,
        "timestamp": t(ts),
        "namespace": ns,
        "resource_version": rv,
        "team": team or ns,
        "gpu_total": gpus,
        "gpu_borrowed": borrowed,
        "cpu_total": gpus * 12,
        "cpu_borrowed": 0.0,
        "neuron_core_total": 0.0,
        "neuron_core_borrowed": 0.0,
    }


def _node(
    ts: str, iid: str, itype: str, status: str = "Running", schedulable: bool = True
) -> dict[str, object]:
    group = "p5" if "p5" in itype else "g5"
    return {
        "timestamp": t(ts),
        "instance_group": group,
        "instance_type": itype,
        "instance_id": iid,
        "status": status,
        "schedulable": schedulable,
    }


def _eviction(ts: str, ns: str, workload: str, interval: int | None, last: str | None) -> dict[str, object]:
    return {
        "timestamp": t(ts),
        "namespace": ns,
        "workload": workload,
        "priority_class": "training-priority",
        "instance_type": "ml.p5.48xlarge",
        "gpus": 16,
        "admitted_at": t(ts) - dt.timedelta(hours=5),
        "checkpoint_interval_minutes": interval,
        "last_checkpoint": t(last) if last else None,
    }


@pytest.fixture(scope="module")
def usage_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("usage")
    write_table(
        root,
        "clusterqueue",
        [
            # carried in from June: team a holds 8 GPUs when July starts
            _cq("2026-06-30 23:00", "hyperpod-ns-a", "ml.p5.48xlarge", 8, 0, rv="10"),
            # 00:30 a borrows 8 more; an older resource_version (9 < 11 as integers, not as strings) is ignored
            _cq("2026-07-01 00:30", "hyperpod-ns-a", "ml.p5.48xlarge", 16, 8, rv="11"),
            _cq("2026-07-01 00:30", "hyperpod-ns-a", "ml.p5.48xlarge", 99, 99, rv="9"),
            _cq("2026-07-01 02:15", "hyperpod-ns-a", "ml.p5.48xlarge", 0, 0, rv="12"),
            # team b from the last half hour of July to month end; its August snapshot is another month
            _cq("2026-07-31 23:30", "hyperpod-ns-b", "ml.g5.12xlarge", 4, 0, rv="20", team="team-b"),
        ],
        cluster=CLUSTER,
    )
    write_table(
        root,
        "clusterqueue",
        [_cq("2026-08-01 00:10", "hyperpod-ns-b", "ml.g5.12xlarge", 4, 0, rv="21")],
        cluster=CLUSTER,
    )
    write_table(
        root,
        "clusterqueue",
        [_cq("2026-07-01 00:00", "hyperpod-ns-a", "ml.p5.48xlarge", 64, 0, rv="1")],
        cluster="other",
    )
    write_table(
        root,
        "node",
        [
            _node("2026-06-30 23:30", "i-1", "ml.p5.48xlarge"),
            _node("2026-06-30 23:30", "i-2", "ml.p5.48xlarge"),
            _node("2026-07-01 01:00", "i-1", "ml.p5.48xlarge"),
            _node("2026-07-01 01:00", "i-2", "ml.p5.48xlarge", "DeepHealthCheckInProgress", False),
            _node("2026-07-01 01:00", "i-3", "ml.g5.12xlarge", "Running", False),
            _node("2026-07-01 03:00", "i-1", "ml.p5.48xlarge"),
            _node("2026-07-01 03:00", "i-3", "ml.g5.12xlarge"),
        ],
        cluster=CLUSTER,
    )
    write_table(root, "node", [_node("2026-07-01 03:00", "i-9", "ml.p5.48xlarge")], cluster="other")
    # the operator's heartbeat every 5 minutes, but for 3 hours on the 4th, and exactly one hour on the 20th
    holes = [("2026-07-04 10:00", "2026-07-04 13:00"), ("2026-07-20 10:05", "2026-07-20 11:00")]
    write_table(
        root, "heartdub", heartbeats("2026-06-30 23:00", "2026-08-01 01:00", holes=holes), cluster=CLUSTER
    )
    write_table(root, "heartdub", heartbeats("2026-07-04 10:00", "2026-07-04 13:00"), cluster="other")
    write_table(
        root,
        "eviction",
        [
            _eviction("2026-07-10 02:00", "hyperpod-ns-a", "pretrain-7", 30, "2026-07-10 01:45"),
            _eviction("2026-07-12 09:30", "hyperpod-ns-a", "sweep-3", None, None),
            _eviction("2026-06-30 22:00", "hyperpod-ns-a", "june-job", 30, None),
        ],
        cluster=CLUSTER,
    )
    write_table(
        root,
        "eviction",
        [_eviction("2026-07-10 02:00", "hyperpod-ns-a", "elsewhere", 30, None)],
        cluster="other",
    )
    return root


def _cur_lines() -> list[dict[str, object]]:
    p = MONTH
    return [
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "700", "34416.10", cluster=CLUSTER, period=p
        ),
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "41", "2015.71", cluster=CLUSTER, period=p
        ),
        # a credit on the same usage type: listed as a credit, in neither the cost nor the instance-hours
        cur_line(
            "AmazonSageMaker",
            "USE1-Cluster:ml.p5.48xlarge",
            "0",
            "-12.34",
            cluster=CLUSTER,
            period=p,
            line_type="Credit",
        ),
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:ml.g5.12xlarge", "743", "5291.646", cluster=CLUSTER, period=p
        ),
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:VolumeUsage.gp2", "5000", "88.88", cluster=CLUSTER, period=p
        ),
        cur_line("AmazonFSx", "USE1-Throughput", "1", "1200.50", cluster=CLUSTER, period=p),
        cur_line("AmazonEKS", "USE1-AmazonEKS-Hours:perCluster", "744", "74.40", cluster=CLUSTER, period=p),
        cur_line("AmazonEC2", "USE1-NatGateway-Hours", "744", "32.55", cluster=CLUSTER, period=p),
        cur_line("AmazonEC2", "USE1-NatGateway-Bytes", "222", "10.00", cluster=CLUSTER, period=p),
        cur_line("AmazonEC2", "USE1-BoxUsage:m5.xlarge", "1488", "142.85", cluster=CLUSTER, period=p),
        cur_line("AmazonPrometheus", "USE1-AMP:MetricSampleCount", "1", "20.00", cluster=CLUSTER, period=p),
        cur_line("AmazonS3", "USE1-TimedStorage-ByteHrs", "1", "5.00", cluster=CLUSTER, period=p),
        # not the cluster's: untagged, another cluster, another month
        cur_line("AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "10", "999", cluster=None, period=p),
        cur_line("AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "10", "888", cluster="other", period=p),
        cur_line(
            "AmazonSageMaker", "USE1-Cluster:ml.p5.48xlarge", "10", "777", cluster=CLUSTER, period="2026-06"
        ),
    ]


# 36431.81 - 12.34 + 5291.646 + 88.88 + 1200.50 + 74.40 + 42.55 + 142.85 + 20.00 + 5.00
BILL = Decimal("43285.296")


@pytest.fixture(scope="module", params=["parquet", "csv"])
def cur_file(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    fmt = str(request.param)
    return write_cur(tmp_path_factory.mktemp("cur") / f"cur.{fmt}", _cur_lines(), fmt=fmt)


def test_every_query_is_trino_and_transpiles_to_one_duckdb_statement() -> None:
    assert set(queries.SQL) == set(queries.USAGE_QUERIES + queries.COST_QUERIES)
    for name in queries.SQL:
        sql = queries.render(name, month=MONTH, cluster=CLUSTER)
        assert "{{" not in sql
        sqlglot.parse_one(sql, read="trino", error_level=sqlglot.ErrorLevel.RAISE)
        duck = transpile(sql)
        assert "GENERATE_SERIES" in duck or name in {
            "evictions",
            "cur_costs",
            "collection_gaps",
            "team_periods",
        }


def test_hourly_usage_follows_the_snapshots(usage_dir: Path) -> None:
    usage, _ = run_queries(usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    got = [
        (u.hour, u.team, u.instance_type, gpu_hours(u.gpu_ms), gpu_hours(u.borrowed_gpu_ms))
        for u in usage.usage
    ]
    assert got == [
        # 00:00-00:30 8 GPUs (from June) + 00:30-01:00 16 GPUs = 4 + 8; borrowed 0.5 h x 8
        (_utc("2026-07-01 00:00"), "a", "ml.p5.48xlarge", Decimal(12), Decimal(4)),
        (_utc("2026-07-01 01:00"), "a", "ml.p5.48xlarge", Decimal(16), Decimal(8)),
        # 02:00-02:15 at 16, then 0
        (_utc("2026-07-01 02:00"), "a", "ml.p5.48xlarge", Decimal(4), Decimal(2)),
        # namespace wins over the team column; held until the end of the month, not into August
        (_utc("2026-07-31 23:00"), "b", "ml.g5.12xlarge", Decimal(2), Decimal(0)),
    ]
    assert {u.cluster for u in usage.usage} == {CLUSTER}


def test_hourly_capacity_follows_the_node_inventory(usage_dir: Path) -> None:
    usage, _ = run_queries(usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    by_type: dict[str, list[tuple[dt.datetime, Decimal, Decimal]]] = {}
    for c in usage.capacity:
        by_type.setdefault(c.instance_type, []).append(
            (c.hour, gpu_hours(c.gpu_ms), gpu_hours(c.unavailable_gpu_ms))
        )
    p5 = by_type["ml.p5.48xlarge"]
    assert len(p5) == HOURS_IN_JULY
    # 2 instances until 01:00; i-2 in deep health checks 01:00-03:00; i-2 gone from 03:00 to the end
    assert p5[:4] == [
        (_utc("2026-07-01 00:00"), Decimal(16), Decimal(0)),
        (_utc("2026-07-01 01:00"), Decimal(16), Decimal(8)),
        (_utc("2026-07-01 02:00"), Decimal(16), Decimal(8)),
        (_utc("2026-07-01 03:00"), Decimal(8), Decimal(0)),
    ]
    assert p5[-1] == (_utc("2026-07-31 23:00"), Decimal(8), Decimal(0))
    assert sum(g for _, g, _ in p5) == 16 * 3 + 8 * (HOURS_IN_JULY - 3)
    g5 = by_type["ml.g5.12xlarge"]
    # i-3 joins cordoned at 01:00 (unschedulable for two hours), then runs to month end: 743 hours x 4 GPUs
    assert g5[0] == (_utc("2026-07-01 01:00"), Decimal(4), Decimal(4))
    assert sum(g for _, g, _ in g5) == 4 * (HOURS_IN_JULY - 1)
    assert sum(u for _, _, u in g5) == 8


def test_evictions_of_the_month_with_their_checkpoints(usage_dir: Path) -> None:
    usage, _ = run_queries(usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert usage.evictions == (
        Eviction(
            time=_utc("2026-07-10 02:00"),
            cluster=CLUSTER,
            team="a",
            instance_type="ml.p5.48xlarge",
            workload="pretrain-7",
            priority_class="training-priority",
            gpus=16,
            run_started=_utc("2026-07-09 21:00"),
            checkpoint_interval_minutes=30,
            last_checkpoint=_utc("2026-07-10 01:45"),
        ),
        Eviction(
            time=_utc("2026-07-12 09:30"),
            cluster=CLUSTER,
            team="a",
            instance_type="ml.p5.48xlarge",
            workload="sweep-3",
            priority_class="training-priority",
            gpus=16,
            run_started=_utc("2026-07-12 04:30"),
        ),
    )


def test_cur_costs_by_instance_type_and_category(usage_dir: Path, cur_file: Path) -> None:
    _, costs = run_queries(
        usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=cur_file
    )
    assert costs.instance_types == (
        InstanceTypeCost(
            instance_type="ml.g5.12xlarge", cost=Decimal("5291.646"), instance_hours=Decimal(743)
        ),
        # 34416.10 + 2015.71 over 700 + 41 instance-hours (the credit is listed apart)
        InstanceTypeCost(
            instance_type="ml.p5.48xlarge", cost=Decimal("36431.81"), instance_hours=Decimal(741)
        ),
    )
    assert costs.credits == (BillCredit(kind="credit", name="ml.p5.48xlarge", cost=Decimal("-12.34")),)
    assert costs.shared == (
        SharedCost(category="amazons3", cost=Decimal("5.00")),
        SharedCost(category="eks", cost=Decimal("74.40")),
        SharedCost(category="fsx", cost=Decimal("1200.50")),
        SharedCost(category="hyperpod-volumes", cost=Decimal("88.88")),
        SharedCost(category="nat-gateway", cost=Decimal("42.55")),
        SharedCost(category="prometheus", cost=Decimal("20.00")),
        SharedCost(category="system-nodes", cost=Decimal("142.85")),
    )
    assert costs.bill_total == BILL
    assert (
        sum(c.cost for c in costs.instance_types) + sum(c.cost for c in costs.shared + costs.credits) == BILL
    )


def test_a_month_without_cluster_lines_has_no_bill(usage_dir: Path, tmp_path: Path) -> None:
    cur = write_cur(tmp_path / "cur.parquet", _cur_lines())
    _, costs = run_queries(usage=usage_dir, month="2026-05", cluster=CLUSTER, gpus_per_instance=GPUS, cur=cur)
    assert costs.instance_types == () and costs.shared == () and costs.bill_total is None


def _utc(text: str) -> dt.datetime:
    return t(text).replace(tzinfo=dt.UTC)


def test_collection_gaps_are_the_silences_longer_than_their_threshold(usage_dir: Path) -> None:
    """A gap is a stretch without a record longer than the threshold: 15 minutes of node snapshots (three runs of
    the inventory), an hour of the operator's heartbeat; the month's start and end bound the first and last."""
    usage, _ = run_queries(usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert [(g.table, g.start, g.end) for g in usage.collection_gaps] == [
        # the heartbeat stopped for three hours on the 4th; exactly one hour on the 20th is not a gap
        ("heartdub", _utc("2026-07-04 09:55"), _utc("2026-07-04 13:00")),
        # the hand-written node snapshots: 01:00 and 03:00 only (June's 23:30 is another month)
        ("node", _utc("2026-07-01 00:00"), _utc("2026-07-01 01:00")),
        ("node", _utc("2026-07-01 01:00"), _utc("2026-07-01 03:00")),
        ("node", _utc("2026-07-01 03:00"), _utc("2026-08-01 00:00")),
    ]
    heartbeat = usage.collection_gaps[0]
    assert heartbeat.minutes == 185
    assert heartbeat.hours == tuple(_utc(f"2026-07-04 {h}:00") for h in ("09", "10", "11", "12"))
    assert usage.unchecked_collections == ()


def test_athena_string_rows_give_the_same_inputs_as_duckdb_rows(usage_dir: Path, cur_file: Path) -> None:
    usage, costs = run_queries(
        usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=cur_file
    )
    con = duckdb.connect()
    register_tables(con, usage_dir)

    def as_athena(name: str) -> queries.QueryResult:
        # Athena's GetQueryResults returns every value as a string (VarCharValue), NULL as an absent value
        result = con.execute(transpile(queries.render(name, month=MONTH, cluster=CLUSTER)))
        cols = tuple(d[0] for d in result.description)
        return queries.QueryResult(
            cols, [[None if v is None else str(v) for v in row] for row in result.fetchall()]
        )

    rows = {name: as_athena(name) for name in queries.USAGE_QUERIES}
    assert queries.usage_inputs(rows, gpus_per_instance=GPUS) == usage
    cur_rows = [
        {"kind": k, "name": n, "cost": str(c), "usage_amount": str(a)}
        for k, n, c, a in [
            ("instance-type", c.instance_type, c.cost, c.instance_hours) for c in costs.instance_types
        ]
        + [("shared", c.category, c.cost, Decimal(0)) for c in costs.shared]
        + [(c.kind, c.name, c.cost, Decimal(0)) for c in costs.credits]
        + [("total", "total", costs.bill_total, Decimal(0))]
    ]
    assert queries.cost_inputs(queries.QueryResult.of(cur_rows)) == costs


def test_the_bulk_generator_writes_the_hand_written_schema(tmp_path: Path) -> None:
    counts = generate_month(
        tmp_path,
        month="2026-02",
        cluster=CLUSTER,
        teams=3,
        instance_types=GPUS,
        nodes_per_type=4,
        snapshot_minutes=60,
    )
    assert counts == {
        "clusterqueue": 28 * 24 * 3 * 2,
        "node": 28 * 24 * 4 * 4 * 2,
        "heartdub": 28 * 24 * 12,
        "eviction": 6,
    }
    for table, schema in SCHEMAS.items():
        if table == "partition_usage":  # a month without GPU partitions has none
            continue
        first = next((tmp_path / table).rglob("*.parquet"))
        assert pq.read_schema(first).remove_metadata() == schema, table
    usage, _ = run_queries(usage=tmp_path, month="2026-02", cluster=CLUSTER, gpus_per_instance=GPUS)
    # team 0, g5 (type 0, 4 GPUs), hour 0: 2 x ((0 + 0 + 0) % 4) = 0 GPUs; hour 1: 2 x (7 % 4) = 6 GPUs, 2 borrowed
    first = [u for u in usage.usage if u.team == "team-000" and u.instance_type == "ml.g5.12xlarge"][:1]
    assert [(u.hour, gpu_hours(u.gpu_ms), gpu_hours(u.borrowed_gpu_ms)) for u in first] == [
        (_utc("2026-02-01 01:00"), Decimal(6), Decimal(2))
    ]
    assert sum(gpu_hours(c.gpu_ms) for c in usage.capacity) == 28 * 24 * 4 * (8 + 4)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"month": "2026-7"}, "month '2026-7': write it as YYYY-MM"),
        ({"cluster": "a'; DROP TABLE x; --"}, "cluster .*: must be 1-63 letters"),
        ({"tables": {"clusterqueue": "x; DROP"}}, r"tables\['clusterqueue'\]"),
        ({"tables": {"nodes": "db.node"}}, r"tables\['nodes'\]: unknown table"),
        ({"cluster_tag": "user-x"}, "cluster_tag 'user-x'"),
    ],
)
def test_render_rejects_what_would_not_be_a_literal(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"month": MONTH, "cluster": CLUSTER, **kwargs}
    with pytest.raises(queries.QueryInputError, match=message):
        queries.render("hourly_usage", **args)  # type: ignore[arg-type]


def test_render_uses_athena_table_references_and_partitions() -> None:
    sql = queries.render(
        "hourly_usage", month="2026-01", cluster=CLUSTER, tables={"clusterqueue": '"usage"."clusterqueue"'}
    )
    assert 'FROM "usage"."clusterqueue"' in sql
    # January reads December's partitions for the state carried into the month
    assert "(year = '2026' AND month = '01') OR (year = '2025' AND month = '12')" in sql
    assert "TIMESTAMP '2026-02-01 00:00:00'" in sql
    assert queries.cur_tag_column("hyperpod-tenancy:cluster") == "user_hyperpod_tenancy_cluster"


def test_row_errors_name_the_query_column_and_row() -> None:
    good = {
        "hour": "2026-07-01 00:00:00",
        "cluster": CLUSTER,
        "instance_type": "ml.p5.48xlarge",
        "team": "a",
        "gpu_ms": "1",
        "borrowed_gpu_ms": "0",
    }
    none = queries.QueryResult((), ())
    with pytest.raises(
        queries.QueryInputError, match=r"hourly_usage row 1: column 'gpu_ms' = '1.5' is not an integer"
    ):
        queries.usage_inputs(
            {
                "hourly_usage": queries.QueryResult.of([good, {**good, "gpu_ms": "1.5"}]),
                "hourly_capacity": none,
            },
            gpus_per_instance=GPUS,
        )
    with pytest.raises(queries.QueryInputError, match=r"results\['hourly_capacity'\]: missing"):
        queries.usage_inputs({"hourly_usage": none}, gpus_per_instance=GPUS)
    capacity = {
        "hour": "2026-07-01 00:00:00",
        "cluster": CLUSTER,
        "instance_type": "ml.trn1.32xlarge",
        "instance_ms": "1",
        "unavailable_instance_ms": "0",
    }
    with pytest.raises(queries.QueryInputError, match=r"'ml\.trn1\.32xlarge' has no GPU count"):
        queries.usage_inputs(
            {"hourly_usage": none, "hourly_capacity": queries.QueryResult.of([capacity])},
            gpus_per_instance=GPUS,
        )
    with pytest.raises(queries.QueryInputError, match="kind 'discount' is not"):
        queries.cost_inputs(
            queries.QueryResult.of([{"kind": "discount", "name": "x", "cost": "1", "usage_amount": "0"}])
        )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"gpu_ms": True}, r"row 2: column 'gpu_ms' = True is not an integer"),
        ({"gpu_ms": 1.5}, r"row 2: column 'gpu_ms' = 1\.5 is not an integer"),
        ({"team": None}, r"row 2: column 'team' is NULL"),
        ({"team": ""}, r"row 2: column 'team' is NULL"),
        ({"hour": "yesterday"}, r"row 2: column 'hour' = 'yesterday' is not a timestamp"),
        ({"hour": ["2026-07-01"]}, r"row 2: column 'hour' = \['2026-07-01'\] is not a timestamp"),
    ],
)
def test_a_malformed_usage_row_among_good_ones_is_named(change: dict[str, object], message: str) -> None:
    columns = ("hour", "cluster", "instance_type", "team", "gpu_ms", "borrowed_gpu_ms")
    good = ("2026-07-01 00:00:00", CLUSTER, "ml.p5.48xlarge", "a", 3_600_000, 0)
    bad = tuple(change.get(c, v) for c, v in zip(columns, good, strict=True))
    result = queries.QueryResult(columns, [good, good, bad, good])
    with pytest.raises(queries.QueryInputError, match=message):
        queries.usage_records(result)
    # DuckDB's exact types and Athena's strings read alike, in any column order
    text = queries.QueryResult(columns[::-1], [tuple(str(v) for v in good[::-1])])
    assert queries.usage_records(text) == queries.usage_records(queries.QueryResult(columns, [good]))
    with pytest.raises(queries.QueryInputError, match=r"row 0: column 'borrowed_gpu_ms' missing"):
        queries.usage_records(queries.QueryResult(columns[:-1], [good[:-1]]))


def test_missing_usage_tables_are_named(tmp_path: Path) -> None:
    with pytest.raises(OfflineInputError, match=r"no clusterqueue/ folder .*raw/clusterqueue/"):
        run_queries(usage=tmp_path, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)


def test_utc_adjusted_timestamps_read_the_same_in_any_local_zone(usage_dir: Path, tmp_path: Path) -> None:
    """A writer that marks Parquet timestamps isAdjustedToUTC gives TIMESTAMPTZ columns: still UTC on a laptop in
    Tokyo (DuckDB casts a TIMESTAMPTZ to TIMESTAMP in the session's zone, which the runner sets to UTC)."""
    aware = tmp_path / "aware"
    for source in usage_dir.rglob("*.parquet"):
        table = pq.read_table(source)
        for i, field in enumerate(table.schema):
            if pa.types.is_timestamp(field.type):
                table = table.set_column(i, field.name, table.column(i).cast(pa.timestamp("us", tz="UTC")))
        target = aware / source.relative_to(usage_dir)
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, target)
    assert "tz=UTC" in str(pq.read_schema(next(aware.rglob("*.parquet"))))
    script = (
        "import sys; from pathlib import Path; from hyperpod_tenancy.tools.chargeback.offline import run_queries\n"
        "def run(d):\n"
        f"    return run_queries(usage=Path(d), month={MONTH!r}, cluster={CLUSTER!r}, gpus_per_instance={GPUS!r})\n"
        "print(run(sys.argv[1]) == run(sys.argv[2]), len(run(sys.argv[2])[0].usage))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(usage_dir), str(aware)],
        env={**os.environ, "TZ": "Asia/Tokyo"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == ["True", "4"]


def test_the_cli_reads_the_rows_the_shared_sql_returns(usage_dir: Path) -> None:
    """The blocks the CLI reads hold exactly the rows of the shared SQL, run as Athena would run it."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    _register_usage(con, usage_dir, MONTH)
    result = con.execute(transpile(queries.render("hourly_usage", month=MONTH, cluster=CLUSTER)))
    rows = queries.QueryResult(tuple(d[0] for d in result.description or ()), result.fetchall())
    expected = queries.usage_records(rows)
    assert len(expected) > 1
    usage, _ = run_queries(usage=usage_dir, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    assert isinstance(usage.usage, UsageRecords)
    assert usage.usage == expected
