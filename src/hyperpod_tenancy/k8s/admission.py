"""ValidatingAdmissionPolicies keeping tenant work on its own queue, entitled priority, checkpoints and pods.

Cluster-wide objects that read everything team-specific from the namespace (``namespaceObject``) through the
label contract of :mod:`hyperpod_tenancy.k8s.labels`, so adding a team never changes them. They apply
only in team namespaces, selected by name (:func:`hyperpod_tenancy.k8s.vap.team_namespace_condition`), and match every kind of the one table of
workload kinds, :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS` (batch Jobs, the Kubeflow and MPI
operator kinds, KubeRay, the HyperPod PyTorch job, apps controllers and Pods).

**Who is exempt is decided by who sends the request, never by what the object says.** Requests whose
``request.userInfo.username`` is one of the controllers of :data:`~hyperpod_tenancy.k8s.workloads.CONTROLLERS`
(kube-controller-manager's controllers, the Kubeflow, MPI, HyperPod and KubeRay operators, Kueue, the
HyperPod inference operator) are not held to the label rules: they create children (an MPI launcher Job, a
RayCluster's pods, a Deployment's ReplicaSet) from a parent admission already checked, and Kueue updates
``spec.suspend`` and node selectors. ``ownerReferences``, labels and annotations are written by the
requester, so team members may not set or change controller owner references at all, and owner references
exempt nothing.

Four policies, because their scope and enforcement differ:

* :data:`WORKLOAD_POLICY` (``Deny``; CREATE and UPDATE by team members): the ``kueue.x-k8s.io/priority-class``
  label is present and the namespace is entitled to it (``priority.hyperpod-tenancy.io/<class>-priority:
  allowed``); ``kueue.x-k8s.io/queue-name`` is the namespace's own LocalQueue (so every object a team member
  writes, of every kind, goes through a queue, whatever GPUs, EFA interfaces or Neuron devices its pods
  request); no controller owner reference is set on CREATE or changed on UPDATE; no finalizer is set on
  CREATE or added on UPDATE (a team-held finalizer keeps a deleted Job around while Kueue releases its quota,
  and the ``orphan`` finalizer orphans its pods). On the ``kueue`` backend it also refuses, at CREATE, the
  kinds Kueue has no job integration for (:func:`_unqueued_kind_validations`: ``HyperPodPyTorchJob``).
* :data:`CHECKPOINT_POLICY` (``Deny`` or ``Warn`` per ``scheduling.checkpoint_enforcement``): the promise is
  "no work that can be preempted lacks a checkpoint". Work at a ``preemptible`` class, *all work of a
  namespace labelled* ``hyperpod-tenancy.io/borrows: "true"`` (a team that borrows can have any of its work
  placed on borrowed quota and reclaimed), and, in a namespace labelled
  ``hyperpod-tenancy.io/preempts-own-work: "true"``, work at a class below a higher one the namespace is
  entitled to (its own team's work preempts it: :func:`_preempted_by_own_team`), declares its checkpoint in
  the containers' environment, where ``hyp create hyp-pytorch-job --environment`` puts it
  (``HYPERPOD_TENANCY_CHECKPOINT_DIR`` and ``HYPERPOD_TENANCY_CHECKPOINT_INTERVAL``), checked on every PodSpec of
  each kind (:func:`_checkpoint_validations`): the directory at or below the declaring container's own writable
  mount of the team's FSx claim, the interval (:data:`CHECKPOINT_INTERVAL_PATTERN`) no longer than its class's
  ``maxCheckpointInterval`` (a generated regular expression per class, see :func:`interval_regex`, so ``9999h``
  is denied), one declaration per workload. The former annotations ``hyperpod-tenancy.io/checkpoint-path`` and
  ``-interval`` are refused wherever they appear, so no second declaration can disagree with the first.
* :data:`POD_SPEC_POLICY` (``Deny``; every requester, controllers included, because the pod spec is what
  runs): every PodSpec of a workload (its pod templates at the paths of ``WorkloadKindSpec.pod_specs``: Job
  ``spec.template``, Kubeflow ``spec.<x>ReplicaSpecs.*.template``, HyperPodPyTorchJob
  ``spec.replicaSpecs[].template``, Ray head and worker groups and the RayJob submitter, apps
  ``spec.template``) and every Pod, at CREATE and UPDATE (and ``pods/ephemeralcontainers``): no
  ``priorityClassName`` outside :data:`ALLOWED_POD_PRIORITY_CLASSES` (empty: the platform defines no
  Kubernetes PriorityClass for tenants; Kueue WorkloadPriorityClasses only order workloads in Kueue, while a
  PriorityClass such as ``system-node-critical`` makes kube-scheduler preempt other teams' pods), and no
  container, init container or ephemeral container sets an environment variable of
  :data:`GPU_VISIBILITY_ENV`, and no container requests EFA interfaces beyond
  :func:`efa_per_accelerator` per accelerator it requests (EFA without GPUs is invisible to Task Governance).
* :data:`DELETE_POLICY` (``Deny``; DELETE by team members): no orphaning delete of a workload
  (``propagationPolicy: Orphan``, ``orphanDependents: true``, or a batch/v1 Job deleted without a propagation
  policy, whose default is to orphan its pods): Kueue would finish the Workload and free the quota while the
  pods keep their GPUs. A ValidatingAdmissionPolicy sees a DELETE's ``DeleteOptions`` as ``request.options``
  and the object being deleted as ``oldObject`` (``object`` is null): ``CreateAdmissionRequest`` in
  ``staging/src/k8s.io/apiserver/pkg/admission/plugin/cel/filter.go`` sets ``Options`` from
  ``attr.GetOperationOptions()``, and ``activation.go`` exposes the request as JSON would render it.

What admission cannot see: environment variables a container gets from ``envFrom`` (a ConfigMap or Secret)
or from its image (CUDA base images set ``NVIDIA_VISIBLE_DEVICES=all``). The NVIDIA container toolkit must
therefore ignore the variable for unprivileged containers
(``accept-nvidia-visible-devices-envvar-when-unprivileged = false``, with the device plugin's
``volume-mounts`` device list strategy), and the per-namespace ResourceQuota on GPUs, EFA and Neuron devices
is the backstop that does not depend on admission.

Every expression uses only standard CEL (``has``, ``in``, ``all``, ``exists``, ``filter``, ``size``,
``startsWith``, ``matches``, map literals, string concatenation, the conditional operator), so it can be
evaluated outside Kubernetes; ``failurePolicy`` is ``Fail`` explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hyperpod_tenancy.k8s import labels, vap, workloads
from hyperpod_tenancy.k8s.team_manifests import EFA_RESOURCE, FSX_CLAIM_NAME, SYSTEM_PRIORITY_CLASSES
from hyperpod_tenancy.k8s.vap import ADMISSION_API_VERSION
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.fairness import fairness_of
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.model import CheckpointEnforcement, Platform

__all__ = [
    "ADMISSION_API_VERSION",
    "ALLOWED_POD_PRIORITY_CLASSES",
    "CHECKPOINT_INTERVAL_PATTERN",
    "CHECKPOINT_POLICY",
    "DELETE_POLICY",
    "FSX_ROOT",
    "GPU_VISIBILITY_ENV",
    "POD_SPEC_POLICY",
    "WORKLOAD_POLICY",
    "WORKLOAD_RESOURCES",
    "admission_policies",
    "interval_regex",
]

#: Policy (and binding) checking the Kueue labels, owner references and finalizers of tenant workloads.
WORKLOAD_POLICY = "hyperpod-tenancy-workload-labels"
#: Policy (and binding) requiring a checkpoint declaration on work that can be preempted: at a preemptible class,
#: on borrowed capacity, or by its own team's work at a higher class.
CHECKPOINT_POLICY = "hyperpod-tenancy-checkpoints"
#: Policy (and binding) checking what actually runs: the PodSpecs of workloads and pods.
POD_SPEC_POLICY = "hyperpod-tenancy-pod-specs"
#: Policy (and binding) denying orphaning deletes of workloads.
DELETE_POLICY = "hyperpod-tenancy-workload-deletes"
#: Mount point of the shared FSx for Lustre file system; each team owns ``/fsx/<team>`` (from
#: :mod:`hyperpod_tenancy.policy.names`).
FSX_ROOT = names.FSX_ROOT
#: Accepted checkpoint intervals: a positive number of minutes or hours, e.g. ``30m`` or ``2h``.
CHECKPOINT_INTERVAL_PATTERN = "^[1-9][0-9]*[mh]$"
#: The workload kinds the policies match: the kinds of the one table of :mod:`hyperpod_tenancy.k8s.workloads`
#: whose API the platform installs (:func:`~hyperpod_tenancy.k8s.workloads.served_kinds`).
WORKLOAD_RESOURCES: tuple[WorkloadKindSpec, ...] = workloads.served_kinds()
#: Kubernetes PriorityClasses a pod in a tenant namespace may name. None: the platform defines no
#: PriorityClass for tenants (workload priority is the Kueue ``kueue.x-k8s.io/priority-class`` label, which
#: kube-scheduler never sees). Should the cluster ever get a ``globalDefault`` PriorityClass, add it here.
ALLOWED_POD_PRIORITY_CLASSES: tuple[str, ...] = ()
#: Environment variables that make a container runtime hook expose accelerator devices, and why each is here:
#:
#: * ``NVIDIA_VISIBLE_DEVICES``: the NVIDIA container toolkit injects the GPUs it lists (``all`` = every GPU of
#:   the node) into a container that requested none, unless ``accept-nvidia-visible-devices-envvar-when-
#:   unprivileged`` is false; and the device plugin's default (``envvar``) strategy hands the allocated GPUs to
#:   the toolkit through the same variable, which the container's own value would override.
#: * ``AWS_NEURON_VISIBLE_DEVICES``: the Neuron OCI hook mounts the ``/dev/neuron*`` devices it lists.
#: * ``NEURON_RT_VISIBLE_CORES``: the Neuron device plugin allocates NeuronCores by setting it; a container
#:   that overrides it uses cores of the same device allocated to another pod.
#:
#: Not listed, because they expose no device by themselves: ``NVIDIA_DRIVER_CAPABILITIES`` (which driver
#: libraries are mounted for devices already granted), ``CUDA_VISIBLE_DEVICES`` (the CUDA runtime filters only
#: the device nodes already in the container), ``NVIDIA_REQUIRE_*`` (constraints the hook checks).
GPU_VISIBILITY_ENV = ("NVIDIA_VISIBLE_DEVICES", "AWS_NEURON_VISIBLE_DEVICES", "NEURON_RT_VISIBLE_CORES")

_OPERATIONS = ("CREATE", "UPDATE")
# A path segment ".." (would escape the team directory).
_PARENT_SEGMENT = "(^|/)[.][.](/|$)"


_q = vap.cel_quote
_cel_list = vap.cel_list


def _groups() -> dict[str, list[WorkloadKindSpec]]:
    groups: dict[str, list[WorkloadKindSpec]] = {}
    for kind in WORKLOAD_RESOURCES:
        groups.setdefault(kind.group, []).append(kind)
    return groups


def _label_set(key: str) -> str:
    return f"(has(object.metadata.labels) && {_q(key)} in object.metadata.labels)"


def _label(key: str) -> str:
    return f"object.metadata.labels[{_q(key)}]"


def _namespace_label_set(key: str) -> str:
    return f"(has(namespaceObject.metadata.labels) && {_q(key)} in namespaceObject.metadata.labels)"


def _namespace_label(key: str) -> str:
    return f"namespaceObject.metadata.labels[{_q(key)}]"


def _is_resource(kind: WorkloadKindSpec) -> str:
    return f"(request.resource.group == {_q(kind.group)} && request.resource.resource == {_q(kind.resource)})"


def _from_team_member() -> dict[str, str]:
    """Match condition: the request is not sent by a controller of :data:`workloads.CONTROLLERS`."""
    return vap.not_sent_by("sent-by-a-team-member", workloads.controller_usernames())


def _not_being_deleted() -> dict[str, str]:
    """Match condition: finalizers of an object being deleted can always be removed."""
    return {"name": "not-being-deleted", "expression": "!has(object.metadata.deletionTimestamp)"}


def _rules(operations: Sequence[str]) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [group],
            "apiVersions": ["*"],
            "operations": list(operations),
            "resources": [k.resource for k in kinds],
            "scope": "Namespaced",
        }
        for group, kinds in _groups().items()
    ]


# ------------------------------------------------------------------------------------ workload labels


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


# ------------------------------------------------------------------------------------------ checkpoints


def _up_to(n: int) -> str:
    """Return a regular expression matching the decimal numbers 1..``n`` (no leading zeros), e.g. 1..90."""
    if n < 1:  # pragma: no cover - callers pass validated intervals
        raise ValueError(f"no positive number is at most {n}")
    digits = str(n)
    alternatives = ["[1-9]" + "[0-9]" * (length - 1) for length in range(1, len(digits))]
    for i, char in enumerate(digits):
        low, digit = (1 if i == 0 else 0), int(char)
        if digit > low:
            top = f"[{low}-{digit - 1}]" if digit - 1 > low else str(low)
            alternatives.append(digits[:i] + top + "[0-9]" * (len(digits) - i - 1))
    alternatives.append(digits)
    return "(" + "|".join(alternatives) + ")"


def interval_regex(max_minutes: int) -> str:
    """Regular expression of the checkpoint intervals (``<n>m``/``<n>h``) of at most ``max_minutes``.

    Standard CEL has no substring or number parsing of ``30m``, so the bound is a generated pattern: minutes
    ``1..max_minutes`` and hours ``1..max_minutes // 60``, both without leading zeros.
    """
    parts = [_up_to(max_minutes) + "m"]
    if max_minutes >= 60:
        parts.append(_up_to(max_minutes // 60) + "h")
    return "^(" + "|".join(parts) + ")$"


def _borrows() -> str:
    """CEL: the namespace's work may run on capacity borrowed from other teams."""
    return f"({_namespace_label_set(labels.BORROWS_LABEL)} && {_namespace_label(labels.BORROWS_LABEL)} == 'true')"


