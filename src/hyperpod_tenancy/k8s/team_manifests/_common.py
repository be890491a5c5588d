"""What every object of a team's manifests shares: the platform's namespaces and names, labels and metadata."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy.model import (
    Team,
)

__all__ = [
    "DEFAULT_SERVICE_ACCOUNT",
    "FSX_CLAIM_NAME",
    "FSX_CSI_DRIVER",
    "NOBODY_UID",
    "OBSERVABILITY_NAMESPACE",
    "SYSTEM_NAMESPACE",
    "Manifest",
]

Manifest = dict[str, Any]


#: Namespace of the platform's own workloads (the FSx directory Jobs). Teams have no access to it.
SYSTEM_NAMESPACE = "hyperpod-tenancy-system"


#: Default name of the ServiceAccount team workloads run as; bind it to the team's S3 role with an
#: EKS Pod Identity association (namespace ``hyperpod-ns-<team>``, this service account).
DEFAULT_SERVICE_ACCOUNT = "team-workloads"


#: Name of the PersistentVolumeClaim on ``/fsx/<team>`` in every team namespace (``claimName: fsx``).
FSX_CLAIM_NAME = "fsx"


#: CSI driver of FSx for Lustre.
FSX_CSI_DRIVER = "fsx.csi.aws.com"


#: Namespace of the HyperPod observability add-on's collector, which scrapes metrics from workload pods
#: (Ray, inference and training metrics endpoints). Teams are granted nothing in it.
OBSERVABILITY_NAMESPACE = "hyperpod-observability"


#: The unprivileged UID the checkpoint scanner runs as (``nobody``); its only group is the team's GID.
NOBODY_UID = 65534


_RBAC_GROUP = "rbac.authorization.k8s.io"


_KUEUE_GROUP = "kueue.x-k8s.io"


_READ = ("get", "list", "watch")


_WRITE = ("get", "list", "watch", "create", "update", "patch", "delete")


def _labels(team: Team | None = None) -> dict[str, str]:
    return labels.object_labels(None if team is None else team.name)


def _meta(name: str, team: Team | None, namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": _labels(team)}
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _rule(
    group: str, resources: Sequence[str], verbs: Sequence[str], *, resource_names: Sequence[str] = ()
) -> Manifest:
    rule: Manifest = {"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
    if resource_names:
        rule["resourceNames"] = list(resource_names)
    return rule
