"""Every label and annotation key the platform writes or reads, and the labels of its own objects.

The one home of label keys and values (names of objects are in :mod:`hyperpod_tenancy.policy.names`):

* the metadata every object the platform renders carries (:data:`MANAGED_BY_LABELS`, :func:`object_labels`);
* the label contract between team namespaces and the cluster-wide admission policies. Team namespaces carry
  these labels; the ValidatingAdmissionPolicies read them through ``namespaceObject``, so adding a team never
  changes a cluster-wide object. Tenants cannot change namespace labels (their Role has no verbs on namespaces);
* the labels and annotations jobs carry (Kueue's queue and priority class, the checkpoint declaration).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from hyperpod_tenancy.k8s.ceilings import accelerator_ceiling
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.borrowing import may_borrow
from hyperpod_tenancy.policy.model import Platform, PodSecurityLevel, PreemptTeamTasks, Team

#: Standard label naming the tool that manages an object.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
#: Value of :data:`MANAGED_BY_LABEL` on every object the platform renders: the name of the tool (the
#: ``hyperpod-tenancy`` command, the ``hyperpod-tenancy.io/`` label domain).
MANAGED_BY = "hyperpod-tenancy"
#: Labels on every object the platform renders (read-only; copy it to extend it).
MANAGED_BY_LABELS: Mapping[str, str] = MappingProxyType({MANAGED_BY_LABEL: MANAGED_BY})
#: Label selecting every tenant namespace (admission policy bindings match on it).
TENANT_LABEL = "hyperpod-tenancy.io/tenant"
#: The team a namespace belongs to.
TEAM_LABEL = "hyperpod-tenancy.io/team"
#: Prefix of the per-priority-class entitlement labels: ``priority.hyperpod-tenancy.io/<wpc>: allowed``.
PRIORITY_LABEL_PREFIX = "priority.hyperpod-tenancy.io/"
#: Value of an entitlement label that entitles the namespace to the class.
ALLOWED = "allowed"
#: Prefix of the per-accelerator entitlement labels: ``accelerator.hyperpod-tenancy.io/<name>: allowed`` where
#: ``<name>`` is the extended resource's name after its vendor domain (``gpu``, ``mig-1g.10gb``,
#: ``neurondevice``). A pod may request an accelerator only where its namespace's label says ``allowed``: those
#: the team's ResourceQuota ``accelerator-ceiling`` grants above 0 (:func:`accelerator_entitlement_labels`).
ACCELERATOR_LABEL_PREFIX = "accelerator.hyperpod-tenancy.io/"
#: Value of an entitlement label for a platform class the team may not use. Every class of the platform is
#: rendered explicitly, ``allowed`` or ``denied``: the CDK patch handler applies a strategic merge that never
#: removes a key a later patch leaves out, so only an explicit value revokes a class on update.
DENIED = "denied"
#: ``"true"`` when the team's work may run on capacity borrowed from other teams (and can be preempted when
#: the lender reclaims it), else ``"false"``. Admission reads it to decide where checkpoints are required.
BORROWS_LABEL = "hyperpod-tenancy.io/borrows"
#: ``"true"`` when the team's own work at a higher priority class preempts its lower-priority work
#: (``compute.preemptTeamTasks: LowerPriority``), else ``"false"``. Admission reads it, with the entitlement
#: labels, to require checkpoints of work the team's own higher classes may preempt.
PREEMPTS_OWN_WORK_LABEL = "hyperpod-tenancy.io/preempts-own-work"
#: The team's POSIX GID (a decimal string) on its namespace: the POSIX identity policy requires it as every pod's
#: ``runAsGroup`` and ``fsGroup`` (the webhook writes the same key as an annotation on the workloads it stamps).
POSIX_GID_LABEL = "hyperpod-tenancy.io/posix-gid"
#: Annotations the POSIX identity webhook writes on a workload and its pod templates: who it resolved (the person
#: key, e.g. ``sso:alice@example.com``), their UID and the team GID (decimal strings).
POSIX_USER_ANNOTATION = "hyperpod-tenancy.io/posix-user"
POSIX_UID_ANNOTATION = "hyperpod-tenancy.io/posix-uid"
POSIX_GID_ANNOTATION = POSIX_GID_LABEL
#: Pod-template annotation of the POSIX identity webhook's Deployment: the hash of its configuration file.
WEBHOOK_CONFIG_HASH_ANNOTATION = "hyperpod-tenancy.io/config-sha256"
#: ``reportingController`` of the Events the POSIX identity webhook records (a break-glass use).
WEBHOOK_REPORTING_CONTROLLER = "hyperpod-tenancy.io/posix-identity-webhook"
#: Former annotation naming the checkpoint directory; refused on a workload and its pod templates (the checkpoint
#: is declared once, by :data:`CHECKPOINT_DIR_ENV` and :data:`CHECKPOINT_INTERVAL_ENV`).
CHECKPOINT_PATH_ANNOTATION = "hyperpod-tenancy.io/checkpoint-path"
#: Former annotation with the checkpoint interval; refused like :data:`CHECKPOINT_PATH_ANNOTATION`.
CHECKPOINT_INTERVAL_ANNOTATION = "hyperpod-tenancy.io/checkpoint-interval"
#: Workload annotation the team's checkpoint scanner writes (:mod:`hyperpod_tenancy.runtime.checkpoint_scanner`):
#: the newest modification time under the workload's checkpoint directory, RFC 3339 UTC
#: (``2026-07-01T02:03:04Z``), never later than the scan. Only the scanner writes it (tenants have no write
#: verb on Workloads, and Kueue copies no Job annotation of this domain to its Workload); the eviction
#: collector reads it from the Workload's own metadata, never from a pod template.
LAST_CHECKPOINT_ANNOTATION = "hyperpod-tenancy.io/last-checkpoint"
#: Annotation the POSIX identity webhook writes on every ConfigMap and Secret of a team namespace at CREATE: the
#: ``request.userInfo.username`` of who created it (whatever the object said), kept on every UPDATE. Only that
#: requester may update or delete the object (``hyperpod-tenancy-tenant-config-owners``), unless it was created with
#: :data:`TEAM_SHARED_LABEL`.
CREATED_BY_ANNOTATION = "hyperpod-tenancy.io/created-by"
#: Label (value ``"true"``), set at CREATE and fixed from then on, that makes a ConfigMap or Secret the team's: any
#: teammate may then update or delete it.
TEAM_SHARED_LABEL = "hyperpod-tenancy.io/team-shared"
#: Label on every object ``hyperpod-tenancy probe`` creates; its value is the run (8 hex digits), which the clean-up
#: deletes by (``-l hyperpod-tenancy.io/probe=<run>``).
PROBE_LABEL = "hyperpod-tenancy.io/probe"
#: Label of a probe pod saying which part of the run it is (``server``, ``client``); the probe Service selects it.
PROBE_ROLE_LABEL = "hyperpod-tenancy.io/probe-role"
#: Container environment variable naming the checkpoint directory: with :data:`CHECKPOINT_INTERVAL_ENV`, the one
#: checkpoint declaration, where ``hyp create hyp-pytorch-job --environment`` puts it and every client can set it.
#: A path *in the container*, under a writable mount of the team's FSx claim in that same container. Admission
#: bounds it; the eviction collector and the scanner read it through
#: :func:`hyperpod_tenancy.runtime.checkpoint_scanner.declarations`.
CHECKPOINT_DIR_ENV = "HYPERPOD_TENANCY_CHECKPOINT_DIR"
#: Container environment variable with the checkpoint interval: ``<n>m`` or ``<n>h``, at most the class's
#: ``maxCheckpointInterval``.
CHECKPOINT_INTERVAL_ENV = "HYPERPOD_TENANCY_CHECKPOINT_INTERVAL"
#: Node label HyperPod sets on its nodes; ``Schedulable`` means healthy (and Lustre-capable).
NODE_HEALTH_LABEL = "sagemaker.amazonaws.com/node-health-status"
#: Kueue label every job must carry: the team's LocalQueue (:func:`~hyperpod_tenancy.policy.names.local_queue`).
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
#: Kueue label every job must carry: a WorkloadPriorityClass the team is entitled to.
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
#: Standard namespace name label (set by the API server).
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
#: Node label of the platform's system node group (``system``), where its controllers are scheduled.
NODE_ROLE_LABEL = "hyperpod-tenancy.io/node-role"
#: Value of :data:`NODE_ROLE_LABEL` on the system nodes.
SYSTEM_NODE_ROLE = "system"
#: Pod Security Admission level enforced in a namespace
#: (https://kubernetes.io/docs/concepts/security/pod-security-admission/).
POD_SECURITY_ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
#: Pod Security Admission level whose violations are returned as warnings.
POD_SECURITY_WARN_LABEL = "pod-security.kubernetes.io/warn"
#: Pod Security Admission level whose violations are recorded in the audit log.
POD_SECURITY_AUDIT_LABEL = "pod-security.kubernetes.io/audit"


def object_labels(team: str | None = None) -> dict[str, str]:
    """Labels of an object the platform renders: :data:`MANAGED_BY_LABELS`, plus :data:`TEAM_LABEL` for a team's."""
    labels = dict(MANAGED_BY_LABELS)
    if team is not None:
        labels[TEAM_LABEL] = team
    return labels


