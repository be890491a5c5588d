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

from hyperpod_tenancy.k8s.admission._common import (
    ALLOWED_POD_PRIORITY_CLASSES,
    CHECKPOINT_POLICY,
    DELETE_POLICY,
    FSX_ROOT,
    POD_SPEC_POLICY,
    WORKLOAD_POLICY,
    WORKLOAD_RESOURCES,
)
from hyperpod_tenancy.k8s.admission.checkpoints import (
    CHECKPOINT_ANNOTATIONS,
    CHECKPOINT_INTERVAL_PATTERN,
    interval_regex,
)
from hyperpod_tenancy.k8s.admission.pod_specs import GPU_VISIBILITY_ENV
from hyperpod_tenancy.k8s.admission.policies import admission_policies
from hyperpod_tenancy.k8s.vap import ADMISSION_API_VERSION

__all__ = [
    "ADMISSION_API_VERSION",
    "ALLOWED_POD_PRIORITY_CLASSES",
    "CHECKPOINT_ANNOTATIONS",
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
