"""A team's identity: its Identity Center permission set and assignment, its role's ARN, and its EKS access entries."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sso as sso
from constructs import Construct

from hyperpod_tenancy.constructs._private.memo import attribute, once, stack_of
from hyperpod_tenancy.constructs._private.sso_role_provider import MAX_SSO_ROLE_TIMEOUT
from hyperpod_tenancy.constructs._private.team_iam import (
    permission_set_inline_policy,
)
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Team
from hyperpod_tenancy.runtime import drift_audit

__all__ = ["DEFAULT_SSO_ROLE_TIMEOUT", "TeamAccess", "build_identity"]

#: How long a team stack waits for Identity Center to provision the team's role in the account.
DEFAULT_SSO_ROLE_TIMEOUT = cdk.Duration.minutes(15)


@dataclass(frozen=True)
class TeamAccess:
    """What :func:`build_identity` created for a team."""

    #: The team's permission set.
    permission_set: sso.CfnPermissionSet
    #: Its assignment to the team's group in this account.
    assignment: sso.CfnAssignment
    #: Full ARN (with its /aws-reserved/... path) of the team's Identity Center role.
    sso_role_arn: str
    #: EKS access entries (Identity Center role, Studio role), mapped to the team's Kubernetes group only.
    access_entries: tuple[eks.CfnAccessEntry, ...]


def build_identity(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    team: Team,
    domain: sagemaker.CfnDomain | None,
    execution_role: iam.Role,
    kubernetes_group: str,
    sso_role_timeout: cdk.Duration | None = None,
) -> TeamAccess:
    """Create a team's permission set, its assignment, the lookup of its role's ARN and its access entries."""
    permission_set, assignment = _permission_set(scope, cluster=cluster, team=team, domain=domain)
    sso_role_arn = _sso_role(
        scope,
        cluster=cluster,
        team=team,
        permission_set=permission_set,
        assignment=assignment,
        timeout=sso_role_timeout or DEFAULT_SSO_ROLE_TIMEOUT,
    )
    entries = _access_entries(
        scope,
        cluster=cluster,
        sso_role_arn=sso_role_arn,
        studio_role_arn=execution_role.role_arn if domain is not None else None,
        kubernetes_group=kubernetes_group,
    )
    return TeamAccess(
        permission_set=permission_set,
        assignment=assignment,
        sso_role_arn=sso_role_arn,
        access_entries=tuple(entries),
    )


def _permission_set(
    scope: Construct, *, cluster: IHyperPodCluster, team: Team, domain: sagemaker.CfnDomain | None
) -> tuple[sso.CfnPermissionSet, sso.CfnAssignment]:
    platform = cluster.platform
    stack = stack_of(scope)
    name = team.permission_set
    permission_set = sso.CfnPermissionSet(
        scope,
        "PermissionSet",
        instance_arn=platform.identity_center.instance_arn,
        name=name,
        description=f"Team {team.name} on HyperPod cluster {platform.cluster.name}",
        session_duration="PT8H",
        inline_policy=permission_set_inline_policy(
            team=team.name,
            eks_cluster_arn=cluster.eks_cluster_arn,
            hyperpod_cluster_arn=cluster.hyperpod_cluster_arn,
            bucket_arn=attribute(cluster.data_bucket, "bucket_arn"),
            domain_id=domain.attr_domain_id if domain else None,
            region=attribute(stack, "region"),
            account=attribute(stack, "account"),
            partition=attribute(stack, "partition"),
            # the data bucket is SSE-KMS under the platform key: its members read and write through S3
            data_key_arn=key.key_arn if (key := cluster.platform_key) else None,
        ),
    )
    assignment = sso.CfnAssignment(
        scope,
        "Assignment",
        instance_arn=platform.identity_center.instance_arn,
        permission_set_arn=permission_set.attr_permission_set_arn,
        principal_type="GROUP",
        principal_id=team.identity.group_id,
        target_type="AWS_ACCOUNT",
        target_id=attribute(stack, "account"),
    )
    return permission_set, assignment


def _sso_role(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    team: Team,
    permission_set: sso.CfnPermissionSet,
    assignment: sso.CfnAssignment,
    timeout: cdk.Duration,
) -> str:
    seconds = _seconds(timeout)
    if seconds > _seconds(MAX_SSO_ROLE_TIMEOUT):
        raise TenancyError(
            f"{scope.node.path}: sso_role_timeout is {timeout.to_human_string()}; the shared role-lookup provider "
            f"waits at most {MAX_SSO_ROLE_TIMEOUT.to_human_string()}: pass a shorter timeout."
        )
    resource = cdk.CustomResource(
        scope,
        "SsoRole",
        service_token=cluster.sso_role_service_token,
        resource_type="Custom::SsoRoleArn",
        properties={
            "PermissionSetName": team.permission_set,
            "PermissionSetArn": permission_set.attr_permission_set_arn,
            "TimeoutSeconds": str(int(seconds)),
            # re-run the lookup whenever the assignment is recreated (the role suffix changes then)
            "Assignment": assignment.ref,
            # `cdk deploy -c hyperpod-tenancy:ssoRoleLookup=<new value>` re-runs the lookup (docs/audit.md)
            **_lookup_nonce(scope),
        },
    )
    resource.node.add_dependency(assignment)
    return resource.get_att_string("RoleArn")


def _seconds(duration: cdk.Duration) -> float:
    """``duration.to_seconds()``, asked of the CDK once per duration (the default and the maximum are shared)."""
    return once(duration, "seconds", duration.to_seconds)


def _lookup_nonce(scope: Construct) -> dict[str, str]:
    """``{"Lookup": <value>}`` of the context :data:`~hyperpod_tenancy.runtime.drift_audit.SSO_ROLE_LOOKUP_CONTEXT`.

    Empty without it, so the template does not change until an operator asks for a new lookup.
    """
    value = scope.node.try_get_context(drift_audit.SSO_ROLE_LOOKUP_CONTEXT)
    return {} if value is None or value == "" else {"Lookup": str(value)}


def _access_entries(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    sso_role_arn: str,
    studio_role_arn: str | None,
    kubernetes_group: str,
) -> list[eks.CfnAccessEntry]:
    principals = {"SsoAccess": sso_role_arn}
    if studio_role_arn is not None:
        principals["StudioAccess"] = studio_role_arn
    return [
        eks.CfnAccessEntry(
            scope,
            entry_id,
            cluster_name=cluster.eks_cluster_name,
            principal_arn=arn,
            type="STANDARD",
            # RBAC in the team namespace only: no access policy, so never cluster-admin or cluster-wide.
            kubernetes_groups=[kubernetes_group],
        )
        for entry_id, arn in principals.items()
    ]
