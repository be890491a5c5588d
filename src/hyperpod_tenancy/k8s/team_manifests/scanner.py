"""A team's checkpoint scanner: a CronJob reading ``/fsx/<team>`` and writing each workload's newest checkpoint."""

from __future__ import annotations

from importlib import resources

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.team_manifests._common import (
    _KUEUE_GROUP,
    _RBAC_GROUP,
    FSX_CLAIM_NAME,
    SYSTEM_NAMESPACE,
    Manifest,
    _labels,
    _meta,
    _rule,
)
from hyperpod_tenancy.k8s.team_manifests.storage import fsx_root_read_only_pod_spec
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import (
    Team,
)

__all__ = [
    "CHECKPOINT_SCANNER_IMAGE",
    "CHECKPOINT_SCAN_DEADLINE_SECONDS",
    "CHECKPOINT_SCAN_MINUTES",
    "CHECKPOINT_SCAN_SCHEDULE",
    "checkpoint_scanner",
]

#: Image of the checkpoint scanner: the stock Python image the POSIX identity webhook's Dockerfile is based on
#: (``webhook/Dockerfile``, ``FROM``; a test keeps the two equal), from the ECR Public mirror of Docker's
#: official images the platform's Jobs already pull from (busybox), pinned by tag as the Dockerfile pins it, not
#: by digest. The scanner is one standard-library file, mounted from a ConfigMap: no image of ours to build or
#: push.
CHECKPOINT_SCANNER_IMAGE = "public.ecr.aws/docker/library/python:3.12-slim"


#: How often the checkpoint scanner runs (cron; every 5 minutes reads the same in any time zone).
CHECKPOINT_SCAN_SCHEDULE = "*/5 * * * *"


#: Minutes between two scans: the freshness the eviction collector allows on top of a declared interval.
CHECKPOINT_SCAN_MINUTES = 5


#: Longest run of one scan, pod start-up included, in seconds: ended before the next schedule.
CHECKPOINT_SCAN_DEADLINE_SECONDS = 240


#: Where the scanner's ConfigMap (its one Python file) is mounted.
_SCANNER_DIR = "/opt/checkpoint-scanner"


_SCANNER_FILE = "checkpoint_scanner.py"


def checkpoint_scanner(team: Team) -> list[Manifest]:
    """Render the team's checkpoint scanner: a CronJob in :data:`SYSTEM_NAMESPACE` and its least-privilege RBAC.

    Returns, in apply order: the ServiceAccount ``checkpoint-scan-<team>`` (:func:`~hyperpod_tenancy.policy.names.
    checkpoint_scanner`) and the ConfigMap holding the scanner (:mod:`hyperpod_tenancy.runtime.checkpoint_scanner`,
    one standard-library file) in :data:`SYSTEM_NAMESPACE`; a Role of the same name in the team namespace with
    ``get``, ``list`` and ``patch`` on Kueue ``workloads`` only (list to find them, patch to write
    :data:`~hyperpod_tenancy.k8s.labels.LAST_CHECKPOINT_ANNOTATION`; RBAC cannot narrow a patch to one
    annotation, so the scanner's code writes that one key, from its environment) and the RoleBinding granting
    it to the ServiceAccount; and the CronJob.

    The CronJob runs every :data:`CHECKPOINT_SCAN_MINUTES` minutes (``concurrencyPolicy: Forbid``: never two
    scans of a team at once; a run that cannot start within 4 minutes of its schedule is skipped, and one that
    runs longer than :data:`CHECKPOINT_SCAN_DEADLINE_SECONDS`, waiting for a node included, is ended, so a stuck
    scan never blocks the next ones; the CronJob controller keeps the last successful and the last three failed Jobs
    to look at, and deletes older ones). Its pod is :func:`fsx_root_read_only_pod_spec`: the team's root claim mounted
    read-only on ``/fsx``, as UID :data:`NOBODY_UID` with the team's GID as its only group, no capability, no
    privilege escalation, a read-only root file system, on a healthy HyperPod node (the Lustre client), image
    :data:`CHECKPOINT_SCANNER_IMAGE`.
    """
    name = names.checkpoint_scanner(team.name)
    source = (resources.files("hyperpod_tenancy.runtime") / _SCANNER_FILE).read_text(encoding="utf-8")
    env = {
        "NAMESPACE": names.namespace(team.name),
        "TEAM_DIRECTORY": names.fsx_directory(team.name),
        "FSX_ROOT": names.FSX_ROOT,
        "CLAIM_NAME": FSX_CLAIM_NAME,
        "DIR_ENV": labels.CHECKPOINT_DIR_ENV,
        "LAST_CHECKPOINT_ANNOTATION": labels.LAST_CHECKPOINT_ANNOTATION,
    }
    container = {
        "name": "scan",
        "image": CHECKPOINT_SCANNER_IMAGE,
        # isolated mode: no PYTHON* variable, no user site, no script directory on the import path
        "command": ["python", "-I", f"{_SCANNER_DIR}/{_SCANNER_FILE}"],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {
            "requests": {"cpu": "50m", "memory": "64Mi"},
            "limits": {"cpu": "500m", "memory": "256Mi"},
        },
        "volumeMounts": [
            {"name": "fsx-root", "mountPath": names.FSX_MOUNT_PATH, "readOnly": True},
            {"name": "scanner", "mountPath": _SCANNER_DIR, "readOnly": True},
        ],
    }
    pod = fsx_root_read_only_pod_spec(
        team.name, container=container, gid=team.identity.posix_gid, service_account=name
    )
    pod["volumes"].append({"name": "scanner", "configMap": {"name": name}})
    team_ns = names.namespace(team.name)
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "automountServiceAccountToken": False,
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "data": {_SCANNER_FILE: source},
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "Role",
            "metadata": _meta(name, team, team_ns),
            "rules": [_rule(_KUEUE_GROUP, ("workloads",), ("get", "list", "patch"))],
        },
        {
            "apiVersion": f"{_RBAC_GROUP}/v1",
            "kind": "RoleBinding",
            "metadata": _meta(name, team, team_ns),
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": SYSTEM_NAMESPACE}],
            "roleRef": {"apiGroup": _RBAC_GROUP, "kind": "Role", "name": name},
        },
        {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": _meta(name, team, SYSTEM_NAMESPACE),
            "spec": {
                "schedule": CHECKPOINT_SCAN_SCHEDULE,
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": CHECKPOINT_SCAN_DEADLINE_SECONDS,
                "successfulJobsHistoryLimit": 1,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": _labels(team)},
                    "spec": {
                        "backoffLimit": 0,
                        "activeDeadlineSeconds": CHECKPOINT_SCAN_DEADLINE_SECONDS,
                        "template": {"metadata": {"labels": _labels(team)}, "spec": pod},
                    },
                },
            },
        },
    ]
