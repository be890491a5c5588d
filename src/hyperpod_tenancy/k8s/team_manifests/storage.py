"""A team's FSx for Lustre volume and claim, and the Job that creates its directories before anyone mounts them."""

from __future__ import annotations

from dataclasses import dataclass

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.fsx_dirs import (
    BUSYBOX_IMAGE,
    FSX_ROOT_MODE,
    HOME_DIRECTORY,
    HOME_PARENT_MODE,
    MODELS_DIRECTORY,
    MODELS_MODE,
    TEAM_DIRECTORY_MODE,
    ensure_directory_script,
)
from hyperpod_tenancy.k8s.team_manifests._common import (
    FSX_CLAIM_NAME,
    FSX_CSI_DRIVER,
    NOBODY_UID,
    SYSTEM_NAMESPACE,
    Manifest,
    _labels,
    _meta,
)
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import (
    Platform,
    Team,
)

__all__ = ["FsxVolume", "fsx_directory_job", "fsx_root_pod_spec", "fsx_root_read_only_pod_spec"]


@dataclass(frozen=True, kw_only=True)
class FsxVolume:
    """The shared FSx for Lustre file system as the CSI driver needs it.

    Every value may be a CDK token string (e.g. ``file_system.file_system_id``,
    ``file_system.dns_name``, ``file_system.mount_name``); the renderers only concatenate them.
    """

    #: File system ID, ``fs-...``.
    file_system_id: str
    #: DNS name of the file system, ``fs-....fsx.<region>.amazonaws.com``.
    dns_name: str
    #: Lustre mount name of the file system (``LustreMountName``).
    mount_name: str


def _storage(platform: Platform) -> str:
    return f"{platform.cluster.fsx.storage_capacity_gib}Gi"


def _fsx_pv(
    platform: Platform,
    team: Team | None,
    *,
    name: str,
    handle: str,
    mount_name: str,
    claim_namespace: str,
    claim: str,
    fsx: FsxVolume,
) -> Manifest:
    # The CSI node plugin mounts ``<dnsname>@tcp:/<mountname>``; a mount name of ``<mount>/<dir>`` mounts
    # that Lustre subdirectory. ``volumeHandle`` must be unique per PV: kubelet identifies a mounted CSI
    # volume by driver and handle, so two PVs sharing the file system ID could be confused on one node.
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": _meta(name, team),
        "spec": {
            "capacity": {"storage": _storage(platform)},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "",
            "mountOptions": ["flock"],
            # Pre-bound: only this claim can ever bind the volume, so no other namespace can claim it.
            "claimRef": {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "namespace": claim_namespace,
                "name": claim,
            },
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": handle,
                "volumeAttributes": {"dnsname": fsx.dns_name, "mountname": mount_name},
            },
        },
    }


def _fsx_pvc(platform: Platform, team: Team, *, name: str, namespace: str, volume: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(name, team, namespace),
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": "",
            "volumeName": volume,
            "resources": {"requests": {"storage": _storage(platform)}},
        },
    }


def _team_fsx(platform: Platform, team: Team, fsx: FsxVolume) -> list[Manifest]:
    """Render the static PV on ``/fsx/<team>`` (Retain, pre-bound) and the team's claim ``fsx`` on it."""
    volume = names.fsx_volume(team.name)
    ns = names.namespace(team.name)
    return [
        _fsx_pv(
            platform,
            team,
            name=volume,
            handle=names.fsx_volume_handle(fsx.file_system_id, team.name),
            mount_name=f"{fsx.mount_name}/{team.name}",
            claim_namespace=ns,
            claim=FSX_CLAIM_NAME,
            fsx=fsx,
        ),
        _fsx_pvc(platform, team, name=FSX_CLAIM_NAME, namespace=ns, volume=volume),
    ]


def _directory_script(team: Team) -> str:
    """Return the FSx directory Job's script: ``/fsx/<team>``, its ``home`` and ``models`` through :mod:`.fsx_dirs`."""
    path = names.fsx_directory(team.name)
    gid = team.identity.posix_gid
    return ensure_directory_script(
        [
            (names.FSX_MOUNT_PATH, 0, 0, FSX_ROOT_MODE),
            (path, 0, gid, TEAM_DIRECTORY_MODE),
            (f"{path}/{HOME_DIRECTORY}", 0, gid, HOME_PARENT_MODE),
            (f"{path}/{MODELS_DIRECTORY}", 0, gid, MODELS_MODE),
        ],
        owner="set",
    )


def _fsx_root_spec(
    team: str,
    *,
    container: Manifest,
    security_context: Manifest,
    read_only: bool,
    service_account: str | None,
) -> Manifest:
    """Return the pod spec of :func:`fsx_root_pod_spec` and :func:`fsx_root_read_only_pod_spec` (one place)."""
    claim: Manifest = {"claimName": names.fsx_root_claim(team)}
    if read_only:
        claim["readOnly"] = True
    spec: Manifest = {
        "restartPolicy": "Never",
        "automountServiceAccountToken": service_account is not None,
        "enableServiceLinks": False,
        "securityContext": {**security_context, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": labels.NODE_HEALTH_LABEL, "operator": "In", "values": ["Schedulable"]}
                            ]
                        }
                    ]
                }
            }
        },
        "containers": [container],
        "volumes": [{"name": "fsx-root", "persistentVolumeClaim": claim}],
    }
    if service_account is not None:
        spec = {"serviceAccountName": service_account, **spec}
    return spec


