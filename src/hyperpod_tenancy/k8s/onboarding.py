"""What a team member needs to start: one pure function of the policy, read by the CLI and the team stack alike.

:func:`onboarding_facts` gathers, for one team of a platform, everything ``hyperpod-tenancy onboarding`` prints
and every team stack outputs (:func:`stack_outputs`): the Identity Center profile (``aws sso login``), the
cluster and how to reach its private API endpoint, the namespace, LocalQueue, the priority classes the team may
use with their checkpoint rules, the FSx directory and home directory, the S3 prefix and the Studio domain.
The samples a member submits are rendered here too: a ``kubectl`` Job (:func:`kubectl_job`) and a
``hyp create hyp-pytorch-job`` line (:func:`hyp_command`), with the labels, checkpoint declaration and FSx volume
the admission policies require; :func:`offboarding_steps` gives the commands that stop a person's work, keep
their UID record and archive their home directory.

The checkpoint rule here (:func:`checkpoint_reasons`) restates in Python what the checkpoint policy's CEL decides
(:mod:`hyperpod_tenancy.k8s.admission`, ``_needs_checkpoint``): a test holds the two to the same answer on the
synthesized policies.

Values that exist only once the stacks are deployed are read with a command: the team stack's own (the Studio
domain's ID and URL, the team's Identity Center role) are its outputs (:data:`DEPLOY_TIME_OUTPUTS`,
:func:`describe_output_command`); the shared ones (the data bucket, the FSx file system) are resources of the
cluster stack (:data:`CLUSTER_RESOURCES`, :func:`cluster_resource_command`), which no team stack re-exports.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, labels, team_manifests, workloads
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME, SYSTEM_NAMESPACE
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.model import (
    Platform,
    PreemptTeamTasks,
    Team,
)

__all__ = [
    "CLUSTER_RESOURCES",
    "CLUSTER_STACK_ID",
    "DEPLOY_TIME_OUTPUTS",
    "LIFECYCLE_APP_TYPES",
    "SAMPLE_IMAGE",
    "SAMPLE_JOB_NAME",
    "SSO_START_URL_CONTEXT",
    "ClassRule",
    "OnboardingFacts",
    "StackOutput",
    "UnknownTeamError",
    "archive_job",
    "checkpoint_reasons",
    "cluster_resource_command",
    "cluster_stack_name",
    "describe_output_command",
    "hyp_command",
    "hyp_script",
    "kubectl_job",
    "lifecycle_config_name",
    "lifecycle_environment",
    "offboarding_steps",
    "onboarding_facts",
    "stack_outputs",
    "team_stack_name",
]

#: Name of the sample workloads (the kubectl Job and the ``hyp`` job).
SAMPLE_JOB_NAME = "onboarding-check"
#: Image of the samples: prints who the pod runs as and lists the team directory and the home directory.
SAMPLE_IMAGE = fsx_dirs.BUSYBOX_IMAGE
#: The sample's command: the identity the webhook stamped, and the two directories it mounts.
_SAMPLE_SCRIPT = "id && ls -ld {team_dir} $HOME"
#: Subdirectory of the team directory the samples declare as their checkpoint directory.
_CHECKPOINTS = "checkpoints"
#: The Studio app types a team's lifecycle configuration is attached to (``StudioLifecycleConfigAppType``).
LIFECYCLE_APP_TYPES = ("JupyterLab", "CodeEditor")
#: ``StudioLifecycleConfigName``: at most 63 characters (AWS::SageMaker::StudioLifecycleConfig schema).
_LIFECYCLE_NAME_MAX = 63

#: Output keys of the team stack whose value exists only after deployment, and what each is. Team members may
#: read their own team stack (the permission set allows ``cloudformation:DescribeStacks`` on it).
DEPLOY_TIME_OUTPUTS: Mapping[str, str] = {
    "SsoRoleArn": "the team's Identity Center role (the IAM role of your aws sso login session)",
    "StudioDomainId": "the team's SageMaker Studio domain ID",
    "StudioUrl": "the team's Studio domain URL (open it from the AWS access portal)",
}
#: Shared values of the cluster stack a member may need: resource type and logical-ID prefix of the resource
#: (stable: both are retained stateful resources), and what it is. A team stack does not repeat them as outputs
#: (an output of an imported value re-exports another stack's output, cfn-lint W6001).
CLUSTER_RESOURCES: Mapping[str, tuple[str, str, str]] = {
    "DataBucket": (
        "AWS::S3::Bucket",
        "ClusterStorageDataBucket",
        "the data bucket holding the team's S3 prefix",
    ),
    "FsxFileSystem": (
        "AWS::FSx::FileSystem",
        "ClusterFileSystem",
        "the FSx for Lustre file system (pods reach it through the claim, not its ID)",
    ),
}


class UnknownTeamError(ValueError):
    """The team is not a hosted team of the platform; the message names the teams there are."""


@dataclass(frozen=True, kw_only=True)
class ClassRule:
    """A priority class a team may use, and whether its work must declare a checkpoint."""

    #: The class's name in ``platform.yaml``.
    name: str
    #: The value of ``kueue.x-k8s.io/priority-class`` (``<name>-priority``).
    workload_priority_class: str
    #: Its weight (higher preempts lower).
    weight: int
    #: Whether the class is ``preemptible``.
    preemptible: bool
    #: Longest checkpoint interval work at this class may declare.
    max_checkpoint_interval: str
    #: Why its work must declare a checkpoint (empty: it need not).
    checkpoint_reasons: tuple[str, ...]

    @property
    def checkpoint_required(self) -> bool:
        """Whether work at this class must declare a checkpoint in this team."""
        return bool(self.checkpoint_reasons)


@dataclass(frozen=True, kw_only=True)
class StackOutput:
    """One CloudFormation output of a team stack."""

    #: Output key (logical ID).
    key: str
    #: What it is.
    description: str
    #: The value; ``None`` for a value known only at deploy time (:data:`DEPLOY_TIME_OUTPUTS`).
    value: str | None


@dataclass(frozen=True, kw_only=True)
class OnboardingFacts:
    """Everything a member of one team needs, derived from the policy alone."""

    #: The platform's name (prefix of its stacks).
    platform: str
    #: The team.
    team: str
    #: AWS account and region of the platform.
    account: str
    region: str
    #: Identity Center: the access portal URL (``None``: not in the policy, see :attr:`start_url_hint`), its
    #: region, the permission set (the role name of the profile) and the profile and session names.
    sso_start_url: str | None
    sso_region: str
    permission_set: str
    profile: str
    sso_session: str
    #: The EKS (and HyperPod) cluster and the kubeconfig context alias.
    cluster: str
    kube_context: str
    #: The VPC of the cluster (its API endpoint is private).
    vpc_cidr: str
    #: Kubernetes: namespace, LocalQueue, group, FSx claim.
    namespace: str
    local_queue: str
    kubernetes_group: str
    fsx_claim: str
    #: The team directory on FSx, the parent of the home directories, and where a pod sees its home.
    fsx_directory: str
    home_parent: str
    home_mount: str
    #: The team's S3 prefix in the data bucket.
    s3_prefix: str
    #: The Studio domain name (``None``: the team has no Studio domain).
    studio_domain: str | None
    #: The priority classes the team may use, highest weight first.
    classes: tuple[ClassRule, ...]
    #: ``deny`` or ``warn``: what admission does with work that lacks a required checkpoint.
    checkpoint_enforcement: str
    #: Whether the team borrows idle capacity of other teams.
    borrows: bool
    #: Whether ``hyp create hyp-pytorch-job`` is admitted (the fairness backend queues it as one workload).
    hyp_supported: bool
    #: The instance type of the samples (the team's first quota).
    instance_type: str
    #: The team stack's name (``<platform>-Team-<Team>`` under ``PlatformStage``).
    stack_name: str

    @property
    def sample_class(self) -> ClassRule:
        """The class the samples use: the team's highest."""
        return self.classes[0]

    @property
    def checkpoint_directory(self) -> str:
        """The directory the samples declare as their checkpoint directory (under the team directory)."""
        return f"{self.fsx_directory}/{_CHECKPOINTS}/{SAMPLE_JOB_NAME}"

    @property
    def start_url_hint(self) -> str:
        """The access portal URL, or where to find it."""
        return self.sso_start_url or (
            "<your AWS access portal URL: IAM Identity Center console, Dashboard, Settings summary>"
        )


