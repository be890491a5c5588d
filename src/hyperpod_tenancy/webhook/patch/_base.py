"""The JSON Patch the webhook answers with, the identity it stamps, and the errors it refuses with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HOME_ENV",
    "STRICT",
    "STRICT_GROUPS_FIELD",
    "TEAM_VOLUME",
    "Identity",
    "JsonPatch",
    "MalformedObject",
    "Path",
    "Refused",
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
