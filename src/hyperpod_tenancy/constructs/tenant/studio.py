"""A team's SageMaker Studio: its domain, lifecycle configurations, execution policy and group assignment."""

from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sagemaker as sagemaker
from aws_cdk import aws_ssm as ssm
from aws_cdk import aws_sso as sso
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    wildcard_findings,
)
from hyperpod_tenancy.constructs._private.memo import attribute, once, stack_of
from hyperpod_tenancy.constructs._private.team_iam import (
    studio_execution_policy,
)
from hyperpod_tenancy.constructs.encryption import skip_without_key
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import onboarding
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.policy.changes import STUDIO_AUTH_MODE

__all__ = [
    "STUDIO_LIFECYCLE_CLUSTER_ACCOUNT",
    "STUDIO_LIFECYCLE_SCRIPT",
    "STUDIO_LIFECYCLE_TEAM_ACCOUNT",
    "DomainKey",
    "StudioApplicationRecord",
    "TeamStudio",
    "build_studio",
    "create_domain",
    "publish_application",
    "studio_lifecycle_script",
]

_ASSETS = Path(__file__).resolve().parent.parent / "assets"
#: The Studio lifecycle script's beginning (its ``HPT_*`` settings are prepended at synth:
#: :func:`studio_lifecycle_script`), and its end for a domain in the cluster's account or in the team's own.
STUDIO_LIFECYCLE_SCRIPT = _ASSETS / "studio-lifecycle.sh"
STUDIO_LIFECYCLE_CLUSTER_ACCOUNT = _ASSETS / "studio-lifecycle-cluster-account.sh"
STUDIO_LIFECYCLE_TEAM_ACCOUNT = _ASSETS / "studio-lifecycle-team-account.sh"
#: ``StudioLifecycleConfigContent`` is base64 of at most 16384 characters (AWS::SageMaker::StudioLifecycleConfig).
_LIFECYCLE_CONTENT_MAX = 16384


def studio_lifecycle_script(facts: onboarding.OnboardingFacts) -> str:
    """Return the Studio lifecycle script of a team: the asset with the team's ``HPT_*`` settings first.

    Its end depends on where the domain is: beside the cluster, ``aws eks update-kubeconfig`` with the member's
    profile (:data:`STUDIO_LIFECYCLE_CLUSTER_ACCOUNT`); in the team's own account, a kubeconfig written from what
    the cluster's reader role describes (:data:`STUDIO_LIFECYCLE_TEAM_ACCOUNT`).
    """
    tail = STUDIO_LIFECYCLE_TEAM_ACCOUNT if facts.in_own_account else STUDIO_LIFECYCLE_CLUSTER_ACCOUNT
    body = STUDIO_LIFECYCLE_SCRIPT.read_text(encoding="utf-8") + tail.read_text(encoding="utf-8")
    shebang, _, rest = body.partition("\n")
    settings = "".join(
        f"{key}={shlex.quote(value)}\n" for key, value in onboarding.lifecycle_environment(facts).items()
    )
    return f"{shebang}\n# team {facts.team} of platform {facts.platform} (hyperpod-tenancy)\n{settings}{rest}"


@dataclass(frozen=True)
class TeamStudio:
    """What :func:`build_studio` created for a team."""

    #: The team's Studio domain (retained on delete).
    domain: sagemaker.CfnDomain
    #: Assignment of the team's Identity Center group to the domain's SSO application (``None`` when Identity
    #: Center is administered from another account: the team's Identity Center stack assigns it there).
    assignment: sso.CfnApplicationAssignment | None
    #: Security group of the team's Studio apps, admitted to the EKS API endpoint on 443.
    security_group: ec2.SecurityGroup
    #: The Studio lifecycle configurations (JupyterLab, Code Editor).
    lifecycle_configs: tuple[sagemaker.CfnStudioLifecycleConfig, ...]
    #: The domain's application ARN, published for the Identity Center account, and the only role it may read it
    #: through (``None`` when Identity Center is administered from the cluster's account).
    application_record: StudioApplicationRecord | None = None


@dataclass(frozen=True)
class StudioApplicationRecord:
    """The ARN of a Studio domain's Identity Center application, readable from the Identity Center account only."""

    #: SSM parameter holding the ARN (:func:`names.studio_application_record`).
    parameter: ssm.StringParameter
    #: Role the Identity Center account's assigner role may assume to read that parameter, and nothing else.
    reader_role: iam.Role


def _private_subnet_ids(vpc: ec2.IVpc) -> tuple[str, ...]:
    return tuple(
        s.subnet_id for s in vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnets
    )


