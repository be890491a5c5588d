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
#: Value of an entitlement label that entitles the namespace to the class.
ALLOWED = "allowed"
#: Value of an entitlement label for a platform class the team may not use. Every class of the platform is
#: rendered explicitly, ``allowed`` or ``denied``: the CDK patch handler applies a strategic merge that never
#: removes a key a later patch leaves out, so only an explicit value revokes a class on update.
DENIED = "denied"
#: ``"true"`` when the team's work may run on capacity borrowed from other teams (and can be preempted when
#: the lender reclaims it), else ``"false"``. Admission reads it to decide where checkpoints are required.
BORROWS_LABEL = "hyperpod-tenancy.io/borrows"
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


def team_borrows(platform: Platform, team: Team) -> bool:
    """Whether ``team``'s work may run on borrowed capacity (the value of :data:`BORROWS_LABEL`).

    Derived from :meth:`Platform.effective_sharing` (the one sharing rule both fairness backends render):
    Task Governance ``LendAndBorrow`` with a ``BorrowLimit`` above 0, the Kueue ``borrowingLimit`` above 0.
    """
    return platform.effective_sharing(team).borrows and team.compute.borrow_limit > 0


def namespace_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Every label a team namespace must carry: tenancy, entitlements, borrowing and pod security admission.

    Every priority class of the platform gets an entitlement label, :data:`ALLOWED` for the team's
    ``allowed_priority_classes`` and :data:`DENIED` for the others, so that applying the labels of a new policy
    over the old ones (a strategic merge, which never removes keys) revokes a class that was removed.
    """
    labels = {
        TENANT_LABEL: "true",
        TEAM_LABEL: team.name,
        "pod-security.kubernetes.io/enforce": team.pod_security.value,
        "pod-security.kubernetes.io/warn": PodSecurityLevel.RESTRICTED.value,
        "pod-security.kubernetes.io/audit": PodSecurityLevel.RESTRICTED.value,
    }
    allowed = set(team.allowed_priority_classes)
    for pc in platform.scheduling.priority_classes:
        labels[priority_entitlement_label(pc.name)] = ALLOWED if pc.name in allowed else DENIED
    for (
        name
    ) in team.allowed_priority_classes:  # a class unknown to the platform is a policy error; keep it visible
        labels.setdefault(priority_entitlement_label(name), ALLOWED)
    labels[BORROWS_LABEL] = "true" if team_borrows(platform, team) else "false"
    return labels


def revoked_namespace_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Labels that withdraw every entitlement of ``team``'s namespace (the patch applied when the team is removed).

    Every entitlement label becomes :data:`DENIED` and :data:`BORROWS_LABEL` ``"false"``; the tenancy and pod
    security labels stay, so the admission policies keep governing the namespace. Explicit values rather than
    ``null``: CDK drops nulls when it renders a patch, and the strategic merge keeps keys a patch leaves out.
    """
    labels = {
        key: DENIED for key in namespace_labels(platform, team) if key.startswith(PRIORITY_LABEL_PREFIX)
    }
    labels[BORROWS_LABEL] = "false"
    return labels
