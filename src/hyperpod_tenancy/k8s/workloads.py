"""The one table of workload kinds and controller identities that admission, RBAC and Kueue derive from.

Every place that needs to know "which kinds do teams submit", "who installs that kind's CRD" or "which
service accounts create objects on a team's behalf" reads this module; nothing keeps its own list.

* :data:`WORKLOAD_KINDS`: each kind a tenant namespace can hold work in, with the API group, plural
  resource, the component that installs it (:class:`Installer`), the Kueue integration that queues it and
  which teams may write it.
* :data:`CONTROLLERS`: the controllers' identities (``request.userInfo.username`` of their service account).
  Admission exempts requests *by who sends them*, never by what the object says (``ownerReferences``,
  labels and annotations are written by the requester).

Sources for the identities (checked against the charts, not remembered):

* kube-controller-manager runs each controller with its own service account in ``kube-system`` on EKS
  (``--use-service-account-credentials``): ``job-controller``, ``replicaset-controller``,
  ``deployment-controller``, ``statefulset-controller``, ``generic-garbage-collector``.
* Kubeflow training operator: ServiceAccount ``training-operator`` in ``kubeflow`` (HyperPod CLI chart
  ``helm_chart/HyperPodHelmChart/charts/training-operators/templates/ServiceAccount/``).
* MPI operator: ServiceAccount ``<release>-mpi-operator`` in the release namespace, i.e.
  ``dependencies-mpi-operator`` in ``kube-system`` (``charts/mpi-operator/templates/rbac.yaml``,
  ``_helpers.tpl`` fullname; the platform installs the chart as release ``dependencies`` in ``kube-system``).
* HyperPod training operator add-on: ``hp-training-operator-controller-manager`` in ``aws-hyperpod``
  (research/hyperpod.md §2.2; HyperPod CLI ``src/sagemaker/hyperpod/training/hyperpod_pytorch_job.py``
  ``TRAINING_OPERATOR_NAMESPACE``).
* KubeRay operator: ``kuberay-operator`` in the namespace the platform installs it to (:data:`KUBERAY_NAMESPACE`).
* Kueue: ``kueue-controller-manager`` in ``kueue-system`` (both the Task Governance add-on and the upstream chart).
* HyperPod inference operator: ``hyperpod-inference-controller-manager`` in ``hyperpod-inference-system`` as the
  EKS add-on, ``hyperpod-inference-operator-controller-manager`` there when installed from the HyperPod CLI's
  Helm chart (the chart's migration script rewrites one into the other in the execution role's trust policy:
  ``helm_chart/HyperPodHelmChart/charts/inference-operator/migration/helm_to_addon.sh``, ~line 434). It
  creates an endpoint's Deployment, Service and load balancer in the team namespace
  (:data:`INFERENCE_OPERATORS`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = [
    "CONTROLLERS",
    "HYPERPOD_INFERENCE_NAMESPACE",
    "INFERENCE_OPERATORS",
    "KUBERAY_NAMESPACE",
    "PLATFORM_INSTALLERS",
    "WORKLOAD_KINDS",
    "ControllerIdentity",
    "Installer",
    "TeamAccess",
    "WorkloadKindSpec",
    "controller_usernames",
    "kinds_for",
    "served_kinds",
]

#: Namespace the platform installs the KubeRay operator into.
KUBERAY_NAMESPACE = "kuberay-system"


class Installer(enum.StrEnum):
    """What installs a kind's API (its CRD) on the cluster."""

    #: Built into Kubernetes (batch, apps, core).
    KUBERNETES = "kubernetes"
    #: The HyperPod dependencies Helm chart, subchart ``training-operators`` (Kubeflow training operator).
    HYPERPOD_CHART_TRAINING_OPERATORS = "hyperpod-chart/training-operators"
    #: The HyperPod dependencies Helm chart, subchart ``mpi-operator``.
    HYPERPOD_CHART_MPI_OPERATOR = "hyperpod-chart/mpi-operator"
    #: The EKS add-on ``amazon-sagemaker-hyperpod-training-operator``.
    HYPERPOD_TRAINING_OPERATOR_ADDON = "amazon-sagemaker-hyperpod-training-operator"
    #: The KubeRay operator Helm chart (``kuberay-operator``).
    KUBERAY_CHART = "kuberay-operator"
    #: The EKS add-on ``amazon-sagemaker-hyperpod-inference`` (the HyperPod inference operator; the HyperPod
    #: CLI chart's ``charts/inference-operator`` is its Helm form). Installed with its roles, TLS bucket and
    #: dependency add-ons when the platform has an inference team
    #: (:mod:`hyperpod_tenancy.constructs._private.inference_operator`).
    HYPERPOD_INFERENCE_ADDON = "amazon-sagemaker-hyperpod-inference"
    #: The operator of HyperPod spaces (``workspace.jupyter.org`` Workspaces, ``hyp create hyp-space``).
    #: **Not installed by the platform** (teams get interactive environments from their Studio domain).
    HYPERPOD_SPACES_OPERATOR = "hyperpod-spaces-operator"


