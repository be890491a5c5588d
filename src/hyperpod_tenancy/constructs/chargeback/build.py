"""What the builders of the chargeback pipeline read on the pipeline construct they build it for."""

from __future__ import annotations

from aws_cdk import aws_athena as athena
from aws_cdk import aws_glue as glue
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns
from constructs import Construct

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster

__all__ = ["PipelineBuild"]


class PipelineBuild(Construct):
    """The chargeback pipeline as its builders (the ``pipeline_*`` modules) see it: the parts built before them.

    :class:`~hyperpod_tenancy.constructs.chargeback.chargeback_pipeline.ChargebackPipeline` extends it; its constructor sets
    each part, in the order the builders need them.
    """

    #: The cluster the pipeline bills.
    cluster: IHyperPodCluster
    #: The cluster's name, which names every resource of the pipeline.
    _name: str
    #: The chargeback configuration of record.
    config: model.ChargebackConfig
    #: The report bucket (raw data, reports, the CUR export, Athena results; retained on delete).
    bucket: s3.Bucket
    #: Its access-log bucket.
    access_logs_bucket: s3.Bucket
    #: The Glue database of the collectors' and the CUR's tables.
    database: glue.CfnDatabase
    #: Its tables, by name.
    tables: dict[str, glue.CfnTable]
    #: The Athena workgroup of the monthly queries.
    workgroup: athena.CfnWorkGroup
    #: The platform's notification topic.
    topic: sns.Topic
    #: The node inventory's function.
    node_inventory: lambda_.Function
    #: The eviction collector's function.
    eviction_collector: lambda_.Function
    #: The monthly job's function.
    job: lambda_.Function

    @property
    def export_name(self) -> str:
        """Name of the CUR 2.0 export."""
        raise NotImplementedError

    @property
    def topic_name(self) -> str:
        """Name of the platform's topic."""
        raise NotImplementedError

    @property
    def team_records_path(self) -> str:
        """SSM path of the teams' chargeback records."""
        raise NotImplementedError

    @property
    def platform_config(self) -> model.ChargebackConfig:
        """The configuration the monthly job's asset carries."""
        raise NotImplementedError
