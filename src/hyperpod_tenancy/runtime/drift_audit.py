"""The drift audit's AWS checks, shared by ``hyperpod-tenancy audit`` and the daily Lambda (:func:`handler`).

Each team stack writes an audit record (SSM parameter under ``/hyperpod-tenancy/<cluster>/drift-audit/``, see
:class:`TeamExpectation`): what its CloudFormation deployed, with the values only known once deployed (the
permission set's ARN, the Identity Center role the lookup resolved, the Studio execution role) and the team's
``AWS::SageMaker::ComputeQuota`` as the stack rendered it from the policy. The checks compare that with what
exists now and return :class:`Finding` objects, each naming the object, what is expected, what exists and the fix.

How an EKS access entry binds (EKS API Reference, ``AccessEntry``, ``principalArn``): "even though the ARN is the
same for the recreated IAM principal, the roleID or userID ... is different ... Amazon EKS stores it with the access
entry." So an entry is stale both when the team's role has another ARN now (Identity Center gives a re-created
permission set a role with a new random suffix) and when a role of the same ARN was created after the entry (the
role's ``CreateDate`` later than the entry's ``createdAt``): the role ID the entry stored is gone.

Only the standard library and boto3 are imported (boto3 on first use, so the constructs, which read
:class:`TeamExpectation` and :data:`SSO_ROLE_LOOKUP_CONTEXT` at synth, need no boto3): the module runs as-is on
the Lambda Python runtime, and the command line (``[audit]`` extra) imports the same functions, so both compare
the same way. The Lambda's asset keeps the import path (``hyperpod_tenancy.runtime``) under a stub package.

The daily handler (:func:`handler`) also runs the Kubernetes checks (:mod:`hyperpod_tenancy.runtime.kube_drift`)
against each team's Kubernetes audit record, reading the cluster through its private API endpoint with an EKS
token (:mod:`hyperpod_tenancy.runtime.kube_api`), and publishes the number of findings of both as the metric
:data:`METRIC_NAME` (namespace from ``METRIC_NAMESPACE``, dimension ``Cluster``). A cluster it cannot read is a
finding too, so the alarm fires instead of the run failing quietly.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hyperpod_tenancy.runtime import kube_drift
from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding, check_version

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

__all__ = [
    "METRIC_NAME",
    "SCHEMA_VERSION",
    "SSO_ROLE_LOOKUP_CONTEXT",
    "AuditError",
    "AwsClients",
    "Finding",
    "TeamExpectation",
    "aws_findings",
    "check_version",
    "handler",
    "read_records",
]

#: Version of the audit record format; a record of another version is reported, not guessed at.
SCHEMA_VERSION = 1
#: The metric the daily audit publishes: the number of findings of the run.
METRIC_NAME = "DriftFindings"
#: CDK context value whose change re-runs a team's Identity Center role lookup (``Custom::SsoRoleArn``).
SSO_ROLE_LOOKUP_CONTEXT = "hyperpod-tenancy:ssoRoleLookup"
#: The compute quota fields the stack renders and the audit compares (``DescribeComputeQuota`` response shape,
#: botocore ``sagemaker`` service model: ``ComputeQuotaConfig``, ``ComputeQuotaTarget``, ``ActivationState``).
QUOTA_FIELDS = ("ComputeQuotaConfig", "ComputeQuotaTarget", "ActivationState")


@dataclass(frozen=True, kw_only=True)
class TeamExpectation:
    """What a team's stack deployed, as its audit record says (and the command line completes from the policy).

    Attributes:
        team, stack: the team and its CloudFormation stack.
        permission_set_name, instance_arn, group_id: the permission set and the group it is assigned to.
        permission_set_arn: the permission set's ARN when deployed (``None``: not known).
        kubernetes_group: the group the team's access entries map to.
        sso_role_arn: the Identity Center role the stack's lookup resolved (``None``: not known).
        studio_domain, execution_role_arn: the Studio domain's name and its execution role (``None``: no Studio).
        compute_quota: name and the :data:`QUOTA_FIELDS` of the team's compute quota (``None``: Kueue).

    """

    team: str
    stack: str
    permission_set_name: str
    instance_arn: str
    group_id: str
    kubernetes_group: str
    permission_set_arn: str | None = None
    sso_role_arn: str | None = None
    studio_domain: str | None = None
    execution_role_arn: str | None = None
    compute_quota: Mapping[str, Any] | None = field(default=None)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TeamExpectation:
        """Read an audit record (:meth:`to_record`'s JSON object).

        Raises:
            AuditError: the record is of another schema version or lacks a field.

        """
        check_version(record, SCHEMA_VERSION, what="audit record")
        try:
            return cls(
                team=str(record["team"]),
                stack=str(record["stack"]),
                permission_set_name=str(record["permissionSetName"]),
                instance_arn=str(record["instanceArn"]),
                group_id=str(record["groupId"]),
                kubernetes_group=str(record["kubernetesGroup"]),
                permission_set_arn=record.get("permissionSetArn"),
                sso_role_arn=record.get("ssoRoleArn"),
                studio_domain=record.get("studioDomain"),
                execution_role_arn=record.get("executionRoleArn"),
                compute_quota=record.get("computeQuota"),
            )
        except KeyError as exc:
            raise AuditError(
                f"audit record of team {record.get('team')!r} has no {exc.args[0]!r}: redeploy the team stack"
            ) from None

    def to_record(self) -> dict[str, Any]:
        """Return the audit record the team stack writes (values may be CDK tokens at synth)."""
        return {
            "schemaVersion": SCHEMA_VERSION,
            "team": self.team,
            "stack": self.stack,
            "permissionSetName": self.permission_set_name,
            "permissionSetArn": self.permission_set_arn,
            "instanceArn": self.instance_arn,
            "groupId": self.group_id,
            "kubernetesGroup": self.kubernetes_group,
            "ssoRoleArn": self.sso_role_arn,
            "studioDomain": self.studio_domain,
            "executionRoleArn": self.execution_role_arn,
            "computeQuota": None if self.compute_quota is None else dict(self.compute_quota),
        }


def _deploy(expectation: TeamExpectation, *, rerun_lookup: bool = False) -> str:
    context = f" -c {SSO_ROLE_LOOKUP_CONTEXT}=$(date +%s)" if rerun_lookup else ""
    return f"cdk deploy {expectation.stack}{context}"


# ---------------------------------------------------------------------- Identity Center
def _permission_sets(sso: Any, instance_arn: str) -> dict[str, dict[str, Any]]:
    """Name -> ``DescribePermissionSet`` of every permission set of the instance."""
    found: dict[str, dict[str, Any]] = {}
    for page in sso.get_paginator("list_permission_sets").paginate(InstanceArn=instance_arn):
        for arn in page.get("PermissionSets", []):
            described = sso.describe_permission_set(InstanceArn=instance_arn, PermissionSetArn=arn)
            found[str(described["PermissionSet"]["Name"])] = described["PermissionSet"]
    return found


def identity_center_findings(
    sso: Any, expectations: Sequence[TeamExpectation], *, account: str
) -> list[Finding]:
    """Check the permission sets (present, no managed policy attached) and their assignments to the teams' groups.

    The stacks attach only an inline policy (``TeamTenant``), so any AWS-managed policy or customer-managed policy
    reference on a team's permission set was added outside CloudFormation.
    """
    findings: list[Finding] = []
    by_instance: dict[str, dict[str, dict[str, Any]]] = {}
    for exp in expectations:
        sets = by_instance.setdefault(exp.instance_arn, _permission_sets(sso, exp.instance_arn))
        described = sets.get(exp.permission_set_name)
        if described is None:
            findings.append(
                Finding(
                    kind="permission-set-missing",
                    team=exp.team,
                    object=f"permission set {exp.permission_set_name}",
                    expected=f"in Identity Center instance {exp.instance_arn}",
                    actual="no permission set of that name",
                    fix=f"{_deploy(exp, rerun_lookup=True)} (re-creates it, its assignment and the role lookup)",
                )
            )
            continue
        arn = str(described["PermissionSetArn"])
        managed = [
            str(p.get("Arn"))
            for page in sso.get_paginator("list_managed_policies_in_permission_set").paginate(
                InstanceArn=exp.instance_arn, PermissionSetArn=arn
            )
            for p in page.get("AttachedManagedPolicies", [])
        ]
        managed += [
            f"{p.get('Path', '/')}{p.get('Name')}"
            for page in sso.get_paginator(
                "list_customer_managed_policy_references_in_permission_set"
            ).paginate(InstanceArn=exp.instance_arn, PermissionSetArn=arn)
            for p in page.get("CustomerManagedPolicyReferences", [])
        ]
        if managed:
            findings.append(
                Finding(
                    kind="permission-set-policy-added",
                    team=exp.team,
                    object=f"permission set {exp.permission_set_name}",
                    expected="the inline policy of the team stack only",
                    actual=f"also attached: {', '.join(sorted(managed))}",
                    fix=f"detach them (aws sso-admin detach-managed-policy-from-permission-set / "
                    f"detach-customer-managed-policy-reference-from-permission-set --instance-arn {exp.instance_arn} "
                    f"--permission-set-arn {arn} ...); grants a team needs go into platform.yaml",
                )
            )
        assigned = {
            (str(a.get("PrincipalType")), str(a.get("PrincipalId")))
            for page in sso.get_paginator("list_account_assignments").paginate(
                InstanceArn=exp.instance_arn, AccountId=account, PermissionSetArn=arn
            )
            for a in page.get("AccountAssignments", [])
        }
        if ("GROUP", exp.group_id) not in assigned:
            findings.append(
                Finding(
                    kind="assignment-missing",
                    team=exp.team,
                    object=f"assignment of permission set {exp.permission_set_name} in account {account}",
                    expected=f"GROUP {exp.group_id}",
                    actual=", ".join(f"{t} {i}" for t, i in sorted(assigned)) or "no assignment",
                    fix=f"{_deploy(exp, rerun_lookup=True)} (the role Identity Center provisions for the new "
                    "assignment has a new name: the lookup must run again)",
                )
            )
    return findings


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
    iam: Any, entries: Sequence[Mapping[str, Any]], expectations: Sequence[TeamExpectation], *, cluster: str
) -> list[Finding]:
    """Check the teams' Identity Center roles as they are now against their access entries; undeclared team access.

    Declared principals of a team: its Identity Center role (as it is now, and as the stack resolved it) and its
    Studio execution role, each mapped to the team's Kubernetes group only. Any other entry whose
    ``kubernetesGroups`` include a team's group is privilege creep.
    """
    # boto3 (which the resolver imports) loads on first use: the constructs import this module at synth
    from hyperpod_tenancy.runtime.sso_role_resolver import (  # noqa: PLC0415
        SSO_ROLE_PATH_PREFIX,
        find_sso_roles,
        role_name_pattern,
    )

    findings: list[Finding] = []
    by_arn = {str(e.get("principalArn")): e for e in entries}
    declared: dict[str, TeamExpectation] = {}
    listed = _ListedRoles(iam)
    for exp in expectations:
        roles = find_sso_roles(listed, exp.permission_set_name)  # type: ignore[arg-type]
        pattern = role_name_pattern(exp.permission_set_name)
        stale = [
            arn
            for arn in by_arn
            if f":role{SSO_ROLE_PATH_PREFIX}" in arn
            and pattern.match(arn.rsplit("/", 1)[-1])
            and arn != (roles[0].arn if roles else None)
        ]
        if exp.sso_role_arn:
            declared[exp.sso_role_arn] = exp
        # an entry of an earlier role of the team is reported as stale below, not as undeclared access
        declared.update(dict.fromkeys(stale, exp))
        if not roles:
            findings.append(
                Finding(
                    kind="sso-role-missing",
                    team=exp.team,
                    object=f"IAM role AWSReservedSSO_{exp.permission_set_name}_*",
                    expected="the role Identity Center provisions for the team's assignment",
                    actual=f"no such role under {SSO_ROLE_PATH_PREFIX}",
                    fix=f"check the permission set's assignment (Identity Center console), then {_deploy(exp, rerun_lookup=True)}",
                )
            )
            continue
        role = roles[0]
        declared[role.arn] = exp
        entry = by_arn.get(role.arn)
        if entry is None:
            findings.append(
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
            )
            continue
        created = _as_time(iam.get_role(RoleName=role.name)["Role"].get("CreateDate"))
        entry_created = _as_time(entry.get("createdAt"))
        if created is not None and entry_created is not None and created > entry_created:
            findings.append(
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
            )
    for exp in expectations:
        if exp.execution_role_arn:
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
    # record is the finding)
    team_groups = {exp.kubernetes_group: exp for exp in expectations if exp.permission_set_arn is not None}
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


# ---------------------------------------------------------------------- SageMaker
def studio_findings(sagemaker: Any, expectations: Sequence[TeamExpectation]) -> list[Finding]:
    """Each team's Studio domain exists and its default execution role is the team's."""
    wanted = [e for e in expectations if e.studio_domain]
    if not wanted:
        return []
    domains = {
        str(d.get("DomainName")): str(d.get("DomainId"))
        for page in sagemaker.get_paginator("list_domains").paginate()
        for d in page.get("Domains", [])
    }
    findings: list[Finding] = []
    for exp in wanted:
        domain_id = domains.get(str(exp.studio_domain))
        if domain_id is None:
            findings.append(
                Finding(
                    kind="studio-domain-missing",
                    team=exp.team,
                    object=f"Studio domain {exp.studio_domain}",
                    expected="the team's domain",
                    actual="no domain of that name",
                    fix=_deploy(exp),
                )
            )
            continue
        described = sagemaker.describe_domain(DomainId=domain_id)
        role = (described.get("DefaultUserSettings") or {}).get("ExecutionRole")
        if exp.execution_role_arn and role != exp.execution_role_arn:
            findings.append(
                Finding(
                    kind="studio-execution-role",
                    team=exp.team,
                    object=f"Studio domain {exp.studio_domain} ({domain_id})",
                    expected=f"DefaultUserSettings.ExecutionRole {exp.execution_role_arn}",
                    actual=f"DefaultUserSettings.ExecutionRole {role}",
                    fix=f"{_deploy(exp)} (if CloudFormation sees no change: aws sagemaker update-domain "
                    f"--domain-id {domain_id} --default-user-settings ExecutionRole={exp.execution_role_arn})",
                )
            )
    return findings


def _quota_view(quota: Mapping[str, Any]) -> dict[str, Any]:
    """Return the :data:`QUOTA_FIELDS` of a quota, with only the keys the stack renders (what the service adds dropped)."""
    config = quota.get("ComputeQuotaConfig") or {}
    sharing = config.get("ResourceSharingConfig") or {}
    target = quota.get("ComputeQuotaTarget") or {}
    return {
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": sorted(
                (
                    {"InstanceType": r.get("InstanceType"), "Count": r.get("Count")}
                    for r in config.get("ComputeQuotaResources") or []
                ),
                key=lambda r: str(r["InstanceType"]),
            ),
            "ResourceSharingConfig": {k: sharing[k] for k in ("Strategy", "BorrowLimit") if k in sharing},
            "PreemptTeamTasks": config.get("PreemptTeamTasks"),
        },
        "ComputeQuotaTarget": {k: target.get(k) for k in ("TeamName", "FairShareWeight")},
        "ActivationState": quota.get("ActivationState"),
    }


def _differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return [
            d
            for k in sorted(set(expected) | set(actual))
            for d in _differences(expected.get(k), actual.get(k), f"{path}.{k}".lstrip("."))
        ]
    return [] if expected == actual else [f"{path} {json.dumps(expected)} -> {json.dumps(actual)}"]


def compute_quota_findings(
    sagemaker: Any, expectations: Sequence[TeamExpectation], *, cluster_arn: str | None = None
) -> list[Finding]:
    """Each team's Task Governance compute quota against the one its stack rendered (``ListComputeQuotas``).

    Compared: instance types and counts, sharing strategy and borrow limit, ``PreemptTeamTasks``, team name,
    fair-share weight and activation state (the properties ``compute_quota_properties`` renders). Quotas of a
    deleted state are ignored (not confirmed which ``Status`` values a deleted quota keeps listing with).
    """
    wanted = sorted((e for e in expectations if e.compute_quota), key=lambda e: e.team)
    if not wanted:
        return []
    query: dict[str, Any] = {"ClusterArn": cluster_arn} if cluster_arn else {}
    quotas = {
        (str(q.get("Name")), str(q.get("ClusterArn"))): q
        for page in sagemaker.get_paginator("list_compute_quotas").paginate(**query)
        for q in page.get("ComputeQuotaSummaries", [])
        if q.get("Status") not in ("Deleted", "Deleting")
    }
    findings: list[Finding] = []
    for exp in wanted:
        rendered = exp.compute_quota or {}
        name = str(rendered.get("Name"))
        # the quota of this name on the team's HyperPod cluster (the rendered ClusterArn), or on any cluster
        summary = next(
            (q for (n, arn), q in quotas.items() if n == name and rendered.get("ClusterArn") in (None, arn)),
            None,
        )
        if summary is None:
            findings.append(
                Finding(
                    kind="compute-quota-missing",
                    team=exp.team,
                    object=f"compute quota {name}",
                    expected="the team's Task Governance compute quota",
                    actual="none",
                    fix=_deploy(exp),
                )
            )
            continue
        live = sagemaker.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"])
        differences = _differences(_quota_view(rendered), _quota_view(live))
        if differences:
            findings.append(
                Finding(
                    kind="compute-quota-edited",
                    team=exp.team,
                    object=f"compute quota {name} ({summary['ComputeQuotaId']})",
                    expected="as platform.yaml renders it (the team stack's ComputeQuota)",
                    actual="; ".join(differences),
                    fix=f"{_deploy(exp)} (CloudFormation writes the quota back only when its template changes: "
                    f"otherwise aws sagemaker update-compute-quota --compute-quota-id {summary['ComputeQuotaId']} "
                    "with the policy's values, and change quotas in platform.yaml)",
                )
            )
    return findings


# ---------------------------------------------------------------------- all AWS checks
@dataclass(frozen=True, kw_only=True)
class AwsClients:
    """The clients the checks call, one per purpose (a test may give each its own endpoint or stub)."""

    sso: Any
    iam: Any
    eks: Any
    studio: Any
    quotas: Any

    @classmethod
    def of(cls, session: Any) -> AwsClients:
        """Return the clients of a ``boto3.session.Session``."""
        return cls(
            sso=session.client("sso-admin"),
            iam=session.client("iam"),
            eks=session.client("eks"),
            studio=session.client("sagemaker"),
            quotas=session.client("sagemaker"),
        )


def aws_findings(
    *,
    clients: AwsClients,
    expectations: Sequence[TeamExpectation],
    eks_cluster: str,
    account: str,
    cluster_arn: str | None = None,
) -> list[Finding]:
    """Every AWS check of ``expectations``.

    Raises:
        AuditError: an API refused (the message names the call and the missing permission).

    """
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - boto3's own dependency

    try:
        findings = identity_center_findings(clients.sso, expectations, account=account)
        entries = access_entries(clients.eks, eks_cluster)
        findings += access_entry_findings(clients.iam, entries, expectations, cluster=eks_cluster)
        findings += studio_findings(clients.studio, expectations)
        findings += compute_quota_findings(clients.quotas, expectations, cluster_arn=cluster_arn)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise AuditError(
            f"{exc.operation_name} refused: {error.get('Code')}: {error.get('Message')} (the audit needs the "
            "read-only permissions listed in docs/audit.md)"
        ) from None
    except BotoCoreError as exc:
        raise AuditError(str(exc)) from None
    return findings


# ---------------------------------------------------------------------- the daily Lambda
def read_records(ssm: Any, path: str) -> tuple[list[TeamExpectation], list[Finding]]:
    """Read the audit records under ``path`` (``GetParametersByPath``); a record that cannot be read is a finding."""
    expectations: list[TeamExpectation] = []
    unreadable: list[Finding] = []
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
        for parameter in page.get("Parameters", []):
            try:
                expectations.append(TeamExpectation.from_record(json.loads(parameter["Value"])))
            except (AuditError, json.JSONDecodeError, TypeError) as exc:
                unreadable.append(_unreadable(parameter["Name"], exc, version=SCHEMA_VERSION))
    return sorted(expectations, key=lambda e: e.team), unreadable


def _unreadable(parameter: str, error: Exception, *, version: int) -> Finding:
    return Finding(
        kind="audit-record-unreadable",
        team="",
        object=f"SSM parameter {parameter}",
        expected=f"an audit record of schema version {version}",
        actual=str(error),
        fix="redeploy the team stack that writes it",
    )


def metric_data(findings: Iterable[Finding], *, cluster: str, timestamp: dt.datetime) -> list[dict[str, Any]]:
    """Return the ``PutMetricData`` entry of a run: :data:`METRIC_NAME`, dimension ``Cluster``, the number of findings."""
    return [
        {
            "MetricName": METRIC_NAME,
            "Dimensions": [{"Name": "Cluster", "Value": cluster}],
            "Timestamp": timestamp,
            "Value": float(sum(1 for _ in findings)),
            "Unit": "Count",
        }
    ]


def _event_time(event: Mapping[str, Any]) -> dt.datetime:
    text = event.get("time")
    if isinstance(text, str):
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)
    return dt.datetime.now(dt.UTC)


def _api_lister(cluster: str) -> Any:
    """Return ``list(kind, path)`` over the cluster's API endpoint with an EKS token (:mod:`.kube_api`)."""
    from hyperpod_tenancy.runtime.kube_api import (  # noqa: PLC0415 - boto3, at run time only
        eks_token,
        endpoint_and_ca,
        list_objects,
    )

    endpoint, ca_pem = endpoint_and_ca(cluster)

    def list_kind(kind: str, path: str) -> list[dict[str, Any]]:
        del kind
        # a token per list: its presigned URL lives 60 seconds, a large cluster's pages may take longer
        return list_objects(endpoint, eks_token(cluster), ca_pem, path)

    return list_kind


def _kubernetes_findings(ssm: Any, *, path: str, cluster: str, read: Any = None) -> tuple[int, list[Finding]]:
    """Run the Kubernetes checks of the records under ``path``; return the teams audited and the findings.

    ``read`` lists a kind (``read(kind, path)``); by default the cluster's API with an EKS token. A list the API
    refuses, or an unreachable endpoint, is one ``kubernetes-unreadable`` finding.
    """
    expectations: list[kube_drift.KubeExpectation] = []
    findings: list[Finding] = []
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
        for parameter in page.get("Parameters", []):
            try:
                expectations.append(kube_drift.KubeExpectation.from_record(json.loads(parameter["Value"])))
            except (AuditError, json.JSONDecodeError, TypeError) as exc:
                findings.append(_unreadable(parameter["Name"], exc, version=kube_drift.KUBE_SCHEMA_VERSION))
    if not expectations:
        return 0, findings
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - boto3's own dependency

    try:
        live = kube_drift.read_live(read or _api_lister(cluster))
    except (OSError, ValueError, BotoCoreError, ClientError) as exc:  # urllib's errors are OSErrors
        return len(expectations), [
            *findings,
            Finding(
                kind="kubernetes-unreadable",
                team="",
                object=f"EKS cluster {cluster}",
                expected="cluster-wide list of namespaces, rolebindings, clusterrolebindings, resourcequotas and "
                "limitranges for the audit's group",
                actual=f"{type(exc).__name__}: {exc}",
                fix="check the audit function's access entry and ClusterRole binding, and that its security group "
                "reaches the private API endpoint (cdk deploy the chargeback stack)",
            ),
        ]
    platform_namespaces = frozenset(n for n in os.environ.get("PLATFORM_NAMESPACES", "").split(",") if n)
    findings += kube_drift.kube_findings(
        sorted(expectations, key=lambda e: e.team),
        live,
        platform_namespaces=platform_namespaces,
        tenant_label=os.environ.get("TENANT_LABEL", ""),
    )
    return len(expectations), findings


def handler(
    event: Mapping[str, Any],
    context: Any = None,
    *,
    clients: AwsClients | None = None,
    ssm: Any = None,
    cloudwatch: Any = None,
    read_kubernetes: Any = None,
) -> dict[str, Any]:
    """Run the AWS and Kubernetes checks of every team recorded; publish :data:`METRIC_NAME`.

    Environment: ``CLUSTER_NAME`` (the ``Cluster`` dimension), ``EKS_CLUSTER_NAME``, ``HYPERPOD_CLUSTER_ARN``,
    ``ACCOUNT_ID``, ``RECORDS_PATH``, ``METRIC_NAMESPACE``; for the Kubernetes checks ``KUBE_RECORDS_PATH`` (unset:
    none), ``PLATFORM_NAMESPACES`` (comma-separated), ``TENANT_LABEL`` and optionally ``API_ENDPOINT`` and
    ``CA_DATA`` (:func:`hyperpod_tenancy.runtime.kube_api.endpoint_and_ca`). Returns the findings (JSON) and their
    number. The clients default to boto3's default session's; ``read_kubernetes(kind, path)`` to the cluster's API.
    """
    del context
    import boto3  # noqa: PLC0415 - the Lambda runtime's; the constructs import this module without it

    session = boto3.session.Session()
    cluster = os.environ["CLUSTER_NAME"]
    eks_cluster = os.environ.get("EKS_CLUSTER_NAME") or cluster
    ssm = ssm or session.client("ssm")
    expectations, findings = read_records(ssm, os.environ["RECORDS_PATH"])
    findings += aws_findings(
        clients=clients or AwsClients.of(session),
        expectations=expectations,
        eks_cluster=eks_cluster,
        account=os.environ["ACCOUNT_ID"],
        cluster_arn=os.environ.get("HYPERPOD_CLUSTER_ARN") or None,
    )
    namespaces = 0
    kube_records = os.environ.get("KUBE_RECORDS_PATH")
    if kube_records:
        namespaces, kube = _kubernetes_findings(
            ssm, path=kube_records, cluster=eks_cluster, read=read_kubernetes
        )
        findings += kube
    for finding in findings:
        LOG.warning("drift: %s", json.dumps(finding.to_dict(), sort_keys=True))
    (cloudwatch or session.client("cloudwatch")).put_metric_data(
        Namespace=os.environ["METRIC_NAMESPACE"],
        MetricData=metric_data(findings, cluster=cluster, timestamp=_event_time(event)),
    )
    LOG.info(
        "%d team(s) audited in AWS, %d in Kubernetes, %d finding(s)",
        len(expectations),
        namespaces,
        len(findings),
    )
    return {
        "teams": len(expectations),
        "kubernetes_teams": namespaces,
        "findings": [f.to_dict() for f in findings],
        "count": len(findings),
    }