#: The installers the cluster stack provides (the training operator add-on, the HyperPod chart's subcharts,
#: KubeRay, the inference operator add-on, Kubernetes itself). The inference add-on is installed only on
#: platforms with an inference team, the only teams its kinds are granted to; elsewhere its kinds' policy
#: rules match nothing (no CRD), which keeps admission the same on every platform. A kind whose installer is not here is in :data:`WORKLOAD_KINDS` for the record
#: (its group, resource and who would create it) but neither granted nor governed: granting a kind whose CRD
#: no component serves would be a permission on nothing, and a policy rule on it dead code.
PLATFORM_INSTALLERS: frozenset[Installer] = frozenset(
    {
        Installer.KUBERNETES,
        Installer.HYPERPOD_CHART_TRAINING_OPERATORS,
        Installer.HYPERPOD_CHART_MPI_OPERATOR,
        Installer.HYPERPOD_TRAINING_OPERATOR_ADDON,
        Installer.KUBERAY_CHART,
        Installer.HYPERPOD_INFERENCE_ADDON,
    }
)


class TeamAccess(enum.StrEnum):
    """Which teams' Role may write a kind."""

    #: Every team.
    ALL = "all"
    #: Only teams whose ``workload`` is ``inference``.
    INFERENCE = "inference"
    #: No team writes it directly (only controllers create it).
    NONE = "none"


@dataclass(frozen=True, kw_only=True)
class ControllerIdentity:
    """A controller that creates or updates objects in tenant namespaces on a team's behalf."""

    #: What it is, for messages and docs.
    description: str
    #: Namespace of its ServiceAccount.
    namespace: str
    #: Name of its ServiceAccount.
    service_account: str

    @property
    def username(self) -> str:
        """``request.userInfo.username`` of its requests: ``system:serviceaccount:<ns>:<sa>``."""
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"


@dataclass(frozen=True, kw_only=True)
class WorkloadKindSpec:
    """A workload kind tenants' work runs as."""

    #: API group (``""`` for the core group).
    group: str
    #: Plural resource name.
    resource: str
    #: Kind.
    kind: str
    #: What installs the kind's API.
    installed_by: Installer
    #: Kueue job integration (``integrations.frameworks`` entry) that queues it; ``None`` if Kueue does not.
    kueue_framework: str | None
    #: Which teams may create, update and delete it.
    team_access: TeamAccess
    #: Where the object holds the PodSpecs of the pods it runs, as dotted paths from the object root: a
    #: segment ending ``[]`` is a list (every item), ``{}`` a map (every value). Taken from each kind's CRD or
    #: API type; admission checks every PodSpec found there. Sources: the Kubeflow CRDs of the HyperPod CLI
    #: chart (``charts/training-operators/crds/*``: ``pytorchReplicaSpecs``, ``tfReplicaSpecs``,
    #: ``xgbReplicaSpecs``, ``paddleReplicaSpecs``), ``charts/mpi-operator/templates/mpijob-crd.yaml``
    #: (v2beta1 ``mpiReplicaSpecs``), the HyperPod SDK model
    #: ``src/sagemaker/hyperpod/training/config/hyperpod_pytorch_job_unified_config.py`` (``replicaSpecs`` is a
    #: list of ``ReplicaSpec`` with ``template``), KubeRay ``ray.io/v1`` (``headGroupSpec``,
    #: ``workerGroupSpecs``, RayJob ``rayClusterSpec`` and ``submitterPodTemplate``), and the batch/apps/core
    #: API types.
    pod_specs: tuple[str, ...]
    #: The exact fields that scale, pause or resume the workload without changing what its pods run, as dotted
    #: paths in the syntax of :attr:`pod_specs`: replica counts, autoscaler bounds, ``suspend``. An UPDATE that
    #: changes only these (and the restart annotation of a pod template) keeps the workload's recorded identity
    #: whoever sends it; a key of the same name anywhere else (a label, an environment variable, a free-form map
    #: such as KubeRay's ``rayStartParams``) is what runs. Sources: the API types and CRDs named in
    #: :attr:`pod_specs`; Kubeflow's ``runPolicy.suspend`` and PyTorchJob ``elasticPolicy``; the HyperPod SDK
    #: ``RunPolicy.suspend``, ``ReplicaSpec.maxReplicas`` and the ``ElasticPolicy`` bounds; KubeRay ``ray.io/v1``
    #: ``suspend`` and ``WorkerGroupSpec`` ``replicas``, ``minReplicas``, ``maxReplicas``, ``scaleStrategy``,
    #: ``suspend``; the HyperPod SDK endpoint models' ``replicas``.
    scale_paths: tuple[str, ...] = ()


