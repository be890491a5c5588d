"""A real Prometheus server for the tests (Debian's ``prometheus``, which ``make promtool`` installs with promtool).

:func:`running_prometheus` starts one on a free loopback port with a configuration and flags of the test's, waits
until it answers, and stops it afterwards. The tests use it as what Amazon Managed Prometheus speaks: its
remote-write receiver and its HTTP API (rules, queries).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running_prometheus(
    root: Path, config: dict[str, Any], *flags: str, route_prefix: str = ""
) -> Iterator[str]:
    """Run Prometheus with ``config`` (data under ``root``) until the block ends; yield its base URL.

    Args:
        root: a scratch directory for the configuration and the TSDB.
        config: the ``prometheus.yml`` content.
        flags: more command-line flags (e.g. ``--web.enable-remote-write-receiver``).
        route_prefix: ``--web.route-prefix``; the yielded URL includes it.

    Fails (never skips) when Prometheus is not installed or does not become ready within a minute.

    """
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail(
            "prometheus is not installed: run `make promtool` (Debian's prometheus package)", pytrace=False
        )
    (root / "prometheus.yml").write_text(json.dumps(config), encoding="utf-8")
    port = _free_port()
    command = [
        binary,
        f"--config.file={root / 'prometheus.yml'}",
        f"--storage.tsdb.path={root / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        *flags,
    ]
    if route_prefix:
        command.append(f"--web.route-prefix={route_prefix}")
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}{route_prefix}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{base}/-/ready", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    process.kill()
                    pytest.fail(f"Prometheus did not start: {process.communicate()[1].decode()[-2000:]}")
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


def query(base: str, expr: str, *, at: float | None = None) -> list[dict[str, Any]]:
    """Return the result of an instant query (``at``: a Unix time; default now)."""
    params = {"query": expr, **({"time": f"{at}"} if at is not None else {})}
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=10) as answer:
        result: list[dict[str, Any]] = json.loads(answer.read())["data"]["result"]
    return result
