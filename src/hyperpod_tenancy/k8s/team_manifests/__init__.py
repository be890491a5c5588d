"""The Kubernetes objects of one team, rendered as plain manifest dicts (no jsii).

For a team ``<team>`` everything lives in namespace ``hyperpod-ns-<team>``:

* the Namespace itself, only with the ``kueue`` fairness backend. With Task Governance the service
  creates the namespace when the team's ``ComputeQuota`` is created, so the platform *patches* our
  labels onto it instead (:func:`namespace_label_patch`);
* RBAC for the team's Kubernetes group (:func:`hyperpod_tenancy.policy.names.kubernetes_group`): a Role
  and RoleBinding in the namespace, plus a read-only ClusterRole/ClusterRoleBinding for the team's own
  ClusterQueue and the cluster-wide Kueue catalogue objects;
* NetworkPolicies: default deny, DNS to kube-dns, everything inside the namespace, and egress to the
  internet except the instance metadata service and the cluster's VPC;
* a LimitRange with container defaults, a ServiceAccount for workloads (bound to the team's S3 role by an
  EKS Pod Identity association), and a static FSx for Lustre PersistentVolume + claim on ``/fsx/<team>``.

:func:`fsx_directory_job` renders, in the platform namespace :data:`SYSTEM_NAMESPACE`, the Job that
creates ``/fsx/<team>`` owned by ``root:<team GID>`` with mode ``3770`` (setgid + sticky) and the parent of the
per-person home directories ``/fsx/<team>/home`` (mode ``3770``, setgid + sticky) before teams mount it, with the one
directory mechanism of :mod:`hyperpod_tenancy.k8s.fsx_dirs`.

:func:`checkpoint_scanner` renders the team's checkpoint scanner: a CronJob in :data:`SYSTEM_NAMESPACE` that
reads ``/fsx/<team>`` read-only every 5 minutes and writes the newest checkpoint time of each running workload to
its Kueue Workload, with a Role in the team namespace limited to that.

Values of :class:`FsxVolume` may be CDK token strings: they are only ever concatenated, never parsed.
"""

from __future__ import annotations

from hyperpod_tenancy.k8s.fsx_dirs import BUSYBOX_IMAGE
from hyperpod_tenancy.k8s.team_manifests._common import (
    DEFAULT_SERVICE_ACCOUNT,
    FSX_CLAIM_NAME,
    FSX_CSI_DRIVER,
    NOBODY_UID,
    OBSERVABILITY_NAMESPACE,
    SYSTEM_NAMESPACE,
)
from hyperpod_tenancy.k8s.team_manifests.network import IMDS_CIDR
from hyperpod_tenancy.k8s.team_manifests.quotas import (
    ACCELERATOR_QUOTA_NAME,
    COMPUTE_QUOTA_NAME,
    EFA_RESOURCE,
    HUGEPAGE_RESOURCES,
    SYSTEM_PRIORITY_CLASSES,
    SYSTEM_PRIORITY_QUOTA_NAME,
    accelerator_ceiling,
    compute_ceiling,
)
from hyperpod_tenancy.k8s.team_manifests.rbac import TEAM_ROLE_NAME, namespace_label_patch, system_namespace
from hyperpod_tenancy.k8s.team_manifests.scanner import (
    CHECKPOINT_SCAN_DEADLINE_SECONDS,
    CHECKPOINT_SCAN_MINUTES,
    CHECKPOINT_SCAN_SCHEDULE,
    CHECKPOINT_SCANNER_IMAGE,
    checkpoint_scanner,
)
from hyperpod_tenancy.k8s.team_manifests.storage import (
    FsxVolume,
    fsx_directory_job,
    fsx_root_pod_spec,
    fsx_root_read_only_pod_spec,
)
from hyperpod_tenancy.k8s.team_manifests.team import team_manifests

__all__ = [
    "ACCELERATOR_QUOTA_NAME",
    "BUSYBOX_IMAGE",
    "CHECKPOINT_SCANNER_IMAGE",
    "CHECKPOINT_SCAN_DEADLINE_SECONDS",
    "CHECKPOINT_SCAN_MINUTES",
    "CHECKPOINT_SCAN_SCHEDULE",
    "COMPUTE_QUOTA_NAME",
    "DEFAULT_SERVICE_ACCOUNT",
    "EFA_RESOURCE",
    "FSX_CLAIM_NAME",
    "FSX_CSI_DRIVER",
    "HUGEPAGE_RESOURCES",
    "IMDS_CIDR",
    "NOBODY_UID",
    "OBSERVABILITY_NAMESPACE",
    "SYSTEM_NAMESPACE",
    "SYSTEM_PRIORITY_CLASSES",
    "SYSTEM_PRIORITY_QUOTA_NAME",
    "TEAM_ROLE_NAME",
    "FsxVolume",
    "accelerator_ceiling",
    "checkpoint_scanner",
    "compute_ceiling",
    "fsx_directory_job",
    "fsx_root_pod_spec",
    "fsx_root_read_only_pod_spec",
    "namespace_label_patch",
    "system_namespace",
    "team_manifests",
]
