"""The POSIX identity webhook as the tests meet it: real server processes on loopback over TLS.

* :func:`serial_moto_server`: DynamoDB from moto in server mode, one request at a time (see there why).
* :func:`certificates`: a CA and a server certificate for ``127.0.0.1``/``localhost`` (:mod:`kube_pki`).
* :func:`webhook_config`: a configuration document for two teams (the parser's format);
  :func:`platform_webhook_config`: the one a synthesized platform renders, with its team records inline.
* :class:`WebhookProcess`: ``hyperpod-tenancy webhook serve`` in a child process (its own interpreter, the
  environment of the test, so boto3 reaches the moto server through ``AWS_ENDPOINT_URL``), stopped with SIGTERM.
* :class:`Client`: HTTPS requests that verify the server certificate against the test CA.
* :func:`review` and :func:`workload`: AdmissionReview documents and workload objects of every kind of the
  one table (:data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS`), built from its pod-spec paths.
* :func:`apply_patch`: the patch of a response applied with the ``jsonpatch`` library (RFC 6902).
"""

from __future__ import annotations

import base64
import contextlib
import copy
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3
import jsonpatch
import pytest
from kube_pki import CertificateAuthority
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from moto_server import moto_server
from werkzeug.serving import make_server

from hyperpod_tenancy.k8s import posix_identity, workloads
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.policy import Platform, names

ACCOUNT = "111122223333"
#: Team → GID of the test configuration.
GIDS = {"research": 20001, "inference": 20002}
UID_FIRST = 200_000
UID_LAST = 299_999
CLAIM = "fsx"
STUDIO_ROLE = "research-studio-execution"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1"
SRC = Path(__file__).resolve().parents[2] / "src"


@contextlib.contextmanager
def serial_moto_server() -> Iterator[str]:
    """:func:`moto_server.moto_server`'s environment, with ``AWS_ENDPOINT_URL`` on a moto server that serves one
    request at a time; yields its URL.

    DynamoDB serializes conditional writes and transactions on an item; moto's backend takes no lock, so two
    transactions handled on two threads of the threaded server can both pass their conditions (seen here: two
    people given one UID). Serving requests one after the other restores DynamoDB's guarantee for each request
    while the webhook processes still interleave their reads and writes freely (a non-threaded werkzeug server
    answers HTTP/1.0 and closes each connection, so no client holds it).
    """
    with moto_server(), pytest.MonkeyPatch.context() as mp:
        app = DomainDispatcherApplication(create_backend_app)
        server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=MotoRequestHandler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_port}"
        mp.setenv("AWS_ENDPOINT_URL", url)
        try:
            yield url
        finally:
            server.shutdown()
            thread.join()


@dataclass(frozen=True)
class Certificates:
    """PEM files of a test CA and of the server certificate it signed."""

    ca: Path
    cert: Path
    key: Path


def certificates(directory: Path) -> Certificates:
    """Write a CA and a server certificate (SAN ``127.0.0.1``, ``localhost``) under ``directory``."""
    ca = CertificateAuthority(directory, name="webhook test CA", days=1)
    server = ca.server("tls", common_name="posix-identity-webhook")
    return Certificates(ca=ca.cert, cert=server.cert, key=server.key)


def sso_prefix(team: str) -> str:
    """Identity Center role prefix of ``team``'s permission set."""
    return f"AWSReservedSSO_{names.permission_set(team)}_"


def webhook_config(*, cache_ttl: int = 300) -> dict[str, Any]:
    """The configuration document of the test platform (teams ``research`` and ``inference``)."""
    namespaces: dict[str, Any] = {}
    for team, gid in GIDS.items():
        principals: list[dict[str, str]] = [{"kind": "identity-center", "roleNamePrefix": sso_prefix(team)}]
        if team == "research":
            principals.append(
                {
                    "kind": "studio",
                    "roleArn": f"arn:aws:iam::{ACCOUNT}:role/service-role/{STUDIO_ROLE}",
                    "domainId": "d-research0001",
                }
            )
        namespaces[names.namespace(team)] = {
            "team": team,
            "gid": gid,
            "localQueue": names.local_queue(team),
            "principals": principals,
        }
    return {
        "version": 1,
        "uidRange": {"first": UID_FIRST, "last": UID_LAST},
        "cacheTtlSeconds": cache_ttl,
        "exemptUsernames": list(workloads.controller_usernames()),
        "home": {"mountPath": "/home/hyperpod", "claimName": CLAIM},
        "namespaces": namespaces,
    }


