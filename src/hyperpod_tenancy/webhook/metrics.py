"""The webhook's Prometheus metrics, served as ``GET /metrics`` on a plain-HTTP port of their own.

Metrics (names from :mod:`hyperpod_tenancy.k8s.posix_identity`, which the cluster alerts read too; declared with
``prometheus_client``, the Prometheus project's Python client):

``hyperpod_tenancy_webhook_admission_requests_total{path, outcome}``
    Admission requests answered, by ``path`` (``/mutate``, ``/validate``) and ``outcome``: ``allowed``, ``denied``,
    ``error``, ``invalid`` (:func:`outcome`; every combination is exported from the start, at 0, so a rate exists
    before the first error).
``hyperpod_tenancy_webhook_admission_duration_seconds{path}``
    Histogram of the seconds from a request's arrival to its answer (:data:`DURATION_BUCKETS`: from 0.5 ms, the
    cached path, to 30 s, the longest ``timeoutSeconds`` Kubernetes accepts).
``hyperpod_tenancy_webhook_admission_denials_total{path, reason}``
    Denials by the request log's ``reason`` (``denied:unknown-role``, ``denied:dynamodb-unavailable``...: a fixed
    set of the server's code, never a person or a namespace).
``hyperpod_tenancy_webhook_dynamodb_calls_total{operation, outcome}``
    DynamoDB API calls (after botocore's own retries) by ``operation`` and ``outcome`` (``ok``, ``canceled``,
    ``refused``, ``unreachable``), counted from botocore's ``after-call`` and ``after-call-error`` events
    (botocore ``client.py`` ``_make_api_call``/``_make_request``, botocore 1.44).
``hyperpod_tenancy_webhook_ready``, ``hyperpod_tenancy_webhook_team_namespaces``, ``hyperpod_tenancy_webhook_team_records_loaded``
    Gauges read at scrape time: ``/readyz``'s answer (1 or 0), the team namespaces served, whether the team records
    were read. ``hyperpod_tenancy_webhook_ready`` has no label, so it exists from the process's start: the alert
    that no webhook series arrives reads it.
``hyperpod_tenancy_webhook_uncovered_team_namespaces``
    Gauge of the team namespaces (by name) whose labels differ from what the platform set or that no team record
    describes (:mod:`hyperpod_tenancy.webhook.namespace_coverage`, listed every minute); the alert
    ``HyperPodTenancyTeamNamespaceUncovered`` fires on it.
``process_*``, ``python_*``
    ``prometheus_client``'s process (memory, CPU, open files), platform and garbage-collector collectors.

The hot path adds one counter increment and one histogram observation on label children resolved in advance
(about 2.5 microseconds a request on the test machine, see ``docs/posix-identity-server.md``). The metrics server is
``prometheus_client``'s exposition on the standard library's threaded WSGI server (a daemon thread), answering
:data:`~hyperpod_tenancy.k8s.posix_identity.METRICS_PATH` only (404 elsewhere): the admission port stays TLS and
serves only the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    GC_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    make_wsgi_app,
)
from prometheus_client.exposition import ThreadingWSGIServer

from hyperpod_tenancy.k8s import posix_identity as names

__all__ = [
    "DURATION_BUCKETS",
    "MetricsPortUnavailable",
    "MetricsServer",
    "WebhookMetrics",
    "dynamodb_outcome",
    "outcome",
]

#: Upper bounds (seconds) of the admission latency histogram: the cached path is tens of microseconds, a DynamoDB
#: read or an allocation tens of milliseconds; the API server gives up at ``timeoutSeconds`` (5 by default, 1-30).
DURATION_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    10.0,
    30.0,
)
_PATHS = (names.MUTATE_PATH, names.VALIDATE_PATH)
_ALLOWED, _DENIED, _ERROR, _INVALID = names.ADMISSION_OUTCOMES
_OK, _CANCELED, _REFUSED, _UNREACHABLE = names.DYNAMODB_OUTCOMES


class MetricsPortUnavailable(OSError):  # noqa: N818 - the name says what the caller meets
    """The metrics port cannot be bound (the message names it and the cause)."""


def _family(name: str) -> str:
    """Return the family name a counter is declared under (``prometheus_client`` appends ``_total`` itself)."""
    return name.removesuffix("_total")


def outcome(status: int, *, allowed: bool | None = None, code: int | None = None) -> str:
    """Return the ``outcome`` label of an admission answer.

    Args:
        status: the HTTP status of the answer.
        allowed: the AdmissionReview's ``response.allowed`` (None: no AdmissionReview was answered).
        code: the denial's ``status.code``.

    An HTTP 5xx, or a denial with a 5xx ``status.code`` (a dependency failed: DynamoDB or the API server did not
    answer, the UID range is used up), is ``error``; another HTTP 4xx is ``invalid``.

    """
    if status >= 500:
        return _ERROR
    if status >= 400 or allowed is None:
        return _INVALID
    if allowed:
        return _ALLOWED
    return _ERROR if code is not None and code >= 500 else _DENIED


def dynamodb_outcome(*, status: int | None, error_code: str | None = None) -> str:
    """Return the ``outcome`` label of a DynamoDB call: its HTTP status (None: no answer) and error code."""
    if status is None:
        return _UNREACHABLE
    if status < 300:
        return _OK
    return _CANCELED if error_code == "TransactionCanceledException" else _REFUSED


class WebhookMetrics:
    """The webhook's metrics in a registry of their own (see the module docstring for the names).

    Args:
        ready: whether ``/readyz`` answers 200 (read at scrape time).
        team_namespaces: how many team namespaces are served (read at scrape time).
        team_records_loaded: whether the team records were read (read at scrape time).
        uncovered_namespaces: how many team namespaces the rules do not cover as set up (read at scrape time).

    """

    def __init__(
        self,
        *,
        ready: Callable[[], bool],
        team_namespaces: Callable[[], int],
        team_records_loaded: Callable[[], bool],
        uncovered_namespaces: Callable[[], int] = lambda: 0,
    ) -> None:
        # no ``*_created`` series beside each counter: nothing reads them (the process has no other metrics user)
        disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client 0.26 leaves it unannotated
        #: The registry :class:`MetricsServer` exposes.
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self.requests = Counter(
            _family(names.ADMISSION_REQUESTS_METRIC),
            "Admission requests answered, by path and outcome (allowed, denied, error, invalid).",
            ("path", "outcome"),
            registry=registry,
        )
        self.duration = Histogram(
            names.ADMISSION_DURATION_METRIC,
            "Seconds from an admission request's arrival to its answer.",
            ("path",),
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.denials = Counter(
            _family(names.ADMISSION_DENIALS_METRIC),
            "Admission requests denied, by path and reason.",
            ("path", "reason"),
            registry=registry,
        )
        self.dynamodb = Counter(
            _family(names.DYNAMODB_CALLS_METRIC),
            "DynamoDB API calls of the UID map (after botocore's retries), by operation and outcome.",
            ("operation", "outcome"),
            registry=registry,
        )
        gauges = (
            (names.READY_METRIC, "1 while /readyz answers 200, else 0.", lambda: float(ready())),
            (names.TEAM_NAMESPACES_METRIC, "Team namespaces served.", lambda: float(team_namespaces())),
            (
                names.TEAM_RECORDS_LOADED_METRIC,
                "1 once the team records were read (always 1 without team records).",
                lambda: float(team_records_loaded()),
            ),
            (
                names.UNCOVERED_NAMESPACES_METRIC,
                "Team namespaces the admission rules do not cover as set up (labels rewritten, no team record).",
                lambda: float(uncovered_namespaces()),
            ),
        )
        for name, documentation, read in gauges:
            Gauge(name, documentation, registry=registry).set_function(read)
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        registry.register(GC_COLLECTOR)
        # label children resolved once: the hot path does no label lookup
        self._requests = {
            (path, result): self.requests.labels(path=path, outcome=result)
            for path in _PATHS
            for result in names.ADMISSION_OUTCOMES
        }
        self._duration = {path: self.duration.labels(path=path) for path in _PATHS}

    def observe(self, *, path: str, result: str, seconds: float, denial: str | None = None) -> None:
        """Count one admission answer of ``path`` (an admission path) with ``result`` (:func:`outcome`).

        ``denial``: the reason of a denial (counted in ``..._admission_denials_total``).
        """
        self._requests[path, result].inc()
        self._duration[path].observe(seconds)
        if denial is not None:
            self.denials.labels(path=path, reason=denial).inc()

    def watch_dynamodb(self, client: Any) -> None:
        """Count every DynamoDB call ``client`` (a botocore DynamoDB client) makes, from botocore's events."""

        def answered(*, http_response: Any, parsed: dict[str, Any], model: Any, **_: Any) -> None:
            code = parsed.get("Error", {}).get("Code") if http_response.status_code >= 300 else None
            result = dynamodb_outcome(status=http_response.status_code, error_code=code)
            self.dynamodb.labels(operation=model.name, outcome=result).inc()

        def unanswered(*, event_name: str, **_: Any) -> None:
            operation = event_name.rsplit(".", 1)[-1]
            self.dynamodb.labels(operation=operation, outcome=dynamodb_outcome(status=None)).inc()

        client.meta.events.register("after-call.dynamodb", answered)
        client.meta.events.register("after-call-error.dynamodb", unanswered)


