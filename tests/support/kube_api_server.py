"""A stand-in for the part of the Kubernetes API the webhook calls, served over real TLS on loopback.

``GET /api/v1/namespaces/<ns>/pods/<name>`` answers the Pods put in :attr:`KubeApiServer.pods` (404 otherwise);
``GET /api/v1/nodes?limit=N[&continue=T]`` lists :attr:`KubeApiServer.nodes` in pages of ``N``, as a ``NodeList``
with ``metadata.continue`` where more remain (the API server's chunked list), and ``GET /api/v1/namespaces`` lists
:attr:`KubeApiServer.namespaces` the same way;
``POST /apis/events.k8s.io/v1/namespaces/<ns>/events`` records the Event (201), or refuses it (422) unless its
``metadata.name`` or ``metadata.generateName`` is a DNS subdomain (RFC 1123), as the API server validates both. Every request must carry
``Authorization: Bearer <token>`` with the token of the file the webhook was given (401 otherwise), as the API
server requires of a service account. Request paths and bodies are kept for the tests to read.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self


def answer_json(handler: BaseHTTPRequestHandler, status: int, body: Any) -> None:
    """Send ``body`` as the JSON answer of ``handler``'s request, with ``status`` (as the API server answers)."""
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


_POD = re.compile(r"^/api/v1/namespaces/([^/]+)/pods/([^/]+)$")
_EVENTS = re.compile(r"^/apis/events\.k8s\.io/v1/namespaces/([^/]+)/events$")
#: A DNS subdomain (RFC 1123), as ``k8s.io/apimachinery`` ``IsDNS1123Subdomain`` checks it.
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class ServedOnThread:
    """A ``ThreadingHTTPServer`` (``self._server``) served on a daemon thread while the context is open."""

    _server: ThreadingHTTPServer
    #: ``https`` once the socket is wrapped in TLS.
    scheme = "http"

    @property
    def url(self) -> str:
        """``<scheme>://127.0.0.1:<port>``."""
        return f"{self.scheme}://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Self:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._thread.join()
        self._server.server_close()


class KubeApiServer(ServedOnThread):
    """The fake API server; a context manager (serves on a thread)."""

    def __init__(self, *, cert: Path, key: Path, token: str, token_prefix: bool = False) -> None:
        self.token = token
        #: Accept any bearer token that starts with :attr:`token` (an EKS token: ``k8s-aws-v1.`` and a signed URL).
        self.token_prefix = token_prefix
        #: ``(namespace, name)`` → Pod.
        self.pods: dict[tuple[str, str], dict[str, Any]] = {}
        #: The cluster's Nodes, in order.
        self.nodes: list[dict[str, Any]] = []
        #: Namespaces ``GET /api/v1/namespaces`` lists.
        self.namespaces: list[dict[str, Any]] = []
        #: Events posted, in order.
        self.events: list[dict[str, Any]] = []
        #: ``(method, path)`` of every request.
        self.requests: list[tuple[str, str]] = []
        #: When set, every request answers this status (an API server in trouble).
        self.fail_with: int | None = None
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _answer(self, status: int, body: Any) -> None:
                answer_json(self, status, body)

            def _authorized(self) -> bool:
                outer.requests.append((self.command, self.path))
                if outer.fail_with is not None:
                    self._answer(outer.fail_with, {"kind": "Status", "code": outer.fail_with})
                    return False
                sent = self.headers.get("Authorization", "")
                expected = f"Bearer {outer.token}"
                if not (sent.startswith(expected) if outer.token_prefix else sent == expected):
                    self._answer(401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
                    return False
                return True

            def _list(self, kind: str, items: list[dict[str, Any]]) -> None:
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                limit = int(query.get("limit", ["0"])[0]) or len(items) or 1
                start = int(query.get("continue", ["0"])[0])
                page = items[start : start + limit]
                more = start + limit < len(items)
                meta = {"resourceVersion": "1", **({"continue": str(start + limit)} if more else {})}
                self._answer(200, {"kind": kind, "apiVersion": "v1", "metadata": meta, "items": page})

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                collection = urllib.parse.urlsplit(self.path).path
                if collection == "/api/v1/nodes":
                    self._list("NodeList", outer.nodes)
                    return
                if collection == "/api/v1/namespaces":
                    self._list("NamespaceList", outer.namespaces)
                    return
                match = _POD.match(self.path)
                pod = outer.pods.get((match[1], match[2])) if match else None
                if pod is None:
                    self._answer(404, {"kind": "Status", "code": 404, "reason": "NotFound"})
                else:
                    self._answer(200, pod)

            def do_POST(self) -> None:
                if not self._authorized():
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                match = _EVENTS.match(self.path)
                if match is None or body.get("metadata", {}).get("namespace") != match[1]:
                    self._answer(400, {"kind": "Status", "code": 400})
                    return
                meta = body["metadata"]
                name = meta.get("name") or meta.get("generateName", "")
                if not (_SUBDOMAIN.match(name) and len(name) <= 253):
                    self._answer(422, {"kind": "Status", "code": 422, "reason": "Invalid"})
                    return
                outer.events.append(body)
                self._answer(201, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https"
