"""A small client of a real Kubernetes API server: REST over TLS, discovery, server-side apply, impersonation.

The tests talk to the API the way kubectl does, with nothing in between that could hide what the server said:

* every answer carries the server's ``Warning`` headers (:attr:`Answer.warnings`), which an apply test fails on;
* :meth:`KubeClient.apply` is server-side apply (``application/apply-patch+yaml``) with
  ``fieldValidation=Strict``: an unknown or duplicated field is an error, not a dropped value;
* :meth:`KubeClient.as_user` sends the same requests as another person (``Impersonate-User``,
  ``Impersonate-Group`` and ``Impersonate-Extra-*``: Kubernetes docs, "User impersonation"), so RBAC and
  admission judge the request as theirs;
* :func:`from_kubeconfig` reads a kubeconfig (certificate, token or exec credential plugin, as ``aws eks
  get-token`` writes it), so the same non-destructive checks run against a deployed cluster.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import urllib3
import yaml

__all__ = ["Answer", "KubeClient", "KubeError", "Resource", "from_kubeconfig", "wait_until"]

T = TypeVar("T")

#: Field manager of the tests' applies (the ``managedFields`` entry a test reads back).
FIELD_MANAGER = "hyperpod-tenancy-tests"


class KubeError(AssertionError):
    """The API server refused a request: its status and the ``Status`` it answered."""

    def __init__(self, method: str, path: str, answer: Answer) -> None:
        self.answer = answer
        message = answer.body.get("message") if isinstance(answer.body, dict) else answer.body
        super().__init__(f"{method} {path}: {answer.status} {message}")


@dataclass(frozen=True)
class Answer:
    """What the server answered: status, decoded body and every ``Warning`` header's text."""

    status: int
    body: Any
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """2xx."""
        return 200 <= self.status < 300

    @property
    def reason(self) -> str:
        """``Status.reason`` of a refusal (``Forbidden``, ``Invalid``, ``NotFound``...), or ``""``."""
        return str(self.body.get("reason", "")) if isinstance(self.body, dict) else ""

    @property
    def message(self) -> str:
        """``Status.message`` of a refusal, or ``""``."""
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else ""


@dataclass(frozen=True)
class Resource:
    """A kind as discovery serves it: its path prefix, plural name and scope."""

    group_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def prefix(self) -> str:
        """``/api/v1`` or ``/apis/<group>/<version>``."""
        return (
            f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"
        )

    def path(self, *, namespace: str | None = None, name: str | None = None) -> str:
        """The collection's path, or the object's with ``name``."""
        ns = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        tail = f"/{name}" if name else ""
        return f"{self.prefix}{ns}/{self.plural}{tail}"


