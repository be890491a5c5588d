"""A team's Studio domain in its own account: its routes to the cluster, execution role, domain and application.

Deployed after the team stack, which requests the peering of the cluster's VPC with the team's Studio VPC and
accepts it through the team's peering role (``constructs/tenant/studio_peering.py``). The accepted connection is
visible in this account too: a lookup finds it by the two VPCs (the team's by ID, the cluster's by its account and
CIDR) and this stack routes the team's route tables to the cluster's VPC through it. The domain runs in the team's
private subnets; its execution role (a fixed name: the cluster reader role's trust names it) may reach the team's
data prefix here, its own apps and spaces, and assume the cluster's reader role. The domain's Identity Center
application ARN is published for the Identity Center account, as for a domain beside the cluster.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import custom_resources as cr
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_aws_custom_resource_handler,
    acknowledge_role,
)
from hyperpod_tenancy.constructs._private.team_iam import (
    DATA_KEY_ACTIONS,
    studio_trust_conditions,
    team_data_policy,
)
from hyperpod_tenancy.constructs.tenant.studio import (
    DomainKey,
    StudioApplicationRecord,
    create_domain,
    publish_application,
)
from hyperpod_tenancy.constructs.tenant.studio_assignment import lookup_log_group
from hyperpod_tenancy.constructs.tenant.studio_peering import cluster_reader_role_arn
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.policy import Platform, Team, names

__all__ = ["TeamAccountStudio", "peering_filters"]


def peering_filters(platform: Platform, team: Team) -> list[dict[str, object]]:
    """Return the ``DescribeVpcPeeringConnections`` filters of the team's active peering with the cluster's VPC."""
    net = team.studio_network
    if net is None:  # pragma: no cover - validated
        raise TenancyError(f"team {team.name!r} has no studioNetwork")
    return [
        {"Name": "accepter-vpc-info.vpc-id", "Values": [net.vpc_id]},
        {"Name": "requester-vpc-info.owner-id", "Values": [platform.account]},
        {"Name": "requester-vpc-info.cidr-block", "Values": [platform.cluster.vpc_cidr]},
        {"Name": "status-code", "Values": ["active"]},
    ]


class TeamAccountStudio(Construct):
    """A team's SageMaker Studio domain in its own account, routed to the cluster over the platform's peering.

    Args:
        scope: the team's Studio stack (in the team's account).
        id: construct ID.
        platform: the policy.
        team: a team with an account of its own, a Studio domain and its ``studioNetwork``.
        data_bucket: the team's data bucket in its account (the team's account stack).
        data_key: the key of that bucket (``None``: SSE-S3); it encrypts the domain's volumes too.
        sso_start_url: the access portal URL the lifecycle script configures (``None``: the script says where to
            find it).

    Raises:
        TenancyError: the team has no Studio domain in an account of its own.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        team: Team,
        data_bucket: s3.IBucket,
        data_key: kms.IKey | None,
        sso_start_url: str | None = None,
    ) -> None:
        super().__init__(scope, id)
        net = team.studio_network
        if net is None or not platform.studio_in_team_account(team):
            raise TenancyError(
                f"{self.node.path}: team {team.name!r} has no Studio domain in an account of its own "
                "(`account`, `studio` and `studioNetwork`)."
            )
        stack = cdk.Stack.of(self)
        facts = onboarding.onboarding_facts(platform, team.name, sso_start_url=sso_start_url)
        #: Finds the team's active peering connection with the cluster's VPC (accepted by the team stack).
        self.peering_lookup: cr.AwsCustomResource = self._peering_lookup(platform, team)
        peering = self.peering_lookup.get_response_field("VpcPeeringConnections.0.VpcPeeringConnectionId")
        #: A route to the cluster's VPC in each of the team's route tables, through that connection.
        self.routes: list[ec2.CfnRoute] = [
            ec2.CfnRoute(
                self,
                f"ClusterRoute{index}",
                route_table_id=table,
                destination_cidr_block=platform.cluster.vpc_cidr,
                vpc_peering_connection_id=peering,
            )
            for index, table in enumerate(net.route_table_ids)
        ]
        #: Security group of the team's Studio apps in the team's VPC (egress only; the cluster admits the CIDR).
        self.security_group = ec2.CfnSecurityGroup(
            self,
            "StudioSecurityGroup",
            group_description=f"SageMaker Studio of team {team.name}",
            vpc_id=net.vpc_id,
            security_group_egress=[
                ec2.CfnSecurityGroup.EgressProperty(
                    ip_protocol="-1", cidr_ip="0.0.0.0/0", description="Allow all outbound traffic by default"
                )
            ],
        )
        data = team_data_policy(team=team.name, bucket_arn=data_bucket.bucket_arn)
        if data_key is not None:
            data["Statement"].append(
                {
                    "Sid": "TeamDataKeyThroughS3",
                    "Effect": "Allow",
                    "Action": list(DATA_KEY_ACTIONS),
                    "Resource": data_key.key_arn,
                    "Condition": {"StringEquals": {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"}},
                }
            )
        #: The domain's execution role (``hyperpod-tenancy-<cluster>-<team>-studio``): the team's prefix of its
        #: bucket, its own domain's apps and spaces, and describing the cluster through the reader role.
        self.execution_role = iam.Role(
            self,
            "ExecutionRole",
            role_name=names.team_studio_role(platform.cluster.name, team.name),
            assumed_by=iam.ServicePrincipal(
                "sagemaker.amazonaws.com", conditions=studio_trust_conditions(account=stack.account)
            ),
            description=f"team {team.name}: its Studio domain; S3 under teams/{team.name}/ of its bucket only",
            inline_policies={
                "TeamData": iam.PolicyDocument.from_json(data),
                "DescribeCluster": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(
                            actions=["sts:AssumeRole"],
                            resources=[cluster_reader_role_arn(platform, team, partition=stack.partition)],
                        )
                    ]
                ),
            },
        )
        acknowledge_role(
            self.execution_role,
            wildcards=f"objects under the team's own prefix teams/{team.name}/ only (ListBucket is conditioned on "
            "s3:prefix); isolation from other teams is proven by tests/test_team_iam.py",
        )
        domain_key = (
            DomainKey(
                key_arn=data_key.key_arn,
                via_services=(f"sagemaker.{stack.region}.amazonaws.com", f"ec2.{stack.region}.amazonaws.com"),
            )
            if data_key is not None
            else None
        )
        domain, configs, policy = create_domain(
            self,
            platform=platform,
            team=team,
            facts=facts,
            execution_role=self.execution_role,
            vpc_id=net.vpc_id,
            subnet_ids=list(net.subnet_ids),
            security_groups=[self.security_group.attr_group_id],
            key=domain_key,
        )
        #: The team's Studio domain (retained on delete).
        self.domain: sagemaker.CfnDomain = domain
        #: The Studio lifecycle configurations (JupyterLab, Code Editor).
        self.lifecycle_configs: tuple[sagemaker.CfnStudioLifecycleConfig, ...] = tuple(configs)
        #: The domain's application ARN, published for the Identity Center account, and its reader role.
        self.application_record: StudioApplicationRecord = publish_application(
            self, platform=platform, team=team, domain=domain
        )
        self.application_record.parameter.node.add_dependency(policy)
        # apps start once they can reach the cluster
        for route in self.routes:
            domain.node.add_dependency(route)
        deployed = {"StudioDomainId": domain.attr_domain_id, "StudioUrl": domain.attr_url}
        for key, value in deployed.items():
            cdk.CfnOutput(stack, key, value=value, description=onboarding.DEPLOY_TIME_OUTPUTS[key])

    def _peering_lookup(self, platform: Platform, team: Team) -> cr.AwsCustomResource:
        """Find the team's active peering connection with the cluster's VPC, by the two VPCs."""
        filters = peering_filters(platform, team)
        call = cr.AwsSdkCall(
            service="EC2",
            action="describeVpcPeeringConnections",
            parameters={"Filters": filters},
            region=platform.region,
            # a new peering (the team's VPC or the cluster's CIDR changed) is found again
            physical_resource_id=cr.PhysicalResourceId.of(
                ":".join(str(f["Values"][0]) for f in filters[:3])  # type: ignore[index]
            ),
            output_paths=["VpcPeeringConnections.0.VpcPeeringConnectionId"],
        )
        log_group = lookup_log_group(
            self,
            "PeeringLookupLogs",
            "the lookup's log group holds its calls and the peering connection's ID",
        )
        lookup = cr.AwsCustomResource(
            self,
            "PeeringLookup",
            on_create=call,
            on_update=call,
            # DescribeVpcPeeringConnections supports no resource-level permission
            policy=cr.AwsCustomResourcePolicy.from_statements(
                [iam.PolicyStatement(actions=["ec2:DescribeVpcPeeringConnections"], resources=["*"])]
            ),
            install_latest_aws_sdk=False,
            log_group=log_group,
        )
        acknowledge(
            lookup,
            "AwsSolutions-IAM5[Resource::*]",
            "ec2:DescribeVpcPeeringConnections supports no resource-level permission; it reads, and the lookup's "
            "filters name the team's VPC and the cluster's account and CIDR",
        )
        acknowledge_aws_custom_resource_handler(
            cdk.Stack.of(self),
            "handler created and maintained by aws-cdk-lib (AwsCustomResource): its runtime is CDK's",
        )
        return lookup
