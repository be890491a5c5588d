"""The tenancy policy: one plain-Python description of the shared cluster and its teams.

Everything else (constructs, cdk8s charts, the CLI) reads these objects; nothing here imports jsii.
Objects are frozen dataclasses with keyword-only fields. Build them from YAML with
:func:`hyperpod_tenancy.policy.load_platform` or directly in Python, then call
:func:`hyperpod_tenancy.policy.validate_platform` (the loader does that for you).

The loader and the JSON Schema of ``platform.yaml`` read keys, types and defaults from these dataclasses. A field's
YAML key is its camelCase name unless its ``metadata`` names an ``alias``; ``metadata`` holds only pydantic
``Field`` keywords (``alias``, ``examples``, ``json_schema_extra``), and this module imports no pydantic.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from hyperpod_tenancy.chargeback.model import BillingRule, SharedCostRule, UnknownTeams
from hyperpod_tenancy.policy import names

#: Nodes of every instance group kept outside all quotas by default, so that quotas still hold
#: while HyperPod replaces a faulty node.
DEFAULT_RESERVED_NODES = 1
#: Task Governance's documented default borrow limit (percent of the team's guaranteed amount).
DEFAULT_BORROW_LIMIT = 50
#: Default longest checkpoint interval of a priority class: an eviction loses at most an hour of the job's work.
DEFAULT_MAX_CHECKPOINT_INTERVAL = "1h"
#: Longest ``maxCheckpointInterval`` a priority class may set (a day: beyond it the bound bounds nothing).
MAX_CHECKPOINT_INTERVAL_CEILING = "24h"
#: Default first and last UID the POSIX identity webhook allocates to people (100 000 people, above the GIDs
#: and the UIDs directories usually hand out).
DEFAULT_UID_RANGE = (200_000, 299_999)
#: Default seconds the API server waits for the POSIX identity webhook before applying its failure policy.
DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 5
#: Default seconds the webhook keeps a resolved person -> UID mapping in memory.
DEFAULT_UID_CACHE_TTL_SECONDS = 300


def interval_minutes(text: str) -> int | None:
    """Minutes of an interval written ``<n>m`` or ``<n>h`` (``n`` a positive integer without leading zero).

    Returns ``None`` for anything else (``0m``, ``1h30m``, ``30``, ``1d``): the same grammar admission accepts
    in ``HYPERPOD_TENANCY_CHECKPOINT_INTERVAL``.
    """
    digits, unit = text[:-1], text[-1:]
    if unit not in ("m", "h") or not digits.isascii() or not digits.isdigit() or digits.startswith("0"):
        return None
    return int(digits) * (60 if unit == "h" else 1)


class FairnessBackend(enum.StrEnum):
    """Which scheduler enforces quotas, lending and borrowing."""

    #: HyperPod Task Governance: ``ClusterSchedulerConfig`` + one ``ComputeQuota`` per team.
    TASK_GOVERNANCE = "task-governance"
    #: Self-managed Kueue: the charts emit ClusterQueues, LocalQueues, Cohort and priority classes.
    KUEUE = "kueue"


class SharingStrategy(enum.StrEnum):
    """How a team shares its idle guaranteed capacity (Task Governance ``ResourceSharingConfig``)."""

    #: Lend idle capacity to other teams and borrow theirs, up to ``borrow_limit`` percent.
    LEND_AND_BORROW = "lend-and-borrow"
    #: Lend idle capacity, never borrow.
    LEND = "lend"
    #: Neither lend nor borrow: the quota is private.
    DONT_LEND = "dont-lend"

    @property
    def api_value(self) -> str:
        """The value the SageMaker API and CloudFormation expect (``LendAndBorrow``...)."""
        return {"lend-and-borrow": "LendAndBorrow", "lend": "Lend", "dont-lend": "DontLend"}[self.value]

    @property
    def lends(self) -> bool:
        """Whether other teams may borrow this team's idle capacity."""
        return self is not SharingStrategy.DONT_LEND

    @property
    def borrows(self) -> bool:
        """Whether this team may borrow other teams' idle capacity."""
        return self is SharingStrategy.LEND_AND_BORROW

    def borrowing_limit(self, nominal: int, borrow_limit: int) -> int:
        """Most a team may borrow on top of a guaranteed ``nominal`` amount (whole units, floored).

        ``floor(nominal x borrow_limit / 100)`` when this strategy borrows, else 0. The Kueue ClusterQueues
        (``borrowingLimit``) and the per-namespace ResourceQuota backstop both use this one rule.
        """
        return nominal * borrow_limit // 100 if self.borrows else 0


