"""Whether every node of the cluster can run pods with ``supplementalGroupsPolicy: Strict``.

kubelet reports what its container runtime supports in ``Node.status.features`` (Kubernetes 1.31+);
``supplementalGroupsPolicy: true`` means the runtime (containerd 2.0 or later, CRI-O 1.31 or later) can use only the
pod's own groups, not the ones an image's ``/etc/group`` lists for the container's user (KEP-3619). kubelet refuses
to start a pod that asks for ``Strict`` on a node without it, and the scheduler does not look, so under
``supplementalGroupsPolicy: auto`` the webhook asks for it only while **every** node reports it: one node without
it (a node group not yet updated, a new instance type) turns it off for everyone until it is replaced.

:class:`NodeFeatures` lists the nodes at start and every ``refresh_seconds``; until a listing succeeds, and after a
failed one, support is unknown and counted as absent (a pod that cannot start is worse than the default).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["FEATURE", "REFRESH_SECONDS", "WARNING_CODE", "NodeFeatures", "NodeLister", "strict_supported"]

#: The field of ``Node.status.features`` read.
FEATURE = "supplementalGroupsPolicy"
#: How often the nodes are listed.
REFRESH_SECONDS = 60.0
#: The guardrail code logged while not every node supports it.
WARNING_CODE = "HPT-POSIX-SUPPLEMENTAL-GROUPS"


class NodeLister(Protocol):
    """What lists the cluster's nodes (:class:`hyperpod_tenancy.webhook.kube.KubeApi`)."""

    async def list_nodes(self) -> list[dict[str, Any]]:
        """Return every Node."""


def _reports(node: Mapping[str, Any]) -> bool:
    status = node.get("status")
    features = status.get("features") if isinstance(status, Mapping) else None
    return isinstance(features, Mapping) and features.get(FEATURE) is True


def strict_supported(nodes: Sequence[Mapping[str, Any]]) -> tuple[bool, list[str]]:
    """Return whether there is a node and every one reports the feature, and the names of those that do not."""
    missing = sorted(str((n.get("metadata") or {}).get("name", "?")) for n in nodes if not _reports(n))
    return bool(nodes) and not missing, missing


class NodeFeatures:
    """The cluster's support for ``supplementalGroupsPolicy: Strict``, refreshed in the background.

    Args:
        lister: where the nodes are read.
        log: where changes of support (and failed listings) are logged.
        refresh_seconds: how often the nodes are listed.

    """

    def __init__(
        self,
        lister: NodeLister,
        *,
        log: logging.Logger | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self._lister = lister
        self._log = log or logging.getLogger(__name__)
        self._every = refresh_seconds
        #: Whether pods may ask for ``Strict`` now (False until a listing shows every node supports it).
        self.strict: bool = False
        self._known: bool | None = None

    async def refresh(self) -> bool:
        """List the nodes once and return the new :attr:`strict` (False when the listing fails)."""
        try:
            strict, missing = strict_supported(await self._lister.list_nodes())
        except Exception as exc:  # any failure means support is unknown: the safe default
            strict, missing = False, []
            self._log.warning(
                {"message": "nodes not listed; supplementalGroupsPolicy: Strict is off", "error": str(exc)}
            )
        if strict != self._known:
            if strict:
                self._log.info(
                    {"message": "every node supports supplementalGroupsPolicy: Strict; pods get it"}
                )
            else:
                self._log.warning(
                    {
                        "message": "not every node supports supplementalGroupsPolicy: Strict; pods do not get it, and "
                        "an image's /etc/group can add groups",
                        "code": WARNING_CODE,
                        "nodes_without": missing[:20],
                    }
                )
            self._known = strict
        self.strict = strict
        return strict

    async def run(self) -> None:
        """Refresh now and every ``refresh_seconds`` until cancelled."""
        while True:
            await self.refresh()
            await asyncio.sleep(self._every)
