"""The JSONPatch that stamps a person's POSIX identity on a workload, and the refusals of explicit conflicts.

For every PodSpec of the object (the paths of :data:`hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS`; a bare
Pod's is ``spec``):

* ``securityContext``: ``runAsUser`` = the person's UID, ``runAsGroup`` = ``fsGroup`` = the team GID,
  ``supplementalGroups`` = ``[GID]``, ``runAsNonRoot: true``, and ``supplementalGroupsPolicy: Strict`` where the
  nodes support it (``strict_groups``);
* a container's own ``securityContext.runAsUser`` (which overrides the pod's) becomes the UID, and every
  container and init container gets ``allowPrivilegeEscalation: false`` (``true`` is refused: a setuid binary
  of the image would run as root);
* the home directory: the team claim volume (``persistentVolumeClaim: {claimName: <home.claimName>}``, added as
  :data:`TEAM_VOLUME` when the pod has none), the init container of
  :func:`hyperpod_tenancy.k8s.fsx_dirs.home_init_container` first among the init containers, and in every
  other container the mount of ``home/<uid>`` at :data:`~hyperpod_tenancy.k8s.fsx_dirs.HOME_MOUNT_PATH` and
  ``HOME`` pointing there (unless the container sets ``HOME`` itself);
* the annotations of :mod:`hyperpod_tenancy.k8s.posix_identity` on the object and on each pod template.

Refused (:class:`Refused`, a denial the user reads): running as root (``runAsUser: 0``), a group other than the
team's (``runAsGroup``, ``fsGroup``, ``supplementalGroups``, at pod or container level), ``runAsNonRoot: false``,
another mount at the home path. On UPDATE (``keep=True``) a ``runAsUser`` other than the recorded UID is refused
too (the identity is kept, never changed); on CREATE another non-root ``runAsUser`` is replaced by the person's
UID with a warning.

Only what differs is patched, and a field the API server defaulted (``imagePullPolicy``,
``terminationMessagePath``...) is not a difference, so an unchanged UPDATE gets an empty patch (pod templates of
Jobs are immutable). A value of the wrong JSON type is a :class:`MalformedObject` (HTTP 400).
"""

from __future__ import annotations

from hyperpod_tenancy.webhook.patch._base import (
    STRICT,
    STRICT_GROUPS_FIELD,
    TEAM_VOLUME,
    Identity,
    JsonPatch,
    MalformedObject,
    Refused,
)
from hyperpod_tenancy.webhook.patch.changes import recorded_identity, what_runs
from hyperpod_tenancy.webhook.patch.pod_spec import asks_strict_groups, harden, pod_spec_paths
from hyperpod_tenancy.webhook.patch.stamp import stamp

__all__ = [
    "STRICT",
    "STRICT_GROUPS_FIELD",
    "TEAM_VOLUME",
    "Identity",
    "JsonPatch",
    "MalformedObject",
    "Refused",
    "asks_strict_groups",
    "harden",
    "pod_spec_paths",
    "recorded_identity",
    "stamp",
    "what_runs",
]
