"""What the eviction collector reads and writes: the Kueue APIs, its gauges and series, the record's version."""

from __future__ import annotations

import logging
import re

from hyperpod_tenancy.runtime.kube_api import (
    cluster_access,  # noqa: F401 - part of this module's interface before the module was shared
)

__all__ = [
    "CLUSTER_QUEUES_PATH",
    "DEFAULT_SCAN_MINUTES",
    "GAUGES",
    "GPU_RESOURCE",
    "INSTANCE_TYPE_LABEL",
    "LOG",
    "OVERDUE_SERIES",
    "PREEMPTED",
    "PRIORITY_CLASS_LABEL",
    "SCHEMA_VERSION",
    "WORKLOADS_PATH",
]

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)


#: Version of the record format above; bump on an incompatible change.
SCHEMA_VERSION = 1


#: The Workload API the collector reads.
WORKLOADS_PATH = "/apis/kueue.x-k8s.io/v1beta2/workloads"


#: The ClusterQueue API (the teams' live GPU gauges).
CLUSTER_QUEUES_PATH = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


#: Live per-team gauges (GPUs, at the run's time): in use, of which borrowed, the guarantee and the ceiling.
GAUGES = ("GpusInUse", "GpusBorrowed", "GpuGuarantee", "GpuCeiling")


#: Per-team count of running workloads that may be on borrowed capacity whose checkpoint is overdue
#: (:func:`checkpoints_overdue`), a Prometheus series written to the workspace (labels ``cluster``, ``team``),
#: which the teams' rule groups alert on.
OVERDUE_SERIES = "hyperpod_tenancy_checkpoints_overdue"


#: The checkpoint scanner's period in minutes (its CronJob runs every 5 minutes).
DEFAULT_SCAN_MINUTES = 5


#: A team name (a DNS label) between the ClusterQueue name's prefix and suffix.
_TEAM = r"(?P<team>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"


GPU_RESOURCE = "nvidia.com/gpu"


PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"


INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


PREEMPTED = "Preempted"


_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")


_MINUTES = {"s": 1 / 60, "m": 1, "": 1, "h": 60, "d": 1440}


def _quantity(value: object) -> int:
    try:
        return int(float(str(value)))
    except ValueError:
        return 0
