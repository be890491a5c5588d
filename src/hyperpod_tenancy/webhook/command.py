"""``hyperpod-tenancy webhook serve``: the POSIX identity admission webhook, run in the cluster until SIGTERM."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from hyperpod_tenancy.webhook.kube import KubeApi
from hyperpod_tenancy.errors import EXIT_INVALID, EXIT_OK, PROG

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``webhook`` command and its ``serve`` action."""
    webhook = commands.add_parser(
        "webhook",
        help="the POSIX identity admission webhook",
        description="The POSIX identity admission webhook (runs in the cluster).",
    )
    actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve /mutate, /validate, /healthz and /readyz over HTTPS until SIGTERM",
        description="Serve the webhook over HTTPS until SIGTERM (DynamoDB endpoint from AWS_ENDPOINT_URL when set).",
    )
    serve.add_argument("--port", required=True, type=int, help="TCP port to listen on (e.g. 8443)")
    serve.add_argument("--tls-cert", required=True, type=Path, metavar="FILE", help="PEM certificate chain")
    serve.add_argument("--tls-key", required=True, type=Path, metavar="FILE", help="PEM private key")
    serve.add_argument("--table", required=True, metavar="NAME", help="DynamoDB table of the UID map")
    serve.add_argument(
        "--teams", required=True, type=Path, metavar="FILE", help="the webhook's configuration JSON"
    )
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default: all interfaces)")  # noqa: S104
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="plain-HTTP port of GET /metrics (default: 9090; 0: a free port)",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=None, metavar="N", help="largest request body (default: 6 MiB)"
    )
    serve.add_argument(
        "--kube-api",
        default=None,
        metavar="URL",
        help="the Kubernetes API server (default: from KUBERNETES_SERVICE_HOST/PORT in a pod)",
    )
    serve.add_argument("--kube-token-file", type=Path, default=None, metavar="FILE", help="bearer token file")
    serve.add_argument("--kube-ca-file", type=Path, default=None, metavar="FILE", help="API server CA bundle")


def _kube_api(args: argparse.Namespace) -> KubeApi | None:
    """Return the API server the webhook reads Pods from: the flags, else the pod's service account, else none."""
    from hyperpod_tenancy.webhook import kube  # noqa: PLC0415

    url = args.kube_api or kube.in_cluster_url()
    if url is None:
        return None
    return kube.KubeApi(
        url=url,
        token_file=args.kube_token_file or kube.IN_CLUSTER_TOKEN,
        ca_file=args.kube_ca_file or kube.IN_CLUSTER_CA,
    )


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``webhook serve``; return 1 when the configuration or the certificates cannot be used."""
    # imported here: only this command loads the server stack
    from hyperpod_tenancy.webhook import config, server  # noqa: PLC0415

    try:
        settings = config.load_config(args.teams)
    except config.WebhookConfigError as exc:
        print(f"{PROG}: error: --teams: {exc}", file=err)
        return EXIT_INVALID
    for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
        if not path.is_file():
            print(f"{PROG}: error: {flag} {str(path)!r} is not a readable file.", file=err)
            return EXIT_INVALID
    if not 0 < args.port < 65536:
        print(f"{PROG}: error: --port {args.port} is not a TCP port (1-65535).", file=err)
        return EXIT_INVALID
    metrics_port = server.DEFAULT_METRICS_PORT if args.metrics_port is None else args.metrics_port
    if not 0 <= metrics_port < 65536 or metrics_port == args.port:
        print(
            f"{PROG}: error: --metrics-port {metrics_port} is not a TCP port (0-65535) other than --port.",
            file=err,
        )
        return EXIT_INVALID
    options = server.ServeOptions(
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        table=args.table,
        config=settings,
        host=args.host,
        max_body_bytes=args.max_body_bytes or server.DEFAULT_MAX_BODY_BYTES,
        kube_api=_kube_api(args),
        metrics_port=metrics_port,
    )
    try:
        server.serve(options)
    except server.MetricsPortUnavailable as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_INVALID
    return EXIT_OK