def build_studio(
    scope: Construct,
    *,
    cluster: IHyperPodCluster,
    team: Team,
    facts: onboarding.OnboardingFacts,
    execution_role: iam.Role,
) -> TeamStudio:
    """Create a team's SageMaker Studio domain in ``scope``.

    With it: its security group, lifecycle configurations, the domain (retained on delete), the execution policy
    and the assignment of the team's group to the domain's application.
    """
    platform = cluster.platform
    client = cluster.api_client_security_group_id
    security_group = ec2.SecurityGroup(
        scope,
        "StudioSecurityGroup",
        vpc=cluster.vpc,
        description=f"SageMaker Studio of team {team.name}",
        allow_all_outbound=True,
    )
    domain, configs, studio_policy = create_domain(
        scope,
        platform=platform,
        team=team,
        facts=facts,
        execution_role=execution_role,
        vpc_id=attribute(cluster.vpc, "vpc_id"),
        subnet_ids=list(once(cluster.vpc, "private_subnet_ids", lambda: _private_subnet_ids(cluster.vpc))),
        security_groups=[security_group.security_group_id, *([client] if client else [])],
        key=(
            DomainKey(
                key_arn=key.use("AWS::SageMaker::Domain").key_arn,
                via_services=(key.via_service("sagemaker"), key.via_service("ec2")),
            )
            if (key := cluster.platform_key)
            else None
        ),
    )
    # AuthMode SSO: a user sees the domain in the access portal only once their group is assigned to the domain's
    # Identity Center application ("IAM Identity Center groups in a domain", SageMaker developer guide). With
    # Identity Center administered from another account, the assignment is made there, from the ARN published here.
    assignment: sso.CfnApplicationAssignment | None = None
    record: StudioApplicationRecord | None = None
    if platform.identity_center_elsewhere:
        record = publish_application(scope, platform=platform, team=team, domain=domain)
        record.parameter.node.add_dependency(studio_policy)
    else:
        assignment = sso.CfnApplicationAssignment(
            scope,
            "StudioAssignment",
            application_arn=domain.attr_single_sign_on_application_arn,
            principal_type="GROUP",
            principal_id=team.identity.group_id,
        )
        # users arrive only once the execution role can create their apps and spaces
        assignment.node.add_dependency(studio_policy)
    # Studio apps call the cluster's private API endpoint (kubectl, the hyp CLI): through the client group, or
    # (an imported cluster without one) a rule of their own on the endpoint's group
    if client is None:
        cluster.allow_api_access_from(scope, "StudioApiAccess", peer=security_group)
    return TeamStudio(
        domain=domain,
        assignment=assignment,
        security_group=security_group,
        lifecycle_configs=tuple(configs),
        application_record=record,
    )


@dataclass(frozen=True)
class DomainKey:
    """The customer-managed key of a Studio domain's EFS and EBS volumes, and the services that may use it."""

    #: ARN of the key.
    key_arn: str
    #: ``kms:ViaService`` values the execution role may use it through (SageMaker's and EC2's in the region).
    via_services: tuple[str, ...]