def _preempted_by_own_team(platform: Platform) -> str:
    """CEL: the team's own work at a higher priority class it is entitled to may preempt this workload.

    ``preemptTeamTasks: LowerPriority`` (Task Governance ``PreemptTeamTasks``, Kueue ``withinClusterQueue``)
    lets a team's higher-priority work preempt its lower-priority work. Which classes are higher is the
    platform's (one literal map of class weights); which the team may use is the namespace's entitlement labels.
    """
    pc = labels.PRIORITY_CLASS_LABEL
    weights = (
        "{"
        + ", ".join(
            f"{_q(c.workload_priority_class)}: {c.weight}" for c in platform.scheduling.priority_classes
        )
        + "}"
    )
    entitled = (
        f"(({_q(labels.PRIORITY_LABEL_PREFIX)} + k) in namespaceObject.metadata.labels && "
        f"namespaceObject.metadata.labels[{_q(labels.PRIORITY_LABEL_PREFIX)} + k] == {_q(labels.ALLOWED)})"
    )
    own = labels.PREEMPTS_OWN_WORK_LABEL
    return (
        f"({_namespace_label_set(own)} && {_namespace_label(own)} == 'true' && {_label_set(pc)} && "
        f"{_label(pc)} in {weights} && {weights}.exists(k, {weights}[k] > {weights}[{_label(pc)}] && {entitled}))"
    )


