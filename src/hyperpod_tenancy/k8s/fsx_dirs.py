"""The one mechanism that creates directories on the shared FSx for Lustre file system.

Two callers, one shell function (:func:`ensure_directory_script`):

* the platform's FSx directory Job (:func:`hyperpod_tenancy.k8s.team_manifests.fsx_directory_job`), running as
  root in the platform namespace, keeps ``/fsx`` ``root:root`` ``0755``, and creates ``/fsx/<team>``
  (``root:<team GID>``, mode ``3770``: setgid, so files inherit the team group, and sticky, so no teammate can
  rename or remove ``home`` or anything else a teammate owns there) and ``/fsx/<team>/home`` (``root:<team
  GID>``, mode ``3770``: a teammate can create their own home directory there but never rename, remove or
  replace another one's). So every path component above a home directory belongs to root in a directory only
  root may rename entries of: the path the home directory is checked at and the path kubelet mounts are the
  same directory, and no teammate can swap one in between (the image pull of the workload gives them minutes);
* the POSIX identity webhook injects :func:`home_init_container` into every pod of a person: running *as that
  person* (their UID, the team GID, non-root, no capabilities, no privilege escalation) it creates
  ``/fsx/<team>/home/<uid>`` with mode ``0700`` on first use, and :func:`home_volume_mount` mounts it at
  :data:`HOME_MOUNT_PATH` in the workload's containers.

The shell function never follows a symbolic link and checks what it finds: with ``owner="set"`` (root) it makes
the directory right (``chown``/``chmod``), with ``owner="require"`` (the person) it refuses, with a message naming
the directory, its owner and what to do, a directory that another user owns (a teammate who created
``home/<uid>`` first to read the person's files: the sticky parent stops them renaming it away later, the
owner check stops the person ever writing into it). Both are idempotent: a second run changes nothing.

Why the home directory is created by the person's own init container rather than by the platform Job: the
Job cannot know the UIDs in advance (they are allocated on first sight, see ``hyperpod_tenancy.webhook``), and
an init container running as the person needs neither root nor ``CHOWN`` in the team namespace, whose pod
security level the platform keeps at ``restricted``/``baseline``.
"""

from __future__ import annotations

import shlex
from typing import Any, Literal

__all__ = [
    "BUSYBOX_IMAGE",
    "FSX_ROOT_MODE",
    "HOME_DIRECTORY",
    "HOME_INIT_CONTAINER_NAME",
    "HOME_MODE",
    "HOME_MOUNT_PATH",
    "HOME_PARENT_MODE",
    "MODELS_DIRECTORY",
    "MODELS_MODE",
    "SQUATTED_EXIT_CODE",
    "TEAM_DIRECTORY_MODE",
    "TEAM_MOUNT_PATH",
    "OwnerMode",
    "ensure_directory_script",
    "home_init_container",
    "home_subpath",
    "home_volume_mount",
]

#: Image of the directory-creating containers (the FSx directory Job and the home init container), pinned by
#: tag (ECR Public mirror of Docker Hub's ``busybox``; its ``sh``, ``stat -c``, ``mkdir`` are all we need).
BUSYBOX_IMAGE = "public.ecr.aws/docker/library/busybox:1.37.0"
#: Directory under a team's directory that holds the per-person home directories: ``/fsx/<team>/home``.
HOME_DIRECTORY = "home"
#: Mode of ``/fsx/<team>``: setgid (new files and directories inherit the team group) + sticky (only an entry's
#: owner may rename or remove it: ``home`` stays where it is) + ``rwxrwx---``.
TEAM_DIRECTORY_MODE = "3770"
#: Mode of ``/fsx`` itself: root's, no one else may create, rename or remove a team directory.
FSX_ROOT_MODE = "755"
#: Mode of ``/fsx/<team>/home``: setgid + sticky (only a directory's owner may rename or remove it) + ``rwxrwx---``.
HOME_PARENT_MODE = "3770"
#: Directory under a team's directory for the team's shared models, the only FSx place an inference endpoint may
#: load a model from (``modelSourceConfig.modelLocation`` ``<team>/models/...``): ``/fsx/<team>/models``.
MODELS_DIRECTORY = "models"
#: Mode of ``/fsx/<team>/models``: setgid + sticky + ``rwxrwx---``, like ``home``'s parent: every teammate may add
#: a model, none may rename or remove another's.
MODELS_MODE = "3770"
#: Mode of ``/fsx/<team>/home/<uid>``: the person only.
HOME_MODE = "700"
#: Where a person's home directory is mounted in their workload's containers (and ``HOME`` points).
HOME_MOUNT_PATH = "/home/hyperpod"
#: Name of the init container the webhook injects to create the home directory.
HOME_INIT_CONTAINER_NAME = "hyperpod-tenancy-home"
#: Where the home init container mounts the team claim (the claim's root is ``/fsx/<team>``).
TEAM_MOUNT_PATH = "/fsx-team"
#: Exit status of the script when a directory exists with the wrong owner and it may not fix it.
SQUATTED_EXIT_CODE = 3

#: ``set``: the script runs as root and makes owner and group right; ``require``: it runs as the owner and
#: refuses a directory owned by anyone else.
OwnerMode = Literal["set", "require"]

