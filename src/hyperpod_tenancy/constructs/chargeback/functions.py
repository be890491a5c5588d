"""The chargeback pipeline's functions: the node inventory, the eviction collector and the monthly job."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.constructs._private.cluster_reader import grant_cluster_reads
from hyperpod_tenancy.constructs._private.lambda_assets import asset_directory, lambda_asset_files
from hyperpod_tenancy.constructs.chargeback.build import PipelineBuild
from hyperpod_tenancy.constructs.chargeback.layout import (
    _CUR,
    _RAW,
    _REPORTS,
    _RESULTS,
    EVICTION_COLLECTOR_GROUP,
    EVICTION_COLLECTOR_HANDLER,
    EVICTION_COLLECTOR_ROLE,
    METRIC_NAMESPACE,
    NODE_INVENTORY_GROUP,
    NODE_INVENTORY_HANDLER,
    NODE_INVENTORY_ROLE,
    eviction_collector_asset_files,
    job_asset_files,
)
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names

__all__ = [
    "create_eviction_collector",
    "create_function",
    "create_job",
    "create_node_inventory",
    "team_topic_prefix",
]


def create_function(
    pipeline: PipelineBuild,
    id: str,
    *,
    code: lambda_.Code,
    handler: str,
    timeout: cdk.Duration,
    environment: Mapping[str, str],
    vpc: ec2.IVpc | None = None,
    security_groups: Sequence[ec2.ISecurityGroup] = (),
) -> lambda_.Function:
    """Create one of the pipeline's functions (its log group, retention and tracing set as the others')."""
    network: dict[str, Any] = {}
    if vpc is not None:
        network = {
            "vpc": vpc,
            "vpc_subnets": ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            "security_groups": list(security_groups),
        }
    return lambda_.Function(
        pipeline,
        id,
        runtime=lambda_.Runtime.PYTHON_3_14,
        code=code,
        handler=handler,
        timeout=timeout,
        memory_size=1024,
        environment=dict(environment),
        log_group=logs.LogGroup(pipeline, f"{id}Logs", retention=logs.RetentionDays.ONE_YEAR),
        **network,
    )


def team_topic_prefix(pipeline: PipelineBuild) -> str:
    """ARN of the teams' topics without the team (``...:<cluster>-preemptions-``), created in the team stacks."""
    return cdk.Stack.of(pipeline).format_arn(
        service="sns",
        resource=names.chargeback_team_topic(pipeline._name, ""),
        arn_format=cdk.ArnFormat.NO_RESOURCE_NAME,
    )


