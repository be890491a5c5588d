"""What a team member meets at admission on a synthesized platform: its real policies, namespaces and objects.

The tenant-hostile suites (``tests/test_hostile_*.py``) read the ValidatingAdmissionPolicies and the team
namespace labels out of the synthesized CloudFormation templates (either fairness backend) and evaluate them
with the standard CEL engine of :mod:`cel_admission`. Honest objects are rendered in the shape the real
clients produce; each builder cites where the shape comes from. Their PodSpecs carry what the POSIX identity
webhook stamps before validation runs (:func:`posix_stamp`: the submitter's UID, the team GID, non-root, no
privilege escalation), since that is the object the validating policies see.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from cel_admission import TEAM_MEMBER, AdmissionDecision, evaluate_policies
from platforms import reference_platform
from synth import Synth, manifests_in, resources_of

from hyperpod_tenancy.k8s import labels as klabels
from hyperpod_tenancy.k8s import workloads
from hyperpod_tenancy.k8s.team_manifests import FSX_CLAIM_NAME
from hyperpod_tenancy.policy import FairnessBackend, names

#: ``request.userInfo`` of each controller, by description (the identities of the one table).
CONTROLLER = {
    c.description: {"username": c.username, "groups": ["system:serviceaccounts"]}
    for c in workloads.CONTROLLERS
}
#: The garbage collector, the MPI operator and others by short name.
JOB_CONTROLLER = CONTROLLER["Job controller"]
REPLICASET_CONTROLLER = CONTROLLER["ReplicaSet controller"]
DEPLOYMENT_CONTROLLER = CONTROLLER["Deployment controller"]
MPI_OPERATOR = CONTROLLER["MPI operator"]
KUBEFLOW_OPERATOR = CONTROLLER["Kubeflow training operator"]
HYPERPOD_OPERATOR = CONTROLLER["HyperPod training operator"]
KUBERAY_OPERATOR = CONTROLLER["KubeRay operator"]
KUEUE = CONTROLLER["Kueue"]
MEMBER = dict(TEAM_MEMBER)

#: The checkpoint declaration of the honest objects: where the job writes its checkpoints and how often, as the
#: container environment variables admission, the eviction collector and the scanner read. Pass it as
#: ``annotations=CHECKPOINT`` (or merged with other annotations) to a builder: every builder takes these two
#: names out of the annotations and places them where a checkpoint is declared, in every container of every
#: pod template, below a mount of the team FSx claim at ``/fsx/<team>`` (:func:`place_checkpoint`).
CHECKPOINT = {
    klabels.CHECKPOINT_DIR_ENV: "/fsx/research/runs/exp-1",
    klabels.CHECKPOINT_INTERVAL_ENV: "30m",
}
GPU = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/train:1"


#: Start of the denial of a kind Kueue has no job integration for, on the ``kueue`` backend
#: (``admission.workload_labels._unqueued_kind_validations``).
KUEUE_REFUSAL = "HyperPodPyTorchJob (sagemaker.amazonaws.com/hyperpodpytorchjobs) is not supported with fairnessBackend: kueue"


def on_kueue(synth: Synth) -> bool:
    """Whether ``synth`` runs the self-managed Kueue backend (which refuses HyperPodPyTorchJob)."""
    return synth.platform.fairness_backend is FairnessBackend.KUEUE


def assert_refused_on_kueue(decision: AdmissionDecision) -> None:
    """The only denial is the kueue backend's refusal of HyperPodPyTorchJob, naming the fix."""
    (message,) = decision.denied
    assert message.startswith(KUEUE_REFUSAL) and "kubeflow.org PyTorchJob" in message, message


def policies(synth: Synth) -> list[dict[str, Any]]:
    """The admission policies and bindings the cluster stack applies."""
    kinds = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
    return [o for o in synth.manifests() if o["kind"] in kinds]


def namespace(synth: Synth, team: str) -> dict[str, Any]:
    """The team namespace as the API server holds it: labels from the team stack (manifest or label patch)."""
    template = synth.team(team)
    labels: dict[str, str] = {}
    for obj in manifests_in(template):
        if obj["kind"] == "Namespace" and obj["metadata"]["name"] == names.namespace(team):
            labels = dict(obj["metadata"]["labels"])
    for patch in resources_of(template, "Custom::AWSCDK-EKS-KubernetesPatch").values():
        body = json.loads(patch["Properties"]["ApplyPatchJson"])
        labels.update(body.get("metadata", {}).get("labels", {}))
    assert labels, f"no namespace labels for {team} in the team stack"
    labels["kubernetes.io/metadata.name"] = names.namespace(team)  # set by the API server
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": names.namespace(team), "labels": labels},
    }