def _needs_checkpoint(platform: Platform) -> str:
    """CEL: the workload can be preempted, so it must declare a checkpoint.

    Every way a team's work is preempted: at a ``preemptible`` class, on capacity borrowed from other teams
    (the lender reclaims it), or by the team's own higher-priority work (:func:`_preempted_by_own_team`).
    """
    pc = labels.PRIORITY_CLASS_LABEL
    preemptible = [c.workload_priority_class for c in platform.scheduling.priority_classes if c.preemptible]
    ways = [_borrows(), _preempted_by_own_team(platform)]
    if preemptible:
        ways.insert(0, f"({_label_set(pc)} && {_label(pc)} in {_cel_list(preemptible)})")
    return " || ".join(ways)


def _env_sets(container: str, name: str) -> str:
    return f"(has({container}.env) && {container}.env.exists(e, e.name == {_q(name)}))"


def _env_declares(spec: str) -> str:
    """CEL: a main container of PodSpec ``spec`` sets the checkpoint directory variable."""
    return f"(has({spec}.containers) && {spec}.containers.exists(c, {_env_sets('c', labels.CHECKPOINT_DIR_ENV)}))"


def _every_container(check: Callable[[str, str], str]) -> Callable[[str], str]:
    """Return a PodSpec check applying ``check(spec, container)`` to every main container with an environment."""

    def spec_check(spec: str) -> str:
        return f"(!has({spec}.containers) || {spec}.containers.all(c, !has(c.env) || {check(spec, 'c')}))"

    return spec_check


