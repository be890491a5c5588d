"""Run the real HyperPod CLI (``hyp``, PyPI ``sagemaker-hyperpod``) offline and print the bodies it would post.

This file runs **inside the HyperPod SDK's own venv** (``.venv-hyperpod``, see the Makefile: the SDK pins
pytest, ruff and click versions the project's venv cannot share), never in the project's interpreter; the
tests call it through :mod:`hyperpod_sdk` as a subprocess. Usage::

    .venv-hyperpod/bin/python tests/support/hyperpod_cli_render.py '[["create", "hyp-pytorch-job", ...], ...]' 1.33

An item may instead be an SDK call, ``{"sdk": "<model>", "object": {...}}`` (or ``{"source": "<python>"}``,
code that calls the SDK, run as it stands): the SDK's own model class
(:data:`SDK_MODELS`: ``HPJumpStartEndpoint``, ``HPEndpoint``) is validated from ``object`` (its ``metadata``
a ``Metadata`` with ``labels``, the rest its spec fields) and its ``create()`` runs, as a notebook user's
would; the Kueue labels of an endpoint can only be set this way (the 3.12.0 CLI has no option for them).

For each argument list (one process for many command lines: importing the SDK takes seconds) it invokes the
``hyp`` click group in-process (``sagemaker.hyperpod.cli.hyp_cli:cli``, the console script of
the wheel) with the given arguments, so the CLI's own option parsing, template model (``to_domain``) and SDK
``create`` build the object, and captures what the SDK hands to the Kubernetes client instead of sending it:

* ``kubernetes.client.CustomObjectsApi.create_namespaced_custom_object`` records ``group``, ``version``,
  ``namespace``, ``plural`` and ``body`` (every ``hyp create`` of a job, endpoint or space ends there:
  ``sagemaker/hyperpod/training/hyperpod_pytorch_job.py`` ``create``,
  ``sagemaker/hyperpod/inference/hp_endpoint_base.py`` ``call_create_api``,
  ``sagemaker/hyperpod/space/hyperpod_space.py`` ``create``);
* telemetry is disabled: ``telemetry_logging._send_telemetry_request`` (the only sender, called by the
  ``_hyperpod_telemetry_emitter`` decorator through the module global) is replaced by a counter;
* there is no network: ``socket.socket.connect`` and ``socket.getaddrinfo`` raise, so any other API call or
  HTTP request the CLI might make fails loudly instead of leaving the machine;
* the kubeconfig is a real file in a temporary directory (``KUBECONFIG``) naming an unreachable API server,
  so ``config.load_kube_config`` runs unpatched; the SDK's version check
  (``common/utils.py`` ``verify_kubernetes_version_compatibility``) answers from the patched
  ``VersionApi.get_code`` with the cluster's Kubernetes version.

Prints a JSON object: ``sdk_version`` (the installed ``sagemaker-hyperpod``) and ``results``, one object per
command line: ``exit_code``, ``output`` (the CLI's stdout and stderr),
``exception`` (repr, if any), ``created`` (the captured calls) and ``telemetry_calls`` (suppressed sends).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any

KUBECONFIG = """apiVersion: v1
kind: Config
clusters:
- name: offline
  cluster:
    server: https://127.0.0.1:9
    insecure-skip-tls-verify: true
contexts:
- name: offline
  context:
    cluster: offline
    user: offline
    namespace: default
current-context: offline
users:
- name: offline
  user:
    token: offline
"""


#: SDK model classes an ``{"sdk": ...}`` item may name: module and class (sagemaker-hyperpod 3.12.0).
SDK_MODELS = {
    "HPJumpStartEndpoint": "sagemaker.hyperpod.inference.hp_jumpstart_endpoint",
    "HPEndpoint": "sagemaker.hyperpod.inference.hp_endpoint",
}


def _sdk_create(item: dict[str, Any]) -> None:
    """Validate the SDK model ``item["sdk"]`` from ``item["object"]`` and call its ``create()``.

    With ``item["source"]`` instead, run that Python code (a README example) as it stands.
    """
    import importlib

    if "source" in item:
        exec(compile(item["source"], "<readme>", "exec"), {"__name__": "__readme__"})
        return
    cls = getattr(importlib.import_module(SDK_MODELS[item["sdk"]]), item["sdk"])
    cls.model_validate(item["object"]).create()


def _no_network(*args: Any, **kwargs: Any) -> Any:
    raise OSError("network disabled while rendering HyperPod CLI bodies offline")


def main(argv: list[str]) -> int:
    """Run ``hyp`` once per argument list of ``argv[1]`` (JSON) and print what each would have posted."""
    command_lines = json.loads(argv[1])
    kubernetes_version = argv[2] if len(argv) > 2 else "1.33"
    workdir = Path(tempfile.mkdtemp(prefix="hyp-offline-"))
    (workdir / "config").write_text(KUBECONFIG)
    os.environ["KUBECONFIG"] = str(workdir / "config")
    os.environ["HOME"] = str(workdir)  # the CLI writes nothing of the real user's
    socket.socket.connect = _no_network  # type: ignore[method-assign]
    socket.socket.connect_ex = _no_network  # type: ignore[method-assign]
    socket.getaddrinfo = _no_network  # type: ignore[assignment]

    from click.testing import CliRunner
    from kubernetes import client
    from sagemaker.hyperpod.cli.hyp_cli import cli
    from sagemaker.hyperpod.common.telemetry import telemetry_logging

    created: list[dict[str, Any]] = []
    telemetry: list[int] = []

    def create(self: Any, *args: Any, **kw: Any) -> Any:
        # the SDK calls it with keywords only (group, version, namespace, plural, body)
        assert not args, args
        created.append({key: kw[key] for key in ("group", "version", "namespace", "plural", "body")})
        return kw["body"]

    def get_code(self: Any, **kw: Any) -> Any:
        major, minor = kubernetes_version.split(".")
        return client.VersionInfo(
            major=major,
            minor=minor,
            git_version=f"v{kubernetes_version}.0-eks",
            build_date="",
            compiler="",
            git_commit="",
            git_tree_state="",
            go_version="",
            platform="linux/amd64",
        )

    client.CustomObjectsApi.create_namespaced_custom_object = create  # type: ignore[method-assign]
    client.VersionApi.get_code = get_code  # type: ignore[method-assign]
    telemetry_logging._send_telemetry_request = lambda *a, **k: telemetry.append(1)  # type: ignore[attr-defined]

    results = []
    for args in command_lines:
        created.clear()
        telemetry.clear()
        if isinstance(args, dict):
            printed = io.StringIO()  # the SDK logs to stdout, which carries this script's JSON
            try:
                with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
                    _sdk_create(args)
                exit_code, exception = 0, None
            except Exception as error:  # reported to the test, which fails with it
                exit_code, exception = 1, repr(error)
            output = printed.getvalue()
        else:
            result = CliRunner().invoke(cli, args, catch_exceptions=True)
            exit_code, output = result.exit_code, result.output
            exception = None if result.exception is None else repr(result.exception)
        results.append(
            {
                "exit_code": exit_code,
                "output": output,
                "exception": exception,
                "created": list(created),
                "telemetry_calls": len(telemetry),
            }
        )
    version = importlib.metadata.version("sagemaker-hyperpod")
    sys.stdout.write(json.dumps({"sdk_version": version, "results": results}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