class PreemptTeamTasks(enum.StrEnum):
    """Whether higher-priority work of a team preempts its own lower-priority work."""

    LOWER_PRIORITY = "LowerPriority"
    NEVER = "Never"


class WorkloadKind(enum.StrEnum):
    """What a team mostly runs; inference teams get extra priority guardrails."""

    TRAINING = "training"
    INFERENCE = "inference"


class PodSecurityLevel(enum.StrEnum):
    """Kubernetes Pod Security Standards levels."""

    PRIVILEGED = "privileged"
    BASELINE = "baseline"
    RESTRICTED = "restricted"


class ClassificationMismatch(enum.StrEnum):
    """What to do with a team whose data classification differs from the cluster's."""

    #: Refuse the platform: a namespace is an organisational boundary, not a security boundary.
    REFUSE = "refuse"
    #: Keep the team off this cluster and flag it for a dedicated cluster/account.
    DEDICATED_CLUSTER = "dedicated-cluster"


class CheckpointEnforcement(enum.StrEnum):
    """How the admission policy treats preemptible work without a checkpoint declaration."""

    DENY = "deny"
    WARN = "warn"


class SupplementalGroupsPolicy(enum.StrEnum):
    """Whether tenant pods run with ``supplementalGroupsPolicy: Strict`` (KEP-3619, beta in Kubernetes 1.33).

    Under Kubernetes' default (``Merge``) the container runtime adds the groups an image's ``/etc/group`` lists
    for the container's user, which a crafted image can use to join another team's GID. ``Strict`` adds only the
    pod's own groups; kubelet refuses a pod asking for it on a node whose runtime cannot (containerd 2.0 or CRI-O
    1.31 are needed; the node reports ``status.features.supplementalGroupsPolicy``).
    """

    #: The webhook sets ``Strict`` while every node of the cluster reports support, and nothing otherwise.
    AUTO = "auto"
    #: The webhook always sets ``Strict`` and the validating policy refuses any other value: for clusters whose
    #: every node is known to support it (Kubernetes 1.33 or later).
    STRICT = "strict"
    #: Never set (the runtime's default merge of the image's groups).
    MERGE = "merge"


class WebhookFailurePolicy(enum.StrEnum):
    """What the API server does with a pod when the POSIX identity webhook does not answer.

    The ``failurePolicy`` of the ``MutatingWebhookConfiguration``: a decision the platform owner makes
    explicitly, there is no default.
    """

    #: Reject the request: while the webhook or DynamoDB does not answer, no workload is created in a team
    #: namespace (scheduling stops), but nothing runs with a wrong identity.
    FAIL = "Fail"
    #: Admit the request unmutated: work keeps being scheduled, but its pods carry whatever identity they asked
    #: for (the validating policy still refuses root and foreign GIDs, not a teammate's UID) while they write
    #: to ``/fsx``.
    IGNORE = "Ignore"


class DeepHealthCheck(enum.StrEnum):
    """HyperPod on-start deep health checks."""

    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"


