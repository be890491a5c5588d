"""A stand-in for the cluster ``hyperpod-tenancy probe`` runs against, over a real socket (plain HTTP on loopback).

It remains for what the real control plane cannot show: probe pods that run and write the logs the network checks
read (KWOK runs no containers), and scripted failures (an image that cannot be pulled, an interrupted run).
``test_cluster_probe.py`` runs the same command against the real server and against this stand-in and requires
the same verdict for every check (the admission and RBAC checks judged for real there).

It answers the requests the probe's live runner makes with the kubernetes client and judges them with the same
offline models the rest of the suite uses, never with the probe's own code:

* ``POST .../selfsubjectaccessreviews`` (the operator's only own request): ``allowed`` as :attr:`impersonate` says;
  it must carry no impersonation header;
* every other request must carry ``Impersonate-User``, ``Impersonate-Group`` and ``Impersonate-Extra-arn``
  (else 401, recorded in :attr:`unimpersonated`); it is authorized with the
  rendered RBAC (:mod:`rbac_eval`) for the impersonated group, and refused with the API server's message
  (``<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource ...``, apiserver
  ``endpoints/handlers/responsewriters/errors.go`` ``forbiddenMessage``);
* ``POST`` of a Job runs the rendered ValidatingAdmissionPolicies with the CEL engine (:mod:`cel_admission`),
  with the impersonated user as ``request.userInfo``; a denial answers 403 with the policy's message in the API
  server's wording (``ValidatingAdmissionPolicy '<p>' with binding '<p>' denied request: <message>``,
  apiserver ``admission/plugin/policy/validating/dispatcher.go``). ``dryRun=All`` stores nothing;
* a stored Job gets one pod whose phases and log are scripted per Job role (:attr:`script`); ``GET`` of pods by
  label selector and of ``pods/<name>/log`` answer them;
* ``DELETE`` of Jobs is judged by the delete policy (CEL, with the DeleteOptions of body and query: a Job
  deleted without ``propagationPolicy`` is refused), then recorded with its options, as are Services.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cel_admission import evaluate_policies
from kube_api_server import ServedOnThread, answer_json
from rbac_eval import Authorizer, Request, Subject

IMPERSONATION_HEADERS = (
    "Impersonate-User",
    "Impersonate-Group",
    "Impersonate-Extra-arn",
)
_PATH = re.compile(
    r"^/(?:api/v1|apis/(?P<group>[^/]+)/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[^/]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[^/]+))?$"
)


@dataclass
class PodScript:
    """What a probe Job's pod does: ``phases`` one per ``GET`` (the last repeats) and its ``log``."""

    phases: Sequence[str] = ("Pending", "Running", "Succeeded")
    log: str = ""
    unschedulable: bool = False
    #: A container waiting reason (``ImagePullBackOff``...): the pod is on a node but does not start.
    waiting: str = ""


