"""Who sent an admission request, and which person that is in a team namespace.

EKS authenticates IAM principals with the AWS IAM authenticator, which hands the API server (and so every
admission webhook's ``request.userInfo``) the caller's STS identity: ``extra.arn`` (the assumed-role ARN
``arn:aws:sts::<account>:assumed-role/<role>/<session>``), ``extra.canonicalArn`` (the role ARN),
``extra.sessionName``, ``extra.accessKeyId`` and ``extra.principalId``
(kubernetes-sigs/aws-iam-authenticator ``pkg/server/server.go`` at 81b1dab, lines 443-447). The username is
what the access entry maps the principal to; for a role's access entry without a ``username`` it is the
assumed-role ARN with the session name (``arn:aws:sts::<account>:assumed-role/<role>/{{SessionName}}``).

Resolution (:func:`resolve`), in order:

1. a username in ``exemptUsernames`` (the controllers' service accounts) is exempt: allowed, no patch;
2. the namespace must be a team namespace of the configuration;
3. the caller must be an assumed role: ``extra.arn`` when present (the authenticator sets it; a requester
   cannot), else the username; ``extra.sessionName``, when present, must agree with it;
4. Identity Center: a role of the namespace's permission set (``AWSReservedSSO_<PermissionSet>_<16 hex>``) is
   the person whose Identity Center user name is the session name (Identity Center names the session after the
   user; a user cannot choose it), person key ``sso:<user name>``;
5. Studio: **denied**. Every user profile of a domain shares the execution role, and SageMaker chooses the
   session name, not the user. The user-profile name travels only as ``sts:SourceIdentity`` when the domain
   sets ``ExecutionRoleIdentityConfig: USER_PROFILE_NAME`` (``DomainSettings.ExecutionRoleIdentityConfig``,
   https://docs.aws.amazon.com/sagemaker/latest/dg/monitor-user-access.html), and the authenticator passes no
   source identity to Kubernetes (its extras above). So nothing in the request names the person, and a session
   name a Studio user sets by chaining roles is theirs to choose. The denial says how to submit instead (with
   the person's own Identity Center credentials, e.g. ``aws sso login`` in the Studio terminal);
6. anything else (an unknown role, another team's role, an IAM user) is denied, naming the namespace and what is
   expected.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.webhook.config import (
    IdentityCenterPrincipal,
    NamespaceConfig,
    StudioPrincipal,
    WebhookConfig,
)

__all__ = [
    "SSO_PERSON_PREFIX",
    "Caller",
    "Denied",
    "Exempt",
    "Person",
    "Resolution",
    "parse_assumed_role",
    "resolve",
]

#: Prefix of the person key of an Identity Center user.
SSO_PERSON_PREFIX = "sso:"
# STS assumed-role ARN; role names [\w+=,.@-]{1,64}, session names [\w+=,.@-]{2,64}.
_ASSUMED_ROLE = re.compile(
    r"^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role/([\w+=,.@-]{1,64})/([\w+=,.@-]{2,64})$"
)


@dataclass(frozen=True, kw_only=True)
class Caller:
    """An IAM role session as the API server authenticated it."""

    #: ``request.userInfo.username``.
    username: str
    #: The role's account.
    account: str
    #: The role name (assumed-role ARNs carry no path).
    role_name: str
    #: The session name.
    session_name: str


@dataclass(frozen=True, kw_only=True)
class Exempt:
    """The request comes from a controller: allowed unchanged."""

    #: Its username.
    username: str


@dataclass(frozen=True, kw_only=True)
class Person:
    """The request comes from a person of the namespace's team."""

    #: The platform-wide person key, e.g. ``sso:alice@example.com``.
    key: str
    #: The team namespace.
    namespace: NamespaceConfig


@dataclass(frozen=True, kw_only=True)
class Denied:
    """The requester cannot be resolved to a person of this namespace; ``message`` says why and what to do."""

    #: For the user.
    message: str
    #: Short machine-readable reason for logs (``unknown-namespace``, ``studio``, ...).
    reason: str


