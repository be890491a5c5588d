"""``DriftAudit``: the daily drift audit of a cluster's teams, and each team's audit record.

The function (:mod:`hyperpod_tenancy.runtime.drift_audit`) runs once a day (EventBridge schedule), reads the
teams' audit records under ``names.team_records_path(<cluster>, "drift-audit")`` (each team stack writes its
own, :func:`audit_record_parameter`), compares Identity Center, IAM, EKS access entries, Studio domains and Task
Governance compute quotas with them; reads the teams' Kubernetes audit records (``drift-audit-kubernetes``,
:func:`kube_record_parameter`: what each team's chart declares) and compares the cluster's namespaces, bindings,
ResourceQuotas and LimitRanges with them (:mod:`hyperpod_tenancy.runtime.kube_drift`), through the private API
endpoint (the function runs in the cluster's VPC, its security group admitted to the endpoint) as the Kubernetes
group :data:`AUDIT_GROUP` (an EKS access entry with no access policy), bound to the read-only ClusterRole
:data:`AUDIT_ROLE`; and publishes the number of findings as ``DriftFindings``; an alarm on it notifies the
platform's alert topic. The stack holding it lists no team: adding a team changes only the new team's stack.

IAM is read-only. Resource-level permissions (Service Authorization Reference, the pages of IAM Identity Center,
IAM, Amazon EKS, Amazon SageMaker AI and Systems Manager): ``ssm:GetParametersByPath`` on the records' paths,
``eks:DescribeCluster`` on the cluster (its endpoint and CA),
``eks:ListAccessEntries`` on the cluster and ``eks:DescribeAccessEntry`` on its access entries, ``iam:GetRole``
on the Identity Center roles' path, ``sagemaker:DescribeDomain`` / ``DescribeComputeQuota`` on domains and
compute quotas; ``iam:ListRoles``, ``sagemaker:ListDomains``, ``sagemaker:ListComputeQuotas`` and
``cloudwatch:PutMetricData`` (limited to the audit's namespace by condition) support none. The Identity Center
actions are granted on ``*``: which of them accept the instance and permission set ARNs is not confirmed, and
every one granted only reads.
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import acknowledge_role, skip_checkov
from hyperpod_tenancy.constructs._private.cluster_reader import grant_cluster_reads
from hyperpod_tenancy.constructs._private.lambda_assets import asset_directory, lambda_asset_files
from hyperpod_tenancy.constructs._private.memo import stack_of
from hyperpod_tenancy.constructs._private.task_governance import compute_quota_properties
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.audit_record import PLATFORM_NAMESPACES
from hyperpod_tenancy.k8s.audit_record import team_expectation as policy_expectation
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.runtime import drift_audit as runtime
from hyperpod_tenancy.runtime.kube_drift import KubeExpectation

__all__ = [
    "AUDIT_GROUP",
    "AUDIT_ROLE",
    "METRIC_NAMESPACE",
    "DriftAudit",
    "audit_asset_files",
    "audit_record_parameter",
    "kube_record_parameter",
    "team_expectation",
]

#: CloudWatch namespace of the audit's metric (``DriftFindings``, dimension ``Cluster``).
METRIC_NAMESPACE = "HyperPodTenancy/DriftAudit"
#: Kubernetes group of the function's access entry, bound to :data:`AUDIT_ROLE` only.
AUDIT_GROUP = "hyperpod-tenancy:drift-audit"
#: Read-only ClusterRole of the audit: ``get`` and ``list`` on the kinds it compares, nothing else.
AUDIT_ROLE = "hyperpod-tenancy-drift-audit"
#: Largest value of a standard and of an advanced SSM parameter (characters).
_STANDARD_LIMIT = 4096
_ADVANCED_LIMIT = 8192


def audit_asset_files() -> dict[str, bytes]:
    """Files of the function's asset: the handler and every library module it imports, under a stub package."""
    return lambda_asset_files("The drift audit", "hyperpod_tenancy.runtime.drift_audit")


