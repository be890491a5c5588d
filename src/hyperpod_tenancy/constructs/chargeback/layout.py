"""The chargeback pipeline's layout: its bucket prefixes, tables, metrics, collectors' names and Lambda assets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hyperpod_tenancy.chargeback as chargeback_package
import hyperpod_tenancy.runtime as runtime_package
from hyperpod_tenancy.chargeback import model, queries
from hyperpod_tenancy.constructs._private.lambda_assets import lambda_asset_files

__all__ = [
    "COLLECTION_ALARMS",
    "COST_ALLOCATION_TAG_KEYS",
    "DATA_EXPORTS_NATIVE_REGIONS",
    "EVICTION_COLLECTOR_GROUP",
    "EVICTION_COLLECTOR_HANDLER",
    "EVICTION_COLLECTOR_ROLE",
    "METRIC_NAMESPACE",
    "MONTHLY_METRICS",
    "NODE_INVENTORY_GROUP",
    "NODE_INVENTORY_HANDLER",
    "NODE_INVENTORY_ROLE",
    "OPERATOR_NAMESPACE",
    "OPERATOR_RBAC",
    "OPERATOR_SERVICE_ACCOUNT",
    "TEAM_COST_CENTER_TAG",
    "TEAM_TAG",
    "UsageReportChart",
    "eviction_collector_asset_files",
    "job_asset_files",
]

#: The monthly job's per-team metrics (``hyperpod_tenancy.runtime.chargeback_job.METRICS``).
MONTHLY_METRICS = ("GpuHoursUsed", "GpuHoursBorrowed", "GpuHoursLent", "GpuHoursLostToPreemption")
#: Regions where ``AWS::BCMDataExports::Export`` deploys natively (research/chargeback.md section 0.7, from
#: AWS's CID template ``RegionSupportsDataExportsViaCFN``).
DATA_EXPORTS_NATIVE_REGIONS = ("us-east-1", "cn-northwest-1", "us-iso-east-1", "us-iso-west-1")
#: CloudWatch namespace of the per-team chargeback metrics.
METRIC_NAMESPACE = "HyperPodTenancy/Chargeback"
#: Tag of every team resource: the team's name.
TEAM_TAG = queries.TEAM_TAG_KEY
#: Tag of every team resource: the team's cost center.
TEAM_COST_CENTER_TAG = "hyperpod-tenancy:cost-center"
#: Tag keys activated for cost allocation (``ce:UpdateCostAllocationTagsStatus``).
COST_ALLOCATION_TAG_KEYS = (queries.CLUSTER_TAG_KEY, TEAM_TAG, TEAM_COST_CENTER_TAG)
#: Namespace and service account of the usage-report operator (its chart's defaults; the release is named
#: after the namespace, as the operator's README installs it).
OPERATOR_NAMESPACE = "hyperpod-usage-report"
OPERATOR_SERVICE_ACCOUNT = "hyperpod-usage-report"
#: Kubernetes verbs of the operator's own ClusterRole (chart ``templates/rbac.yaml`` at
#: awslabs/sagemaker-hyperpod-usage-report@e71f39ae): read-only on what it snapshots; leases and events are its
#: leader election and event recorder.
OPERATOR_RBAC = {
    "kueue.x-k8s.io/clusterqueues,workloads": ("get", "list", "watch"),
    "namespaces,pods": ("get", "list", "watch"),
    "nodes": ("get",),
    "apiextensions.k8s.io/customresourcedefinitions": ("get",),
    "coordination.k8s.io/leases": ("create", "get", "list", "update", "watch"),
    "events": ("create", "patch"),
}
_RAW = "raw/"
_REPORTS = "reports/"
_CUR = "cur/"
_RESULTS = "athena-results/"
_PARQUET = {
    "input_format": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
    "output_format": "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
    "serde": "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe",
}
_JSON = {
    "input_format": "org.apache.hadoop.mapred.TextInputFormat",
    "output_format": "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat",
    "serde": "org.openx.data.jsonserde.JsonSerDe",
}
#: Tables the operator writes (Parquet) and the ones this construct's collectors write (JSON lines).
_OPERATOR_TABLES = ("clusterqueue", "workload", "pod", "heartdub")
_OWN_TABLES = ("node", "eviction", "partition_usage")
#: The operator's heartbeat: partitioned by the hour only, ``cluster`` a column (its CloudFormation template,
#: cloudformation/usage-report.yaml ``HeartdubTable`` at awslabs/sagemaker-hyperpod-usage-report@e71f39ae).
_HEARTBEAT = "heartdub"
#: Collector → (its table, the S3 request-metrics filter of what it writes). A collector that writes nothing for
#: longer than its table's gap threshold (``queries.GAP_THRESHOLD_MINUTES``) raises an alarm.
COLLECTION_ALARMS = {
    "node-inventory": ("node", "raw-node"),
    "usage-report-operator": (_HEARTBEAT, "raw-heartdub"),
}
#: CUR 2.0 columns the chargeback reads, plus the ones that identify a line (research/chargeback.md 1.3).
_CUR_COLUMNS = (
    ("bill_billing_period_start_date", "timestamp"),
    ("line_item_usage_start_date", "timestamp"),
    ("line_item_usage_end_date", "timestamp"),
    ("line_item_usage_account_id", "string"),
    ("line_item_line_item_type", "string"),
    ("line_item_product_code", "string"),
    ("line_item_usage_type", "string"),
    ("line_item_operation", "string"),
    ("line_item_resource_id", "string"),
    ("line_item_usage_amount", "double"),
    ("line_item_unblended_cost", "double"),
    ("line_item_net_unblended_cost", "double"),
    ("pricing_public_on_demand_cost", "double"),
    ("savings_plan_savings_plan_effective_cost", "double"),
    ("reservation_effective_cost", "double"),
    ("product_instance_type", "string"),
    ("resource_tags", "map<string,string>"),
)
_CUR_QUERY = "SELECT {columns} FROM COST_AND_USAGE_REPORT".format(  # noqa: S608 - fixed column names
    columns=", ".join(name for name, _ in _CUR_COLUMNS)
)
#: Kubernetes group of the eviction collector's access entry, bound to :data:`EVICTION_COLLECTOR_ROLE` only.
EVICTION_COLLECTOR_GROUP = "hyperpod-tenancy:eviction-collector"
#: Read-only ClusterRole of the eviction collector: ``get`` and ``list`` on Kueue Workloads, nothing else.
EVICTION_COLLECTOR_ROLE = "hyperpod-tenancy-eviction-collector"
#: Kubernetes group of the node inventory's access entry, bound to :data:`NODE_INVENTORY_ROLE` only.
NODE_INVENTORY_GROUP = "hyperpod-tenancy:node-inventory"
#: Read-only ClusterRole of the node inventory: ``get`` and ``list`` on Nodes (Ready, cordoned, HyperPod's health).
NODE_INVENTORY_ROLE = "hyperpod-tenancy-node-inventory"


@dataclass(frozen=True, kw_only=True)
class UsageReportChart:
    """Where the usage-report operator's Helm chart is mirrored (it is published only in its GitHub repository).

    Give exactly one: ``oci_repository`` (``oci://<account>.dkr.ecr.<region>.amazonaws.com/<path>/sagemaker-hyperpod-usage-report``
    after ``helm package helm_chart/SageMakerHyperPodUsageReportChart`` and ``helm push``), or ``directory`` (a
    vendored copy of ``helm_chart/SageMakerHyperPodUsageReportChart``, uploaded as an asset).
    """

    oci_repository: str | None = None
    #: Chart version (``Chart.yaml`` says ``0.1.0`` at e71f39ae).
    version: str = "0.1.0"
    directory: str | None = None


#: Handler of the eviction collector, in its asset (:func:`.lambda_asset_files`).
EVICTION_COLLECTOR_HANDLER = "hyperpod_tenancy.runtime.eviction_collector.handler"
#: Handler of the node inventory, in its asset (:func:`.lambda_asset_files`).
NODE_INVENTORY_HANDLER = "hyperpod_tenancy.runtime.node_inventory.handler"


def _package_files(package: Any, under: str, patterns: Sequence[str]) -> dict[str, bytes]:
    folder = Path(package.__file__).parent
    found: dict[str, bytes] = {}
    for pattern in patterns:
        for path in sorted(folder.rglob(pattern)):
            if "__pycache__" not in path.parts:
                found[f"{under}/{path.relative_to(folder).as_posix()}"] = path.read_bytes()
    return found


def eviction_collector_asset_files() -> dict[str, bytes]:
    """Files of the eviction collector's asset: the handler, what it imports, and the stdlib chargeback engine."""
    return lambda_asset_files("The eviction collector", EVICTION_COLLECTOR_HANDLER.rpartition(".")[0])


def job_asset_files(config: model.ChargebackConfig) -> dict[str, bytes]:
    """Files of the monthly job's asset: the handler, the stdlib chargeback package and the configuration.

    The package keeps its import path (``hyperpod_tenancy.chargeback``) under a stub ``hyperpod_tenancy``
    package, so the handler imports it exactly as it does in the repository.
    """
    runtime = Path(runtime_package.__file__).parent
    return {
        "hyperpod_tenancy/__init__.py": b'"""The chargeback engine and the monthly job (Lambda asset)."""\n',
        "hyperpod_tenancy/runtime/__init__.py": (runtime / "__init__.py").read_bytes(),
        "hyperpod_tenancy/runtime/chargeback_job.py": (runtime / "chargeback_job.py").read_bytes(),
        **_package_files(chargeback_package, "hyperpod_tenancy/chargeback", ("*.py", "*.sql")),
        "chargeback_config.json": model.config_to_json(config).encode(),
    }
