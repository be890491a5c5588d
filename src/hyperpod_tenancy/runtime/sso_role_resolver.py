"""Lambda handlers: resolve the IAM role IAM Identity Center creates for a permission set.

Identity Center provisions one role per permission set in every account the permission set is
assigned to, named ``AWSReservedSSO_<PermissionSetName>_<16 hex>`` under the path
``/aws-reserved/sso.amazonaws.com/`` (plus a ``<sso-region>/`` segment unless Identity Center lives
in us-east-1). The suffix is random and changes whenever every assignment of the permission set to
the account is removed and re-added, so the ARN cannot be written into a template: this custom
resource looks it up at deploy time.

Custom-resource contract (CDK ``custom_resources.Provider`` with ``on_event_handler=on_event`` and
``is_complete_handler=is_complete``):

Resource properties:
    ``PermissionSetName`` (required): the permission set name, exactly as in Identity Center.
    ``TimeoutSeconds`` (optional, default 900): how long to wait for the role to appear before
    failing with an explicit message. Keep it below the Provider's ``total_timeout`` so this
    message, not the framework's generic "Operation timed out", reaches CloudFormation.
    ``LookupRoleArn`` (optional): a role in the account the permission set is assigned in, when that is not
    this one (a team with an account of its own): the poller assumes it and lists roles there. It may list
    roles and nothing else (``hyperpod-tenancy-<cluster>-<team>-lookup``).
    ``PermissionSetArn`` (optional): when given it is the physical resource ID, so replacing the
    permission set replaces this resource. Any other property (e.g. the account assignment's
    reference, used as a nonce) is ignored, but changing it re-runs the lookup.

Resource attributes (``Fn::GetAtt``):
    ``RoleArn``: the full role ARN *with* its path (EKS access entries need the path).
    ``RoleName``: the role name.

Only the standard library and boto3 are imported: the module runs as-is on the Lambda Python
runtime. The IAM client comes from boto3's default session, so ``AWS_ENDPOINT_URL`` /
``AWS_ENDPOINT_URL_IAM`` redirect it (tests point it at a moto server).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

import boto3

if TYPE_CHECKING:
    from mypy_boto3_iam import IAMClient

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Path prefix of every role Identity Center provisions (the region segment, if any, is below it).
SSO_ROLE_PATH_PREFIX = "/aws-reserved/sso.amazonaws.com/"
#: Default wait for the role to appear, in seconds.
DEFAULT_TIMEOUT_SECONDS = 900
#: Key under which ``on_event`` records when the lookup started (epoch seconds). The Provider
#: framework merges the ``on_event`` response into the event every ``is_complete`` call receives.
STARTED_AT_KEY = "SsoRoleLookupStartedAt"
#: Error codes that mean "try again at the next poll" rather than "fail the deployment".
_RETRYABLE_CODES = frozenset({"Throttling", "ThrottlingException", "RequestLimitExceeded", "ServiceFailure"})
#: The role's path must be the SSO prefix, optionally followed by one region segment.
_PATH_RE = re.compile(r"^/aws-reserved/sso\.amazonaws\.com/(?:[a-z]{2}(?:-[a-z]+)+-\d+/)?$")


class SsoRoleResolutionError(Exception):
    """The role of a permission set could not be resolved; the message says what to check."""


class OnEventResponse(TypedDict):
    """What ``on_event`` returns to the Provider framework."""

    PhysicalResourceId: str
    SsoRoleLookupStartedAt: NotRequired[float]


class RoleData(TypedDict):
    """Attributes of the custom resource (``Fn::GetAtt``)."""

    RoleArn: str
    RoleName: str


class IsCompleteResponse(TypedDict):
    """What ``is_complete`` returns to the Provider framework (``Data`` only when complete)."""

    IsComplete: bool
    Data: NotRequired[RoleData]


@dataclass(frozen=True)
class ResolvedRole:
    """An Identity Center role found in this account."""

    #: Role name, ``AWSReservedSSO_<PermissionSet>_<16 hex>``.
    name: str
    #: Full ARN including the ``/aws-reserved/sso.amazonaws.com/[<region>/]`` path.
    arn: str
    #: The role's path.
    path: str


def role_name_pattern(permission_set_name: str) -> re.Pattern[str]:
    """Regular expression matching exactly the role names of ``permission_set_name``."""
    return re.compile(rf"^AWSReservedSSO_{re.escape(permission_set_name)}_[0-9a-f]{{16}}$")


def iam_client() -> IAMClient:
    """IAM client from boto3's default session (honours ``AWS_ENDPOINT_URL[_IAM]``)."""
    return boto3.client("iam")


def find_sso_roles(iam: IAMClient, permission_set_name: str) -> list[ResolvedRole]:
    """Every role under the SSO path whose name belongs to ``permission_set_name``.

    Pages through ``ListRoles`` (``Marker``) until the listing is exhausted.
    """
    pattern = role_name_pattern(permission_set_name)
    pages = iam.get_paginator("list_roles").paginate(PathPrefix=SSO_ROLE_PATH_PREFIX)
    return [
        ResolvedRole(name=role["RoleName"], arn=role["Arn"], path=role["Path"])
        for page in pages
        for role in page["Roles"]
        if pattern.match(role["RoleName"]) and _PATH_RE.match(role["Path"])
    ]