def _kubeflow_scale(replica_specs: str, *extra: str) -> tuple[str, ...]:
    return (f"spec.{replica_specs}{{}}.replicas", "spec.runPolicy.suspend", *extra)


def _ray_worker_scale(groups: str) -> tuple[str, ...]:
    fields = ("replicas", "minReplicas", "maxReplicas", "scaleStrategy", "suspend")
    return tuple(f"{groups}[].{f}" for f in fields)


#: Kubernetes' own controllers (kube-controller-manager, one service account per controller on EKS).
_KUBE_CONTROLLERS = (
    ControllerIdentity(
        description="Job controller", namespace="kube-system", service_account="job-controller"
    ),
    ControllerIdentity(
        description="ReplicaSet controller", namespace="kube-system", service_account="replicaset-controller"
    ),
    ControllerIdentity(
        description="Deployment controller", namespace="kube-system", service_account="deployment-controller"
    ),
    ControllerIdentity(
        description="StatefulSet controller",
        namespace="kube-system",
        service_account="statefulset-controller",
    ),
    ControllerIdentity(
        description="garbage collector", namespace="kube-system", service_account="generic-garbage-collector"
    ),
)

#: Namespace of the HyperPod inference operator (add-on and Helm chart alike).
HYPERPOD_INFERENCE_NAMESPACE = "hyperpod-inference-system"

#: The HyperPod inference operator under both of its installations. Besides Deployments it creates the
#: Services (and load balancers) of an endpoint, the only Services in tenant namespaces that may be other
#: than plain ClusterIP (:mod:`hyperpod_tenancy.k8s.tenant_guards`).
INFERENCE_OPERATORS: tuple[ControllerIdentity, ...] = (
    ControllerIdentity(
        description="HyperPod inference operator (EKS add-on)",
        namespace=HYPERPOD_INFERENCE_NAMESPACE,
        service_account="hyperpod-inference-controller-manager",
    ),
    ControllerIdentity(
        description="HyperPod inference operator (Helm chart)",
        namespace=HYPERPOD_INFERENCE_NAMESPACE,
        service_account="hyperpod-inference-operator-controller-manager",
    ),
)

#: Every controller whose requests in tenant namespaces are exempt from the workload-label rules (they
#: create child objects from templates the team wrote, which admission has already checked).
CONTROLLERS: tuple[ControllerIdentity, ...] = (
    *_KUBE_CONTROLLERS,
    ControllerIdentity(
        description="Kubeflow training operator", namespace="kubeflow", service_account="training-operator"
    ),
    ControllerIdentity(
        description="MPI operator", namespace="kube-system", service_account="dependencies-mpi-operator"
    ),
    ControllerIdentity(
        description="HyperPod training operator",
        namespace="aws-hyperpod",
        service_account="hp-training-operator-controller-manager",
    ),
    ControllerIdentity(
        description="KubeRay operator", namespace=KUBERAY_NAMESPACE, service_account="kuberay-operator"
    ),
    ControllerIdentity(
        description="Kueue", namespace="kueue-system", service_account="kueue-controller-manager"
    ),
    *INFERENCE_OPERATORS,
)

