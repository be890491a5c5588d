"""A team's roles in the cluster's account: its Studio execution role and the role of its pods.

In the cluster's account the team's data is ``teams/<team>/`` of the shared data bucket, and both roles may reach
it there only. A team with an account of its own keeps its data there: its pods' role here is then only the first
link of EKS Pod Identity's role chain, allowed to assume the team's target role and nothing else, and the team's
Studio execution role lives in its account, beside its domain (``constructs/tenant/team_account_studio.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import acknowledge_role
from hyperpod_tenancy.constructs._private.memo import attribute, stack_of
from hyperpod_tenancy.constructs._private.principals import pod_identity_principal
from hyperpod_tenancy.constructs._private.team_iam import studio_trust_conditions, team_data_policy
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.policy import Team, names

__all__ = ["TeamRoles", "build_roles"]


@dataclass(frozen=True)
class TeamRoles:
    """What :func:`build_roles` created."""

    #: Studio execution role (``None`` for a team in its own account).
    execution_role: iam.Role | None
    #: Role of the team's pods (with a target role in the team's account: the role Pod Identity assumes first).
    workload_role: iam.Role
    #: The Pod Identity association of the team's service account.
    association: eks.CfnPodIdentityAssociation
    #: ARN of the role the pods' credentials are for in the team's own account (``None`` in the cluster's).
    target_role_arn: str | None


def build_roles(
    scope: Construct, *, cluster: IHyperPodCluster, team: Team, namespace: str, service_account: str
) -> TeamRoles:
    """Create the team's execution role (in the cluster's account only), its pods' role and their association."""
    platform = cluster.platform
    stack = stack_of(scope)
    if platform.team_in_own_account(team):
        chained = names.role_arn(
            partition=attribute(stack, "partition"),
            account=platform.team_account(team),
            name=names.team_pods_role(platform.cluster.name, team.name),
        )
        target: str | None = chained
        execution_role = None
        workload_role = iam.Role(
            scope,
            "WorkloadRole",
            # the target role's trust names this role by ARN, so the name is fixed
            role_name=names.team_pods_source_role(platform.cluster.name, team.name),
            assumed_by=pod_identity_principal(cluster.kubernetes),
            description=f"team {team.name}: becomes the team's role in its account {platform.team_account(team)}",
            inline_policies={
                "ChainToTeamAccount": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(actions=["sts:AssumeRole", "sts:TagSession"], resources=[chained])
                    ]
                )
            },
        )
    else:
        target = None
        execution_role = _data_role(
            scope,
            "ExecutionRole",
            cluster=cluster,
            team=team,
            principal=iam.ServicePrincipal(
                "sagemaker.amazonaws.com",
                conditions=studio_trust_conditions(account=attribute(stack, "account")),
            ),
        )
        workload_role = _data_role(
            scope,
            "WorkloadRole",
            cluster=cluster,
            team=team,
            principal=pod_identity_principal(cluster.kubernetes),
        )
    association = eks.CfnPodIdentityAssociation(
        scope,
        "WorkloadIdentity",
        cluster_name=cluster.eks_cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=workload_role.role_arn,
        target_role_arn=target,
    )
    return TeamRoles(
        execution_role=execution_role,
        workload_role=workload_role,
        association=association,
        target_role_arn=target,
    )


def _data_role(
    scope: Construct, id: str, *, cluster: IHyperPodCluster, team: Team, principal: iam.IPrincipal
) -> iam.Role:
    role = iam.Role(
        scope,
        id,
        assumed_by=principal,
        description=f"team {team.name}: S3 under teams/{team.name}/ only",
        inline_policies={
            "TeamData": iam.PolicyDocument.from_json(
                team_data_policy(team=team.name, bucket_arn=attribute(cluster.data_bucket, "bucket_arn"))
            )
        },
    )
    key = cluster.platform_key
    if key is not None:
        # SSE-KMS objects of the data bucket: the platform key, through S3 only
        key.grant_data(role, service="s3")
    acknowledge_role(
        role,
        wildcards=f"objects under the team's own prefix teams/{team.name}/ only (ListBucket is "
        "conditioned on s3:prefix); isolation from other teams is proven by tests/test_team_iam.py",
    )
    return role
