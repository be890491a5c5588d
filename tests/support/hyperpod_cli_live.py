"""Run the real HyperPod CLI (``hyp``, PyPI ``sagemaker-hyperpod``) against a Kubernetes API server on loopback.

Like :mod:`hyperpod_cli_render`, this file runs **inside the HyperPod SDK's own venv** (``.venv-hyperpod``),
called by the tests as a subprocess. Here nothing of the CLI's Kubernetes traffic is captured: ``KUBECONFIG``
names the control plane and the team member's identity, and every request the CLI makes reaches the real API
server, whose RBAC and admission judge it. Only what would leave the machine is stopped:

* telemetry is disabled: ``telemetry_logging._send_telemetry_request`` (the only sender) is replaced by a no-op;
* sockets connect to loopback only (``127.0.0.0/8``, ``::1``); anything else raises, loudly.

Usage: ``.venv-hyperpod/bin/python tests/support/hyperpod_cli_live.py '[["create", "hyp-pytorch-job", ...], ...]'``.
Prints a JSON list, one object per command line: ``exit_code``, ``output`` (stdout and stderr), ``exception``.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sys
from typing import Any

_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    if not ipaddress.ip_address(host).is_loopback:
        raise OSError(f"only loopback is reachable from this test, not {host}")
    return _connect(self, address)


def main(argv: list[str]) -> int:
    """Run ``hyp`` once per argument list of ``argv[1]`` (JSON); print each outcome."""
    socket.socket.connect = _loopback_only  # type: ignore[method-assign]
    from click.testing import CliRunner
    from sagemaker.hyperpod.cli.hyp_cli import cli
    from sagemaker.hyperpod.common.telemetry import telemetry_logging

    telemetry_logging._send_telemetry_request = lambda *a, **k: None  # type: ignore[attr-defined]
    results = []
    for args in json.loads(argv[1]):
        result = CliRunner().invoke(cli, args, catch_exceptions=True)
        results.append(
            {
                "exit_code": result.exit_code,
                "output": result.output,
                "exception": None if result.exception is None else repr(result.exception),
            }
        )
    sys.stdout.write(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
