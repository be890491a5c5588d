"""Who may reach into a running pod: exec, attach, port-forward, proxy and ephemeral containers.

A shell in a pod runs as the pod's UID with the pod's home directory mounted, so it is that person's identity.
The requests that reach a running container are decided here (the ValidatingWebhookConfiguration of
:func:`hyperpod_tenancy.k8s.posix_identity.connect_webhook_configuration` routes them):

* ``CONNECT`` of ``pods/exec``, ``pods/attach``, ``pods/portforward``, ``pods/proxy`` (the request's object is
  the connect options, ``PodExecOptions``..., so the Pod is read from the API server by name);
* ``UPDATE`` of ``pods/ephemeralcontainers`` (``kubectl debug``; the stored Pod is ``oldObject``).

Rules, in order:

1. a controller (``exemptUsernames``) is allowed, exempt by who sends the request;
2. a member of a break-glass group (``breakGlassGroups``) is allowed; the use is written to the log as an
   ``"audit": "break-glass"`` line and recorded as a Warning Event on the pod (``reason: BreakGlass``), which
   ``kubectl get events`` shows the pod's person and the platform can alert on;
3. the requester must resolve to a person of the namespace (:func:`hyperpod_tenancy.webhook.identity.resolve`):
   a Studio session, which names no person, is denied, like an unknown or another team's role;
4. a pod that records a person (the annotation the webhook stamps on every pod template) is reachable only by
   that person;
5. a pod that records none (a controller's pod, e.g. the inference operator's) is reachable by the
   namespace's people, unless one of its containers runs as a UID of the person range: that would be someone's
   identity without saying whose, so it is denied.

The pod is the one the API server will reach: a ``pods/proxy`` request names it as ``pod``, ``pod:port`` or
``scheme:pod:port`` (:func:`target_pod`, parsed as kubernetes' ``SplitSchemeNamePort`` does). A pod that cannot
be found, or a name the API server would not accept, is refused, for break-glass too (what cannot be read
cannot be recorded). When the API server does not answer the read, the request is denied with 503 (nothing is
opened that cannot be checked). When the Event of a break-glass use cannot be written, the use is allowed and
the audit line says the Event is missing.
"""

from __future__ import annotations

import socket
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from hyperpod_tenancy.webhook import identity, patch
from hyperpod_tenancy.webhook.config import WebhookConfig
from hyperpod_tenancy.webhook.kube import KubeApiUnavailable

__all__ = [
    "CONNECT_SUBRESOURCES",
    "EPHEMERAL_SUBRESOURCE",
    "PodSource",
    "decide_reach",
    "governs",
    "pod_uids",
    "target_pod",
]

#: Subresources whose CONNECT reaches a running container.
CONNECT_SUBRESOURCES = frozenset({"exec", "attach", "portforward", "proxy"})
#: The subresource ``kubectl debug`` updates to add a container to a running pod.
EPHEMERAL_SUBRESOURCE = "ephemeralcontainers"
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
#: Schemes a ``pods/proxy`` name may carry (kubernetes ``k8s.io/apimachinery/pkg/util/net/port_split.go``).
_PROXY_SCHEMES = frozenset({"", "http", "https"})


def target_pod(sub_resource: str, name: str) -> str | None:
    """Return the name of the pod a request reaches, or None when the API server would not accept the name.

    ``pods/proxy`` names the pod as ``pod``, ``pod:port`` or ``scheme:pod:port`` (the API server's
    ``ResourceLocation`` of pods, ``pkg/registry/core/pod/strategy.go``, splits it with ``SplitSchemeNamePort``:
    one to three parts, a non-empty name, a scheme of ``http``, ``https`` or none). Every other subresource
    names the pod itself.
    """
    if sub_resource != "proxy":
        return name or None
    parts = name.split(":")
    if len(parts) > 3:
        return None
    scheme, pod = (parts[0], parts[1]) if len(parts) == 3 else ("", parts[0])
    return pod if pod and scheme in _PROXY_SCHEMES else None


class PodSource(Protocol):
    """Reads Pods and records Events (:class:`hyperpod_tenancy.webhook.kube.KubeApi`)."""

    async def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """Return the Pod, or None when it does not exist."""

    async def record_event(
        self, pod: dict[str, Any], *, reason: str, action: str, note: str, instance: str
    ) -> None:
        """Record a Warning Event about ``pod``."""


def governs(*, resource: str, sub_resource: str, operation: str) -> bool:
    """Whether a request reaches into a running pod (see the module docstring)."""
    if resource != "pods":
        return False
    if operation == "CONNECT":
        return sub_resource in CONNECT_SUBRESOURCES
    return operation == "UPDATE" and sub_resource == EPHEMERAL_SUBRESOURCE