@dataclass
class KubeClient:
    """A client of one API server as one identity (a client certificate, a bearer token, or impersonation).

    Args:
        server: ``https://host:port``.
        ca: the CA file that signed the server's certificate.
        cert: a client certificate and key (``(cert, key)`` files), or ``None``.
        token: a bearer token, or a callable returning a fresh one, or ``None``.
        impersonate: ``Impersonate-*`` headers sent with every request (see :meth:`as_user`).

    """

    server: str
    ca: Path
    cert: tuple[Path, Path] | None = None
    token: str | Callable[[], str] | None = None
    impersonate: Mapping[str, Sequence[str]] = field(default_factory=dict)
    _resources: dict[tuple[str, str], Resource] = field(default_factory=dict, repr=False)
    _pool: urllib3.PoolManager | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self._pool is None:
            self._pool = urllib3.PoolManager(
                cert_reqs="CERT_REQUIRED",
                ca_certs=str(self.ca),
                cert_file=str(self.cert[0]) if self.cert else None,
                key_file=str(self.cert[1]) if self.cert else None,
            )

    def as_user(
        self, user: str, groups: Sequence[str] = (), extra: Mapping[str, Sequence[str]] | None = None
    ) -> KubeClient:
        """The same client, each request made as ``user`` in ``groups`` (impersonation; needs the right to)."""
        headers: dict[str, Sequence[str]] = {"Impersonate-User": [user], "Impersonate-Group": list(groups)}
        for key, values in (extra or {}).items():
            headers[f"Impersonate-Extra-{urllib.parse.quote(key, safe='')}"] = list(values)
        return KubeClient(self.server, self.ca, self.cert, self.token, headers, self._resources, self._pool)

    # ------------------------------------------------------------------------------------------ requests

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, str] | None = None,
        content_type: str = "application/json",
        timeout: float = 30,
    ) -> Answer:
        """Send one request; return the answer whatever its status (see :meth:`call` to raise on refusal)."""
        headers = urllib3.HTTPHeaderDict({"Accept": "application/json"})
        if body is not None:
            headers["Content-Type"] = content_type
        token = self.token() if callable(self.token) else self.token
        if token:
            headers["Authorization"] = f"Bearer {token}"
        for name, values in self.impersonate.items():
            for value in values:  # the API server reads each Impersonate-Group header as one group
                headers.add(name, value)
        data = None if body is None else (body if isinstance(body, bytes | str) else json.dumps(body))
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        response = self._pool.request(
            method, self.server + path + query, body=data, headers=headers, timeout=timeout, retries=False
        )
        warnings = tuple(
            value.split(" ", 2)[2].strip().strip('"') if value.startswith("299 ") else value
            for value in response.headers.getlist("Warning")
        )
        return Answer(response.status, _decode(response.data.decode()), warnings)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """:meth:`request`, raising :class:`KubeError` unless the status is 2xx; returns the body."""
        answer = self.request(method, path, **kwargs)
        if not answer.ok:
            raise KubeError(method, path, answer)
        return answer.body

    # ----------------------------------------------------------------------------------------- discovery

    def resource(self, api_version: str, kind: str) -> Resource:
        """The served resource of ``kind`` in ``api_version`` (discovery, read again when not known yet)."""
        key = (api_version, kind)
        if key not in self._resources:
            prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
            listing = self.call("GET", prefix)
            for item in listing.get("resources", []):
                if "/" in item["name"]:
                    continue
                found = Resource(api_version, item["kind"], item["name"], bool(item["namespaced"]))
                self._resources[(api_version, item["kind"])] = found
        if key not in self._resources:
            raise KubeError("GET", f"{api_version} {kind}", Answer(404, {"message": f"{kind} is not served"}))
        return self._resources[key]

    def forget_discovery(self) -> None:
        """Drop what discovery said (after CRDs were added or removed)."""
        self._resources.clear()

    def path_of(self, obj: Mapping[str, Any]) -> str:
        """The object's path (by ``apiVersion``, ``kind``, ``metadata.namespace`` and ``metadata.name``)."""
        meta = obj["metadata"]
        resource = self.resource(obj["apiVersion"], obj["kind"])
        return resource.path(namespace=meta.get("namespace"), name=meta["name"])

    # ------------------------------------------------------------------------------------------ objects

    def apply(
        self,
        obj: Mapping[str, Any],
        *,
        dry_run: bool = False,
        field_manager: str = FIELD_MANAGER,
    ) -> Answer:
        """Server-side apply of ``obj`` (``fieldValidation=Strict``, ``force``); the answer, refused or not."""
        params = {"fieldManager": field_manager, "fieldValidation": "Strict", "force": "true"}
        if dry_run:
            params["dryRun"] = "All"
        return self.request(
            "PATCH",
            self.path_of(obj),
            body=json.dumps(obj),
            params=params,
            content_type="application/apply-patch+yaml",
        )

    def create(self, obj: Mapping[str, Any], *, dry_run: bool = False) -> Answer:
        """``POST`` ``obj`` to its collection (``fieldValidation=Strict``); the answer, refused or not."""
        meta = obj["metadata"]
        resource = self.resource(obj["apiVersion"], obj["kind"])
        params = {"fieldValidation": "Strict", **({"dryRun": "All"} if dry_run else {})}
        return self.request("POST", resource.path(namespace=meta.get("namespace")), body=obj, params=params)

    def merge_patch(self, obj: Mapping[str, Any], patch: Any, *, dry_run: bool = False) -> Answer:
        """A JSON merge patch (RFC 7386) of the object ``obj`` names, as ``kubectl patch --type merge`` sends it."""
        params = {"dryRun": "All"} if dry_run else None
        return self.request(
            "PATCH", self.path_of(obj), body=patch, params=params, content_type="application/merge-patch+json"
        )

    def get(self, obj: Mapping[str, Any]) -> dict[str, Any] | None:
        """The object as the server has it, or ``None`` when it does not exist."""
        answer = self.request("GET", self.path_of(obj))
        if answer.status == 404:
            return None
        if not answer.ok:
            raise KubeError("GET", self.path_of(obj), answer)
        found: dict[str, Any] = answer.body
        return found

    def delete(self, obj: Mapping[str, Any], *, propagation: str = "Background") -> Answer:
        """Delete the object (``404`` is an answer too)."""
        return self.request("DELETE", self.path_of(obj), body={"propagationPolicy": propagation})

    def list(self, api_version: str, kind: str, *, namespace: str | None = None, **params: str) -> list[Any]:
        """Every object of a kind (in ``namespace``, or everywhere), following ``continue`` tokens."""
        resource = self.resource(api_version, kind)
        items: list[Any] = []
        query = {"limit": "500", **params}
        while True:
            page = self.call("GET", resource.path(namespace=namespace), params=query)
            items += page.get("items", [])
            token = page.get("metadata", {}).get("continue")
            if not token:
                return items
            query["continue"] = token

    def access_review(self, *, user: str, groups: Sequence[str], attributes: Mapping[str, str]) -> bool:
        """Whether RBAC allows ``user`` in ``groups`` the request ``attributes`` (a SubjectAccessReview)."""
        review = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups), "resourceAttributes": dict(attributes)},
        }
        answer = self.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
        return bool(answer["status"].get("allowed"))


