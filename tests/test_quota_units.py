"""The ResourceQuota backstop counts CPU and memory as the team's ClusterQueue does.

Kueue admits a workload on the ClusterQueue's ``nominalQuota`` + ``borrowingLimit``, in millicores and MiB. The
namespace's ResourceQuota ``compute-ceiling`` holds whatever admission lets through at the same ceiling; were it
rounded to whole cores or GiB, a fraction of an instance (a quota in vCPUs, memory or accelerators, a percentage
borrowing limit) would give it a lower figure than Kueue's, and a pod Kueue admitted would be refused by the
quota. Quantities are parsed with the Kubernetes client's own parser.
"""

from __future__ import annotations

from decimal import Decimal

import platforms
import pytest
from kubernetes.utils.quantity import parse_quantity

from hyperpod_tenancy.k8s import kueue
from hyperpod_tenancy.k8s.team_manifests.quotas import compute_ceiling
from hyperpod_tenancy.policy import Platform

PLATFORMS = {
    "reference": platforms.reference_platform,
    "borrowing-range": platforms.borrowing_range,
    "odd-fractions": platforms.odd_fractions,
}


def _cluster_queue_ceiling(platform: Platform, team: str) -> dict[str, Decimal]:
    """Sum over the team's flavors of nominalQuota + borrowingLimit, per resource."""
    (queue, *_) = kueue.team_objects(platform, platform.team(team))
    totals: dict[str, Decimal] = {}
    for flavor in queue["spec"]["resourceGroups"][0]["flavors"]:
        for resource in flavor["resources"]:
            amount = parse_quantity(resource["nominalQuota"]) + parse_quantity(resource["borrowingLimit"])
            totals[resource["name"]] = totals.get(resource["name"], Decimal(0)) + amount
    return totals


@pytest.mark.parametrize("name", sorted(PLATFORMS))
def test_cpu_and_memory_ceilings_equal_the_cluster_queues(name: str) -> None:
    platform = PLATFORMS[name]()
    for team in platform.hosted_teams:
        queue = _cluster_queue_ceiling(platform, team.name)
        backstop = compute_ceiling(platform, team)
        assert backstop is not None
        assert parse_quantity(backstop["requests.cpu"]) == queue["cpu"], (name, team.name)
        assert parse_quantity(backstop["requests.memory"]) == queue["memory"], (name, team.name)


def test_a_fraction_of_a_core_or_a_gib_is_written_exactly() -> None:
    platform = platforms.odd_fractions()
    backstop = compute_ceiling(platform, platform.team("vision"))
    assert backstop is not None
    # 5 of 192 vCPUs of 96 cores: 2500m, and 50 % more to borrow: 3750m (whole cores would say 3)
    assert backstop["requests.cpu"] == "3750m"
    # 10.5 GiB = 10752 MiB, and 50 % more: 16128 MiB (whole GiB would say 15Gi)
    assert backstop["requests.memory"] == "16128Mi"
    assert backstop["requests.hugepages-2Mi"] == "16128Mi"