#: Stack ID of the cluster stack in :class:`~hyperpod_tenancy.stacks.PlatformStage`.
CLUSTER_STACK_ID = names.CLUSTER_STACK_ID
#: CDK context key naming the Identity Center access portal URL (``cdk.json`` ``context``), which the policy does
#: not hold: the team stacks bake it into the Studio lifecycle script and the CLI reads it from ``cdk.json``.
SSO_START_URL_CONTEXT = "hyperpod-tenancy:ssoStartUrl"


def cluster_stack_name(platform: Platform) -> str:
    """Name of the cluster stack under :class:`~hyperpod_tenancy.stacks.PlatformStage`: ``<platform>-Cluster``."""
    return names.stage_stack_name(platform.name, names.CLUSTER_STACK_ID)


def team_stack_name(platform: Platform, team: str) -> str:
    """Name of a team's stack under :class:`~hyperpod_tenancy.stacks.PlatformStage`: ``<platform>-Team-<Team>``."""
    return names.stage_stack_name(platform.name, names.team_stack_id(team))


def checkpoint_reasons(platform: Platform, team: Team, class_name: str) -> tuple[str, ...]:
    """Why work of ``team`` at ``class_name`` must declare a checkpoint (empty: it need not).

    The checkpoint policy's three ways to be preempted: a ``preemptible`` class, a team that borrows (its work may
    run on borrowed quota and be reclaimed), and, with ``preemptTeamTasks: LowerPriority``, a higher class the
    team may also use (its own work preempts this).
    """
    pc = platform.priority_class(class_name)
    reasons = []
    if pc.preemptible:
        reasons.append(f"{class_name} is preemptible")
    if labels.team_borrows(platform, team):
        reasons.append(f"team {team.name} borrows idle capacity, which lenders reclaim by preemption")
    if team.compute.preempt_team_tasks is PreemptTeamTasks.LOWER_PRIORITY:
        higher = [c for c in team.allowed_priority_classes if platform.priority_class(c).weight > pc.weight]
        if higher:
            reasons.append(f"the team's own {', '.join(higher)} work preempts it")
    return tuple(reasons)


