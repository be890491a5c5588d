"""A team's identity: its Identity Center permission set and assignment, its role's ARN, and its EKS access entries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_sso as sso
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import acknowledge_managed_policy
from hyperpod_tenancy.constructs._private.memo import attribute, once, stack_of
from hyperpod_tenancy.constructs._private.sso_role_provider import MAX_SSO_ROLE_TIMEOUT
from hyperpod_tenancy.constructs._private.team_iam import (
    permission_set_inline_policy,
)
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.runtime import drift_audit

__all__ = [
    "DEFAULT_SSO_ROLE_TIMEOUT",
    "TeamAccess",
    "access_entry",
    "build_identity",
    "sso_role_lookup",
    "team_assignment",
    "team_permission_set",
]

#: How long a team stack waits for Identity Center to provision the team's role in the account.
DEFAULT_SSO_ROLE_TIMEOUT = cdk.Duration.minutes(15)


@dataclass(frozen=True)
class TeamAccess:
    """What :func:`build_identity` created for a team in its stack."""

    #: The team's permission set (``None`` with Identity Center in another account: it lives there).
    permission_set: sso.CfnPermissionSet | None
    #: Its assignment to the team's group in this account (``None`` with Identity Center in another account).
    assignment: sso.CfnAssignment | None
    #: With Identity Center in another account, the customer managed policy of this account the permission set
    #: references by name (what the inline policy holds otherwise); else ``None``.
    permission_set_policy: iam.CfnManagedPolicy | None
    #: Full ARN (with its /aws-reserved/... path) of the team's Identity Center role (``None`` with Identity Center
    #: in another account: the team's access stack resolves it once the assignment exists).
    sso_role_arn: str | None
    #: EKS access entries (Identity Center role, Studio role), mapped to the team's Kubernetes group only.
    access_entries: tuple[eks.CfnAccessEntry, ...]


def build_identity(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    team: Team,
    domain: sagemaker.CfnDomain | None,
    execution_role: iam.Role | None,
    kubernetes_group: str,
    sso_role_timeout: cdk.Duration | None = None,
) -> TeamAccess:
    """Create a team's permission set, its assignment, the lookup of its role's ARN and its access entries.

    With Identity Center administered from another account (``identityCenter.account``), only the grants are
    created here, as the customer managed policy the permission set references by name; the permission set and
    its assignment are the team's Identity Center stack's, the role lookup and its access entry the team's access
    stack's (:mod:`hyperpod_tenancy.stacks.identity_center`). For a team with an account of its own, the grants
    are the policy of its account stack (:mod:`hyperpod_tenancy.stacks.team_account`), the assignment targets that
    account and the role is looked up there through the team's lookup role.
    """
    platform = cluster.platform
    # a team in its own account: its grants are the policy of its account stack, which the permission set references
    own = platform.team_in_own_account(team)
    grants = None if own else _grants(scope, cluster=cluster, team=team, domain=domain)
    studio = execution_role.role_arn if domain is not None and execution_role is not None else None
    if platform.identity_center_elsewhere:
        if sso_role_timeout is not None:
            raise TenancyError(
                f"{scope.node.path}: sso_role_timeout has no effect here: with Identity Center in another account "
                "the team's access stack looks the role up. Pass it to TeamAccessStack instead."
            )
        policy = (
            None
            if grants is None
            else _permission_set_policy(scope, platform=platform, team=team, grants=grants)
        )
        entries = (
            []
            if studio is None
            else [
                access_entry(
                    scope, "StudioAccess", cluster=cluster, principal_arn=studio, group=kubernetes_group
                )
            ]
        )
        return TeamAccess(
            permission_set=None,
            assignment=None,
            permission_set_policy=policy,
            sso_role_arn=None,
            access_entries=tuple(entries),
        )
    permission_set = team_permission_set(scope, platform=platform, team=team, inline_policy=grants)
    assignment = team_assignment(
        scope,
        platform=platform,
        team=team,
        permission_set=permission_set,
        account=platform.team_account(team) if own else attribute(stack_of(scope), "account"),
    )
    sso_role_arn = sso_role_lookup(
        scope,
        cluster=cluster,
        team=team,
        timeout=sso_role_timeout or DEFAULT_SSO_ROLE_TIMEOUT,
        permission_set=permission_set,
        assignment=assignment,
    )
    principals = {"SsoAccess": sso_role_arn, "StudioAccess": studio}
    return TeamAccess(
        permission_set=permission_set,
        assignment=assignment,
        permission_set_policy=None,
        sso_role_arn=sso_role_arn,
        access_entries=tuple(
            access_entry(scope, entry_id, cluster=cluster, principal_arn=arn, group=kubernetes_group)
            for entry_id, arn in principals.items()
            if arn is not None
        ),
    )


def _permission_set_policy(
    scope: Construct, *, platform: Platform, team: Team, grants: Mapping[str, object]
) -> iam.CfnManagedPolicy:
    """Create the policy of the cluster's account that the permission set (in the Identity Center account) references."""
    policy = iam.CfnManagedPolicy(
        scope,
        "PermissionSetPolicy",
        managed_policy_name=names.permission_set_policy(platform.cluster.name, team.name),
        path=names.PERMISSION_SET_POLICY_PATH,
        description=f"Team {team.name} on HyperPod cluster {platform.cluster.name}: what its "
        "permission set (in the Identity Center account) grants here",
        policy_document=dict(grants),
    )
    acknowledge_managed_policy(
        policy,
        wildcards=f"objects under the team's own prefix teams/{team.name}/ only (ListBucket is conditioned on "
        "s3:prefix), and the team's own stacks by name (the suffix is the stack ID)",
    )
    return policy


