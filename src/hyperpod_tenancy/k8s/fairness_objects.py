"""The Kubernetes objects each built-in fairness backend adds to the charts: the renderers' half of the backends.

The charts and the tools ask :func:`cluster_fairness_objects` and :func:`team_fairness_objects`, never which
backend a platform has. Kueue's objects are rendered by :mod:`hyperpod_tenancy.k8s.kueue`; Task Governance
creates its own (from the ``ComputeQuota`` and ``ClusterSchedulerConfig``), so it adds none. A backend added
in code passes its objects to the charts itself (``Backend.cluster_manifests`` and ``team_manifests``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.policy import Platform, Team
from hyperpod_tenancy.policy.fairness import KueueFairness, fairness_of

__all__ = ["FairnessObjects", "cluster_fairness_objects", "team_fairness_objects"]

Manifest = dict[str, Any]


@dataclass(frozen=True)
class FairnessObjects:
    """How one backend renders its Kubernetes objects."""

    #: The cluster-scoped objects of the platform chart.
    cluster: Callable[[Platform], list[Manifest]]
    #: A team's objects, placed right after its Namespace in the team chart.
    team: Callable[[Platform, Team], list[Manifest]]


_NONE = FairnessObjects(cluster=lambda _p: [], team=lambda _p, _t: [])
_RENDERED: dict[Hashable, FairnessObjects] = {
    KueueFairness.key: FairnessObjects(cluster=kueue.cluster_objects, team=kueue.team_objects),
}


def _objects_of(platform: Platform) -> FairnessObjects:
    return _RENDERED.get(fairness_of(platform).key, _NONE)


def cluster_fairness_objects(platform: Platform) -> list[Manifest]:
    """Return the fairness backend's cluster-scoped objects for the platform chart (none for a service-run backend)."""
    return _objects_of(platform).cluster(platform)


def team_fairness_objects(platform: Platform, team: Team) -> list[Manifest]:
    """Return the fairness backend's objects of one team (Kueue: its ClusterQueue and LocalQueue)."""
    return _objects_of(platform).team(platform, team)
