"""The HTTPS server of the POSIX identity webhook: a bare ASGI app on uvicorn (uvloop event loop, httptools parser).

Endpoints:

``POST /mutate``
    An ``admission.k8s.io/v1`` AdmissionReview; answers 200 with the AdmissionReview response, or 400 with
    ``{"error": ...}`` for a body that is not a well-formed AdmissionReview or is larger than
    ``max_body_bytes`` (the limit is checked on ``Content-Length`` and while reading, so an oversize body is
    never buffered whole).
``POST /validate``
    The same, for the ValidatingWebhookConfiguration of requests that reach into a running pod (exec, attach,
    port-forward, proxy, ephemeral containers; :mod:`hyperpod_tenancy.webhook.connect`). Any other request
    posted here is allowed unchanged: a validating webhook never patches.
``GET /healthz``
    200 while the process serves (liveness).
``GET /metrics`` (on its own plain-HTTP port, ``--metrics-port``; 404 on this one)
    The Prometheus metrics of :mod:`hyperpod_tenancy.webhook.metrics`: requests by path and outcome, the
    admission latency histogram, denials by reason, DynamoDB calls, readiness and the team namespaces.
``GET /readyz``
    200 once the configuration is loaded (before the server starts), the team records were read once (with
    ``teamRecords``: :mod:`hyperpod_tenancy.webhook.team_records`) and DynamoDB has answered at least once
    (a read of the counter item at start-up, retried every :data:`READY_RETRY_SECONDS`, or any successful
    lookup); 503 before. It stays ready afterwards: when DynamoDB stops answering, each request gets a denial
    that says so, which tells users more than a webhook that is not there.

Each request writes one JSON line to stdout (time, method, path, status, milliseconds, and for admission the
request UID, operation, kind, namespace, username, person, UID, decision and reason; never credentials or the
object). SIGTERM stops accepting connections and lets requests in flight finish (uvicorn's graceful shutdown,
at most :data:`GRACEFUL_SHUTDOWN_SECONDS`). The certificate and key files are re-read when they change
(cert-manager renews the Secret mounted at ``/tls``), checked every :data:`CERT_RELOAD_SECONDS`.

Why this stack: see ``docs/posix-identity-server.md`` (uvicorn is the most used ASGI server, uvloop and
httptools are its C-accelerated loop and parser; the cached path is a few tens of microseconds of Python).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import os
import signal
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.webhook import connect, patch, uids
from hyperpod_tenancy.webhook.admission import (
    Admission,
    Decision,
    MalformedRequest,
    UidResolver,
    parse_review,
    review_response,
)
from hyperpod_tenancy.webhook.config import WebhookConfig
from hyperpod_tenancy.webhook.kube import KubeApi
from hyperpod_tenancy.webhook.metrics import MetricsPortUnavailable, MetricsServer, WebhookMetrics, outcome
from hyperpod_tenancy.webhook.namespace_coverage import REFRESH_SECONDS as COVERAGE_REFRESH_SECONDS
from hyperpod_tenancy.webhook.namespace_coverage import NamespaceCoverage
from hyperpod_tenancy.webhook.node_features import REFRESH_SECONDS, NodeFeatures
from hyperpod_tenancy.webhook.team_records import TeamDirectory
from hyperpod_tenancy.webhook.uids import UidCache, UidStoreUnavailable, UidTable

__all__ = [
    "ALLOCATION_DELAY_ENV",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_METRICS_PORT",
    "VALIDATE_PATH",
    "MetricsPortUnavailable",
    "ServeOptions",
    "WebhookApp",
    "build_app",
    "serve",
]

#: Largest request body accepted: an AdmissionReview carries ``object`` and ``oldObject``, each at most
#: etcd's 1.5 MiB request limit, as JSON; 6 MiB leaves room for both.
DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024
#: Path of the validating webhook (requests that reach into a running pod).
VALIDATE_PATH = "/validate"
#: Plain-HTTP port of ``GET /metrics`` (the Deployment's ``metrics`` container port).
DEFAULT_METRICS_PORT = posix_identity.METRICS_PORT
_ADMISSION_PATHS = ("/mutate", VALIDATE_PATH)
#: Seconds between DynamoDB checks until ``/readyz`` turns ready.
READY_RETRY_SECONDS = 2.0
#: Seconds requests in flight get after SIGTERM.
GRACEFUL_SHUTDOWN_SECONDS = 10
#: Seconds an idle keep-alive connection stays open (uvicorn's default is 5): the API server reuses its
#: connections to a webhook, and a connection closed under it costs a new TLS handshake.
KEEP_ALIVE_SECONDS = 60
#: Seconds between checks of the certificate files.
CERT_RELOAD_SECONDS = 30.0
#: Test-only: seconds between checks of the certificate files instead of :data:`CERT_RELOAD_SECONDS`.
CERT_RELOAD_ENV = "HYPERPOD_TENANCY_WEBHOOK_CERT_RELOAD_SECONDS"
#: Test-only: seconds to sleep between the reads and the conditional write of a UID allocation.
ALLOCATION_DELAY_ENV = "HYPERPOD_TENANCY_WEBHOOK_ALLOCATION_DELAY_SECONDS"
#: Test-only: seconds between listings of the nodes instead of ``node_features.REFRESH_SECONDS``.
NODE_REFRESH_ENV = "HYPERPOD_TENANCY_WEBHOOK_NODE_REFRESH_SECONDS"
#: Test-only: seconds between listings of the namespaces instead of ``namespace_coverage.REFRESH_SECONDS``.
NAMESPACE_REFRESH_ENV = "HYPERPOD_TENANCY_WEBHOOK_NAMESPACE_REFRESH_SECONDS"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = record.msg if isinstance(record.msg, dict) else {"message": record.getMessage()}
        line = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            **fields,
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()


def _logger() -> logging.Logger:
    log = logging.getLogger("hyperpod_tenancy.webhook")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(_JsonFormatter())
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


class _TooLarge(Exception):  # noqa: N818
    pass


class WebhookApp:
    """The ASGI application (``/mutate``, ``/validate``, ``/healthz``, ``/readyz``) and its :attr:`metrics`.

    Args:
        admission: the decision logic.
        max_body_bytes: the largest request body read.
        startup: coroutine functions run as background tasks from the ASGI lifespan start-up (also settable
            as :attr:`startup` before the server starts).
        uncovered_namespaces: how many team namespaces the rules do not cover as set up (the metric's reading).

    """

    def __init__(
        self,
        admission: Admission,
        *,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        startup: tuple[Callable[[], Coroutine[Any, Any, None]], ...] = (),
        uncovered_namespaces: Callable[[], int] = lambda: 0,
    ) -> None:
        self.admission = admission
        self.max_body_bytes = max_body_bytes
        self.dynamodb_reached = False
        self.log = _logger()
        #: Coroutine functions run as background tasks at start-up.
        self.startup = startup
        self._tasks: list[asyncio.Task[None]] = []
        #: The Prometheus metrics of this app (served by :class:`~hyperpod_tenancy.webhook.metrics.MetricsServer`).
        self.metrics = WebhookMetrics(
            ready=lambda: self.ready,
            team_namespaces=lambda: len(self.admission.config.namespaces),
            team_records_loaded=lambda: self.teams_loaded,
            uncovered_namespaces=uncovered_namespaces,
        )

    @property
    def ready(self) -> bool:
        """Whether ``/readyz`` answers 200 (DynamoDB answered once and the team namespaces are known)."""
        return self.dynamodb_reached and self.teams_loaded

    @property
    def teams_loaded(self) -> bool:
        """Whether the team namespaces are known (the team records were read once, or there are none)."""
        namespaces = self.admission.config.namespaces
        return not isinstance(namespaces, TeamDirectory) or namespaces.loaded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection scope."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        path, method = scope["path"], scope["method"]
        fields: dict[str, Any] = {}
        decision: Decision | None = None
        if path in _ADMISSION_PATHS and method == "POST":
            status, body, close, decision = await self._mutate(
                scope, receive, fields, validate=path == VALIDATE_PATH
            )
        elif path in ("/healthz", "/readyz") and method == "GET":
            ready = path == "/healthz" or self.ready
            status, body, close = (200 if ready else 503), {"ok": ready}, False
        elif path in (*_ADMISSION_PATHS, "/healthz", "/readyz"):
            status, body, close = 405, {"error": f"{method} is not allowed on {path}."}, False
        else:
            status, body, close = (
                404,
                {
                    "error": f"no such path {path!r}: use /mutate, /validate, /healthz or /readyz (GET /metrics is "
                    "served on the plain-HTTP metrics port, --metrics-port)."
                },
                False,
            )
        await _respond(send, status, body, close=close)
        if path in _ADMISSION_PATHS or status >= 400:
            seconds = time.perf_counter() - started
            if path in _ADMISSION_PATHS:
                self._count(path, status, decision, seconds)
            ms = round(seconds * 1000, 3)
            self.log.info({"method": method, "path": path, "status": status, "ms": ms, **fields})

    def _count(self, path: str, status: int, decision: Decision | None, seconds: float) -> None:
        """Count one answer of an admission path (:meth:`WebhookMetrics.observe`)."""
        if decision is None:
            self.metrics.observe(path=path, result=outcome(status), seconds=seconds)
            return
        result = outcome(status, allowed=decision.allowed, code=decision.code)
        denial = None if decision.allowed else decision.reason
        self.metrics.observe(path=path, result=result, seconds=seconds, denial=denial)

    async def _mutate(
        self, scope: Scope, receive: Receive, fields: dict[str, Any], *, validate: bool
    ) -> tuple[int, Any, bool, Decision | None]:
        """Answer one AdmissionReview: status, body, whether to close, and the decision (None: none was made)."""
        try:
            raw = await self._body(scope, receive)
        except _TooLarge:
            fields["reason"] = "too-large"
            too_large = {"error": f"the request body is larger than {self.max_body_bytes} bytes."}
            return 400, too_large, True, None
        try:
            req = parse_review(raw)
            fields.update(uid=req.uid, operation=req.operation, kind=req.kind, namespace=req.namespace)
            fields["user"] = req.username
            if validate and not connect.governs(
                resource=req.resource, sub_resource=req.sub_resource, operation=req.operation
            ):
                decision = Decision(allowed=True, reason="not-governed")
            else:
                decision = await self.admission.decide(req)
        except (MalformedRequest, patch.MalformedObject) as exc:
            fields["reason"] = "malformed"
            fields["error"] = str(exc)
            return 400, {"error": str(exc)}, False, None
        except Exception:
            self.log.exception({"message": "unexpected error deciding an AdmissionReview", **fields})
            return 500, {"error": "internal error; see the webhook's log."}, False, None
        self._note(decision, fields)
        return 200, review_response(req.uid, decision), False, decision

    def _note(self, decision: Decision, fields: dict[str, Any]) -> None:
        if self.admission.resolver.reached:
            self.dynamodb_reached = True
        fields.update(allowed=decision.allowed, reason=decision.reason, patchOps=len(decision.ops))
        if decision.person is not None:
            fields["person"] = decision.person
        if decision.posix_uid is not None:
            fields["posixUid"] = decision.posix_uid
        if not decision.allowed:
            fields["message"] = decision.message
        if decision.audit is not None:
            fields.update(decision.audit)

    async def _body(self, scope: Scope, receive: Receive) -> bytes:
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _TooLarge
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self._tasks = [asyncio.create_task(start()) for start in self.startup]
                self.log.info({"message": "webhook started"})
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for task in self._tasks:
                    task.cancel()
                for task in self._tasks:
                    with suppress(asyncio.CancelledError):
                        await task
                self.log.info({"message": "webhook stopped"})
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def wait_for_dynamodb(self, table: UidTable) -> None:
        """Read DynamoDB until it answers once, then mark the app ready (a lifespan background task)."""
        while not self.dynamodb_reached:
            try:
                await asyncio.to_thread(table.ping)
            except UidStoreUnavailable as exc:
                self.log.warning({"message": "DynamoDB not reachable yet; not ready", "error": str(exc)})
                await asyncio.sleep(READY_RETRY_SECONDS)
            else:
                self.dynamodb_reached = True
                self.log.info({"message": "DynamoDB reached; ready", "table": table.table})


async def _respond(send: Send, status: int, body: Any, *, close: bool) -> None:
    payload = orjson.dumps(body)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """What ``hyperpod-tenancy webhook serve`` runs with."""

    #: TCP port (all interfaces unless ``host``).
    port: int
    #: PEM certificate chain.
    tls_cert: Path
    #: PEM private key.
    tls_key: Path
    #: DynamoDB table name.
    table: str
    #: The parsed configuration.
    config: WebhookConfig
    #: Address to bind.
    host: str = "0.0.0.0"  # noqa: S104 - a pod serves on its pod IP
    #: Largest request body.
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: The API server Pods are read from (None: requests into pods are denied, they cannot be judged).
    kube_api: KubeApi | None = None
    #: Plain-HTTP port of ``GET /metrics`` (on ``host``; 0: a port the system chooses).
    metrics_port: int = DEFAULT_METRICS_PORT


async def _reload_certificates(
    context: ssl.SSLContext, cert: Path, key: Path, log: logging.Logger, *, every: float
) -> None:
    """Load the files into the serving context when they change: every new handshake presents the new pair.

    kubelet updates a Secret volume by writing a new directory and swapping the ``..data`` link the file names
    point through, so the files are compared by identity and time (``stat`` follows the links). A check that
    straddles the swap (a new certificate with the old key) fails to load, keeps the current pair and retries
    at the next check. Connections already open keep the certificate they were opened with.
    """

    def stamp() -> tuple[int, int, int, int]:
        c, k = cert.stat(), key.stat()
        return c.st_ino, c.st_mtime_ns, k.st_ino, k.st_mtime_ns

    seen = stamp()
    while True:
        await asyncio.sleep(every)
        try:
            now = stamp()
            if now != seen:
                context.load_cert_chain(cert, key)
                seen = now
                log.info({"message": "TLS certificate reloaded", "certificate": str(cert)})
        except (OSError, ssl.SSLError) as exc:
            log.warning(
                {"message": "TLS certificate not reloaded; keeping the current one", "error": str(exc)}
            )


def build_app(options: ServeOptions) -> tuple[WebhookApp, UidTable]:
    """Return the app and its UID table for ``options`` (the allocation delay from :data:`ALLOCATION_DELAY_ENV`).

    With ``teamRecords``, the configuration's namespaces become a :class:`TeamDirectory` that the app refreshes
    in the background from its start-up on.
    """
    config = options.config
    directory: TeamDirectory | None = None
    if config.team_records is not None:
        directory = TeamDirectory(
            config.namespaces,
            records=config.team_records,
            uid_range=(config.uid_first, config.uid_last),
            log=_logger(),
        )
        config = dataclasses.replace(config, namespaces=directory)
    client = uids.dynamodb_client()
    table = UidTable(
        table=options.table,
        first=config.uid_first,
        last=config.uid_last,
        client=client,
        allocation_delay_seconds=float(os.environ.get(ALLOCATION_DELAY_ENV, "0") or 0),
    )
    resolver = UidResolver(table, UidCache(config.cache_ttl_seconds))
    nodes: NodeFeatures | None = None
    if config.supplemental_groups_policy == "auto" and options.kube_api is not None:
        every = float(os.environ.get(NODE_REFRESH_ENV, "0") or 0) or REFRESH_SECONDS
        nodes = NodeFeatures(options.kube_api, log=_logger(), refresh_seconds=every)
    coverage: NamespaceCoverage | None = None
    if options.kube_api is not None:
        every = float(os.environ.get(NAMESPACE_REFRESH_ENV, "0") or 0) or COVERAGE_REFRESH_SECONDS
        coverage = NamespaceCoverage(
            options.kube_api, config.namespaces, log=_logger(), refresh_seconds=every
        )
    app = WebhookApp(
        Admission(config, resolver, options.kube_api, nodes),
        max_body_bytes=options.max_body_bytes,
        startup=(
            *((directory.run,) if directory is not None else ()),  # a Mapping: empty until its first refresh
            *((nodes.run,) if nodes is not None else ()),
            *((coverage.run,) if coverage is not None else ()),
        ),
        uncovered_namespaces=(lambda: len(coverage.uncovered)) if coverage is not None else (lambda: 0),
    )
    app.metrics.watch_dynamodb(client)
    return app, table


def serve(options: ServeOptions) -> None:
    """Run the webhook until SIGTERM (then return once requests in flight are answered) or SIGINT (blocks).

    ``GET /metrics`` is served on ``options.metrics_port`` from before the admission port opens until the end.

    Raises:
        MetricsPortUnavailable: the metrics port cannot be bound.

    """
    import uvicorn  # noqa: PLC0415 - only the serve command loads the server stack

    app, table = build_app(options)
    server_config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        ssl_certfile=options.tls_cert,
        ssl_keyfile=options.tls_key,
        loop="uvloop",
        http="httptools",
        lifespan="on",
        access_log=False,
        log_config=None,
        server_header=False,
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_SECONDS,
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
    )
    server_config.load()
    context = server_config.ssl
    assert context is not None  # noqa: S101 - ssl_certfile is set

    async def certificates() -> None:
        every = float(os.environ.get(CERT_RELOAD_ENV, "0") or 0) or CERT_RELOAD_SECONDS
        await _reload_certificates(context, options.tls_cert, options.tls_key, app.log, every=every)

    async def dynamodb() -> None:
        await app.wait_for_dynamodb(table)

    app.startup = (*app.startup, dynamodb, certificates)
    # boto3's service models are large object graphs that live as long as the process: move them (and the
    # modules) out of the cyclic collector's view, or each full collection walks them (a pause of tens of ms)
    gc.collect()
    gc.freeze()
    # uvicorn re-raises the SIGTERM it shut down on; a graceful stop is a normal exit (status 0)
    metrics = MetricsServer(app.metrics, host=options.host, port=options.metrics_port)
    app.log.info({"message": "metrics served", "port": metrics.port, "path": posix_identity.METRICS_PATH})
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        uvicorn.Server(server_config).run()
    finally:
        signal.signal(signal.SIGTERM, previous)
        metrics.stop()
