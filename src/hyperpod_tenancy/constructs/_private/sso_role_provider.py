"""One custom-resource provider resolving Identity Center roles, shared by every team of a cluster.

Each ``Custom::SsoRoleArn`` (one per team, in the team's stack) calls this provider's service token. Before,
every team stack carried its own provider: two handler functions, the provider framework's three functions,
its waiter state machine and their log groups, all identical. One provider in the cluster's stack (or beside
an imported cluster) serves every team stack of the account and region, which removes five functions and six
log groups per team and shortens synthesis.

The handlers read each resource's ``TimeoutSeconds`` (``runtime/sso_role_resolver.py``), so every team keeps its
own wait; the provider framework's overall timeout is fixed at :data:`MAX_SSO_ROLE_TIMEOUT` plus headroom.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_cdk_handlers,
    acknowledge_role,
    skip_handler_checks,
)
from hyperpod_tenancy.policy import names

__all__ = ["MAX_SSO_ROLE_TIMEOUT", "SsoRoleProvider"]

_RUNTIME = Path(__file__).resolve().parent.parent.parent / "runtime"
#: Longest ``sso_role_timeout`` a team may ask for: the shared provider framework gives up after it (plus 5 min).
MAX_SSO_ROLE_TIMEOUT = cdk.Duration.hours(1)
_QUERY_INTERVAL = 20


class SsoRoleProvider(Construct):
    """The ``custom_resources.Provider`` of every ``Custom::SsoRoleArn`` of a cluster.

    Args:
        scope: where the provider lives (the cluster construct, or beside an imported cluster).
        id: construct ID.
        team_accounts: some team has an account of its own, where the poller assumes the team's lookup role
            (``hyperpod-tenancy-<cluster>-<team>-lookup``) to list roles. Default: ``False`` (it assumes nothing).

    Attributes:
        service_token: the provider's service token (``Custom::SsoRoleArn`` resources reference it).

    """

    def __init__(self, scope: Construct, id: str, *, team_accounts: bool = False) -> None:
        super().__init__(scope, id)
        code = lambda_.Code.from_asset(str(_RUNTIME), exclude=["__pycache__", "*.pyc"])
        common: dict[str, Any] = {
            "runtime": lambda_.Runtime.PYTHON_3_14,
            "code": code,
            "timeout": cdk.Duration.minutes(1),
        }
        on_event = lambda_.Function(
            self,
            "OnEvent",
            handler="sso_role_resolver.on_event",
            log_group=logs.LogGroup(self, "OnEventLogs", retention=logs.RetentionDays.ONE_MONTH),
            **common,
        )
        is_complete = lambda_.Function(
            self,
            "IsComplete",
            handler="sso_role_resolver.is_complete",
            log_group=logs.LogGroup(self, "IsCompleteLogs", retention=logs.RetentionDays.ONE_MONTH),
            **common,
        )
        # only the poller calls IAM; on_event just starts the clock
        is_complete.add_to_role_policy(iam.PolicyStatement(actions=["iam:ListRoles"], resources=["*"]))
        if team_accounts:
            # the teams' lookup roles, by their fixed name (their trust names this account)
            is_complete.add_to_role_policy(
                iam.PolicyStatement(
                    actions=["sts:AssumeRole"],
                    resources=[f"arn:{cdk.Aws.PARTITION}:iam::*:role/{names.OBJECT_PREFIX}*-lookup"],
                )
            )
        # the framework requires a total timeout divisible by the query interval; it stays longer than any
        # handler's own deadline, so the handler's explicit message is what CloudFormation shows
        total = -(-(int(MAX_SSO_ROLE_TIMEOUT.to_seconds()) + 300) // _QUERY_INTERVAL) * _QUERY_INTERVAL
        provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=on_event,
            is_complete_handler=is_complete,
            query_interval=cdk.Duration.seconds(_QUERY_INTERVAL),
            total_timeout=cdk.Duration.seconds(total),
        )
        #: Service token of the provider.
        self.service_token: str = provider.service_token
        for fn in (on_event, is_complete):
            if isinstance(fn.role, iam.Role):
                acknowledge_role(
                    fn.role,
                    managed_policies="AWSLambdaBasicExecutionRole only lets the handler write its own logs",
                    wildcards="iam:ListRoles supports no resource-level permissions; the handler lists roles "
                    "under /aws-reserved/sso.amazonaws.com/ only"
                    + (
                        ", in team accounts through their lookup roles, which may list and read roles and nothing else"
                        if team_accounts
                        else ""
                    ),
                )
            skip_handler_checks(fn, "this library's Identity Center role lookup, shared by every team")
        acknowledge_cdk_handlers(
            provider, "custom-resource provider framework created and maintained by aws-cdk-lib"
        )
        acknowledge(
            provider,
            ["AwsSolutions-SF1", "AwsSolutions-SF2"],
            "the provider framework's waiter state machine is created by aws-cdk-lib; the handlers log every call",
        )
