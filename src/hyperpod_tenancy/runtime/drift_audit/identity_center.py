"""Identity Center: each team's permission set is there, with the policies its stack gave it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import Finding
from hyperpod_tenancy.runtime.drift_audit._common import TeamExpectation, _deploy

__all__ = ["identity_center_findings"]


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
    reference on a team's permission set was added outside CloudFormation. A team whose Identity Center is
    administered from another account than ``account`` is skipped: its permission set cannot be read from here.
    A team in its own account is assigned there, and its permission set references its account's policy.
    """
    findings: list[Finding] = []
    by_instance: dict[str, dict[str, dict[str, Any]]] = {}
    for exp in expectations:
        if exp.identity_center_account not in (None, account):
            continue  # administered from another account: not readable from this one (docs/audit.md)
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
        # a team in its own account: its permission set references the policy of its account stack, by design
        managed = [m for m in managed if m != exp.permission_set_policy]
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
                InstanceArn=exp.instance_arn, AccountId=exp.team_account or account, PermissionSetArn=arn
            )
            for a in page.get("AccountAssignments", [])
        }
        if ("GROUP", exp.group_id) not in assigned:
            findings.append(
                Finding(
                    kind="assignment-missing",
                    team=exp.team,
                    object=f"assignment of permission set {exp.permission_set_name} in account "
                    f"{exp.team_account or account}",
                    expected=f"GROUP {exp.group_id}",
                    actual=", ".join(f"{t} {i}" for t, i in sorted(assigned)) or "no assignment",
                    fix=f"{_deploy(exp, rerun_lookup=True)} (the role Identity Center provisions for the new "
                    "assignment has a new name: the lookup must run again)",
                )
            )
    return findings
