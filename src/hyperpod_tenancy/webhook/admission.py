"""The admission decision: an ``admission.k8s.io/v1`` AdmissionReview in, an AdmissionReview response out.

Rules (the rest of the package supplies the parts):

* a request that reaches into a running pod (CONNECT of ``pods/exec``, ``attach``, ``portforward``, ``proxy``;
  UPDATE of ``pods/ephemeralcontainers``): decided by :mod:`hyperpod_tenancy.webhook.connect` (only the pod's
  recorded person, controllers and the break-glass group; never patched);
* CREATE or UPDATE of a ConfigMap or Secret: the creator is recorded, or the stored record kept
  (:mod:`hyperpod_tenancy.webhook.creators`), whoever sends it;
* not CREATE/UPDATE, another subresource, or a kind absent from the workload table: allowed, unchanged;
* a controller (``exemptUsernames``): allowed, exempt by who sends the request, never by what the object says.
  Its identity is not resolved and nothing it sets is replaced; on CREATE in a team namespace the fields it
  leaves unset are filled (:func:`~hyperpod_tenancy.webhook.patch.harden`: no privilege escalation, non-root,
  the team GID), so containers an operator injects (Kubeflow's ``init-pytorch``, the inference operator's
  Deployments) meet the validating policy;
* CREATE: the requester is resolved (:func:`~hyperpod_tenancy.webhook.identity.resolve`), their UID looked up or
  allocated (:class:`UidResolver`), and the identity stamped (:func:`~hyperpod_tenancy.webhook.patch.stamp`),
  the queue label defaulted when absent;
* UPDATE of an object whose stored version (``oldObject``) records an identity, that does not change what its
  pods run (:func:`~hyperpod_tenancy.webhook.patch.what_runs`: scaling, suspending and ``kubectl rollout
  restart`` at the exact paths of each kind, the object's own labels and annotations): that identity is kept whoever updates it (an on-call teammate restarting
  an endpoint restarts the same code as the same person), fields it owns are restored if dropped, and a change
  of the record or of the UID is denied. The recorded GID must still be the namespace's;
* UPDATE that changes what runs (an image, a command, an environment variable, a RayJob's entrypoint): from the
  recorded person, kept as above; from another person of the team, **re-stamped with the updater's identity**
  (their UID, their home directory, the record names them, a warning says so), because the pods then run that
  person's code; from a requester who is not a person (a Studio session, a service account), denied;
* UPDATE of an object without a record (created before the webhook): treated like a CREATE by the updater;
* dry run (``request.dryRun``): the UID is looked up, never allocated (the webhook declares
  ``sideEffects: NoneOnDryRun``); a person without a UID yet is told to submit for real once.

A malformed review (not JSON, missing or mistyped fields) raises :class:`MalformedRequest` (HTTP 400). A
denial is ``allowed: false`` with ``status.code`` 403 (identity) or 503 (DynamoDB did not answer) and a
message for the user.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from hyperpod_tenancy.k8s.workloads import WORKLOAD_KINDS, WorkloadKindSpec
from hyperpod_tenancy.webhook import connect, creators, identity, patch
from hyperpod_tenancy.webhook.config import NamespaceConfig, WebhookConfig
from hyperpod_tenancy.webhook.kube import KubeApiUnavailable
from hyperpod_tenancy.webhook.node_features import NodeFeatures
from hyperpod_tenancy.webhook.uids import UidCache, UidRangeExhausted, UidStoreUnavailable, UidTable

__all__ = [
    "ADMISSION_API_VERSION",
    "Admission",
    "AdmissionRequest",
    "Decision",
    "MalformedRequest",
    "UidResolver",
    "parse_review",
    "review_response",
]

#: The only AdmissionReview version served (the webhook configuration lists only it).
ADMISSION_API_VERSION = "admission.k8s.io/v1"
_KINDS: dict[tuple[str, str], WorkloadKindSpec] = {(k.group, k.kind): k for k in WORKLOAD_KINDS}
_OPERATIONS = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})


class MalformedRequest(Exception):  # noqa: N818
    """The body is not a well-formed AdmissionReview; the message names the field (HTTP 400)."""


@dataclass(frozen=True, kw_only=True)
class AdmissionRequest:
    """The fields of ``request`` the webhook reads."""

    #: ``request.uid``, echoed in the response.
    uid: str
    #: ``request.kind.group``.
    group: str
    #: ``request.kind.kind``.
    kind: str
    #: ``request.operation``.
    operation: str
    #: ``request.namespace`` (empty for cluster-scoped objects).
    namespace: str
    #: ``request.subResource`` (empty for the main resource).
    sub_resource: str
    #: ``request.userInfo.username``.
    username: str
    #: ``request.resource.resource`` (``pods`` for a CONNECT to a pod, whose kind is ``PodExecOptions``...).
    resource: str = ""
    #: ``request.name`` (the Pod of a CONNECT).
    name: str = ""
    #: ``request.userInfo.groups``.
    groups: tuple[str, ...] = ()
    #: ``request.userInfo.extra``.
    extra: Mapping[str, Any]
    #: ``request.object`` (None for DELETE).
    obj: dict[str, Any] | None
    #: ``request.oldObject`` (UPDATE, DELETE).
    old: dict[str, Any] | None
    #: ``request.dryRun``.
    dry_run: bool


@dataclass(kw_only=True)
class Decision:
    """The webhook's answer and what the request log records."""

    #: Whether the request is admitted.
    allowed: bool
    #: Short reason for the log (``stamped``, ``exempt``, ``denied:<why>``...).
    reason: str
    #: JSONPatch operations (empty: no patch).
    ops: list[dict[str, Any]] = field(default_factory=list)
    #: The denial message.
    message: str = ""
    #: ``status.code`` of a denial.
    code: int = 403
    #: Warnings shown to the client (kubectl prints them).
    warnings: list[str] = field(default_factory=list)
    #: The person resolved, if any.
    person: str | None = None
    #: Their UID, if any.
    posix_uid: int | None = None
    #: Fields of an audit log line (a break-glass use), or None.
    audit: dict[str, Any] | None = None


