"""cdk-hyperpod-tenancy: share one SageMaker HyperPod (EKS) GPU cluster across teams.

Public API: the policy model (:mod:`hyperpod_tenancy.policy`, pure Python), the constructs, the stacks and
the errors. The construct and stack names are imported lazily, so ``import hyperpod_tenancy.policy`` (the
CLI, the chargeback engine) never starts jsii.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from hyperpod_tenancy.errors import PolicyError, PolicyIssue, TenancyError
from hyperpod_tenancy.policy import Platform, load_platform, platform_from_dict, validate_platform

if TYPE_CHECKING:
    from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
    from hyperpod_tenancy.constructs.team_tenant import TeamTenant
    from hyperpod_tenancy.stacks import ClusterStack, PlatformStage, TeamStack

_LAZY = {
    "SharedHyperPodCluster": "hyperpod_tenancy.constructs.shared_hyperpod_cluster",
    "TeamTenant": "hyperpod_tenancy.constructs.team_tenant",
    "ClusterStack": "hyperpod_tenancy.stacks",
    "PlatformStage": "hyperpod_tenancy.stacks",
    "TeamStack": "hyperpod_tenancy.stacks",
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
    "load_platform",
    "platform_from_dict",
    "validate_platform",
]


def __getattr__(name: str) -> Any:
    """Import construct and stack classes on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hyperpod_tenancy' has no attribute {name!r}")
