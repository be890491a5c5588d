"""``ChargebackPipeline``: every GPU-hour and dollar per team, from collection to a monthly report and alerts.

Collection builds on AWS's ``awslabs/sagemaker-hyperpod-usage-report`` operator (Kueue ClusterQueue, Workload
and Pod snapshots as Parquet under ``raw/``) and adds what it lacks: a node inventory every 5 minutes (capacity,
so that idle and recovering capacity has an owner) and the eviction table. Storage and query are one report
bucket, a Glue database with partition-projected tables and an Athena workgroup; the monthly job runs the
chargeback SQL there, applies the engine and writes JSON, CSV and HTML reports. A Prometheus alerting rule on
Kueue's eviction counter alerts on preemption loss the same day, not at month end; beside it, each team's work
waiting too long (:func:`waiting_rule`), and cluster-wide Kueue admission stalled, more unavailable nodes of a
type than it reserves and the POSIX identity webhook's errors, latency and replicas (:func:`cluster_rules`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_athena as athena
from aws_cdk import aws_bcmdataexports as bcm
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_sns as sns
from aws_cdk import custom_resources as cr
from constructs import Construct

import hyperpod_tenancy.chargeback as chargeback_package
import hyperpod_tenancy.runtime as runtime_package
from hyperpod_tenancy.chargeback import model, queries
from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_cdk_handlers,
    acknowledge_role,
    skip_checkov,
    warn,
)
from hyperpod_tenancy.constructs._private.cluster_reader import grant_cluster_reads
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs._private.lambda_assets import lambda_asset_files
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs.backends import checked_policy
from hyperpod_tenancy.constructs.encryption import encrypt_platform_resources
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.posix_identity_webhook import PosixIdentityWebhook
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.alert_rules import (
    CLUSTER_RULES_SUFFIX,
    cluster_rules,
)
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.chargeback import gpus_per_instance, max_checkpoint_minutes, team_configs

__all__ = [
    "COLLECTION_ALARMS",
    "COST_ALLOCATION_TAG_KEYS",
    "DATA_EXPORTS_NATIVE_REGIONS",
    "METRIC_NAMESPACE",
    "MONTHLY_METRICS",
    "TEAM_COST_CENTER_TAG",
    "TEAM_TAG",
    "ChargebackPipeline",
    "UsageReportChart",
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
_OWN_TABLES = ("node", "eviction")
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


def _asset_directory(kind: str, files: Mapping[str, bytes]) -> str:
    """Return a directory holding exactly ``files`` (relative path → bytes), named by their content hash.

    Building the same files twice gives the same directory and the same asset hash, wherever it is built.
    """
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode() + b"\0" + files[path] + b"\0")
    root = Path(tempfile.gettempdir()) / "hyperpod-tenancy-assets" / f"{kind}-{digest.hexdigest()[:32]}"
    if not root.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=f"{kind}-", dir=root.parent if root.parent.is_dir() else None))
        for path, content in sorted(files.items()):
            target = staging / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        root.parent.mkdir(parents=True, exist_ok=True)
        try:
            staging.rename(root)
        except OSError:  # built concurrently by another process: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
    return str(root)


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


def webhook_timeout_seconds(cluster: IHyperPodCluster) -> int:
    """Return the ``timeoutSeconds`` of the cluster's POSIX identity webhook.

    The construct's (:attr:`PosixIdentityWebhook.timeout_seconds`) when the cluster was created in this app, else
    the policy's ``cluster.posixIdentity.timeoutSeconds`` (what the construct deploys by default).
    """
    webhook = getattr(cluster, "posix_identity", None)
    if isinstance(webhook, PosixIdentityWebhook):
        return webhook.timeout_seconds
    return cluster.platform.cluster.posix_identity.timeout_seconds


class ChargebackPipeline(Construct):
    """The chargeback of a shared HyperPod cluster: collection, storage, the monthly report and alerts.

    Creates: a report bucket (retained, SSE-S3, TLS-only, versioned, access-logged to its own log bucket;
    ``raw/`` expires after ``raw_retention``, Athena results after 30 days, reports are kept); the usage-report
    operator (mirrored Helm chart, namespace ``hyperpod-usage-report``, an EKS Pod Identity role that may only
    ``s3:PutObject`` under ``raw/``); a node-inventory Lambda every 5 minutes (``sagemaker:ListClusterNodes`` →
    ``raw/node/``); a Glue database with partition-projected tables (the operator's ``clusterqueue``,
    ``workload``, ``pod`` and its heartbeat ``heartdub``; ``node``, ``eviction``; the CUR 2.0 export ``cur``);
    an alarm per collector that fires when it stops writing for longer than its gap threshold
    (:attr:`collection_alarms`); the CUR 2.0 Data Export where the
    region supports ``AWS::BCMDataExports::Export`` natively (a warning ``HPT-CHARGEBACK-DATA-EXPORT`` elsewhere);
    an Athena workgroup (results in the bucket, encrypted, a bytes-scanned cutoff per query); the monthly job
    (schedule on the 1st, any past month with ``{"month": "YYYY-MM"}``; a daily run keeps the month's roster of
    teams), which bills the team records under :attr:`team_records_path`; an SNS topic (KMS-encrypted,
    TLS-only); the platform's CloudWatch dashboard (search expressions over every team); the routing of the
    cluster workspace's alerts to the topic, with the cluster-wide alert rules (:func:`cluster_rules`, rule groups
    namespace ``<cluster>-chargeback.cluster``); and a custom resource activating the cost allocation tags
    :data:`COST_ALLOCATION_TAG_KEYS`. Nothing here lists a team: each team's record, dashboard and same-day
    preemption alert are created in the team's stack
    (:class:`~hyperpod_tenancy.constructs.team_chargeback.TeamChargeback`, ``TeamStack.add_chargeback``).

    Args:
        scope: parent construct.
        id: construct ID.
        cluster: the shared cluster (created in this app or imported).
        billing_rule: who pays for guaranteed capacity; no default, the rule is a decision the cost-center
            owners sign.
        idle_owner: the cost center that pays for capacity no quota covers, or ``"shared"`` (split by guarantee);
            no default.
        effective_from: first day the rule and idle owner apply. Default: 2000-01-01 (always).
        earlier_terms: the terms in force before ``effective_from`` (a policy change applies from its date, so
            re-running a past month uses the rule then in force). Default: none.
        shared_costs: how the cluster's non-GPU lines are split. Default: to the idle owner.
        signed_off_by: who signed the term off (the cost-center owners, or the record of their sign-off); every
            report names it. Default: not recorded (the policy requires it: ``HPT-CHARGEBACK-SIGN-OFF``).
        mid_quarter_reason: why ``effective_from`` is not the first day of a quarter; required when it is not.
        cost_centers: team → cost center. Default: each team's ``costCenter`` in the policy, else its name.
        prices: fallback $/GPU-hour per instance type, where the CUR has no cluster line. Default: none.
        tolerance: relative bill mismatch above which a report is flagged. Default: 0.005 (0.5 %).
        unknown_teams: a namespace with usage that is no team of the cluster fails the month's reconciliation
            (``FAIL``: the report's header and the monthly message say so) or is billed under its own name
            (``BILL``). Default: ``FAIL``.
        usage_report_chart: where the operator's chart is mirrored. Default: the operator is not installed (a
            warning ``HPT-CHARGEBACK-OPERATOR`` says so; install it yourself, writing to this bucket's ``raw/``).
        alert_workspace: the Amazon Managed Prometheus workspace that receives Kueue's metrics. Default: the
            cluster's ``observability_workspace`` when it has one; without a workspace there is no same-day alert
            (warning ``HPT-CHARGEBACK-ALERT``).
        preemption_alarm_gpu_hours_per_day: per-team threshold of the same-day alert. Default: 24.
        pending_alarm_minutes: per-team threshold of the waiting alert (:func:`waiting_rule`). Default: 60.
        bytes_scanned_cutoff: Athena's per-query limit in bytes. Default: 100 GiB.
        raw_retention: how long collected snapshots are kept. Default: 400 days (a year plus re-runs).
        data_export: create the CUR 2.0 Data Export. Default: where the region supports it natively.
        activate_cost_allocation_tags: run ``ce:UpdateCostAllocationTagsStatus`` at deploy. It must run in the
            management (payer) account and fails softly until the keys appear on billed usage. Default: True.

    Attributes:
        bucket, access_logs_bucket, database, tables, workgroup, topic, job, node_inventory, eviction_collector,
        platform_dashboard, data_export, config: the created resources.
        alert_workspace, preemption_alarm_gpu_hours_per_day, pending_alarm_minutes: what the teams' alert rules
            use.
        cluster_rule_group: the cluster-wide alerts (:func:`cluster_rules`; ``None`` without a workspace).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        billing_rule: model.BillingRule,
        idle_owner: str,
        effective_from: dt.date = dt.date(2000, 1, 1),
        earlier_terms: Sequence[model.BillingTerm] = (),
        shared_costs: model.SharedCostRule = model.SharedCostRule.IDLE_OWNER,
        signed_off_by: str = "",
        mid_quarter_reason: str = "",
        cost_centers: Mapping[str, str] | None = None,
        prices: Mapping[str, Decimal] | None = None,
        tolerance: Decimal = Decimal("0.005"),
        unknown_teams: model.UnknownTeams = model.UnknownTeams.FAIL,
        usage_report_chart: UsageReportChart | None = None,
        alert_workspace: aps.CfnWorkspace | None = None,
        preemption_alarm_gpu_hours_per_day: float = 24,
        pending_alarm_minutes: float = 60,
        bytes_scanned_cutoff: int = 100 * 1024**3,
        raw_retention: cdk.Duration | None = None,
        data_export: bool | None = None,
        activate_cost_allocation_tags: bool = True,
    ) -> None:
        super().__init__(scope, id)
        self.cluster = cluster
        platform = checked_policy(cluster.platform, where=self.node.path)
        self._name = platform.cluster.name
        encrypt_platform_resources(self, cluster.platform_key)
        stack = cdk.Stack.of(self)
        #: The engine's configuration (also shipped in the monthly job's asset).
        self.config: model.ChargebackConfig = self._config(
            billing_rule=billing_rule,
            idle_owner=idle_owner,
            effective_from=effective_from,
            earlier_terms=earlier_terms,
            shared_costs=shared_costs,
            signed_off_by=signed_off_by,
            mid_quarter_reason=mid_quarter_reason,
            cost_centers=cost_centers or {},
            prices=prices or {},
            tolerance=tolerance,
            unknown_teams=unknown_teams,
        )
        if preemption_alarm_gpu_hours_per_day <= 0:
            raise TenancyError(
                f"{self.node.path}: preemption_alarm_gpu_hours_per_day is {preemption_alarm_gpu_hours_per_day}; "
                "give a positive number of GPU-hours per team per day."
            )
        if pending_alarm_minutes <= 0:
            raise TenancyError(
                f"{self.node.path}: pending_alarm_minutes is {pending_alarm_minutes}; give a positive number of "
                "minutes a team's work may wait for admission."
            )
        if bytes_scanned_cutoff < 10 * 1024**2:
            raise TenancyError(
                f"{self.node.path}: bytes_scanned_cutoff is {bytes_scanned_cutoff}; Athena's minimum is 10 MiB "
                "(10485760)."
            )
        self.access_logs_bucket, self.bucket = self._create_buckets(raw_retention or cdk.Duration.days(400))
        self.database, self.tables = self._create_catalog()
        self.workgroup = self._create_workgroup(bytes_scanned_cutoff)
        native = stack.region in DATA_EXPORTS_NATIVE_REGIONS
        #: The CUR 2.0 export (``None`` where it is not created).
        self.data_export: bcm.CfnExport | None = None
        if data_export if data_export is not None else native:
            self.data_export = self._create_data_export()
        if not native:
            warn(
                self,
                "HPT-CHARGEBACK-DATA-EXPORT",
                f"AWS::BCMDataExports::Export deploys natively only in {', '.join(DATA_EXPORTS_NATIVE_REGIONS)}, "
                f"not {stack.region}: create the CUR 2.0 export from us-east-1 (a stack there, the console, or "
                f"`aws bcm-data-exports create-export --region us-east-1`) with S3 destination "
                f"s3://<report bucket>/{_CUR} and PARQUET output, as AWS's CID data-exports template does with its "
                "Lambda custom resource; the Glue table `cur` reads it from there",
            )
        self.topic = self._create_topic()
        self.node_inventory = self._create_node_inventory()
        self.eviction_collector = self._create_eviction_collector()
        self.job = self._create_job()
        #: Collector → the alarm raised when it stops writing (:data:`COLLECTION_ALARMS`, and the eviction
        #: collector's successful runs), each notifying :attr:`topic`.
        self.collection_alarms = self._create_collection_alarms()
        self.platform_dashboard = self._create_dashboards()
        workspace = alert_workspace or getattr(cluster, "observability_workspace", None)
        #: Per-team threshold of the same-day preemption alert (each team's rule is in its own stack).
        self.preemption_alarm_gpu_hours_per_day = preemption_alarm_gpu_hours_per_day
        #: Per-team threshold of the waiting alert, in minutes (each team's rule is in its own stack).
        self.pending_alarm_minutes = pending_alarm_minutes
        #: The cluster-wide alerts: admission stalled, nodes unavailable per instance type (``None``: no alert).
        self.cluster_rule_group: aps.CfnRuleGroupsNamespace | None = None
        #: The workspace whose alerts are routed to the topic, where the teams' rules go (``None``: no alert).
        self.alert_workspace: aps.CfnWorkspace | None = None
        if isinstance(workspace, aps.CfnWorkspace):
            self.alert_workspace = workspace
            self._route_alerts(workspace)
            self._write_checkpoint_series(workspace)
            reserved: dict[str, int] = {}
            for group in platform.cluster.instance_groups:
                reserved[group.instance_type] = reserved.get(group.instance_type, 0) + group.reserved
            self.cluster_rule_group = aps.CfnRuleGroupsNamespace(
                self,
                "ClusterAlertRules",
                name=names.chargeback(self._name) + CLUSTER_RULES_SUFFIX,
                workspace=workspace.attr_arn,
                data=cluster_rules(
                    self._name, reserved, webhook_timeout_seconds=webhook_timeout_seconds(cluster)
                ),
            )
        else:
            warn(
                self,
                "HPT-CHARGEBACK-ALERT",
                "no Amazon Managed Prometheus workspace (cluster.observability is off and no alert_workspace was "
                "given): preemption loss is reported monthly only, with no same-day alert",
            )
        #: The usage-report operator's Helm release (``None`` when no chart was given).
        self.operator: eks.HelmChart | None = None
        if usage_report_chart is None:
            warn(
                self,
                "HPT-CHARGEBACK-OPERATOR",
                "no usage_report_chart: the awslabs/sagemaker-hyperpod-usage-report operator is not installed; "
                f"mirror its chart (helm_chart/SageMakerHyperPodUsageReportChart) or have it write to {_RAW} of "
                "the report bucket",
            )
        else:
            self.operator = self._create_operator(usage_report_chart)
        if activate_cost_allocation_tags:
            self._activate_cost_allocation_tags()
        self._acknowledge_findings()

    # ------------------------------------------------------------------ configuration
    def _write_checkpoint_series(self, workspace: aps.CfnWorkspace) -> None:
        """Let the eviction collector write the overdue-checkpoint counts the teams' rule groups alert on."""
        # the workspace's Prometheus endpoint ends in "/"
        self.eviction_collector.add_environment(
            "REMOTE_WRITE_URL", f"{workspace.attr_prometheus_endpoint}api/v1/remote_write"
        )
        self.eviction_collector.add_to_role_policy(
            iam.PolicyStatement(
                sid="CheckpointSeries", actions=["aps:RemoteWrite"], resources=[workspace.attr_arn]
            )
        )

    def _config(
        self,
        *,
        billing_rule: model.BillingRule,
        idle_owner: str,
        effective_from: dt.date,
        earlier_terms: Sequence[model.BillingTerm],
        shared_costs: model.SharedCostRule,
        signed_off_by: str,
        mid_quarter_reason: str,
        cost_centers: Mapping[str, str],
        prices: Mapping[str, Decimal],
        tolerance: Decimal,
        unknown_teams: model.UnknownTeams,
    ) -> model.ChargebackConfig:
        platform = self.cluster.platform
        if not idle_owner:
            raise TenancyError(
                f"{self.node.path}: idle_owner is empty; name the cost center that pays for unallocated capacity, "
                f'or "{model.SHARED}" to split it by guarantee.'
            )
        terms = sorted(
            [
                *earlier_terms,
                model.BillingTerm(
                    effective_from=effective_from,
                    rule=billing_rule,
                    idle_owner=idle_owner,
                    shared_costs=shared_costs,
                    signed_off_by=signed_off_by,
                    mid_quarter_reason=mid_quarter_reason,
                ),
            ],
            key=lambda t: t.effective_from,
        )
        for term in terms:
            if not term.starts_a_quarter and not term.mid_quarter_reason.strip():
                raise TenancyError(
                    f"{self.node.path}: the billing term from {term.effective_from.isoformat()} does not start on "
                    "the first day of a quarter; start it on January, April, July or October 1st, or give "
                    "mid_quarter_reason (midQuarterReason in the policy), agreed with the cost-center owners."
                )
        dates = [t.effective_from for t in terms]
        if len(set(dates)) != len(dates):
            raise TenancyError(
                f"{self.node.path}: two billing terms start on the same day ({sorted(dates)}); give each term its "
                "own effective_from."
            )
        teams = platform.hosted_teams
        unknown = sorted(set(cost_centers) - {t.name for t in teams})
        if unknown:
            raise TenancyError(
                f"{self.node.path}: cost_centers names {unknown}, which are not teams of the cluster; use team names "
                f"from the policy ({', '.join(t.name for t in teams)})."
            )
        return model.ChargebackConfig(
            cluster=platform.cluster.name,
            terms=tuple(terms),
            teams=team_configs(platform, cost_centers),
            gpus_per_instance=gpus_per_instance(platform),
            prices=dict(sorted(prices.items())),
            max_checkpoint_minutes=max_checkpoint_minutes(platform),
            tolerance=tolerance,
            unknown_teams=unknown_teams,
        )

    def cost_center(self, team: str) -> str:
        """Return the cost center of ``team`` (its tag value and report column)."""
        return next(t.cost_center for t in self.config.teams if t.name == team)

    # ------------------------------------------------------------------ storage
    def _create_buckets(self, raw_retention: cdk.Duration) -> tuple[s3.Bucket, s3.Bucket]:
        storage = Construct(self, "Storage")
        storage.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        common: dict[str, Any] = {
            "encryption": s3.BucketEncryption.S3_MANAGED,
            "block_public_access": s3.BlockPublicAccess.BLOCK_ALL,
            "enforce_ssl": True,
            "versioned": True,
            "removal_policy": cdk.RemovalPolicy.RETAIN,
        }
        logs_bucket = s3.Bucket(
            storage,
            "AccessLogs",
            lifecycle_rules=[s3.LifecycleRule(id="expire-logs", expiration=cdk.Duration.days(365))],
            **common,
        )
        key = self.cluster.platform_key
        bucket = s3.Bucket(
            storage,
            "ReportBucket",
            server_access_logs_bucket=logs_bucket,
            server_access_logs_prefix="reportbucket/",
            # request metrics of what each collector writes: the alarms of _create_collection_alarms
            metrics=[
                s3.BucketMetrics(id=metrics_filter, prefix=f"{_RAW}{table}/")
                for table, metrics_filter in COLLECTION_ALARMS.values()
            ],
            lifecycle_rules=[
                s3.LifecycleRule(id="expire-raw", prefix=_RAW, expiration=raw_retention),
                s3.LifecycleRule(
                    id="expire-query-results", prefix=_RESULTS, expiration=cdk.Duration.days(30)
                ),
                s3.LifecycleRule(
                    id="expire-old-versions", noncurrent_version_expiration=cdk.Duration.days(90)
                ),
                s3.LifecycleRule(
                    id="abort-uploads", abort_incomplete_multipart_upload_after=cdk.Duration.days(7)
                ),
            ],
            # the report bucket takes the platform key (the bucket's grants then include it); the access-log
            # target bucket keeps SSE-S3
            **(
                {**common, "encryption": s3.BucketEncryption.KMS, "bucket_key_enabled": True}
                | {"encryption_key": key.use("AWS::S3::Bucket")}
                if key
                else common
            ),
        )
        acknowledge(
            logs_bucket,
            "AwsSolutions-S1",
            "this is the access-log bucket of the report bucket; logging it to itself would loop",
            checkov="CKV_AWS_18",
        )
        return logs_bucket, bucket

    def _location(self, prefix: str) -> str:
        return f"s3://{self.bucket.bucket_name}/{prefix}"

    def _create_catalog(self) -> tuple[glue.CfnDatabase, dict[str, glue.CfnTable]]:
        account = cdk.Stack.of(self).account
        database_name = names.chargeback_database(self._name)
        database = glue.CfnDatabase(
            self,
            "Database",
            catalog_id=account,
            database_input=glue.CfnDatabase.DatabaseInputProperty(
                name=database_name,
                description=f"Chargeback of HyperPod cluster {self._name}: snapshots and CUR",
            ),
        )
        tables: dict[str, glue.CfnTable] = {}
        current_year = 2024
        for table in _OPERATOR_TABLES + _OWN_TABLES:
            formats = _PARQUET if table in _OPERATOR_TABLES else _JSON
            prefix = f"{_RAW}{table}/"
            partitions = ("year", "month", "day", "hour") + (() if table == _HEARTBEAT else ("cluster",))
            parameters = {
                "classification": "parquet" if table in _OPERATOR_TABLES else "json",
                "projection.enabled": "true",
                "projection.year.type": "integer",
                "projection.year.range": f"{current_year},2100",
                "projection.year.digits": "4",
                "projection.month.type": "integer",
                "projection.month.range": "1,12",
                "projection.month.digits": "2",
                "projection.day.type": "integer",
                "projection.day.range": "1,31",
                "projection.day.digits": "2",
                "projection.hour.type": "integer",
                "projection.hour.range": "0,23",
                "projection.hour.digits": "2",
                **(
                    {"projection.cluster.type": "enum", "projection.cluster.values": self._name}
                    if "cluster" in partitions
                    else {}
                ),
                "storage.location.template": self._location(prefix)
                + "".join(f"{p}=${{{p}}}/" for p in partitions),
            }
            tables[table] = self._table(
                database,
                table,
                columns=queries.COLLECTOR_COLUMNS[table],
                partitions=partitions,
                location=self._location(prefix),
                formats=formats,
                parameters=parameters,
            )
        tables["cur"] = self._table(
            database,
            "cur",
            columns=_CUR_COLUMNS,
            partitions=("billing_period",),
            location=self._cur_data_location(),
            formats=_PARQUET,
            parameters={
                "classification": "parquet",
                "projection.enabled": "true",
                "projection.billing_period.type": "date",
                "projection.billing_period.format": "yyyy-MM",
                "projection.billing_period.interval": "1",
                "projection.billing_period.interval.unit": "MONTHS",
                "projection.billing_period.range": f"{current_year}-01,NOW",
                "storage.location.template": self._cur_data_location() + "BILLING_PERIOD=${billing_period}/",
            },
        )
        return database, tables

    def _table(
        self,
        database: glue.CfnDatabase,
        name: str,
        *,
        columns: Sequence[tuple[str, str]],
        partitions: Sequence[str],
        location: str,
        formats: Mapping[str, str],
        parameters: Mapping[str, str],
    ) -> glue.CfnTable:
        table = glue.CfnTable(
            self,
            f"Table{names.pascal_case(name)}",
            catalog_id=database.catalog_id,
            database_name=database.ref,
            table_input=glue.CfnTable.TableInputProperty(
                name=name,
                table_type="EXTERNAL_TABLE",
                parameters=dict(parameters),
                partition_keys=[glue.CfnTable.ColumnProperty(name=p, type="string") for p in partitions],
                storage_descriptor=glue.CfnTable.StorageDescriptorProperty(
                    location=location,
                    input_format=formats["input_format"],
                    output_format=formats["output_format"],
                    serde_info=glue.CfnTable.SerdeInfoProperty(serialization_library=formats["serde"]),
                    columns=[glue.CfnTable.ColumnProperty(name=c, type=t) for c, t in columns],
                ),
            ),
        )
        return table

    @property
    def export_name(self) -> str:
        """Name of the CUR 2.0 Data Export (``<cluster>-chargeback-cur2``)."""
        return names.chargeback_export(self._name)

    def _cur_data_location(self) -> str:
        # Data Exports writes <S3Prefix>/<export name>/data/BILLING_PERIOD=YYYY-MM/ (research section 1.3)
        return self._location(f"{_CUR}{self.export_name}/data/")

    def _create_workgroup(self, bytes_scanned_cutoff: int) -> athena.CfnWorkGroup:
        return athena.CfnWorkGroup(
            self,
            "Workgroup",
            name=names.chargeback(self._name),
            description=f"Chargeback queries of HyperPod cluster {self._name}",
            recursive_delete_option=True,
            work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
                bytes_scanned_cutoff_per_query=bytes_scanned_cutoff,
                enforce_work_group_configuration=True,
                publish_cloud_watch_metrics_enabled=True,
                engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                    selected_engine_version="Athena engine version 3"
                ),
                result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                    output_location=self._location(_RESULTS),
                    encryption_configuration=(
                        athena.CfnWorkGroup.EncryptionConfigurationProperty(
                            encryption_option="SSE_KMS", kms_key=key.use("AWS::Athena::WorkGroup").key_arn
                        )
                        if (key := self.cluster.platform_key)
                        else athena.CfnWorkGroup.EncryptionConfigurationProperty(encryption_option="SSE_S3")
                    ),
                ),
            ),
        )

    def _create_data_export(self) -> bcm.CfnExport:
        stack = cdk.Stack.of(self)
        principals = [
            iam.ServicePrincipal("bcm-data-exports.amazonaws.com"),
            iam.ServicePrincipal("billingreports.amazonaws.com"),
        ]
        conditions = {
            "StringEquals": {"aws:SourceAccount": stack.account},
            "ArnLike": {
                "aws:SourceArn": [
                    f"arn:{stack.partition}:bcm-data-exports:us-east-1:{stack.account}:export/*",
                    f"arn:{stack.partition}:cur:us-east-1:{stack.account}:definition/*",
                ]
            },
        }
        self.bucket.add_to_resource_policy(
            iam.PolicyStatement(
                sid="DataExportsWrite",
                principals=principals,
                actions=["s3:PutObject", "s3:GetBucketPolicy"],
                resources=[self.bucket.bucket_arn, self.bucket.arn_for_objects(f"{_CUR}*")],
                conditions=conditions,
            )
        )
        export = bcm.CfnExport(
            self,
            "DataExport",
            export=bcm.CfnExport.ExportProperty(
                name=self.export_name,
                description=f"CUR 2.0 for the chargeback of HyperPod cluster {self._name}",
                data_query=bcm.CfnExport.DataQueryProperty(
                    query_statement=_CUR_QUERY,
                    table_configurations={
                        "COST_AND_USAGE_REPORT": {
                            "TIME_GRANULARITY": "HOURLY",
                            "INCLUDE_RESOURCES": "TRUE",
                            "INCLUDE_MANUAL_DISCOUNT_COMPATIBILITY": "FALSE",
                            "INCLUDE_SPLIT_COST_ALLOCATION_DATA": "FALSE",
                        }
                    },
                ),
                destination_configurations=bcm.CfnExport.DestinationConfigurationsProperty(
                    s3_destination=bcm.CfnExport.S3DestinationProperty(
                        s3_bucket=self.bucket.bucket_name,
                        s3_prefix=_CUR.rstrip("/"),
                        s3_region=stack.region,
                        s3_output_configurations=bcm.CfnExport.S3OutputConfigurationsProperty(
                            compression="PARQUET",
                            format="PARQUET",
                            output_type="CUSTOM",
                            overwrite="OVERWRITE_REPORT",
                        ),
                    )
                ),
                refresh_cadence=bcm.CfnExport.RefreshCadenceProperty(frequency="SYNCHRONOUS"),
            ),
        )
        if self.cluster.platform_key is not None:
            # the export services write SSE-KMS objects: they need the key, through S3
            self.cluster.platform_key.allow_data_exports()
        # Data Exports checks its write permission when the export is created (CID CHANGELOG v0.11.1)
        policy = self.bucket.policy
        if policy is not None:
            export.node.add_dependency(policy)
        return export

    # ------------------------------------------------------------------ notifications
    def _create_topic(self) -> sns.Topic:
        key = kms.Key(
            self,
            "TopicKey",
            enable_key_rotation=True,
            description=f"Chargeback notifications of HyperPod cluster {self._name}",
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        # the services that publish to the encrypted topic use its key: Amazon Managed Prometheus (its alerts), and
        # CloudWatch (the collectors' alarms; SNS Developer Guide, "Managing Amazon SNS encryption keys",
        # compatibility with AWS services: the statement as documented there, the key encrypting this topic only)
        publishers = (
            (
                "PrometheusAlerts",
                "aps.amazonaws.com",
                {"StringEquals": {"aws:SourceAccount": cdk.Stack.of(self).account}},
            ),
            ("CloudWatchAlarms", "cloudwatch.amazonaws.com", None),
        )
        for sid, service, conditions in publishers:
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    principals=[iam.ServicePrincipal(service)],
                    actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                    resources=["*"],
                    conditions=conditions,
                )
            )
        topic = sns.Topic(
            self,
            "Topic",
            topic_name=self.topic_name,
            display_name=f"{self._name} chargeback",
            master_key=key,
            enforce_ssl=True,
        )
        # the topic's policy replaces SNS's default one, so CloudWatch is allowed in by name, for this account's
        # alarms of this pipeline only
        stack = cdk.Stack.of(self)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarms",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions={
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="cloudwatch",
                            resource="alarm",
                            resource_name=names.chargeback_alarm_pattern(self._name),
                            arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                        )
                    },
                    "StringEquals": {"aws:SourceAccount": stack.account},
                },
            )
        )
        return topic

    def _create_collection_alarms(self) -> dict[str, cloudwatch.Alarm]:
        """Create an alarm per collector that fires when it has written nothing for longer than its threshold.

        The node inventory and the operator's heartbeat are seen in S3 request metrics (``PutRequests`` of the
        bucket's metrics filter on their prefix: 1-minute metrics, "Monitoring metrics with Amazon CloudWatch" in
        the S3 User Guide); the eviction collector writes only when there is an eviction, so its successful runs
        (``Invocations`` less ``Errors``) are watched instead. Three periods in a row with nothing fire the alarm,
        and no data at all counts as nothing (a collector that never started alarms too).
        """
        alarms: dict[str, cloudwatch.Alarm] = {}
        for collector, (table, metrics_filter) in COLLECTION_ALARMS.items():
            minutes = queries.GAP_THRESHOLD_MINUTES[table]
            metric = cloudwatch.Metric(
                namespace="AWS/S3",
                metric_name="PutRequests",
                dimensions_map={"BucketName": self.bucket.bucket_name, "FilterId": metrics_filter},
                statistic="Sum",
                period=cdk.Duration.minutes(minutes // 3),
            )
            alarms[collector] = self._collection_alarm(
                collector, metric, f"wrote nothing under {_RAW}{table}/ for {minutes} minutes"
            )
        runs = cloudwatch.MathExpression(
            expression="FILL(invocations, 0) - FILL(errors, 0)",
            using_metrics={
                "invocations": self.eviction_collector.metric_invocations(statistic="Sum"),
                "errors": self.eviction_collector.metric_errors(statistic="Sum"),
            },
            label="successful runs",
            period=cdk.Duration.minutes(5),
        )
        alarms["eviction-collector"] = self._collection_alarm(
            "eviction-collector",
            runs,
            "had no successful run for 15 minutes (evictions since are not recorded)",
        )
        return alarms

    def _collection_alarm(self, collector: str, metric: cloudwatch.IMetric, what: str) -> cloudwatch.Alarm:
        alarm = cloudwatch.Alarm(
            self,
            f"{names.pascal_case(collector)}Stopped",
            alarm_name=names.chargeback_collector_alarm(self._name, collector),
            alarm_description=(
                f"The {collector.replace('-', ' ')} of HyperPod cluster {self._name} {what}: "
                "the month's report bills the gap by holding the last snapshot and lists it under Collection gaps"
            ),
            metric=metric,
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=3,
            datapoints_to_alarm=3,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )
        alarm.add_alarm_action(cloudwatch_actions.SnsAction(self.topic))
        return alarm

    @property
    def topic_name(self) -> str:
        """Name of the notification topic (fixed, so the Prometheus workspace can address it without a reference)."""
        return names.chargeback(self._name)

    # ------------------------------------------------------------------ functions
    def _function(
        self,
        id: str,
        *,
        code: lambda_.Code,
        handler: str,
        timeout: cdk.Duration,
        environment: Mapping[str, str],
        vpc: ec2.IVpc | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
    ) -> lambda_.Function:
        network: dict[str, Any] = {}
        if vpc is not None:
            network = {
                "vpc": vpc,
                "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
                "security_groups": list(security_groups),
            }
        return lambda_.Function(
            self,
            id,
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=code,
            handler=handler,
            timeout=timeout,
            memory_size=1024,
            environment=dict(environment),
            log_group=logs.LogGroup(self, f"{id}Logs", retention=logs.RetentionDays.ONE_YEAR),
            **network,
        )

    def _team_topic_prefix(self) -> str:
        """ARN of the teams' topics without the team (``...:<cluster>-preemptions-``), created in the team stacks."""
        return cdk.Stack.of(self).format_arn(
            service="sns",
            resource=names.chargeback_team_topic(self._name, ""),
            arn_format=cdk.ArnFormat.NO_RESOURCE_NAME,
        )

    def _create_node_inventory(self) -> lambda_.Function:
        directory = _asset_directory(
            "node-inventory",
            lambda_asset_files("The node inventory", NODE_INVENTORY_HANDLER.rpartition(".")[0]),
        )
        # it reads the Kubernetes nodes (Ready, cordoned, HyperPod's health label) from the private API endpoint
        security_group = ec2.SecurityGroup(
            self,
            "NodeInventorySecurityGroup",
            vpc=self.cluster.vpc,
            description=f"Node inventory of {self._name}: the private EKS API endpoint, S3, SageMaker and EKS APIs",
            allow_all_outbound=True,
        )
        function = self._function(
            "NodeInventory",
            code=lambda_.Code.from_asset(directory),
            handler=NODE_INVENTORY_HANDLER,
            timeout=cdk.Duration.minutes(2),
            environment={
                "CLUSTER_NAME": self._name,
                "EKS_CLUSTER_NAME": self.cluster.eks_cluster_name,
                "CLUSTER_LABEL": self._name,
                "BUCKET": self.bucket.bucket_name,
                "PREFIX": f"{_RAW}node/",
                "GPUS_PER_INSTANCE": json.dumps(self.config.gpus_per_instance, sort_keys=True),
            },
            vpc=self.cluster.vpc,
            security_groups=[security_group],
        )
        self.cluster.allow_api_access_from(self, "NodeInventoryApiAccess", peer=security_group)
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["sagemaker:ListClusterNodes"], resources=[self.cluster.hyperpod_cluster_arn]
            )
        )
        self.bucket.grant_put(function, f"{_RAW}node/*")
        access_entry, rbac = grant_cluster_reads(
            self,
            "NodeInventory",
            cluster=self.cluster,
            function=function,
            group=NODE_INVENTORY_GROUP,
            role_name=NODE_INVENTORY_ROLE,
            rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
        )
        schedule = events.Rule(
            self,
            "NodeInventorySchedule",
            description=f"Node inventory of HyperPod cluster {self._name} every 5 minutes",
            schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
            targets=[targets.LambdaFunction(function, retry_attempts=2)],
        )
        schedule.node.add_dependency(access_entry, rbac)
        return function

    def _create_eviction_collector(self) -> lambda_.Function:
        directory = _asset_directory("eviction-collector", eviction_collector_asset_files())
        security_group = ec2.SecurityGroup(
            self,
            "EvictionCollectorSecurityGroup",
            vpc=self.cluster.vpc,
            description=f"Eviction collector of {self._name}: the private EKS API endpoint, S3 and EKS APIs",
            allow_all_outbound=True,
        )
        function = self._function(
            "EvictionCollector",
            code=lambda_.Code.from_asset(directory),
            handler=EVICTION_COLLECTOR_HANDLER,
            timeout=cdk.Duration.minutes(2),
            environment={
                "CLUSTER_NAME": self.cluster.eks_cluster_name,
                "CLUSTER_LABEL": self._name,
                "BUCKET": self.bucket.bucket_name,
                "PREFIX": f"{_RAW}eviction/",
                "LOOKBACK_MINUTES": "15",
                # the one checkpoint declaration: variables of the pod templates' main containers
                "CHECKPOINT_INTERVAL_ENV": labels.CHECKPOINT_INTERVAL_ENV,
                "CHECKPOINT_DIR_ENV": labels.CHECKPOINT_DIR_ENV,
                # the team checkpoint scanners' annotation (measured preemption loss, CheckpointsOverdue gauge)
                "LAST_CHECKPOINT_ANNOTATION": labels.LAST_CHECKPOINT_ANNOTATION,
                # the teams' live GPU gauges (in use, borrowed, guarantee, ceiling) for their dashboards
                "GAUGE_NAMESPACE": METRIC_NAMESPACE,
                "TEAM_QUEUE_PREFIX": names.NAMESPACE_PREFIX,
                "TEAM_QUEUE_SUFFIX": names.CLUSTER_QUEUE_SUFFIX,
                # each team's own topic (in the team's stack): <prefix><team>
                "TEAM_TOPIC_ARN_PREFIX": self._team_topic_prefix(),
            },
            vpc=self.cluster.vpc,
            security_groups=[security_group],
        )
        self.cluster.allow_api_access_from(self, "EvictionCollectorApiAccess", peer=security_group)
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Gauges",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
            )
        )
        self.bucket.grant_put(function, f"{_RAW}eviction/*")
        # an eviction is told to its team once, when its record is first written: it lists its own key first
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="SeenEvictions",
                actions=["s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": f"{_RAW}eviction/*"}},
            )
        )
        stack = cdk.Stack.of(self)
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="TeamTopics", actions=["sns:Publish"], resources=[self._team_topic_prefix() + "*"]
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="TeamTopicKeys",
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                resources=[stack.format_arn(service="kms", resource="key", resource_name="*")],
                conditions={
                    "StringEquals": {
                        "kms:ViaService": f"sns.{stack.region}.{stack.url_suffix}",
                        f"aws:ResourceTag/{names.TEAM_TOPIC_KEY_TAG}": self._name,
                    }
                },
            )
        )
        access_entry, rbac = grant_cluster_reads(
            self,
            "EvictionCollector",
            cluster=self.cluster,
            function=function,
            group=EVICTION_COLLECTOR_GROUP,
            role_name=EVICTION_COLLECTOR_ROLE,
            rules=[
                {
                    "apiGroups": ["kueue.x-k8s.io"],
                    "resources": ["workloads", "clusterqueues"],
                    "verbs": ["get", "list"],
                }
            ],
        )
        schedule = events.Rule(
            self,
            "EvictionCollectorSchedule",
            description=f"Preemption evictions of Kueue workloads on {self._name} every 5 minutes",
            schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
            targets=[targets.LambdaFunction(function, retry_attempts=2)],
        )
        schedule.node.add_dependency(access_entry, rbac)
        return function

    def _create_job(self) -> lambda_.Function:
        stack = cdk.Stack.of(self)
        # the teams are read at run time from their records: the asset (and this stack) lists none
        directory = _asset_directory("chargeback-job", job_asset_files(self.platform_config))
        database_name = names.chargeback_database(self._name)
        function = self._function(
            "MonthlyJob",
            code=lambda_.Code.from_asset(directory),
            handler="hyperpod_tenancy.runtime.chargeback_job.handler",
            timeout=cdk.Duration.minutes(15),
            environment={
                "BUCKET": self.bucket.bucket_name,
                "WORKGROUP": self.workgroup.ref,
                "DATABASE": database_name,
                "TOPIC_ARN": self.topic.topic_arn,
                "METRIC_NAMESPACE": METRIC_NAMESPACE,
                "TABLES": json.dumps({t: t for t in queries.TABLES}, sort_keys=True),
                "TEAM_RECORDS_PATH": self.team_records_path,
            },
        )
        function.node.add_dependency(self.database, *self.tables.values())
        records = self.team_records_path.strip("/")
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="TeamRecords",
                actions=["ssm:GetParametersByPath"],
                resources=[
                    stack.format_arn(service="ssm", resource="parameter", resource_name=records),
                    stack.format_arn(service="ssm", resource="parameter", resource_name=f"{records}/*"),
                ],
            )
        )
        workgroup_arn = stack.format_arn(
            service="athena", resource="workgroup", resource_name=self.workgroup.ref
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Athena",
                actions=[
                    "athena:StartQueryExecution",
                    "athena:GetQueryExecution",
                    "athena:GetQueryResults",
                    "athena:StopQueryExecution",
                ],
                resources=[workgroup_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Catalog",
                actions=[
                    "glue:GetDatabase",
                    "glue:GetTable",
                    "glue:GetTables",
                    "glue:GetPartition",
                    "glue:GetPartitions",
                ],
                resources=[
                    stack.format_arn(service="glue", resource="catalog"),
                    stack.format_arn(service="glue", resource="database", resource_name=database_name),
                    *(
                        stack.format_arn(
                            service="glue", resource="table", resource_name=f"{database_name}/{t}"
                        )
                        for t in sorted(self.tables)
                    ),
                ],
            )
        )
        self.bucket.grant_read(function, f"{_RAW}*")
        self.bucket.grant_read(function, f"{_CUR}*")
        self.bucket.grant_read_write(function, f"{_RESULTS}*")
        # the report of each month, and the configuration it was computed under (read back by a re-run)
        self.bucket.grant_read(function, f"{_REPORTS}*")
        self.bucket.grant_put(function, f"{_REPORTS}*")
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="ListForAthena",
                actions=["s3:GetBucketLocation", "s3:ListBucket"],
                resources=[self.bucket.bucket_arn],
            )
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                sid="Metrics",
                actions=["cloudwatch:PutMetricData"],
                resources=["*"],
                conditions={"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
            )
        )
        self.topic.grant_publish(function)
        events.Rule(
            self,
            "MonthlySchedule",
            description=f"Chargeback report of HyperPod cluster {self._name} for the month that ended",
            schedule=events.Schedule.cron(minute="0", hour="6", day="1", month="*", year="*"),
            targets=[targets.LambdaFunction(function, retry_attempts=2)],
        )
        events.Rule(
            self,
            "RosterSchedule",
            description=f"Daily roster of the teams billed this month on HyperPod cluster {self._name}",
            schedule=events.Schedule.cron(minute="30", hour="5", month="*", year="*"),
            targets=[
                targets.LambdaFunction(
                    function, retry_attempts=2, event=events.RuleTargetInput.from_object({"action": "record"})
                )
            ],
        )
        return function

    # ------------------------------------------------------------------ views and alerts
    def _create_dashboards(self) -> cloudwatch.Dashboard:
        metrics = MONTHLY_METRICS
        # the team dashboards are the team stacks': this one aggregates every team with search expressions
        platform = cloudwatch.Dashboard(
            self,
            "PlatformDashboard",
            dashboard_name=names.chargeback(self._name),
            default_interval=cdk.Duration.days(400),
        )
        widgets: list[cloudwatch.IWidget] = []
        for metric in metrics:
            search = (
                f'SEARCH(\'{{{METRIC_NAMESPACE},Cluster,Team}} MetricName="{metric}" Cluster="{self._name}"\', '
                "'Sum', 86400)"
            )
            widgets.append(
                cloudwatch.GraphWidget(
                    title=f"{metric} per team",
                    left=[
                        cloudwatch.MathExpression(expression=search, label="", period=cdk.Duration.days(1))
                    ],
                    width=12,
                    height=8,
                    stacked=True,
                )
            )
        platform.add_widgets(*widgets)
        return platform

    def _route_alerts(self, workspace: aps.CfnWorkspace) -> None:
        # route the workspace's alerts to the topic; the topic ARN is formatted from its fixed name, so the
        # cluster's stack gains no reference to this one
        workspace_stack = cdk.Stack.of(workspace)
        topic_arn = workspace_stack.format_arn(
            service="sns", resource=self.topic_name, arn_format=cdk.ArnFormat.NO_RESOURCE_NAME
        )
        if workspace.alert_manager_definition is not None:
            raise TenancyError(
                f"{self.node.path}: the workspace {workspace.node.path} already has an alert manager definition; "
                "route its alerts yourself and pass a workspace without one, or remove it."
            )
        workspace.alert_manager_definition = cdk.Fn.join(
            "",
            [
                "alertmanager_config: |\n"
                "  route:\n"
                "    receiver: chargeback\n"
                "    group_by: [alertname, team]\n"
                "  receivers:\n"
                "    - name: chargeback\n"
                "      sns_configs:\n"
                "        - topic_arn: ",
                topic_arn,
                "\n          sigv4:\n            region: ",
                workspace_stack.region,
                "\n",
            ],
        )
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="PrometheusAlerts",
                principals=[iam.ServicePrincipal("aps.amazonaws.com")],
                actions=["sns:Publish", "sns:GetTopicAttributes"],
                resources=[self.topic.topic_arn],
                conditions={
                    "ArnEquals": {"aws:SourceArn": workspace.attr_arn},
                    "StringEquals": {"aws:SourceAccount": cdk.Stack.of(self).account},
                },
            )
        )

    # ------------------------------------------------------------------ teams
    @property
    def team_records_path(self) -> str:
        """SSM path of the team records the monthly job bills: ``/hyperpod-tenancy/<cluster>/chargeback/``."""
        return names.team_records_path(self._name, "chargeback")

    @property
    def platform_config(self) -> model.ChargebackConfig:
        """:attr:`config` without its teams: what the monthly job's asset carries (teams come from their records)."""
        return dataclasses.replace(self.config, teams=())

    # ------------------------------------------------------------------ collection
    def _create_operator(self, chart: UsageReportChart) -> eks.HelmChart:
        if (chart.oci_repository is None) == (chart.directory is None):
            raise TenancyError(
                f"{self.node.path}: usage_report_chart needs exactly one of oci_repository or directory."
            )
        role = iam.Role(
            self,
            "OperatorRole",
            assumed_by=pod_identity_principal(self.cluster.kubernetes),
            description="HyperPod usage-report operator (EKS Pod Identity): writes snapshots under raw/",
        )
        self.bucket.grant_put(role, f"{_RAW}*")
        self.operator_role = role
        association = eks.CfnPodIdentityAssociation(
            self,
            "OperatorPodIdentity",
            cluster_name=self.cluster.eks_cluster_name,
            namespace=OPERATOR_NAMESPACE,
            service_account=OPERATOR_SERVICE_ACCOUNT,
            role_arn=role.role_arn,
        )
        # the chart renders its own Namespace; Helm adopts a pre-created one only with its ownership metadata
        # (the operator's permissions/usage-report-namespace.yaml.template)
        namespace = eks.KubernetesManifest(
            self,
            "OperatorNamespace",
            cluster=self.cluster.kubernetes,
            manifest=[
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": OPERATOR_NAMESPACE,
                        "labels": {labels.MANAGED_BY_LABEL: "Helm"},
                        "annotations": {
                            "meta.helm.sh/release-name": OPERATOR_NAMESPACE,
                            "meta.helm.sh/release-namespace": OPERATOR_NAMESPACE,
                        },
                    },
                }
            ],
        )
        common: dict[str, Any] = {
            "cluster": self.cluster.kubernetes,
            "release": OPERATOR_NAMESPACE,
            "namespace": OPERATOR_NAMESPACE,
            "create_namespace": False,
            "values": {
                "region": cdk.Stack.of(self).region,
                "clusterName": self._name,
                "s3BucketName": self.bucket.bucket_name,
                "serviceAccount": {"create": True, "name": OPERATOR_SERVICE_ACCOUNT},
                "rbac": {"create": True},
            },
            "wait": True,
            "timeout": KUBECTL_WAIT,
        }
        if chart.directory is not None:
            path = Path(chart.directory)
            if not path.is_dir():
                raise TenancyError(
                    f"{self.node.path}: usage_report_chart.directory {chart.directory!r} is not a directory; vendor "
                    "helm_chart/SageMakerHyperPodUsageReportChart there, or use oci_repository."
                )
            asset = s3_assets.Asset(self, "OperatorChartAsset", path=str(path))
            release = eks.HelmChart(self, "Operator", chart_asset=asset, **common)
        else:
            repository = chart.oci_repository or ""
            release = eks.HelmChart(
                self,
                "Operator",
                repository=repository,
                chart=repository.rstrip("/").rsplit("/", 1)[-1],
                version=chart.version,
                **common,
            )
        release.node.add_dependency(namespace, association)
        if self.cluster.platform_chart_manifest is not None:
            namespace.node.add_dependency(self.cluster.platform_chart_manifest)
        return release

    def _activate_cost_allocation_tags(self) -> None:
        call = cr.AwsSdkCall(
            service="CostExplorer",
            action="updateCostAllocationTagsStatus",
            region="us-east-1",
            parameters={
                "CostAllocationTagsStatus": [
                    {"TagKey": key, "Status": "Active"} for key in COST_ALLOCATION_TAG_KEYS
                ]
            },
            physical_resource_id=cr.PhysicalResourceId.of(
                "cost-allocation-tags:" + ",".join(COST_ALLOCATION_TAG_KEYS)
            ),
            # a key can be activated only once it appeared on billed usage: the next deploy (or the console) does it
            ignore_error_codes_matching="TagKeysNotFoundException|AccessDeniedException",
        )
        self.cost_allocation_tags = cr.AwsCustomResource(
            self,
            "CostAllocationTags",
            on_create=call,
            on_update=call,
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["ce:UpdateCostAllocationTagsStatus"], resources=["*"])]
            ),
            install_latest_aws_sdk=False,
            log_group=logs.LogGroup(self, "CostAllocationTagsLogs", retention=logs.RetentionDays.ONE_YEAR),
        )

    # ------------------------------------------------------------------ compliance
    def _acknowledge_findings(self) -> None:
        for function in (self.job, self.node_inventory, self.eviction_collector):
            role = function.role
            if isinstance(role, iam.Role):
                acknowledge_role(
                    role,
                    managed_policies="AWSLambdaBasicExecutionRole (and, for the node inventory and the eviction "
                    "collector in the VPC, "
                    "AWSLambdaVPCAccessExecutionRole) are the managed policies CDK attaches for the function's logs "
                    "and network interfaces",
                    wildcards="object wildcards are under one prefix of the report bucket (raw/, cur/, athena-results/, "
                    "reports/, raw/node/ or raw/eviction/); the team records are the SSM parameters under "
                    "/hyperpod-tenancy/<cluster>/chargeback/ only; cloudwatch:PutMetricData supports no resource and is limited to the "
                    "chargeback namespace by condition; KMS data-key actions on the topic's own key; the eviction collector "
                    "publishes to the teams' topics (<cluster>-preemptions-<team>, created in the team stacks) and "
                    "uses their keys through SNS only, keys tagged for this cluster's team topics",
                )
            skip_checkov(
                function,
                ["CKV_AWS_115", "CKV_AWS_116"],
                "started by its own EventBridge schedule only, which retries a failed run twice; the event carries "
                "no data (the function reads the cluster and the bucket itself), so a dead-letter queue would hold "
                "nothing to replay, and one run at a time needs no concurrency reserved from the account's other functions",
            )
            skip_checkov(
                function,
                "CKV_AWS_173",
                "the environment holds bucket, table and cluster names, no secret; Lambda encrypts it at rest with "
                "its AWS-managed key",
            )
        skip_checkov(
            self.job,
            "CKV_AWS_117",
            "calls AWS APIs only (S3, Athena, Glue, SNS, CloudWatch), nothing inside the VPC; the functions that reach "
            "the cluster's private API (the node inventory and the eviction collector) run in the VPC",
        )
        operator_role = getattr(self, "operator_role", None)
        if isinstance(operator_role, iam.Role):
            acknowledge_role(
                operator_role, wildcards="the operator writes only objects under raw/ of the report bucket"
            )
        stack = cdk.Stack.of(self)
        for child in stack.node.children:
            if child.node.id.startswith("AWS679f53fac002430cb0da5b7982bd2287"):
                acknowledge_cdk_handlers(
                    child,
                    "handler created and maintained by aws-cdk-lib (AwsCustomResource): its managed Lambda policy "
                    "and runtime are CDK's",
                )
        tags = getattr(self, "cost_allocation_tags", None)
        if tags is not None:
            acknowledge(
                tags,
                "AwsSolutions-IAM5[Resource::*]",
                "ce:UpdateCostAllocationTagsStatus supports no resource-level permissions",
            )
