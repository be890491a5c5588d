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
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_bcmdataexports as bcm
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.constructs._private.annotations import (
    warn,
)
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs.chargeback.alerting import (
    create_collection_alarms,
    create_dashboards,
    create_topic,
    route_alerts,
    write_checkpoint_series,
)
from hyperpod_tenancy.constructs.chargeback.build import PipelineBuild
from hyperpod_tenancy.constructs.chargeback.config import acknowledge_pipeline_findings, pipeline_config
from hyperpod_tenancy.constructs.chargeback.functions import (
    create_eviction_collector,
    create_job,
    create_node_inventory,
)
from hyperpod_tenancy.constructs.chargeback.layout import (
    _CUR,
    _RAW,
    COLLECTION_ALARMS,
    COST_ALLOCATION_TAG_KEYS,
    DATA_EXPORTS_NATIVE_REGIONS,
    EVICTION_COLLECTOR_GROUP,
    EVICTION_COLLECTOR_HANDLER,
    EVICTION_COLLECTOR_ROLE,
    METRIC_NAMESPACE,
    MONTHLY_METRICS,
    NODE_INVENTORY_GROUP,
    NODE_INVENTORY_HANDLER,
    NODE_INVENTORY_ROLE,
    OPERATOR_NAMESPACE,
    OPERATOR_RBAC,
    OPERATOR_SERVICE_ACCOUNT,
    TEAM_COST_CENTER_TAG,
    TEAM_TAG,
    UsageReportChart,
    eviction_collector_asset_files,
    job_asset_files,
)
from hyperpod_tenancy.constructs.chargeback.storage import (
    create_buckets,
    create_catalog,
    create_data_export,
    create_workgroup,
)
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
    "ChargebackPipeline",
    "UsageReportChart",
    "eviction_collector_asset_files",
    "job_asset_files",
]


def webhook_timeout_seconds(cluster: IHyperPodCluster) -> int:
    """Return the ``timeoutSeconds`` of the cluster's POSIX identity webhook.

    The construct's (:attr:`PosixIdentityWebhook.timeout_seconds`) when the cluster was created in this app, else
    the policy's ``cluster.posixIdentity.timeoutSeconds`` (what the construct deploys by default).
    """
    webhook = getattr(cluster, "posix_identity", None)
    if isinstance(webhook, PosixIdentityWebhook):
        return webhook.timeout_seconds
    return cluster.platform.cluster.posix_identity.timeout_seconds


class ChargebackPipeline(PipelineBuild):
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
    (:class:`~hyperpod_tenancy.constructs.tenant.chargeback.TeamChargeback`, ``TeamStack.add_chargeback``).

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
        platform = cluster.plan.platform
        self._name = platform.cluster.name
        encrypt_platform_resources(self, cluster.platform_key)
        stack = cdk.Stack.of(self)
        #: The engine's configuration (also shipped in the monthly job's asset).
        self.config: model.ChargebackConfig = pipeline_config(
            self,
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
        self.access_logs_bucket, self.bucket = create_buckets(self, raw_retention or cdk.Duration.days(400))
        self.database, self.tables = create_catalog(self)
        self.workgroup = create_workgroup(self, bytes_scanned_cutoff)
        native = stack.region in DATA_EXPORTS_NATIVE_REGIONS
        #: The CUR 2.0 export (``None`` where it is not created).
        self.data_export: bcm.CfnExport | None = None
        if data_export if data_export is not None else native:
            self.data_export = create_data_export(self)
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
        self.topic = create_topic(self)
        self.node_inventory = create_node_inventory(self)
        self.eviction_collector = create_eviction_collector(self)
        self.job = create_job(self)
        #: Collector → the alarm raised when it stops writing (:data:`COLLECTION_ALARMS`, and the eviction
        #: collector's successful runs), each notifying :attr:`topic`.
        self.collection_alarms = create_collection_alarms(self)
        self.platform_dashboard = create_dashboards(self)
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
            route_alerts(self, workspace)
            write_checkpoint_series(self, workspace)
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
        acknowledge_pipeline_findings(self)

    # ------------------------------------------------------------------ configuration

    def cost_center(self, team: str) -> str:
        """Return the cost center of ``team`` (its tag value and report column)."""
        return next(t.cost_center for t in self.config.teams if t.name == team)

    # ------------------------------------------------------------------ storage

    @property
    def export_name(self) -> str:
        """Name of the CUR 2.0 Data Export (``<cluster>-chargeback-cur2``)."""
        return names.chargeback_export(self._name)

    # ------------------------------------------------------------------ notifications

    @property
    def topic_name(self) -> str:
        """Name of the notification topic (fixed, so the Prometheus workspace can address it without a reference)."""
        return names.chargeback(self._name)

    # ------------------------------------------------------------------ functions

    # ------------------------------------------------------------------ views and alerts

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
