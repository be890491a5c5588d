"""A moto server on loopback for tests of code that calls AWS (never boto3 patching).

:func:`moto_server` starts ``moto.server.ThreadedMotoServer`` on 127.0.0.1 and points boto3's default
session at it through environment variables (fake credentials, no config files, ``AWS_ENDPOINT_URL``), so
the code under test makes real HTTP calls; :func:`reset` gives a test a fresh account state.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import threading
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Run a moto server and point boto3 at it; yields its URL.

    boto3's default session keeps what it read when it was made (configuration, credentials, the clients'
    endpoint resolution, handlers another library registered on it): each server starts and ends with a fresh
    one, so a module never calls AWS through what an earlier module left in the process.
    """
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    url = f"http://{host}:{port}"
    boto3.DEFAULT_SESSION = None
    try:
        with pytest.MonkeyPatch.context() as mp:
            for var in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_IAM"):
                mp.delenv(var, raising=False)
            mp.setenv("AWS_ACCESS_KEY_ID", "testing")
            mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
            mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
            mp.setenv("AWS_CONFIG_FILE", os.devnull)
            mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
            mp.setenv("AWS_ENDPOINT_URL", url)
            yield url
    finally:
        boto3.DEFAULT_SESSION = None
        server.stop()


def reset(url: str) -> None:
    """Drop every resource the server holds (a fresh account for the next test)."""
    with urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST")):
        pass


class _RefusingSts(http.server.BaseHTTPRequestHandler):
    """STS answering every request as it answers an AssumeRole the role's trust policy does not allow."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = (
            b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type>'
            b"<Code>AccessDenied</Code><Message>User is not authorized to perform: sts:AssumeRole</Message>"
            b"</Error><RequestId>1</RequestId></ErrorResponse>"
        )
        self.send_response(403)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        """Keep the test output quiet."""


@contextlib.contextmanager
def refusing_sts() -> Iterator[str]:
    """An STS endpoint on loopback refusing every request as STS refuses an AssumeRole the trust does not allow.

    moto grants every ``AssumeRole``; a refusal is what the code under test must turn into its own error.
    """
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _RefusingSts)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
