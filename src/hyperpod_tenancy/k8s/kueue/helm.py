"""Values for the upstream Kueue Helm chart: the manager configuration the platform runs Kueue with."""

from __future__ import annotations

from typing import Any

import yaml

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.kueue._common import (
    FAIR_SHARING_PREEMPTION_STRATEGIES,
    KUEUE_FRAMEWORKS,
    UNMANAGED_RESOURCE_PREFIXES,
)
from hyperpod_tenancy.policy.model import (
    Platform,
)

__all__ = ["kueue_helm_values"]


def kueue_helm_values(platform: Platform) -> dict[str, Any]:
    """Values for the upstream Kueue Helm chart (v0.19.2) for the ``kueue`` fairness backend.

    The chart takes the whole manager configuration as one YAML string
    (``managerConfig.controllerManagerConfigYaml``, ``config.kueue.x-k8s.io/v1beta2``); this renders the
    chart's defaults plus:

    * ``fairSharing.preemptionStrategies`` when ``scheduling.fair_share`` is true (in config v1beta2 the
      presence of ``fairSharing`` enables it; without it ClusterQueue weights are ignored);
    * the job integrations of :data:`KUEUE_FRAMEWORKS`;
    * ``manageJobsWithoutQueueName`` limited to tenant namespaces (label ``hyperpod-tenancy.io/tenant``), so
      a workload that slips past the admission policies waits for a queue instead of running outside
      every quota;
    * ``resources.excludeResourcePrefixes`` (:data:`UNMANAGED_RESOURCE_PREFIXES`: huge pages and ephemeral
      storage, which the ResourceQuota backstop caps); EFA interfaces are covered by the ClusterQueues;
    * ``metrics.enableClusterQueueResources`` for per-queue usage and quota metrics (chargeback).
    """
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443", "enableClusterQueueResources": True},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 5,
                "LocalQueue.kueue.x-k8s.io": 1,
                "Cohort.kueue.x-k8s.io": 1,
                "ClusterQueue.kueue.x-k8s.io": 1,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 50, "burst": 100},
        "manageJobsWithoutQueueName": True,
        "managedJobsNamespaceSelector": {"matchLabels": {labels.TENANT_LABEL: "true"}},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
        "resources": {"excludeResourcePrefixes": list(UNMANAGED_RESOURCE_PREFIXES)},
    }
    if platform.scheduling.fair_share:
        config["fairSharing"] = {"preemptionStrategies": list(FAIR_SHARING_PREEMPTION_STRATEGIES)}
    return {"managerConfig": {"controllerManagerConfigYaml": yaml.safe_dump(config, sort_keys=False)}}