_K8S = Installer.KUBERNETES
_KF = Installer.HYPERPOD_CHART_TRAINING_OPERATORS

#: The workload kinds of tenant namespaces. Kinds absent here are neither granted nor governed.
WORKLOAD_KINDS: tuple[WorkloadKindSpec, ...] = (
    WorkloadKindSpec(
        group="batch",
        resource="jobs",
        kind="Job",
        installed_by=_K8S,
        kueue_framework="batch/job",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.template.spec",),
        scale_paths=("spec.suspend",),
    ),
    WorkloadKindSpec(
        group="kubeflow.org",
        resource="pytorchjobs",
        kind="PyTorchJob",
        installed_by=_KF,
        kueue_framework="kubeflow.org/pytorchjob",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.pytorchReplicaSpecs{}.template.spec",),
        scale_paths=_kubeflow_scale(
            "pytorchReplicaSpecs", "spec.elasticPolicy.minReplicas", "spec.elasticPolicy.maxReplicas"
        ),
    ),
    WorkloadKindSpec(
        group="kubeflow.org",
        resource="tfjobs",
        kind="TFJob",
        installed_by=_KF,
        kueue_framework="kubeflow.org/tfjob",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.tfReplicaSpecs{}.template.spec",),
        scale_paths=_kubeflow_scale("tfReplicaSpecs"),
    ),
    WorkloadKindSpec(
        group="kubeflow.org",
        resource="xgboostjobs",
        kind="XGBoostJob",
        installed_by=_KF,
        kueue_framework="kubeflow.org/xgboostjob",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.xgbReplicaSpecs{}.template.spec",),
        scale_paths=_kubeflow_scale("xgbReplicaSpecs"),
    ),
    WorkloadKindSpec(
        group="kubeflow.org",
        resource="paddlejobs",
        kind="PaddleJob",
        installed_by=_KF,
        kueue_framework="kubeflow.org/paddlejob",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.paddleReplicaSpecs{}.template.spec",),
        scale_paths=_kubeflow_scale("paddleReplicaSpecs"),
    ),
    WorkloadKindSpec(
        group="kubeflow.org",
        resource="mpijobs",
        kind="MPIJob",
        installed_by=Installer.HYPERPOD_CHART_MPI_OPERATOR,
        kueue_framework="kubeflow.org/mpijob",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.mpiReplicaSpecs{}.template.spec",),
        scale_paths=_kubeflow_scale("mpiReplicaSpecs"),
    ),
    WorkloadKindSpec(
        group="sagemaker.amazonaws.com",
        resource="hyperpodpytorchjobs",
        kind="HyperPodPyTorchJob",
        installed_by=Installer.HYPERPOD_TRAINING_OPERATOR_ADDON,
        kueue_framework=None,
        team_access=TeamAccess.ALL,
        pod_specs=("spec.replicaSpecs[].template.spec",),
        scale_paths=(
            "spec.replicaSpecs[].replicas",
            "spec.replicaSpecs[].maxReplicas",
            "spec.runPolicy.suspend",
            "spec.elasticPolicy.minReplicas",
            "spec.elasticPolicy.maxReplicas",
        ),
    ),
    WorkloadKindSpec(
        group="ray.io",
        resource="rayjobs",
        kind="RayJob",
        installed_by=Installer.KUBERAY_CHART,
        kueue_framework="ray.io/rayjob",
        team_access=TeamAccess.ALL,
        pod_specs=(
            "spec.rayClusterSpec.headGroupSpec.template.spec",
            "spec.rayClusterSpec.workerGroupSpecs[].template.spec",
            "spec.submitterPodTemplate.spec",
        ),
        scale_paths=("spec.suspend", *_ray_worker_scale("spec.rayClusterSpec.workerGroupSpecs")),
    ),
    WorkloadKindSpec(
        group="ray.io",
        resource="rayclusters",
        kind="RayCluster",
        installed_by=Installer.KUBERAY_CHART,
        kueue_framework="ray.io/raycluster",
        team_access=TeamAccess.ALL,
        pod_specs=("spec.headGroupSpec.template.spec", "spec.workerGroupSpecs[].template.spec"),
        scale_paths=("spec.suspend", *_ray_worker_scale("spec.workerGroupSpecs")),
    ),
    # The HyperPod inference operator's kinds: what `hyp create hyp-jumpstart-endpoint` and
    # `hyp create hyp-custom-endpoint` post (sagemaker-hyperpod 3.12.0 sagemaker/hyperpod/inference/config/
    # constants.py KIND_PLURAL_MAP; CRDs in the HyperPod CLI chart charts/inference-operator/config/crd/). No
    # PodSpec: the operator renders the endpoint's Deployment, which the pod-spec policy checks whoever sends it.
    WorkloadKindSpec(
        group="inference.sagemaker.aws.amazon.com",
        resource="inferenceendpointconfigs",
        kind="InferenceEndpointConfig",
        installed_by=Installer.HYPERPOD_INFERENCE_ADDON,
        kueue_framework=None,
        team_access=TeamAccess.INFERENCE,
        pod_specs=(),
        scale_paths=("spec.replicas",),
    ),
    WorkloadKindSpec(
        group="inference.sagemaker.aws.amazon.com",
        resource="jumpstartmodels",
        kind="JumpStartModel",
        installed_by=Installer.HYPERPOD_INFERENCE_ADDON,
        kueue_framework=None,
        team_access=TeamAccess.INFERENCE,
        pod_specs=(),
        scale_paths=("spec.replicas",),
    ),
    # HyperPod spaces (`hyp create hyp-space`; sagemaker-hyperpod 3.12.0 sagemaker/hyperpod/cli/constants/
    # space_constants.py: workspace.jupyter.org/v1alpha1 workspaces). Not granted: see docs/submitting-work.md, "Spaces".
    WorkloadKindSpec(
        group="workspace.jupyter.org",
        resource="workspaces",
        kind="Workspace",
        installed_by=Installer.HYPERPOD_SPACES_OPERATOR,
        kueue_framework=None,
        team_access=TeamAccess.NONE,
        pod_specs=(),
    ),
    WorkloadKindSpec(
        group="apps",
        resource="deployments",
        kind="Deployment",
        installed_by=_K8S,
        kueue_framework="deployment",
        team_access=TeamAccess.INFERENCE,
        pod_specs=("spec.template.spec",),
        scale_paths=("spec.replicas",),
    ),
    WorkloadKindSpec(
        group="apps",
        resource="statefulsets",
        kind="StatefulSet",
        installed_by=_K8S,
        kueue_framework="statefulset",
        team_access=TeamAccess.NONE,
        pod_specs=("spec.template.spec",),
        scale_paths=("spec.replicas",),
    ),
    WorkloadKindSpec(
        group="apps",
        resource="replicasets",
        kind="ReplicaSet",
        installed_by=_K8S,
        kueue_framework=None,
        team_access=TeamAccess.NONE,
        pod_specs=("spec.template.spec",),
        scale_paths=("spec.replicas",),
    ),
    WorkloadKindSpec(
        group="",
        resource="pods",
        kind="Pod",
        installed_by=_K8S,
        kueue_framework="pod",
        team_access=TeamAccess.NONE,
        pod_specs=("spec",),
    ),
)


def served_kinds() -> tuple[WorkloadKindSpec, ...]:
    """Return the kinds of :data:`WORKLOAD_KINDS` whose API an installer of :data:`PLATFORM_INSTALLERS` serves."""
    return tuple(k for k in WORKLOAD_KINDS if k.installed_by in PLATFORM_INSTALLERS)


def kinds_for(*, inference: bool) -> tuple[WorkloadKindSpec, ...]:
    """Return the served kinds a team may write: every ``ALL`` kind, plus ``INFERENCE`` kinds for inference teams."""
    allowed = {TeamAccess.ALL, TeamAccess.INFERENCE} if inference else {TeamAccess.ALL}
    return tuple(k for k in served_kinds() if k.team_access in allowed)


def controller_usernames() -> tuple[str, ...]:
    """``request.userInfo.username`` of every controller in :data:`CONTROLLERS`, in table order."""
    return tuple(c.username for c in CONTROLLERS)
