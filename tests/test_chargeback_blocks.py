"""Usage read in blocks (one per hour and instance type) is the same usage as records, for the engine and the CLI.

The offline CLI reads ``hourly_usage`` as one row per hour and instance type with the teams' values as lists
(DuckDB regroups the shared SQL's rows): a month of 10^6 and more rows reaches Python as a few thousand. Each
figure the engine computes from blocks must be the one it computes from the same records, errors included.
"""

from __future__ import annotations

import datetime as dt

import pytest

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.chargeback.model import (
    HourlyUsage,
    HourlyUsageBlock,
    UsageRecords,
)

CLUSTER = "shared-gpu"
HOUR = dt.datetime(2026, 7, 1, tzinfo=dt.UTC)


def block(*teams: tuple[str, int, int], cluster: str = CLUSTER, hour: dt.datetime = HOUR) -> HourlyUsageBlock:
    return HourlyUsageBlock(
        hour=hour,
        cluster=cluster,
        instance_type="ml.p5.48xlarge",
        teams=[t for t, _, _ in teams],
        gpu_ms=[g for _, g, _ in teams],
        borrowed_gpu_ms=[b for _, _, b in teams],
    )


# ---------------------------------------------------------------------------------------------- the sequence
def test_blocks_are_a_sequence_of_the_same_records() -> None:
    records = UsageRecords(
        [block(("a", 10, 0), ("b", 20, 5)), block(("a", 30, 0), hour=HOUR.replace(hour=1))]
    )
    expected = (
        HourlyUsage(
            hour=HOUR, cluster=CLUSTER, instance_type="ml.p5.48xlarge", team="a", gpu_ms=10, borrowed_gpu_ms=0
        ),
        HourlyUsage(
            hour=HOUR, cluster=CLUSTER, instance_type="ml.p5.48xlarge", team="b", gpu_ms=20, borrowed_gpu_ms=5
        ),
        HourlyUsage(
            hour=HOUR.replace(hour=1),
            cluster=CLUSTER,
            instance_type="ml.p5.48xlarge",
            team="a",
            gpu_ms=30,
            borrowed_gpu_ms=0,
        ),
    )
    assert len(records) == 3
    assert records == expected
    assert expected == tuple(records)
    assert records != expected[:2]
    assert records[-1] == expected[2]
    assert records[1] == expected[1]
    assert records[1:] == expected[1:]
    assert records == UsageRecords(
        [block(("a", 10, 0), ("b", 20, 5)), block(("a", 30, 0), hour=HOUR.replace(hour=1))]
    )
    with pytest.raises(IndexError):
        records[3]
    assert repr(records) == "UsageRecords(3 records in 2 blocks)"


def test_a_block_whose_columns_differ_in_length_is_refused() -> None:
    bad = HourlyUsageBlock(
        hour=HOUR,
        cluster=CLUSTER,
        instance_type="ml.p5.48xlarge",
        teams=["a", "b"],
        gpu_ms=[1],
        borrowed_gpu_ms=[0, 0],
    )
    with pytest.raises(ValueError, match="differ in length"):
        UsageRecords([bad])


# ---------------------------------------------------------------------------------------------- reading them
COLUMNS = queries.USAGE_BLOCK_COLUMNS


def test_block_rows_are_read_and_checked() -> None:
    row = ("2026-07-01 00:00:00", CLUSTER, "ml.p5.48xlarge", ["a", "b"], [10, 20], [0, 5])
    records = queries.usage_blocks(queries.QueryResult(COLUMNS, [row]))
    assert records == UsageRecords([block(("a", 10, 0), ("b", 20, 5))])
    with pytest.raises(queries.QueryInputError, match="no column 'teams'"):
        queries.usage_blocks(
            queries.QueryResult(tuple(c for c in COLUMNS if c != "teams"), [row[:3] + row[4:]])
        )
    with pytest.raises(queries.QueryInputError, match="hour 'yesterday' is not a timestamp"):
        queries.usage_blocks(queries.QueryResult(COLUMNS, [("yesterday", *row[1:])]))
    for bad in (
        (*row[:3], ["a", ""], *row[4:]),
        (*row[:3], ["a", 7], *row[4:]),
        (*row[:3], "a,b", *row[4:]),
        (row[0], "", *row[2:]),
    ):
        with pytest.raises(queries.QueryInputError, match="must be non-empty text and the values lists"):
            queries.usage_blocks(queries.QueryResult(COLUMNS, [bad]))
    with pytest.raises(queries.QueryInputError, match="differ in length"):
        queries.usage_blocks(queries.QueryResult(COLUMNS, [(*row[:4], [10], row[5])]))