#: Outcome of :func:`resolve`.
Resolution = Exempt | Person | Denied


def _first(extra: Mapping[str, Any], key: str) -> str | None:
    values = extra.get(key)
    if isinstance(values, list) and values and isinstance(values[0], str):
        return values[0]
    return None


def parse_assumed_role(username: str, extra: Mapping[str, Any]) -> Caller | None:
    """Return the role session of a request, or None when the requester is not an assumed IAM role (or is inconsistent).

    Args:
        username: ``request.userInfo.username``.
        extra: ``request.userInfo.extra`` (each value a list of strings).

    """
    match = _ASSUMED_ROLE.match(_first(extra, "arn") or username)
    if match is None:
        return None
    session = _first(extra, "sessionName")
    if session is not None and session != match[4]:
        return None
    return Caller(username=username, account=match[2], role_name=match[3], session_name=match[4])


def _expected(ns: NamespaceConfig) -> str:
    kinds = [
        f"the Identity Center role {p.role_name_prefix}<id>"
        for p in ns.principals
        if isinstance(p, IdentityCenterPrincipal)
    ]
    return " or ".join(kinds) or "no Identity Center permission set (ask the platform team)"


def _owner_of(config: WebhookConfig, caller: Caller) -> NamespaceConfig | None:
    for ns in config.namespaces.values():
        for p in ns.principals:
            if isinstance(p, IdentityCenterPrincipal) and p.matches(caller.role_name):
                return ns
            if isinstance(p, StudioPrincipal) and (p.account, p.role_name) == (
                caller.account,
                caller.role_name,
            ):
                return ns
    return None


def resolve(config: WebhookConfig, *, namespace: str, username: str, extra: Mapping[str, Any]) -> Resolution:
    """Resolve the requester of an admission request in ``namespace`` (see the module docstring for the rules)."""
    if username in config.exempt_usernames:
        return Exempt(username=username)
    ns = config.namespaces.get(namespace)
    if ns is None:
        return Denied(
            reason="unknown-namespace",
            message=f"namespace {namespace!r} is not a team namespace of the POSIX identity webhook, so no team "
            f"GID applies. Submit work in your team's namespace ({names.namespace('<team>')}); if this is a new "
            "team, "
            "the platform team must deploy it first.",
        )
    caller = parse_assumed_role(username, extra)
    if caller is None:
        return Denied(
            reason="not-a-role-session",
            message=f"{username!r} is not an IAM role session, so the person who submits in {namespace} cannot "
            f"be established. Submit with your own credentials from {_expected(ns)} (aws sso login, then "
            "aws eks update-kubeconfig).",
        )
    for p in ns.principals:
        if isinstance(p, IdentityCenterPrincipal) and p.matches(caller.role_name):
            return Person(key=f"{SSO_PERSON_PREFIX}{caller.session_name}", namespace=ns)
        if isinstance(p, StudioPrincipal) and (p.account, p.role_name) == (caller.account, caller.role_name):
            return Denied(
                reason="studio-identity-not-established",
                message=f"requests from the SageMaker Studio execution role {caller.role_name} (domain "
                f"{p.domain_id}) cannot be attributed to a person: every user profile shares that role and its "
                "session name does not name you. Submit with your own Identity Center credentials instead (in "
                f"the Studio terminal: aws sso login, then aws eks update-kubeconfig), as {_expected(ns)}.",
            )
    owner = _owner_of(config, caller)
    whose = f" (it belongs to team {owner.team}, namespace {owner.namespace})" if owner is not None else ""
    return Denied(
        reason="foreign-role" if owner is not None else "unknown-role",
        message=f"role {caller.role_name}{whose} may not submit work in {namespace}: pods there run as the "
        f"submitting person of team {ns.team}, who must use {_expected(ns)}.",
    )