@dataclass(frozen=True, kw_only=True)
class ResourceShape:
    """Schedulable resources of one instance (used to turn instance counts into Kueue quantities)."""

    #: Accelerators per instance (GPUs, or Neuron devices on Trainium).
    accelerators: int
    #: vCPUs per instance as EC2 counts them (two threads per core).
    vcpus: int
    #: Memory per instance in GiB.
    memory_gib: int = field(metadata={"alias": "memoryGiB"})
    #: Extended resource name of the accelerator.
    accelerator_resource: str = "nvidia.com/gpu"
    #: EFA interfaces per instance (``vpc.amazonaws.com/efa``, the AWS EFA device plugin's resource). They gate
    #: multi-node jobs like GPUs do, so quotas and the ResourceQuota backstop count them. Default 0: a pod of
    #: the team may then request none on this type; set it for a type with EFA.
    efa_interfaces: int = 0


@dataclass(frozen=True, kw_only=True)
class InstanceGroup:
    """A HyperPod instance group: identical nodes that team quotas are carved from."""

    #: Instance group name (``^[a-zA-Z0-9](-*[a-zA-Z0-9])*$``, 1-63).
    name: str
    #: HyperPod instance type, e.g. ``ml.p5.48xlarge``.
    instance_type: str
    #: Number of instances.
    count: int
    #: Nodes kept outside every team quota (spare capacity while nodes recover).
    reserved: int = DEFAULT_RESERVED_NODES
    #: 1 disables hyperthreading (common for training); 2 keeps it.
    threads_per_core: int = 1
    #: Checks HyperPod runs when a node starts.
    deep_health_checks: tuple[DeepHealthCheck, ...] = (
        DeepHealthCheck.INSTANCE_STRESS,
        DeepHealthCheck.INSTANCE_CONNECTIVITY,
    )
    #: Availability zone of the group's subnet. Default: the platform's first zone.
    availability_zone: str | None = None
    #: Optional SageMaker training plan ARN that supplies the capacity.
    training_plan_arn: str | None = None
    #: Secondary EBS volume size (mounted at ``/opt/sagemaker``).
    ebs_volume_gib: int = field(default=500, metadata={"alias": "ebsVolumeGiB"})
    #: Resources per instance. Default: looked up from the built-in catalogue.
    resources: ResourceShape | None = None

    @property
    def quota_capacity(self) -> int:
        """Instances that team quotas may promise: ``count - reserved``."""
        return self.count - self.reserved


@dataclass(frozen=True, kw_only=True)
class SystemNodeGroup:
    """Small EKS managed node group for cluster add-ons (CoreDNS, Kueue, webhooks)."""

    #: EC2 instance type (not an ``ml.`` type).
    instance_type: str = "m7i.xlarge"
    #: Number of nodes.
    count: int = 2


@dataclass(frozen=True, kw_only=True)
class FsxSpec:
    """FSx for Lustre shared by all teams (one directory per team)."""

    #: Storage capacity in GiB (PERSISTENT_2: 1200, 2400 or a multiple of 2400).
    storage_capacity_gib: int = field(default=4800, metadata={"alias": "storageCapacityGiB"})
    #: FSx for Lustre deployment type.
    deployment_type: str = "PERSISTENT_2"
    #: Throughput per TiB of storage (PERSISTENT_2: 125, 250, 500 or 1000).
    per_unit_storage_throughput: int = 250


@dataclass(frozen=True, kw_only=True)
class UidRange:
    """The UIDs the POSIX identity webhook allocates, one per person, never reused."""

    #: First UID (at least 1000: below are system users).
    first: int = DEFAULT_UID_RANGE[0]
    #: Last UID (at most 2147483647, the largest ``runAsUser`` Kubernetes accepts).
    last: int = DEFAULT_UID_RANGE[1]

    @property
    def size(self) -> int:
        """How many people the range can hold."""
        return self.last - self.first + 1


