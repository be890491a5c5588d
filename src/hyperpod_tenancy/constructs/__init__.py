"""The L3 constructs: SharedHyperPodCluster and TeamTenant."""

from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.team_tenant import TeamTenant

__all__ = ["SharedHyperPodCluster", "TeamTenant"]