def pod_security_labels(*, enforce: str, warn: str, audit: str) -> dict[str, str]:
    """Pod Security Admission labels of a namespace: the levels enforced, warned about and audited."""
    return {
        POD_SECURITY_ENFORCE_LABEL: enforce,
        POD_SECURITY_WARN_LABEL: warn,
        POD_SECURITY_AUDIT_LABEL: audit,
    }


def priority_entitlement_label(priority_class: str) -> str:
    """Namespace label key entitling a team to ``<priority_class>-priority``."""
    return f"{PRIORITY_LABEL_PREFIX}{names.workload_priority_class(priority_class)}"


def accelerator_entitlement_label(resource: str) -> str:
    """Namespace label key entitling a team to request the extended resource ``resource`` (``nvidia.com/gpu``)."""
    return ACCELERATOR_LABEL_PREFIX + resource.rpartition("/")[2]


def accelerator_entitlement_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Return the team's accelerator entitlement labels, one per accelerator resource of the cluster.

    :data:`ALLOWED` where the team's ceiling (:func:`~hyperpod_tenancy.k8s.ceilings.accelerator_ceiling`, what
    the ResourceQuota enforces) is above 0, :data:`DENIED` for the others (explicit, as a strategic merge never
    removes a key).
    """
    ceiling = accelerator_ceiling(platform, team) or {}
    return {
        accelerator_entitlement_label(r): ALLOWED if n > 0 else DENIED for r, n in sorted(ceiling.items())
    }


def team_borrows(platform: Platform, team: Team) -> bool:
    """Whether ``team``'s work may run on borrowed capacity (the value of :data:`BORROWS_LABEL`).

    :func:`~hyperpod_tenancy.policy.borrowing.may_borrow`, the one borrowing rule both fairness backends render:
    Task Governance ``LendAndBorrow`` with a ``BorrowLimit`` or an absolute limit above 0, a Kueue
    ``borrowingLimit`` above 0.
    """
    return may_borrow(platform, team)


def namespace_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Every label a team namespace must carry: tenancy, POSIX GID, entitlements, borrowing and pod security admission.

    Every priority class of the platform gets an entitlement label, :data:`ALLOWED` for the team's
    ``allowed_priority_classes`` and :data:`DENIED` for the others, so that applying the labels of a new policy
    over the old ones (a strategic merge, which never removes keys) revokes a class that was removed.
    """
    labels = {
        TENANT_LABEL: "true",
        TEAM_LABEL: team.name,
        POSIX_GID_LABEL: str(team.identity.posix_gid),
        **pod_security_labels(
            enforce=team.pod_security.value,
            warn=PodSecurityLevel.RESTRICTED.value,
            audit=PodSecurityLevel.RESTRICTED.value,
        ),
    }
    allowed = set(team.allowed_priority_classes)
    for pc in platform.scheduling.priority_classes:
        labels[priority_entitlement_label(pc.name)] = ALLOWED if pc.name in allowed else DENIED
    for (
        name
    ) in team.allowed_priority_classes:  # a class unknown to the platform is a policy error; keep it visible
        labels.setdefault(priority_entitlement_label(name), ALLOWED)
    labels[BORROWS_LABEL] = "true" if team_borrows(platform, team) else "false"
    labels.update(accelerator_entitlement_labels(platform, team))
    preempts_own = team.compute.preempt_team_tasks is PreemptTeamTasks.LOWER_PRIORITY
    labels[PREEMPTS_OWN_WORK_LABEL] = "true" if preempts_own else "false"
    return labels


def revoked_namespace_labels(platform: Platform, team: Team) -> dict[str, str]:
    """Labels that withdraw every entitlement of ``team``'s namespace (the patch applied when the team is removed).

    Every entitlement label becomes :data:`DENIED` and :data:`BORROWS_LABEL` ``"false"``; the tenancy and pod
    security labels stay, so the admission policies keep governing the namespace. Explicit values rather than
    ``null``: CDK drops nulls when it renders a patch, and the strategic merge keeps keys a patch leaves out.
    """
    labels = {
        key: DENIED
        for key in namespace_labels(platform, team)
        if key.startswith((PRIORITY_LABEL_PREFIX, ACCELERATOR_LABEL_PREFIX))
    }
    labels[BORROWS_LABEL] = "false"
    return labels