@dataclass(frozen=True, kw_only=True)
class PosixIdentitySpec:
    """The POSIX identity webhook: every pod in a team namespace runs as its submitter's UID and the team's GID.

    A mutating admission webhook resolves the submitter from the request's IAM session, allocates a UID on
    first sight from ``uidRange`` (kept in a DynamoDB table) and stamps the pod templates; a validating policy
    re-checks every pod. The section is required because ``failurePolicy`` is (``HPT-POSIX-FAILURE-POLICY``).
    """

    #: ``Fail``: while the webhook or DynamoDB does not answer, no workload is created in a team namespace
    #: (scheduling stops, nothing runs with a wrong identity). ``Ignore``: workloads are admitted without the
    #: identity stamp (pods run as whatever non-root UID they ask for, possibly a teammate's, and write to
    #: ``/fsx`` as that UID). Required, no default: the platform owner chooses.
    failure_policy: WebhookFailurePolicy | None = None
    #: UIDs allocated to people (one each, never reused). Default 200000-299999.
    uid_range: UidRange = field(default_factory=UidRange)
    #: Seconds the API server waits for the webhook before applying ``failurePolicy`` (1-30).
    timeout_seconds: int = DEFAULT_WEBHOOK_TIMEOUT_SECONDS
    #: Seconds a replica keeps a person's resolved UID in memory before reading DynamoDB again (1-3600).
    cache_ttl_seconds: int = DEFAULT_UID_CACHE_TTL_SECONDS
    #: The server image the webhook runs, pinned by tag or digest (e.g. your ECR copy,
    #: ``<account>.dkr.ecr.<region>.amazonaws.com/hyperpod-tenancy-webhook:0.1.0``). Default: ``cdk deploy``
    #: builds it from the ``Dockerfile`` shipped inside the installed package and pushes it to the CDK asset
    #: repository (Docker is needed where you deploy, not where you synthesize).
    image_uri: str | None = None
    #: Kubernetes group whose members may open a shell, attach, port-forward, proxy or add an ephemeral
    #: container in any team member's pod (the platform's on-call). Each use is allowed, logged by the webhook
    #: as an ``audit: break-glass`` line and recorded as a Warning Event on the pod. Default: none (only the
    #: person a pod runs as may reach into it; controllers keep their exemptions).
    break_glass_group: str | None = None
    #: ``auto``: the webhook sets ``supplementalGroupsPolicy: Strict`` on tenant pods while every node reports
    #: support for it (``status.features.supplementalGroupsPolicy``), so an image's ``/etc/group`` cannot add
    #: groups; ``strict``: always, and the validating policy requires it; ``merge``: never.
    supplemental_groups_policy: SupplementalGroupsPolicy = SupplementalGroupsPolicy.AUTO


@dataclass(frozen=True, kw_only=True)
class HelmChartSource:
    """Where the HyperPod dependencies Helm chart comes from.

    The chart is only published in the ``aws/sagemaker-hyperpod-cli`` git repository; mirror it to an
    OCI registry you own (``helm package`` + ``helm push``) or vendor it as a local directory.
    Exactly one of ``oci_repository`` (with ``version``) or ``directory`` is set.
    """

    #: ``oci://`` repository, e.g. your ECR mirror.
    oci_repository: str | None = None
    #: Chart version in that repository.
    version: str | None = None
    #: Local directory with the chart (dependencies already built).
    directory: str | None = None


@dataclass(frozen=True, kw_only=True)
class KueueChartSource:
    """Upstream Kueue Helm chart used by the ``kueue`` fairness backend."""

    #: OCI repository of the upstream chart.
    repository: str = "oci://registry.k8s.io/kueue/charts/kueue"
    #: Pinned chart version (matches the Kueue shipped by Task Governance).
    version: str = "0.19.2"


@dataclass(frozen=True, kw_only=True)
class KubeRayChartSource:
    """KubeRay operator Helm chart: serves the ``ray.io`` kinds (RayJob, RayCluster) teams may submit."""

    #: Helm repository of the chart (the KubeRay project's public repository).
    repository: str = "https://ray-project.github.io/kuberay-helm/"
    #: Pinned version of the ``kuberay-operator`` chart.
    version: str = "1.4.2"


