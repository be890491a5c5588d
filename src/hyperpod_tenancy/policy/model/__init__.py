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

from hyperpod_tenancy.policy.model.chargeback import (
    DEFAULT_PREEMPTION_ALARM_GPU_HOURS,
    DEFAULT_RECONCILIATION_TOLERANCE,
    BillingTermSpec,
    ChargebackSpec,
    PreemptionAlarmSpec,
)
from hyperpod_tenancy.policy.model.cluster import (
    ClusterSpec,
    FsxSpec,
    HelmChartSource,
    InstanceGroup,
    KubeRayChartSource,
    KueueChartSource,
    PosixIdentitySpec,
    ResourceShape,
    SystemNodeGroup,
    UidRange,
)
from hyperpod_tenancy.policy.model.enums import (
    API_BORROW_LIMIT_RANGE,
    DEFAULT_BORROW_LIMIT,
    DEFAULT_MAX_CHECKPOINT_INTERVAL,
    DEFAULT_RESERVED_NODES,
    DEFAULT_UID_CACHE_TTL_SECONDS,
    DEFAULT_UID_RANGE,
    DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
    DOCUMENTED_BORROW_LIMIT_RANGE,
    MAX_CHECKPOINT_INTERVAL_CEILING,
    CheckpointEnforcement,
    ClassificationMismatch,
    DeepHealthCheck,
    FairnessBackend,
    PodSecurityLevel,
    PreemptTeamTasks,
    SharingStrategy,
    SupplementalGroupsPolicy,
    WebhookFailurePolicy,
    WorkloadKind,
    interval_minutes,
)
from hyperpod_tenancy.policy.model.platform import CREATE_KMS_KEY, EncryptionSpec, IdentityCenter, Platform
from hyperpod_tenancy.policy.model.team import (
    AcceleratorPartition,
    ComputeAllocation,
    PriorityClass,
    ResourceAmount,
    SchedulingSpec,
    StudioNetwork,
    Team,
    TeamIdentity,
)

__all__ = [
    "API_BORROW_LIMIT_RANGE",
    "CREATE_KMS_KEY",
    "DEFAULT_BORROW_LIMIT",
    "DEFAULT_MAX_CHECKPOINT_INTERVAL",
    "DEFAULT_PREEMPTION_ALARM_GPU_HOURS",
    "DEFAULT_RECONCILIATION_TOLERANCE",
    "DEFAULT_RESERVED_NODES",
    "DEFAULT_UID_CACHE_TTL_SECONDS",
    "DEFAULT_UID_RANGE",
    "DEFAULT_WEBHOOK_TIMEOUT_SECONDS",
    "DOCUMENTED_BORROW_LIMIT_RANGE",
    "MAX_CHECKPOINT_INTERVAL_CEILING",
    "AcceleratorPartition",
    "BillingTermSpec",
    "ChargebackSpec",
    "CheckpointEnforcement",
    "ClassificationMismatch",
    "ClusterSpec",
    "ComputeAllocation",
    "DeepHealthCheck",
    "EncryptionSpec",
    "FairnessBackend",
    "FsxSpec",
    "HelmChartSource",
    "IdentityCenter",
    "InstanceGroup",
    "KubeRayChartSource",
    "KueueChartSource",
    "Platform",
    "PodSecurityLevel",
    "PosixIdentitySpec",
    "PreemptTeamTasks",
    "PreemptionAlarmSpec",
    "PriorityClass",
    "ResourceAmount",
    "ResourceShape",
    "SchedulingSpec",
    "SharingStrategy",
    "StudioNetwork",
    "SupplementalGroupsPolicy",
    "SystemNodeGroup",
    "Team",
    "TeamIdentity",
    "UidRange",
    "WebhookFailurePolicy",
    "WorkloadKind",
    "interval_minutes",
]