def platform_webhook_config(
    platform: Platform, teams: tuple[str, ...] = ("research", "inference")
) -> dict[str, Any]:
    """The configuration the cluster stack renders for ``platform`` (:func:`posix_identity.webhook_config`: its
    UID range, break-glass group, groups policy), with ``teams``' records inline instead of read from SSM (the
    records each team stack writes, :func:`posix_identity.team_record`)."""
    config = dict(posix_identity.webhook_config(platform))
    del config["teamRecords"]
    config["namespaces"] = {
        names.namespace(t): {
            k: v
            for k, v in posix_identity.team_record(platform, t).to_document().items()
            if k not in ("namespace", "version")
        }
        for t in teams
    }
    return config


def create_table(name: str | None = None) -> str:
    """Create the UID table as the construct does (``pk`` String, on demand) and return its name."""
    table = name or f"posix-uids-{uuid.uuid4().hex[:8]}"
    boto3.client("dynamodb").create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return table


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Client:
    """HTTPS client of one server, verifying its certificate against the test CA (one connection per call)."""

    def __init__(self, port: int, ca: Path) -> None:
        self.port = port
        self.context = ssl.create_default_context(cafile=str(ca))

    def request(
        self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Any]:
        """Send one request; return the status and the decoded JSON body."""
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=30)
        try:
            conn.request(
                method, path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
            )
            response = conn.getresponse()
            data = response.read()
            return response.status, json.loads(data) if data else None
        finally:
            conn.close()

    def mutate(self, review_doc: dict[str, Any]) -> dict[str, Any]:
        """POST an AdmissionReview; return its ``response`` (the status must be 200)."""
        status, body = self.request("POST", "/mutate", json.dumps(review_doc).encode())
        assert status == 200, (status, body)
        assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview", body
        assert body["response"]["uid"] == review_doc["request"]["uid"]
        response: dict[str, Any] = body["response"]
        return response


class WebhookProcess:
    """``hyperpod-tenancy webhook serve`` in a child process; a context manager that waits until it is ready."""

    def __init__(
        self,
        *,
        certs: Certificates,
        table: str,
        config_path: Path,
        env: dict[str, str] | None = None,
        port: int | None = None,
        wait_ready: bool = True,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.port = port or free_port()
        #: The plain-HTTP port of ``GET /metrics`` (a free one: replicas and parallel tests never share 9090).
        self.metrics_port = free_port()
        self.client = Client(self.port, certs.ca)
        self._args = [
            sys.executable,
            "-c",
            "import sys; from hyperpod_tenancy.cli import main; sys.exit(main())",
            "webhook",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--tls-cert",
            str(certs.cert),
            "--tls-key",
            str(certs.key),
            "--table",
            table,
            "--teams",
            str(config_path),
            "--metrics-port",
            str(self.metrics_port),
            *extra_args,
        ]
        self._env = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
        self._wait_ready = wait_ready
        self.proc: subprocess.Popen[bytes] | None = None
        self.output = b""
        # a file, not a pipe: nobody reads the log while the server runs, and a full pipe would block it
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()

    def __enter__(self) -> WebhookProcess:
        self.proc = subprocess.Popen(self._args, env=self._env, stdout=self._log, stderr=subprocess.STDOUT)
        self.wait(ready=self._wait_ready)
        return self

    def wait(self, *, ready: bool, timeout: float = 60) -> None:
        """Wait until the server answers ``/healthz`` (and ``/readyz`` with 200 when ``ready``)."""
        deadline = time.monotonic() + timeout
        path = "/readyz" if ready else "/healthz"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                self.stop()
                raise AssertionError(f"webhook exited {self.proc.returncode}: {self.output!r}")
            try:
                status, _ = self.client.request("GET", path)
            except OSError:
                status = 0
            if status == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"webhook not {'ready' if ready else 'up'} on port {self.port} after {timeout}s")

    def stop(self) -> int:
        """SIGTERM the server, collect its output and return its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)
        if not self._log.closed:
            self._log.seek(0)
            self.output = self._log.read()
            self._log.close()
        return self.proc.returncode

    def log_lines(self) -> list[dict[str, Any]]:
        """The JSON log lines the server wrote (after :meth:`stop`)."""
        lines = []
        for raw in self.output.decode().splitlines():
            if raw.startswith("{"):
                lines.append(json.loads(raw))
        return lines

    def __exit__(self, *exc: object) -> None:
        self.stop()


#: The service-account token the webhook presents to a stand-in API server.
WEBHOOK_TOKEN = "webhook-service-account-token"


def webhook_on_api(
    *, certs: Certificates, config: dict[str, Any], directory: Path, api_url: str, token: str = WEBHOOK_TOKEN
) -> WebhookProcess:
    """A :class:`WebhookProcess` with configuration ``config`` that reads the Kubernetes API at ``api_url``
    (``--kube-api``) with ``token`` and the test CA; its files are written under ``directory``."""
    (directory / "teams.json").write_text(json.dumps(config))
    (directory / "token").write_text(token + "\n")
    extra = (
        "--kube-api",
        api_url,
        "--kube-token-file",
        str(directory / "token"),
        "--kube-ca-file",
        str(certs.ca),
    )
    return WebhookProcess(
        certs=certs, table=create_table(), config_path=directory / "teams.json", extra_args=extra
    )


def sso_user(
    person: str, team: str = "research", *, permission_set: str | None = None, account: str = ACCOUNT
) -> dict[str, Any]:
    """``request.userInfo`` of an Identity Center user of ``team`` as EKS authenticates them (the role of
    ``permission_set``, by default the team's default permission set name, in ``account``: the cluster's, or the
    team's own where its members sign in)."""
    role = (
        f"AWSReservedSSO_{permission_set}_0123456789abcdef"
        if permission_set
        else f"{sso_prefix(team)}0123456789abcdef"
    )
    arn = f"arn:aws:sts::{account}:assumed-role/{role}/{person}"
    return {
        "username": arn,
        "uid": f"aws-iam-authenticator:{account}:AROAEXAMPLE",
        "groups": [names.kubernetes_group(team), "system:authenticated"],
        "extra": {
            "arn": [arn],
            "canonicalArn": [f"arn:aws:iam::{account}:role/{role}"],
            "sessionName": [person],
            "accessKeyId": ["ASIAEXAMPLE"],
            "principalId": [f"AROAEXAMPLE:{person}"],
        },
    }


def controller(description: str) -> dict[str, Any]:
    """``request.userInfo`` of a controller of :data:`workloads.CONTROLLERS`."""
    (c,) = [c for c in workloads.CONTROLLERS if c.description == description]
    return {
        "username": c.username,
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{c.namespace}"],
    }


def pod_spec(**extra: Any) -> dict[str, Any]:
    """A PodSpec with one GPU training container (what a team member writes; no identity of its own)."""
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "train",
                "image": IMAGE,
                "command": ["torchrun", "train.py"],
                "resources": {"limits": {"nvidia.com/gpu": "8"}},
            }
        ],
    }
    spec.update(extra)
    return spec


