"""aws-cdk-lib's ``AwsCustomResource`` handler run for real: the asset a stack synthesizes, under Node.

The handler runs with the AWS SDK packages the Lambda runtime provides (pinned in ``package.json``), configured by
the stack's ``Custom::AWS`` properties, against a moto server, and answers CloudFormation over HTTPS to a loopback
server standing for the pre-signed response URL.
"""

from __future__ import annotations

import http.server
import json
import os
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from kube_pki import CertificateAuthority
from synth import Synth
from team_accounts import resources

REPO = Path(__file__).resolve().parents[2]


def joined(value: Any) -> Any:
    """``value`` with ``Fn::Join`` joined and the partition as ``aws``."""
    if isinstance(value, dict):
        if value == {"Ref": "AWS::Partition"}:
            return "aws"
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(joined(p) for p in parts)
        return {k: joined(v) for k, v in value.items()}
    if isinstance(value, list):
        return [joined(v) for v in value]
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


@contextmanager
def response_server(directory: Path) -> Iterator[tuple[int, Path]]:
    """An HTTPS server on loopback standing for the response URL; yields its port and the CA node must trust."""
    ca = CertificateAuthority(directory)
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


def _handler(synth: Synth, stack: str) -> Path:
    """The ``index.js`` of the asset the stack's ``AwsCustomResource`` function runs."""
    (function,) = resources(synth.templates[stack], "AWS::Lambda::Function").values()
    digest = function["Code"]["S3Key"].removesuffix(".zip")
    assert synth.outdir is not None
    (found,) = synth.outdir.rglob(f"asset.{digest}/index.js")
    return found


def run_handler(
    synth: Synth,
    stack: str,
    request: str,
    *,
    server: tuple[int, Path],
    endpoint: str,
    environment: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Invoke the stack's one ``Custom::AWS`` for ``request`` with its synthesized properties; return the answer."""
    port, ca = server
    ((logical_id, lookup),) = resources(synth.templates[stack], "Custom::AWS").items()
    properties = {k: joined(v) for k, v in lookup.items() if k != "ServiceToken"}
    event = {
        "RequestType": request,
        "ResponseURL": f"https://127.0.0.1:{port}/response",
        "StackId": f"arn:aws:cloudformation:us-east-1:123456789012:stack/{stack}/1",
        "RequestId": f"{request}-1",
        "LogicalResourceId": logical_id,
        "ResourceType": "Custom::AWS",
        "ResourceProperties": {
            "ServiceToken": "arn:aws:lambda:us-east-1:123456789012:function:lookup",
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
        f"require({json.dumps(str(_handler(synth, stack)))}).handler({json.dumps(event)},"
        "{functionName: 'lookup', logStreamName: 'test', getRemainingTimeInMillis: () => 60000})"
        ".catch((e) => { console.error(e); process.exit(1); });"
    )
    env = {
        **os.environ,
        "NODE_PATH": str(REPO / "node_modules"),
        "NODE_EXTRA_CA_CERTS": str(ca),
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        **(environment or {}),
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
