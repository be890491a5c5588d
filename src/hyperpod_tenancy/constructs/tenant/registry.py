"""Which tenant each team of a cluster has: a team is added to a cluster once, however its tenant is created."""

from __future__ import annotations

import weakref

from constructs import Construct

from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.plan import TeamPlan

__all__ = ["register_tenant", "registered_tenants"]

#: The tenants created on each cluster, by team name.
_TENANTS: weakref.WeakKeyDictionary[IHyperPodCluster, dict[str, Construct]] = weakref.WeakKeyDictionary()


def registered_tenants(cluster: IHyperPodCluster) -> dict[str, Construct]:
    """Return the tenants created on ``cluster`` in this app so far, by team name (a copy)."""
    return dict(_TENANTS.get(cluster, {}))


def register_tenant(tenant: Construct, cluster: IHyperPodCluster, team: str) -> TeamPlan:
    """Return the hosted team ``team`` of the cluster's plan, registering ``tenant`` as its one tenant.

    Raises:
        TenancyError: the team is not in the policy, is flagged for a dedicated cluster, or has a tenant already.

    """
    platform = cluster.platform
    if all(t.name != team for t in platform.teams):
        known = ", ".join(t.name for t in platform.teams)
        raise TenancyError(
            f"{tenant.node.path}: team {team!r} is not in the platform policy (teams: {known})."
        )
    try:
        plan = cluster.plan.team(team)
    except KeyError:
        spec = platform.team(team)
        raise TenancyError(
            f"{tenant.node.path}: team {team!r} holds {platform.team_classification(spec)!r} data and is flagged "
            f"for a dedicated cluster; it cannot be added to this {platform.cluster.data_classification!r} cluster."
        ) from None
    added = _TENANTS.setdefault(cluster, {})
    if team in added:
        raise TenancyError(
            f"{tenant.node.path}: team {team!r} was already added to this cluster (at {added[team].node.path}); "
            "a team has one tenant."
        )
    added[team] = tenant
    return plan
