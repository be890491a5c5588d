"""cdk-hyperpod-tenancy: share one SageMaker HyperPod (EKS) GPU cluster across teams.

Public API: the policy model (:mod:`hyperpod_tenancy.policy`, pure Python), the constructs, the stacks and
the errors. All but the errors are imported on first use: ``import hyperpod_tenancy.policy`` (the CLI) never
starts jsii, and the chargeback engine and the webhook load neither pydantic nor jsii.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperpod_tenancy.errors import PolicyError, PolicyIssue, TenancyError

if TYPE_CHECKING:
    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
    from hyperpod_tenancy.constructs.cluster.vpc import VpcAttributes
    from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
    from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict, validate_platform
    from hyperpod_tenancy.stacks import ClusterStack, PlatformStage, TeamStack, zone_context

_LAZY = {
    "Platform": "hyperpod_tenancy.policy",
    "load_platform": "hyperpod_tenancy.policy",
    "platform_from_dict": "hyperpod_tenancy.policy",
    "validate_platform": "hyperpod_tenancy.policy",
    "SharedHyperPodCluster": "hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster",
    "TeamTenant": "hyperpod_tenancy.constructs.tenant.team_tenant",
    "ClusterStack": "hyperpod_tenancy.stacks",
    "PlatformStage": "hyperpod_tenancy.stacks",
    "TeamStack": "hyperpod_tenancy.stacks",
    "VpcAttributes": "hyperpod_tenancy.constructs.cluster.vpc",
    "zone_context": "hyperpod_tenancy.stacks",
}

__all__ = [
    "ClusterStack",
    "Platform",
    "PlatformStage",
    "PolicyError",
    "PolicyIssue",
    "SharedHyperPodCluster",
    "TeamStack",
    "TeamTenant",
    "TenancyError",
    "VpcAttributes",
    "load_platform",
    "platform_from_dict",
    "validate_platform",
    "zone_context",
]


def __getattr__(name: str) -> Any:
    """Import the policy, construct and stack names on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hyperpod_tenancy' has no attribute {name!r}")