def _decode(text: str) -> Any:
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def wait_until(check: Callable[[], T | None], *, timeout: float, what: str, interval: float = 0.1) -> T:
    """Poll ``check`` until it returns something other than ``None`` or ``False``; fail naming ``what``."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while True:
        try:
            value = check()
            if value is not None and value is not False:
                return value
        except (OSError, urllib3.exceptions.HTTPError, KubeError) as error:
            last = error
        if time.monotonic() > deadline:
            raise AssertionError(
                f"timed out after {timeout:.0f} s waiting for {what}" + (f": {last}" if last else "")
            )
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------- kubeconfig


def _data_file(directory: Path, name: str, data: str) -> Path:
    path = directory / name
    path.write_bytes(base64.b64decode(data))
    return path


def _exec_token(spec: Mapping[str, Any]) -> Callable[[], str]:
    """A token source running the kubeconfig's exec credential plugin (``aws eks get-token``...), cached."""
    cache: dict[str, Any] = {}

    def token() -> str:
        if cache.get("expires", 0) > time.time() + 30:
            return str(cache["token"])
        env = {**os.environ, **{e["name"]: e["value"] for e in spec.get("env") or []}}
        out = subprocess.run(
            [spec["command"], *(spec.get("args") or [])], env=env, check=True, capture_output=True, text=True
        ).stdout
        status = json.loads(out)["status"]
        cache["token"] = status["token"]
        cache["expires"] = time.time() + 300
        return str(status["token"])

    return token


def from_kubeconfig(path: Path, *, context: str | None = None) -> KubeClient:
    """A client of the kubeconfig's (current or named) context: its server, CA and user credentials.

    Certificate and key files or inline data, a bearer token, or an exec credential plugin (``aws eks
    get-token``) are read; anything else is refused with the field named.
    """
    config = yaml.safe_load(path.read_text())
    name = context or config.get("current-context")
    ctx = next((c["context"] for c in config.get("contexts", []) if c["name"] == name), None)
    if ctx is None:
        raise ValueError(f"{path}: no context {name!r}")
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == ctx["cluster"])
    user = next((u["user"] for u in config.get("users", []) if u["name"] == ctx.get("user")), {})
    scratch = Path(tempfile.mkdtemp(prefix="kubeconfig-"))
    base = path.parent
    if "certificate-authority-data" in cluster:
        ca = _data_file(scratch, "ca.crt", cluster["certificate-authority-data"])
    elif "certificate-authority" in cluster:
        ca = base / cluster["certificate-authority"]
    else:
        raise ValueError(f"{path}: cluster {ctx['cluster']!r} names no certificate-authority(-data)")
    cert: tuple[Path, Path] | None = None
    token: str | Callable[[], str] | None = None
    if "client-certificate-data" in user:
        cert = (
            _data_file(scratch, "client.crt", user["client-certificate-data"]),
            _data_file(scratch, "client.key", user["client-key-data"]),
        )
    elif "client-certificate" in user:
        cert = (base / user["client-certificate"], base / user["client-key"])
    elif "token" in user:
        token = str(user["token"])
    elif "exec" in user:
        token = _exec_token(user["exec"])
    else:
        raise ValueError(f"{path}: user {ctx.get('user')!r} has no client certificate, token or exec plugin")
    return KubeClient(str(cluster["server"]).rstrip("/"), ca, cert, token)


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca: Path,
    cert: Path | None = None,
    key: Path | None = None,
    token: str | None = None,
    name: str = "test",
) -> Path:
    """Write a one-context kubeconfig (certificate or token) for a component, and return its path."""
    user: dict[str, str] = {}
    if cert and key:
        user = {"client-certificate": str(cert), "client-key": str(key)}
    elif token:
        user = {"token": token}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }
    path.write_text(yaml.safe_dump(config))
    return path


def documents(path: Path) -> Iterator[dict[str, Any]]:
    """The non-empty YAML documents of a file."""
    for doc in yaml.safe_load_all(path.read_text()):
        if doc:
            yield doc
