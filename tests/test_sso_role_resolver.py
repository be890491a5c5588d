"""The SSO role resolver Lambda handlers against a real moto server (HTTP, no boto3 patching)."""

from __future__ import annotations

import ast
import json
import secrets
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto_server import moto_server, refusing_sts

from hyperpod_tenancy.runtime import sso_role_resolver as resolver

ACCOUNT = "123456789012"  # moto's default account
SSO_PATH = "/aws-reserved/sso.amazonaws.com/"
TRUST = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Federated": f"arn:aws:iam::{ACCOUNT}:saml-provider/AWSSSO_abc_DO_NOT_DELETE"},
                "Action": ["sts:AssumeRoleWithSAML", "sts:TagSession"],
            }
        ],
    }
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def moto_endpoint() -> Iterator[str]:
    """A moto server on loopback; boto3's default session is pointed at it through env vars."""
    with moto_server() as url:
        yield url


@pytest.fixture
def iam(moto_endpoint: str) -> Any:
    """A fresh (reset) moto account and a client for arranging roles in it."""
    req = urllib.request.Request(f"{moto_endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(req) as resp:
        assert resp.status == 200
    return boto3.client("iam")


# --------------------------------------------------------------------------- helpers


def suffix() -> str:
    """A random 16-hex suffix like the one Identity Center appends."""
    return secrets.token_hex(8)


def create_sso_role(
    iam: Any, permission_set: str, *, region: str | None = None, path: str | None = None
) -> str:
    """Create a role the way Identity Center names it; return its ARN."""
    role_path = path or (f"{SSO_PATH}{region}/" if region else SSO_PATH)
    name = f"AWSReservedSSO_{permission_set}_{suffix()}"
    arn: str = iam.create_role(RoleName=name, Path=role_path, AssumeRolePolicyDocument=TRUST)["Role"]["Arn"]
    return arn


def cfn_event(request_type: str, props: dict[str, Any], physical_id: str | None = None) -> dict[str, Any]:
    """A CloudFormation custom-resource request as the Provider framework forwards it."""
    event: dict[str, Any] = {
        "RequestType": request_type,
        "ServiceToken": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:framework-onEvent",
        "ResponseURL": "https://cloudformation-custom-resource-response-useast1.s3.amazonaws.com/x?sig",
        "StackId": f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/team-a/1",
        "RequestId": "req-1",
        "LogicalResourceId": "SsoRole",
        "ResourceType": "Custom::SsoRoleArn",
        "ResourceProperties": {"ServiceToken": "arn:aws:lambda:...", **props},
    }
    if physical_id is not None:
        event["PhysicalResourceId"] = physical_id
    return event


def waiter_event(request: dict[str, Any], on_event_result: dict[str, Any]) -> dict[str, Any]:
    """What ``is_complete`` receives: the framework's ``{...request, ...onEventResult}`` after a JSON trip."""
    merged = {**request, **on_event_result, "PhysicalResourceId": on_event_result["PhysicalResourceId"]}
    return json.loads(json.dumps(merged))  # type: ignore[no-any-return]


def start(
    props: dict[str, Any], request_type: str = "Create", physical_id: str | None = None
) -> dict[str, Any]:
    """Run ``on_event`` and return the event the first ``is_complete`` poll sees."""
    request = cfn_event(request_type, props, physical_id)
    result = resolver.on_event(request, None)
    return waiter_event(request, dict(result))


# --------------------------------------------------------------------------- role present


def test_resolves_role_without_region_segment(iam: Any) -> None:
    """Identity Center in us-east-1: the role sits directly under the SSO path."""
    arn = create_sso_role(iam, "TeamA")
    out = resolver.is_complete(start({"PermissionSetName": "TeamA"}), None)
    assert out["IsComplete"] is True
    assert out["Data"]["RoleArn"] == arn
    assert out["Data"]["RoleArn"].startswith(f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/")
    assert out["Data"]["RoleName"] == arn.rsplit("/", 1)[1]


def test_resolves_role_with_region_segment_and_keeps_the_path(iam: Any) -> None:
    """Identity Center elsewhere: the ARN keeps ``/<sso-region>/`` (access entries need the full path)."""
    arn = create_sso_role(iam, "TeamA", region="eu-west-1")
    out = resolver.is_complete(start({"PermissionSetName": "TeamA"}), None)
    assert out["IsComplete"] is True
    assert out["Data"]["RoleArn"] == arn
    assert "/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_TeamA_" in out["Data"]["RoleArn"]


def _in_account(account: str) -> Any:
    """An IAM client acting in ``account`` (moto keeps one state per account, keyed by the credentials)."""
    credentials = boto3.client("sts").assume_role(
        RoleArn=f"arn:aws:iam::{account}:role/test-setup", RoleSessionName="test-setup"
    )["Credentials"]
    return boto3.client(
        "iam",
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
    )


def test_a_team_account_role_is_found_there_through_the_lookup_role(iam: Any) -> None:
    """A team in its own account: the poller assumes the team's lookup role and lists that account's roles."""
    team_account = "444455556666"
    create_sso_role(iam, "Research")  # a role of the same name in this account is not the team's
    there = create_sso_role(_in_account(team_account), "Research")
    lookup = f"arn:aws:iam::{team_account}:role/hyperpod-tenancy-shared-gpu-research-lookup"
    out = resolver.is_complete(start({"PermissionSetName": "Research", "LookupRoleArn": lookup}), None)
    assert out["IsComplete"] is True
    assert out["Data"]["RoleArn"] == there
    assert out["Data"]["RoleArn"].startswith(f"arn:aws:iam::{team_account}:role/aws-reserved/")


def test_a_lookup_role_that_cannot_be_assumed_fails_naming_it(
    iam: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """STS refusing the lookup role is not polled again: the error names the role and the stack to deploy first."""
    lookup = "arn:aws:iam::444455556666:role/hyperpod-tenancy-shared-gpu-research-lookup"
    with refusing_sts() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", url)
        boto3.DEFAULT_SESSION = None
        try:
            with pytest.raises(resolver.SsoRoleResolutionError) as err:
                resolver.is_complete(start({"PermissionSetName": "Research", "LookupRoleArn": lookup}))
        finally:
            boto3.DEFAULT_SESSION = None
    assert lookup in str(err.value) and "AccessDenied" in str(err.value)
    assert "Team-<Team>-Account" in str(err.value)


def test_role_appearing_between_polls(iam: Any) -> None:
    """The assignment is still provisioning at the first poll; the next poll finds the role."""
    event = start({"PermissionSetName": "TeamA", "TimeoutSeconds": "600"})
    first = resolver.is_complete(event, None)
    assert first == {"IsComplete": False}  # no Data while incomplete: the framework rejects it
    arn = create_sso_role(iam, "TeamA", region="eu-central-1")
    second = resolver.is_complete(event, None)
    assert second["IsComplete"] is True
    assert second["Data"] == {"RoleArn": arn, "RoleName": arn.rsplit("/", 1)[1]}


def test_role_never_appearing_fails_explicitly_after_deadline(iam: Any) -> None:
    """Past ``TimeoutSeconds`` the error names the permission set, the path and what to check."""
    create_sso_role(iam, "TeamB")  # another team's role does not help
    event = start({"PermissionSetName": "TeamA", "TimeoutSeconds": "1"})
    assert resolver.is_complete(event, None) == {"IsComplete": False}
    time.sleep(1.2)
    with pytest.raises(resolver.SsoRoleResolutionError) as err:
        resolver.is_complete(event, None)
    message = str(err.value)
    assert "'TeamA'" in message
    assert SSO_PATH in message
    assert "assigned to a group" in message
    assert "in the account looked in" in message
    assert "within 1s" in message


def test_deadline_is_measured_from_the_start_carried_in_the_event(iam: Any) -> None:
    """A poll whose event says the lookup started long ago fails at once; a fresh one does not."""
    fresh = start({"PermissionSetName": "TeamA", "TimeoutSeconds": 300})
    assert resolver.is_complete(fresh, None) == {"IsComplete": False}
    stale = {**fresh, resolver.STARTED_AT_KEY: time.time() - 301}
    with pytest.raises(resolver.SsoRoleResolutionError, match="within 300s"):
        resolver.is_complete(stale, None)


def test_found_role_wins_over_an_expired_deadline(iam: Any) -> None:
    """A role that exists is reported even when the last poll lands after the deadline."""
    arn = create_sso_role(iam, "TeamA")
    event = {**start({"PermissionSetName": "TeamA", "TimeoutSeconds": "5"}), resolver.STARTED_AT_KEY: 0}
    out = resolver.is_complete(event, None)
    assert out["IsComplete"] is True
    assert out["Data"]["RoleArn"] == arn


# --------------------------------------------------------------------------- pagination


def test_pages_through_more_than_one_page_of_roles(iam: Any) -> None:
    """250 SSO roles span three ListRoles pages; a permission set whose role is on the last page resolves."""
    arns = {f"Team{i:03d}": create_sso_role(iam, f"Team{i:03d}") for i in range(250)}

    pages = [page["Roles"] for page in iam.get_paginator("list_roles").paginate(PathPrefix=SSO_PATH)]
    assert len(pages) == 3  # moto pages by 100 like IAM, so Marker is exercised
    target_role = pages[-1][-1]
    target = target_role["RoleName"].split("_")[1]
    assert all(r["RoleName"] != target_role["RoleName"] for page in pages[:-1] for r in page)

    client = boto3.client("iam")
    calls: list[str] = []
    client.meta.events.register("after-call.iam.ListRoles", lambda **_: calls.append("ListRoles"))
    out = resolver.is_complete(start({"PermissionSetName": target}), None, iam=client)
    assert out["IsComplete"] is True
    assert out["Data"]["RoleArn"] == arns[target]
    assert len(calls) == 3


def test_pagination_without_injected_client(iam: Any) -> None:
    """The default client (from env) also pages: roles on page 2 of 120 resolve."""
    arns = {f"P{i:03d}": create_sso_role(iam, f"P{i:03d}", region="ap-southeast-2") for i in range(120)}
    last_page = [p["Roles"] for p in iam.get_paginator("list_roles").paginate(PathPrefix=SSO_PATH)][-1]
    assert len(last_page) == 20
    for role in last_page[::5]:
        name = role["RoleName"].split("_")[1]
        out = resolver.is_complete(start({"PermissionSetName": name}), None)
        assert out["IsComplete"] is True
        assert out["Data"]["RoleArn"] == arns[name]


# --------------------------------------------------------------------------- matching


def test_similar_permission_set_names_do_not_match(iam: Any) -> None:
    """``Research`` must not pick up ``ResearchAdmin``'s role (nor the reverse)."""
    admin = create_sso_role(iam, "ResearchAdmin")
    event = start({"PermissionSetName": "Research", "TimeoutSeconds": "600"})
    assert resolver.is_complete(event, None) == {"IsComplete": False}
    research = create_sso_role(iam, "Research")
    assert resolver.is_complete(event, None)["Data"]["RoleArn"] == research
    assert (
        resolver.is_complete(start({"PermissionSetName": "ResearchAdmin"}), None)["Data"]["RoleArn"] == admin
    )


def test_name_is_matched_literally_and_case_sensitively(iam: Any) -> None:
    """Regex metacharacters in the name are escaped; ``teama`` is not ``TeamA``; the suffix must be 16 hex."""
    create_sso_role(iam, "DataXScience")
    create_sso_role(iam, "teama")
    for bad_suffix in ("NOTHEX0000000000", f"{suffix()}0"):  # not hex / 17 digits
        iam.create_role(
            RoleName=f"AWSReservedSSO_TeamA_{bad_suffix}", Path=SSO_PATH, AssumeRolePolicyDocument=TRUST
        )
    for name in ("Data.Science", "TeamA"):
        event = start({"PermissionSetName": name, "TimeoutSeconds": "600"})
        assert resolver.is_complete(event, None) == {"IsComplete": False}, name
    dotted = create_sso_role(iam, "Data.Science")
    assert (
        resolver.is_complete(start({"PermissionSetName": "Data.Science"}), None)["Data"]["RoleArn"] == dotted
    )


def test_roles_outside_the_sso_path_are_ignored(iam: Any) -> None:
    """A look-alike outside ``/aws-reserved/sso.amazonaws.com/`` (or nested deeper) is not the SSO role."""
    iam.create_role(RoleName=f"AWSReservedSSO_TeamA_{suffix()}", Path="/", AssumeRolePolicyDocument=TRUST)
    create_sso_role(iam, "TeamA", path=f"{SSO_PATH}eu-west-1/extra/")
    event = start({"PermissionSetName": "TeamA", "TimeoutSeconds": "600"})
    assert resolver.is_complete(event, None) == {"IsComplete": False}


def test_two_matching_roles_is_an_error_listing_both(iam: Any) -> None:
    """Two roles for one permission set (e.g. two Identity Center regions) fail with both ARNs named."""
    first = create_sso_role(iam, "TeamA")
    second = create_sso_role(iam, "TeamA", region="eu-west-1")
    with pytest.raises(resolver.SsoRoleResolutionError) as err:
        resolver.is_complete(start({"PermissionSetName": "TeamA"}), None)
    assert first in str(err.value)
    assert second in str(err.value)
    assert "2 IAM roles match permission set 'TeamA'" in str(err.value)


# --------------------------------------------------------------------------- lifecycle


def test_create_physical_id_is_the_permission_set(iam: Any) -> None:
    """Physical ID: the permission set ARN when given, else its name; the start time is recorded."""
    by_name = resolver.on_event(cfn_event("Create", {"PermissionSetName": "TeamA"}), None)
    assert by_name["PhysicalResourceId"] == "TeamA"
    ps_arn = "arn:aws:sso:::permissionSet/ssoins-1/ps-0123456789abcdef"
    by_arn = resolver.on_event(
        cfn_event("Create", {"PermissionSetName": "TeamA", "PermissionSetArn": ps_arn}), None
    )
    assert by_arn["PhysicalResourceId"] == ps_arn
    assert abs(by_arn["SsoRoleLookupStartedAt"] - time.time()) < 60


def test_update_reruns_the_lookup_and_returns_the_new_suffix(iam: Any) -> None:
    """Assignments removed and re-added give the role a new suffix; an Update reports the new ARN."""
    old = create_sso_role(iam, "TeamA")
    created = resolver.is_complete(start({"PermissionSetName": "TeamA"}), None)
    assert created["Data"]["RoleArn"] == old
    iam.delete_role(RoleName=old.rsplit("/", 1)[1])
    new = create_sso_role(iam, "TeamA")
    updated_event = start({"PermissionSetName": "TeamA", "Nonce": "2"}, "Update", physical_id="TeamA")
    assert updated_event["PhysicalResourceId"] == "TeamA"
    updated = resolver.is_complete(updated_event, None)
    assert updated["Data"]["RoleArn"] == new != old


def test_delete_is_a_no_op(iam: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Delete neither calls IAM (endpoint unreachable here) nor touches the role, and keeps the ID."""
    arn = create_sso_role(iam, "TeamA")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # discard port: any IAM call would fail
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    request = cfn_event("Delete", {"PermissionSetName": "TeamA"}, physical_id="TeamA")
    result = resolver.on_event(request, None)
    assert dict(result) == {"PhysicalResourceId": "TeamA"}
    assert resolver.is_complete(waiter_event(request, dict(result)), None) == {"IsComplete": True}
    monkeypatch.undo()
    assert iam.get_role(RoleName=arn.rsplit("/", 1)[1])["Role"]["Arn"] == arn


def test_unreachable_iam_is_not_swallowed(iam: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Sanity check for the Delete test: with the same endpoint a Create poll does fail."""
    event = start({"PermissionSetName": "TeamA"})
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    with pytest.raises(Exception, match=r"127\.0\.0\.1:9"):
        resolver.is_complete(event, None)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "PermissionSetName is required"),
        ({"PermissionSetName": ""}, "PermissionSetName is required"),
        (
            {"PermissionSetName": "TeamA", "TimeoutSeconds": "abc"},
            "TimeoutSeconds must be a positive integer",
        ),
        ({"PermissionSetName": "TeamA", "TimeoutSeconds": "0"}, "TimeoutSeconds must be a positive integer"),
    ],
)
def test_bad_properties_fail_on_create(iam: Any, props: dict[str, Any], message: str) -> None:
    """Invalid properties fail in ``on_event`` with the property named, before any polling."""
    with pytest.raises(ValueError, match=message):
        resolver.on_event(cfn_event("Create", props), None)


def test_handler_module_imports_only_stdlib_and_boto3() -> None:
    """The module runs on the bare Lambda runtime: stdlib + boto3, stubs only under TYPE_CHECKING."""
    tree = ast.parse(Path(resolver.__file__).read_text(encoding="utf-8"))
    type_checking_only = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for child in ast.walk(node)
    }
    runtime_imports: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_checking_only:
            continue
        if isinstance(node, ast.Import):
            runtime_imports.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "relative imports would not exist in the Lambda asset"
            runtime_imports.add(str(node.module).split(".")[0])
    assert runtime_imports - sys.stdlib_module_names == {"boto3"}
