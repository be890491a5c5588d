"""The platform's buckets: one way to make a private, encrypted, versioned, logged and retained bucket."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

__all__ = ["private_bucket"]


def private_bucket(
    scope: Construct, id: str, *, access_logs: s3.IBucket | None, key: kms.IKey | None
) -> s3.Bucket:
    """Create a private bucket: public access blocked, SSL only, versioned, retained.

    SSE-KMS under ``key`` (with a bucket key) or SSE-S3; server access logs to ``access_logs`` under ``<id>/``.
    """
    return s3.Bucket(
        scope,
        id,
        encryption=s3.BucketEncryption.KMS if key else s3.BucketEncryption.S3_MANAGED,
        encryption_key=key,
        bucket_key_enabled=True if key else None,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        enforce_ssl=True,
        versioned=True,
        removal_policy=cdk.RemovalPolicy.RETAIN,
        server_access_logs_bucket=access_logs,
        server_access_logs_prefix=f"{id.lower()}/" if access_logs else None,
    )
