"""EKS access entries: each team's role maps to its own Kubernetes group only, and nobody else's does."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import Finding
from hyperpod_tenancy.runtime.drift_audit._common import TeamExpectation, _deploy, _team_account_unreadable

__all__ = ["access_entries", "access_entry_findings"]


# ---------------------------------------------------------------------- EKS access entries
def access_entries(eks: Any, cluster: str) -> list[dict[str, Any]]:
    """``DescribeAccessEntry`` of every access entry of the cluster."""
    arns = [
        arn
        for page in eks.get_paginator("list_access_entries").paginate(clusterName=cluster)
        for arn in page.get("accessEntries", [])
    ]
    return [eks.describe_access_entry(clusterName=cluster, principalArn=a)["accessEntry"] for a in arns]


def _as_time(value: object) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return None


class _ListedRoles:
    """An IAM client whose ``list_roles`` pages are read once (``find_sso_roles`` of every team reuses them)."""

    def __init__(self, iam: Any) -> None:
        self._iam = iam
        self._pages: dict[str, list[Any]] = {}

    def get_paginator(self, operation: str) -> _ListedRoles:
        if operation != "list_roles":  # pragma: no cover - find_sso_roles lists roles only
            raise ValueError(operation)
        return self

    def paginate(self, *, PathPrefix: str) -> list[Any]:  # noqa: N803 - the boto3 parameter name
        if PathPrefix not in self._pages:
            self._pages[PathPrefix] = list(
                self._iam.get_paginator("list_roles").paginate(PathPrefix=PathPrefix)
            )
        return self._pages[PathPrefix]


def access_entry_findings(
    iam: Any,
    entries: Sequence[Mapping[str, Any]],
    expectations: Sequence[TeamExpectation],
    *,
    cluster: str,
    iam_in: Callable[[str], Any] | None = None,
) -> list[Finding]:
    """Check the teams' Identity Center roles as they are now against their access entries; undeclared team access.

    Declared principals of a team: its Identity Center role (as it is now, and as the stack resolved it) and its
    Studio execution role, each mapped to the team's Kubernetes group only. Any other entry whose
    ``kubernetesGroups`` include a team's group is privilege creep. A team in its own account has its role there:
    ``iam_in(<its lookup role ARN>)`` gives an IAM client of that account, or raises ``PermissionError`` when the
    role cannot be assumed (a finding); without it, or without the record's lookup role, the role is taken from its
    access entry and not checked.
    """
    findings: list[Finding] = []
    by_arn = {str(e.get("principalArn")): e for e in entries}
    declared: dict[str, TeamExpectation] = {}
    listed = {"": _ListedRoles(iam)}
    for exp in expectations:
        client = iam
        if exp.team_account is not None:
            if iam_in is None or exp.lookup_role_arn is None:
                _declare_from_entries(exp, by_arn, declared)
                continue
            try:
                client = iam_in(exp.lookup_role_arn)
            except PermissionError as exc:
                _declare_from_entries(exp, by_arn, declared)
                findings.append(
                    _team_account_unreadable(exp, str(exc), to_read="the team's Identity Center role")
                )
                continue
            listed.setdefault(exp.team_account, _ListedRoles(client))
        findings += _team_role_findings(
            client, listed[exp.team_account or ""], exp, by_arn, declared, cluster=cluster
        )
    for exp in expectations:
        # a domain in the team's own account has its execution role there, unmapped: it only describes the cluster
        if exp.execution_role_arn and exp.team_account is None:
            declared[exp.execution_role_arn] = exp
            if exp.execution_role_arn not in by_arn:
                findings.append(
                    Finding(
                        kind="access-entry-missing",
                        team=exp.team,
                        object=f"EKS access entry of the Studio execution role on cluster {cluster}",
                        expected=f"an access entry for {exp.execution_role_arn}, mapped to {exp.kubernetes_group}",
                        actual="none",
                        fix=_deploy(exp),
                    )
                )
    return findings + _entry_group_findings(by_arn, declared, expectations, cluster=cluster)


def _declare_from_entries(
    exp: TeamExpectation, by_arn: Mapping[str, Any], declared: dict[str, TeamExpectation]
) -> None:
    """Declare, for a team whose account cannot be read, the entries of its permission set's roles in that account."""
    from hyperpod_tenancy.runtime.sso_role_resolver import (  # noqa: PLC0415 - boto3 loads on first use
        SSO_ROLE_PATH_PREFIX,
        role_name_pattern,
    )

    pattern = role_name_pattern(exp.permission_set_name)
    for arn in by_arn:
        if f"::{exp.team_account}:role{SSO_ROLE_PATH_PREFIX}" in arn and pattern.match(
            arn.rsplit("/", 1)[-1]
        ):
            declared[arn] = exp
    if exp.sso_role_arn:
        declared[exp.sso_role_arn] = exp