def _grants(
    scope: Construct, *, cluster: IHyperPodCluster, team: Team, domain: sagemaker.CfnDomain | None
) -> dict[str, object]:
    """Return what a member's console session may do: the permission set's inline policy, or the policy it references."""
    stack = stack_of(scope)
    return permission_set_inline_policy(
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
    )


def team_permission_set(
    scope: Construct, *, platform: Platform, team: Team, inline_policy: Mapping[str, object] | None = None
) -> sso.CfnPermissionSet:
    """Create the team's permission set: ``inline_policy``, or else a reference to the policy in the cluster's account.

    With Identity Center in another account the grants name resources of the cluster's account whose ARNs exist
    only there, so the permission set references them by name: ``CustomerManagedPolicyReferences`` ("You must have
    an IAM policy that matches the name and path in each AWS account where you want to deploy your permission
    set", AWS::SSO::PermissionSet CustomerManagedPolicyReference, CloudFormation User Guide). The team stack
    creates that policy before the assignment is made (stack dependency).
    """
    references = (
        None
        if inline_policy is not None
        else [
            sso.CfnPermissionSet.CustomerManagedPolicyReferenceProperty(
                name=names.permission_set_policy(platform.cluster.name, team.name),
                path=names.PERMISSION_SET_POLICY_PATH,
            )
        ]
    )
    return sso.CfnPermissionSet(
        scope,
        "PermissionSet",
        instance_arn=platform.identity_center.instance_arn,
        name=team.permission_set,
        description=f"Team {team.name} on HyperPod cluster {platform.cluster.name}",
        session_duration="PT8H",
        inline_policy=dict(inline_policy) if inline_policy is not None else None,
        customer_managed_policy_references=references,
    )


def team_assignment(
    scope: Construct, *, platform: Platform, team: Team, permission_set: sso.CfnPermissionSet, account: str
) -> sso.CfnAssignment:
    """Assign the team's permission set to its group in ``account`` (the cluster's)."""
    return sso.CfnAssignment(
        scope,
        "Assignment",
        instance_arn=platform.identity_center.instance_arn,
        permission_set_arn=permission_set.attr_permission_set_arn,
        principal_type="GROUP",
        principal_id=team.identity.group_id,
        target_type="AWS_ACCOUNT",
        target_id=account,
    )


def _checked_timeout(scope: Construct, timeout: cdk.Duration) -> cdk.Duration:
    if _seconds(timeout) > _seconds(MAX_SSO_ROLE_TIMEOUT):
        raise TenancyError(
            f"{scope.node.path}: sso_role_timeout is {timeout.to_human_string()}; the shared role-lookup provider "
            f"waits at most {MAX_SSO_ROLE_TIMEOUT.to_human_string()}: pass a shorter timeout."
        )
    return timeout


def sso_role_lookup(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    team: Team,
    timeout: cdk.Duration,
    permission_set: sso.CfnPermissionSet | None = None,
    assignment: sso.CfnAssignment | None = None,
) -> str:
    """Resolve the full ARN of the role Identity Center provisions for the team in this account.

    Args:
        scope: where the ``Custom::SsoRoleArn`` resource goes (the cluster's account).
        cluster: the cluster (its shared role-lookup provider).
        team: the team.
        timeout: how long to wait for the role (at most :data:`MAX_SSO_ROLE_TIMEOUT`).
        permission_set: the permission set, when it is in this stack (its ARN is then the lookup's physical ID).
        assignment: the assignment, when it is in this stack: the lookup waits for it and re-runs whenever it is
            recreated (the role suffix changes then).

    Raises:
        TenancyError: ``timeout`` is longer than the shared provider waits.

    """
    timeout = _checked_timeout(scope, timeout)
    known = {} if permission_set is None else {"PermissionSetArn": permission_set.attr_permission_set_arn}
    platform = cluster.platform
    if platform.team_in_own_account(team):
        # the role is in the team's account: the handler lists roles there through the team's lookup role
        known["LookupRoleArn"] = names.role_arn(
            partition=attribute(stack_of(scope), "partition"),
            account=platform.team_account(team),
            name=names.team_lookup_role(platform.cluster.name, team.name),
        )
    resource = cdk.CustomResource(
        scope,
        "SsoRole",
        service_token=cluster.sso_role_service_token,
        resource_type="Custom::SsoRoleArn",
        properties={
            "PermissionSetName": team.permission_set,
            **known,
            "TimeoutSeconds": str(int(_seconds(timeout))),
            **({} if assignment is None else {"Assignment": assignment.ref}),
            # `cdk deploy -c hyperpod-tenancy:ssoRoleLookup=<new value>` re-runs the lookup (docs/audit.md)
            **_lookup_nonce(scope),
        },
    )
    if assignment is not None:
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


def access_entry(
    scope: Construct, id: str, *, cluster: IHyperPodCluster, principal_arn: str, group: str
) -> eks.CfnAccessEntry:
    """Map ``principal_arn`` to the team's Kubernetes ``group`` on the cluster: RBAC in its namespace only."""
    return eks.CfnAccessEntry(
        scope,
        id,
        cluster_name=cluster.eks_cluster_name,
        principal_arn=principal_arn,
        type="STANDARD",
        # RBAC in the team namespace only: no access policy, so never cluster-admin or cluster-wide.
        kubernetes_groups=[group],
    )