@dataclass(frozen=True, kw_only=True)
class ClusterSpec:
    """The shared EKS + HyperPod cluster."""

    #: Name of the HyperPod cluster and the EKS cluster (createOnly: changing it replaces both).
    name: str
    #: EKS Kubernetes minor version (Task Governance needs >= 1.30).
    kubernetes_version: str = "1.33"
    #: Availability zones of the VPC subnets (at least two: EKS requires it). Named explicitly
    #: because GPU capacity lives in specific zones.
    availability_zones: tuple[str, ...]
    #: CIDR of the VPC the platform creates.
    vpc_cidr: str = "10.192.0.0/16"
    #: Kubernetes Service CIDR of the EKS cluster (ClusterIPs); private, /12 to /24, outside ``vpc_cidr``.
    #: Set explicitly so team NetworkPolicies can keep it out of team egress. createOnly on EKS.
    service_cidr: str = "172.20.0.0/16"
    #: GPU (and other) instance groups.
    instance_groups: tuple[InstanceGroup, ...]
    #: EKS managed node group for system pods.
    system_node_group: SystemNodeGroup = field(default_factory=SystemNodeGroup)
    #: Shared FSx for Lustre file system.
    fsx: FsxSpec = field(default_factory=FsxSpec)
    #: Source of the HyperPod dependencies Helm chart.
    hyperpod_helm_chart: HelmChartSource
    #: Source of the upstream Kueue chart (``kueue`` backend only).
    kueue_chart: KueueChartSource = field(default_factory=KueueChartSource)
    #: Source of the KubeRay operator chart (installed on every platform: teams may submit Ray kinds).
    kuberay_chart: KubeRayChartSource = field(default_factory=KubeRayChartSource)
    #: Install the HyperPod observability add-on with an Amazon Managed Prometheus workspace.
    observability: bool = True
    #: Data classification the cluster is approved for; every team must match it.
    data_classification: str
    #: What to do with a team whose classification differs.
    on_data_classification_mismatch: ClassificationMismatch = ClassificationMismatch.REFUSE
    #: The POSIX identity webhook (its ``failurePolicy`` is required).
    posix_identity: PosixIdentitySpec = field(default_factory=PosixIdentitySpec)


@dataclass(frozen=True, kw_only=True)
class PriorityClass:
    """A scheduling priority. Task Governance materialises it as WorkloadPriorityClass ``<name>-priority``."""

    #: Name (``[a-z0-9]([-a-z0-9]*[a-z0-9])?``, at most 40 characters).
    name: str
    #: Weight 0-100; higher preempts lower.
    weight: int
    #: Work at this priority may run on borrowed capacity and be preempted when the lender returns,
    #: so it must declare a checkpoint.
    preemptible: bool = False
    #: Longest checkpoint interval work at this class may declare (``<n>m`` or ``<n>h``, at most
    #: :data:`MAX_CHECKPOINT_INTERVAL_CEILING`): the most GPU time one eviction can throw away. Admission denies
    #: a longer ``HYPERPOD_TENANCY_CHECKPOINT_INTERVAL``. Default :data:`DEFAULT_MAX_CHECKPOINT_INTERVAL`.
    max_checkpoint_interval: str = DEFAULT_MAX_CHECKPOINT_INTERVAL

    @property
    def max_checkpoint_minutes(self) -> int | None:
        """:attr:`max_checkpoint_interval` in minutes (``None`` if it is not ``<n>m`` or ``<n>h``)."""
        return interval_minutes(self.max_checkpoint_interval)

    @property
    def workload_priority_class(self) -> str:
        """The Kueue WorkloadPriorityClass name jobs put in ``kueue.x-k8s.io/priority-class``."""
        return names.workload_priority_class(self.name)


