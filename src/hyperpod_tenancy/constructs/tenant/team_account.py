"""What a team with an account of its own has there: its data, the role of its pods, its people's grants.

The team's pods run on the shared cluster, in the cluster's account; its data lives in the team's account. EKS
Pod Identity bridges the two by role chaining ("Access AWS Resources using EKS Pod Identity Target IAM Roles",
Amazon EKS User Guide): the association's role in the cluster's account is assumed first, then the **target
role** here. The target role trusts exactly that role (``aws:PrincipalArn``) and only with the session tags Pod
Identity sets for the team's namespace, service account and cluster (``aws:RequestTag/...``), so no other
namespace, cluster or role of the cluster's account can become it.

The team's people sign in to this account with the team's permission set. Its grants are the customer managed
policy created here under the name and path the permission set references. The role Identity Center provisions
here has a random suffix, so the cluster's account finds it at deploy time through the **lookup role**, which
may only list roles; its ARN then goes into the cluster's access entry. Nothing crosses the account line as a
CloudFormation reference: every ARN the other side needs is built from names and account IDs of the policy.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    acknowledge_managed_policy,
    acknowledge_role,
)
from hyperpod_tenancy.constructs._private.buckets import private_bucket
from hyperpod_tenancy.constructs._private.team_iam import (
    DATA_KEY_ACTIONS,
    team_data_policy,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import Platform, Team, names

__all__ = ["TeamAccount", "eks_cluster_arn", "pods_trust_conditions"]


def eks_cluster_arn(platform: Platform, *, partition: str) -> str:
    """ARN of the shared EKS cluster, from the policy: ``arn:<partition>:eks:<region>:<account>:cluster/<name>``."""
    return f"arn:{partition}:eks:{platform.region}:{platform.account}:cluster/{platform.cluster.name}"


def pods_trust_conditions(platform: Platform, team: Team, *, partition: str) -> dict[str, dict[str, str]]:
    """Conditions of the target role's trust: the source role, and the Pod Identity session tags of the team.

    EKS Pod Identity tags the sessions it creates with ``eks-cluster-arn``, ``kubernetes-namespace`` and
    ``kubernetes-service-account`` (among others), and passes them when it assumes the target role; the trust
    policy in the EKS User Guide conditions on them and on ``aws:PrincipalARN``.
    """
    return {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-arn": eks_cluster_arn(platform, partition=partition),
            "aws:RequestTag/kubernetes-namespace": names.namespace(team.name),
            "aws:RequestTag/kubernetes-service-account": DEFAULT_SERVICE_ACCOUNT,
        },
        "ArnEquals": {
            "aws:PrincipalArn": names.role_arn(
                partition=partition,
                account=platform.account,
                name=names.team_pods_source_role(platform.cluster.name, team.name),
            )
        },
    }


class TeamAccount(Construct):
    """A team's data bucket, the role of its pods, the lookup role and its permission set's policy, in its account.

    Args:
        scope: the team's account stack.
        id: construct ID.
        platform: the policy.
        team: a team of the policy with an ``account`` of its own.

    """

    def __init__(self, scope: Construct, id: str, *, platform: Platform, team: Team) -> None:
        super().__init__(scope, id)
        # log delivery through a bucket policy, not the legacy AccessControl ACL (set before any child exists)
        self.node.set_context("@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy", True)
        stack = cdk.Stack.of(self)
        partition, region = stack.partition, stack.region
        cluster = platform.cluster.name
        cluster_account = iam.AccountPrincipal(platform.account)
        #: The team's key (``encryption.kmsKey`` set: a key of this account, retained and rotated, used through S3
        #: only); ``None`` otherwise, and the bucket keeps SSE-S3.
        self.key: kms.Key | None = (
            kms.Key(
                self,
                "DataKey",
                description=f"Data of team {team.name} on HyperPod cluster {cluster}",
                enable_key_rotation=True,
                removal_policy=cdk.RemovalPolicy.RETAIN,
            )
            if platform.encryption.kms_key is not None
            else None
        )
        #: The bucket's server access logs (SSE-S3: a log target cannot use SSE-KMS), retained.
        self.access_logs = private_bucket(self, "AccessLogs", access_logs=None, key=None)
        acknowledge(
            self.access_logs,
            "AwsSolutions-S1",
            "this is the access-log bucket of the team's data bucket; logging it to itself would loop",
            checkov="CKV_AWS_18",
        )
        #: The team's data, under ``teams/<team>/`` as in the shared bucket: private, versioned, retained.
        self.data_bucket: s3.Bucket = private_bucket(
            self, "DataBucket", access_logs=self.access_logs, key=self.key
        )
        data = team_data_policy(team=team.name, bucket_arn=self.data_bucket.bucket_arn)
        if self.key is not None:
            data["Statement"].append(self._key_statement(region))
        #: Role of the team's pods here (the Pod Identity target role, ``hyperpod-tenancy-<cluster>-<team>-pods``):
        #: S3 under ``teams/<team>/`` of :attr:`data_bucket` only, assumable only through the team's association.
        self.pods_role = iam.Role(
            self,
            "PodsRole",
            role_name=names.team_pods_role(cluster, team.name),
            description=f"team {team.name}: its pods on HyperPod cluster {cluster} (EKS Pod Identity target role)",
            assumed_by=iam.PrincipalWithConditions(
                cluster_account, pods_trust_conditions(platform, team, partition=partition)
            ).with_session_tags(),
            inline_policies={"TeamData": iam.PolicyDocument.from_json(data)},
        )
        acknowledge_role(
            self.pods_role,
            wildcards=f"objects under the team's own prefix teams/{team.name}/ only (ListBucket is conditioned on "
            "s3:prefix)",
        )
        #: Role the cluster's account assumes to find the team's Identity Center role here, at deploy time and in the
        #: daily audit (it may list roles and read the Identity Center roles, nothing else).
        self.lookup_role = iam.Role(
            self,
            "LookupRole",
            role_name=names.team_lookup_role(cluster, team.name),
            description=f"HyperPod cluster {cluster} ({platform.account}) finds team {team.name}'s Identity Center "
            "role here",
            assumed_by=cluster_account,
            inline_policies={
                "ListRoles": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(actions=["iam:ListRoles"], resources=["*"]),
                        *self._studio_audit_statements(platform, team, stack),
                        # the daily audit compares the role's creation with its access entry's
                        iam.PolicyStatement(
                            actions=["iam:GetRole"],
                            resources=[
                                stack.format_arn(
                                    service="iam",
                                    region="",
                                    resource="role",
                                    resource_name="aws-reserved/sso.amazonaws.com/*",
                                )
                            ],
                        ),
                    ]
                )
            },
        )
        acknowledge_role(
            self.lookup_role,
            wildcards="iam:ListRoles and sagemaker:ListDomains support no resource-level permissions; the lookup "
            "lists roles under /aws-reserved/sso.amazonaws.com/ only, and the audit describes the domains of this "
            "account, which are the team's",
        )
        #: Role the cluster's account accepts the peering of the team's Studio VPC through (``None`` without a
        #: Studio domain here): ``AWS::EC2::VPCPeeringConnection`` ``PeerRoleArn``.
        self.peering_role: iam.Role | None = (
            self._peering_role(platform, team) if team.studio and team.studio_network is not None else None
        )
        grants = team_data_policy(team=team.name, bucket_arn=self.data_bucket.bucket_arn)
        if self.key is not None:
            grants["Statement"].append(self._key_statement(region))
        grants["Statement"].append(
            {
                "Sid": "ReadThisStack",
                "Effect": "Allow",
                "Action": "cloudformation:DescribeStacks",
                "Resource": [
                    stack.format_arn(service="cloudformation", resource="stack", resource_name=f"{name}/*")
                    for name in self._readable_stacks(platform, team, stack)
                ],
            }
        )
        #: What the team's permission set grants here: the policy it references by name and path.
        self.permission_set_policy = iam.CfnManagedPolicy(
            self,
            "PermissionSetPolicy",
            managed_policy_name=names.permission_set_policy(cluster, team.name),
            path=names.PERMISSION_SET_POLICY_PATH,
            description=f"Team {team.name} on HyperPod cluster {cluster}: what its permission set grants in the "
            "team's account",
            policy_document=grants,
        )
        acknowledge_managed_policy(
            self.permission_set_policy,
            wildcards=f"objects under the team's own prefix teams/{team.name}/ only (ListBucket is conditioned on "
            "s3:prefix), and this stack by name (the suffix is the stack ID)",
        )
        cdk.CfnOutput(
            self, "DataBucketName", value=self.data_bucket.bucket_name, description="The team's data"
        )
        cdk.CfnOutput(
            self, "PodsRoleArn", value=self.pods_role.role_arn, description="The role of the team's pods"
        )

    @staticmethod
    def _studio_audit_statements(
        platform: Platform, team: Team, stack: cdk.Stack
    ) -> list[iam.PolicyStatement]:
        """Return what the daily audit reads of a Studio domain here: the domains' names, and a domain's settings."""
        if not platform.studio_in_team_account(team):
            return []
        return [
            # ListDomains supports no resource-level permission
            iam.PolicyStatement(actions=["sagemaker:ListDomains"], resources=["*"]),
            iam.PolicyStatement(
                actions=["sagemaker:DescribeDomain"],
                resources=[stack.format_arn(service="sagemaker", resource="domain", resource_name="*")],
            ),
        ]

    @staticmethod
    def _readable_stacks(platform: Platform, team: Team, stack: cdk.Stack) -> list[str]:
        """Return the stacks of this account whose outputs the team's members read: this one, and its Studio stack."""
        stacks = [stack.stack_name]
        if platform.studio_in_team_account(team):
            stacks.append(names.stage_stack_name(platform.name, names.team_studio_stack_id(team.name)))
        return stacks

    def _peering_role(self, platform: Platform, team: Team) -> iam.Role:
        """Create the role that accepts, for the cluster's account, the peering of the team's Studio VPC only.

        The accepter's role as in "Walkthrough: Peer with a VPC in another AWS account" (CloudFormation User Guide):
        trusted by the requester's account, allowed ``ec2:AcceptVpcPeeringConnection``; here on the team's Studio
        VPC, and on a connection only when its requester VPC is of the cluster's account.
        """
        stack = cdk.Stack.of(self)
        net = team.studio_network
        if net is None:  # pragma: no cover - called only with a Studio network
            raise TenancyError(f"{self.node.path}: team {team.name!r} has no studioNetwork")
        vpc = stack.format_arn(service="ec2", resource="vpc", resource_name=net.vpc_id)
        role = iam.Role(
            self,
            "PeeringRole",
            role_name=names.team_peering_role(platform.cluster.name, team.name),
            description=f"HyperPod cluster {platform.cluster.name} ({platform.account}) peers its VPC with the "
            f"Studio VPC of team {team.name}",
            assumed_by=iam.AccountPrincipal(platform.account),
            max_session_duration=cdk.Duration.hours(1),
            inline_policies={
                "AcceptClusterPeering": iam.PolicyDocument(
                    statements=[
                        iam.PolicyStatement(actions=["ec2:AcceptVpcPeeringConnection"], resources=[vpc]),
                        iam.PolicyStatement(
                            actions=["ec2:AcceptVpcPeeringConnection"],
                            resources=[
                                stack.format_arn(
                                    service="ec2", resource="vpc-peering-connection", resource_name="*"
                                )
                            ],
                            conditions={
                                "ArnEquals": {"ec2:AccepterVpc": vpc},
                                "ArnLike": {
                                    "ec2:RequesterVpc": stack.format_arn(
                                        service="ec2",
                                        account=platform.account,
                                        resource="vpc",
                                        resource_name="*",
                                    )
                                },
                            },
                        ),
                    ]
                )
            },
        )
        acknowledge_role(
            role,
            wildcards="a peering connection's ID is unknown until the cluster's account requests it; the connection "
            "is accepted only onto the team's Studio VPC (ec2:AccepterVpc) and from a VPC of the cluster's account "
            "(ec2:RequesterVpc)",
        )
        return role

    def _key_statement(self, region: str) -> dict[str, object]:
        key = self.key
        if key is None:  # pragma: no cover - called only with a key
            raise TenancyError(f"{self.node.path}: no data key")
        return {
            "Sid": "TeamDataKeyThroughS3",
            "Effect": "Allow",
            "Action": list(DATA_KEY_ACTIONS),
            "Resource": key.key_arn,
            "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
        }