def onboarding_facts(platform: Platform, team: str, *, sso_start_url: str | None = None) -> OnboardingFacts:
    """Return the onboarding facts of ``team`` on ``platform``.

    Args:
        platform: the validated policy.
        team: a team the cluster hosts.
        sso_start_url: the Identity Center access portal URL (``https://<alias>.awsapps.com/start``); the policy
            does not hold it. Default: none (the facts say where to find it).

    Raises:
        UnknownTeamError: ``team`` is not a hosted team of the platform (the message lists them).

    """
    hosted = {t.name: t for t in platform.hosted_teams}
    spec = hosted.get(team)
    if spec is None:
        listed = ", ".join(sorted(hosted)) or "none"
        raise UnknownTeamError(
            f"team {team!r} is not a team on cluster {platform.cluster.name} (teams: {listed})"
        )
    classes = sorted(
        (platform.priority_class(name) for name in spec.allowed_priority_classes),
        key=lambda pc: (-pc.weight, pc.name),
    )
    cluster = platform.cluster.name
    profile = names.aws_profile(cluster, spec.name)
    return OnboardingFacts(
        platform=platform.name,
        team=spec.name,
        account=platform.account,
        region=platform.region,
        sso_start_url=sso_start_url,
        sso_region=platform.identity_center.region,
        permission_set=spec.identity.permission_set_name or names.permission_set(spec.name),
        profile=profile,
        sso_session=platform.name,
        cluster=cluster,
        kube_context=profile,
        vpc_cidr=platform.cluster.vpc_cidr,
        namespace=names.namespace(spec.name),
        local_queue=names.local_queue(spec.name),
        kubernetes_group=names.kubernetes_group(spec.name),
        fsx_claim=FSX_CLAIM_NAME,
        fsx_directory=names.fsx_directory(spec.name),
        home_parent=f"{names.fsx_directory(spec.name)}/{fsx_dirs.HOME_DIRECTORY}",
        home_mount=fsx_dirs.HOME_MOUNT_PATH,
        s3_prefix=names.data_prefix(spec.name),
        studio_domain=names.studio_domain(cluster, spec.name) if spec.studio else None,
        classes=tuple(
            ClassRule(
                name=pc.name,
                workload_priority_class=pc.workload_priority_class,
                weight=pc.weight,
                preemptible=pc.preemptible,
                max_checkpoint_interval=pc.max_checkpoint_interval,
                checkpoint_reasons=checkpoint_reasons(platform, spec, pc.name),
            )
            for pc in classes
        ),
        checkpoint_enforcement=platform.scheduling.checkpoint_enforcement.value,
        borrows=labels.team_borrows(platform, spec),
        hyp_supported=fairness_of(platform).admits_hyp_pytorch_job,
        instance_type=next(iter(spec.compute.quotas), platform.cluster.instance_groups[0].instance_type),
        stack_name=team_stack_name(platform, spec.name),
    )


