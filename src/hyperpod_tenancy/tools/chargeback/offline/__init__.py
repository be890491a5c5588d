"""The offline chargeback: the Athena SQL transpiled to DuckDB (sqlglot) over local Parquet or CSV files.

``hyperpod-tenancy chargeback`` runs the same Trino SQL as the monthly Lambda (:data:`.chargeback.queries.SQL`),
transpiled with sqlglot and executed by an in-process DuckDB over a copy of the collector's files (for
example ``aws s3 sync s3://<report-bucket>/raw ./usage``) and a CUR 2.0 export file, then applies the same
engine and renderers, so a report computed on a laptop equals the Lambda's for the same month.

Inputs (formats in :mod:`.chargeback.queries`):

* ``usage``: a folder holding ``clusterqueue/``, ``node/`` and optionally ``eviction/``, ``heartdub/`` and
  ``partition_usage/`` (the GPU partitions held, on a cluster that has them) (directly or under
  ``raw/``), each of Parquet (``*.parquet``), CSV (``*.csv``, ``*.csv.gz``) or JSON-lines (``*.json``,
  ``*.jsonl``, optionally gzipped) files, Hive-partitioned ``year=/month=/day=/hour=/cluster=`` as the
  collectors write them: ``aws s3 sync s3://<report-bucket>/raw ./usage`` gives the operator's Parquet
  ``clusterqueue/`` beside the platform collectors' JSON-lines ``node/`` and ``eviction/``;
* ``cur``: one CUR 2.0 file or folder (Parquet or CSV). In CSV, ``resource_tags`` is the JSON object the
  export writes, or flattened ``resource_tags_<key>`` columns; ``billing_period`` may instead be derived
  from ``bill_billing_period_start_date``;
* ``prices``: without a CUR, a CSV of ``instance_type,usd_per_gpu_hour``.

This module is the CLI's: it needs duckdb, sqlglot and rich, which the Lambda does not have.
"""

from __future__ import annotations

from hyperpod_tenancy.tools.chargeback.offline.run import (
    DEFAULT_MEMORY_LIMIT,
    checked_memory_limit,
    compute,
    read_prices,
    run_queries,
)
from hyperpod_tenancy.tools.chargeback.offline.tables import (
    PROGRESS_THRESHOLD_BYTES,
    OfflineInputError,
    transpile,
)

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "PROGRESS_THRESHOLD_BYTES",
    "OfflineInputError",
    "checked_memory_limit",
    "compute",
    "read_prices",
    "run_queries",
    "transpile",
]
