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

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.k8s import fsx_dirs, posix_identity
from hyperpod_tenancy.k8s.labels import QUEUE_NAME_LABEL
from hyperpod_tenancy.k8s.workloads import WorkloadKindSpec

__all__ = [
    "STRICT",
    "STRICT_GROUPS_FIELD",
    "TEAM_VOLUME",
    "Identity",
    "JsonPatch",
    "MalformedObject",
    "Refused",
    "asks_strict_groups",
    "pod_spec_paths",
    "recorded_identity",
    "stamp",
    "what_runs",
]

#: Name of the team claim volume the webhook adds to a pod spec that has none.
TEAM_VOLUME = "hyperpod-tenancy-team"
#: Environment variable pointing at the home directory.
HOME_ENV = "HOME"
_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")

#: A JSON pointer as its segments.
Path = tuple[str | int, ...]


#: The pod-level field, and the value, that keep an image's ``/etc/group`` out of a container's groups.
STRICT_GROUPS_FIELD = "supplementalGroupsPolicy"
STRICT = "Strict"


class MalformedObject(Exception):  # noqa: N818 - "malformed" is what the client reads
    """The object is not shaped like its kind (a field of the wrong JSON type); the message names the field."""


class Refused(Exception):  # noqa: N818
    """The object explicitly asks for an identity the requester may not have; the message says what to change."""


@dataclass(frozen=True, kw_only=True)
class Identity:
    """Who a workload's pods run as."""

    #: The person key.
    person: str
    #: The person's UID.
    uid: int
    #: The team's GID.
    gid: int


def _pointer(path: Path) -> str:
    parts = [str(s) for s in path]
    if any("~" in p or "/" in p for p in parts):
        parts = [p.replace("~", "~0").replace("/", "~1") for p in parts]
    return "/" + "/".join(parts)


@functools.lru_cache(maxsize=4096)
def _home(uid: int, gid: int, volume: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return the home init container and mount of ``uid`` (cached: the script is rendered once per person; read-only)."""
    return (
        fsx_dirs.home_init_container(uid=uid, gid=gid, claim_volume=volume),
        fsx_dirs.home_volume_mount(uid=uid, volume=volume),
    )


def _dotted(path: Path) -> str:
    return ".".join(f"[{s}]" if isinstance(s, int) else s for s in path).replace(".[", "[")


class JsonPatch:
    """Edits a decoded object in place and records the RFC 6902 operations that do the same."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.ops: list[dict[str, Any]] = []

    def set(self, path: Path, value: Any) -> None:
        """Set the member at ``path`` (creating missing parent objects with one ``add``); no-op if equal."""
        node: Any = self.doc
        for i, seg in enumerate(path[:-1]):
            child = node.get(seg) if isinstance(node, dict) else node[seg]
            if child is None:
                nested: Any = value
                for s in reversed(path[i + 1 :]):
                    nested = {s: nested}
                self._add(node, path[: i + 1], seg, nested)
                return
            node = child
        last = path[-1]
        if isinstance(node, dict) and last in node and node[last] == value:
            return
        self._add(node, path, last, value)

    def _add(self, parent: Any, path: Path, key: str | int, value: Any) -> None:
        if isinstance(parent, dict):
            parent[key] = value
        else:
            parent[key] = value
            self.ops.append({"op": "replace", "path": _pointer(path), "value": value})
            return
        self.ops.append({"op": "add", "path": _pointer(path), "value": value})

    def put(self, parent: dict[str, Any], parent_path: Path, key: str, value: Any) -> None:
        """Set member ``key`` of the object ``parent`` (at ``parent_path``); no-op if equal."""
        if key in parent and parent[key] == value:
            return
        parent[key] = value
        self.ops.append({"op": "add", "path": _pointer((*parent_path, key)), "value": value})

    def push(
        self, parent: dict[str, Any], parent_path: Path, key: str, value: Any, *, first: bool = False
    ) -> None:
        """Append ``value`` to (or with ``first``, put it first in) the list ``parent[key]``, creating it."""
        items = parent.get(key)
        if items is None:
            self.put(parent, parent_path, key, [value])
        elif first:
            items.insert(0, value)
            self.ops.append({"op": "add", "path": _pointer((*parent_path, key, 0)), "value": value})
        else:
            items.append(value)
            self.ops.append({"op": "add", "path": _pointer((*parent_path, key)) + "/-", "value": value})


def _get(doc: Any, path: Path) -> Any:
    node = doc
    for seg in path:
        if isinstance(node, dict):
            node = node.get(seg)
        elif isinstance(node, list) and isinstance(seg, int) and seg < len(node):
            node = node[seg]
        else:
            return None
    return node


def _typed(value: Any, kind: type, path: Path) -> Any:
    if value is not None and not isinstance(value, kind):
        name = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
            kind, kind.__name__
        )
        raise MalformedObject(f"{_dotted(path)} must be {name}, got {type(value).__name__}.")
    return value


def _int_field(container: Mapping[str, Any], key: str, path: Path) -> int | None:
    value = container.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedObject(f"{_dotted((*path, key))} must be an integer, got {value!r}.")
    return value


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


def _record(ident: Identity) -> dict[str, str]:
    return {
        posix_identity.POSIX_USER_ANNOTATION: ident.person,
        posix_identity.POSIX_UID_ANNOTATION: str(ident.uid),
        posix_identity.POSIX_GID_ANNOTATION: str(ident.gid),
    }


