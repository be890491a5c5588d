"""The team stack's outputs and the commands that read them; the Studio lifecycle configuration's name and environment."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from hyperpod_tenancy.k8s.onboarding.facts import (
    CLUSTER_RESOURCES,
    DEPLOY_TIME_OUTPUTS,
    OnboardingFacts,
    cluster_stack_name,
)
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import (
    Platform,
)

__all__ = [
    "CA_PLACEHOLDER",
    "ENDPOINT_PLACEHOLDER",
    "LIFECYCLE_APP_TYPES",
    "StackOutput",
    "cluster_resource_command",
    "describe_output_command",
    "kubeconfig_commands",
    "lifecycle_config_name",
    "lifecycle_environment",
    "stack_outputs",
]

#: The Studio app types a team's lifecycle configuration is attached to (``StudioLifecycleConfigAppType``).
LIFECYCLE_APP_TYPES = ("JupyterLab", "CodeEditor")


#: ``StudioLifecycleConfigName``: at most 63 characters (AWS::SageMaker::StudioLifecycleConfig schema).
_LIFECYCLE_NAME_MAX = 63


@dataclass(frozen=True, kw_only=True)
class StackOutput:
    """One CloudFormation output of a team stack."""

    #: Output key (logical ID).
    key: str
    #: What it is.
    description: str
    #: The value; ``None`` for a value known only at deploy time (:data:`DEPLOY_TIME_OUTPUTS`).
    value: str | None


def stack_outputs(facts: OnboardingFacts) -> list[StackOutput]:
    """Return the CloudFormation outputs of the team's stack: the facts, and the values known at deploy time."""
    classes = ", ".join(
        f"{c.workload_priority_class} ("
        + (
            f"checkpoint every {c.max_checkpoint_interval} or less"
            if c.checkpoint_required
            else "no checkpoint required"
        )
        + ")"
        for c in facts.classes
    )
    static = [
        StackOutput(
            key="AwsProfile", description="the AWS CLI profile of aws sso login", value=facts.profile
        ),
        StackOutput(
            key="PermissionSet",
            description="the Identity Center permission set (the profile's sso_role_name)",
            value=facts.permission_set,
        ),
        StackOutput(key="EksCluster", description="the EKS and HyperPod cluster", value=facts.cluster),
        StackOutput(key="Namespace", description="the team's Kubernetes namespace", value=facts.namespace),
        StackOutput(
            key="LocalQueue",
            description="kueue.x-k8s.io/queue-name of every workload",
            value=facts.local_queue,
        ),
        StackOutput(
            key="PriorityClasses",
            description="kueue.x-k8s.io/priority-class values the team may use, with their checkpoint rule",
            value=classes,
        ),
        StackOutput(key="FsxDirectory", description="the team directory on FSx", value=facts.fsx_directory),
        StackOutput(
            key="HomeDirectory",
            description=f"your home directory (mounted at {facts.home_mount} in your pods)",
            value=f"{facts.home_parent}/<your UID>",
        ),
        StackOutput(
            key="S3Prefix", description="the team's prefix in the data bucket", value=facts.s3_prefix
        ),
        StackOutput(
            key="OnboardingCommand",
            description="prints everything a team member needs",
            value=f"hyperpod-tenancy onboarding {facts.team}",
        ),
    ]
    if facts.studio_domain is not None:
        static.append(
            StackOutput(key="StudioDomain", description="the team's Studio domain", value=facts.studio_domain)
        )
    deploy = [
        StackOutput(key=key, description=text, value=None)
        for key, text in DEPLOY_TIME_OUTPUTS.items()
        if (facts.studio_domain is not None or not key.startswith("Studio"))
        and facts.output_stack(key) == facts.stack_name
    ]
    return static + deploy


#: Placeholders of :func:`kubeconfig_commands` for what the platform team hands out.
ENDPOINT_PLACEHOLDER = "<endpoint>"
CA_PLACEHOLDER = "<certificate-authority-data>"