def _team_role_findings(
    iam: Any,
    listed: _ListedRoles,
    exp: TeamExpectation,
    by_arn: Mapping[str, Any],
    declared: dict[str, TeamExpectation],
    *,
    cluster: str,
) -> list[Finding]:
    """Check one team's Identity Center role (listed by ``iam``, in the account it lives in) and its entry."""
    # boto3 (which the resolver imports) loads on first use: the constructs import this module at synth
    from hyperpod_tenancy.runtime.sso_role_resolver import (  # noqa: PLC0415
        SSO_ROLE_PATH_PREFIX,
        find_sso_roles,
        role_name_pattern,
    )

    roles = find_sso_roles(listed, exp.permission_set_name)  # type: ignore[arg-type]
    pattern = role_name_pattern(exp.permission_set_name)
    account = f"::{exp.team_account}:" if exp.team_account else ""
    stale = [
        arn
        for arn in by_arn
        if f":role{SSO_ROLE_PATH_PREFIX}" in arn
        and account in arn
        and pattern.match(arn.rsplit("/", 1)[-1])
        and arn != (roles[0].arn if roles else None)
    ]
    if exp.sso_role_arn:
        declared[exp.sso_role_arn] = exp
    # an entry of an earlier role of the team is reported as stale below, not as undeclared access
    declared.update(dict.fromkeys(stale, exp))
    if not roles:
        where = f" in the team's account {exp.team_account}" if exp.team_account else ""
        return [
            Finding(
                kind="sso-role-missing",
                team=exp.team,
                object=f"IAM role AWSReservedSSO_{exp.permission_set_name}_*",
                expected="the role Identity Center provisions for the team's assignment",
                actual=f"no such role under {SSO_ROLE_PATH_PREFIX}{where}",
                fix=f"check the permission set's assignment (Identity Center console), then {_deploy(exp, rerun_lookup=True)}",
            )
        ]
    role = roles[0]
    declared[role.arn] = exp
    entry = by_arn.get(role.arn)
    if entry is None:
        return [
            Finding(
                kind="access-entry-stale",
                team=exp.team,
                object=f"EKS access entry of {role.name} on cluster {cluster}",
                expected=f"an access entry for {role.arn}, mapped to {exp.kubernetes_group}",
                actual=(
                    f"entries for {', '.join(sorted(stale))} (a role that no longer exists)"
                    if stale
                    else "no access entry for the team's current role"
                )
                + (f"; the stack resolved {exp.sso_role_arn}" if exp.sso_role_arn else ""),
                fix=f"{_deploy(exp, rerun_lookup=True)} (re-runs the role lookup; the access entry follows)",
            )
        ]
    created = _as_time(iam.get_role(RoleName=role.name)["Role"].get("CreateDate"))
    entry_created = _as_time(entry.get("createdAt"))
    if created is None or entry_created is None or created <= entry_created:
        return []
    return [
        Finding(
            kind="access-entry-stale",
            team=exp.team,
            object=f"EKS access entry of {role.name} on cluster {cluster}",
            expected=f"an access entry created after role {role.name} (created {created:%Y-%m-%d %H:%M:%S}Z)",
            actual=f"created {entry_created:%Y-%m-%d %H:%M:%S}Z, for an earlier role of the same ARN "
            "(EKS keeps the role ID it saw, so the entry lets nobody in)",
            fix=f"aws eks delete-access-entry --cluster-name {cluster} --principal-arn {role.arn}, then "
            f"aws eks create-access-entry --cluster-name {cluster} --principal-arn {role.arn} "
            f"--kubernetes-groups {exp.kubernetes_group}",
        )
    ]


def _entry_group_findings(
    by_arn: Mapping[str, Mapping[str, Any]],
    declared: Mapping[str, TeamExpectation],
    expectations: Sequence[TeamExpectation],
    *,
    cluster: str,
) -> list[Finding]:
    """Check that declared entries map to their team's group only, and that no other entry maps to a team's."""
    findings: list[Finding] = []
    # a team whose record is missing has no known Studio role: its group's entries cannot be judged (the missing
    # record is the finding); with Identity Center in another account the team has no Studio (and no permission
    # set ARN here), so its group is judged
    team_groups = {
        exp.kubernetes_group: exp
        for exp in expectations
        if exp.permission_set_arn is not None or exp.identity_center_account is not None
    }
    for arn, entry in sorted(by_arn.items()):
        groups = [str(g) for g in entry.get("kubernetesGroups") or []]
        owner = declared.get(arn)
        if owner is not None:
            if sorted(groups) != [owner.kubernetes_group]:
                findings.append(
                    Finding(
                        kind="access-entry-groups",
                        team=owner.team,
                        object=f"EKS access entry of {arn} on cluster {cluster}",
                        expected=f"kubernetesGroups [{owner.kubernetes_group}]",
                        actual=f"kubernetesGroups [{', '.join(groups)}]",
                        fix=f"aws eks update-access-entry --cluster-name {cluster} --principal-arn {arn} "
                        f"--kubernetes-groups {owner.kubernetes_group}",
                    )
                )
            continue
        for group in groups:
            team = team_groups.get(group)
            if team is not None:
                findings.append(
                    Finding(
                        kind="access-entry-undeclared",
                        team=team.team,
                        object=f"EKS access entry of {arn} on cluster {cluster}",
                        expected=f"only the team's Identity Center and Studio roles map to {group}",
                        actual=f"{arn} maps to {group}",
                        fix=f"aws eks delete-access-entry --cluster-name {cluster} --principal-arn {arn} (grant "
                        "people access through the team's Identity Center group)",
                    )
                )
    return findings