# POSIX sh (dash, busybox ash). Arguments: path uid gid mode owner-mode. Never follows a symbolic link:
# ``[ -L ]`` first, and ``stat`` without ``-L`` describes the link itself.
_ENSURE_DIR = """\
ensure_dir() {
  d="$1"; uid="$2"; gid="$3"; mode="$4"; owner="$5"
  parent=$(dirname "$d")
  if [ ! -d "$parent" ]; then
    echo "hyperpod-tenancy: $parent does not exist yet; the platform's FSx directory Job creates it (kubectl get jobs -n hyperpod-tenancy-system)." >&2
    exit 2
  fi
  if [ -L "$d" ]; then
    echo "hyperpod-tenancy: refusing $d: it is a symbolic link (owned by uid $(stat -c %u "$d")), not a directory. Ask the platform team to remove it." >&2
    exit 3
  fi
  mkdir -m 700 "$d" 2>/dev/null || true
  if [ ! -d "$d" ]; then
    echo "hyperpod-tenancy: refusing $d: it exists and is not a directory. Ask the platform team to remove it." >&2
    exit 3
  fi
  if [ "$(stat -c %u "$d")" != "$uid" ]; then
    if [ "$owner" = set ]; then
      chown "$uid" "$d"
    else
      echo "hyperpod-tenancy: refusing $d: it belongs to uid $(stat -c %u "$d"), not to you (uid $uid). Someone created it before your first job; ask the platform team to remove it (nothing of yours is in it)." >&2
      exit 3
    fi
  fi
  if [ "$(stat -c %g "$d")" != "$gid" ]; then
    chgrp "$gid" "$d"
  fi
  chmod "$(printf %05d "$mode")" "$d"
  if [ "$(stat -c %a "$d")" != "$mode" ]; then
    echo "hyperpod-tenancy: $d has mode $(stat -c %a "$d") after chmod $mode; the file system did not keep it." >&2
    exit 4
  fi
  stat -c "%n %u:%g %a" "$d"
}
"""


def _normalise_mode(mode: str) -> str:
    """``mode`` as ``stat -c %a`` prints it (no leading zeros); the script passes it zero-padded to five digits to ``chmod``.

    The leading zero matters: GNU ``chmod`` keeps a directory's setgid bit for a numeric mode of up to four
    digits and clears it only for five (``chmod 00700``); busybox ``chmod`` sets the mode exactly either way.
    """
    if not mode or any(c not in "01234567" for c in mode) or len(mode.lstrip("0")) > 4:
        raise ValueError(f"mode {mode!r} is not an octal file mode such as 2770")
    return mode.lstrip("0") or "0"


def ensure_directory_script(directories: list[tuple[str, int, int, str]], *, owner: OwnerMode) -> str:
    """Return a POSIX shell script that ensures each ``(path, uid, gid, mode)`` directory, in order.

    Each directory is created if absent (its parent must exist: a missing parent fails with exit status 2 and a
    message pointing at the FSx directory Job), must not be a symbolic link or a file, and ends owned by
    ``uid:gid`` with exactly ``mode`` (octal, e.g. ``"2770"``). ``owner="set"`` fixes a wrong owner (run as
    root); ``owner="require"`` refuses it with exit status :data:`SQUATTED_EXIT_CODE` (run as ``uid``). The
    group is fixed in both modes (the owner may ``chgrp`` to a group it is in). Each directory's final
    ``path uid:gid mode`` is printed, so the container log shows what it found.
    """
    if owner not in ("set", "require"):
        raise ValueError(f"owner must be 'set' or 'require', not {owner!r}")
    lines = ["set -eu", _ENSURE_DIR.rstrip("\n")]
    for path, uid, gid, mode in directories:
        if uid < 0 or gid < 0:
            raise ValueError(f"uid and gid of {path} must be >= 0, got {uid}:{gid}")
        args = (path, str(uid), str(gid), _normalise_mode(mode), owner)
        lines.append("ensure_dir " + " ".join(shlex.quote(a) for a in args))
    return "\n".join(lines)


def home_subpath(uid: int) -> str:
    """Path of a person's home directory relative to the team claim's root: ``home/<uid>``."""
    return f"{HOME_DIRECTORY}/{uid}"


def home_init_container(*, uid: int, gid: int, claim_volume: str) -> dict[str, Any]:
    """Return the init container that creates ``/fsx/<team>/home/<uid>`` (mode ``0700``, ``uid:gid``) as the person.

    ``claim_volume`` is the name of the pod volume on the team claim (``persistentVolumeClaim: {claimName:
    fsx}``), mounted at :data:`TEAM_MOUNT_PATH`. It runs as ``uid``/``gid`` (``runAsNonRoot``), drops every
    capability, allows no privilege escalation and has a read-only root file system, so it passes the
    platform's validating policy like the workload's own containers. It fails (the pod does not start) when
    ``home/<uid>`` exists with another owner or is a symbolic link, with a message saying so.
    """
    if uid < 1 or gid < 1:
        raise ValueError(f"the home init container runs as a non-root uid:gid, got {uid}:{gid}")
    script = ensure_directory_script(
        [(f"{TEAM_MOUNT_PATH}/{home_subpath(uid)}", uid, gid, HOME_MODE)], owner="require"
    )
    return {
        "name": HOME_INIT_CONTAINER_NAME,
        "image": BUSYBOX_IMAGE,
        "command": ["sh", "-c", script],
        "securityContext": {
            "runAsUser": uid,
            "runAsGroup": gid,
            "runAsNonRoot": True,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi"},
        },
        "volumeMounts": [{"name": claim_volume, "mountPath": TEAM_MOUNT_PATH}],
    }


def home_volume_mount(*, uid: int, volume: str) -> dict[str, Any]:
    """Return the mount of ``home/<uid>`` of the team claim volume ``volume`` at :data:`HOME_MOUNT_PATH`."""
    return {"name": volume, "mountPath": HOME_MOUNT_PATH, "subPath": home_subpath(uid)}
