"""The little of the Kubernetes API the webhook calls: read a Pod, record an Event.

A CONNECT request (``pods/exec``, ``pods/attach``, ``pods/portforward``, ``pods/proxy``) carries the connect
options (``PodExecOptions``...) as its object, not the Pod, so the webhook reads the Pod to learn whose it is
(:mod:`hyperpod_tenancy.webhook.connect`). Its ServiceAccount is bound to a ClusterRole that may ``get pods`` and
``create events`` and nothing else (:func:`hyperpod_tenancy.k8s.posix_identity.webhook_api_access`).

In the cluster the API server is ``https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT``, the token and the
CA the projected service-account volume's (``/var/run/secrets/kubernetes.io/serviceaccount``). The token file is
re-read on every call: kubelet rotates bound tokens (about hourly), and a token read once would expire.
"""

from __future__ import annotations

import asyncio
import datetime
import http.client
import os
import ssl
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hyperpod_tenancy.k8s import labels

__all__ = [
    "IN_CLUSTER_CA",
    "IN_CLUSTER_TOKEN",
    "KubeApi",
    "KubeApiUnavailable",
    "event_name",
    "in_cluster_url",
]

_SA_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: The service-account token kubelet projects into the pod.
IN_CLUSTER_TOKEN = _SA_DIR / "token"
#: The cluster CA kubelet projects into the pod.
IN_CLUSTER_CA = _SA_DIR / "ca.crt"
#: Seconds one API call may take (the API server waits at most the webhook's ``timeoutSeconds`` in all).
_TIMEOUT_SECONDS = 3.0


class KubeApiUnavailable(Exception):  # noqa: N818
    """The API server did not answer, or refused the call; the message says which."""


#: The longest name of an object (a DNS subdomain, RFC 1123).
_NAME_MAX = 253


def event_name(pod: str, moment: datetime.datetime) -> str:
    """Return the name of an Event about ``pod`` at ``moment``: ``<pod>.<nanoseconds, hex>``.

    client-go's recorder names Events so (``k8s.io/client-go/tools/events``). A ``generateName`` of ``<pod>.`` is
    refused: the API server validates the prefix itself as a DNS subdomain, which may not end with a dot.
    """
    stamp = f"{int(moment.timestamp() * 1_000_000) * 1000:x}"
    return f"{pod[: _NAME_MAX - len(stamp) - 1]}.{stamp}"


def in_cluster_url() -> str | None:
    """Return the API server's URL from the pod's environment, or None outside a cluster."""
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        return None
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    return f"https://{host}:{port}"


@dataclass(frozen=True, kw_only=True)
class KubeApi:
    """A client of one API server (HTTPS, bearer token, the cluster CA)."""

    #: ``https://host:port``.
    url: str
    #: File holding the bearer token (re-read on each call).
    token_file: Path
    #: PEM CA bundle of the API server.
    ca_file: Path

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> tuple[int, Any]:
        parsed = urllib.parse.urlsplit(self.url)
        context = ssl.create_default_context(cafile=str(self.ca_file))
        try:
            token = self.token_file.read_text(encoding="utf-8").strip()
            conn = http.client.HTTPSConnection(
                parsed.hostname or "", parsed.port or 443, context=context, timeout=_TIMEOUT_SECONDS
            )
            try:
                payload = None if body is None else orjson.dumps(body)
                headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
                if payload is not None:
                    headers["Content-Type"] = "application/json"
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
            finally:
                conn.close()
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            raise KubeApiUnavailable(f"{method} {path}: {exc}") from exc
        try:
            return response.status, orjson.loads(data) if data else None
        except orjson.JSONDecodeError:
            return response.status, None

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Return the Pod, or None when it does not exist.

        Raises:
            KubeApiUnavailable: the API server did not answer or refused the read.

        """
        path = f"/api/v1/namespaces/{urllib.parse.quote(namespace)}/pods/{urllib.parse.quote(name)}"
        status, body = await asyncio.to_thread(self._call, "GET", path, None)
        if status == 404:
            return None
        if status != 200 or not isinstance(body, dict):
            raise KubeApiUnavailable(f"GET {path} answered {status}")
        return body

    async def list_nodes(self) -> list[dict[str, Any]]:
        """Return every Node of the cluster (read in pages of 500).

        Raises:
            KubeApiUnavailable: the API server did not answer or refused the read.

        """
        return await self._list("/api/v1/nodes")

    async def list_namespaces(self) -> list[dict[str, Any]]:
        """Return every Namespace of the cluster (read in pages of 500).

        Raises:
            KubeApiUnavailable: the API server did not answer or refused the read.

        """
        return await self._list("/api/v1/namespaces")

    async def _list(self, collection: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = urllib.parse.urlencode({"limit": 500, **({"continue": token} if token else {})})
            path = f"{collection}?{query}"
            status, body = await asyncio.to_thread(self._call, "GET", path, None)
            if status != 200 or not isinstance(body, dict) or not isinstance(body.get("items"), list):
                raise KubeApiUnavailable(f"GET {path} answered {status}")
            items += [n for n in body["items"] if isinstance(n, dict)]
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    async def record_event(
        self, pod: dict[str, Any], *, reason: str, action: str, note: str, instance: str
    ) -> None:
        """Record a Warning ``events.k8s.io/v1`` Event about ``pod``.

        Raises:
            KubeApiUnavailable: the API server did not answer or refused the write.

        """
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace", ""))
        moment = datetime.datetime.now(datetime.UTC)
        now = moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        event = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": event_name(str(meta.get("name", "pod")), moment), "namespace": namespace},
            "eventTime": now,
            "reportingController": labels.WEBHOOK_REPORTING_CONTROLLER,
            "reportingInstance": instance[:128],
            "action": action,
            "reason": reason,
            "type": "Warning",
            "note": note[:1024],
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "namespace": namespace,
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
            },
        }
        path = f"/apis/events.k8s.io/v1/namespaces/{urllib.parse.quote(namespace)}/events"
        status, _ = await asyncio.to_thread(self._call, "POST", path, event)
        if status not in (200, 201):
            raise KubeApiUnavailable(f"POST {path} answered {status}")
