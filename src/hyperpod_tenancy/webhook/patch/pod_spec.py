"""One pod spec made to run as the person: their UID, the team's GID, their home, and nothing that escapes it."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec
from hyperpod_tenancy.webhook.patch._base import (
    _CONTAINER_LISTS,
    HOME_ENV,
    STRICT,
    STRICT_GROUPS_FIELD,
    TEAM_VOLUME,
    Identity,
    JsonPatch,
    MalformedObject,
    Path,
    Refused,
    _dotted,
    _int_field,
    _typed,
)

__all__ = ["asks_strict_groups", "harden", "pod_spec_paths"]


@functools.lru_cache(maxsize=4096)
def _home(uid: int, gid: int, volume: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the home init container and mount of ``uid`` (cached: the script is rendered once per person; read-only)."""
    return (
        fsx_dirs.home_init_container(uid=uid, gid=gid, claim_volume=volume),
        fsx_dirs.home_volume_mount(uid=uid, volume=volume),
    )


def pod_spec_paths(obj: Mapping[str, Any], kind: WorkloadKindSpec) -> list[tuple[Path, dict[str, Any]]]:
    """Every PodSpec of ``obj`` present at the kind's ``pod_specs`` paths (``[]`` a list, ``{}`` a map), with its path."""
    found: list[tuple[Path, dict[str, Any]]] = []
    for dotted in kind.pod_specs:
        frontier: list[tuple[Path, Any]] = [((), obj)]
        for segment in dotted.split("."):
            name = segment.removesuffix("[]").removesuffix("{}")
            expanded: list[tuple[Path, Any]] = []
            for path, node in frontier:
                child = node.get(name)
                here = (*path, name)
                if child is None:
                    continue
                if segment.endswith("[]"):
                    expanded += [((*here, i), v) for i, v in enumerate(_typed(child, list, here))]
                elif segment.endswith("{}"):
                    expanded += [((*here, k), v) for k, v in _typed(child, dict, here).items()]
                else:
                    expanded.append((here, child))
            frontier = [(p, _typed(v, dict, p)) for p, v in expanded if v is not None]
        found += frontier
    return found


def _where(path: Path) -> str:
    return _dotted(path) or "the pod spec"


def _check_groups(sc: Mapping[str, Any], path: Path, ident: Identity) -> None:
    for key in ("runAsGroup", "fsGroup"):
        value = _int_field(sc, key, path)
        if value is not None and value != ident.gid:
            what = "the root group" if value == 0 else f"group {value}"
            raise Refused(
                f"{_where(path)}.{key} asks to run as {what}; pods in this namespace run with the team's GID "
                f"{ident.gid}. Remove {key} or set it to {ident.gid}."
            )
    groups = _typed(sc.get("supplementalGroups"), list, (*path, "supplementalGroups")) or []
    foreign = [g for g in groups if g != ident.gid]
    if foreign:
        raise Refused(
            f"{_where(path)}.supplementalGroups asks for groups {foreign}; pods in this namespace have only the "
            f"team's GID {ident.gid}. Remove supplementalGroups or set it to [{ident.gid}]."
        )


def _check_user(sc: Mapping[str, Any], path: Path, ident: Identity, *, keep: bool) -> int | None:
    """Refuse root, ``runAsNonRoot: false`` and (when ``keep``) a UID change; return a foreign non-root UID."""
    uid = _int_field(sc, "runAsUser", path)
    if sc.get("runAsNonRoot") is False:
        raise Refused(
            f"{_where(path)}.runAsNonRoot is false; pods in this namespace never run as root. Remove it or set "
            "it to true."
        )
    if uid == 0:
        raise Refused(
            f"{_where(path)}.runAsUser asks to run as root (0); pods in this namespace run as the person who "
            f"submits them ({ident.person}, UID {ident.uid}). Remove runAsUser or set it to {ident.uid}."
        )
    if uid is not None and uid != ident.uid:
        if keep:
            raise Refused(
                f"{_where(path)}.runAsUser {uid} would change the workload's recorded identity "
                f"({ident.person}, UID {ident.uid}); the identity a workload was created with is kept. Leave "
                "runAsUser unchanged, or create a new workload."
            )
        return uid
    return None