def _api_version(kind: WorkloadKindSpec) -> str:
    versions = {
        "kubeflow.org": "v1",
        "sagemaker.amazonaws.com": "v1",
        "ray.io": "v1",
        "batch": "v1",
        "apps": "v1",
        "inference.sagemaker.aws.amazon.com": "v1",  # what `hyp create hyp-*-endpoint` posts (SDK 3.12.0)
        "workspace.jupyter.org": "v1alpha1",  # what `hyp create space` posts
    }
    if kind.kind == "MPIJob":
        return "kubeflow.org/v2beta1"
    return f"{kind.group}/{versions[kind.group]}" if kind.group else "v1"


def _place(root: dict[str, Any], dotted: str, spec: dict[str, Any]) -> None:
    """Put a pod spec at a ``pod_specs`` path (``{}`` maps get two replicas, ``[]`` lists one item)."""
    segments = dotted.split(".")
    node = root
    for i, segment in enumerate(segments):
        name = segment.removesuffix("[]").removesuffix("{}")
        last = i == len(segments) - 1
        if segment.endswith("{}"):
            replicas = node.setdefault(name, {})
            for replica in ("Master", "Worker"):
                _place(replicas.setdefault(replica, {"replicas": 1}), ".".join(segments[i + 1 :]), spec)
            return
        if segment.endswith("[]"):
            items = node.setdefault(name, [{"name": "pod", "replicas": 2}])
            _place(items[0], ".".join(segments[i + 1 :]), spec)
            return
        if last:
            node[name] = copy.deepcopy(spec)
        else:
            node = node.setdefault(name, {})


def workload(
    kind: WorkloadKindSpec,
    team: str = "research",
    *,
    spec: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
    name: str = "train",
) -> dict[str, Any]:
    """An object of ``kind`` with ``spec`` (default :func:`pod_spec`) at every pod-spec path of the table."""
    meta: dict[str, Any] = {"name": name, "namespace": names.namespace(team)}
    meta["labels"] = (
        dict(labels) if labels is not None else {"kueue.x-k8s.io/priority-class": "training-priority"}
    )
    obj: dict[str, Any] = {"apiVersion": _api_version(kind), "kind": kind.kind, "metadata": meta}
    for dotted in kind.pod_specs:
        _place(obj, dotted, spec if spec is not None else pod_spec())
    return obj


