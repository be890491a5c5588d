"""What the daily drift audit compares: each team's expectation, as its audit record says."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding, check_version

__all__ = [
    "LOG",
    "METRIC_NAME",
    "QUOTA_FIELDS",
    "SCHEMA_VERSION",
    "SSO_ROLE_LOOKUP_CONTEXT",
    "TeamExpectation",
]

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)


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
        identity_center_account: the account Identity Center is administered from, when it is not the cluster's
            (``None``: the cluster's); the permission set is there.
        access_stack: the team's access stack (the role lookup and its access entry) in that case, else ``None``.
        team_account: the team's own account, where its permission set is assigned and its role is (``None``: the
            cluster's); permission_set_policy: then the path and name of the policy its permission set references;
            lookup_role_arn: the role of that account the audit assumes to read the team's Identity Center role.

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
    identity_center_account: str | None = None
    access_stack: str | None = None
    team_account: str | None = None
    permission_set_policy: str | None = None
    lookup_role_arn: str | None = None

    @property
    def lookup_stack(self) -> str:
        """The stack whose ``Custom::SsoRoleArn`` resolves the team's role: the team's, or its access stack."""
        return self.access_stack or self.stack

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
                identity_center_account=record.get("identityCenterAccount"),
                access_stack=record.get("accessStack"),
                team_account=record.get("teamAccount"),
                permission_set_policy=record.get("permissionSetPolicy"),
                lookup_role_arn=record.get("lookupRoleArn"),
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
            **(
                {}
                if self.identity_center_account is None
                else {"identityCenterAccount": self.identity_center_account, "accessStack": self.access_stack}
            ),
            **(
                {}
                if self.team_account is None
                else {
                    "teamAccount": self.team_account,
                    "permissionSetPolicy": self.permission_set_policy,
                    "lookupRoleArn": self.lookup_role_arn,
                }
            ),
        }


def _deploy(expectation: TeamExpectation, *, rerun_lookup: bool = False) -> str:
    if not rerun_lookup:
        return f"cdk deploy {expectation.stack}"
    stacks = dict.fromkeys((expectation.stack, expectation.lookup_stack))
    return f"cdk deploy {' '.join(stacks)} -c {SSO_ROLE_LOOKUP_CONTEXT}=$(date +%s)"


def _team_account_unreadable(expectation: TeamExpectation, reason: str, *, to_read: str) -> Finding:
    """Return the finding of a team account the audit could not enter through the team's lookup role."""
    return Finding(
        kind="team-account-unreadable",
        team=expectation.team,
        object=f"lookup role {expectation.lookup_role_arn}",
        expected=f"assumable by the audit, to read {to_read} in its account",
        actual=reason,
        fix="deploy the team's account stack (Team-<Team>-Account); the audit's role needs sts:AssumeRole on it",
    )
