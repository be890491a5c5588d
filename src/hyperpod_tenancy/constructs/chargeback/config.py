"""The chargeback pipeline's configuration of record, from the construct's arguments and the cluster's policy; and the findings its resources are acknowledged for."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from decimal import Decimal

import aws_cdk as cdk
from aws_cdk import aws_iam as iam

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_aws_custom_resource_handler,
    acknowledge_role,
    skip_checkov,
)
from hyperpod_tenancy.constructs.chargeback.build import PipelineBuild
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.chargeback import (
    gpus_per_instance,
    max_checkpoint_minutes,
    partitioned_slices,
    team_configs,
)

__all__ = ["acknowledge_pipeline_findings", "pipeline_config"]


def pipeline_config(
    pipeline: PipelineBuild,
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
    """Return the pipeline's chargeback configuration: its terms, the cluster's teams and GPUs, prices, bounds."""
    platform = pipeline.cluster.platform
    if not idle_owner:
        raise TenancyError(
            f"{pipeline.node.path}: idle_owner is empty; name the cost center that pays for unallocated capacity, "
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
                f"{pipeline.node.path}: the billing term from {term.effective_from.isoformat()} does not start on "
                "the first day of a quarter; start it on January, April, July or October 1st, or give "
                "mid_quarter_reason (midQuarterReason in the policy), agreed with the cost-center owners."
            )
    dates = [t.effective_from for t in terms]
    if len(set(dates)) != len(dates):
        raise TenancyError(
            f"{pipeline.node.path}: two billing terms start on the same day ({sorted(dates)}); give each term its "
            "own effective_from."
        )
    teams = platform.hosted_teams
    unknown = sorted(set(cost_centers) - {t.name for t in teams})
    if unknown:
        raise TenancyError(
            f"{pipeline.node.path}: cost_centers names {unknown}, which are not teams of the cluster; use team names "
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
        partitioned_slices=partitioned_slices(platform),
    )


def acknowledge_pipeline_findings(pipeline: PipelineBuild) -> None:
    """Acknowledge the nag findings the pipeline's functions and roles are built to have, each with its reason."""
    for function in (pipeline.job, pipeline.node_inventory, pipeline.eviction_collector):
        role = function.role
        if isinstance(role, iam.Role):
            acknowledge_role(
                role,
                managed_policies="AWSLambdaBasicExecutionRole (and, for the node inventory and the eviction "
                "collector in the VPC, "
                "AWSLambdaVPCAccessExecutionRole) are the managed policies CDK attaches for the function's logs "
                "and network interfaces",
                wildcards="object wildcards are under one prefix of the report bucket (raw/, cur/, athena-results/, "
                "reports/, raw/node/, raw/eviction/ or raw/partition_usage/); the team records are the SSM parameters under "
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
        pipeline.job,
        "CKV_AWS_117",
        "calls AWS APIs only (S3, Athena, Glue, SNS, CloudWatch), nothing inside the VPC; the functions that reach "
        "the cluster's private API (the node inventory and the eviction collector) run in the VPC",
    )
    operator_role = getattr(pipeline, "operator_role", None)
    if isinstance(operator_role, iam.Role):
        acknowledge_role(
            operator_role, wildcards="the operator writes only objects under raw/ of the report bucket"
        )
    stack = cdk.Stack.of(pipeline)
    acknowledge_aws_custom_resource_handler(
        stack,
        "handler created and maintained by aws-cdk-lib (AwsCustomResource): its managed Lambda policy and runtime "
        "are CDK's",
    )
    tags = getattr(pipeline, "cost_allocation_tags", None)
    if tags is not None:
        acknowledge(
            tags,
            "AwsSolutions-IAM5[Resource::*]",
            "ce:UpdateCostAllocationTagsStatus supports no resource-level permissions",
        )
