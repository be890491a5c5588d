"""The remote-write client, against a real Prometheus receiver (``--web.enable-remote-write-receiver``).

What the eviction collector writes must be what Prometheus (and Amazon Managed Prometheus, which speaks the same
protocol) stores: each series is written, then read back through the query API with its labels and value.
Label values of 1, 100, 1,000 and 70,000 bytes cross every Snappy literal length form (the tag alone, one,
two length bytes, and a second literal); a signed request carries the SigV4 scope of ``aps``.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.credentials import Credentials
from kube_api_server import ServedOnThread
from prometheus_server import query, running_prometheus

from hyperpod_tenancy.runtime.remote_write import Series, push, snappy_literal_block


@pytest.fixture(scope="module")
def receiver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus accepting remote writes; yields its base URL."""
    with running_prometheus(
        tmp_path_factory.mktemp("receiver"), {"global": {}}, "--web.enable-remote-write-receiver"
    ) as base:
        yield base


@pytest.mark.parametrize("length", [1, 100, 1000, 70_000])
def test_what_is_written_is_what_prometheus_stores(receiver: str, length: int) -> None:
    now = int(time.time() * 1000)
    series = [
        Series(
            "hyperpod_tenancy_test_gauge",
            3.5,
            now,
            {"team": "research", "detail": "x" * length, "run": f"{length}"},
        ),
        Series("hyperpod_tenancy_test_gauge", 0, now, {"team": "vision", "detail": "y", "run": f"{length}"}),
    ]
    assert push(f"{receiver}/api/v1/write", series, region="us-east-1") == 204
    found = {
        r["metric"]["team"]: r for r in query(receiver, f'hyperpod_tenancy_test_gauge{{run="{length}"}}')
    }
    assert set(found) == {"research", "vision"}
    assert found["research"]["metric"] == {
        "__name__": "hyperpod_tenancy_test_gauge",
        "team": "research",
        "detail": "x" * length,
        "run": f"{length}",
    }
    assert float(found["research"]["value"][1]) == 3.5 and float(found["vision"]["value"][1]) == 0


def test_a_malformed_write_is_refused_by_the_receiver(receiver: str) -> None:
    """The receiver decodes what it is sent: bytes that are not Snappy are refused, so the test above means it."""
    request = urllib.request.Request(
        f"{receiver}/api/v1/write",
        data=b"\xff\xff\xff\xff\xff\x00not snappy",
        headers={"Content-Encoding": "snappy", "Content-Type": "application/x-protobuf"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400


def test_the_snappy_block_states_its_length_first() -> None:
    assert snappy_literal_block(b"") == b"\x00"
    assert snappy_literal_block(b"abc") == b"\x03" + bytes([2 << 2]) + b"abc"


class _Recorder(ServedOnThread):
    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        headers = self.headers

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                headers.append(dict(self.headers))
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)


def test_a_signed_write_carries_the_aps_scope_and_the_protocol_headers() -> None:
    with _Recorder() as recorder:
        credentials = Credentials("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        push(
            f"{recorder.url}/workspaces/ws-1/api/v1/remote_write",
            [Series("g", 1, 0)],
            region="eu-west-1",
            credentials=credentials,
        )
    (headers,) = recorder.headers
    assert "/eu-west-1/aps/aws4_request" in headers["Authorization"]
    assert headers["Content-Encoding"] == "snappy"
    assert headers["Content-Type"] == "application/x-protobuf"
    assert headers["X-Prometheus-Remote-Write-Version"] == "0.1.0"