def kind_named(kind: str) -> WorkloadKindSpec:
    """The table's row of ``kind``."""
    (spec,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == kind]
    return spec


def review(
    obj: dict[str, Any],
    *,
    user: dict[str, Any],
    operation: str = "CREATE",
    old: dict[str, Any] | None = None,
    dry_run: bool = False,
) -> dict[str, Any]:
    """An ``admission.k8s.io/v1`` AdmissionReview of ``obj`` as the API server sends it to a mutating webhook."""
    group, _, version = obj["apiVersion"].rpartition("/")
    (kind,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == obj["kind"] and k.group == group]
    gvk = {"group": group, "version": version, "kind": kind.kind}
    gvr = {"group": group, "version": version, "resource": kind.resource}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": gvk,
            "resource": gvr,
            "requestKind": gvk,
            "requestResource": gvr,
            "name": obj["metadata"].get("name", ""),
            "namespace": obj["metadata"]["namespace"],
            "operation": operation,
            "userInfo": user,
            "object": obj,
            "oldObject": old,
            "dryRun": dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": f"{operation.title()}Options"},
        },
    }


def apply_patch(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the response's JSONPatch applied (unchanged when there is none)."""
    if "patch" not in response:
        return copy.deepcopy(obj)
    assert response["patchType"] == "JSONPatch"
    ops = json.loads(base64.b64decode(response["patch"]))
    patched: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
    return patched


def values_at(obj: dict[str, Any], dotted: str) -> list[Any]:
    """Every value at a ``pod_specs``-style path of ``obj`` (``[]`` every item, ``{}`` every value; absent: none)."""
    nodes: list[Any] = [obj]
    for segment in dotted.split("."):
        name = segment.removesuffix("[]").removesuffix("{}")
        found: list[Any] = []
        for node in nodes:
            child = node.get(name) if isinstance(node, dict) else None
            if child is None:
                continue
            if segment.endswith("[]"):
                found += child
            elif segment.endswith("{}"):
                found += list(child.values())
            else:
                found.append(child)
        nodes = found
    return nodes


def pod_specs_of(obj: dict[str, Any], kind: WorkloadKindSpec) -> list[dict[str, Any]]:
    """Every PodSpec of ``obj`` at the kind's paths (independent of the webhook's own walker)."""
    return [spec for dotted in kind.pod_specs for spec in values_at(obj, dotted)]


#: The break-glass group of the reference platform (``cluster.posixIdentity.breakGlassGroup``).
ON_CALL = "platform-oncall"
#: subresource → the options kind the API server sends as ``object``, with typical options.
CONNECT_OPTIONS: dict[str, dict[str, Any]] = {
    "exec": {"kind": "PodExecOptions", "stdin": True, "tty": True, "container": "train", "command": ["bash"]},
    "attach": {"kind": "PodAttachOptions", "stdin": True, "tty": True, "container": "train"},
    "portforward": {"kind": "PodPortForwardOptions", "ports": [8265]},
    "proxy": {"kind": "PodProxyOptions", "path": "/api/jobs/"},
}


def connect_review(
    pod: str, sub: str, *, user: dict[str, Any], namespace: str = names.namespace("research")
) -> dict[str, Any]:
    """The AdmissionReview of ``kubectl exec|attach|port-forward`` / an API proxy call to ``pod``."""
    options = {"apiVersion": "v1", **CONNECT_OPTIONS[sub]}
    kind = {"group": "", "version": "v1", "kind": options["kind"]}
    resource = {"group": "", "version": "v1", "resource": "pods"}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "subResource": sub,
            "requestKind": kind,
            "requestResource": resource,
            "requestSubResource": sub,
            "name": pod,
            "namespace": namespace,
            "operation": "CONNECT",
            "userInfo": user,
            "object": options,
            "oldObject": None,
            "dryRun": False,
            "options": None,
        },
    }


def on_call_user() -> dict[str, Any]:
    """A platform engineer mapped to the break-glass group by their access entry."""
    return {
        "username": f"arn:aws:sts::{ACCOUNT}:assumed-role/PlatformOnCall/oscar",
        "groups": [ON_CALL, "system:authenticated"],
        "extra": {"sessionName": ["oscar"]},
    }