@dataclass(frozen=True, kw_only=True)
class SchedulingSpec:
    """Cluster-wide scheduling policy (Task Governance ``ClusterSchedulerConfig``)."""

    #: Priority classes (at most 10).
    priority_classes: tuple[PriorityClass, ...]
    #: Fair-share borrowing by weight (``FairShare: Enabled``); off means first-come-first-served.
    fair_share: bool = True
    #: Let teams lend and borrow idle capacity at all.
    idle_resource_sharing: bool = True
    #: Treatment of preemptible work without a checkpoint declaration.
    checkpoint_enforcement: CheckpointEnforcement = CheckpointEnforcement.DENY


@dataclass(frozen=True, kw_only=True)
class ComputeAllocation:
    """A team's guaranteed capacity and how it is shared."""

    #: Guaranteed instances per instance type.
    quotas: dict[str, int] = field(
        metadata={"examples": [{"ml.p5.48xlarge": 4}], "json_schema_extra": {"x-unit": "instances"}}
    )
    #: Lending/borrowing strategy.
    sharing: SharingStrategy = SharingStrategy.LEND_AND_BORROW
    #: How much idle capacity the team may borrow, in percent of its guaranteed amount (1-500).
    borrow_limit: int = DEFAULT_BORROW_LIMIT
    #: Fair-share weight 0-100 (only used when fair share is enabled).
    fair_share_weight: int = 0
    #: Whether the team's higher-priority work preempts its own lower-priority work.
    preempt_team_tasks: PreemptTeamTasks = PreemptTeamTasks.LOWER_PRIORITY


@dataclass(frozen=True, kw_only=True)
class TeamIdentity:
    """How a team's people reach the cluster and what POSIX identity their files get."""

    #: IAM Identity Center group (identity store group ID) assigned the team's permission set.
    group_id: str
    #: POSIX GID owning ``/fsx/<team>`` (mode 3770: setgid + sticky).
    posix_gid: int
    #: Identity Center permission set name. Default: the team name in PascalCase.
    permission_set_name: str | None = None


@dataclass(frozen=True, kw_only=True)
class Team:
    """One tenant of the shared cluster."""

    #: DNS label; becomes namespace ``hyperpod-ns-<name>`` (createOnly: renaming replaces the quota).
    name: str
    #: Guaranteed compute and sharing.
    compute: ComputeAllocation
    #: Identity Center group and POSIX GID.
    identity: TeamIdentity
    #: Priority classes the team may label its work with.
    allowed_priority_classes: tuple[str, ...]
    #: Data classification of the team's data. Default: the cluster's classification.
    data_classification: str | None = None
    #: Training or inference.
    workload: WorkloadKind = WorkloadKind.TRAINING
    #: Pod Security Standards level enforced in the team namespace (warn/audit are always restricted).
    #: ``privileged`` is refused (``HPT-POD-SECURITY-PRIVILEGED``): it gives node root on shared nodes.
    pod_security: PodSecurityLevel = PodSecurityLevel.BASELINE
    #: Create a SageMaker Studio domain for the team.
    studio: bool = True
    #: Cost center the team's charges and resource tags go to. Default: the team name.
    cost_center: str | None = None
    #: The team's data must be encrypted with the platform's customer-managed key: validation fails
    #: (``HPT-KMS-REQUIRED``) when ``encryption.kmsKey`` is not set. Set it where the data classification's
    #: handling rules ask for keys the organisation controls.
    require_customer_managed_key: bool = False

    @property
    def effective_cost_center(self) -> str:
        """The cost center the team is charged to: :attr:`cost_center`, or the team name."""
        return self.cost_center or self.name


#: ``encryption.kmsKey`` value that creates the platform's key.
CREATE_KMS_KEY = "create"