def member(team: str) -> dict[str, Any]:
    """``request.userInfo`` of a member of ``team`` (its Kubernetes group, as the access entry maps it)."""
    return {
        "username": "mallory@example.com",
        "groups": [names.kubernetes_group(team), "system:authenticated"],
    }


def decide(
    synth: Synth,
    obj: dict[str, Any],
    *,
    team: str = "research",
    operation: str = "CREATE",
    user: dict[str, Any] | None = None,
    old: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    resource: str | None = None,
) -> AdmissionDecision:
    """Admission of one request on ``obj`` (group and resource from its kind via the workload table)."""
    group, plural = group_resource(obj)
    return evaluate_policies(
        policies(synth),
        obj=obj,
        namespace=namespace(synth, team),
        group=group,
        resource=resource or plural,
        operation=operation,
        user_info=user if user is not None else MEMBER,
        old_object=old,
        options=options,
    )


def group_resource(obj: dict[str, Any]) -> tuple[str, str]:
    """API group and plural resource of a workload object (from :data:`workloads.WORKLOAD_KINDS`)."""
    group = obj["apiVersion"].rpartition("/")[0]
    (spec,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == obj["kind"] and k.group == group]
    return spec.group, spec.resource


def kueue_labels(team: str = "research", priority: str = "training-priority") -> dict[str, str]:
    """The two Kueue labels of a team's work."""
    return {"kueue.x-k8s.io/queue-name": names.local_queue(team), "kueue.x-k8s.io/priority-class": priority}


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """Every PodSpec of a workload object, at the paths the workload table gives its kind."""
    group = obj["apiVersion"].rpartition("/")[0]
    (spec,) = [k for k in workloads.WORKLOAD_KINDS if k.kind == obj["kind"] and k.group == group]
    found: list[dict[str, Any]] = []

    def walk(node: Any, segments: list[str]) -> None:
        if not segments:
            if isinstance(node, dict):
                found.append(node)
            return
        head, rest = segments[0], segments[1:]
        field = head.removesuffix("[]").removesuffix("{}")
        value = node.get(field) if isinstance(node, dict) else None
        if value is None:
            return
        if head.endswith("[]"):
            for item in value:
                walk(item, rest)
        elif head.endswith("{}"):
            for item in value.values():
                walk(item, rest)
        else:
            walk(value, rest)

    for path in spec.pod_specs:
        walk(obj, path.split("."))
    return found


def place_checkpoint(obj: dict[str, Any], team: str) -> dict[str, Any]:
    """Move the :data:`CHECKPOINT` variables given among ``obj``'s annotations into its containers' environment.

    Each container of each pod template gets them, with a writable mount of the team's FSx claim at
    ``/fsx/<team>`` (the PodSpec gets the claim's volume), as ``hyp create hyp-pytorch-job --volume
    name=fsx,type=pvc,mount_path=/fsx/<team>,claim_name=fsx --environment '{...}'`` renders them.
    """
    obj = copy.deepcopy(obj)
    annotations = obj["metadata"].get("annotations") or {}
    declared = {k: annotations.pop(k) for k in list(annotations) if k in CHECKPOINT}
    if not declared:
        return obj
    for spec in pod_specs(obj):
        volumes = spec.setdefault("volumes", [])
        if not any(v.get("name") == FSX_CLAIM_NAME for v in volumes):
            volumes.append({"name": FSX_CLAIM_NAME, "persistentVolumeClaim": {"claimName": FSX_CLAIM_NAME}})
        for container in spec.get("containers", []):
            env = container.setdefault("env", [])
            env += [{"name": k, "value": v} for k, v in declared.items()]
            mounts = container.setdefault("volumeMounts", [])
            mount = {"name": FSX_CLAIM_NAME, "mountPath": names.fsx_directory(team)}
            if mount not in mounts:
                mounts.append(mount)
    return obj


