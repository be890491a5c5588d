"""The Studio application lookup run for real: aws-cdk-lib's ``AwsCustomResource`` handler, as synthesized.

The Identity Center stack reads the domain's application ARN with the handler aws-cdk-lib ships (the asset of the
stack's function), configured by the stack's ``Custom::AWS`` properties. Here that handler runs under Node with
the AWS SDK packages the Lambda runtime provides (pinned in ``package.json``), against a moto server that holds
the cluster account's parameter, and answers CloudFormation over HTTPS: the synthesized call must name a service,
an action and an output path the handler understands, and reach the parameter by assuming the reader role in the
other account.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import boto3
import pytest
from kube_pki import CertificateAuthority
from moto_server import moto_server, reset
from synth import Synth
from team_accounts import resources

from hyperpod_tenancy.policy import names

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = "111122223333"
IDENTITY_STACK = "ml-platform-org-Team-Research-Identity"
RECORD = names.studio_application_record("shared-gpu", "research")
APPLICATION = f"arn:aws:sso::{WORKLOADS}:application/ssoins-1111222233334444/apl-0123456789abcdef"


def _joined(value: Any) -> Any:
    """``value`` with ``Fn::Join`` joined and the partition as ``aws``."""
    if isinstance(value, dict):
        if value == {"Ref": "AWS::Partition"}:
            return "aws"
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(_joined(p) for p in parts)
        return {k: _joined(v) for k, v in value.items()}
    return value


class _Responses(http.server.BaseHTTPRequestHandler):
    """CloudFormation's pre-signed response URL: keeps each PUT body."""

    received: ClassVar[list[dict[str, Any]]] = []

    def do_PUT(self) -> None:
        length = int(self.headers["content-length"])
        self.received.append(json.loads(self.rfile.read(length)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def response_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """An HTTPS server on loopback standing for the response URL; yields its port and the CA node must trust."""
    ca = CertificateAuthority(tmp_path_factory.mktemp("response-pki"))
    pair = ca.server("response", common_name="127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Responses)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pair.cert, pair.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1], ca.cert
    finally:
        server.shutdown()


def _handler(synth: Synth) -> Path:
    """The ``index.js`` of the asset the Identity Center stack's lookup function runs."""
    (function,) = resources(synth.templates[IDENTITY_STACK], "AWS::Lambda::Function").values()
    digest = function["Code"]["S3Key"].removesuffix(".zip")
    assert synth.outdir is not None
    (found,) = synth.outdir.rglob(f"asset.{digest}/index.js")
    return found


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


def _run(synth: Synth, request: str, port: int, ca: Path, endpoint: str) -> dict[str, Any]:
    """Invoke the handler with the synthesized properties for ``request``; return what it answered CloudFormation."""
    identity = synth.templates[IDENTITY_STACK]
    (lookup,) = resources(identity, "Custom::AWS").values()
    properties = {k: _joined(v) for k, v in lookup.items() if k != "ServiceToken"}
    event = {
        "RequestType": request,
        "ResponseURL": f"https://127.0.0.1:{port}/response",
        "StackId": f"arn:aws:cloudformation:us-east-1:999988887777:stack/{IDENTITY_STACK}/1",
        "RequestId": f"{request}-1",
        "LogicalResourceId": "StudioApplication",
        "ResourceType": "Custom::AWS",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:999988887777:function:lookup",
            **properties,
        },
        **(
            {"PhysicalResourceId": "previous", "OldResourceProperties": properties}
            if request == "Update"
            else {}
        ),
    }
    # the handler PUTs its answer with the URL's host and path only (a pre-signed S3 URL is on 443): send it to
    # the local server's port
    script = (
        "const https = require('https'); const put = https.request;"
        f"https.request = (options, callback) => put({{...options, port: {port}}}, callback);"
        f"require({json.dumps(str(_handler(synth)))}).handler({json.dumps(event)},"
        "{functionName: 'lookup', logStreamName: 'test', getRemainingTimeInMillis: () => 60000})"
        ".catch((e) => { console.error(e); process.exit(1); });"
    )
    env = {
        **os.environ,
        "NODE_PATH": str(REPO / "node_modules"),
        "NODE_EXTRA_CA_CERTS": str(ca),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
    }
    _Responses.received.clear()
    node = shutil.which("node")
    assert node is not None, "node: run make test-setup"
    done = subprocess.run(
        [node, "-e", script], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    (answer,) = _Responses.received
    return answer


def test_the_sdk_packages_the_handler_loads_are_installed() -> None:
    for package in ("client-ssm", "credential-providers"):
        assert (REPO / "node_modules" / "@aws-sdk" / package / "package.json").is_file(), (
            "run make test-setup"
        )


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_the_handler_reads_the_application_arn_through_the_reader_role(
    identity_center_example: Synth, response_server: tuple[int, Path], request_type: str
) -> None:
    port, ca = response_server
    with moto_server() as endpoint:
        reset(endpoint)
        _cluster_account_ssm().put_parameter(Name=RECORD, Value=APPLICATION, Type="String")
        answer = _run(identity_center_example, request_type, port, ca, endpoint)
    assert answer["Status"] == "SUCCESS", answer
    # the value the assignment's ApplicationArn reads (Fn::GetAtt <lookup>.Parameter.Value), and nothing else
    assert answer["Data"] == {"Parameter.Value": APPLICATION}
    assert answer["PhysicalResourceId"].startswith(f"{WORKLOADS}:{RECORD}:")


def test_before_the_team_stack_the_lookup_fails_and_says_why(
    identity_center_example: Synth, response_server: tuple[int, Path]
) -> None:
    """Without the team stack's parameter (the stack dependency ignored) the deploy fails on the lookup."""
    port, ca = response_server
    with moto_server() as endpoint:
        reset(endpoint)
        answer = _run(identity_center_example, "Create", port, ca, endpoint)
    assert answer["Status"] == "FAILED"
    assert answer["Reason"] == f"Parameter {RECORD} not found.", answer