def _sample_command(facts: OnboardingFacts) -> list[str]:
    return ["sh", "-c", _SAMPLE_SCRIPT.format(team_dir=facts.fsx_directory)]


def kubectl_job(facts: OnboardingFacts) -> dict[str, Any]:
    """Return the sample ``batch/v1`` Job a member applies with ``kubectl apply -f``.

    It carries the team's LocalQueue and its highest priority class, the team's FSx claim mounted at
    ``/fsx/<team>`` (so paths in the container are the paths on FSx) and, when that class requires a checkpoint
    in this team, its declaration in the container's environment, as :func:`hyp_command` makes it. What the POSIX identity webhook adds (UID, GID, home directory) is not written here.
    """
    rule = facts.sample_class
    metadata: dict[str, Any] = {
        "name": SAMPLE_JOB_NAME,
        "namespace": facts.namespace,
        "labels": {
            labels.QUEUE_NAME_LABEL: facts.local_queue,
            labels.PRIORITY_CLASS_LABEL: rule.workload_priority_class,
        },
    }
    container: dict[str, Any] = {
        "name": "check",
        "image": SAMPLE_IMAGE,
        "command": _sample_command(facts),
        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
    }
    if rule.checkpoint_required:
        container["env"] = [
            {"name": labels.CHECKPOINT_DIR_ENV, "value": facts.checkpoint_directory},
            {"name": labels.CHECKPOINT_INTERVAL_ENV, "value": rule.max_checkpoint_interval},
        ]
    container["volumeMounts"] = [{"name": facts.fsx_claim, "mountPath": facts.fsx_directory}]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 3600,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [container],
                    "volumes": [
                        {"name": facts.fsx_claim, "persistentVolumeClaim": {"claimName": facts.fsx_claim}}
                    ],
                }
            },
        },
    }


def hyp_command(facts: OnboardingFacts) -> list[str]:
    """Return the sample ``hyp create hyp-pytorch-job`` command line (argv, ``hyp`` first).

    The checkpoint is declared in the container's environment
    (:data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_DIR_ENV`, ``…_INTERVAL``) under the claim's mount at
    ``/fsx/<team>``, the one place a checkpoint is declared. On the ``kueue`` backend admission refuses the kind (:attr:`OnboardingFacts.hyp_supported`).
    """
    rule = facts.sample_class
    argv = [
        "hyp",
        "create",
        "hyp-pytorch-job",
        "--job-name",
        SAMPLE_JOB_NAME,
        "--namespace",
        facts.namespace,
        "--image",
        SAMPLE_IMAGE,
        "--command",
        json.dumps(_sample_command(facts)),
        "--instance-type",
        facts.instance_type,
        "--node-count",
        "1",
        "--queue-name",
        facts.local_queue,
        "--priority",
        rule.workload_priority_class,
        "--volume",
        f"name={facts.fsx_claim},type=pvc,mount_path={facts.fsx_directory},claim_name={facts.fsx_claim}",
    ]
    if rule.checkpoint_required:
        environment = {
            labels.CHECKPOINT_DIR_ENV: facts.checkpoint_directory,
            labels.CHECKPOINT_INTERVAL_ENV: rule.max_checkpoint_interval,
        }
        argv += ["--environment", json.dumps(environment)]
    return argv


def hyp_script(facts: OnboardingFacts) -> str:
    """Return a shell script running :func:`hyp_command` (one option per line)."""
    argv = hyp_command(facts)
    words = [shlex.quote(w) for w in argv]
    lines = [" ".join(words[:3])]
    i = 3
    while i < len(words):
        lines.append("  " + " ".join(words[i : i + 2]))
        i += 2
    body = " \\\n".join(lines)
    return (
        "#!/usr/bin/env bash\n"
        f"# Submit a small job to team {facts.team}'s queue with the HyperPod CLI (sagemaker-hyperpod 3.12).\n"
        f"# First: aws sso login --profile {facts.profile}; the kubeconfig context {facts.kube_context}.\n"
        "set -euo pipefail\n"
        f"{body}\n"
    )


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
        if facts.studio_domain is not None or not key.startswith("Studio")
    ]
    return static + deploy


def describe_output_command(facts: OnboardingFacts, key: str) -> str:
    """Return the ``aws cloudformation describe-stacks`` command printing one output of the team stack."""
    query = f"Stacks[0].Outputs[?OutputKey=='{key}'].OutputValue"
    return (
        f"aws cloudformation describe-stacks --region {facts.region} --stack-name {facts.stack_name} "
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
    }


