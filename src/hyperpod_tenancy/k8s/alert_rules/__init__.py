"""The platform's Prometheus alerting rules, rendered as plain data (no jsii) for the managed workspace.

The chargeback pipeline uploads them to Amazon Managed Service for Prometheus; ``promtool`` checks them in the tests.
"""

from hyperpod_tenancy.k8s.alert_rules.cluster import (
    CLUSTER_RULES_SUFFIX,
    INSTANCE_TYPE_LABEL,
    NODE_HEALTH_KEY,
    WEBHOOK_ERROR_RATIO,
    WEBHOOK_LATENCY_SHARE_OF_TIMEOUT,
    WEBHOOK_MIN_REQUESTS_PER_MINUTE,
    cluster_rules,
)
from hyperpod_tenancy.k8s.alert_rules.teams import (
    CHECKPOINTS_OVERDUE_SERIES,
    checkpoint_rule,
    checkpoint_signal_rule,
    preemption_rules,
    waiting_rule,
)

__all__ = [
    "CHECKPOINTS_OVERDUE_SERIES",
    "CLUSTER_RULES_SUFFIX",
    "INSTANCE_TYPE_LABEL",
    "NODE_HEALTH_KEY",
    "WEBHOOK_ERROR_RATIO",
    "WEBHOOK_LATENCY_SHARE_OF_TIMEOUT",
    "WEBHOOK_MIN_REQUESTS_PER_MINUTE",
    "checkpoint_rule",
    "checkpoint_signal_rule",
    "cluster_rules",
    "preemption_rules",
    "waiting_rule",
]
