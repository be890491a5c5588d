"""Write gauges into an Amazon Managed Prometheus workspace with Prometheus' remote-write protocol (1.0).

The platform's own signals that no exporter in the cluster serves (the checkpoint scanners' findings, which
the eviction collector reads from the Workloads) become series of the workspace, so the same rule groups that
alert on Kueue's metrics alert on them too, and the alert manager routes them to the same topic.

Protocol (Prometheus "Remote-Write 1.0" specification): an HTTP ``POST`` of a ``prometheus.WriteRequest``
protobuf message (``repeated TimeSeries timeseries = 1``; ``TimeSeries``: ``repeated Label labels = 1``,
``repeated Sample samples = 2``; ``Label``: ``string name = 1``, ``string value = 2``; ``Sample``:
``double value = 1``, ``int64 timestamp = 2`` in milliseconds), compressed with Snappy's block format, with the
headers ``Content-Encoding: snappy``, ``Content-Type: application/x-protobuf`` and
``X-Prometheus-Remote-Write-Version: 0.1.0``; labels sorted by name, ``__name__`` among them. Amazon Managed
Prometheus takes it at ``/workspaces/<id>/api/v1/remote_write``, signed with SigV4 for the service ``aps``
(AMP User Guide, "Ingest metrics": the ``RemoteWrite`` API, permission ``aps:RemoteWrite``).

Only the standard library and botocore are imported (the Lambda runtime has both). The protobuf is encoded by
hand (four message types, fields of three wire types) and the Snappy block holds literals only: a valid Snappy
stream that any decoder reads (Snappy "format_description.txt": a preamble with the uncompressed length as a
varint, then elements; a literal's tag is ``(length - 1) << 2`` below 61 bytes, else ``60 + k`` followed by the
length minus one in ``k`` little-endian bytes). Gauges are a few hundred bytes a run, so compressing them would
save nothing worth a dependency.
"""

from __future__ import annotations

import struct
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

__all__ = ["Series", "encode_write_request", "push", "snappy_literal_block"]


@dataclass(frozen=True)
class Series:
    """One sample of one series: the metric ``name``, its ``labels`` and ``value`` at ``timestamp_ms``."""

    name: str
    value: float
    timestamp_ms: int
    labels: Mapping[str, str] = field(default_factory=dict)


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        byte = number & 0x7F
        number >>= 7
        if number:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    """Return a length-delimited field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def encode_write_request(series: Sequence[Series]) -> bytes:
    """Return the ``WriteRequest`` protobuf of ``series``, one sample each, labels sorted by name."""
    message = bytearray()
    for one in series:
        labels = {**one.labels, "__name__": one.name}
        body = bytearray()
        for name in sorted(labels):
            body += _field(1, _field(1, name.encode()) + _field(2, labels[name].encode()))
        sample = (
            _varint(1 << 3 | 1)
            + struct.pack("<d", one.value)
            + _varint(2 << 3 | 0)
            + _varint(one.timestamp_ms)
        )
        body += _field(2, sample)
        message += _field(1, bytes(body))
    return bytes(message)


def snappy_literal_block(data: bytes) -> bytes:
    """Return ``data`` as a Snappy block of literals (valid Snappy that any decoder reads; no compression)."""
    out = bytearray(_varint(len(data)))
    for start in range(0, len(data), 65536):
        chunk = data[start : start + 65536]
        size = len(chunk) - 1
        if size < 60:
            out.append(size << 2)
        elif size < 256:
            out += bytes([60 << 2, size])
        else:
            out += bytes([61 << 2]) + size.to_bytes(2, "little")
        out += chunk
    return bytes(out)


def push(url: str, series: Sequence[Series], *, region: str, credentials: Any = None) -> int:
    """POST ``series`` to the remote-write ``url``, SigV4-signed for ``aps`` when ``credentials`` are given.

    Args:
        url: the workspace's remote-write endpoint (``…/workspaces/<id>/api/v1/remote_write``).
        series: the samples to write.
        region: the workspace's Region (the signature's scope).
        credentials: botocore credentials to sign with (``None``: unsigned, for a receiver that needs none).

    Returns:
        The HTTP status (2xx); a refused write raises ``urllib.error.HTTPError`` with the receiver's answer.

    """
    body = snappy_literal_block(encode_write_request(series))
    headers = {
        "Content-Encoding": "snappy",
        "Content-Type": "application/x-protobuf",
        "X-Prometheus-Remote-Write-Version": "0.1.0",
    }
    if credentials is not None:
        request = AWSRequest(method="POST", url=url, data=body, headers=headers)
        SigV4Auth(credentials, "aps", region).add_auth(request)
        headers = dict(request.headers)
    sent = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(sent, timeout=20) as answer:
        return int(answer.status)
