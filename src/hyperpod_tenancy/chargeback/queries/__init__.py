"""The monthly aggregation SQL (Trino dialect) and the conversion of its result rows into engine inputs.

The same SQL runs on Athena in the monthly Lambda and, transpiled by sqlglot, on DuckDB in the offline CLI
(:mod:`hyperpod_tenancy.tools.chargeback.offline`). Both hand each query's result to :func:`usage_inputs` and
:func:`cost_inputs` as a :class:`QueryResult` (the column names, and the rows' values in that order, as both
engines return them); values may be strings (Athena's ``GetQueryResults``) or Python numbers, decimals and
strings (DuckDB), and ``None`` or ``""`` for NULL. The SQL
formats every timestamp as ``YYYY-MM-DD HH:MM:SS`` (UTC; an eviction's or a gap's time with its fraction of a
second, ``HH:MM:SS.ffffff``: the collectors' times carry fractions and every second counts once) and every money
value as ``DECIMAL(38, 10)``, so
both engines yield the same inputs, digit for digit.

Collector schema, version 1 (:data:`COLLECTOR_SCHEMA_VERSION`)
----------------------------------------------------------------
Date-partitioned Parquet under ``raw/<table>/year=YYYY/month=MM/day=DD/hour=HH/cluster=<name>/`` (partition
values are strings, zero-padded). Timestamps are UTC.

``clusterqueue`` (written by the ``awslabs/sagemaker-hyperpod-usage-report`` operator, unchanged): one row
per ClusterQueue, instance type and snapshot — ``instance_type`` string, ``timestamp`` timestamp,
``namespace`` string (``hyperpod-ns-<team>``), ``resource_version`` string (an integer), ``team`` string,
``gpu_total``, ``gpu_borrowed``, ``cpu_total``, ``cpu_borrowed``, ``neuron_core_total``,
``neuron_core_borrowed`` double. ``gpu_total`` is what the queue's admitted workloads hold, ``gpu_borrowed``
the part over its nominal quota. The operator writes a snapshot when a queue changes, so a quiet queue has
none for hours; its liveness is ``heartdub``. The operator's ``workload`` and ``pod`` tables are not read.

``heartdub`` (the operator's heartbeat, unchanged; ``raw/heartdub/year=/month=/day=/hour=/``, no ``cluster``
partition): ``timestamp`` timestamp, ``cluster`` string. AWS's own report generator counts a clock hour with no
heartbeat as missing collection (``report_generation/.../report_generator.py`` ``_find_missing_period`` at
awslabs/sagemaker-hyperpod-usage-report@e71f39ae); the period between heartbeats is not published.

``node`` (ours; SageMaker ``ListClusterNodes``, one snapshot of the whole cluster at a time, every row of a
snapshot with the same ``timestamp``): ``timestamp`` timestamp, ``cluster`` string, ``instance_group``
string, ``instance_type`` string (``ml.p5.48xlarge``), ``instance_id`` string, ``status`` string (the
SageMaker instance status: ``Running``, ``Pending``, ``ShuttingDown``, ``SystemUpdating``,
``DeepHealthCheckInProgress``, ``Failure``), ``schedulable`` boolean. The platform's inventory collector
writes ``schedulable`` true when the status is ``Running`` and the instance's Kubernetes node is Ready, not
cordoned and healthy by HyperPod's ``sagemaker.amazonaws.com/node-health-status`` label
(:func:`hyperpod_tenancy.runtime.node_inventory.schedulable`). An instance counts as unavailable when its status
is not ``Running`` or it is not schedulable.

``eviction`` (ours; one row per workload run evicted by preemption): ``timestamp`` timestamp, ``cluster``
string, ``namespace`` string, ``workload`` string, ``priority_class`` string (``<class>-priority``),
``instance_type`` string, ``gpus`` bigint, ``admitted_at`` timestamp, ``checkpoint_interval_minutes`` bigint
(NULL where the workload declared none), ``last_checkpoint`` timestamp (NULL where not collected).

``partition_usage`` (ours; the eviction collector, every 5 minutes, from the teams' ClusterQueues: every row of
a run with the run's ``timestamp``): ``schema_version`` int, ``timestamp`` timestamp, ``cluster`` string,
``namespace`` string, ``instance_type`` string (the flavor), ``profile`` string (``mig-1g.10gb``), ``slices``
int (compute slices of one partition of the profile, of a GPU's 7), ``total`` and ``borrowed`` bigint (partitions
the queue's admitted workloads hold, and the part over its nominal quota). A row for each queue, flavor and
partition resource the queue is guaranteed (nominal quota above 0) or holds; a run's rows hold until the next
run's (:mod:`hyperpod_tenancy.runtime.eviction_collector.partitions`).

A team is the namespace without its ``hyperpod-ns-`` prefix (the ``team`` column where the namespace has
no such prefix).

CUR 2.0 (the Data Export ``COST_AND_USAGE_REPORT``; partitioned by ``billing_period`` = ``YYYY-MM``): the
columns read are ``billing_period``, ``line_item_product_code``, ``line_item_usage_type``,
``line_item_usage_amount``, ``line_item_unblended_cost`` and ``resource_tags`` (a map). A line is the
cluster's when its cluster cost allocation tag (:data:`CLUSTER_TAG_KEY`, CUR key :data:`CUR_CLUSTER_TAG`)
names the cluster. HyperPod instances are the lines of product ``AmazonSageMaker`` with usage type
``<region>-Cluster:ml.<type>``; every other line of the cluster is a shared cost.
"""

from __future__ import annotations

from hyperpod_tenancy.chargeback.queries.rows import (
    USAGE_BLOCK_COLUMNS,
    cost_inputs,
    gpu_ms_of_slices,
    usage_blocks,
    usage_inputs,
    usage_records,
    with_partition_usage,
)
from hyperpod_tenancy.chargeback.queries.sql import (
    CLUSTER_TAG_KEY,
    COLLECTOR_COLUMNS,
    COLLECTOR_SCHEMA_VERSION,
    COST_QUERIES,
    CUR_CLUSTER_TAG,
    CUR_TEAM_TAG,
    GAP_THRESHOLD_MINUTES,
    SQL,
    TABLES,
    TEAM_TAG_KEY,
    USAGE_QUERIES,
    QueryInputError,
    QueryResult,
    cur_tag_column,
    gc_paused,
    month_bounds,
    render,
)

__all__ = [
    "CLUSTER_TAG_KEY",
    "COLLECTOR_COLUMNS",
    "COLLECTOR_SCHEMA_VERSION",
    "COST_QUERIES",
    "CUR_CLUSTER_TAG",
    "CUR_TEAM_TAG",
    "GAP_THRESHOLD_MINUTES",
    "SQL",
    "TABLES",
    "TEAM_TAG_KEY",
    "USAGE_BLOCK_COLUMNS",
    "USAGE_QUERIES",
    "QueryInputError",
    "QueryResult",
    "cost_inputs",
    "cur_tag_column",
    "gc_paused",
    "gpu_ms_of_slices",
    "month_bounds",
    "render",
    "usage_blocks",
    "usage_inputs",
    "usage_records",
    "with_partition_usage",
]
