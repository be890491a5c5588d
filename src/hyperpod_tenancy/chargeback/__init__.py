"""Chargeback: per-team GPU-hours and cost under an explicit billing rule, reconciled with the bill.

Pure Python with relative imports only and no dependency outside the standard library, so the same modules
run in the monthly Lambda (copied into its asset), in the offline CLI and in the tests:

* :mod:`.model` — the engine's inputs (hourly usage and capacity, evictions, prices and costs) and
  outputs (the report), and the chargeback configuration the policy model is translated into;
* :mod:`.engine` — the billing rules (``reservation``, ``usage``), lender credit, idle owner, shared costs,
  preemption loss and reconciliation;
* :mod:`.report` — JSON, CSV, Markdown and HTML renderings (byte-identical wherever they are produced);
* :mod:`.queries` — the Trino SQL (``sql/*.sql``) that aggregates the collector's snapshots into the engine's
  inputs, and the row-to-input conversion shared by Athena (Lambda) and DuckDB (CLI) results.

The DuckDB/sqlglot runner of the offline CLI lives outside this package (``hyperpod_tenancy.tools.chargeback.offline``)
because the Lambda has neither.
"""
