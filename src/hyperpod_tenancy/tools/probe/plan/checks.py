"""What a probe checks and what it observed: the checks, their expectations, outcomes and results."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hyperpod_tenancy.k8s.team_manifests import IMDS_CIDR

__all__ = [
    "CONNECT_ATTEMPTS",
    "CONNECT_TIMEOUT",
    "EXIT_FAIL",
    "EXIT_INCONCLUSIVE",
    "EXIT_PASS",
    "PROBE_PORT",
    "PROBE_SESSION",
    "RESULT_MARK",
    "Check",
    "Expect",
    "Identity",
    "Observed",
    "Outcome",
    "ProbePlan",
    "Result",
    "Status",
]

#: Exit status: every check passed.
EXIT_PASS = 0


#: Exit status: at least one check failed (the boundary, or a positive control, does not hold).
EXIT_FAIL = 1


#: Exit status: no check failed, but at least one could not be decided.
EXIT_INCONCLUSIVE = 3


#: TCP port of A's probe server (busybox ``httpd``, unprivileged).
PROBE_PORT = 8080


#: Session name of the impersonated team member: the POSIX identity webhook's person ``sso:<session>``.
PROBE_SESSION = "hyperpod-tenancy-probe"


#: Prefix of the result lines the probe clients print to their log (``<mark> <check-id> <outcome> <detail>``).
RESULT_MARK = "PROBE-RESULT"


#: Seconds one connection attempt waits (busybox ``wget -T``).
CONNECT_TIMEOUT = 5


#: Connection attempts (2 s apart): the Service's endpoints can lag the server pod's start by a moment.
CONNECT_ATTEMPTS = 3


_IMDS = IMDS_CIDR.removesuffix("/32")


#: The ``Impersonate-Extra-<key>`` header of each extra the probe sets (Kubernetes "User impersonation").
_EXTRA_HEADERS = {"arn": "Impersonate-Extra-arn"}


_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"cpu": "100m", "memory": "64Mi"}}


class Expect(enum.Enum):
    """What a check must observe."""

    #: The honest action works (positive control).
    ALLOWED = "allowed"
    #: The connection or the read does not get through.
    BLOCKED = "blocked"
    #: The API server refuses the request (admission or RBAC), with :attr:`Check.message`.
    DENIED = "denied"


class Outcome(enum.Enum):
    """What the live runner saw for one check."""

    #: Reached / read / admitted.
    OK = "ok"
    #: The connection timed out.
    TIMEOUT = "timeout"
    #: The connection was refused (or reset).
    REFUSED = "refused"
    #: The file is not there or not readable.
    ABSENT = "absent"
    #: The API server refused the request; :attr:`Observed.detail` is its message.
    DENIED = "denied"
    #: The probe pod found no node (or Kueue did not admit it) before ``--timeout``.
    UNSCHEDULABLE = "unschedulable"
    #: Anything else (a DNS failure, a pod that failed, no result line): :attr:`Observed.detail` says what.
    ERROR = "error"


class Status(enum.Enum):
    """The verdict of one check."""

    PASS = "pass"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, kw_only=True)
class Identity:
    """A team member as the probe impersonates them (``Impersonate-User``, ``-Group``, ``-Extra-*`` headers)."""

    #: The team.
    team: str
    #: ``Impersonate-User``: the assumed-role ARN of the team's Identity Center role with session
    #: :data:`PROBE_SESSION` (what the team's access entry, which sets no username, maps such a session to).
    username: str
    #: ``Impersonate-Group``: the team's Kubernetes group.
    group: str
    #: ``Impersonate-Extra-<key>``: ``arn``, the extra the AWS IAM authenticator sets and the POSIX identity
    #: webhook reads first (``hyperpod_tenancy.webhook.identity``). The API server lower-cases extra keys taken
    #: from impersonation headers (``impersonation.go``: ``unescapeExtraKey(strings.ToLower(...))``), so
    #: ``sessionName`` cannot be impersonated; the webhook checks it only when present.
    extra: Mapping[str, str]

    def headers(self) -> dict[str, str]:
        """Return the impersonation headers of every request made as this member."""
        return {
            "Impersonate-User": self.username,
            "Impersonate-Group": self.group,
            **{_EXTRA_HEADERS[k]: v for k, v in self.extra.items()},
        }


@dataclass(frozen=True, kw_only=True)
class Check:
    """One question of the probe and the answer the policy promises."""

    #: Stable identifier (``b-to-a-service``...).
    id: str
    #: The team whose identity (and pod) acts.
    actor: str
    #: What is tried, in one line.
    description: str
    #: The promised outcome.
    expect: Expect
    #: For :attr:`Expect.DENIED`: a fragment the API server's message must contain (the rule that holds).
    message: str = ""
    #: The positive control that must pass before a timeout or an absence counts as blocked.
    control: Check | None = None


@dataclass(frozen=True, kw_only=True)
class Observed:
    """What the live runner saw for a check."""

    outcome: Outcome
    #: The API server's message, the client's output, or why nothing was seen.
    detail: str = ""


@dataclass(frozen=True, kw_only=True)
class Result:
    """A check, what was seen and the verdict, with the reason in words."""

    check: Check
    observed: Observed
    status: Status
    why: str


@dataclass(frozen=True, kw_only=True)
class ProbePlan:
    """Everything one run creates, tries and expects."""

    #: The run's identifier (value of :data:`~hyperpod_tenancy.k8s.labels.PROBE_LABEL` on every object).
    run: str
    owner: Identity
    intruder: Identity
    #: A's probe server Job and its Service, created as A.
    server: list[dict[str, Any]]
    #: The client Jobs by team (A's first), created as their team once the server runs.
    clients: dict[str, dict[str, Any]]
    #: Dry-run requests: check id → (identity team, object).
    dry_runs: dict[str, tuple[str, dict[str, Any]]]
    #: Checks in the order they are reported.
    checks: list[Check]
    #: Checks that do not apply to this platform, and why.
    skipped: list[str] = field(default_factory=list)

    def check(self, check_id: str) -> Check:
        """Return the check called ``check_id``."""
        return next(c for c in self.checks if c.id == check_id)

    def objects(self) -> list[dict[str, Any]]:
        """Every object the run creates for real (server, Service, clients)."""
        return [*self.server, *self.clients.values()]
