"""The workload-labels policy: a team's workloads carry their queue and class labels, and controller references are kept."""

from __future__ import annotations

from hyperpod_tenancy.k8s import labels, workloads
from hyperpod_tenancy.k8s.admission._common import WORKLOAD_RESOURCES, _is_resource, _label, _label_set, _q
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.model import Platform


def _is_controller_ref(var: str) -> str:
    return f"(has({var}.controller) && {var}.controller == true)"


def _controller_refs_kept(new: str, old: str) -> str:
    """Every controller owner reference of ``new`` is in ``old`` unchanged."""
    return (
        f"(!has({new}.metadata.ownerReferences) || {new}.metadata.ownerReferences.all(r, "
        f"!{_is_controller_ref('r')} || (has({old}.metadata.ownerReferences) && "
        f"{old}.metadata.ownerReferences.exists(o, o == r))))"
    )


def _workload_validations() -> list[dict[str, str]]:
    pc = labels.PRIORITY_CLASS_LABEL
    queue = labels.QUEUE_NAME_LABEL
    has_pc = f"({_label_set(pc)} && {_label(pc)} != '')"
    entitlement_key = f"({_q(labels.PRIORITY_LABEL_PREFIX)} + {_label(pc)})"
    queue_suffix = names.LOCAL_QUEUE_SUFFIX
    return [
        {
            "expression": has_pc,
            "message": (
                f"label {pc} is required in tenant namespaces: without it the workload gets the lowest "
                f"priority and is the first one evicted. Add `{pc}: <class>-priority` with a class your team "
                f"is allowed (the namespace's {labels.PRIORITY_LABEL_PREFIX}<class>-priority labels)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"!{has_pc} || (has(namespaceObject.metadata.labels) && {entitlement_key} in "
                f"namespaceObject.metadata.labels && namespaceObject.metadata.labels[{entitlement_key}] == "
                f"{_q(labels.ALLOWED)})"
            ),
            "messageExpression": (
                f"'priority class ' + {_label(pc)} + ' is not allowed in namespace ' + "
                "namespaceObject.metadata.name + ': use a class the namespace is entitled to (namespace "
                f"label {labels.PRIORITY_LABEL_PREFIX}<class>-priority: {labels.ALLOWED}), or ask the "
                "platform team to add it to the team allowedPriorityClasses.'"
            ),
            "message": f"the priority class in label {pc} is not allowed for this team.",
            "reason": "Forbidden",
        },
        {
            "expression": (
                f"{_label_set(queue)} && {_label(queue)} == "
                f"namespaceObject.metadata.name + {_q(queue_suffix)}"
            ),
            "messageExpression": (
                f"'label {queue} must be ' + namespaceObject.metadata.name + {_q(queue_suffix)} + ', the "
                "LocalQueue of namespace ' + namespaceObject.metadata.name + ': a workload can only use its "
                "own team queue (set the label on the workload and on its pod templates).'"
            ),
            "message": f"label {queue} must name this namespace's LocalQueue (<namespace>{queue_suffix}).",
            "reason": "Forbidden",
        },
        {
            "expression": (
                "request.operation != 'CREATE' || !has(object.metadata.ownerReferences) || "
                f"!object.metadata.ownerReferences.exists(r, {_is_controller_ref('r')})"
            ),
            "message": (
                "metadata.ownerReferences must not name a controller (controller: true) when a team member "
                "creates a workload: controllers are recognised by who sends the request, not by owner "
                "references, and a controller reference would make Kueue treat the workload as another "
                "one's child. Remove the ownerReferences entry (or its controller: true)."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "request.operation != 'UPDATE' || "
                f"({_controller_refs_kept('object', 'oldObject')} && {_controller_refs_kept('oldObject', 'object')})"
            ),
            "message": (
                "controller owner references (ownerReferences with controller: true) cannot be added, changed "
                "or removed by a team member: only the controller that created the object manages them. "
                "Leave metadata.ownerReferences as it is, or change the parent workload instead."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "request.operation != 'CREATE' || !has(object.metadata.finalizers) || "
                "size(object.metadata.finalizers) == 0"
            ),
            "message": (
                "metadata.finalizers must be empty when a team member creates a workload: a finalizer keeps a "
                "deleted workload (and its pods) alive after Kueue has released its quota, and the orphan "
                "finalizer orphans its pods. Remove metadata.finalizers."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": (
                "request.operation != 'UPDATE' || !has(object.metadata.finalizers) || "
                "object.metadata.finalizers.all(f, has(oldObject.metadata.finalizers) && "
                "f in oldObject.metadata.finalizers)"
            ),
            "message": (
                "a team member cannot add finalizers to a workload: a finalizer keeps a deleted workload (and "
                "its pods) alive after Kueue has released its quota, and the orphan finalizer orphans its "
                "pods. Removing finalizers is allowed; adding them is for controllers."
            ),
            "reason": "Forbidden",
        },
    ]


def _unqueued_kind_validations(platform: Platform) -> list[dict[str, str]]:
    """Refuse the team-written kinds Kueue has no job integration for, when the backend cannot queue them.

    Kueue queues a kind as one workload only through a job integration (``integrations.frameworks`` or an
    ``externalFrameworks`` entry with its controller's support). Upstream Kueue 0.19.2 has none for
    ``HyperPodPyTorchJob`` and no source documents how Task Governance's Kueue admits it, so with
    ``manageJobsWithoutQueueName`` and the pod integration its pods would be queued one by one: no gang
    admission, and a multi-node job can deadlock half-admitted while holding quota. Such a kind is refused at
    CREATE with the fix, rather than admitted into a queue that cannot gang it.

    The inference operator's kinds are not refused: Kueue never sees an ``InferenceEndpointConfig`` or a
    ``JumpStartModel``, only the Deployment the operator renders from it, which the ``deployment``
    integration queues pod by pod; that is right for serving replicas, each of which serves on its own.
    """
    refusal = fairness_of(platform).unintegrated_kind_refusal
    if refusal is None:
        return []
    return [
        {
            "expression": f"request.operation != 'CREATE' || !{_is_resource(kind)}",
            "message": refusal.format(kind=f"{kind.kind} ({kind.group}/{kind.resource})"),
            "reason": "Forbidden",
        }
        for kind in WORKLOAD_RESOURCES
        if kind.kueue_framework is None
        and kind.team_access is not workloads.TeamAccess.NONE
        and kind.installed_by is not workloads.Installer.HYPERPOD_INFERENCE_ADDON
    ]
