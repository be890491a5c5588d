"""Team namespaces the admission rules cannot judge: found within minutes, counted for an alert.

The admission policies and both webhooks select team namespaces by name (``hyperpod-ns-<team>``), so no label
switches them off; but what they judge there they read from the namespace and the team records: the team
(``hyperpod-tenancy.io/team``), the POSIX GID (``hyperpod-tenancy.io/posix-gid``), and Kueue manages the jobs of
namespaces labelled ``hyperpod-tenancy.io/tenant: "true"``. A namespace of that name whose labels were rewritten,
or that no team record describes, is one the rules do not cover as the platform set them up.

:class:`NamespaceCoverage` lists the namespaces at start and every ``refresh_seconds`` (the webhook's
ServiceAccount may ``list namespaces``) and keeps :attr:`~NamespaceCoverage.uncovered`, the names of such
namespaces, which the metric :data:`~hyperpod_tenancy.k8s.posix_identity.UNCOVERED_NAMESPACES_METRIC` exports and
the alert ``HyperPodTenancyTeamNamespaceUncovered`` reads; each change is logged with the names and what is
wrong. A failed listing keeps the last count and is logged (the webhook's error alerts watch the API server).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.webhook.config import NamespaceConfig

__all__ = ["REFRESH_SECONDS", "NamespaceCoverage", "NamespaceLister", "uncovered_reasons"]

#: How often the namespaces are listed.
REFRESH_SECONDS = 60.0


class NamespaceLister(Protocol):
    """What lists the cluster's namespaces (:class:`hyperpod_tenancy.webhook.kube.KubeApi`)."""

    async def list_namespaces(self) -> list[dict[str, Any]]:
        """Return every Namespace."""


def uncovered_reasons(
    namespaces: list[dict[str, Any]], teams: Mapping[str, NamespaceConfig]
) -> dict[str, list[str]]:
    """Return, by name, the team namespaces the rules do not cover as set up, with what is wrong with each."""
    found: dict[str, list[str]] = {}
    for ns in namespaces:
        meta: dict[str, Any] = ns["metadata"] if isinstance(ns.get("metadata"), dict) else {}
        name = str(meta.get("name", ""))
        if not name.startswith(names.NAMESPACE_PREFIX):
            continue
        have: dict[str, Any] = meta["labels"] if isinstance(meta.get("labels"), dict) else {}
        record = teams.get(name)
        if record is None:
            found[name] = ["no team record (the webhook refuses every workload there)"]
            continue
        wanted = {
            labels.TENANT_LABEL: "true",
            labels.TEAM_LABEL: record.team,
            labels.POSIX_GID_LABEL: str(record.gid),
        }
        wrong = [f"{k}={have.get(k)!r}, not {v!r}" for k, v in wanted.items() if have.get(k) != v]
        if wrong:
            found[name] = wrong
    return found


class NamespaceCoverage:
    """The team namespaces the rules do not cover, refreshed in the background.

    Args:
        lister: where the namespaces are read.
        teams: the team namespaces the webhook serves (its team records, a live view).
        log: where changes (and failed listings) are logged.
        refresh_seconds: how often the namespaces are listed.

    """

    def __init__(
        self,
        lister: NamespaceLister,
        teams: Mapping[str, NamespaceConfig],
        *,
        log: logging.Logger | None = None,
        refresh_seconds: float = REFRESH_SECONDS,
    ) -> None:
        self._lister = lister
        self._teams = teams
        self._log = log or logging.getLogger(__name__)
        self._every = refresh_seconds
        #: Names of the team namespaces not covered, as of the last successful listing.
        self.uncovered: list[str] = []

    async def refresh(self) -> list[str]:
        """List the namespaces once and return the new :attr:`uncovered` (unchanged when the listing fails)."""
        try:
            listed = await self._lister.list_namespaces()
        except Exception as exc:  # keep the last count: the API server's own alerts cover it being down
            self._log.warning(
                {"message": "namespaces not listed; team namespace coverage unknown", "error": str(exc)}
            )
            return self.uncovered
        reasons = uncovered_reasons(listed, self._teams)
        uncovered = sorted(reasons)
        if uncovered != self.uncovered:
            if uncovered:
                self._log.warning(
                    {
                        "message": "team namespaces the admission rules do not cover as set up",
                        "code": "HPT-NAMESPACE-UNCOVERED",
                        "namespaces": {n: reasons[n] for n in uncovered[:20]},
                    }
                )
            else:
                self._log.info({"message": "every team namespace is covered"})
        self.uncovered = uncovered
        return uncovered

    async def run(self) -> None:
        """Refresh now and every ``refresh_seconds`` until cancelled."""
        while True:
            await self.refresh()
            await asyncio.sleep(self._every)
