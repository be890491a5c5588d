"""The teams and their scheduling: priority classes, quotas, identity."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model.enums import (
    DEFAULT_BORROW_LIMIT,
    DEFAULT_MAX_CHECKPOINT_INTERVAL,
    CheckpointEnforcement,
    PodSecurityLevel,
    PreemptTeamTasks,
    SharingStrategy,
    WorkloadKind,
    interval_minutes,
)

__all__ = [
    "ComputeAllocation",
    "PriorityClass",
    "ResourceAmount",
    "SchedulingSpec",
    "StudioNetwork",
    "Team",
    "TeamIdentity",
]


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
class AcceleratorPartition:
    """GPU partitions of one MIG profile (Task Governance ``AcceleratorPartitionConfig``)."""

    #: The profile as the HyperPod CLI and the SageMaker API name it (``mig-1g.10gb``).
    type: str
    #: Partitions.
    count: int

    def __str__(self) -> str:
        """``14 mig-1g.10gb``."""
        return f"{self.count} {self.type}"


@dataclass(frozen=True, kw_only=True)
class ResourceAmount:
    """An amount of one instance type's compute, at one grain (Task Governance ``ComputeQuotaResourceConfig``).

    Exactly one grain: whole ``instances``; ``accelerators``, with vCPUs and memory following in the instance's
    ratio; or ``vcpus`` and/or ``memoryGiB`` (no accelerators), the one not given following in the ratio. The
    SageMaker API fills the missing figures the same way (``ComputeQuotaResourceConfig``).
    """

    #: Whole instances (``Count``).
    instances: int | None = field(default=None, metadata={"json_schema_extra": {"x-unit": "instances"}})
    #: Accelerators: GPUs, or Neuron devices on Trainium (``Accelerators``).
    accelerators: int | None = None
    #: vCPUs as EC2 counts them (``VCpu``); no accelerators.
    vcpus: float | None = None
    #: Memory in GiB (``MemoryInGiB``); no accelerators.
    memory_gib: float | None = field(default=None, metadata={"alias": "memoryGiB"})
    #: Partitions of a GPU (``AcceleratorPartition``), on a type whose group has a ``migConfig``; vCPUs and memory
    #: follow in the partition's share of the instance (its compute slices of 7, of the instance's GPUs).
    accelerator_partition: AcceleratorPartition | None = field(
        default=None, metadata={"alias": "acceleratorPartition"}
    )

    @property
    def given(self) -> dict[str, int | float]:
        """The ``platform.yaml`` keys set and their values, in field order (``{"accelerators": 8}``)."""
        keys = (
            ("instances", self.instances),
            ("accelerators", self.accelerators),
            ("vcpus", self.vcpus),
            ("memoryGiB", self.memory_gib),
        )
        return {key: value for key, value in keys if value is not None}

    @property
    def grains(self) -> tuple[str, ...]:
        """The ``platform.yaml`` keys set, in field order (``("accelerators",)``)."""
        partition = ("acceleratorPartition",) if self.accelerator_partition is not None else ()
        return (*self.given, *partition)

    def __str__(self) -> str:
        """``8 accelerators``, ``16 vcpus, 128 memoryGiB``, ``14 mig-1g.10gb``."""
        parts = [f"{value:g} {key}" for key, value in self.given.items()]
        if self.accelerator_partition is not None:
            parts.append(str(self.accelerator_partition))
        return ", ".join(parts)


@dataclass(frozen=True, kw_only=True)
class ComputeAllocation:
    """A team's guaranteed capacity and how it is shared."""

    #: Guarantee per instance type: whole instances (``ml.p5.48xlarge: 4``), accelerators
    #: (``{accelerators: 4}``, vCPUs, memory and EFA interfaces following in the instance's ratio), or vCPUs and/or
    #: memory (``{vcpus: 96, memoryGiB: 256}``, no accelerators).
    quotas: dict[str, int | ResourceAmount] = field(
        metadata={"examples": [{"ml.p5.48xlarge": 4}, {"ml.p5.48xlarge": {"accelerators": 4}}]}
    )
    #: Lending/borrowing strategy.
    sharing: SharingStrategy = SharingStrategy.LEND_AND_BORROW
    #: How much idle capacity the team may borrow, in percent of its guaranteed amount on each instance type
    #: (0-10,000; the documented operating range is 1-500, and validation warns outside it).
    borrow_limit: int = DEFAULT_BORROW_LIMIT
    #: Absolute borrowing ceilings per instance type (``AbsoluteBorrowLimits``). On a type named here the
    #: amount replaces ``borrowLimit``'s percentage, and the team may borrow there even without a quota.
    absolute_borrow_limits: dict[str, ResourceAmount] = field(
        default_factory=dict, metadata={"examples": [{"ml.p5.48xlarge": {"accelerators": 8}}]}
    )
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
class StudioNetwork:
    """The VPC of a team's own account that its Studio domain runs in, peered by the platform with the cluster's.

    The team stack requests a VPC peering connection from the cluster's VPC to this one and routes the cluster's
    private subnets to :attr:`cidr`; the team's Studio stack routes :attr:`route_table_ids` to the cluster's VPC
    through it and admits nothing else. Studio apps then reach the cluster's private API endpoint, whose public
    DNS name resolves to its private addresses once public access is off.
    """

    #: The VPC (``vpc-...``) in the team's account.
    vpc_id: str = field(metadata={"examples": ["vpc-0a1b2c3d4e5f60718"]})
    #: Its IPv4 CIDR: private, apart from the cluster's VPC and Service CIDRs and from other teams' Studio networks.
    cidr: str = field(metadata={"examples": ["10.60.0.0/16"]})
    #: Private subnets of that VPC for the domain (``VpcOnly``: no public subnet), in the cluster's zones or not.
    subnet_ids: tuple[str, ...] = field(metadata={"examples": [["subnet-0a1b2c3d4e5f60718"]]})
    #: The route tables of those subnets: each gets a route to the cluster's VPC through the peering connection.
    route_table_ids: tuple[str, ...] = field(metadata={"examples": [["rtb-0a1b2c3d4e5f60718"]]})


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
    #: The team's own AWS account (12 digits), where its people sign in and its data lives: a bucket, the role its
    #: pods reach it with (an EKS Pod Identity target role) and the policy of its permission set. Default: the
    #: cluster's account (the team's data is under ``teams/<team>/`` of the shared data bucket).
    account: str | None = field(default=None, metadata={"examples": ["444455556666"]})
    #: For a team with an account of its own and a Studio domain: the VPC there the domain runs in.
    studio_network: StudioNetwork | None = None
    #: The team's data must be encrypted with the platform's customer-managed key: validation fails
    #: (``HPT-KMS-REQUIRED``) when ``encryption.kmsKey`` is not set. Set it where the data classification's
    #: handling rules ask for keys the organisation controls.
    require_customer_managed_key: bool = False

    @property
    def permission_set(self) -> str:
        """The name of the team's Identity Center permission set: ``identity.permissionSetName`` or the derived one."""
        return self.identity.permission_set_name or names.permission_set(self.name)

    @property
    def effective_cost_center(self) -> str:
        """The cost center the team is charged to: :attr:`cost_center`, or the team name."""
        return self.cost_center or self.name
