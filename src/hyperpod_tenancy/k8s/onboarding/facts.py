"""What a team member needs to know to start: the facts of one team, derived from the policy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hyperpod_tenancy.k8s import fsx_dirs, labels
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.model import (
    Platform,
    PreemptTeamTasks,
    Team,
)

__all__ = [
    "ACCOUNT_STACK_OUTPUTS",
    "CLUSTER_RESOURCES",
    "CLUSTER_STACK_ID",
    "DEPLOY_TIME_OUTPUTS",
    "SAMPLE_IMAGE",
    "SAMPLE_JOB_NAME",
    "SSO_START_URL_CONTEXT",
    "ClassRule",
    "OnboardingFacts",
    "UnknownTeamError",
    "checkpoint_reasons",
    "cluster_stack_name",
    "onboarding_facts",
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


#: Output keys of the team stack whose value exists only after deployment, and what each is. Team members may
#: read their own team stack (the permission set allows ``cloudformation:DescribeStacks`` on it).
DEPLOY_TIME_OUTPUTS: Mapping[str, str] = {
    "SsoRoleArn": "the team's Identity Center role (the IAM role of your aws sso login session)",
    "StudioDomainId": "the team's SageMaker Studio domain ID",
    "StudioUrl": "the team's Studio domain URL (open it from the AWS access portal)",
}


#: Outputs of a team's stack in its own account (``<platform>-Team-<Team>-Account``), which its members may read.
ACCOUNT_STACK_OUTPUTS: Mapping[str, str] = {
    "DataBucketName": "the team's data bucket (in the team's account; the team's prefix is under it)",
    "PodsRoleArn": "the role the team's pods act as in the team's account (EKS Pod Identity target role)",
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
class OnboardingFacts:
    """Everything a member of one team needs, derived from the policy alone."""

    #: The platform's name (prefix of its stacks).
    platform: str
    #: The team.
    team: str
    #: The AWS account members sign in to (the cluster's, or the team's own) and the platform's region.
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
    #: The stack whose ``SsoRoleArn`` output names the team's Identity Center role: the team stack, or with
    #: Identity Center in another account the team's access stack (``<platform>-Team-<Team>-Access``).
    sso_role_stack_name: str = ""
    #: For a team with an account of its own: the cluster's account, and the team's stack in its own account
    #: (``<platform>-Team-<Team>-Account``, with the ``DataBucketName`` output); empty otherwise.
    cluster_account: str = ""
    account_stack_name: str = ""

    @property
    def in_own_account(self) -> bool:
        """Whether the team has an account of its own, where its members sign in and its data is."""
        return bool(self.account_stack_name)

    def output_stack(self, key: str) -> str:
        """Return the name of the stack holding the deploy-time output ``key``."""
        if key in ACCOUNT_STACK_OUTPUTS and self.account_stack_name:
            return self.account_stack_name
        if key.startswith("Studio") and self.account_stack_name:
            # a domain in the team's own account is its Studio stack's
            return names.stage_stack_name(self.platform, names.team_studio_stack_id(self.team))
        return self.sso_role_stack_name or self.stack_name if key == "SsoRoleArn" else self.stack_name

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
        account=platform.team_account(spec),
        region=platform.region,
        sso_start_url=sso_start_url,
        sso_region=platform.identity_center.region,
        permission_set=spec.permission_set,
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
        sso_role_stack_name=names.stage_stack_name(platform.name, names.team_access_stack_id(spec.name))
        if platform.identity_center_elsewhere
        else team_stack_name(platform, spec.name),
        cluster_account=platform.account if platform.team_in_own_account(spec) else "",
        account_stack_name=names.stage_stack_name(platform.name, names.team_account_stack_id(spec.name))
        if platform.team_in_own_account(spec)
        else "",
    )
