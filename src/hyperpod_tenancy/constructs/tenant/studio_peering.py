"""The cluster's side of a Studio domain in a team's own account: the peering, its routes, the endpoint, the reader.

A team with an account of its own keeps its Studio domain there, in a VPC of that account (``studioNetwork``).
Its apps reach the cluster's private API endpoint over a VPC peering connection: the endpoint's public DNS name
resolves to its private addresses once public access is off ("Accessing a private only API server", Amazon EKS
User Guide), so a peered VPC reaches it with the names ``aws eks`` writes. The team stack, in the cluster's
account, requests the peering and accepts it in one step through the team's **peering role** there (created by the
team's account stack, deployed first: ``AWS::EC2::VPCPeeringConnection`` ``PeerRoleArn``), routes the cluster's
private subnets to the team's VPC, and admits the team's CIDR to the endpoint on TCP 443, nowhere else.

``aws eks update-kubeconfig`` describes the cluster in the caller's account, which a member signed in to the team's
account is not: the domain's execution role, in the team's account, describes the cluster through the **cluster
reader role** here, which may call ``eks:DescribeCluster`` on this cluster only and trusts that one role. The
member's token stays the member's own (``aws eks get-token`` with their profile), so the POSIX identity webhook
still knows the person.
"""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from hyperpod_tenancy.constructs._private.memo import attribute, stack_of
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.tenant.team_account import eks_cluster_arn
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, Team, names

__all__ = ["StudioPeering", "cluster_reader_role_arn", "peer_team_studio", "studio_execution_role_arn"]


def studio_execution_role_arn(platform: Platform, team: Team, *, partition: str) -> str:
    """ARN of a team's Studio execution role in the team's own account (a fixed name: the reader's trust names it)."""
    return names.role_arn(
        partition=partition,
        account=platform.team_account(team),
        name=names.team_studio_role(platform.cluster.name, team.name),
    )


def cluster_reader_role_arn(platform: Platform, team: Team, *, partition: str) -> str:
    """ARN of the role in the cluster's account through which a team's Studio apps describe the cluster."""
    return names.role_arn(
        partition=partition,
        account=platform.account,
        name=names.team_cluster_reader_role(platform.cluster.name, team.name),
    )


@dataclass(frozen=True)
class StudioPeering:
    """What :func:`peer_team_studio` created in the cluster's account."""

    #: The peering of the cluster's VPC with the team's Studio VPC, accepted through the team's peering role.
    connection: ec2.CfnVPCPeeringConnection
    #: A route to the team's Studio CIDR in each route table of the cluster's private subnets.
    routes: tuple[ec2.CfnRoute, ...]
    #: The rule admitting the team's Studio CIDR to the private API endpoint on TCP 443.
    endpoint_ingress: ec2.CfnSecurityGroupIngress
    #: The role the team's Studio execution role assumes to describe the cluster (``eks:DescribeCluster`` only).
    cluster_reader_role: iam.Role


def _private_route_tables(cluster: IHyperPodCluster, where: str) -> tuple[str, ...]:
    subnets = cluster.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnets
    try:
        tables = [s.route_table.route_table_id for s in subnets]
    except RuntimeError:  # jsii: a subnet imported without its route table has none to give
        tables = []
    if not tables or not all(tables):
        raise TenancyError(
            f"{where}: the cluster's VPC gives no route table of its private subnets, so the team's Studio network "
            "cannot be routed. Import the cluster with the route table of each private subnet "
            "(SharedHyperPodCluster.from_attributes private_subnet_route_table_ids), or set `studio: false` on the "
            "team."
        )
    return tuple(dict.fromkeys(tables))


def peer_team_studio(scope: Construct, *, cluster: IHyperPodCluster, team: Team) -> StudioPeering:
    """Peer the cluster's VPC with the team's Studio VPC, route and admit it, and create the cluster reader role.

    Raises:
        TenancyError: the team has no Studio network in an account of its own, or the cluster's VPC gives no
            route tables.

    """
    platform = cluster.platform
    net = team.studio_network
    if net is None or not platform.team_in_own_account(team) or not team.studio:
        raise TenancyError(
            f"{scope.node.path}: team {team.name!r} has no Studio domain in an account of its own "
            "(`account`, `studio` and `studioNetwork`)."
        )
    partition = attribute(stack_of(scope), "partition")
    team_account = platform.team_account(team)
    connection = ec2.CfnVPCPeeringConnection(
        scope,
        "StudioPeering",
        vpc_id=attribute(cluster.vpc, "vpc_id"),
        peer_vpc_id=net.vpc_id,
        peer_owner_id=team_account,
        peer_region=platform.region,
        peer_role_arn=names.role_arn(
            partition=partition,
            account=team_account,
            name=names.team_peering_role(platform.cluster.name, team.name),
        ),
        tags=[cdk.CfnTag(key="Name", value=f"{platform.cluster.name} to the Studio of team {team.name}")],
    )
    routes = tuple(
        ec2.CfnRoute(
            scope,
            f"StudioRoute{index}",
            route_table_id=table,
            destination_cidr_block=net.cidr,
            vpc_peering_connection_id=connection.ref,
        )
        for index, table in enumerate(_private_route_tables(cluster, scope.node.path))
    )
    ingress = cluster.allow_api_access_from_cidr(scope, "StudioApiAccess", cidr=net.cidr)
    reader = iam.Role(
        scope,
        "StudioClusterReader",
        role_name=names.team_cluster_reader_role(platform.cluster.name, team.name),
        assumed_by=iam.AccountPrincipal(team_account).with_conditions(
            # a condition, not the role as principal: IAM refuses a principal that does not exist yet, and the
            # execution role is created after this stack
            {
                "ArnEquals": {
                    "aws:PrincipalArn": studio_execution_role_arn(platform, team, partition=partition)
                }
            }
        ),
        description=f"Lets the Studio apps of team {team.name} ({team_account}) describe HyperPod cluster "
        f"{platform.cluster.name}",
        max_session_duration=cdk.Duration.hours(1),
        inline_policies={
            "DescribeCluster": iam.PolicyDocument(
                statements=[
                    iam.PolicyStatement(
                        actions=["eks:DescribeCluster"],
                        resources=[eks_cluster_arn(platform, partition=partition)],
                    )
                ]
            )
        },
    )
    return StudioPeering(
        connection=connection, routes=routes, endpoint_ingress=ingress, cluster_reader_role=reader
    )