@dataclass
class Seen:
    """One request as the fake server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None
    status: int = 0


@dataclass
class ProbeCluster(ServedOnThread):
    """The fake cluster: RBAC and admission models over HTTP; a context manager."""

    rbac_objects: list[dict[str, Any]]
    policies: list[dict[str, Any]]
    namespaces: dict[str, dict[str, Any]]
    #: Job role (the ``hyperpod-tenancy.io/probe-role`` label and the name's last part) → its pod's script.
    script: dict[str, PodScript] = field(default_factory=dict)
    impersonate: bool = True
    seen: list[Seen] = field(default_factory=list)
    stored: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    deleted: list[tuple[str, str, str, Any]] = field(default_factory=list)
    unimpersonated: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.authz = Authorizer(self.rbac_objects)
        self._polls: dict[str, int] = {}
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length", "0"))
                return json.loads(self.rfile.read(length)) if length else None

            def _handle(self) -> None:
                seen = Seen(self.command, self.path, dict(self.headers.items()), self._body())
                with outer._lock:
                    outer.seen.append(seen)
                    status, answer = outer.answer(seen)
                    seen.status = status
                if isinstance(answer, str):  # a pod log is plain text
                    data = answer.encode()
                    self.send_response(status)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                else:
                    answer_json(self, status, answer)

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

            def do_DELETE(self) -> None:
                self._handle()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    # ------------------------------------------------------------------------------------------ answers
    def answer(self, seen: Seen) -> tuple[int, Any]:  # noqa: PLR0911 - one answer per kind of request
        """The status and body of one request."""
        url = urllib.parse.urlsplit(seen.path)
        query = urllib.parse.parse_qs(url.query)
        match = _PATH.match(url.path)
        assert match is not None, seen.path
        group, namespace, resource = match["group"] or "", match["ns"], match["resource"]
        name, sub = match["name"] or "", match["sub"]
        if resource == "selfsubjectaccessreviews":
            assert not any(h in seen.headers for h in IMPERSONATION_HEADERS), "the operator's own request"
            return 201, {**seen.body, "status": {"allowed": self.impersonate}}
        missing = [h for h in IMPERSONATION_HEADERS if h not in seen.headers]
        if missing:
            self.unimpersonated.append(f"{seen.method} {seen.path}")
            return 401, _status(401, "Unauthorized", f"not impersonated: {missing}")
        user = seen.headers["Impersonate-User"]
        who = Subject(user, (seen.headers["Impersonate-Group"],))
        verb = {"POST": "create", "DELETE": "delete"}.get(seen.method) or ("get" if name else "list")
        body_name = (seen.body or {}).get("metadata", {}).get("name", "") if seen.method == "POST" else name
        rbac = Request(verb, f"{resource}/{sub}" if sub else resource, group, namespace, name)
        if not self.authz.check(who, rbac):
            kind = f"{resource}.{group}" if group else resource
            message = (
                f'{kind} "{body_name}" is forbidden: User "{user}" cannot {verb} resource "{rbac.resource}" '
                f'in API group "{group}" in the namespace "{namespace}"'
            )
            return 403, _status(403, "Forbidden", message)
        if seen.method == "POST":
            return self._create(seen.body, resource, namespace or "", who, dry=query.get("dryRun") == ["All"])
        if seen.method == "DELETE":
            return self._delete(seen, (resource, namespace or "", name), who, query)
        if resource == "pods" and sub == "log":
            job = name.rsplit("-", 1)[0]
            return 200, self._script(job).log
        if resource == "pods":
            selector = dict(s.split("=", 1) for s in query.get("labelSelector", [""])[0].split(","))
            return 200, {
                "kind": "PodList",
                "apiVersion": "v1",
                "metadata": {},
                "items": self._pods(namespace, selector),
            }
        return 404, _status(404, "NotFound", seen.path)

    def _create(
        self, obj: dict[str, Any], resource: str, namespace: str, who: Subject, *, dry: bool
    ) -> tuple[int, Any]:
        if resource == "jobs":
            decision = evaluate_policies(
                self.policies,
                obj=obj,
                namespace=self.namespaces[namespace],
                group="batch",
                resource="jobs",
                user_info={"username": who.user, "groups": [*who.groups, "system:authenticated"]},
            )
            for outcome in decision.outcomes:
                if "Deny" in outcome.actions and outcome.failures:
                    message = (
                        f'jobs.batch "{obj["metadata"]["name"]}" is forbidden: ValidatingAdmissionPolicy '
                        f"'{outcome.policy}' with binding '{outcome.policy}' denied request: {outcome.failures[0]}"
                    )
                    return 403, _status(403, "Forbidden", message)
        if not dry:
            self.stored[(resource, namespace, obj["metadata"]["name"])] = obj
        return 201, obj

    def _delete(
        self, seen: Seen, key: tuple[str, str, str], who: Subject, query: dict[str, list[str]]
    ) -> tuple[int, Any]:
        """Delete with the DeleteOptions of the body and the query (the API server merges both), judged by CEL."""
        options = {**(seen.body or {}), **{k: v[0] for k, v in query.items()}}
        resource, namespace, name = key
        found = self.stored.get(key)
        if found is None:
            return 404, _status(404, "NotFound", name)
        if resource == "jobs":
            decision = evaluate_policies(
                self.policies,
                obj=found,
                namespace=self.namespaces[namespace],
                group="batch",
                resource="jobs",
                operation="DELETE",
                user_info={"username": who.user, "groups": [*who.groups, "system:authenticated"]},
                options={k: v for k, v in options.items() if k in ("propagationPolicy", "orphanDependents")},
            )
            if decision.denied:
                return 403, _status(403, "Forbidden", decision.denied[0])
        del self.stored[key]
        self.deleted.append((resource, namespace, name, options))
        return 200, _status(200, "Success", "deleted")

    def _script(self, job: str) -> PodScript:
        role = job.rsplit("-", 1)[-1] if job.endswith("server") else "-".join(job.split("-")[-2:])
        return self.script.get(role, PodScript())

    def _pods(self, namespace: str | None, selector: dict[str, str]) -> list[dict[str, Any]]:
        job = selector.get("job-name", "")
        if ("jobs", namespace or "", job) not in self.stored:
            return []
        script = self._script(job)
        polls = self._polls[job] = self._polls.get(job, -1) + 1
        phase = script.phases[min(polls, len(script.phases) - 1)]
        status: dict[str, Any] = {"phase": phase}
        if script.unschedulable:
            status = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector.",
                    }
                ],
            }
        if script.waiting:
            status = {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [
                    {
                        "name": "probe",
                        "state": {"waiting": {"reason": script.waiting, "message": "pull access denied"}},
                    }
                ],
            }
        return [
            {
                "metadata": {"name": f"{job}-x7k2q", "namespace": namespace, "labels": {"job-name": job}},
                "status": status,
            }
        ]


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
