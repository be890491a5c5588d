"""ValidatingAdmissionPolicies keeping tenant workloads on their own queue, entitled priority and checkpoints.

Cluster-wide objects that read everything team-specific from the namespace (``namespaceObject``) through
the label contract of :mod:`hyperpod_tenancy.k8s.labels`, so adding a team never changes them. They are
bound only to namespaces labelled ``hyperpod-tenancy.io/tenant: "true"`` and check CREATE and UPDATE of the
top-level workload objects (:data:`WORKLOAD_RESOURCES`): batch Jobs, Kubeflow training jobs, KubeRay jobs
and clusters, HyperPod PyTorch jobs, Deployments, StatefulSets, ReplicaSets and bare Pods. An object whose
controller (``ownerReferences[].controller``) is itself one of those kinds is skipped: its owner was
checked, and controllers such as the MPI operator create launcher Jobs without the labels. Objects being
deleted are skipped so finalizers can always be removed.

Two policies, because their enforcement differs:

* :data:`WORKLOAD_POLICY` (always ``Deny``): the ``kueue.x-k8s.io/priority-class`` label is present; the
  namespace is entitled to it (``priority.hyperpod-tenancy.io/<class>-priority: allowed``); the
  ``kueue.x-k8s.io/queue-name`` label is the namespace's own LocalQueue (``<namespace>-localqueue``).
* :data:`CHECKPOINT_POLICY` (``Deny`` or ``Warn`` per ``scheduling.checkpoint_enforcement``; rendered only
  when a priority class is ``preemptible``): work at a preemptible class declares
  ``hyperpod-tenancy.io/checkpoint-path`` under ``/fsx/<team>/`` and
  ``hyperpod-tenancy.io/checkpoint-interval`` (:data:`CHECKPOINT_INTERVAL_PATTERN`, e.g. ``30m`` or ``1h``).

Every expression uses only standard CEL (``has``, ``in``, ``startsWith``, ``matches``, ``exists``, string
concatenation, the conditional operator), so it can be evaluated outside Kubernetes; ``failurePolicy`` is
``Fail`` explicitly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import CheckpointEnforcement, Platform

__all__ = [
    "ADMISSION_API_VERSION",
    "CHECKPOINT_INTERVAL_PATTERN",
    "CHECKPOINT_POLICY",
    "FSX_ROOT",
    "WORKLOAD_POLICY",
    "WORKLOAD_RESOURCES",
    "WorkloadResource",
    "admission_policies",
    "tenant_namespace_selector",
]

#: API version of the policies and bindings (GA since Kubernetes 1.30).
ADMISSION_API_VERSION = "admissionregistration.k8s.io/v1"
#: Policy (and binding) checking the Kueue labels of tenant workloads.
WORKLOAD_POLICY = "hyperpod-tenancy-workload-labels"
#: Policy (and binding) requiring a checkpoint declaration on preemptible work.
CHECKPOINT_POLICY = "hyperpod-tenancy-checkpoints"
#: Mount point of the shared FSx for Lustre file system; each team owns ``/fsx/<team>``.
FSX_ROOT = "/fsx/"
#: Accepted checkpoint intervals: a positive number of minutes or hours, e.g. ``30m`` or ``2h``.
CHECKPOINT_INTERVAL_PATTERN = "^[1-9][0-9]*[mh]$"

_OPERATIONS = ("CREATE", "UPDATE")
_MANAGED_BY = {"app.kubernetes.io/managed-by": "cdk-hyperpod-tenancy"}
# A path segment ".." (would escape the team directory).
_PARENT_SEGMENT = "(^|/)[.][.](/|$)"


@dataclass(frozen=True)
class WorkloadResource:
    """A workload kind the policies check."""

    #: API group ("" for the core group).
    group: str
    #: Plural resource name.
    resource: str
    #: Kind (as it appears in ``ownerReferences``).
    kind: str


#: Top-level workload kinds tenants submit: batch, the Kubeflow training operator and MPI operator kinds
#: (installed by the HyperPod Helm chart), KubeRay (also in the chart), the HyperPod training operator's
#: PyTorch job, apps controllers and Pods. Rules for kinds whose CRD is not installed match nothing.
WORKLOAD_RESOURCES: tuple[WorkloadResource, ...] = (
    WorkloadResource("batch", "jobs", "Job"),
    WorkloadResource("kubeflow.org", "pytorchjobs", "PyTorchJob"),
    WorkloadResource("kubeflow.org", "mpijobs", "MPIJob"),
    WorkloadResource("kubeflow.org", "tfjobs", "TFJob"),
    WorkloadResource("kubeflow.org", "xgboostjobs", "XGBoostJob"),
    WorkloadResource("kubeflow.org", "paddlejobs", "PaddleJob"),
    WorkloadResource("kubeflow.org", "jaxjobs", "JAXJob"),
    WorkloadResource("ray.io", "rayjobs", "RayJob"),
    WorkloadResource("ray.io", "rayclusters", "RayCluster"),
    WorkloadResource("sagemaker.amazonaws.com", "hyperpodpytorchjobs", "HyperPodPyTorchJob"),
    WorkloadResource("apps", "deployments", "Deployment"),
    WorkloadResource("apps", "statefulsets", "StatefulSet"),
    WorkloadResource("apps", "replicasets", "ReplicaSet"),
    WorkloadResource("", "pods", "Pod"),
)


def _q(text: str) -> str:
    """Quote ``text`` as a CEL string literal."""
    if "'" in text or "\\" in text:  # pragma: no cover - all inputs are constants of this library
        raise ValueError(f"cannot quote {text!r}")
    return f"'{text}'"


def _groups() -> dict[str, list[WorkloadResource]]:
    groups: dict[str, list[WorkloadResource]] = {}
    for wr in WORKLOAD_RESOURCES:
        groups.setdefault(wr.group, []).append(wr)
    return groups


def _label_set(key: str) -> str:
    return f"(has(object.metadata.labels) && {_q(key)} in object.metadata.labels)"


def _label(key: str) -> str:
    return f"object.metadata.labels[{_q(key)}]"


def _annotation_set(key: str) -> str:
    return f"(has(object.metadata.annotations) && {_q(key)} in object.metadata.annotations)"


def _annotation(key: str) -> str:
    return f"object.metadata.annotations[{_q(key)}]"


def _namespace_label_set(key: str) -> str:
    return f"(has(namespaceObject.metadata.labels) && {_q(key)} in namespaceObject.metadata.labels)"


def _namespace_label(key: str) -> str:
    return f"namespaceObject.metadata.labels[{_q(key)}]"


def _owned_by_checked_workload() -> str:
    kinds = []
    for group, resources in _groups().items():
        if not group:
            continue  # core kinds (Pods) own no workloads
        listed = ", ".join(_q(wr.kind) for wr in resources)
        kinds.append(f"(r.apiVersion.startsWith({_q(group + '/')}) && r.kind in [{listed}])")
    return (
        "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
        f"has(r.controller) && r.controller == true && ({' || '.join(kinds)}))"
    )


def _common_match_conditions() -> list[dict[str, str]]:
    return [
        {"name": "top-level-workload", "expression": f"!({_owned_by_checked_workload()})"},
        {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"},
    ]


def tenant_namespace_selector() -> dict[str, Any]:
    """Label selector of tenant namespaces (``hyperpod-tenancy.io/tenant: "true"``)."""
    return {"matchLabels": {labels.TENANT_LABEL: "true"}}


def _match_constraints() -> dict[str, Any]:
    return {
        "namespaceSelector": tenant_namespace_selector(),
        "resourceRules": [
            {
                "apiGroups": [group],
                "apiVersions": ["*"],
                "operations": list(_OPERATIONS),
                "resources": [wr.resource for wr in resources],
                "scope": "Namespaced",
            }
            for group, resources in _groups().items()
        ],
    }


def _policy(
    name: str, *, match_conditions: list[dict[str, str]], validations: list[dict[str, str]]
) -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "labels": dict(_MANAGED_BY)},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": _match_constraints(),
            "matchConditions": match_conditions,
            "validations": validations,
        },
    }


def _binding(name: str, actions: Sequence[str]) -> dict[str, Any]:
    return {
        "apiVersion": ADMISSION_API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": dict(_MANAGED_BY)},
        "spec": {
            "policyName": name,
            "validationActions": list(actions),
            "matchResources": {"namespaceSelector": tenant_namespace_selector()},
        },
    }


def _workload_validations() -> list[dict[str, str]]:
    pc = labels.PRIORITY_CLASS_LABEL
    queue = labels.QUEUE_NAME_LABEL
    has_pc = f"({_label_set(pc)} && {_label(pc)} != '')"
    entitlement_key = f"({_q(labels.PRIORITY_LABEL_PREFIX)} + {_label(pc)})"
    queue_suffix = names.local_queue("x")[len(names.namespace("x")) :]  # "-localqueue"
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
    ]


def _checkpoint_validations(preemptible: Sequence[str]) -> list[dict[str, str]]:
    pc = labels.PRIORITY_CLASS_LABEL
    path = labels.CHECKPOINT_PATH_ANNOTATION
    interval = labels.CHECKPOINT_INTERVAL_ANNOTATION
    team = labels.TEAM_LABEL
    team_or_placeholder = f"({_namespace_label_set(team)} ? {_namespace_label(team)} : '<team>')"
    classes = ", ".join(preemptible)
    return [
        {
            "expression": _annotation_set(path),
            "messageExpression": (
                f"'priority class ' + {_label(pc)} + ' is preemptible: the work may run on borrowed capacity "
                f"and be preempted, so it must checkpoint. Add annotation {path}: {FSX_ROOT}' + "
                f"{team_or_placeholder} + '/<job>/ (where the job writes its checkpoints).'"
            ),
            "message": (
                f"work at a preemptible priority class ({classes}) must declare annotation {path} with its "
                f"checkpoint directory under {FSX_ROOT}<team>/."
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"!{_annotation_set(path)} || ({_namespace_label_set(team)} && "
                f"{_annotation(path)}.startsWith({_q(FSX_ROOT)} + {_namespace_label(team)} + '/') && "
                f"!{_annotation(path)}.matches({_q(_PARENT_SEGMENT)}))"
            ),
            "messageExpression": (
                f"'checkpoint path ' + {_annotation(path)} + ' must be inside the team directory "
                f"{FSX_ROOT}' + {team_or_placeholder} + '/ (without ..): other teams cannot read or keep it.'"
            ),
            "message": f"annotation {path} must be a path under {FSX_ROOT}<team>/ without '..'.",
            "reason": "Forbidden",
        },
        {
            "expression": _annotation_set(interval),
            "message": (
                f"work at a preemptible priority class ({classes}) must declare annotation {interval} "
                "(how often it checkpoints, e.g. 30m or 1h)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"!{_annotation_set(interval)} || "
                f"{_annotation(interval)}.matches({_q(CHECKPOINT_INTERVAL_PATTERN)})"
            ),
            "messageExpression": (
                f"'annotation {interval} ' + {_annotation(interval)} + ' is not a number of minutes or hours "
                "such as 30m or 1h.'"
            ),
            "message": f"annotation {interval} must look like 30m or 1h.",
            "reason": "Invalid",
        },
    ]


def admission_policies(platform: Platform) -> list[dict[str, Any]]:
    """ValidatingAdmissionPolicies and their bindings for the tenant namespaces.

    Returns the workload-label policy and binding (``validationActions: [Deny]``) and, when any priority
    class is ``preemptible``, the checkpoint policy and binding (``[Deny]`` or ``[Warn]`` per
    ``scheduling.checkpoint_enforcement``).
    """
    objects = [
        _policy(
            WORKLOAD_POLICY, match_conditions=_common_match_conditions(), validations=_workload_validations()
        ),
        _binding(WORKLOAD_POLICY, ["Deny"]),
    ]
    preemptible = [
        pc.workload_priority_class for pc in platform.scheduling.priority_classes if pc.preemptible
    ]
    if preemptible:
        pc = labels.PRIORITY_CLASS_LABEL
        listed = ", ".join(_q(name) for name in preemptible)
        conditions = [
            *_common_match_conditions(),
            {
                "name": "preemptible-priority-class",
                "expression": f"{_label_set(pc)} && {_label(pc)} in [{listed}]",
            },
        ]
        action = (
            "Deny" if platform.scheduling.checkpoint_enforcement is CheckpointEnforcement.DENY else "Warn"
        )
        objects += [
            _policy(
                CHECKPOINT_POLICY,
                match_conditions=conditions,
                validations=_checkpoint_validations(preemptible),
            ),
            _binding(CHECKPOINT_POLICY, [action]),
        ]
    return objects