def _field(data: Mapping[str, Any], key: str, kind: type, where: str, *, required: bool = True) -> Any:
    value = data.get(key)
    if value is None:
        if required:
            raise MalformedRequest(f"{where}.{key} is missing.")
        return None
    if isinstance(value, bool) is not (kind is bool) or not isinstance(value, kind):
        raise MalformedRequest(f"{where}.{key} must be {kind.__name__}, got {type(value).__name__}.")
    return value


def parse_review(body: bytes) -> AdmissionRequest:
    """Decode and check an AdmissionReview.

    Raises:
        MalformedRequest: naming the first field that is missing or of the wrong type.

    """
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise MalformedRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise MalformedRequest("the body must be a JSON object (an AdmissionReview).")
    if doc.get("apiVersion") != ADMISSION_API_VERSION or doc.get("kind") != "AdmissionReview":
        raise MalformedRequest(
            f"expected apiVersion {ADMISSION_API_VERSION} kind AdmissionReview, got "
            f"{doc.get('apiVersion')!r} {doc.get('kind')!r}."
        )
    req = _field(doc, "request", dict, "AdmissionReview")
    kind = _field(req, "kind", dict, "request")
    operation = _field(req, "operation", str, "request")
    if operation not in _OPERATIONS:
        raise MalformedRequest(f"request.operation {operation!r} is not one of {sorted(_OPERATIONS)}.")
    user = _field(req, "userInfo", dict, "request")
    resource = _field(req, "resource", dict, "request", required=False) or {}
    groups = _field(user, "groups", list, "request.userInfo", required=False) or []
    if not all(isinstance(g, str) for g in groups):
        raise MalformedRequest("request.userInfo.groups must be a list of strings.")
    obj = _field(req, "object", dict, "request", required=operation in ("CREATE", "UPDATE"))
    old = _field(req, "oldObject", dict, "request", required=operation == "UPDATE")
    return AdmissionRequest(
        uid=_field(req, "uid", str, "request"),
        group=_field(kind, "group", str, "request.kind", required=False) or "",
        kind=_field(kind, "kind", str, "request.kind"),
        operation=operation,
        namespace=_field(req, "namespace", str, "request", required=False) or "",
        sub_resource=_field(req, "subResource", str, "request", required=False) or "",
        username=_field(user, "username", str, "request.userInfo", required=False) or "",
        resource=_field(resource, "resource", str, "request.resource", required=False) or "",
        name=_field(req, "name", str, "request", required=False) or "",
        groups=tuple(groups),
        extra=_field(user, "extra", dict, "request.userInfo", required=False) or {},
        obj=obj,
        old=old,
        dry_run=bool(_field(req, "dryRun", bool, "request", required=False)),
    )


