"""The chargeback pipeline's storage: the report bucket, the Glue catalog of the collectors' and the CUR's data, the Athena workgroup and the CUR 2.0 export."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_athena as athena
from aws_cdk import aws_bcmdataexports as bcm
from aws_cdk import aws_glue as glue
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
)
from hyperpod_tenancy.constructs.chargeback.build import PipelineBuild
from hyperpod_tenancy.constructs.chargeback.layout import (
    _CUR,
    _CUR_COLUMNS,
    _CUR_QUERY,
    _HEARTBEAT,
    _JSON,
    _OPERATOR_TABLES,
    _OWN_TABLES,
    _PARQUET,
    _RAW,
    _RESULTS,
    COLLECTION_ALARMS,
)
from hyperpod_tenancy.policy import names

__all__ = [
    "create_buckets",
    "create_catalog",
    "create_data_export",
    "create_table",
    "create_workgroup",
    "cur_data_location",
    "s3_location",
]


def create_buckets(pipeline: PipelineBuild, raw_retention: cdk.Duration) -> tuple[s3.Bucket, s3.Bucket]:
    """Create the report bucket and its access-log bucket (retained on delete)."""
    storage = Construct(pipeline, "Storage")
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
    key = pipeline.cluster.platform_key
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
            s3.LifecycleRule(id="expire-query-results", prefix=_RESULTS, expiration=cdk.Duration.days(30)),
            s3.LifecycleRule(id="expire-old-versions", noncurrent_version_expiration=cdk.Duration.days(90)),
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


def s3_location(pipeline: PipelineBuild, prefix: str) -> str:
    """Return the ``s3://`` location of ``prefix`` in the report bucket."""
    return f"s3://{pipeline.bucket.bucket_name}/{prefix}"


def create_catalog(pipeline: PipelineBuild) -> tuple[glue.CfnDatabase, dict[str, glue.CfnTable]]:
    """Create the Glue database and the tables of the collectors' data and of the CUR."""
    account = cdk.Stack.of(pipeline).account
    database_name = names.chargeback_database(pipeline._name)
    database = glue.CfnDatabase(
        pipeline,
        "Database",
        catalog_id=account,
        database_input=glue.CfnDatabase.DatabaseInputProperty(
            name=database_name,
            description=f"Chargeback of HyperPod cluster {pipeline._name}: snapshots and CUR",
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
                {"projection.cluster.type": "enum", "projection.cluster.values": pipeline._name}
                if "cluster" in partitions
                else {}
            ),
            "storage.location.template": s3_location(pipeline, prefix)
            + "".join(f"{p}=${{{p}}}/" for p in partitions),
        }
        tables[table] = create_table(
            pipeline,
            database,
            table,
            columns=queries.COLLECTOR_COLUMNS[table],
            partitions=partitions,
            location=s3_location(pipeline, prefix),
            formats=formats,
            parameters=parameters,
        )
    tables["cur"] = create_table(
        pipeline,
        database,
        "cur",
        columns=_CUR_COLUMNS,
        partitions=("billing_period",),
        location=cur_data_location(pipeline),
        formats=_PARQUET,
        parameters={
            "classification": "parquet",
            "projection.enabled": "true",
            "projection.billing_period.type": "date",
            "projection.billing_period.format": "yyyy-MM",
            "projection.billing_period.interval": "1",
            "projection.billing_period.interval.unit": "MONTHS",
            "projection.billing_period.range": f"{current_year}-01,NOW",
            "storage.location.template": cur_data_location(pipeline) + "BILLING_PERIOD=${billing_period}/",
        },
    )
    return database, tables


def create_table(
    pipeline: PipelineBuild,
    database: glue.CfnDatabase,
    name: str,
    *,
    columns: Sequence[tuple[str, str]],
    partitions: Sequence[str],
    location: str,
    formats: Mapping[str, str],
    parameters: Mapping[str, str],
) -> glue.CfnTable:
    """Create one Glue table with partition projection."""
    table = glue.CfnTable(
        pipeline,
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


def cur_data_location(pipeline: PipelineBuild) -> str:
    """Return the location of the CUR 2.0 export's data."""
    # Data Exports writes <S3Prefix>/<export name>/data/BILLING_PERIOD=YYYY-MM/ (research section 1.3)
    return s3_location(pipeline, f"{_CUR}{pipeline.export_name}/data/")


def create_workgroup(pipeline: PipelineBuild, bytes_scanned_cutoff: int) -> athena.CfnWorkGroup:
    """Create the Athena workgroup of the monthly queries, with its bytes-scanned cutoff."""
    return athena.CfnWorkGroup(
        pipeline,
        "Workgroup",
        name=names.chargeback(pipeline._name),
        description=f"Chargeback queries of HyperPod cluster {pipeline._name}",
        recursive_delete_option=True,
        work_group_configuration=athena.CfnWorkGroup.WorkGroupConfigurationProperty(
            bytes_scanned_cutoff_per_query=bytes_scanned_cutoff,
            enforce_work_group_configuration=True,
            publish_cloud_watch_metrics_enabled=True,
            engine_version=athena.CfnWorkGroup.EngineVersionProperty(
                selected_engine_version="Athena engine version 3"
            ),
            result_configuration=athena.CfnWorkGroup.ResultConfigurationProperty(
                output_location=s3_location(pipeline, _RESULTS),
                encryption_configuration=(
                    athena.CfnWorkGroup.EncryptionConfigurationProperty(
                        encryption_option="SSE_KMS", kms_key=key.use("AWS::Athena::WorkGroup").key_arn
                    )
                    if (key := pipeline.cluster.platform_key)
                    else athena.CfnWorkGroup.EncryptionConfigurationProperty(encryption_option="SSE_S3")
                ),
            ),
        ),
    )


def create_data_export(pipeline: PipelineBuild) -> bcm.CfnExport:
    """Create the CUR 2.0 export into the report bucket."""
    stack = cdk.Stack.of(pipeline)
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
    pipeline.bucket.add_to_resource_policy(
        iam.PolicyStatement(
            sid="DataExportsWrite",
            principals=principals,
            actions=["s3:PutObject", "s3:GetBucketPolicy"],
            resources=[pipeline.bucket.bucket_arn, pipeline.bucket.arn_for_objects(f"{_CUR}*")],
            conditions=conditions,
        )
    )
    export = bcm.CfnExport(
        pipeline,
        "DataExport",
        export=bcm.CfnExport.ExportProperty(
            name=pipeline.export_name,
            description=f"CUR 2.0 for the chargeback of HyperPod cluster {pipeline._name}",
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
                    s3_bucket=pipeline.bucket.bucket_name,
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
    if pipeline.cluster.platform_key is not None:
        # the export services write SSE-KMS objects: they need the key, through S3
        pipeline.cluster.platform_key.allow_data_exports()
    # Data Exports checks its write permission when the export is created (CID CHANGELOG v0.11.1)
    policy = pipeline.bucket.policy
    if policy is not None:
        export.node.add_dependency(policy)
    return export
