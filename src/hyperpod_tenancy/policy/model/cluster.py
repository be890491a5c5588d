"""The cluster part of the policy: instance groups, system nodes, FSx, POSIX identity and the charts it installs."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_tenancy.policy.model.enums import (
    DEFAULT_RESERVED_NODES,
    DEFAULT_UID_CACHE_TTL_SECONDS,
    DEFAULT_UID_RANGE,
    DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
    ClassificationMismatch,
    DeepHealthCheck,
    SupplementalGroupsPolicy,
    WebhookFailurePolicy,
)

__all__ = [
    "ClusterSpec",
    "FsxSpec",
    "HelmChartSource",
    "InstanceGroup",
    "KubeRayChartSource",
    "KueueChartSource",
    "PosixIdentitySpec",
    "ResourceShape",
    "SystemNodeGroup",
    "UidRange",
]


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
    #: Place work on this instance type by network topology: jobs may ask for their pods under one network
    #: node (``kueue.x-k8s.io/podset-required-topology``). Only on the types whose nodes carry the topology
    #: labels (:data:`hyperpod_tenancy.policy.topology.TOPOLOGY_INSTANCE_TYPES`); the same on every group of a
    #: type. On the ``kueue`` backend every job on the type is then placed by Kueue's topology-aware scheduling.
    topology_aware: bool = False
    #: Partition every GPU of the group with this MIG layout: a name of HyperPod's GPU operator configuration
    #: (``all-1g.10gb``, ``mixed-3-1g.10gb-1-4g.40gb``; :func:`hyperpod_tenancy.policy.mig.mig_configs`). Its
    #: nodes then offer partitions (``nvidia.com/mig-1g.10gb``) and no whole GPUs; quotas on the type are in
    #: ``acceleratorPartition``. The same on every group of a type.
    mig_config: str | None = None

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