def resolve_sso_role(iam: IAMClient, permission_set_name: str) -> ResolvedRole | None:
    """Return the single role of ``permission_set_name``, or ``None`` while it does not exist yet.

    Raises:
        SsoRoleResolutionError: more than one role matches.

    """
    matches = find_sso_roles(iam, permission_set_name)
    if len(matches) > 1:
        listed = ", ".join(sorted(m.arn for m in matches))
        raise SsoRoleResolutionError(
            f"{len(matches)} IAM roles match permission set {permission_set_name!r} under "
            f"{SSO_ROLE_PATH_PREFIX}: {listed}. Identity Center creates one role per permission set and "
            "account; remove the stale role(s) or check for a second Identity Center instance."
        )
    return matches[0] if matches else None


def on_event(event: Mapping[str, Any], context: object = None) -> OnEventResponse:
    """Start the lookup on Create/Update (Provider ``on_event`` handler); do nothing on Delete."""
    LOG.info("on_event %s", _loggable(event))
    if event["RequestType"] == "Delete":
        return {"PhysicalResourceId": str(event["PhysicalResourceId"])}
    props = event.get("ResourceProperties", {})
    name = _permission_set_name(props)
    _timeout_seconds(props)  # reject a bad value now rather than on the first poll
    physical_id = str(props.get("PermissionSetArn") or name)
    return {"PhysicalResourceId": physical_id, "SsoRoleLookupStartedAt": time.time()}


def is_complete(
    event: Mapping[str, Any], context: object = None, *, iam: IAMClient | None = None
) -> IsCompleteResponse:
    """Report the role once it exists, fail after the deadline (Provider ``is_complete`` handler).

    Raises:
        SsoRoleResolutionError: several roles match, IAM refuses the listing, or the role has not
            appeared within ``TimeoutSeconds``.

    """
    if event["RequestType"] == "Delete":
        return {"IsComplete": True}
    props = event.get("ResourceProperties", {})
    name = _permission_set_name(props)
    client = iam if iam is not None else _client_for(props)
    try:
        role = resolve_sso_role(client, name)
    except client.exceptions.ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code not in _RETRYABLE_CODES:
            raise SsoRoleResolutionError(
                f"iam:ListRoles on path {SSO_ROLE_PATH_PREFIX} failed for permission set {name!r}: {exc}. "
                "The resolver's Lambda role needs iam:ListRoles (Resource '*')."
            ) from exc
        LOG.warning("retryable IAM error, polling again: %s", exc)
        role = None
    if role is not None:
        LOG.info("resolved %s -> %s", name, role.arn)
        return {"IsComplete": True, "Data": {"RoleArn": role.arn, "RoleName": role.name}}
    _fail_if_past_deadline(event, props, name)
    return {"IsComplete": False}


def _client_for(props: Mapping[str, Any]) -> IAMClient:
    """Return the IAM client of this account, or of the team's account through ``LookupRoleArn``.

    Raises:
        SsoRoleResolutionError: the lookup role cannot be assumed (the message names it and what to check).

    """
    lookup = props.get("LookupRoleArn")
    if not lookup:
        return iam_client()
    sts = boto3.client("sts")
    try:
        credentials = sts.assume_role(
            RoleArn=str(lookup), RoleSessionName="hyperpod-tenancy-sso-role-lookup"
        )["Credentials"]
    except sts.exceptions.ClientError as exc:
        raise SsoRoleResolutionError(
            f"could not assume the team's lookup role {lookup}: {exc}. Deploy the team's account stack "
            "(Team-<Team>-Account) before its team stack, and check that the role trusts this account."
        ) from exc
    return boto3.client(
        "iam",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


def _fail_if_past_deadline(event: Mapping[str, Any], props: Mapping[str, Any], name: str) -> None:
    """Raise the explicit "role never appeared" error once ``TimeoutSeconds`` have passed."""
    timeout = _timeout_seconds(props)
    started_raw = event.get(STARTED_AT_KEY)
    if started_raw is None:
        # Not started by on_event (should not happen with the Provider framework): poll until the
        # framework's own total_timeout.
        LOG.warning("event has no %s; relying on the Provider's total_timeout", STARTED_AT_KEY)
        return
    waited = time.time() - float(started_raw)
    if waited < timeout:
        LOG.info("role for %s not found yet (%.0fs of %ds)", name, waited, timeout)
        return
    raise SsoRoleResolutionError(
        f"No IAM role for Identity Center permission set {name!r} appeared within {timeout}s: searched "
        f"roles under path {SSO_ROLE_PATH_PREFIX} (and its <sso-region>/ sub-path) for names matching "
        f"{role_name_pattern(name).pattern}. Check that the permission set is assigned to a group (or "
        "user) in the account looked in (this one, or the team's through LookupRoleArn) and that the assignment "
        "finished provisioning (Identity Center console "
        "-> AWS accounts -> this account), that the name matches exactly (case-sensitive), and that "
        "the assignment was not removed. Raise TimeoutSeconds if provisioning is just slow."
    )


def _permission_set_name(props: Mapping[str, Any]) -> str:
    """Return the required ``PermissionSetName`` property.

    Raises:
        ValueError: missing or empty.

    """
    name = props.get("PermissionSetName")
    if not isinstance(name, str) or not name:
        raise ValueError("custom resource property PermissionSetName is required (a non-empty string)")
    return name


def _timeout_seconds(props: Mapping[str, Any]) -> int:
    """Return the ``TimeoutSeconds`` property (CloudFormation passes numbers as strings).

    Raises:
        ValueError: not a positive integer.

    """
    raw = props.get("TimeoutSeconds", DEFAULT_TIMEOUT_SECONDS)
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value <= 0:
        raise ValueError(f"custom resource property TimeoutSeconds must be a positive integer, got {raw!r}")
    return value


def _loggable(event: Mapping[str, Any]) -> str:
    """Render the event as JSON without the pre-signed response URL."""
    return json.dumps({k: v for k, v in event.items() if k != "ResponseURL"}, default=str)
