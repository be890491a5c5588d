"""Kueue's API version, the platform's cohort and label names, and the resource names quotas count."""

from __future__ import annotations

from collections.abc import Mapping

from hyperpod_tenancy.k8s import labels, workloads

__all__ = [
    "COHORT",
    "CPU",
    "EFA",
    "FAIR_SHARING_PREEMPTION_STRATEGIES",
    "INSTANCE_TYPE_LABEL",
    "KUEUE_API_VERSION",
    "KUEUE_FRAMEWORKS",
    "MANAGED_BY_LABELS",
    "MEMORY",
    "TOPOLOGY",
    "UNMANAGED_RESOURCE_PREFIXES",
]

#: API version of every Kueue object rendered here (served and stored by Kueue 0.16 and later).
KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"


#: The one cohort every team ClusterQueue joins. Our own name: the name Task Governance uses internally is
#: not documented, and the two backends never run on the same cluster.
COHORT = "hyperpod-tenancy-cohort"


#: The one Topology (the AWS network's layers, then the node) the flavors of topology-aware instance types name.
TOPOLOGY = "hyperpod-tenancy-network"


#: Node label a ResourceFlavor pins its instance type with (set by EKS on every HyperPod node).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"


#: Kubernetes resource names.
CPU = "cpu"


MEMORY = "memory"


#: Labels on every rendered object.
MANAGED_BY_LABELS: Mapping[str, str] = labels.MANAGED_BY_LABELS


#: Job integrations enabled in the Kueue configuration: the Kueue integration of every workload kind of
#: :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS` that has one (the one table admission and RBAC read
#: too). Kueue skips an integration whose CRD is not installed.
KUEUE_FRAMEWORKS: tuple[str, ...] = tuple(
    k.kueue_framework for k in workloads.WORKLOAD_KINDS if k.kueue_framework is not None
)


#: EFA interfaces: covered by the ClusterQueues (a job that holds every EFA interface of the nodes blocks every
#: other multi-node job, GPUs or not), quota = EFA interfaces per instance x instances.
EFA = "vpc.amazonaws.com/efa"


#: Resources Kueue does not account: a request for a resource no ClusterQueue covers makes a workload
#: inadmissible. Huge pages and ephemeral storage are capped by the namespace's ResourceQuota backstop
#: (``compute-ceiling``) instead.
UNMANAGED_RESOURCE_PREFIXES: tuple[str, ...] = ("ephemeral-storage", "hugepages-")


#: Fair-sharing preemption strategies (Kueue's defaults), written out so the configuration enables it.
FAIR_SHARING_PREEMPTION_STRATEGIES: tuple[str, ...] = ("LessThanOrEqualToFinalShare", "LessThanInitialShare")