def team_expectation(
    platform: Platform,
    team: Team,
    *,
    stack: str,
    permission_set_arn: str | None,
    sso_role_arn: str | None,
    execution_role_arn: str | None,
    cluster_arn: str,
    compute_quota: bool,
) -> runtime.TeamExpectation:
    """Return a team's audit expectation: the policy's names and the values of its stack (CDK tokens in the stack).

    Args:
        platform: the policy.
        team: a hosted team.
        stack: the team stack's path (what ``cdk deploy`` takes).
        permission_set_arn: the permission set the stack deployed (``None``: Identity Center in another account).
        sso_role_arn: the Identity Center role the stack resolved (``None``: its access stack resolves it).
        execution_role_arn: the team's Studio execution role.
        cluster_arn: the HyperPod cluster's ARN (the compute quota's ``ClusterArn``).
        compute_quota: whether the stack creates a Task Governance ``ComputeQuota`` (rendered with
            ``compute_quota_properties``, exactly as the stack's).

    """
    return policy_expectation(
        platform,
        team,
        stack=stack,
        permission_set_arn=permission_set_arn,
        sso_role_arn=sso_role_arn,
        execution_role_arn=execution_role_arn,
        compute_quota=compute_quota_properties(platform, team, cluster_arn=cluster_arn)
        if compute_quota
        else None,
    )


def kube_record_parameter(
    scope: Construct, id: str, *, cluster: str, expectation: KubeExpectation
) -> ssm.StringParameter:
    """Write what a team's chart declares (:meth:`KubeExpectation.to_record`) to its SSM parameter, in its stack.

    The record holds no token, so its size is known at synth: up to 4 KB it is a standard parameter, up to 8 KB an
    advanced one (Systems Manager's two tiers: https://docs.aws.amazon.com/systems-manager/latest/userguide/parameter-store-advanced-parameters.html).

    Raises:
        TenancyError: the record is larger than an advanced parameter holds.

    """
    value = json.dumps(expectation.to_record(), sort_keys=True, separators=(",", ":"))
    name = names.drift_audit_kubernetes_record(cluster, expectation.team)
    if len(value) > _ADVANCED_LIMIT:
        raise TenancyError(
            f"team {expectation.team}: the Kubernetes audit record ({len(value)} characters) exceeds the "
            f"{_ADVANCED_LIMIT} an SSM parameter holds; fewer quota or limit entries in the team's chart make it fit"
        )
    return ssm.StringParameter(
        scope,
        id,
        parameter_name=name,
        string_value=value,
        description=f"Kubernetes drift audit record of team {expectation.team} on HyperPod cluster {cluster}",
        tier=ssm.ParameterTier.STANDARD if len(value) <= _STANDARD_LIMIT else ssm.ParameterTier.ADVANCED,
    )


def audit_record_parameter(
    scope: Construct, id: str, *, cluster: str, expectation: runtime.TeamExpectation
) -> ssm.StringParameter:
    """Write a team's audit record (:meth:`TeamExpectation.to_record`) to its SSM parameter, in the team's stack."""
    stack = stack_of(scope)
    return ssm.StringParameter(
        scope,
        id,
        parameter_name=names.drift_audit_record(cluster, expectation.team),
        string_value=stack.to_json_string(expectation.to_record()),
        description=f"Drift audit record of team {expectation.team} on HyperPod cluster {cluster}",
        tier=ssm.ParameterTier.STANDARD,
    )


