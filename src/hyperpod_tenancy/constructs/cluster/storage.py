"""The shared cluster's storage: the data and lifecycle buckets (retained) and FSx for Lustre (retained)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3_deployment
from constructs import Construct

from hyperpod_tenancy.constructs._private.buckets import private_bucket
from hyperpod_tenancy.constructs.cluster.build import ClusterBuckets, ClusterBuild
from hyperpod_tenancy.constructs.encryption import PlatformKey

__all__ = ["bucket", "create_buckets", "create_file_system"]

_LIFECYCLE_ASSETS = Path(__file__).parent.parent / "assets" / "lifecycle"


def bucket(
    storage: Construct, id: str, *, access_logs: s3.IBucket | None, key: PlatformKey | None = None
) -> s3.Bucket:
    """Create one of the platform's buckets in ``storage``: private, encrypted, versioned, logged, retained."""
    return private_bucket(
        storage, id, access_logs=access_logs, key=key.use("AWS::S3::Bucket") if key else None
    )


def create_buckets(shared: ClusterBuild) -> ClusterBuckets:
    """Create the access-log, data and lifecycle buckets, and upload the lifecycle scripts."""
    storage = Construct(shared, "Storage")
    # log delivery through a bucket policy, not the legacy AccessControl ACL
    storage.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
    access_logs = bucket(storage, "AccessLogs", access_logs=None)
    # the team data bucket uses the platform key; the access-log target bucket must keep SSE-S3
    # (https://docs.aws.amazon.com/AmazonS3/latest/userguide/enable-server-access-logging.html)
    data = bucket(storage, "DataBucket", access_logs=access_logs, key=shared.platform_key)
    lifecycle = bucket(storage, "LifecycleBucket", access_logs=access_logs)
    upload = s3_deployment.BucketDeployment(
        shared,
        "LifecycleScripts",
        sources=[s3_deployment.Source.asset(str(_LIFECYCLE_ASSETS))],
        destination_bucket=lifecycle,
        destination_key_prefix="lifecycle",
        prune=True,
    )
    return ClusterBuckets(
        storage=storage, access_logs=access_logs, data=data, lifecycle=lifecycle, upload=upload
    )


def create_file_system(shared: ClusterBuild) -> fsx.CfnFileSystem:
    """Create the FSx for Lustre file system the teams share (retained)."""
    spec = shared.platform.cluster.fsx
    first_group = shared.platform.cluster.instance_groups[0]
    lustre: dict[str, Any] = {
        "deployment_type": spec.deployment_type,
        "data_compression_type": "LZ4",
    }
    if spec.deployment_type.startswith("PERSISTENT"):
        lustre["per_unit_storage_throughput"] = spec.per_unit_storage_throughput
    file_system = fsx.CfnFileSystem(
        shared,
        "FileSystem",
        file_system_type="LUSTRE",
        file_system_type_version="2.15",
        storage_capacity=spec.storage_capacity_gib,
        subnet_ids=[shared.subnet_for(first_group).subnet_id],
        security_group_ids=[shared.security_group.security_group_id],
        lustre_configuration=fsx.CfnFileSystem.LustreConfigurationProperty(**lustre),
        # PERSISTENT_1/2 take a customer-managed key (HPT-KMS-KEY refuses SCRATCH with one)
        kms_key_id=shared.platform_key.use("AWS::FSx::FileSystem").key_arn if shared.platform_key else None,
    )
    file_system.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    return file_system
