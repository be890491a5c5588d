"""The L3 constructs: SharedHyperPodCluster, TeamTenant, ChargebackPipeline and PosixIdentityWebhook, and the IHyperPodCluster interface they share.

Imported lazily, so the pure-Python helpers under ``constructs._private`` never start jsii. The fairness
backends are in :mod:`hyperpod_tenancy.constructs.backends`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import ChargebackPipeline
    from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
    from hyperpod_tenancy.constructs.cluster.vpc import VpcAttributes
    from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
    from hyperpod_tenancy.constructs.posix_identity_webhook import PosixIdentityWebhook
    from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant

_MODULES = {
    "ChargebackPipeline": "hyperpod_tenancy.constructs.chargeback.chargeback_pipeline",
    "IHyperPodCluster": "hyperpod_tenancy.constructs.interfaces",
    "PosixIdentityWebhook": "hyperpod_tenancy.constructs.posix_identity_webhook",
    "SharedHyperPodCluster": "hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster",
    "TeamTenant": "hyperpod_tenancy.constructs.tenant.team_tenant",
    "VpcAttributes": "hyperpod_tenancy.constructs.cluster.vpc",
}

__all__ = [
    "ChargebackPipeline",
    "IHyperPodCluster",
    "PosixIdentityWebhook",
    "SharedHyperPodCluster",
    "TeamTenant",
    "VpcAttributes",
]


def __getattr__(name: str) -> Any:
    """Import a construct class on first use."""
    if name in _MODULES:
        return getattr(importlib.import_module(_MODULES[name]), name)
    raise AttributeError(f"module 'hyperpod_tenancy.constructs' has no attribute {name!r}")