def create_node_inventory(pipeline: PipelineBuild) -> lambda_.Function:
    """Create the node inventory: a function that records the nodes every few minutes."""
    directory = asset_directory(
        "node-inventory",
        lambda_asset_files("The node inventory", NODE_INVENTORY_HANDLER.rpartition(".")[0]),
    )
    # it reads the Kubernetes nodes (Ready, cordoned, HyperPod's health label) from the private API endpoint
    security_group = ec2.SecurityGroup(
        pipeline,
        "NodeInventorySecurityGroup",
        vpc=pipeline.cluster.vpc,
        description=f"Node inventory of {pipeline._name}: the private EKS API endpoint, S3, SageMaker and EKS APIs",
        allow_all_outbound=True,
    )
    function = create_function(
        pipeline,
        "NodeInventory",
        code=lambda_.Code.from_asset(directory),
        handler=NODE_INVENTORY_HANDLER,
        timeout=cdk.Duration.minutes(2),
        environment={
            "CLUSTER_NAME": pipeline._name,
            "EKS_CLUSTER_NAME": pipeline.cluster.eks_cluster_name,
            "CLUSTER_LABEL": pipeline._name,
            "BUCKET": pipeline.bucket.bucket_name,
            "PREFIX": f"{_RAW}node/",
            "GPUS_PER_INSTANCE": json.dumps(pipeline.config.gpus_per_instance, sort_keys=True),
        },
        vpc=pipeline.cluster.vpc,
        security_groups=[security_group],
    )
    pipeline.cluster.allow_api_access_from(pipeline, "NodeInventoryApiAccess", peer=security_group)
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["sagemaker:ListClusterNodes"], resources=[pipeline.cluster.hyperpod_cluster_arn]
        )
    )
    pipeline.bucket.grant_put(function, f"{_RAW}node/*")
    access_entry, rbac = grant_cluster_reads(
        pipeline,
        "NodeInventory",
        cluster=pipeline.cluster,
        function=function,
        group=NODE_INVENTORY_GROUP,
        role_name=NODE_INVENTORY_ROLE,
        rules=[{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list"]}],
    )
    schedule = events.Rule(
        pipeline,
        "NodeInventorySchedule",
        description=f"Node inventory of HyperPod cluster {pipeline._name} every 5 minutes",
        schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
        targets=[targets.LambdaFunction(function, retry_attempts=2)],
    )
    schedule.node.add_dependency(access_entry, rbac)
    return function


def create_eviction_collector(pipeline: PipelineBuild) -> lambda_.Function:
    """Create the eviction collector: a function that records preemptions and notifies the teams."""
    directory = asset_directory("eviction-collector", eviction_collector_asset_files())
    security_group = ec2.SecurityGroup(
        pipeline,
        "EvictionCollectorSecurityGroup",
        vpc=pipeline.cluster.vpc,
        description=f"Eviction collector of {pipeline._name}: the private EKS API endpoint, S3 and EKS APIs",
        allow_all_outbound=True,
    )
    function = create_function(
        pipeline,
        "EvictionCollector",
        code=lambda_.Code.from_asset(directory),
        handler=EVICTION_COLLECTOR_HANDLER,
        timeout=cdk.Duration.minutes(2),
        environment={
            "CLUSTER_NAME": pipeline.cluster.eks_cluster_name,
            "CLUSTER_LABEL": pipeline._name,
            "BUCKET": pipeline.bucket.bucket_name,
            "PREFIX": f"{_RAW}eviction/",
            # each run's snapshot of the GPU partitions the teams' queues hold (the chargeback bills them)
            "PARTITION_PREFIX": f"{_RAW}partition_usage/",
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
            "TEAM_TOPIC_ARN_PREFIX": team_topic_prefix(pipeline),
        },
        vpc=pipeline.cluster.vpc,
        security_groups=[security_group],
    )
    pipeline.cluster.allow_api_access_from(pipeline, "EvictionCollectorApiAccess", peer=security_group)
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="Gauges",
            actions=["cloudwatch:PutMetricData"],
            resources=["*"],
            conditions={"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
        )
    )
    pipeline.bucket.grant_put(function, f"{_RAW}eviction/*")
    pipeline.bucket.grant_put(function, f"{_RAW}partition_usage/*")
    # an eviction is told to its team once, when its record is first written: it lists its own key first
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="SeenEvictions",
            actions=["s3:ListBucket"],
            resources=[pipeline.bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": f"{_RAW}eviction/*"}},
        )
    )
    stack = cdk.Stack.of(pipeline)
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="TeamTopics", actions=["sns:Publish"], resources=[team_topic_prefix(pipeline) + "*"]
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
                    f"aws:ResourceTag/{names.TEAM_TOPIC_KEY_TAG}": pipeline._name,
                }
            },
        )
    )
    access_entry, rbac = grant_cluster_reads(
        pipeline,
        "EvictionCollector",
        cluster=pipeline.cluster,
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
        pipeline,
        "EvictionCollectorSchedule",
        description=f"Preemption evictions of Kueue workloads on {pipeline._name} every 5 minutes",
        schedule=events.Schedule.rate(cdk.Duration.minutes(5)),
        targets=[targets.LambdaFunction(function, retry_attempts=2)],
    )
    schedule.node.add_dependency(access_entry, rbac)
    return function


def create_job(pipeline: PipelineBuild) -> lambda_.Function:
    """Create the monthly job: the function that computes and publishes the month's report."""
    stack = cdk.Stack.of(pipeline)
    # the teams are read at run time from their records: the asset (and this stack) lists none
    directory = asset_directory("chargeback-job", job_asset_files(pipeline.platform_config))
    database_name = names.chargeback_database(pipeline._name)
    function = create_function(
        pipeline,
        "MonthlyJob",
        code=lambda_.Code.from_asset(directory),
        handler="hyperpod_tenancy.runtime.chargeback_job.handler",
        timeout=cdk.Duration.minutes(15),
        environment={
            "BUCKET": pipeline.bucket.bucket_name,
            "WORKGROUP": pipeline.workgroup.ref,
            "DATABASE": database_name,
            "TOPIC_ARN": pipeline.topic.topic_arn,
            "METRIC_NAMESPACE": METRIC_NAMESPACE,
            "TABLES": json.dumps({t: t for t in queries.TABLES}, sort_keys=True),
            "TEAM_RECORDS_PATH": pipeline.team_records_path,
        },
    )
    function.node.add_dependency(pipeline.database, *pipeline.tables.values())
    records = pipeline.team_records_path.strip("/")
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
        service="athena", resource="workgroup", resource_name=pipeline.workgroup.ref
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
                    stack.format_arn(service="glue", resource="table", resource_name=f"{database_name}/{t}")
                    for t in sorted(pipeline.tables)
                ),
            ],
        )
    )
    pipeline.bucket.grant_read(function, f"{_RAW}*")
    pipeline.bucket.grant_read(function, f"{_CUR}*")
    pipeline.bucket.grant_read_write(function, f"{_RESULTS}*")
    # the report of each month, and the configuration it was computed under (read back by a re-run)
    pipeline.bucket.grant_read(function, f"{_REPORTS}*")
    pipeline.bucket.grant_put(function, f"{_REPORTS}*")
    function.add_to_role_policy(
        iam.PolicyStatement(
            sid="ListForAthena",
            actions=["s3:GetBucketLocation", "s3:ListBucket"],
            resources=[pipeline.bucket.bucket_arn],
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
    pipeline.topic.grant_publish(function)
    events.Rule(
        pipeline,
        "MonthlySchedule",
        description=f"Chargeback report of HyperPod cluster {pipeline._name} for the month that ended",
        schedule=events.Schedule.cron(minute="0", hour="6", day="1", month="*", year="*"),
        targets=[targets.LambdaFunction(function, retry_attempts=2)],
    )
    events.Rule(
        pipeline,
        "RosterSchedule",
        description=f"Daily roster of the teams billed this month on HyperPod cluster {pipeline._name}",
        schedule=events.Schedule.cron(minute="30", hour="5", month="*", year="*"),
        targets=[
            targets.LambdaFunction(
                function, retry_attempts=2, event=events.RuleTargetInput.from_object({"action": "record"})
            )
        ],
    )
    return function
