"""The team namespaces the webhook serves, read at run time from the records the team stacks write.

Each team stack writes one SSM parameter under the configuration's ``teamRecords.ssmPath``
(``/hyperpod-tenancy/<cluster>/posix-identity/<team>``): the team's namespace, GID, LocalQueue and principals
(:func:`hyperpod_tenancy.webhook.config.parse_team_record`). :class:`TeamDirectory` is the webhook's
``WebhookConfig.namespaces``: the namespaces listed in the file, plus the records read by :meth:`refresh`
(``GetParametersByPath``, 10 parameters a call, so 1000 teams are 100 calls) and re-read every
``refreshSeconds`` by :meth:`run`. A refresh that fails keeps the namespaces already read (a denial then names
what is missing, never a wrong GID); a record that does not parse, or whose GID another team already has, is
skipped and logged, the others are served.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from hyperpod_tenancy.webhook.config import (
    NamespaceConfig,
    TeamRecords,
    WebhookConfigError,
    parse_team_record,
)

__all__ = ["TeamDirectory", "TeamRecordsUnavailable"]


class TeamRecordsUnavailable(RuntimeError):  # noqa: N818 - the name says what the caller meets
    """SSM did not answer a read of the team records (the message carries the error)."""


class TeamDirectory(Mapping[str, NamespaceConfig]):
    """Team namespaces by name: those of the configuration file and those of the team records.

    Args:
        static: the namespaces of the configuration file (they win over a record of the same namespace).
        records: where the records are (``None``: the static namespaces only, never refreshed).
        uid_range: the configuration's UID range (a record's GID inside it is refused).
        ssm: a boto3 SSM client (``None``: created on the first refresh).
        log: where skipped records and failed refreshes are logged.

    """

    def __init__(
        self,
        static: Mapping[str, NamespaceConfig],
        *,
        records: TeamRecords | None,
        uid_range: tuple[int, int],
        ssm: Any = None,
        log: logging.Logger | None = None,
    ) -> None:
        self._static = dict(static)
        self._records = records
        self._uid_range = uid_range
        self._ssm = ssm
        self._log = log or logging.getLogger(__name__)
        self._current: dict[str, NamespaceConfig] = dict(static)
        #: Whether the records were read at least once (always true without records).
        self.loaded = records is None

    def __getitem__(self, namespace: str) -> NamespaceConfig:
        """Return the namespace's configuration."""
        return self._current[namespace]

    def __iter__(self) -> Iterator[str]:
        """Iterate over the namespace names."""
        return iter(self._current)

    def __len__(self) -> int:
        """Return the number of namespaces served."""
        return len(self._current)

    def _client(self) -> Any:
        if self._ssm is None:
            import boto3  # noqa: PLC0415 - only a webhook with team records talks to SSM

            self._ssm = boto3.client("ssm")
        return self._ssm

    def _read(self, path: str) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        kwargs: dict[str, Any] = {"Path": path, "Recursive": True, "MaxResults": 10}
        try:
            while True:
                page = self._client().get_parameters_by_path(**kwargs)
                found += [(p["Name"], p["Value"]) for p in page.get("Parameters", [])]
                token = page.get("NextToken")
                if not token:
                    return sorted(found)
                kwargs["NextToken"] = token
        except Exception as exc:  # botocore's ClientError, BotoCoreError and connection errors alike
            raise TeamRecordsUnavailable(f"GetParametersByPath {path}: {exc}") from exc

    def refresh(self) -> int:
        """Read every record now and serve them; return how many namespaces are served.

        Raises:
            TeamRecordsUnavailable: SSM did not answer (the namespaces already read are kept).

        """
        if self._records is None:
            return len(self._current)
        found = dict(self._static)
        gids = {ns.gid: ns.namespace for ns in found.values()}
        for name, value in self._read(self._records.ssm_path):
            try:
                ns = parse_team_record(json.loads(value), uid_range=self._uid_range, source=name)
            except (ValueError, WebhookConfigError) as exc:
                self._log.error({"message": "team record skipped", "parameter": name, "error": str(exc)})
                continue
            if ns.namespace in self._static:
                continue
            owner = gids.get(ns.gid)
            if owner is not None and owner != ns.namespace:
                self._log.error(
                    {
                        "message": "team record skipped: its GID belongs to another namespace",
                        "parameter": name,
                        "gid": ns.gid,
                        "owner": owner,
                    }
                )
                continue
            gids[ns.gid] = ns.namespace
            found[ns.namespace] = ns
        self._current = found
        self.loaded = True
        return len(found)

    async def run(self) -> None:
        """Refresh every ``refreshSeconds`` until cancelled (a lifespan background task; failures are logged)."""
        if self._records is None:
            return
        while True:
            try:
                count = await asyncio.to_thread(self.refresh)
            except TeamRecordsUnavailable as exc:
                self._log.warning(
                    {"message": "team records not read; keeping the last ones", "error": str(exc)}
                )
                await asyncio.sleep(min(self._records.refresh_seconds, 5))
                continue
            self._log.info({"message": "team records read", "namespaces": count})
            await asyncio.sleep(self._records.refresh_seconds)
