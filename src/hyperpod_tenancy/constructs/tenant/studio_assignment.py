"""A team's Studio assignment made from the Identity Center account, when the domain lives in another account."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sso as sso
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge_aws_custom_resource_handler,
    acknowledge_role,
    skip_checkov,
)
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.policy.changes import studio_domain_create_only

__all__ = ["StudioAssignment", "assign_studio_from_identity_center", "lookup_log_group"]


@dataclass(frozen=True)
class StudioAssignment:
    """What :func:`assign_studio_from_identity_center` created in the Identity Center account."""

    #: Role the lookup runs as (fixed name: the reader role's trust names it).
    assigner_role: iam.Role
    #: Reads the domain's application ARN in the domain's account, through the team's reader role there.
    lookup: cr.AwsCustomResource
    #: The assignment of the team's group to the domain's application.
    assignment: sso.CfnApplicationAssignment


def lookup_log_group(scope: Construct, id: str, holds: str) -> logs.LogGroup:
    """Create the log group of an ``AwsCustomResource`` lookup (a year), without a customer-managed key.

    ``holds`` says why no key is needed (checkov ``CKV_AWS_158``): where it is, and what it holds.
    """
    log_group = logs.LogGroup(scope, id, retention=logs.RetentionDays.ONE_YEAR)
    skip_checkov(log_group, "CKV_AWS_158", f"{holds}, encrypted by CloudWatch Logs' service-managed key")
    return log_group


def assign_studio_from_identity_center(
    scope: Construct, *, platform: Platform, team: Team
) -> StudioAssignment:
    """Assign the team's group to its Studio domain's application, from the Identity Center account.

    The domain, in the cluster's account or the team's own, publishes its application ARN in an SSM parameter that only its reader
    role may read (``constructs/tenant/studio.py``); this stack, deployed after the team stack, reads it through
    that role with the ``AwsCustomResource`` of aws-cdk-lib and assigns the group. What crosses the account line
    is the parameter's name and the two roles' names, all known at synthesis.
    """
    cluster = platform.cluster.name
    partition = cdk.Aws.PARTITION
    # the domain lives with the team: in the cluster's account, or in the team's own
    domain_account = platform.team_account(team)
    reader = names.role_arn(
        partition=partition, account=domain_account, name=names.team_studio_reader_role(cluster, team.name)
    )
    record = names.studio_application_record(cluster, team.name)
    # a change that replaces the domain changes the lookup's physical ID, so CloudFormation updates it: the ARN is
    # read again and the assignment follows the new application
    inputs = json.dumps(studio_domain_create_only(platform, team), sort_keys=True)
    revision = hashlib.sha256(inputs.encode()).hexdigest()[:16]
    role = iam.Role(
        scope,
        "StudioAssignerRole",
        role_name=names.team_studio_assigner_role(cluster, team.name),
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
        description=f"Reads the application ARN of team {team.name}'s Studio domain in {domain_account}",
        managed_policies=[
            iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaBasicExecutionRole")
        ],
    )
    role.add_to_policy(iam.PolicyStatement(actions=["sts:AssumeRole"], resources=[reader]))
    call = cr.AwsSdkCall(
        service="SSM",
        action="getParameter",
        parameters={"Name": record},
        region=platform.region,
        assumed_role_arn=reader,
        physical_resource_id=cr.PhysicalResourceId.of(f"{domain_account}:{record}:{revision}"),
        output_paths=["Parameter.Value"],
    )
    # the platform key is the cluster account's; what the lookup logs (the call and the application's ARN) is no
    # secret
    log_group = lookup_log_group(
        scope,
        "StudioApplicationLogs",
        "the lookup's log group is in the Identity Center account, which the platform key (cluster account) does "
        "not serve; it holds the lookup's calls and the application's ARN",
    )
    lookup = cr.AwsCustomResource(
        scope,
        "StudioApplication",
        on_create=call,
        on_update=call,
        role=role,
        install_latest_aws_sdk=False,
        log_group=log_group,
    )
    assignment = sso.CfnApplicationAssignment(
        scope,
        "StudioAssignment",
        application_arn=lookup.get_response_field("Parameter.Value"),
        principal_type="GROUP",
        principal_id=team.identity.group_id,
    )
    acknowledge_role(
        role,
        managed_policies="AWSLambdaBasicExecutionRole only lets the lookup write its own logs",
    )
    acknowledge_aws_custom_resource_handler(
        cdk.Stack.of(scope),
        "handler created and maintained by aws-cdk-lib (AwsCustomResource): its runtime is CDK's",
    )
    return StudioAssignment(assigner_role=role, lookup=lookup, assignment=assignment)