def _meta(
    name: str, team: str, labels: dict[str, str] | None, annotations: dict[str, str] | None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": names.namespace(team)}
    if labels is not None:
        meta["labels"] = dict(labels)
    if annotations is not None:
        meta["annotations"] = dict(annotations)
    return meta


#: The UID the webhook gave the honest submitter of these objects (the first UID of the reference range).
SUBMITTER_UID = 200_000


def team_gid(team: str) -> int:
    """The reference platform's POSIX GID of ``team``."""
    return reference_platform().team(team).identity.posix_gid


def posix_stamp(spec: dict[str, Any], team: str, *, uid: int = SUBMITTER_UID) -> dict[str, Any]:
    """``spec`` as the POSIX identity webhook leaves it: pod securityContext with ``uid`` and the team GID, and
    ``allowPrivilegeEscalation: false`` on every container (``hyperpod_tenancy.webhook``'s patch)."""
    gid = team_gid(team)
    stamped = copy.deepcopy(spec)
    stamped["securityContext"] = {
        **stamped.get("securityContext", {}),
        "runAsUser": uid,
        "runAsGroup": gid,
        "fsGroup": gid,
        "supplementalGroups": [gid],
        "runAsNonRoot": True,
    }
    for field in ("containers", "initContainers", "ephemeralContainers"):
        for container in stamped.get(field, []):
            container["securityContext"] = {
                **container.get("securityContext", {}),
                "allowPrivilegeEscalation": False,
            }
    return stamped


def pod_spec(
    *, resources: dict[str, str] | None = None, env: dict[str, str] | None = None, team: str = "research"
) -> dict[str, Any]:
    """A PodSpec with one training container, as the webhook stamped it for ``team``."""
    container: dict[str, Any] = {"name": "train", "image": IMAGE, "command": ["torchrun", "train.py"]}
    if resources is not None:
        container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
    if env is not None:
        container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return posix_stamp({"restartPolicy": "Never", "containers": [container]}, team)


def job(
    team: str = "research",
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    name: str = "train",
) -> dict[str, Any]:
    """A batch/v1 Job as ``kubectl create -f`` sends it (Kubernetes Job API)."""
    return place_checkpoint(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta(name, team, labels if labels is not None else kueue_labels(team), annotations),
            "spec": {
                "suspend": True,
                "template": {"spec": spec if spec is not None else pod_spec(resources=GPU, team=team)},
            },
        },
        team,
    )


def runnable_job(name: str, *, gpus: int, team: str = "research") -> dict[str, Any]:
    """A Job a member submits to run on the cluster: one container asking ``gpus`` GPUs (request = limit), its
    checkpoint declared in the container's environment (:func:`place_checkpoint`)."""
    gpu = {"nvidia.com/gpu": str(gpus)}
    container = {
        "name": "train",
        "image": IMAGE,
        "command": ["torchrun", "train.py"],
        "resources": {"requests": gpu, "limits": dict(gpu)},
    }
    spec = {"restartPolicy": "Never", "containers": [container]}
    return job(team, name=name, annotations=dict(CHECKPOINT), spec=spec)


