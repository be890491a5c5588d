"""The live runner of ``hyperpod-tenancy probe``: creates the plan's objects as each team, watches, cleans up.

Every tenant request is made as a member of the acting team through Kubernetes user impersonation
(Kubernetes documentation, "Authenticating", section "User impersonation": ``Impersonate-User``,
``Impersonate-Group``, ``Impersonate-Extra-<key>`` headers), so RBAC, the ValidatingAdmissionPolicies and the
POSIX identity webhook judge the request exactly as they judge that team's people. The operator's own identity
makes only one kind of request: ``SelfSubjectAccessReview``, to check up front that it may impersonate
(``impersonate`` on ``users``, ``groups`` and ``userextras/arn`` of ``authentication.k8s.io``).

Order (:func:`run_probe`): A's server Job and Service; once the server runs, A's and B's client Jobs; their logs
(``PROBE-RESULT <check> <outcome> <detail>`` lines); the dry-run requests (``dryRun=All``: admission runs, both
ValidatingAdmissionPolicies and webhooks, and nothing is stored; Kubernetes API concepts, "Dry-run"), made after
the clients because the POSIX identity webhook only looks up a UID on a dry run and the clients' real creation
gave the probe's member one. Clean-up, in ``finally`` (so also on Ctrl-C): every created Job with
``propagationPolicy: Background`` (the platform denies orphaning deletes of Jobs), then the Service, as the
team that created them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.tools.probe.plan import RESULT_MARK, Identity, Observed, Outcome, ProbePlan

__all__ = ["ProbeError", "Runner", "run_probe"]

_REQUEST_TIMEOUT = 15
#: The impersonation the operator needs: (API group, resource) of each ``impersonate`` permission.
IMPERSONATION: tuple[tuple[str, str], ...] = (
    ("", "users"),
    ("", "groups"),
    ("authentication.k8s.io", "userextras/arn"),
)


#: Container waiting reasons that do not resolve by waiting longer (kubelet's image and config errors).
_STUCK = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
    }
)


class ProbeError(Exception):
    """The probe cannot run (kubeconfig, API server, missing permission); the message says what to do."""


@dataclass
class _Pod:
    """What a probe Job's pod came to."""

    outcome: Outcome
    detail: str = ""
    log: str = ""


