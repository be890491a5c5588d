"""The chargeback pipeline's alerting: the platform topic, the collection alarms, the dashboard and the alert routing."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.constructs.chargeback.build import PipelineBuild
from hyperpod_tenancy.constructs.chargeback.layout import (
    _RAW,
    COLLECTION_ALARMS,
    METRIC_NAMESPACE,
    MONTHLY_METRICS,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import names

__all__ = [
    "collection_alarm",
    "create_collection_alarms",
    "create_dashboards",
    "create_topic",
    "route_alerts",
    "write_checkpoint_series",
]


def write_checkpoint_series(pipeline: PipelineBuild, workspace: aps.CfnWorkspace) -> None:
    """Let the eviction collector write the overdue-checkpoint counts the teams' rule groups alert on."""
    # the workspace's Prometheus endpoint ends in "/"
    pipeline.eviction_collector.add_environment(
        "REMOTE_WRITE_URL", f"{workspace.attr_prometheus_endpoint}api/v1/remote_write"
    )
    pipeline.eviction_collector.add_to_role_policy(
        iam.PolicyStatement(
            sid="CheckpointSeries", actions=["aps:RemoteWrite"], resources=[workspace.attr_arn]
        )
    )


def create_topic(pipeline: PipelineBuild) -> sns.Topic:
    """Create the platform's notification topic (encrypted with a key of its own)."""
    key = kms.Key(
        pipeline,
        "TopicKey",
        enable_key_rotation=True,
        description=f"Chargeback notifications of HyperPod cluster {pipeline._name}",
        removal_policy=cdk.RemovalPolicy.RETAIN,
    )
    # the services that publish to the encrypted topic use its key: Amazon Managed Prometheus (its alerts), and
    # CloudWatch (the collectors' alarms; SNS Developer Guide, "Managing Amazon SNS encryption keys",
    # compatibility with AWS services: the statement as documented there, the key encrypting this topic only)
    publishers = (
        (
            "PrometheusAlerts",
            "aps.amazonaws.com",
            {"StringEquals": {"aws:SourceAccount": cdk.Stack.of(pipeline).account}},
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
        pipeline,
        "Topic",
        topic_name=pipeline.topic_name,
        display_name=f"{pipeline._name} chargeback",
        master_key=key,
        enforce_ssl=True,
    )
    # the topic's policy replaces SNS's default one, so CloudWatch is allowed in by name, for this account's
    # alarms of this pipeline only
    stack = cdk.Stack.of(pipeline)
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
                        resource_name=names.chargeback_alarm_pattern(pipeline._name),
                        arn_format=cdk.ArnFormat.COLON_RESOURCE_NAME,
                    )
                },
                "StringEquals": {"aws:SourceAccount": stack.account},
            },
        )
    )
    return topic


def create_collection_alarms(pipeline: PipelineBuild) -> dict[str, cloudwatch.Alarm]:
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
            dimensions_map={"BucketName": pipeline.bucket.bucket_name, "FilterId": metrics_filter},
            statistic="Sum",
            period=cdk.Duration.minutes(minutes // 3),
        )
        alarms[collector] = collection_alarm(
            pipeline, collector, metric, f"wrote nothing under {_RAW}{table}/ for {minutes} minutes"
        )
    runs = cloudwatch.MathExpression(
        expression="FILL(invocations, 0) - FILL(errors, 0)",
        using_metrics={
            "invocations": pipeline.eviction_collector.metric_invocations(statistic="Sum"),
            "errors": pipeline.eviction_collector.metric_errors(statistic="Sum"),
        },
        label="successful runs",
        period=cdk.Duration.minutes(5),
    )
    alarms["eviction-collector"] = collection_alarm(
        pipeline,
        "eviction-collector",
        runs,
        "had no successful run for 15 minutes (evictions since are not recorded)",
    )
    return alarms


def collection_alarm(
    pipeline: PipelineBuild, collector: str, metric: cloudwatch.IMetric, what: str
) -> cloudwatch.Alarm:
    """Create one collection alarm on ``metric``, notifying the topic."""
    alarm = cloudwatch.Alarm(
        pipeline,
        f"{names.pascal_case(collector)}Stopped",
        alarm_name=names.chargeback_collector_alarm(pipeline._name, collector),
        alarm_description=(
            f"The {collector.replace('-', ' ')} of HyperPod cluster {pipeline._name} {what}: "
            "the month's report bills the gap by holding the last snapshot and lists it under Collection gaps"
        ),
        metric=metric,
        threshold=1,
        comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        evaluation_periods=3,
        datapoints_to_alarm=3,
        treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
    )
    alarm.add_alarm_action(cloudwatch_actions.SnsAction(pipeline.topic))
    return alarm


def create_dashboards(pipeline: PipelineBuild) -> cloudwatch.Dashboard:
    """Create the platform's dashboard of the monthly metrics, every team aggregated."""
    metrics = MONTHLY_METRICS
    # the team dashboards are the team stacks': this one aggregates every team with search expressions
    platform = cloudwatch.Dashboard(
        pipeline,
        "PlatformDashboard",
        dashboard_name=names.chargeback(pipeline._name),
        default_interval=cdk.Duration.days(400),
    )
    widgets: list[cloudwatch.IWidget] = []
    for metric in metrics:
        search = (
            f'SEARCH(\'{{{METRIC_NAMESPACE},Cluster,Team}} MetricName="{metric}" Cluster="{pipeline._name}"\', '
            "'Sum', 86400)"
        )
        widgets.append(
            cloudwatch.GraphWidget(
                title=f"{metric} per team",
                left=[cloudwatch.MathExpression(expression=search, label="", period=cdk.Duration.days(1))],
                width=12,
                height=8,
                stacked=True,
            )
        )
    platform.add_widgets(*widgets)
    return platform


def route_alerts(pipeline: PipelineBuild, workspace: aps.CfnWorkspace) -> None:
    """Route the workspace's alerts to the topic (its alert manager definition)."""
    # route the workspace's alerts to the topic; the topic ARN is formatted from its fixed name, so the
    # cluster's stack gains no reference to this one
    workspace_stack = cdk.Stack.of(workspace)
    topic_arn = workspace_stack.format_arn(
        service="sns", resource=pipeline.topic_name, arn_format=cdk.ArnFormat.NO_RESOURCE_NAME
    )
    if workspace.alert_manager_definition is not None:
        raise TenancyError(
            f"{pipeline.node.path}: the workspace {workspace.node.path} already has an alert manager definition; "
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
    pipeline.topic.add_to_resource_policy(
        iam.PolicyStatement(
            sid="PrometheusAlerts",
            principals=[iam.ServicePrincipal("aps.amazonaws.com")],
            actions=["sns:Publish", "sns:GetTopicAttributes"],
            resources=[pipeline.topic.topic_arn],
            conditions={
                "ArnEquals": {"aws:SourceArn": workspace.attr_arn},
                "StringEquals": {"aws:SourceAccount": cdk.Stack.of(pipeline).account},
            },
        )
    )