def review_response(uid: str, decision: Decision) -> dict[str, Any]:
    """Return the AdmissionReview the webhook answers with."""
    response: dict[str, Any] = {"uid": uid, "allowed": decision.allowed}
    if decision.allowed and decision.ops:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(decision.ops)).decode()
    if not decision.allowed:
        response["status"] = {"code": decision.code, "message": decision.message}
    if decision.warnings:
        response["warnings"] = decision.warnings
    return {"apiVersion": ADMISSION_API_VERSION, "kind": "AdmissionReview", "response": response}


class UidResolver:
    """Person → UID: the in-memory cache, then DynamoDB (one lookup in flight per person per process)."""

    def __init__(self, table: UidTable, cache: UidCache) -> None:
        self.table = table
        self.cache = cache
        #: Whether DynamoDB has answered a lookup of this resolver at least once.
        self.reached = False
        self._inflight: dict[tuple[str, bool], asyncio.Future[int | None]] = {}

    async def uid(self, person: str, *, allocate: bool) -> int | None:
        """Return the person's UID (allocating it when ``allocate``), or None when absent and not allocating.

        Raises:
            UidStoreUnavailable: DynamoDB did not answer.
            UidRangeExhausted: the range is used up.

        """
        hit = self.cache.get(person)
        if hit is not None:
            return hit
        key = (person, allocate)
        pending = self._inflight.get(key)
        if pending is None:
            call = self.table.uid_for if allocate else self.table.lookup
            pending = asyncio.ensure_future(asyncio.to_thread(call, person))
            self._inflight[key] = pending
            pending.add_done_callback(lambda _: self._inflight.pop(key, None))
        uid = await asyncio.shield(pending)
        self.reached = True
        if uid is not None:
            self.cache.put(person, uid)
        return uid