@dataclass
class Runner:
    """The API calls of one run; :attr:`created` is what the clean-up deletes."""

    plan: ProbePlan
    api_factory: Callable[[Identity | None], Any]
    timeout: float
    err: TextIO
    poll: float = 2.0
    created: list[tuple[Identity, str, str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._clients = {
            None: self.api_factory(None),
            self.plan.owner.team: self.api_factory(self.plan.owner),
            self.plan.intruder.team: self.api_factory(self.plan.intruder),
        }

    def _say(self, line: str) -> None:
        print(f"probe: {line}", file=self.err, flush=True)

    def _api(self, team: str | None) -> Any:
        return self._clients[team]

    def _who(self, team: str) -> Identity:
        return self.plan.owner if team == self.plan.owner.team else self.plan.intruder

    # ------------------------------------------------------------------------------------------ preflight
    def preflight(self) -> None:
        """Check that the operator may impersonate; raise :class:`ProbeError` naming the RBAC it lacks."""
        from kubernetes import client  # noqa: PLC0415 - the [explain] extra

        auth = client.AuthorizationV1Api(self._api(None))
        missing = []
        for group, resource in IMPERSONATION:
            base, _, sub = resource.partition("/")
            body: dict[str, Any] = {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {
                    "resourceAttributes": {
                        "verb": "impersonate",
                        "group": group,
                        "resource": base,
                        **({"subresource": sub} if sub else {}),
                    }
                },
            }
            review = partial(auth.create_self_subject_access_review, body, _preload_content=False)  # type: ignore[arg-type]
            answer = self._json(review)
            if not (answer.get("status") or {}).get("allowed"):
                missing.append(f"{group or 'core'}/{resource}")
        if missing:
            raise ProbeError(
                "your identity may not impersonate team members (needed: verb impersonate on "
                f"{', '.join(missing)}). Run the probe as the cluster's admin access (the AmazonEKSClusterAdminPolicy "
                "access entry maps to cluster-admin, which has it) or bind a ClusterRole with those rules"
            )

    def _json(self, call: Callable[[], Any]) -> dict[str, Any]:
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        try:
            response = call()
        except ApiException as exc:
            raise ProbeError(
                f"the Kubernetes API answered {exc.status} {exc.reason}: {_message(exc)}"
            ) from None
        except HTTPError as exc:
            raise ProbeError(f"cannot reach the Kubernetes API: {exc}") from None
        data = json.loads(response.data or b"{}")
        return data if isinstance(data, dict) else {}

    # ------------------------------------------------------------------------------------------ requests
    def _create(self, team: str, obj: dict[str, Any], *, dry_run: bool = False) -> Observed:
        """Create ``obj`` as ``team``; a refusal is an :class:`Observed` ``denied`` with the API's message."""
        from kubernetes import client  # noqa: PLC0415
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        api = self._api(team)
        namespace, name, kind = obj["metadata"]["namespace"], obj["metadata"]["name"], obj["kind"]
        extra: dict[str, Any] = {"_preload_content": False, "_request_timeout": _REQUEST_TIMEOUT}
        if dry_run:
            extra["dry_run"] = "All"
        try:
            if kind == "Job":
                client.BatchV1Api(api).create_namespaced_job(namespace, obj, **extra)  # type: ignore[arg-type]
            else:
                client.CoreV1Api(api).create_namespaced_service(namespace, obj, **extra)  # type: ignore[arg-type]
        except ApiException as exc:
            if exc.status in (400, 403, 422):
                return Observed(outcome=Outcome.DENIED, detail=_message(exc))
            return Observed(outcome=Outcome.ERROR, detail=f"{exc.status} {exc.reason}: {_message(exc)}")
        except HTTPError as exc:
            return Observed(outcome=Outcome.ERROR, detail=f"cannot reach the Kubernetes API: {exc}")
        if not dry_run:
            self.created.append((self._who(team), kind, namespace, name))
        return Observed(outcome=Outcome.OK)

    def _pods(self, team: str, job: dict[str, Any]) -> list[dict[str, Any]]:
        from kubernetes import client  # noqa: PLC0415

        meta = job["metadata"]
        selector = f"{labels.PROBE_LABEL}={self.plan.run},job-name={meta['name']}"
        data = self._json(
            lambda: client.CoreV1Api(self._api(team)).list_namespaced_pod(
                meta["namespace"],
                label_selector=selector,
                _preload_content=False,
                _request_timeout=_REQUEST_TIMEOUT,
            )
        )
        return [p for p in data.get("items") or () if isinstance(p, dict)]

    def _log(self, team: str, pod: dict[str, Any]) -> str:
        from kubernetes import client  # noqa: PLC0415
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        meta = pod["metadata"]
        try:
            response: Any = client.CoreV1Api(self._api(team)).read_namespaced_pod_log(
                meta["name"], meta["namespace"], _preload_content=False, _request_timeout=_REQUEST_TIMEOUT
            )
        except ApiException as exc:
            return f"(the log of pod {meta['name']} cannot be read: {exc.status} {_message(exc)})"
        except HTTPError as exc:
            return f"(the log of pod {meta['name']} cannot be read: {exc})"
        return bytes(response.data or b"").decode("utf-8", "replace")

    def _wait(self, team: str, job: dict[str, Any], *, until: str) -> _Pod:
        """Wait for the Job's pod to be ``Running`` (``until="running"``) or finished (``"done"``).

        Until ``timeout``: no pod (Kueue has not admitted the Job) or a pod that no node takes is
        :attr:`Outcome.UNSCHEDULABLE` (no capacity); a pod on a node whose container cannot start (an image that
        cannot be pulled, a volume that does not mount) is :attr:`Outcome.ERROR` with the container's reason, at
        once for the image errors of :data:`_STUCK` and at the timeout otherwise.
        """
        deadline = time.monotonic() + self.timeout
        why, outcome = "Kueue has not admitted the Job (no pod yet)", Outcome.UNSCHEDULABLE
        while True:
            for pod in self._pods(team, job):
                status = pod.get("status") or {}
                phase = status.get("phase") or "Pending"
                if phase in ("Succeeded", "Failed"):
                    return _Pod(outcome=Outcome.OK, detail=phase, log=self._log(team, pod))
                if phase == "Running" and until == "running":
                    return _Pod(outcome=Outcome.OK, detail="Running")
                unscheduled = [
                    c
                    for c in status.get("conditions") or ()
                    if c.get("type") == "PodScheduled" and c.get("status") == "False"
                ]
                containers = [
                    *(status.get("containerStatuses") or ()),
                    *(status.get("initContainerStatuses") or ()),
                ]
                waiting = [(c.get("state") or {}).get("waiting") or {} for c in containers]
                reasons = [
                    f"{w.get('reason')}: {w.get('message') or ''}".strip() for w in waiting if w.get("reason")
                ]
                if unscheduled:
                    c = unscheduled[0]
                    why, outcome = (
                        f"pod {phase}: {c.get('reason')}: {c.get('message')}",
                        Outcome.UNSCHEDULABLE,
                    )
                elif reasons:
                    why, outcome = f"pod {phase} on a node, not started: {'; '.join(reasons)}", Outcome.ERROR
                    if any(w.get("reason") in _STUCK for w in waiting):
                        return _Pod(outcome=outcome, detail=why)
                else:
                    why, outcome = f"pod {phase}", Outcome.UNSCHEDULABLE
            if time.monotonic() >= deadline:
                return _Pod(outcome=outcome, detail=f"after {self.timeout:g}s: {why}")
            time.sleep(self.poll)

    # ------------------------------------------------------------------------------------------ the run
    def run(self) -> dict[str, Observed]:
        """Create, watch and dry-run everything of the plan; return the observations by check id."""
        plan = self.plan
        owner, intruder = plan.owner.team, plan.intruder.team
        pod_checks = {c.id: c for c in plan.checks if c.id not in plan.dry_runs}
        observed: dict[str, Observed] = {}
        self._say(f"run {plan.run}: team {owner} (A) is probed by team {intruder} (B)")
        server_job = plan.server[0]
        for obj in plan.server:
            created = self._create(owner, obj)
            self._say(f"created {obj['kind']} {obj['metadata']['name']} as {owner}: {created.outcome.value}")
            if created.outcome is not Outcome.OK:
                return {**dict.fromkeys(pod_checks, created), **self._dry_runs()}
        self._say(f"waiting up to {self.timeout:g}s for A's probe server to run")
        server = self._wait(owner, server_job, until="running")
        if server.outcome is not Outcome.OK:
            seen = Observed(outcome=server.outcome, detail=f"A's probe server: {server.detail}")
            return {**dict.fromkeys(pod_checks, seen), **self._dry_runs()}
        for team, job in plan.clients.items():
            created = self._create(team, job)
            self._say(f"created Job {job['metadata']['name']} as {team}: {created.outcome.value}")
            if created.outcome is not Outcome.OK:
                for check in pod_checks.values():
                    if check.actor == team:
                        observed[check.id] = created
        for team, job in plan.clients.items():
            mine = [c for c in pod_checks.values() if c.actor == team and c.id not in observed]
            if not mine:
                continue
            self._say(f"waiting up to {self.timeout:g}s for {team}'s probe client")
            pod = self._wait(team, job, until="done")
            if pod.outcome is not Outcome.OK:
                observed.update({c.id: Observed(outcome=pod.outcome, detail=pod.detail) for c in mine})
                continue
            lines = _results(pod.log)
            for check in mine:
                observed[check.id] = lines.get(
                    check.id,
                    Observed(outcome=Outcome.ERROR, detail=f"no result line in the pod log ({pod.detail})"),
                )
        return {**observed, **self._dry_runs()}

    def _dry_runs(self) -> dict[str, Observed]:
        out = {}
        for check_id, (team, obj) in self.plan.dry_runs.items():
            out[check_id] = self._create(team, obj, dry_run=True)
            self._say(f"dry-run {check_id} as {team}: {out[check_id].outcome.value}")
        return out

    def clean_up(self) -> list[str]:
        """Delete what the run created (Jobs first, in the background; then Services); return what failed."""
        from kubernetes import client  # noqa: PLC0415
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        failed = []
        for who, kind, namespace, name in sorted(self.created, key=lambda c: c[1] != "Job"):
            api = self._api(who.team)
            try:
                if kind == "Job":
                    client.BatchV1Api(api).delete_namespaced_job(
                        name,
                        namespace,
                        propagation_policy="Background",
                        _preload_content=False,
                        _request_timeout=_REQUEST_TIMEOUT,
                    )
                else:
                    client.CoreV1Api(api).delete_namespaced_service(
                        name, namespace, _preload_content=False, _request_timeout=_REQUEST_TIMEOUT
                    )
                self._say(f"deleted {kind} {name} in {namespace}")
            except ApiException as exc:
                if exc.status != 404:
                    failed.append(f"{kind} {name} in {namespace}: {exc.status} {exc.reason}")
            except HTTPError as exc:
                failed.append(f"{kind} {name} in {namespace}: {exc}")
        self.created.clear()
        return failed


def _message(exc: Any) -> str:
    """Return the ``message`` of the Status an API error carries (its body), else its reason."""
    try:
        body = json.loads(exc.body or "{}")
    except (TypeError, ValueError):
        body = {}
    return str(body.get("message") or exc.reason or "")


def _results(log: str) -> dict[str, Observed]:
    """Return the ``PROBE-RESULT <check> <outcome> [detail]`` lines of a client's log, by check id."""
    found = {}
    for line in log.splitlines():
        parts = line.strip().split(" ", 3)
        if len(parts) >= 3 and parts[0] == RESULT_MARK:
            try:
                outcome = Outcome(parts[2])
            except ValueError:
                outcome = Outcome.ERROR
            found[parts[1]] = Observed(outcome=outcome, detail=parts[3].strip() if len(parts) > 3 else "")
    return found


def kube_api_factory(kubeconfig: str | None, context: str | None) -> Callable[[Identity | None], Any]:
    """Return a function making an ``ApiClient`` from the kubeconfig, impersonating the identity it is given.

    Raises:
        ProbeError: the kubeconfig cannot be used.

    """
    from kubernetes import config  # noqa: PLC0415 - the [explain] extra

    def make(who: Identity | None) -> Any:
        try:
            api = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, context=context, persist_config=False
            )
        except (config.ConfigException, OSError, ValueError) as exc:
            raise ProbeError(f"cannot use the kubeconfig: {exc}") from None
        for header, value in (who.headers() if who is not None else {}).items():
            api.set_default_header(header, value)
        return api

    make(None)  # fail early on a kubeconfig that cannot be used
    return make


def run_probe(runner: Runner, *, keep: bool) -> dict[str, Observed]:
    """Preflight, run and (unless ``keep``) clean up, also when interrupted; return the observations.

    Raises:
        ProbeError: the probe cannot run, or the clean-up left objects behind (listed).

    """
    runner.preflight()
    try:
        return runner.run()
    finally:
        if keep:
            left = ", ".join(f"{k} {n} in {ns}" for _, k, ns, n in runner.created)
            print(f"probe: --keep: left {left or 'nothing'}", file=runner.err)
        else:
            failed = runner.clean_up()
            if failed:
                raise ProbeError(
                    f"could not delete {'; '.join(failed)}: delete them with kubectl delete job,service "
                    f"-l {labels.PROBE_LABEL}={runner.plan.run} -A"
                )