@dataclass(frozen=True, kw_only=True)
class EncryptionSpec:
    """The platform-wide customer-managed KMS key (optional; without it AWS-managed keys encrypt everything)."""

    #: ``create`` (a key created in the cluster stack: retained, rotation on) or the ARN of an existing key in
    #: the platform's region. Used for the CloudWatch log groups, the Studio domains' volumes, the team data and
    #: report buckets (SSE-KMS with a bucket key), FSx for Lustre and DynamoDB tables. Default: none.
    kms_key: str | None = field(
        default=None,
        metadata={
            "examples": [
                "create",
                "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            ]
        },
    )


@dataclass(frozen=True, kw_only=True)
class IdentityCenter:
    """The account's IAM Identity Center instance."""

    #: Instance ARN, ``arn:aws:sso:::instance/ssoins-...``.
    instance_arn: str
    #: Region Identity Center lives in (the SSO role path has no region segment in us-east-1).
    region: str


#: Default relative mismatch between the month's charges and the bill above which a report is flagged (0.5 %).
DEFAULT_RECONCILIATION_TOLERANCE = 0.005
#: Default GPU-hours a team may lose to preemption in a day before the preemption alarm fires
#: (8 a day is the "240 GPU-hours a month thrown away" of the chargeback issue).
DEFAULT_PREEMPTION_ALARM_GPU_HOURS = 8


@dataclass(frozen=True, kw_only=True)
class BillingTermSpec:
    """A billing rule and idle owner, signed by the cost-center owners, in force from a date until the next term.

    ``rule`` and ``idleOwner`` have no default: who pays for guaranteed and idle capacity is a decision, not a
    setting (``HPT-CHARGEBACK-RULE``, ``HPT-CHARGEBACK-IDLE-OWNER``).
    """

    #: First day of a month (``YYYY-MM-01``) from which the term applies; re-running an earlier month keeps the
    #: term that was in force then.
    effective_from: str = field(metadata={"examples": ["2026-07-01"]})
    #: ``reservation`` (a team pays its guarantee used or not, a borrower what it borrowed, lenders are credited)
    #: or ``usage`` (a team pays what it ran).
    rule: BillingRule | None = None
    #: Who pays for capacity no quota covers (reserved, unallocated and recovering nodes): a cost center, or
    #: ``shared`` (split by guarantee).
    idle_owner: str | None = None
    #: How the cluster's other lines (FSx, EKS, system nodes, NAT, Prometheus, the pipeline) are split.
    shared_costs: SharedCostRule = SharedCostRule.IDLE_OWNER
    #: Who signed the term off: the cost-center owners, or where their sign-off is recorded; every report names it
    #: (``HPT-CHARGEBACK-SIGN-OFF``).
    signed_off_by: str | None = field(
        default=None, metadata={"examples": ["cc-research and cc-platform, FIN-1234"]}
    )
    #: Why the term starts on a day that is not the first of a quarter; without it such a term is an error
    #: (``HPT-CHARGEBACK-QUARTER``): changing the billing rule mid-quarter is not defensible unless acknowledged.
    mid_quarter_reason: str | None = None


@dataclass(frozen=True, kw_only=True)
class PreemptionAlarmSpec:
    """The alarm on GPU time thrown away by preemption (it fires within minutes, not at month end)."""

    #: GPU-hours lost by one team in one day above which the alarm fires.
    gpu_hours_per_team_per_day: int = DEFAULT_PREEMPTION_ALARM_GPU_HOURS


@dataclass(frozen=True, kw_only=True)
class ChargebackSpec:
    """The monthly chargeback: billing terms, fallback prices, reconciliation and the preemption alarm.

    Optional: without a ``chargeback:`` section the platform has no chargeback pipeline.
    """

    #: Billing terms by effective date (at least one).
    billing_terms: tuple[BillingTermSpec, ...]
    #: USD per GPU-hour per instance type, used where the month's CUR has no cluster usage line for it.
    prices: dict[str, float] = field(
        default_factory=dict,
        metadata={
            "examples": [{"ml.p5.48xlarge": 12.29}],
            "json_schema_extra": {"x-unit": "USD per GPU-hour"},
        },
    )
    #: Relative mismatch between the month's charges and the bill above which the report is flagged (0.005 = 0.5 %).
    reconciliation_tolerance: float = DEFAULT_RECONCILIATION_TOLERANCE
    #: A namespace with usage or evictions that is no team of this platform: ``fail`` (the reconciliation fails:
    #: the report's header names it, the offline command exits 3, the monthly message says FAILED) or ``bill``
    #: (billed under its own name as cost center, without a guarantee, with a note).
    unknown_teams: UnknownTeams = UnknownTeams.FAIL
    #: The preemption alarm.
    preemption_alarm: PreemptionAlarmSpec = field(default_factory=PreemptionAlarmSpec)
    #: Where the usage-report operator's Helm chart is mirrored (``ociRepository`` + ``version``, or a vendored
    #: ``directory``; it is published only in the ``awslabs/sagemaker-hyperpod-usage-report`` repository).
    #: Default: the operator is not installed and the collectors' tables come from elsewhere (a warning says so).
    usage_report_chart: HelmChartSource | None = None


@dataclass(frozen=True, kw_only=True)
class Platform:
    """The whole tenancy policy: one cluster, its scheduling policy and its teams."""

    #: Short name; prefixes stack names.
    name: str
    #: Target AWS account (12 digits).
    account: str
    #: Target region.
    region: str
    #: The shared cluster.
    cluster: ClusterSpec
    #: Priorities and fair-share settings.
    scheduling: SchedulingSpec
    #: Identity Center instance.
    identity_center: IdentityCenter
    #: Tenants.
    teams: tuple[Team, ...]
    #: Task Governance (default) or self-managed Kueue.
    fairness_backend: FairnessBackend = FairnessBackend.TASK_GOVERNANCE
    #: Monthly chargeback. Default: none (no chargeback pipeline).
    chargeback: ChargebackSpec | None = None
    #: Customer-managed encryption key. Default: AWS-managed keys.
    encryption: EncryptionSpec = field(default_factory=EncryptionSpec)

    def team(self, name: str) -> Team:
        """Return the team called ``name``.

        Raises:
            KeyError: no such team.

        """
        for team in self.teams:
            if team.name == name:
                return team
        raise KeyError(name)

    def team_classification(self, team: Team) -> str:
        """Return the team's data classification, defaulting to the cluster's."""
        return team.data_classification or self.cluster.data_classification

    @property
    def hosted_teams(self) -> tuple[Team, ...]:
        """Teams that run on this cluster (teams flagged for a dedicated cluster are left out)."""
        return tuple(t for t in self.teams if self.team_classification(t) == self.cluster.data_classification)

    @property
    def dedicated_cluster_teams(self) -> tuple[Team, ...]:
        """Teams whose classification differs from the cluster's and need a cluster of their own."""
        return tuple(t for t in self.teams if self.team_classification(t) != self.cluster.data_classification)

    def effective_sharing(self, team: Team) -> SharingStrategy:
        """Return the sharing strategy in force for ``team``.

        The team's own strategy, or ``DONT_LEND`` for every team when ``scheduling.idleResourceSharing`` is off
        (nothing is lent or borrowed anywhere then). Both fairness backends render from this one rule.
        """
        if not self.scheduling.idle_resource_sharing:
            return SharingStrategy.DONT_LEND
        return team.compute.sharing

    def priority_class(self, name: str) -> PriorityClass:
        """Return the priority class called ``name``.

        Raises:
            KeyError: no such priority class.

        """
        for pc in self.scheduling.priority_classes:
            if pc.name == name:
                return pc
        raise KeyError(name)

    def instance_group_for(self, instance_type: str) -> tuple[InstanceGroup, ...]:
        """Instance groups of the given type."""
        return tuple(g for g in self.cluster.instance_groups if g.instance_type == instance_type)
