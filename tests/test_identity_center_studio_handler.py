"""The Studio application lookup run for real: aws-cdk-lib's ``AwsCustomResource`` handler, as synthesized.

The Identity Center stack reads the domain's application ARN with the handler aws-cdk-lib ships (the asset of the
stack's function), configured by the stack's ``Custom::AWS`` properties. Here that handler runs under Node with
the AWS SDK packages the Lambda runtime provides (pinned in ``package.json``), against a moto server that holds
the cluster account's parameter, and answers CloudFormation over HTTPS: the synthesized call must name a service,
an action and an output path the handler understands, and reach the parameter by assuming the reader role in the
other account.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import pytest
from aws_custom_resource import REPO, run_handler
from moto_server import moto_server, reset
from synth import Synth

from hyperpod_tenancy.policy import names

WORKLOADS = "111122223333"
IDENTITY_STACK = "ml-platform-org-Team-Research-Identity"
RECORD = names.studio_application_record("shared-gpu", "research")
APPLICATION = f"arn:aws:sso::{WORKLOADS}:application/ssoins-1111222233334444/apl-0123456789abcdef"


def _cluster_account_ssm() -> Any:
    """An SSM client acting in the cluster's account (moto keeps one state per account, keyed by credentials)."""
    credentials = boto3.client("sts").assume_role(
        RoleArn=f"arn:aws:iam::{WORKLOADS}:role/test-setup", RoleSessionName="test-setup"
    )["Credentials"]
    return boto3.client(
        "ssm",
        region_name="us-east-1",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


def test_the_sdk_packages_the_handler_loads_are_installed() -> None:
    for package in ("client-ssm", "client-ec2", "credential-providers"):
        assert (REPO / "node_modules" / "@aws-sdk" / package / "package.json").is_file(), (
            "run make test-setup"
        )


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_the_handler_reads_the_application_arn_through_the_reader_role(
    identity_center_example: Synth, cfn_response_server: tuple[int, Path], request_type: str
) -> None:
    with moto_server() as endpoint:
        reset(endpoint)
        _cluster_account_ssm().put_parameter(Name=RECORD, Value=APPLICATION, Type="String")
        answer = run_handler(
            identity_center_example,
            IDENTITY_STACK,
            request_type,
            server=cfn_response_server,
            endpoint=endpoint,
        )
    assert answer["Status"] == "SUCCESS", answer
    # the value the assignment's ApplicationArn reads (Fn::GetAtt <lookup>.Parameter.Value), and nothing else
    assert answer["Data"] == {"Parameter.Value": APPLICATION}
    assert answer["PhysicalResourceId"].startswith(f"{WORKLOADS}:{RECORD}:")


def test_before_the_team_stack_the_lookup_fails_and_says_why(
    identity_center_example: Synth, cfn_response_server: tuple[int, Path]
) -> None:
    """Without the team stack's parameter (the stack dependency ignored) the deploy fails on the lookup."""
    with moto_server() as endpoint:
        reset(endpoint)
        answer = run_handler(
            identity_center_example, IDENTITY_STACK, "Create", server=cfn_response_server, endpoint=endpoint
        )
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == f"Parameter {RECORD} not found.", answer