def create_domain(
    scope: Construct,
    *,
    platform: Platform,
    team: Team,
    facts: onboarding.OnboardingFacts,
    execution_role: iam.Role,
    vpc_id: str,
    subnet_ids: list[str],
    security_groups: list[str],
    key: DomainKey | None,
) -> tuple[sagemaker.CfnDomain, list[sagemaker.CfnStudioLifecycleConfig], iam.Policy]:
    """Create a team's lifecycle configurations, its domain (retained on delete) and its execution policy."""
    configs = _lifecycle_configs(scope, team=team, facts=facts)
    lifecycle = {c.studio_lifecycle_config_app_type: c.attr_studio_lifecycle_config_arn for c in configs}
    domain = sagemaker.CfnDomain(
        scope,
        "Domain",
        domain_name=names.studio_domain(platform.cluster.name, team.name),
        auth_mode=STUDIO_AUTH_MODE,
        app_network_access_type="VpcOnly",
        # the domain's tags (the team's and its cost center's) reach every space and app its people start, so
        # their bill lines are charged to the team ("Custom tag propagation", SageMaker AI developer guide)
        tag_propagation="ENABLED",
        vpc_id=vpc_id,
        subnet_ids=subnet_ids,
        default_user_settings=sagemaker.CfnDomain.UserSettingsProperty(
            execution_role=execution_role.role_arn,
            # in the cluster's VPC, its API client group admits the apps to the private API endpoint: no rule
            # per team
            security_groups=security_groups,
            # the default lifecycle configuration runs at every app start ("Lifecycle configurations within
            # Amazon SageMaker Studio"; set as default in DefaultResourceSpec, and listed, as the schema asks)
            jupyter_lab_app_settings=sagemaker.CfnDomain.JupyterLabAppSettingsProperty(
                default_resource_spec=sagemaker.CfnDomain.ResourceSpecProperty(
                    lifecycle_config_arn=lifecycle["JupyterLab"]
                ),
                lifecycle_config_arns=[lifecycle["JupyterLab"]],
            ),
            code_editor_app_settings=sagemaker.CfnDomain.CodeEditorAppSettingsProperty(
                default_resource_spec=sagemaker.CfnDomain.ResourceSpecProperty(
                    lifecycle_config_arn=lifecycle["CodeEditor"]
                ),
                lifecycle_config_arns=[lifecycle["CodeEditor"]],
            ),
        ),
        # the domain's EFS home volume and its spaces' EBS volumes (CfnDomain KmsKeyId)
        kms_key_id=key.key_arn if key is not None else None,
    )
    domain.apply_removal_policy(cdk.RemovalPolicy.RETAIN)
    if key is not None:
        # spaces' EBS volumes are created for the user's execution role: the actions EBS asks of the caller
        # of an encrypted volume ("Permissions for IAM users", Amazon EBS encryption, EBS user guide), through
        # SageMaker and EC2 only
        iam.Grant.add_to_principal(
            grantee=execution_role,
            actions=[
                "kms:CreateGrant",
                "kms:Decrypt",
                "kms:DescribeKey",
                "kms:GenerateDataKeyWithoutPlainText",
                "kms:ReEncrypt*",
            ],
            resource_arns=[key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": list(key.via_services)}},
        )
    else:
        skip_without_key(
            [domain], "CKV_AWS_187", "the domain's EFS and EBS volumes", "SageMaker's AWS-managed key"
        )
    stack = stack_of(scope)
    # A separate policy, not inline: the domain references the role, the policy the domain (no cycle).
    studio_policy = iam.Policy(
        scope,
        "StudioPolicy",
        roles=[execution_role],
        document=iam.PolicyDocument.from_json(
            studio_execution_policy(
                domain_id=domain.attr_domain_id,
                region=attribute(stack, "region"),
                account=attribute(stack, "account"),
                partition=attribute(stack, "partition"),
            )
        ),
    )
    acknowledge(
        studio_policy,
        wildcard_findings(studio_policy),
        "apps and spaces of the team's own domain only (app/<domain-id>/*, space/<domain-id>/*; AddTags only "
        "while creating them); ListApps/ListSpaces/ListUserProfiles support no resource-level permission; "
        "isolation from other teams' domains is proven by tests/test_team_iam.py",
    )
    return domain, configs, studio_policy


def publish_application(
    scope: Construct, *, platform: Platform, team: Team, domain: sagemaker.CfnDomain
) -> StudioApplicationRecord:
    """Publish the domain's application ARN for the Identity Center account, through a role only it may assume.

    The ARN exists once the domain does, so it cannot cross accounts at synthesis. The team's Identity Center
    stack, deployed after this one, reads it through the reader role: a role of a fixed name whose trust names the
    Identity Center account and, by ``aws:PrincipalArn``, the team's assigner role there (a condition, because IAM
    refuses a principal that does not exist yet), and whose policy reads this one parameter.
    """
    stack = stack_of(scope)
    partition = attribute(stack, "partition")
    parameter = ssm.StringParameter(
        scope,
        "StudioApplication",
        parameter_name=names.studio_application_record(platform.cluster.name, team.name),
        string_value=domain.attr_single_sign_on_application_arn,
        description=f"Identity Center application of team {team.name}'s Studio domain",
        tier=ssm.ParameterTier.STANDARD,
    )
    assigner = names.role_arn(
        partition=partition,
        account=platform.identity_center_account,
        name=names.team_studio_assigner_role(platform.cluster.name, team.name),
    )
    reader = iam.Role(
        scope,
        "StudioApplicationReader",
        role_name=names.team_studio_reader_role(platform.cluster.name, team.name),
        assumed_by=iam.AccountPrincipal(platform.identity_center_account).with_conditions(
            {"ArnEquals": {"aws:PrincipalArn": assigner}}
        ),
        description=f"Lets the Identity Center account read the application ARN of team {team.name}'s Studio domain",
        max_session_duration=cdk.Duration.hours(1),
    )
    parameter.grant_read(reader)
    return StudioApplicationRecord(parameter=parameter, reader_role=reader)


def _lifecycle_configs(
    scope: Construct, *, team: Team, facts: onboarding.OnboardingFacts
) -> list[sagemaker.CfnStudioLifecycleConfig]:
    """Create the team's Studio lifecycle configurations, one per app type."""
    script = studio_lifecycle_script(facts)
    content = base64.b64encode(script.encode()).decode()
    if len(content) > _LIFECYCLE_CONTENT_MAX:  # pragma: no cover - the asset is a few KiB
        raise TenancyError(
            f"{scope.node.path}: the Studio lifecycle script is {len(content)} characters in base64; "
            f"StudioLifecycleConfigContent holds at most {_LIFECYCLE_CONTENT_MAX}."
        )
    # the tags the stage puts on every team resource are create-only here too: a change replaces the config
    salt = f"{script}\n{team.name}\n{team.effective_cost_center}"
    configs: list[sagemaker.CfnStudioLifecycleConfig] = []
    for app_type in onboarding.LIFECYCLE_APP_TYPES:
        config = sagemaker.CfnStudioLifecycleConfig(
            scope,
            f"StudioLifecycle{app_type}",
            studio_lifecycle_config_app_type=app_type,
            studio_lifecycle_config_content=content,
            studio_lifecycle_config_name=onboarding.lifecycle_config_name(facts, app_type, content=salt),
        )
        configs.append(config)
    return configs
