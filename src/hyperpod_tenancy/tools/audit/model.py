"""What ``hyperpod-tenancy audit`` expects of AWS: each team's expectation, from the policy and its audit record.

Names come from the policy, through the one function the team stacks use too
(:func:`hyperpod_tenancy.k8s.audit_record.team_expectation`); what is known only once deployed (the permission set's
ARN, the Identity Center role the stack resolved, the Studio execution role, the compute quota the stack rendered
with ``compute_quota_properties``) comes from the team's audit record, which its stack writes to SSM. The
compute quota is therefore compared with what CloudFormation deployed from the policy (the rendering lives with
the constructs, which the command does not load); a policy edit not yet deployed is what ``hyperpod-tenancy plan``
shows, not drift.
"""

from __future__ import annotations

from collections.abc import Mapping

from hyperpod_tenancy.k8s.audit_record import team_expectation
from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.runtime.drift_audit import Finding, TeamExpectation

__all__ = ["team_expectations", "team_stack"]


def team_stack(platform: Platform, team: str) -> str:
    """Return the team stack's path as ``cdk deploy`` takes it: ``<platform>/<team stack ID>`` (the app's stage)."""
    return f"{platform.name}/{names.team_stack_id(team)}"


def team_expectations(
    platform: Platform, records: Mapping[str, TeamExpectation]
) -> tuple[list[TeamExpectation], list[Finding]]:
    """Each hosted team's expectation, and a finding for each team without a record or record without a team.

    Args:
        platform: the policy.
        records: the teams' audit records by team (:func:`hyperpod_tenancy.runtime.drift_audit.read_records`).

    """
    expectations: list[TeamExpectation] = []
    findings: list[Finding] = []
    cluster = platform.cluster.name
    for team in platform.hosted_teams:
        record = records.get(team.name)
        stack = record.stack if record is not None else team_stack(platform, team.name)
        if record is None:
            findings.append(
                Finding(
                    kind="audit-record-missing",
                    team=team.name,
                    object=f"SSM parameter {names.drift_audit_record(cluster, team.name)}",
                    expected="the audit record the team stack writes",
                    actual="none (the stack is not deployed, or by an earlier version): the checks that need "
                    "deployed values (Studio role, compute quota, undeclared access to the team's group) are skipped",
                    fix=f"cdk deploy {stack}",
                )
            )
        expectations.append(
            team_expectation(
                platform,
                team,
                stack=stack,
                permission_set_arn=record.permission_set_arn if record else None,
                sso_role_arn=record.sso_role_arn if record else None,
                execution_role_arn=record.execution_role_arn if record else None,
                compute_quota=record.compute_quota if record else None,
            )
        )
    hosted = {t.name for t in platform.hosted_teams}
    for name in sorted(set(records) - hosted):
        findings.append(
            Finding(
                kind="team-not-in-policy",
                team=name,
                object=f"SSM parameter {names.drift_audit_record(cluster, name)}",
                expected=f"teams of platform.yaml only ({', '.join(sorted(hosted))})",
                actual=f"the record of team {name}, whose stack {records[name].stack} is still deployed",
                fix=f"cdk destroy {records[name].stack} (or put the team back into platform.yaml)",
            )
        )
    return expectations, findings