def kubeconfig_commands(facts: OnboardingFacts) -> list[str]:
    """Return the ``kubectl config`` commands writing a member's context without ``eks:DescribeCluster``.

    ``aws eks update-kubeconfig`` describes the cluster in the caller's account, which a team with an account of
    its own cannot. The context these commands write is the one it would write: the cluster's endpoint and
    certificate authority (:data:`ENDPOINT_PLACEHOLDER`, :data:`CA_PLACEHOLDER`), a user whose token
    ``aws eks get-token`` signs with the member's profile (accepted by the cluster's access entry across
    accounts), and the team's namespace.
    """
    user = names.kubeconfig_user(facts.cluster, facts.team)
    get_token = f"eks,get-token,--cluster-name,{facts.cluster},--region,{facts.region},--output,json"
    return [
        f"kubectl config set-cluster {facts.kube_context} --server {ENDPOINT_PLACEHOLDER}",
        f"kubectl config set clusters.{facts.kube_context}.certificate-authority-data {CA_PLACEHOLDER}",
        f"kubectl config set-credentials {user} --exec-api-version client.authentication.k8s.io/v1beta1 "
        f"--exec-command aws --exec-arg {get_token} --exec-env AWS_PROFILE={facts.profile}",
        f"kubectl config set-context {facts.kube_context} --cluster {facts.kube_context} --user {user} "
        f"--namespace {facts.namespace}",
        f"kubectl config use-context {facts.kube_context}",
    ]


def describe_output_command(facts: OnboardingFacts, key: str) -> str:
    """Return the ``aws cloudformation describe-stacks`` command printing one deploy-time output of the team."""
    query = f"Stacks[0].Outputs[?OutputKey=='{key}'].OutputValue"
    return (
        f"aws cloudformation describe-stacks --region {facts.region} --stack-name {facts.output_stack(key)} "
        f'--query "{query}" --output text'
    )


def cluster_resource_command(platform: Platform, key: str) -> str:
    """Return the ``aws cloudformation describe-stack-resources`` command printing one of :data:`CLUSTER_RESOURCES`."""
    resource_type, prefix, _ = CLUSTER_RESOURCES[key]
    query = (
        f"StackResources[?ResourceType=='{resource_type}' && starts_with(LogicalResourceId, '{prefix}')]"
        ".PhysicalResourceId"
    )
    return (
        f"aws cloudformation describe-stack-resources --region {platform.region} "
        f'--stack-name {cluster_stack_name(platform)} --query "{query}" --output text'
    )


def lifecycle_config_name(facts: OnboardingFacts, app_type: str, *, content: str) -> str:
    """Name of the team's Studio lifecycle configuration for ``app_type``: ``<cluster>-<team>-<app>-<hash>``.

    Every property of an ``AWS::SageMaker::StudioLifecycleConfig`` is create-only, so a change replaces it, and
    CloudFormation creates the replacement before deleting the old one: the hash of ``content`` (the script and
    whatever else replaces it, such as its tags) gives the replacement a name of its own. At most 63 characters
    (``StudioLifecycleConfigName``): a longer prefix is cut.
    """
    digest = hashlib.sha256(f"{app_type}\n{content}".encode()).hexdigest()[:8]
    prefix = f"{facts.cluster}-{facts.team}-{app_type.lower()}"
    prefix = prefix[: _LIFECYCLE_NAME_MAX - len(digest) - 1].rstrip("-")
    return f"{prefix}-{digest}"


def lifecycle_environment(facts: OnboardingFacts) -> dict[str, str]:
    """Return the variables the Studio lifecycle script is configured with (``HPT_*``, in a fixed order)."""
    return {
        "HPT_PROFILE": facts.profile,
        "HPT_SSO_SESSION": facts.sso_session,
        "HPT_SSO_START_URL": facts.sso_start_url or "",
        "HPT_SSO_REGION": facts.sso_region,
        "HPT_ACCOUNT": facts.account,
        "HPT_ROLE": facts.permission_set,
        "HPT_REGION": facts.region,
        "HPT_CLUSTER": facts.cluster,
        "HPT_NAMESPACE": facts.namespace,
        "HPT_KUBE_CONTEXT": facts.kube_context,
        # a domain in the team's own account describes the cluster through the cluster's reader role there
        **(
            {
                "HPT_CLUSTER_ACCOUNT": facts.cluster_account,
                "HPT_CLUSTER_ROLE": names.role_arn(
                    partition=names.partition(facts.region),
                    account=facts.cluster_account,
                    name=names.team_cluster_reader_role(facts.cluster, facts.team),
                ),
                "HPT_KUBE_USER": names.kubeconfig_user(facts.cluster, facts.team),
            }
            if facts.in_own_account
            else {}
        ),
    }