class _QuietHandler(WSGIRequestHandler):
    """Writes no access log line (the server's log is one JSON line per admission request)."""

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing."""


class MetricsServer:
    """``GET /metrics`` of ``metrics`` over plain HTTP on ``host:port``, in a daemon thread until :meth:`stop`.

    Raises:
        MetricsPortUnavailable: the port cannot be bound (the message names it).

    """

    def __init__(self, metrics: WebhookMetrics, *, host: str, port: int) -> None:
        exposition = make_wsgi_app(metrics.registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == names.METRICS_PATH and environ.get("REQUEST_METHOD") in (
                "GET",
                "HEAD",
            ):
                answer: Iterable[bytes] = exposition(environ, start_response)
                return answer
            body = f"only GET {names.METRICS_PATH} is served on this port.\n".encode()
            start_response(
                "404 Not Found", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
            )
            return [body]

        try:
            self._httpd: WSGIServer = make_server(
                host, port, app, ThreadingWSGIServer, handler_class=_QuietHandler
            )
        except OSError as exc:
            raise MetricsPortUnavailable(
                f"the metrics port {host}:{port} cannot be bound ({exc.strerror or exc}); pass a free "
                "--metrics-port."
            ) from exc
        #: The port bound (``port``, or the one the system chose for 0).
        self.port: int = self._httpd.server_port
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="metrics", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
