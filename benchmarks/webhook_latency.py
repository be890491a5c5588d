"""Benchmark: the POSIX identity webhook's latency over TLS on loopback at a fixed arrival rate.

Starts DynamoDB (moto in server mode) and one ``hyperpod-tenancy webhook serve`` process (one replica), then
drives ``POST /mutate`` from an open-loop load generator (asyncio on uvloop, persistent TLS connections, one
request in flight per connection, new connections when all are busy): request ``i`` is due at
``start + i / rate`` and its latency is measured from that due time to the last byte of the answer, so a slow
server cannot hide its queueing (no coordinated omission). Two phases:

* **cached**: a pool of people whose UIDs are allocated beforehand; bodies vary over every workload kind of the
  table, the people, names, replica counts and queue labels (present or absent);
* **first-time allocations**: every request comes from a new person (a DynamoDB read, a counter read and a
  conditional transaction on moto, which serves one request at a time).

Prints, per phase, the rate asked and achieved (requests sent per second of the phase), throughput (answers
per second), p50/p90/p99/p99.9/max latency and the errors (anything but 200 with ``allowed: true``).

    .venv/bin/python benchmarks/webhook_latency.py [--duration 60] [--rate 1000]
        [--alloc-duration 20] [--alloc-rate 20] [--people 200]

Target on the 2-core reference machine (generator on the same machine): cached p99 <= 5 ms at >= 1000
requests/s, zero errors.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import uvloop

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from moto_server import moto_server  # noqa: E402
from webhook_server import (  # noqa: E402
    WebhookProcess,
    certificates,
    create_table,
    free_port,
    review,
    sso_user,
    webhook_config,
    workload,
)

from hyperpod_tenancy.k8s import workloads  # noqa: E402
from hyperpod_tenancy.policy import names  # noqa: E402

#: A moto server answering one request at a time (see ``webhook_server.serial_moto_server``), in its own process
#: so that it does not share the load generator's interpreter lock.
_SERIAL_MOTO = (
    "import sys; from werkzeug.serving import make_server; "
    "from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app; "
    "make_server('127.0.0.1', int(sys.argv[1]), DomainDispatcherApplication(create_backend_app), threaded=False, "
    "request_handler=MotoRequestHandler).serve_forever()"
)


@contextlib.contextmanager
def moto_process() -> Iterator[str]:
    """The moto test environment (fake credentials, no config files) with the endpoint on a serial moto process."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-c", _SERIAL_MOTO, str(port)], stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        with moto_server(), pytest.MonkeyPatch.context() as mp:
            mp.setenv("AWS_ENDPOINT_URL", url)
            for _ in range(100):
                try:
                    urllib.request.urlopen(f"{url}/moto-api/", timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            yield url
    finally:
        proc.terminate()
        proc.wait()


@dataclass
class Phase:
    """What one phase measured."""

    name: str
    rate: float
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    sent: int = 0
    first_send: float = 0.0
    last_send: float = 0.0
    finished: float = 0.0
    started: float = 0.0

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1

    def report(self) -> list[str]:
        lat = sorted(self.latencies)

        def pct(p: float) -> float:
            return lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1000 if lat else float("nan")

        span = max(self.last_send - self.first_send, 1e-9)
        return [
            f"{self.name}: asked {self.rate:.0f} req/s, achieved {(self.sent - 1) / span:.1f} req/s over "
            f"{span:.1f} s; throughput {len(lat) / max(self.finished - self.started, 1e-9):.1f} answers/s",
            f"  latency ms: p50 {pct(50):.2f}  p90 {pct(90):.2f}  p99 {pct(99):.2f}  p99.9 {pct(99.9):.2f}  "
            f"max {lat[-1] * 1000 if lat else float('nan'):.2f}  (n={len(lat)})",
            f"  errors: {sum(self.errors.values())} {self.errors or ''}",
        ]


def _bodies(people: list[str], count: int, rng: random.Random) -> list[bytes]:
    """``count`` HTTP requests of varied AdmissionReview bodies (every kind, the given people, names, replicas, queue labels)."""
    bodies = []
    kinds = workloads.WORKLOAD_KINDS
    for i in range(count):
        kind = kinds[i % len(kinds)]
        team = "inference" if kind.kind in ("Deployment", "StatefulSet") else "research"
        labels = {"kueue.x-k8s.io/priority-class": "training-priority"}
        if rng.random() < 0.5:
            labels["kueue.x-k8s.io/queue-name"] = names.local_queue(team)
        obj = workload(kind, team, labels=labels, name=f"run-{rng.randrange(10**6)}")
        if "replicas" in obj.get("spec", {}):
            obj["spec"]["replicas"] = rng.randint(1, 16)
        doc = review(obj, user=sso_user(people[i % len(people)], team))
        bodies.append(_request(json.dumps(doc).encode()))
    return bodies


def _request(body: bytes) -> bytes:
    head = (
        "POST /mutate?timeout=10s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Accept: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Pool:
    """Persistent TLS connections, one request in flight on each."""

    def __init__(self, port: int, context: ssl.SSLContext) -> None:
        self.port = port
        self.context = context
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def send(self, payload: bytes) -> tuple[int, bytes]:
        """Send one request; a pooled connection the server closed meanwhile is replaced once (as HTTP clients do)."""
        while self.idle:
            try:
                return await self._exchange(self.idle.pop(), payload)
            except (asyncio.IncompleteReadError, ConnectionError):
                continue  # the server closed the idle connection: take another
        conn = await asyncio.open_connection("127.0.0.1", self.port, ssl=self.context)
        return await self._exchange(conn, payload)

    async def _exchange(
        self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], payload: bytes
    ) -> tuple[int, bytes]:
        reader, writer = conn
        writer.write(payload)
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        body = await reader.readexactly(length)
        if b"connection: close" in head.lower():
            writer.close()
        else:
            self.idle.append(conn)
        return status, body


async def _drive(pool: Pool, phase: Phase, payloads: list[bytes], duration: float) -> None:
    total = int(duration * phase.rate)
    pending: set[asyncio.Task[None]] = set()

    async def one(payload: bytes, due: float) -> None:
        try:
            status, body = await pool.send(payload)
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            phase.error(type(exc).__name__)
            return
        done = time.perf_counter()
        if status != 200:
            phase.error(f"http-{status}")
        elif b'"allowed":true' not in body:
            phase.error("denied")
        else:
            phase.latencies.append(done - due)

    # perf_counter, not loop.time(): uvloop's clock has millisecond resolution
    phase.started = start = time.perf_counter() + 0.05
    for i in range(total):
        due = start + i / phase.rate
        delay = due - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        now = time.perf_counter()
        if i == 0:
            phase.first_send = now
        phase.last_send = now
        phase.sent += 1
        task = asyncio.create_task(one(payloads[i % len(payloads)], due))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)
    phase.finished = time.perf_counter()