def _on_team_claim(spec: str, container: str, path: str) -> str:
    """CEL: ``path`` is at or below a writable mount, in ``container``, of the team's FSx claim.

    The claim (:data:`~hyperpod_tenancy.k8s.team_manifests.FSX_CLAIM_NAME` of the namespace) is bound to the
    pre-bound PersistentVolume of ``/fsx/<team>`` only, so wherever the container mounts it, a path below the
    mount is in the team directory; a read-only mount (of the volume or the claim) cannot hold checkpoints.
    """
    claim = (
        f"has({spec}.volumes) && {spec}.volumes.exists(v, v.name == m.name && has(v.persistentVolumeClaim) && "
        f"v.persistentVolumeClaim.claimName == {_q(FSX_CLAIM_NAME)} && "
        "!(has(v.persistentVolumeClaim.readOnly) && v.persistentVolumeClaim.readOnly))"
    )
    below = f"({path} == m.mountPath || {path}.startsWith(m.mountPath.endsWith('/') ? m.mountPath : m.mountPath + '/'))"
    return (
        f"(has({container}.volumeMounts) && {container}.volumeMounts.exists(m, "
        f"!(has(m.readOnly) && m.readOnly) && {claim} && {below}))"
    )


def _checkpoint_validations(platform: Platform) -> list[dict[str, str]]:
    """Return the checkpoint policy's validations of work that can be preempted: one declaration, in containers.

    The declaration is where ``hyp create hyp-pytorch-job`` puts it, the only place that client can: its
    ``--environment`` becomes the env of the job's one container and ``--volume`` its volumes and mounts
    (HyperPod CLI 3.12 template ``hyperpod_pytorch_job_template/v1_1/model.py`` ``to_domain``, which sets no
    annotation but the Kueue topology ones), and every other client can set a container's environment too.
    :data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_DIR_ENV` and
    :data:`~hyperpod_tenancy.k8s.labels.CHECKPOINT_INTERVAL_ENV` are read only from main containers (init and
    ephemeral containers do not train) and must be about where the job writes: a literal value (``valueFrom``
    is invisible at admission), at or below a writable mount of the team's FSx claim *in the same container*
    (:func:`_on_team_claim`), without ``..``, with an interval in the same container no longer than the class's
    ``maxCheckpointInterval``. At least one main container of the workload declares (a sidecar need not), and
    every container that sets one variable sets both. The eviction collector, the overdue-checkpoint alert and
    the checkpoint scanner read exactly these variables of the pod templates Kueue copies into the Workload
    (``hyperpod_tenancy.runtime.checkpoint_scanner.declarations``), so what is bounded here is what they read.
    """
    pc = labels.PRIORITY_CLASS_LABEL
    dir_env = labels.CHECKPOINT_DIR_ENV
    interval_env = labels.CHECKPOINT_INTERVAL_ENV
    team = labels.TEAM_LABEL
    classes = platform.scheduling.priority_classes
    preemptible = [c.workload_priority_class for c in classes if c.preemptible]
    team_or_placeholder = f"({_namespace_label_set(team)} ? {_namespace_label(team)} : '<team>')"
    why = (
        f"(({_label_set(pc)} && {_label(pc)} in {_cel_list(preemptible)}) ? "
        f"'priority class ' + {_label(pc)} + ' is preemptible' : {_borrows()} ? "
        "'namespace ' + namespaceObject.metadata.name + ' borrows idle capacity of other teams' : "
        "'work of the same team at a higher priority class than ' + "
        f"({_label_set(pc)} ? {_label(pc)} : '<class>') + ' may preempt it')"
    )
    bounds = {c.workload_priority_class: c for c in classes if c.max_checkpoint_minutes is not None}
    regexes = (
        "{"
        + ", ".join(
            f"{_q(n)}: {_q(interval_regex(c.max_checkpoint_minutes or 0))}" for n, c in bounds.items()
        )
        + "}"
    )
    maxima = "{" + ", ".join(f"{_q(n)}: {_q(c.max_checkpoint_interval)}" for n, c in bounds.items()) + "}"
    env_declared = _for_some_pod_spec(_env_declares)
    class_bounded = f"({_label_set(pc)} && {_label(pc)} in {regexes})"
    return [
        {
            "expression": env_declared,
            "messageExpression": (
                f"{why} + ': the work can be preempted, so it must checkpoint. Declare where and how often in "
                f"the environment of the training container, below its mount of the team FSx claim "
                f"{FSX_CLAIM_NAME}: {dir_env}={FSX_ROOT}' + {team_or_placeholder} + '/<job> and {interval_env}=30m "
                f"(with hyp: --volume name={FSX_CLAIM_NAME},type=pvc,mount_path={FSX_ROOT}' + {team_or_placeholder} "
                f'+ \',claim_name={FSX_CLAIM_NAME} and --environment with {{"{dir_env}": "{FSX_ROOT}\' + '
                f'{team_or_placeholder} + \'/<job>", "{interval_env}": "30m"}}; docs/submitting-work.md).\''
            ),
            "message": (
                f"work that can be preempted must declare its checkpoint in a container's environment: "
                f"{dir_env} (a directory below the container's mount of the team FSx claim {FSX_CLAIM_NAME}) and "
                f"{interval_env} (e.g. 30m)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": _for_every_pod_spec(
                _every_container(
                    lambda spec, c: (
                        f"{c}.env.all(e, e.name != {_q(dir_env)} || (has(e.value) && "
                        f"!e.value.matches({_q(_PARENT_SEGMENT)}) && {_on_team_claim(spec, c, 'e.value')}))"
                    )
                )
            ),
            "messageExpression": (
                f"'environment variable {dir_env} must name a directory where this container writes to the team "
                f"directory: a literal value (not valueFrom), without .., at or below a writable volumeMount, "
                f"in the same container, of the team FSx claim {FSX_CLAIM_NAME} (e.g. --volume name=fsx,type=pvc,"
                f"mount_path={FSX_ROOT}' + {team_or_placeholder} + ',claim_name={FSX_CLAIM_NAME} and "
                f"{dir_env}={FSX_ROOT}' + {team_or_placeholder} + '/<job>): other teams cannot read or keep it, "
                "and a directory the job does not write to is no checkpoint.'"
            ),
            "message": (
                f"environment variable {dir_env} must be a literal directory at or below the container's writable "
                f"mount of the team FSx claim {FSX_CLAIM_NAME}, without '..'."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": _for_every_pod_spec(
                _every_container(
                    lambda spec, c: (
                        f"({_env_sets(c, dir_env)} == {_env_sets(c, interval_env)}) && "
                        f"{c}.env.all(e, e.name != {_q(interval_env)} || (has(e.value) && "
                        f"e.value.matches({_q(CHECKPOINT_INTERVAL_PATTERN)})))"
                    )
                )
            ),
            "message": (
                f"a container that sets {dir_env} must also set {interval_env} (and the other way round), to a "
                "literal number of minutes or hours such as 30m or 1h (not valueFrom)."
            ),
            "reason": "Invalid",
        },
        {
            "expression": (
                f"!{class_bounded} || "
                + _for_every_pod_spec(
                    _every_container(
                        lambda spec, c: (
                            f"{c}.env.all(e, e.name != {_q(interval_env)} || !has(e.value) || "
                            f"!e.value.matches({_q(CHECKPOINT_INTERVAL_PATTERN)}) || "
                            f"e.value.matches({regexes}[{_label(pc)}]))"
                        )
                    )
                )
            ),
            "messageExpression": (
                f"'environment variable {interval_env} is longer than ' + {maxima}[{_label(pc)}] + ', the longest "
                f"checkpoint interval of priority class ' + {_label(pc)} + ' (scheduling.priorityClasses[]."
                "maxCheckpointInterval): an eviction would throw away more GPU time than the platform allows. "
                "Checkpoint more often.'"
            ),
            "message": (
                f"environment variable {interval_env} is longer than the maxCheckpointInterval of the workload's "
                "priority class."
            ),
            "reason": "Forbidden",
        },
    ]


#: Annotations that once declared a checkpoint on the workload or its pod templates; nothing reads them.
CHECKPOINT_ANNOTATIONS = (labels.CHECKPOINT_PATH_ANNOTATION, labels.CHECKPOINT_INTERVAL_ANNOTATION)


def _no_checkpoint_annotation(metadata: str) -> str:
    """CEL: the metadata at ``metadata`` carries none of :data:`CHECKPOINT_ANNOTATIONS`."""
    keys = _cel_list(list(CHECKPOINT_ANNOTATIONS))
    return f"(!has({metadata}.annotations) || !{keys}.exists(k, k in {metadata}.annotations))"


def _for_every_pod_template(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for the metadata of every pod template of the workload under review."""
    return " && ".join(
        f"(!{_is_resource(kind)} || ("
        + " && ".join(_walk("object", [*p.split(".")[:-1], "metadata"], check) for p in kind.pod_specs)
        + "))"
        for kind in WORKLOAD_RESOURCES
        if kind.pod_specs and all(p.endswith(".spec") for p in kind.pod_specs)
    )


def _checkpoint_annotation_validations() -> list[dict[str, str]]:
    """Refuse the checkpoint annotations on the workload and its pod templates, whether or not it must checkpoint.

    A checkpoint is declared once, in the containers' environment (:func:`_checkpoint_validations`). An
    annotation beside it would be a second declaration that nothing checks and nothing reads (a pod template's
    ``checkpoint-interval: 9999h`` once silenced the overdue-checkpoint alert); refusing it tells the team
    where the declaration went instead of leaving them to believe they declared one.
    """
    listed = " and ".join(CHECKPOINT_ANNOTATIONS)
    fix = (
        f"Remove it, and declare the checkpoint in the training container's environment instead: "
        f"{labels.CHECKPOINT_DIR_ENV} (a directory below the container's mount of the team FSx claim "
        f"{FSX_CLAIM_NAME}) and {labels.CHECKPOINT_INTERVAL_ENV} (e.g. 30m), as hyp --environment does "
        "(docs/submitting-work.md)."
    )
    return [
        {
            "expression": _no_checkpoint_annotation("object.metadata"),
            "message": (
                f"the annotations {listed} no longer declare a checkpoint and are refused on a workload: "
                f"nothing reads them. {fix}"
            ),
            "reason": "Invalid",
        },
        {
            "expression": _for_every_pod_template(_no_checkpoint_annotation),
            "message": (
                f"the annotations {listed} are refused on a pod template: a checkpoint is declared once, in the "
                f"containers' environment, where admission bounds it and the overdue-checkpoint alert reads it. "
                f"{fix}"
            ),
            "reason": "Invalid",
        },
    ]


# -------------------------------------------------------------------------------------------- pod specs


def _walk(base: str, segments: Sequence[str], check: Callable[[str], str], depth: int = 0) -> str:
    """CEL that applies ``check`` to every value at a ``pod_specs`` path below ``base`` (absent parts pass)."""
    if not segments:
        return check(base)
    segment, rest = segments[0], segments[1:]
    if segment.endswith("[]"):
        field, var = segment[:-2], f"i{depth}"
        inner = _walk(var, rest, check, depth + 1)
        return f"(!has({base}.{field}) || {base}.{field}.all({var}, {inner}))"
    if segment.endswith("{}"):
        field, var = segment[:-2], f"k{depth}"
        inner = _walk(f"{base}.{field}[{var}]", rest, check, depth + 1)
        return f"(!has({base}.{field}) || {base}.{field}.all({var}, {inner}))"
    return f"(!has({base}.{segment}) || {_walk(f'{base}.{segment}', rest, check, depth)})"


def _walk_any(base: str, segments: Sequence[str], check: Callable[[str], str], depth: int = 0) -> str:
    """CEL that is true when ``check`` holds for at least one value at a ``pod_specs`` path (absent: false)."""
    if not segments:
        return check(base)
    segment, rest = segments[0], segments[1:]
    if segment.endswith("[]"):
        field, var = segment[:-2], f"i{depth}"
        return (
            f"(has({base}.{field}) && {base}.{field}.exists({var}, {_walk_any(var, rest, check, depth + 1)}))"
        )
    if segment.endswith("{}"):
        field, var = segment[:-2], f"k{depth}"
        inner = _walk_any(f"{base}.{field}[{var}]", rest, check, depth + 1)
        return f"(has({base}.{field}) && {base}.{field}.exists({var}, {inner}))"
    return f"(has({base}.{segment}) && {_walk_any(f'{base}.{segment}', rest, check, depth)})"


def _for_every_pod_spec(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for every PodSpec of the workload under review, whatever its kind."""
    return " && ".join(
        f"(!{_is_resource(kind)} || ({' && '.join(_walk('object', p.split('.'), check) for p in kind.pod_specs)}))"
        for kind in WORKLOAD_RESOURCES
        if kind.pod_specs
    )


def _for_some_pod_spec(check: Callable[[str], str]) -> str:
    """CEL: ``check`` holds for at least one PodSpec of the workload under review."""
    return (
        "("
        + " || ".join(
            f"({_is_resource(kind)} && ({' || '.join(_walk_any('object', p.split('.'), check) for p in kind.pod_specs)}))"
            for kind in WORKLOAD_RESOURCES
            if kind.pod_specs
        )
        + ")"
    )


def _no_pod_priority_class(spec: str) -> str:
    allowed = ["", *ALLOWED_POD_PRIORITY_CLASSES]
    return f"(!has({spec}.priorityClassName) || {spec}.priorityClassName in {_cel_list(allowed)})"


def _no_gpu_visibility_env(spec: str) -> str:
    listed = _cel_list(GPU_VISIBILITY_ENV)
    return " && ".join(
        f"(!has({spec}.{containers}) || {spec}.{containers}.all(c, !has(c.env) || "
        f"c.env.all(e, !(e.name in {listed}))))"
        for containers in ("containers", "initContainers", "ephemeralContainers")
    )


def efa_per_accelerator(platform: Platform) -> int:
    """Most EFA interfaces a pod may request per accelerator: the largest ``ceil(EFA / accelerators)`` of a type.

    ``ml.p5.48xlarge``: 32 interfaces for 8 GPUs, 4. A pod holding EFA interfaces without the accelerators
    that go with them (16 pods of 32 interfaces and no GPU) keeps every multi-node job of every team off the
    nodes while Task Governance, which counts accelerators, vCPUs and memory only, sees an idle cluster.
    0 when no accelerated type has EFA (then no pod may request any).
    """
    ratios = [0]
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None and shape.accelerators > 0:
            ratios.append(-(-shape.efa_interfaces // shape.accelerators))
    return max(ratios)


def _accelerator_names(platform: Platform) -> list[str]:
    names_ = {"nvidia.com/gpu"}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None and shape.accelerators > 0:
            names_.add(shape.accelerator_resource)
    out = sorted(names_)
    if "aws.amazon.com/neurondevice" in out:
        out += ["aws.amazon.com/neuron", "aws.amazon.com/neuroncore"]
    return out


def _limit(container: str, resource: str) -> str:
    """CEL: the container's integer limit of ``resource`` (0 when unset; -1 when not a plain integer)."""
    has = f"has({container}.resources) && has({container}.resources.limits) && {_q(resource)} in {container}.resources.limits"
    value = f"string({container}.resources.limits[{_q(resource)}])"
    return f"(({has}) ? ({value}.matches('^[0-9]+$') ? int({value}) : -1) : 0)"


def _efa_with_accelerators(platform: Platform) -> Callable[[str], str]:
    ratio = efa_per_accelerator(platform)
    accelerators = " + ".join(
        f"(({_limit('c', r)}) > 0 ? {_limit('c', r)} : 0)" for r in _accelerator_names(platform)
    )

    def check(spec: str) -> str:
        efa = _limit("c", EFA_RESOURCE)
        per_container = f"{efa} == 0 || ({efa} > 0 && {efa} <= {ratio} * ({accelerators}))"
        return " && ".join(
            f"(!has({spec}.{containers}) || {spec}.{containers}.all(c, {per_container}))"
            for containers in ("containers", "initContainers")
        )

    return check


def _pod_spec_validations(platform: Platform) -> list[dict[str, str]]:
    system = ", ".join(SYSTEM_PRIORITY_CLASSES)
    env = ", ".join(GPU_VISIBILITY_ENV)
    allowed = ", ".join(ALLOWED_POD_PRIORITY_CLASSES) or "none"
    out: list[dict[str, str]] = []
    for kind in (k for k in WORKLOAD_RESOURCES if k.pod_specs):
        paths = ", ".join(kind.pod_specs)
        for check, message in (
            (
                _no_pod_priority_class,
                f"{kind.kind}: priorityClassName must not be set in the pod spec ({paths}) in tenant "
                f"namespaces (allowed: {allowed}): a Kubernetes PriorityClass such as {system} lets the pods "
                "preempt other teams' pods through kube-scheduler. Remove priorityClassName; the workload's "
                f"priority is its {labels.PRIORITY_CLASS_LABEL} label.",
            ),
            (
                _no_gpu_visibility_env,
                f"{kind.kind}: no container, init container or ephemeral container ({paths}) may set {env}: "
                "they expose accelerator devices that Kueue and the quotas never counted. Request devices as "
                "resources instead (e.g. nvidia.com/gpu: 8, aws.amazon.com/neuron: 1).",
            ),
            (
                _efa_with_accelerators(platform),
                f"{kind.kind}: a container ({paths}) requests {EFA_RESOURCE} without the accelerators that go "
                f"with them: at most {efa_per_accelerator(platform)} EFA interfaces per accelerator it requests "
                "(e.g. nvidia.com/gpu: 8 with vpc.amazonaws.com/efa: 32 on ml.p5.48xlarge). EFA interfaces held "
                "without GPUs keep every team's multi-node jobs off the nodes. Request the accelerators, or "
                "drop the EFA request.",
            ),
        ):
            expressions = [_walk("object", path.split("."), check) for path in kind.pod_specs]
            out.append(
                {
                    "expression": f"!{_is_resource(kind)} || ({' && '.join(expressions)})",
                    "message": message,
                    "reason": "Forbidden",
                }
            )
    return out


# -------------------------------------------------------------------------------------------- deletes


def _delete_validations() -> list[dict[str, str]]:
    options = "request.options"
    policy_set = f"(has({options}) && has({options}.propagationPolicy))"
    orphan_flag = f"(has({options}) && has({options}.orphanDependents))"
    job = next(k for k in WORKLOAD_RESOURCES if (k.group, k.resource) == ("batch", "jobs"))
    return [
        {
            "expression": f"!{policy_set} || {options}.propagationPolicy != 'Orphan'",
            "message": (
                "deleting a workload with propagationPolicy: Orphan (kubectl delete --cascade=orphan) is not "
                "allowed in tenant namespaces: Kueue would release the workload's quota while its pods keep "
                "running on the GPUs. Delete with --cascade=background (the default) or foreground."
            ),
            "reason": "Forbidden",
        },
        {
            "expression": f"!{orphan_flag} || {options}.orphanDependents != true",
            "message": (
                "deleting a workload with orphanDependents: true is not allowed in tenant namespaces: Kueue "
                "would release the workload's quota while its pods keep running on the GPUs. Set "
                "propagationPolicy: Background (or Foreground) instead."
            ),
            "reason": "Forbidden",
        },
        {
            # pkg/registry/batch/job/strategy.go: DefaultGarbageCollectionPolicy is OrphanDependents for
            # batch/v1 "for backwards compatibility"; kubectl sends Background, API clients often send nothing.
            "expression": (
                f"!{_is_resource(job)} || ({policy_set} && {options}.propagationPolicy != 'Orphan') || "
                f"({orphan_flag} && {options}.orphanDependents == false)"
            ),
            "message": (
                "a Job must be deleted with propagationPolicy: Background or Foreground in tenant namespaces: "
                "without one the API server orphans a batch/v1 Job's pods (its default for backwards "
                "compatibility), and they keep their GPUs after Kueue released the quota. kubectl does this "
                "by default; API clients pass propagation_policy='Background'."
            ),
            "reason": "Forbidden",
        },
    ]


def admission_policies(platform: Platform) -> list[dict[str, Any]]:
    """ValidatingAdmissionPolicies and their bindings for the tenant namespaces.

    Returns, in this order, the workload-label policy (``Deny``), the checkpoint policy (``Deny`` or ``Warn``
    per ``scheduling.checkpoint_enforcement``; always rendered, since whether a namespace borrows is read
    from its label at admission time), the pod-spec policy (``Deny``) and the delete policy (``Deny``), each
    followed by its binding.
    """
    checkpoint_action = (
        "Deny" if platform.scheduling.checkpoint_enforcement is CheckpointEnforcement.DENY else "Warn"
    )
    pods_ephemeral = {
        "apiGroups": [""],
        "apiVersions": ["*"],
        "operations": ["UPDATE"],
        "resources": ["pods/ephemeralcontainers"],
        "scope": "Namespaced",
    }
    return [
        vap.policy(
            WORKLOAD_POLICY,
            rules=_rules(_OPERATIONS),
            match_conditions=[_from_team_member(), _not_being_deleted()],
            validations=[*_workload_validations(), *_unqueued_kind_validations(platform)],
        ),
        vap.policy_binding(WORKLOAD_POLICY, ["Deny"]),
        vap.policy(
            CHECKPOINT_POLICY,
            rules=_rules(_OPERATIONS),
            match_conditions=[_from_team_member(), _not_being_deleted()],
            # whether the work can be preempted reads the namespace: the API server gives match conditions no
            # namespaceObject (an error there refuses the request), so each validation holds it instead
            validations=[
                *_checkpoint_annotation_validations(),
                *(
                    {**v, "expression": f"!({_needs_checkpoint(platform)}) || ({v['expression']})"}
                    for v in _checkpoint_validations(platform)
                ),
            ],
        ),
        vap.policy_binding(CHECKPOINT_POLICY, [checkpoint_action]),
        vap.policy(
            POD_SPEC_POLICY,
            rules=[*_rules(_OPERATIONS), pods_ephemeral],
            match_conditions=[_not_being_deleted()],
            validations=_pod_spec_validations(platform),
        ),
        vap.policy_binding(POD_SPEC_POLICY, ["Deny"]),
        vap.policy(
            DELETE_POLICY,
            rules=_rules(("DELETE",)),
            match_conditions=[_from_team_member()],
            validations=_delete_validations(),
        ),
        vap.policy_binding(DELETE_POLICY, ["Deny"]),
    ]