class Admission:
    """Decides AdmissionReviews for one configuration and one UID table."""

    def __init__(
        self,
        config: WebhookConfig,
        resolver: UidResolver,
        pods: connect.PodSource | None = None,
        nodes: NodeFeatures | None = None,
    ) -> None:
        self.config = config
        self.resolver = resolver
        #: Where Pods are read and Events recorded (None: requests into pods are denied, they cannot be judged).
        self.pods = pods
        #: Whether every node supports ``supplementalGroupsPolicy: Strict`` (``supplementalGroupsPolicy: auto``).
        self.nodes = nodes

    def strict_groups(self, req: AdmissionRequest, kind: WorkloadKindSpec) -> bool:
        """Whether the request's pod templates get ``supplementalGroupsPolicy: Strict``.

        Under ``strict`` always (the validating policy requires it). Under ``auto`` on CREATE while every node
        supports it. On UPDATE under ``auto`` it is never added (a Job's pod template is immutable, and Kueue
        suspends and resumes Jobs by UPDATE: adding the field would have them refused once the nodes start to
        support it), but it is kept where the stored object has it: an UPDATE of a Deployment's template to
        ``Merge`` gets ``Strict`` back, whoever sends it.
        """
        policy = self.config.supplemental_groups_policy
        if policy == "strict":
            return True
        if policy != "auto":
            return False
        if req.operation == "CREATE":
            return self.nodes is not None and self.nodes.strict
        return req.old is not None and patch.asks_strict_groups(req.old, kind)

    async def decide(self, req: AdmissionRequest) -> Decision:
        """Decide one request (see the module docstring for the rules)."""
        if connect.governs(resource=req.resource, sub_resource=req.sub_resource, operation=req.operation):
            return await self._reach(req)
        if creators.governs(
            group=req.group, resource=req.resource, sub_resource=req.sub_resource, operation=req.operation
        ):
            return _record_creator(req)
        kind = _KINDS.get((req.group, req.kind))
        if req.operation not in ("CREATE", "UPDATE") or req.sub_resource or kind is None:
            return Decision(allowed=True, reason="not-governed")
        if req.username in self.config.exempt_usernames:
            return self._harden(req, kind)
        recorded = patch.recorded_identity(req.old) if req.operation == "UPDATE" and req.old else None
        ns = self.config.namespaces.get(req.namespace)
        if recorded is not None and ns is not None:
            return await self._update(req, kind, recorded, ns)
        return await self._create(req, kind)

    async def _update(
        self, req: AdmissionRequest, kind: WorkloadKindSpec, recorded: patch.Identity, ns: NamespaceConfig
    ) -> Decision:
        """Decide an UPDATE of a workload that records an identity (kept, or re-stamped when what runs changes)."""
        if recorded.gid != ns.gid:
            return _deny(
                "denied:gid-changed",
                f"this workload records GID {recorded.gid}, but team {ns.team}'s GID is now {ns.gid}; its "
                "identity cannot be kept. Delete it and create it again.",
            )
        claimed = patch.recorded_identity(req.obj) if req.obj is not None else None
        tampered = claimed is not None and claimed != recorded  # an edited record is refused, never adopted
        if req.obj is None or tampered or not self._changes_what_runs(req, kind, recorded, ns):
            return self._stamp(req, kind, recorded, ns, keep=True)
        return await self._changed(req, kind, recorded, ns)

    def _changes_what_runs(
        self, req: AdmissionRequest, kind: WorkloadKindSpec, recorded: patch.Identity, ns: NamespaceConfig
    ) -> bool:
        """Whether the update changes what the pods run (:func:`patch.what_runs`), once stamped as recorded."""
        assert req.obj is not None and req.old is not None  # noqa: S101 - UPDATE with a record
        candidate = copy.deepcopy(req.obj)
        try:
            patch.stamp(
                candidate,
                kind=kind,
                ident=recorded,
                home_claim=self.config.home_claim_name,
                keep=True,
                default_queue=ns.local_queue,
            )
        except patch.Refused:
            return True  # it asks for another identity: a change
        return bool(patch.what_runs(candidate, kind) != patch.what_runs(req.old, kind))

    async def _changed(
        self, req: AdmissionRequest, kind: WorkloadKindSpec, recorded: patch.Identity, ns: NamespaceConfig
    ) -> Decision:
        """Decide an UPDATE that changes what runs: kept for the recorded person, re-stamped for another person."""
        who = identity.resolve(self.config, namespace=req.namespace, username=req.username, extra=req.extra)
        if isinstance(who, identity.Person) and who.key == recorded.person:
            return self._stamp(req, kind, recorded, ns, keep=True)
        if not isinstance(who, identity.Person):
            message = who.message if isinstance(who, identity.Denied) else ""
            return _deny(
                "denied:change-by-non-person",
                f"this update changes what {recorded.person}'s {req.kind} runs, and its pods would then run as the "
                f"person who made the change, who cannot be established. {message}".strip(),
            )
        uid = await self._uid(who.key, dry_run=req.dry_run)
        if isinstance(uid, Decision):
            return uid
        ident = patch.Identity(person=who.key, uid=uid, gid=ns.gid)
        decision = self._stamp(req, kind, ident, ns, keep=False, previous=recorded)
        if decision.allowed:
            decision.reason = "restamped"
            decision.warnings.insert(
                0,
                f"this change to {req.kind} {req.name or ''} was made by {who.key}, not by {recorded.person} who "
                f"created it: its pods now run as you (UID {uid}) with your home directory.",
            )
        return decision

    async def _reach(self, req: AdmissionRequest) -> Decision:
        """Decide a request that reaches into a running pod (:func:`connect.decide_reach`)."""
        try:
            allowed, reason, message, person = await connect.decide_reach(
                self.config,
                self.pods,
                operation=req.operation,
                sub_resource=req.sub_resource,
                namespace=req.namespace,
                name=req.name,
                username=req.username,
                groups=req.groups,
                extra=req.extra,
                stored_pod=req.old if req.operation == "UPDATE" else None,
                dry_run=req.dry_run,
            )
        except KubeApiUnavailable as exc:
            return _deny(
                "denied:api-unavailable",
                f"pod {req.name} cannot be read right now, so whose it is cannot be checked. Retry in a minute; "
                f"if it persists, tell the platform team: {exc}",
                code=503,
            )
        if not allowed:
            return _deny(reason, message, person=person)
        audit = None
        if reason == "break-glass":
            audit = {
                "audit": "break-glass",
                "subResource": req.sub_resource,
                "pod": connect.target_pod(req.sub_resource, req.name),
                "name": req.name,
                "groups": sorted(set(req.groups) & self.config.break_glass_groups),
                **({"eventError": message} if message else {}),
            }
        return Decision(allowed=True, reason=reason, person=person, audit=audit)

    async def _create(self, req: AdmissionRequest, kind: WorkloadKindSpec) -> Decision:
        """Resolve the requester, look up or allocate their UID and stamp it (CREATE, or UPDATE without record)."""
        who = identity.resolve(self.config, namespace=req.namespace, username=req.username, extra=req.extra)
        if isinstance(who, identity.Exempt):
            return Decision(allowed=True, reason="exempt")
        if isinstance(who, identity.Denied):
            return _deny(f"denied:{who.reason}", who.message)
        uid = await self._uid(who.key, dry_run=req.dry_run)
        if isinstance(uid, Decision):
            return uid
        ident = patch.Identity(person=who.key, uid=uid, gid=who.namespace.gid)
        return self._stamp(req, kind, ident, who.namespace, keep=False)

    async def _uid(self, person: str, *, dry_run: bool) -> int | Decision:
        """Return the person's UID, or the denial to answer with."""
        try:
            uid = await self.resolver.uid(person, allocate=not dry_run)
        except UidStoreUnavailable as exc:
            return _deny(
                "denied:dynamodb-unavailable",
                f"the POSIX identity of {person} cannot be looked up right now, so the workload is not admitted "
                f"(its pods would run with no identity). Retry in a minute; if it persists, tell the platform "
                f"team: {exc}",
                code=503,
            )
        except UidRangeExhausted as exc:
            return _deny("denied:uid-range-exhausted", f"no UID is left for {person}: {exc}", code=507)
        if uid is None:
            return _deny(
                "denied:dry-run-no-uid",
                f"{person} has no UID yet and a dry run does not allocate one. Submit once without --dry-run.",
            )
        return uid

    def _harden(self, req: AdmissionRequest, kind: WorkloadKindSpec) -> Decision:
        """Fill the unset hardening fields of a controller's CREATE in a team namespace (:func:`patch.harden`)."""
        ns = self.config.namespaces.get(req.namespace)
        if req.operation != "CREATE" or ns is None or req.obj is None:
            return Decision(allowed=True, reason="exempt")
        try:
            ops = patch.harden(req.obj, kind=kind, gid=ns.gid, strict_groups=self.strict_groups(req, kind))
        except patch.MalformedObject:
            # a controller's object the API server accepted; the validating policy judges it unchanged
            return Decision(allowed=True, reason="exempt")
        return Decision(allowed=True, reason="exempt-hardened" if ops else "exempt", ops=ops)

    def _stamp(
        self,
        req: AdmissionRequest,
        kind: WorkloadKindSpec,
        ident: patch.Identity,
        ns: NamespaceConfig,
        *,
        keep: bool,
        previous: patch.Identity | None = None,
    ) -> Decision:
        assert req.obj is not None  # noqa: S101
        try:
            ops, warnings = patch.stamp(
                req.obj,
                kind=kind,
                ident=ident,
                home_claim=self.config.home_claim_name,
                keep=keep,
                default_queue=ns.local_queue,
                previous=previous,
                strict_groups=self.strict_groups(req, kind),
            )
        except patch.Refused as exc:
            return _deny("denied:refused", f"{req.kind} in {req.namespace}: {exc}", person=ident.person)
        return Decision(
            allowed=True,
            reason="kept" if keep else "stamped",
            ops=ops,
            warnings=warnings,
            person=ident.person,
            posix_uid=ident.uid,
        )


def _record_creator(req: AdmissionRequest) -> Decision:
    """Record the creator of a ConfigMap or Secret, or keep the stored record (:mod:`.creators`)."""
    if req.obj is None:
        return Decision(allowed=True, reason="not-governed")
    ops = creators.record_ops(req.obj, operation=req.operation, username=req.username, old=req.old)
    return Decision(allowed=True, reason="creator-recorded" if ops else "creator-kept", ops=ops)


def _deny(reason: str, message: str, *, code: int = 403, person: str | None = None) -> Decision:
    return Decision(allowed=False, reason=reason, message=message, code=code, person=person)