async def _run(port: int, ca: Path, args: argparse.Namespace) -> list[Phase]:
    context = ssl.create_default_context(cafile=str(ca))
    pool = Pool(port, context)
    rng = random.Random(11)
    people = [f"bench-{i:04d}@example.com" for i in range(args.people)]
    warm = Phase("warm-up (allocates the pool's UIDs)", rate=50)
    await _drive(pool, warm, _bodies(people, args.people, rng), args.people / warm.rate)
    cached = Phase("cached identities", rate=args.rate)
    await _drive(pool, cached, _bodies(people, 4000, rng), args.duration)
    fresh_people = [f"new-{i:06d}@example.com" for i in range(int(args.alloc_rate * args.alloc_duration) + 1)]
    fresh = Phase("first-time allocations", rate=args.alloc_rate)
    await _drive(pool, fresh, _bodies(fresh_people, len(fresh_people), rng), args.alloc_duration)
    return [cached, fresh]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=60, help="seconds of the cached phase (default 60)")
    parser.add_argument(
        "--rate", type=float, default=1000, help="requests/s of the cached phase (default 1000)"
    )
    parser.add_argument("--alloc-duration", type=float, default=20, help="seconds of the allocation phase")
    parser.add_argument("--alloc-rate", type=float, default=20, help="requests/s of the allocation phase")
    parser.add_argument("--people", type=int, default=200, help="people in the cached pool (default 200)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp, moto_process():
        directory = Path(tmp)
        certs = certificates(directory)
        config = directory / "teams.json"
        config.write_text(json.dumps(webhook_config()))
        with WebhookProcess(certs=certs, table=create_table(), config_path=config) as server:
            begin = time.monotonic()
            phases = uvloop.run(_run(server.port, certs.ca, args))
            elapsed = time.monotonic() - begin
    for phase in phases:
        print("\n".join(phase.report()))
    load = os.getloadavg()
    print(f"wall {elapsed:.1f} s; load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