def _is_subset(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` holds every field of ``expected`` (fields the API server defaulted may be extra)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(_is_subset(v, actual.get(k)) for k, v in expected.items())
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(_is_subset(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return bool(expected == actual)


def _containers(spec: Mapping[str, Any], path: Path) -> list[tuple[str, int, dict[str, Any]]]:
    found = []
    for list_name in _CONTAINER_LISTS:
        items = _typed(spec.get(list_name), list, (*path, list_name)) or []
        for i, c in enumerate(items):
            found.append((list_name, i, _typed(c, dict, (*path, list_name, i)) or {}))
    return found


def _team_volume(patch: JsonPatch, spec: dict[str, Any], path: Path, claim: str) -> str:
    volumes = _typed(spec.get("volumes"), list, (*path, "volumes")) or []
    for i, v in enumerate(volumes):
        vol = _typed(v, dict, (*path, "volumes", i)) or {}
        pvc = _typed(vol.get("persistentVolumeClaim"), dict, (*path, "volumes", i, "persistentVolumeClaim"))
        if pvc is not None and pvc.get("claimName") == claim and isinstance(vol.get("name"), str):
            return str(vol["name"])
        if vol.get("name") == TEAM_VOLUME:
            raise Refused(
                f"{_where(path)}.volumes[{i}] uses the name {TEAM_VOLUME}, which the platform reserves for the "
                f"team claim {claim!r}. Rename that volume."
            )
    patch.push(spec, path, "volumes", {"name": TEAM_VOLUME, "persistentVolumeClaim": {"claimName": claim}})
    return TEAM_VOLUME


def _stamp_home(
    patch: JsonPatch,
    spec: dict[str, Any],
    path: Path,
    ident: Identity,
    *,
    claim: str,
    previous: Identity | None = None,
) -> None:
    volume = _team_volume(patch, spec, path, claim)
    init, mount = _home(ident.uid, ident.gid, volume)
    old_mount = None if previous is None else _home(previous.uid, previous.gid, volume)[1]
    inits = spec.get("initContainers") or []
    ours = [i for i, c in enumerate(inits) if c.get("name") == fsx_dirs.HOME_INIT_CONTAINER_NAME]
    if not ours:
        patch.push(spec, path, "initContainers", init, first=True)
    elif not _is_subset(init, inits[ours[0]]):
        patch.set((*path, "initContainers", ours[0]), init)
    for list_name, i, container in _containers(spec, path):
        if list_name == "ephemeralContainers" or container.get("name") == fsx_dirs.HOME_INIT_CONTAINER_NAME:
            continue
        here = (*path, list_name, i)
        mounts = _typed(container.get("volumeMounts"), list, (*here, "volumeMounts")) or []
        at_home = [
            (j, m)
            for j, m in enumerate(mounts)
            if isinstance(m, dict) and m.get("mountPath") == mount["mountPath"]
        ]
        if not at_home:
            patch.push(container, here, "volumeMounts", mount)
        elif old_mount is not None and _is_subset(old_mount, at_home[0][1]):
            patch.set((*here, "volumeMounts", at_home[0][0]), mount)  # re-stamped: the new person's home
        elif not _is_subset(mount, at_home[0][1]):
            raise Refused(
                f"{_dotted(here)} mounts {at_home[0][1].get('name')!r} at {mount['mountPath']}, the path of "
                f"your home directory (/fsx/<team>/home/{ident.uid}). Mount it elsewhere."
            )
        env = _typed(container.get("env"), list, (*here, "env")) or []
        if not any(isinstance(e, dict) and e.get("name") == HOME_ENV for e in env):
            patch.push(container, here, "env", {"name": HOME_ENV, "value": fsx_dirs.HOME_MOUNT_PATH})


def _stamp_pod_spec(
    patch: JsonPatch,
    spec: dict[str, Any],
    path: Path,
    ident: Identity,
    *,
    keep: bool,
    claim: str,
    previous: Identity | None = None,
    strict_groups: bool = False,
) -> list[str]:
    sc_path = (*path, "securityContext")
    sc = _typed(spec.get("securityContext"), dict, sc_path) or {}
    warnings: list[str] = []
    _check_groups(sc, sc_path, ident)
    replaced = _check_user(sc, sc_path, ident, keep=keep)
    if replaced is not None:
        warnings.append(f"{_dotted(sc_path)}.runAsUser {replaced} replaced by your UID {ident.uid}.")
    for list_name, i, container in _containers(spec, path):
        csc_path = (*path, list_name, i, "securityContext")
        csc = _typed(container.get("securityContext"), dict, csc_path) or {}
        _check_groups(csc, csc_path, ident)
        if _check_user(csc, csc_path, ident, keep=keep) is not None:
            warnings.append(f"{_dotted(csc_path)}.runAsUser replaced by your UID {ident.uid}.")
            patch.put(csc, csc_path, "runAsUser", ident.uid)
        if csc.get("allowPrivilegeEscalation") is True:
            raise Refused(
                f"{_dotted(csc_path)}.allowPrivilegeEscalation is true; a setuid program would then run as "
                "root. Remove it or set it to false."
            )
        if list_name != "ephemeralContainers":
            if "securityContext" not in container:
                patch.put(
                    container, (*path, list_name, i), "securityContext", {"allowPrivilegeEscalation": False}
                )
            else:
                patch.put(csc, csc_path, "allowPrivilegeEscalation", False)
    wanted = {
        "runAsUser": ident.uid,
        "runAsGroup": ident.gid,
        "fsGroup": ident.gid,
        "supplementalGroups": [ident.gid],
        "runAsNonRoot": True,
        **({STRICT_GROUPS_FIELD: STRICT} if strict_groups else {}),
    }
    if "securityContext" not in spec:
        patch.put(spec, path, "securityContext", wanted)  # one operation for the common case
    else:
        for key, value in wanted.items():
            patch.put(sc, sc_path, key, value)
    _stamp_home(patch, spec, path, ident, claim=claim, previous=previous)
    return warnings


def harden(
    obj: dict[str, Any], *, kind: WorkloadKindSpec, gid: int, strict_groups: bool = False
) -> list[dict[str, Any]]:
    """Fill what a controller's object leaves unset, for a pod of the team: never a person's identity.

    Pods and objects a controller creates (job-controller's Pods, the Kubeflow operator's ``init-pytorch``
    container, the inference operator's Deployment) are not a person's: no UID is resolved and nothing they set
    is replaced or refused here. Only what they leave unset is filled: ``allowPrivilegeEscalation: false`` on
    every container and init container, and at pod level ``runAsNonRoot: true`` and the team GID as
    ``runAsGroup``, ``fsGroup`` and ``supplementalGroups`` (and ``supplementalGroupsPolicy: Strict`` with
    ``strict_groups``), so that pods the validating policy would refuse for a missing field run instead. A value
    the controller sets stays, and the validating policy judges it.

    Returns:
        The JSONPatch operations (``obj`` is edited in place).

    Raises:
        MalformedObject: a field has the wrong JSON type.

    """
    patch = JsonPatch(obj)
    for path, spec in pod_spec_paths(obj, kind):
        for list_name, i, container in _containers(spec, path):
            if list_name == "ephemeralContainers":
                continue
            here = (*path, list_name, i)
            csc = _typed(container.get("securityContext"), dict, (*here, "securityContext"))
            if csc is None:
                patch.put(container, here, "securityContext", {"allowPrivilegeEscalation": False})
            elif "allowPrivilegeEscalation" not in csc:
                patch.put(csc, (*here, "securityContext"), "allowPrivilegeEscalation", False)
        defaults: dict[str, Any] = {
            "runAsNonRoot": True,
            "runAsGroup": gid,
            "fsGroup": gid,
            "supplementalGroups": [gid],
            **({STRICT_GROUPS_FIELD: STRICT} if strict_groups else {}),
        }
        sc_path = (*path, "securityContext")
        sc = _typed(spec.get("securityContext"), dict, sc_path)
        if sc is None:
            patch.put(spec, path, "securityContext", defaults)
        else:
            for key, value in defaults.items():
                if key not in sc:
                    patch.put(sc, sc_path, key, value)
    return patch.ops


def asks_strict_groups(obj: Mapping[str, Any], kind: WorkloadKindSpec) -> bool:
    """Whether every pod template of ``obj`` (at least one) sets ``supplementalGroupsPolicy: Strict``.

    A malformed object (a stored one the API server accepted) counts as not asking.
    """
    try:
        specs = [spec for _, spec in pod_spec_paths(obj, kind)]
    except MalformedObject:
        return False
    return bool(specs) and all(
        isinstance(sc := spec.get("securityContext"), Mapping) and sc.get(STRICT_GROUPS_FIELD) == STRICT
        for spec in specs
    )
