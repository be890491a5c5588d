"""The label contract between team namespaces and the cluster-wide admission policies.

Team namespaces carry these labels; the ValidatingAdmissionPolicies read them through
``namespaceObject``, so adding a team never changes a cluster-wide object. Tenants cannot change
namespace labels (their Role has no verbs on namespaces).
"""

from __future__ import annotations

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, PodSecurityLevel, Team

#: Label selecting every tenant namespace (admission policy bindings match on it).
TENANT_LABEL = "hyperpod-tenancy.io/tenant"
#: The team a namespace belongs to.
TEAM_LABEL = "hyperpod-tenancy.io/team"
#: Prefix of the per-priority-class entitlement labels: ``priority.hyperpod-tenancy.io/<wpc>: allowed``.
PRIORITY_LABEL_PREFIX = "priority.hyperpod-tenancy.io/"
#: Value of an entitlement label.
ALLOWED = "allowed"
#: Job/pod annotation naming the checkpoint directory (must be under ``/fsx/<team>/``).
CHECKPOINT_PATH_ANNOTATION = "hyperpod-tenancy.io/checkpoint-path"
#: Job/pod annotation with the checkpoint interval, e.g. ``30m`` or ``1h``.
CHECKPOINT_INTERVAL_ANNOTATION = "hyperpod-tenancy.io/checkpoint-interval"
#: Kueue labels jobs must carry.
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
#: Standard namespace name label (set by the API server).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def priority_entitlement_label(priority_class: str) -> str:
    """Namespace label key entitling a team to ``<priority_class>-priority``."""
    return f"{PRIORITY_LABEL_PREFIX}{names.workload_priority_class(priority_class)}"


def namespace_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Every label a team namespace must carry: tenancy, entitlements and pod security admission."""
    del platform  # the contract depends on the team only today; kept for symmetry with other renderers
    labels = {
        TENANT_LABEL: "true",
        TEAM_LABEL: team.name,
        "pod-security.kubernetes.io/enforce": team.pod_security.value,
        "pod-security.kubernetes.io/warn": PodSecurityLevel.RESTRICTED.value,
        "pod-security.kubernetes.io/audit": PodSecurityLevel.RESTRICTED.value,
    }
    for pc in team.allowed_priority_classes:
        labels[priority_entitlement_label(pc)] = ALLOWED
    return labels