def pytorchjob(team: str = "research", *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A Kubeflow PyTorchJob (``kubeflow.org/v1``; HyperPod CLI chart ``charts/training-operators/crds/
    pytorchjobs.kubeflow.org-CustomResourceDefinition.yaml``: ``spec.pytorchReplicaSpecs.<Master|Worker>``)."""
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": pod_spec(resources=GPU, team=team)},
    }
    return place_checkpoint(
        {
            "apiVersion": "kubeflow.org/v1",
            "kind": "PyTorchJob",
            "metadata": _meta("pt", team, kueue_labels(team), annotations),
            "spec": {
                "pytorchReplicaSpecs": {"Master": copy.deepcopy(replica), "Worker": copy.deepcopy(replica)}
            },
        },
        team,
    )


def mpijob(team: str = "research", *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A v2beta1 MPIJob (``charts/mpi-operator/templates/mpijob-crd.yaml``: ``spec.mpiReplicaSpecs``)."""
    launcher = {"replicas": 1, "template": {"spec": pod_spec(team=team)}}
    worker = {"replicas": 2, "template": {"spec": pod_spec(resources=GPU, team=team)}}
    return place_checkpoint(
        {
            "apiVersion": "kubeflow.org/v2beta1",
            "kind": "MPIJob",
            "metadata": _meta("mpi", team, kueue_labels(team), annotations),
            "spec": {"slotsPerWorker": 8, "mpiReplicaSpecs": {"Launcher": launcher, "Worker": worker}},
        },
        team,
    )


def mpi_launcher(parent: dict[str, Any]) -> dict[str, Any]:
    """The launcher Job the MPI operator creates for ``parent`` (mpi-operator v2 ``newLauncherJob``): no Kueue
    labels of its own, a controller owner reference to the MPIJob."""
    launcher = job(labels={}, name=parent["metadata"]["name"] + "-launcher", spec=pod_spec())
    launcher["metadata"]["ownerReferences"] = [
        {
            "apiVersion": parent["apiVersion"],
            "kind": parent["kind"],
            "name": parent["metadata"]["name"],
            "uid": "8d1f9a62-mpi",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    return launcher


def hyperpod_pytorch_job(
    team: str = "research",
    *,
    priority: str = "training-priority",
    environment: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A HyperPodPyTorchJob as the ``hyp`` CLI / SDK renders it (HyperPod CLI
    ``hyperpod-pytorch-job-template/hyperpod_pytorch_job_template/v1_1/model.py`` ``to_domain`` and
    ``src/sagemaker/hyperpod/training/hyperpod_pytorch_job.py`` ``create``): the Kueue labels on the job and on
    the pod template, one replica spec named ``pod``, container ``pytorch-job-container``, ``--environment``
    as the container's ``env`` list."""
    labels = kueue_labels(team, priority)
    meta = _meta("hp-train", team, labels, annotations)
    container: dict[str, Any] = {
        "name": "pytorch-job-container",
        "image": IMAGE,
        "resources": {"requests": dict(GPU), "limits": dict(GPU)},
    }
    if environment:
        container["env"] = [{"name": k, "value": v} for k, v in environment.items()]
    template = {
        "metadata": {"name": "hp-train", "namespace": names.namespace(team), "labels": dict(labels)},
        "spec": posix_stamp(
            {
                "containers": [container],
                "nodeSelector": {"node.kubernetes.io/instance-type": "ml.p5.48xlarge"},
            },
            team,
        ),
    }
    return place_checkpoint(
        {
            "apiVersion": "sagemaker.amazonaws.com/v1",
            "kind": "HyperPodPyTorchJob",
            "metadata": meta,
            "spec": {
                "nprocPerNode": "8",
                "replicaSpecs": [{"name": "pod", "replicas": 2, "template": template}],
            },
        },
        team,
    )


def raycluster(team: str = "research", *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """A KubeRay ``ray.io/v1`` RayCluster (``spec.headGroupSpec.template``, ``spec.workerGroupSpecs[].template``)."""
    return place_checkpoint(
        {
            "apiVersion": "ray.io/v1",
            "kind": "RayCluster",
            "metadata": _meta("ray", team, kueue_labels(team), annotations),
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": pod_spec(team=team)}},
                "workerGroupSpecs": [
                    {
                        "groupName": "gpu",
                        "replicas": 2,
                        "rayStartParams": {},
                        "template": {"spec": pod_spec(resources=GPU, team=team)},
                    }
                ],
            },
        },
        team,
    )


def deployment(team: str = "inference", *, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    """An inference Deployment (``apps/v1``) with the team's queue and class on the object."""
    return place_checkpoint(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta("llm", team, kueue_labels(team, "inference-priority"), annotations),
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "llm"}},
                "template": {
                    "metadata": {"labels": {"app": "llm"}},
                    "spec": pod_spec(resources={"nvidia.com/gpu": "4"}, team=team),
                },
            },
        },
        team,
    )


def child(
    kind: str,
    parent: dict[str, Any],
    *,
    spec: dict[str, Any],
    api_version: str = "v1",
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An object a controller creates for ``parent`` (a controller owner reference, the parent's namespace)."""
    meta: dict[str, Any] = {
        "name": parent["metadata"]["name"] + "-" + kind.lower(),
        "namespace": parent["metadata"]["namespace"],
        "labels": dict(labels or {}),
        "ownerReferences": [
            {
                "apiVersion": parent["apiVersion"],
                "kind": parent["kind"],
                "name": parent["metadata"]["name"],
                "uid": "uid-" + parent["metadata"]["name"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, "spec": spec}