def fsx_root_pod_spec(team: str, *, container: Manifest) -> Manifest:
    """Return the pod spec of a Job that works on the team's FSx directory as root: ``container`` on ``/fsx``.

    The volume is the team's root claim ``fsx-root-<team>`` (in :data:`SYSTEM_NAMESPACE`, as ``fsx-root``); the
    pod runs as root with the runtime's seccomp profile, no service account token and no service links, once,
    on a healthy HyperPod node (the HyperPod AMI has the Lustre client, see :func:`fsx_directory_job`). The
    container brings its own capabilities and limits.
    """
    return _fsx_root_spec(
        team,
        container=container,
        security_context={"runAsUser": 0, "runAsGroup": 0},
        read_only=False,
        service_account=None,
    )


def fsx_root_read_only_pod_spec(
    team: str, *, container: Manifest, gid: int, service_account: str
) -> Manifest:
    """Return the pod spec of a Job that reads the team's FSx directory as the team group: ``container`` on ``/fsx``.

    The read-only variant of :func:`fsx_root_pod_spec`: the same claim and node placement, the claim mounted
    read-only (``persistentVolumeClaim.readOnly``; mount it ``readOnly`` in the container too), as the
    unprivileged UID :data:`NOBODY_UID` whose only group is the team's ``gid`` (``runAsNonRoot``), so the kernel
    lets it into ``/fsx/<team>`` (``3770`` of that group) and no other team's directory. It runs as
    ``service_account`` with its token mounted, for a container that calls the Kubernetes API.
    """
    return _fsx_root_spec(
        team,
        container=container,
        security_context={"runAsUser": NOBODY_UID, "runAsGroup": gid, "runAsNonRoot": True},
        read_only=True,
        service_account=service_account,
    )


def fsx_directory_job(platform: Platform, team: Team, *, fsx: FsxVolume) -> list[Manifest]:
    """Objects in :data:`SYSTEM_NAMESPACE` that create ``/fsx/<team>`` once (idempotently).

    Returns a PersistentVolume on the file-system root (``volumeHandle`` ``<fs-id>::root-<team>``, unique
    per team so that each team's stack owns its own objects), its claim ``fsx-root-<team>`` and the Job
    ``fsx-dir-<team>``: busybox running :func:`~hyperpod_tenancy.k8s.fsx_dirs.ensure_directory_script` on
    ``/fsx`` (``root:root``, ``0755``), ``/fsx/<team>`` (``root:<team posix_gid>``, mode ``3770``: the setgid bit
    makes new files inherit the team group, the sticky bit stops a teammate renaming ``home`` away) and ``/fsx/<team>/home`` (same owner, mode ``3770``: setgid + sticky, so each person's
    ``home/<uid>``, created by the webhook's init container as that person, cannot be renamed or replaced by a
    teammate). Re-running it changes nothing once the directories are right; it never follows a symbolic
    link. The pod runs as root with all capabilities dropped but ``CHOWN``, ``FOWNER`` (chmod a
    directory someone else may own) and ``FSETID`` (keep the setgid bit although root is not in the
    group), no privilege escalation, a read-only root file system and no service account token. It is
    pinned to healthy HyperPod nodes (``sagemaker.amazonaws.com/node-health-status: Schedulable``): the
    HyperPod AMI has the Lustre client, while the EKS AL2023 AMI of the system nodes does not ship it
    (awslabs/amazon-eks-ami#2696: the maintainers keep ``lustre-client`` out of the AMI). It is deleted 10
    minutes after it finishes and ``backoffLimit`` 4 bounds failing runs.

    It has no ``activeDeadlineSeconds``: the deadline counts from the Job's start, including the time its pod
    waits for a node, and with on-start deep health checks a new HyperPod node is ``Schedulable`` only after
    about two hours (HyperPod resiliency: deep health checks), longer still with a training plan whose capacity
    starts later. A deadline would kill the Job before it ever ran; without one, a pod that cannot be scheduled
    or mounted waits (and shows as Pending in ``kubectl get pods -n hyperpod-tenancy-system``).

    Apply after :func:`system_namespace`; the team's pods can start before the Job has run (kubelet
    retries the mount until the directory exists).
    """
    claim = names.fsx_root_claim(team.name)
    volume = names.fsx_root_volume(team.name)
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.fsx_directory_job(team.name), team, SYSTEM_NAMESPACE),
        "spec": {
            "backoffLimit": 4,
            "ttlSecondsAfterFinished": 600,
            "template": {
                "metadata": {"labels": _labels(team)},
                "spec": fsx_root_pod_spec(
                    team.name,
                    container={
                        "name": "mkdir",
                        "image": BUSYBOX_IMAGE,
                        "command": ["sh", "-c", _directory_script(team)],
                        "securityContext": {
                            "allowPrivilegeEscalation": False,
                            "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"], "add": ["CHOWN", "FOWNER", "FSETID"]},
                        },
                        "resources": {
                            "requests": {"cpu": "10m", "memory": "16Mi"},
                            "limits": {"cpu": "100m", "memory": "64Mi"},
                        },
                        "volumeMounts": [{"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH}],
                    },
                ),
            },
        },
    }
    return [
        _fsx_pv(
            platform,
            team,
            name=volume,
            handle=names.fsx_root_volume_handle(fsx.file_system_id, team.name),
            mount_name=fsx.mount_name,
            claim_namespace=SYSTEM_NAMESPACE,
            claim=claim,
            fsx=fsx,
        ),
        _fsx_pvc(platform, team, name=claim, namespace=SYSTEM_NAMESPACE, volume=volume),
        job,
    ]