class DriftAudit(Construct):
    """The daily drift audit of the cluster's teams (see the module docstring).

    Args:
        scope: parent (the chargeback stack, next to the alert topic).
        id: construct ID.
        cluster: the shared cluster.
        topic: where the alarm notifies (the platform's alert topic).
        schedule: how often the audit runs. Default: once a day.

    Attributes:
        function, schedule, alarm: the created resources.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        topic: sns.ITopic,
        schedule: events.Schedule | None = None,
    ) -> None:
        super().__init__(scope, id)
        stack = cdk.Stack.of(self)
        name = cluster.platform.cluster.name
        # some team's Identity Center role is in its own account, read through its lookup role
        self._team_accounts = bool(cluster.platform.teams_in_own_accounts)
        records = names.drift_audit_records(name)
        kube_records = names.drift_audit_kubernetes_records(name)
        #: The function's security group: admitted to the private EKS API endpoint, all egress (AWS APIs).
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=cluster.vpc,
            description=f"Drift audit of {name}: the private EKS API endpoint and the AWS APIs",
            allow_all_outbound=True,
        )
        cluster.allow_api_access_from(self, "ApiAccess", peer=self.security_group)
        #: The audit function.
        self.function = lambda_.Function(
            self,
            "Function",
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=lambda_.Code.from_asset(asset_directory("drift-audit", audit_asset_files())),
            handler="hyperpod_tenancy.runtime.drift_audit.handler",
            timeout=cdk.Duration.minutes(5),
            memory_size=256,
            environment={
                "CLUSTER_NAME": name,
                "EKS_CLUSTER_NAME": cluster.eks_cluster_name,
                "HYPERPOD_CLUSTER_ARN": cluster.hyperpod_cluster_arn,
                "ACCOUNT_ID": stack.account,
                "RECORDS_PATH": records,
                "KUBE_RECORDS_PATH": kube_records,
                "PLATFORM_NAMESPACES": ",".join(sorted(PLATFORM_NAMESPACES)),
                "TENANT_LABEL": labels.TENANT_LABEL,
                "METRIC_NAMESPACE": METRIC_NAMESPACE,
            },
            log_group=logs.LogGroup(self, "Logs", retention=logs.RetentionDays.ONE_YEAR),
            vpc=cluster.vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            security_groups=[self.security_group],
        )
        self._grant_reads(cluster, records.strip("/"), kube_records.strip("/"))
        #: The function's access entry and its read-only ClusterRole (the kinds the audit compares).
        self.access_entry, self.rbac = grant_cluster_reads(
            self,
            "Cluster",
            cluster=cluster,
            function=self.function,
            group=AUDIT_GROUP,
            role_name=AUDIT_ROLE,
            rules=[
                {
                    "apiGroups": [""],
                    "resources": ["namespaces", "resourcequotas", "limitranges"],
                    "verbs": ["get", "list"],
                },
                {
                    "apiGroups": ["rbac.authorization.k8s.io"],
                    "resources": ["rolebindings", "clusterrolebindings"],
                    "verbs": ["get", "list"],
                },
            ],
        )
        #: The daily schedule.
        self.schedule = events.Rule(
            self,
            "Schedule",
            description=f"Drift audit of the teams of HyperPod cluster {name}",
            schedule=schedule or events.Schedule.rate(cdk.Duration.days(1)),
            targets=[targets.LambdaFunction(self.function, retry_attempts=2)],
        )
        self.schedule.node.add_dependency(self.access_entry, self.rbac)
        #: The alarm on the run's findings, notifying ``topic``.
        self.alarm = cloudwatch.Alarm(
            self,
            "Findings",
            alarm_name=names.drift_audit_alarm(name),
            alarm_description=(
                f"The drift audit of HyperPod cluster {name} found differences from the platform policy: read "
                f"the function's log, or run `hyperpod-tenancy audit` (docs/audit.md says how to fix each finding)"
            ),
            metric=cloudwatch.Metric(
                namespace=METRIC_NAMESPACE,
                metric_name=runtime.METRIC_NAME,
                dimensions_map={"Cluster": name},
                statistic="Maximum",
                period=cdk.Duration.days(1),
            ),
            threshold=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=1,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        self.alarm.add_alarm_action(cloudwatch_actions.SnsAction(topic))
        self._acknowledge()

    def _grant_reads(self, cluster: IHyperPodCluster, *records: str) -> None:
        stack = cdk.Stack.of(self)
        statements: list[dict[str, Any]] = [
            {
                "sid": "TeamRecords",
                "actions": ["ssm:GetParametersByPath"],
                "resources": [
                    stack.format_arn(service="ssm", resource="parameter", resource_name=name)
                    for path in records
                    for name in (path, f"{path}/*")
                ],
            },
            {
                "sid": "IdentityCenter",
                "actions": [
                    "sso:ListPermissionSets",
                    "sso:DescribePermissionSet",
                    "sso:ListAccountAssignments",
                    "sso:ListManagedPoliciesInPermissionSet",
                    "sso:ListCustomerManagedPolicyReferencesInPermissionSet",
                ],
                "resources": ["*"],
            },
            {"sid": "ListRoles", "actions": ["iam:ListRoles"], "resources": ["*"]},
            {
                "sid": "IdentityCenterRoles",
                "actions": ["iam:GetRole"],
                "resources": [
                    stack.format_arn(
                        service="iam",
                        region="",
                        resource="role",
                        resource_name="aws-reserved/sso.amazonaws.com/*",
                    )
                ],
            },
            {
                "sid": "ListAccessEntries",
                "actions": ["eks:ListAccessEntries"],
                "resources": [cluster.eks_cluster_arn],
            },
            {
                "sid": "DescribeAccessEntries",
                "actions": ["eks:DescribeAccessEntry"],
                "resources": [
                    stack.format_arn(
                        service="eks", resource="access-entry", resource_name=f"{cluster.eks_cluster_name}/*"
                    )
                ],
            },
            {
                "sid": "ListSageMaker",
                "actions": ["sagemaker:ListDomains", "sagemaker:ListComputeQuotas"],
                "resources": ["*"],
            },
            {
                "sid": "DescribeSageMaker",
                "actions": ["sagemaker:DescribeDomain", "sagemaker:DescribeComputeQuota"],
                "resources": [
                    stack.format_arn(service="sagemaker", resource="domain", resource_name="*"),
                    stack.format_arn(service="sagemaker", resource="compute-quota", resource_name="*"),
                ],
            },
            {
                "sid": "Findings",
                "actions": ["cloudwatch:PutMetricData"],
                "resources": ["*"],
                "conditions": {"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}},
            },
        ]
        if self._team_accounts:
            # a team's Identity Center role is in its own account: read through its lookup role (fixed name)
            statements.append(
                {
                    "sid": "TeamAccountLookupRoles",
                    "actions": ["sts:AssumeRole"],
                    "resources": [f"arn:{stack.partition}:iam::*:role/{names.OBJECT_PREFIX}*-lookup"],
                }
            )
        for statement in statements:
            self.function.add_to_role_policy(iam.PolicyStatement(**statement))

    def _acknowledge(self) -> None:
        role = self.function.role
        if isinstance(role, iam.Role):
            acknowledge_role(
                role,
                managed_policies="AWSLambdaBasicExecutionRole and AWSLambdaVPCAccessExecutionRole are the managed "
                "policies CDK attaches for the function's logs and its network interfaces in the VPC",
                wildcards="read-only list/describe actions: iam:ListRoles, sagemaker:ListDomains/ListComputeQuotas "
                "and cloudwatch:PutMetricData (the audit's namespace only, by condition) support no resource-level "
                "permissions; the Identity Center reads are on every permission set of the instance; GetRole on "
                "the Identity Center roles' path, DescribeAccessEntry on this cluster's entries, the team records "
                "under /hyperpod-tenancy/<cluster>/drift-audit/ and drift-audit-kubernetes/"
                + (
                    "; sts:AssumeRole on the teams' lookup roles in their own accounts (which may list and read "
                    "roles and nothing else)"
                    if self._team_accounts
                    else ""
                ),
            )
        skip_checkov(
            self.function,
            ["CKV_AWS_115", "CKV_AWS_116"],
            "started by its own daily EventBridge schedule only, which retries a failed run twice; the event "
            "carries no data, so a dead-letter queue would hold nothing to replay, and one run a day needs no "
            "reserved concurrency",
        )
        skip_checkov(
            self.function,
            "CKV_AWS_173",
            "the environment holds cluster names, an account ID, paths and namespace names, no secret; Lambda "
            "encrypts it at rest",
        )