#: jq filters printing a selected item as ``Kind/name`` and as ``resource.group/name`` (what kubectl deletes).
_JQ_KIND_NAME = ' | "\\(.kind)/\\(.metadata.name)"'
_JQ_RESOURCE_NAME = ' | "\\(.kind | ascii_downcase).\\(.apiVersion | split("/")[0])/\\(.metadata.name)"'
#: JMESPath of the POSIX identity webhook's DynamoDB table among the cluster stack's resources.
_TABLE_QUERY = (
    "StackResources[?ResourceType=='AWS::DynamoDB::Table' && "
    "starts_with(LogicalResourceId, 'ClusterPosixIdentity')].PhysicalResourceId"
)
#: ``--expression-attribute-values`` of the offboarding mark: the time it is set (a shell word).
_OFFBOARDED_AT = '"{\\":t\\": {\\"S\\": \\"$(date -u +%FT%TZ)\\"}}"'


def _workload_resources(*, inference: bool) -> str:
    """Return the workload resources a team writes, as ``kubectl get`` names them (``jobs.batch,...``)."""
    kinds = workloads.kinds_for(inference=inference)
    return ",".join(f"{k.resource}.{k.group}" if k.group else k.resource for k in kinds)


def offboarding_steps(
    facts: OnboardingFacts,
    person: str,
    *,
    inference: bool,
    cluster_stack: str,
    instance_arn: str,
    group_id: str,
) -> list[tuple[str, list[str]]]:
    """Return the offboarding runbook of ``person`` in the team as (step, commands) pairs.

    ``person`` is the Identity Center user name (the webhook's person key is ``sso:<user name>``). The steps:
    revoke the person's access (their Identity Center group membership), stop their running work (every workload
    and pod whose ``hyperpod-tenancy.io/posix-user`` annotation names them), read and keep their UID record (never
    deleted: a UID is never reused), and archive then remove their home directory with a platform Job in
    ``hyperpod-tenancy-system`` (as root, on the file system root: only the platform sees the archive).
    """
    key = f"sso:{person}"
    select = f'.items[] | select(.metadata.annotations["{labels.POSIX_USER_ANNOTATION}"] == "{key}")'
    show = shlex.quote(select + _JQ_KIND_NAME)
    refs = shlex.quote(select + _JQ_RESOURCE_NAME)
    pods = shlex.quote(select + " | .metadata.name")
    uids = shlex.quote(f'.items[] | .metadata.annotations["{labels.POSIX_UID_ANNOTATION}"] // empty')
    kinds = _workload_resources(inference=inference)
    ns = facts.namespace
    region = facts.region
    sso = facts.sso_region
    user = shlex.quote(
        json.dumps({"UniqueAttribute": {"AttributePath": "userName", "AttributeValue": person}})
    )
    item = shlex.quote(json.dumps({"pk": {"S": f"person#{key}"}}))
    tables = f'"{_TABLE_QUERY}"'
    create = f'hyperpod-tenancy onboarding {facts.team} --offboard {shlex.quote(person)} --uid "$UID_N" --archive-job'
    return [
        (
            "1. Revoke access (an Identity Center administrator): remove the person from the team's group. Sessions "
            "already issued stay valid until they expire (the permission set's session duration, 8 hours).",
            [
                f"STORE=$(aws sso-admin describe-instance --region {sso} --instance-arn {instance_arn} "
                "--query IdentityStoreId --output text)",
                f'USER_ID=$(aws identitystore get-user-id --region {sso} --identity-store-id "$STORE" '
                f"--alternate-identifier {user} --query UserId --output text)",
                f"MEMBERSHIP=$(aws identitystore get-group-membership-id --region {sso} --identity-store-id "
                f'"$STORE" --group-id {group_id} --member-id UserId="$USER_ID" --query MembershipId --output text)',
                f'aws identitystore delete-group-membership --region {sso} --identity-store-id "$STORE" '
                '--membership-id "$MEMBERSHIP"',
            ],
        ),
        (
            f"2. Stop their running work (a teammate in team {facts.team}, or the platform on-call): delete every "
            f"workload and pod the POSIX identity webhook recorded as {key}. Repeat once the sessions of step 1 "
            "have expired.",
            [
                f"kubectl get {kinds} -n {ns} -o json | jq -r {show}",
                f"kubectl get {kinds} -n {ns} -o json | jq -r {refs} | xargs -r -n1 kubectl delete -n {ns}",
                f"kubectl get pods -n {ns} -o json | jq -r {pods} | xargs -r -n1 kubectl delete pod -n {ns}",
            ],
        ),
        (
            f"3. Keep the UID record (a platform administrator): read the UID; delete neither person#{key} nor "
            "uid#<UID> (the webhook never reuses a UID; a returning person gets theirs back); mark it offboarded.",
            [
                f"TABLE=$(aws cloudformation describe-stack-resources --region {region} --stack-name "
                f"{cluster_stack} --query {tables} --output text)",
                f'UID_N=$(aws dynamodb get-item --region {region} --table-name "$TABLE" --consistent-read '
                f"--key {item} --query Item.uid.N --output text)",
                f'aws dynamodb update-item --region {region} --table-name "$TABLE" --key {item} '
                f"--condition-expression 'attribute_exists(pk)' --update-expression 'SET offboardedAt = :t' "
                f"--expression-attribute-values {_OFFBOARDED_AT}",
                f"kubectl get {kinds},pods -n {ns} -o json | jq -r {uids} | sort -u   # UIDs still running here",
            ],
        ),
        (
            f"4. Archive, then remove, the home directory {facts.home_parent}/$UID_N (the platform on-call, with "
            f"cluster-admin): a Job in {SYSTEM_NAMESPACE} runs as root on the file system root (claim "
            f"{names.fsx_root_claim(facts.team)}), writes /fsx/.offboarded/{facts.team}/$UID_N.tar.gz (root's, "
            "mode 0700: no team sees it), checks the archive and only then removes the directory.",
            [
                f"JOB=$({create} | kubectl create -f - -o name)",
                f'kubectl wait -n {SYSTEM_NAMESPACE} --for=condition=complete "$JOB" --timeout=2h',
                f'kubectl logs -n {SYSTEM_NAMESPACE} "$JOB"',
            ],
        ),
    ]