def pod_uids(pod: Mapping[str, Any]) -> set[int]:
    """Every ``runAsUser`` the pod sets, at pod level and on each container."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return set()
    found: set[int] = set()
    contexts: list[Any] = [spec.get("securityContext")]
    for list_name in _CONTAINER_LISTS:
        items = spec.get(list_name)
        if isinstance(items, list):
            contexts += [c.get("securityContext") for c in items if isinstance(c, dict)]
    for sc in contexts:
        uid = sc.get("runAsUser") if isinstance(sc, dict) else None
        if isinstance(uid, int) and not isinstance(uid, bool):
            found.add(uid)
    return found


def _what(operation: str, sub_resource: str) -> str:
    if operation == "CONNECT":
        return {"portforward": "port-forward to", "proxy": "proxy to"}.get(
            sub_resource, f"{sub_resource} into"
        )
    return "add an ephemeral container to"


async def decide_reach(
    config: WebhookConfig,
    pods: PodSource | None,
    *,
    operation: str,
    sub_resource: str,
    namespace: str,
    name: str,
    username: str,
    groups: Sequence[str],
    extra: Mapping[str, Any],
    stored_pod: dict[str, Any] | None,
    dry_run: bool,
) -> tuple[bool, str, str, str | None]:
    """Decide one request that reaches into a pod.

    Returns:
        ``(allowed, reason, message, person)``: ``reason`` for the log (``exempt``, ``break-glass``, ``own-pod``,
        ``no-person``, ``denied:<why>``), the denial message (for a break-glass use, why its Event is
        missing, if it is), and the person the requester resolved to.

    Raises:
        KubeApiUnavailable: the Pod could not be read.

    """
    what = _what(operation, sub_resource)
    if username in config.exempt_usernames:
        return True, "exempt", "", None
    pod = stored_pod
    if pod is None:
        found = await _find_pod(pods, namespace=namespace, sub_resource=sub_resource, name=name, what=what)
        if isinstance(found, tuple):
            return found
        pod, name = found, target_pod(sub_resource, name) or name
    glass = sorted(set(groups) & config.break_glass_groups)
    if glass:
        note = f"{username} used break-glass group {glass[0]} to {what} this pod"
        return await _break_glass(
            pods, pod, note, action=f"{operation.title()}{sub_resource.title()}", dry_run=dry_run
        )
    who = identity.resolve(config, namespace=namespace, username=username, extra=extra)
    if isinstance(who, identity.Exempt):  # pragma: no cover - exempt usernames returned above
        raise AssertionError(who)
    if isinstance(who, identity.Denied):
        return False, f"denied:{who.reason}", f"cannot {what} pod {name}: {who.message}", None
    return _person_rule(config, pod, name=name, what=what, person=who.key)


async def _find_pod(
    pods: PodSource | None, *, namespace: str, sub_resource: str, name: str, what: str
) -> dict[str, Any] | tuple[bool, str, str, str | None]:
    """Return the pod a request reaches (read from the API server), or the denial when there is none."""
    target = target_pod(sub_resource, name)
    if target is None:
        return False, "denied:bad-name", f"cannot {what} {name!r}: that names no pod.", None
    if pods is None:
        return False, "denied:no-api", f"cannot {what} pod {target}: the webhook cannot read pods.", None
    pod = await pods.get_pod(namespace, target)
    if pod is None:
        return (
            False,
            "denied:no-pod",
            f"cannot {what} pod {target}: it does not exist in {namespace}, so whose it is cannot be checked.",
            None,
        )
    return pod


async def _break_glass(
    pods: PodSource | None, pod: dict[str, Any], note: str, *, action: str, dry_run: bool
) -> tuple[bool, str, str, str | None]:
    """Allow a break-glass use and record it as a Warning Event on the pod (not on a dry run)."""
    if pods is None or dry_run:
        return True, "break-glass", "", None
    recorded = patch.recorded_identity(pod)
    whose = f" (it runs as {recorded.person}, UID {recorded.uid})" if recorded is not None else ""
    try:
        await pods.record_event(
            pod, reason="BreakGlass", action=action, note=f"{note}{whose}.", instance=socket.gethostname()
        )
    except KubeApiUnavailable as exc:
        # the use is still in the webhook's audit line; the missing Event is said there too
        return True, "break-glass", f"event not recorded: {exc}", None
    return True, "break-glass", "", None


def _person_rule(
    config: WebhookConfig, pod: dict[str, Any], *, name: str, what: str, person: str
) -> tuple[bool, str, str, str | None]:
    """Rules 4 and 5: the pod's recorded person only; a pod of nobody unless it runs as a person's UID."""
    recorded = patch.recorded_identity(pod)
    if recorded is not None:
        if recorded.person == person:
            return True, "own-pod", "", person
        return (
            False,
            "denied:teammate-pod",
            f"pod {name} runs as {recorded.person} (UID {recorded.uid}) with their home directory: only they may "
            f"{what} it. Ask them, or the platform's on-call (break-glass group), to do it.",
            person,
        )
    persons = sorted(u for u in pod_uids(pod) if config.uid_first <= u <= config.uid_last)
    if persons:
        return (
            False,
            "denied:unrecorded-person-uid",
            f"pod {name} runs as UID {persons[0]}, a person's UID, but records no person; nobody but the "
            "platform's on-call (break-glass group) may reach into it.",
            person,
        )
    return True, "no-person", "", person
