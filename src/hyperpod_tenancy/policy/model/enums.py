"""The policy's choices (enumerations), its defaults, and how an interval such as ``30m`` reads."""

from __future__ import annotations

import enum

__all__ = [
    "API_BORROW_LIMIT_RANGE",
    "DEFAULT_BORROW_LIMIT",
    "DEFAULT_MAX_CHECKPOINT_INTERVAL",
    "DEFAULT_RESERVED_NODES",
    "DEFAULT_UID_CACHE_TTL_SECONDS",
    "DEFAULT_UID_RANGE",
    "DEFAULT_WEBHOOK_TIMEOUT_SECONDS",
    "DOCUMENTED_BORROW_LIMIT_RANGE",
    "MAX_CHECKPOINT_INTERVAL_CEILING",
    "CheckpointEnforcement",
    "ClassificationMismatch",
    "DeepHealthCheck",
    "FairnessBackend",
    "PodSecurityLevel",
    "PreemptTeamTasks",
    "SharingStrategy",
    "SupplementalGroupsPolicy",
    "WebhookFailurePolicy",
    "WorkloadKind",
    "interval_minutes",
]

#: Nodes of every instance group kept outside all quotas by default, so that quotas still hold
#: while HyperPod replaces a faulty node.
DEFAULT_RESERVED_NODES = 1


#: Task Governance's documented default borrow limit (percent of the team's guaranteed amount).
DEFAULT_BORROW_LIMIT = 50

#: What the SageMaker API and CloudFormation accept for ``BorrowLimit`` (percent; API reference,
#: ``ResourceSharingConfig``: "Valid Range: Minimum value of 0. Maximum value of 10000").
API_BORROW_LIMIT_RANGE = (0, 10_000)

#: The ``BorrowLimit`` range the same API reference documents for use ("1 - 500 percent").
DOCUMENTED_BORROW_LIMIT_RANGE = (1, 500)


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