def archive_job(facts: OnboardingFacts, uid: int) -> dict[str, Any]:
    """Return the platform Job that archives ``/fsx/<team>/home/<uid>`` and then removes it.

    In :data:`~hyperpod_tenancy.k8s.team_manifests.SYSTEM_NAMESPACE` (Pod Security ``baseline``), on the team's
    file-system-root claim, as root with the runtime's default capabilities (root must read a 0700 directory it
    does not own), pinned to healthy HyperPod nodes like the FSx directory Job (their AMI has the Lustre client).
    The script refuses a symbolic link, verifies the archive before removing anything, and never touches another
    path.
    """
    home = f"{names.FSX_MOUNT_PATH}/{facts.team}/{fsx_dirs.home_subpath(uid)}"
    archive_dir = f"{names.FSX_MOUNT_PATH}/.offboarded/{facts.team}"
    archive = f"{archive_dir}/{uid}.tar.gz"
    script = "\n".join(
        [
            "set -eu",
            f"home={shlex.quote(home)}; dir={shlex.quote(archive_dir)}; archive={shlex.quote(archive)}",
            'if [ -L "$home" ] || [ ! -d "$home" ]; then echo "$home is not a directory; nothing done" >&2; exit 2; fi',
            'if [ -e "$archive" ]; then echo "$archive exists already; nothing done" >&2; exit 3; fi',
            'umask 077; mkdir -p "$dir"; chmod 0700 "$(dirname "$dir")" "$dir"',
            'tar -C "$(dirname "$home")" -czf "$archive.partial" "$(basename "$home")"',
            'tar -tzf "$archive.partial" >/dev/null && mv "$archive.partial" "$archive"',
            'rm -rf -- "$home"',
            'echo "archived to $archive ($(wc -c < "$archive") bytes) and removed $home"',
        ]
    )
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "generateName": "offboard-home-",
            "namespace": SYSTEM_NAMESPACE,
            "labels": labels.object_labels(facts.team),
            "annotations": {labels.POSIX_UID_ANNOTATION: str(uid)},
        },
        "spec": {
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels.object_labels(facts.team)},
                # root with the default capabilities: it reads and removes files the person owns
                "spec": team_manifests.fsx_root_pod_spec(
                    facts.team,
                    container={
                        "name": "archive",
                        "image": fsx_dirs.BUSYBOX_IMAGE,
                        "command": ["sh", "-c", script],
                        "securityContext": {"allowPrivilegeEscalation": False},
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "64Mi"},
                            "limits": {"cpu": "1", "memory": "256Mi"},
                        },
                        "volumeMounts": [{"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH}],
                    },
                ),
            },
        },
    }