def _stamp_annotations(patch: JsonPatch, metadata: Path, ident: Identity, *, keep: bool) -> None:
    meta = _typed(_get(patch.doc, metadata), dict, metadata) or {}
    annotations = _typed(meta.get("annotations"), dict, (*metadata, "annotations")) or {}
    record = _record(ident)
    if not annotations:
        patch.set((*metadata, "annotations"), record)  # one operation for the common case
        return
    for key, value in record.items():
        current = annotations.get(key)
        if keep and current is not None and current != value:
            raise Refused(
                f"{_dotted((*metadata, 'annotations'))}[{key}] {current!r} would change the workload's "
                f"recorded identity ({value!r}); the identity a workload was created with is kept."
            )
        patch.set((*metadata, "annotations", key), value)


def stamp(
    obj: dict[str, Any],
    *,
    kind: WorkloadKindSpec,
    ident: Identity,
    home_claim: str,
    keep: bool,
    default_queue: str | None,
    previous: Identity | None = None,
    strict_groups: bool = False,
) -> tuple[list[dict[str, Any]], list[str]]:
    """Stamp ``ident`` on ``obj`` (edited in place) and return the JSONPatch operations and the warnings.

    Args:
        obj: the request's object.
        kind: its kind's row of the workload table.
        ident: who its pods run as.
        home_claim: the team claim holding the home directories.
        keep: UPDATE of a workload with a recorded identity: a different UID or record is refused, not replaced.
        default_queue: the LocalQueue to set when ``kueue.x-k8s.io/queue-name`` is absent (None: leave it).
        previous: the identity the object recorded before a re-stamp (an UPDATE by another person that changes
            what runs): its UIDs and home mount are replaced by ``ident``'s instead of being refused.
        strict_groups: set ``supplementalGroupsPolicy: Strict`` (replacing any other value): the runtime then
            adds no group the image's ``/etc/group`` lists.

    Raises:
        Refused: the object explicitly asks for root, another group or another recorded identity.
        MalformedObject: a field has the wrong JSON type.

    """
    patch = JsonPatch(obj)
    warnings: list[str] = []
    metadata_paths: dict[Path, None] = {("metadata",): None}
    for path, spec in pod_spec_paths(obj, kind):
        warnings += _stamp_pod_spec(
            patch,
            spec,
            path,
            ident,
            keep=keep,
            claim=home_claim,
            previous=previous,
            strict_groups=strict_groups,
        )
        metadata_paths[(*path[:-1], "metadata")] = None
    for metadata in metadata_paths:
        _stamp_annotations(patch, metadata, ident, keep=keep)
    if default_queue is not None:
        _default_queue(patch, default_queue)
    return patch.ops, warnings


def _default_queue(patch: JsonPatch, queue: str) -> None:
    labels = _typed(_get(patch.doc, ("metadata", "labels")), dict, ("metadata", "labels")) or {}
    if QUEUE_NAME_LABEL not in labels:
        patch.set(("metadata", "labels", QUEUE_NAME_LABEL), queue)


#: The pod-template annotation ``kubectl rollout restart`` sets: a restart of the same code.
RESTARTED_AT_ANNOTATION = "kubectl.kubernetes.io/restartedAt"


def _nodes_at(root: Any, dotted: str) -> list[Any]:
    """Return the nodes at a table path (``[]`` every item, ``{}`` every value), skipping other shapes."""
    nodes: list[Any] = [root]
    for segment in dotted.split("."):
        name = segment.removesuffix("[]").removesuffix("{}")
        found: list[Any] = []
        for node in nodes:
            child = node.get(name) if isinstance(node, dict) else None
            if segment.endswith("[]") and isinstance(child, list):
                found += child
            elif segment.endswith("{}") and isinstance(child, dict):
                found += list(child.values())
            elif not segment.endswith(("[]", "{}")) and child is not None:
                found.append(child)
        nodes = found
    return nodes


def what_runs(obj: Mapping[str, Any], kind: WorkloadKindSpec) -> Any:
    """Return the part of an object that decides what its pods run: its ``spec`` without its scale fields.

    Everything under ``spec`` counts (the pod templates, and fields outside them that reach the pods: a RayJob's
    ``entrypoint`` and ``runtimeEnvYAML``, KubeRay's ``autoscalerOptions``, ``rayStartParams``...), except the
    kind's :attr:`~hyperpod_tenancy.k8s.workloads.WorkloadKindSpec.scale_paths` and the restart annotation
    :data:`RESTARTED_AT_ANNOTATION` of each pod template: scaling, suspending and restarting run the same code.
    Only those exact paths are ignored: a key of the same name elsewhere (a label, an environment variable, a
    free-form map such as ``rayStartParams``, whose values KubeRay writes into the pod's ``ray start`` command
    line) is part of what runs.
    """
    root = {"spec": copy.deepcopy(obj.get("spec"))}
    for dotted in kind.scale_paths:
        parent, _, leaf = dotted.rpartition(".")
        for node in _nodes_at(root, parent):
            if isinstance(node, dict):
                node.pop(leaf, None)
    for dotted in kind.pod_specs:
        template = dotted.rpartition(".")[0]
        if not template:  # a bare Pod: its metadata is outside the spec
            continue
        for node in _nodes_at(root, f"{template}.metadata.annotations"):
            if isinstance(node, dict):
                node.pop(RESTARTED_AT_ANNOTATION, None)
    return root["spec"]


def recorded_identity(obj: Mapping[str, Any]) -> Identity | None:
    """Return the identity recorded on a stored object's annotations, or None when it carries no (complete) record."""
    meta = obj.get("metadata")
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):
        return None
    person = annotations.get(posix_identity.POSIX_USER_ANNOTATION)
    uid = annotations.get(posix_identity.POSIX_UID_ANNOTATION)
    gid = annotations.get(posix_identity.POSIX_GID_ANNOTATION)
    if not (isinstance(person, str) and isinstance(uid, str) and isinstance(gid, str)):
        return None
    if not (uid.isdecimal() and gid.isdecimal()):
        return None
    return Identity(person=person, uid=int(uid), gid=int(gid))
