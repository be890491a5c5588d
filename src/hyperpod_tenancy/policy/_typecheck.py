"""Runtime type check of a platform built in Python (the YAML loader already guarantees types).

A Python caller without mypy can pass ``count="16"`` or ``sharing="lend"``; the semantic rules would then
fail with a ``TypeError`` deep inside. This walk reports such values as ``HPT-SCHEMA`` issues with the same
camelCase paths the YAML uses.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.errors import PolicyIssue

_CODE = "HPT-SCHEMA"
_ROOT = "(platform)"
#: snake_case fields whose YAML spelling is not plain camelCase.
_SPELLING = {
    "ebs_volume_gib": "ebsVolumeGiB",
    "storage_capacity_gib": "storageCapacityGiB",
    "memory_gib": "memoryGiB",
}


def yaml_key(field_name: str) -> str:
    """Return the ``platform.yaml`` key of a dataclass field (``posix_gid`` -> ``posixGid``)."""
    if field_name in _SPELLING:
        return _SPELLING[field_name]
    first, *rest = field_name.split("_")
    return first + "".join(part.capitalize() for part in rest)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def type_issues(value: object, cls: type, path: str = "") -> list[PolicyIssue]:
    """Return an ``HPT-SCHEMA`` issue for every field of ``value`` whose type does not match ``cls``."""
    out: list[PolicyIssue] = []
    _check(value, cls, path or _ROOT, out)
    return out


def _check(value: object, hint: Any, path: str, out: list[PolicyIssue]) -> None:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return
        hint = next(o for o in options if o is not type(None))
        origin = typing.get_origin(hint)
    if origin is tuple:
        _check_sequence(value, typing.get_args(hint)[0], path, out)
    elif origin is dict:
        _check_mapping(value, typing.get_args(hint)[1], path, out)
    elif dataclasses.is_dataclass(hint):
        _check_dataclass(value, typing.cast(type, hint), path, out)
    else:
        _check_scalar(value, hint, path, out)


def _check_dataclass(value: object, cls: type, path: str, out: list[PolicyIssue]) -> None:
    if not isinstance(value, cls):
        _bad(path, f"an instance of {cls.__name__}", value, f"pass {cls.__name__}(...).", out)
        return
    hints = _hints(cls)
    for field in dataclasses.fields(cls):
        sub = yaml_key(field.name) if path == _ROOT else f"{path}.{yaml_key(field.name)}"
        _check(getattr(value, field.name), hints[field.name], sub, out)


def _check_scalar(value: object, hint: Any, path: str, out: list[PolicyIssue]) -> None:
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if not isinstance(value, hint):
            example = next(iter(hint))
            _bad(
                path, f"a {hint.__name__}", value, f"pass a member, e.g. {hint.__name__}.{example.name}.", out
            )
    elif hint is bool:
        if not isinstance(value, bool):
            _bad(path, "True or False", value, "pass a bool.", out)
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _bad(path, "a whole number", value, "pass an int, e.g. 4.", out)
    elif hint is str and not isinstance(value, str):
        _bad(path, "a string", value, "pass a str.", out)


def _check_sequence(value: object, item: Any, path: str, out: list[PolicyIssue]) -> None:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        _bad(path, "a tuple", value, "pass a tuple (or list) of items, e.g. ('a', 'b').", out)
        return
    for i, element in enumerate(value):
        _check(element, item, f"{path}[{i}]", out)


def _check_mapping(value: object, item: Any, path: str, out: list[PolicyIssue]) -> None:
    if not isinstance(value, Mapping):
        _bad(path, "a dict", value, "pass a dict, e.g. {'ml.p5.48xlarge': 4}.", out)
        return
    for key, element in value.items():
        if not isinstance(key, str):
            _bad(f"{path}.{key}", "a string key", key, "use the instance type name as the key.", out)
        _check(element, item, f"{path}.{key}", out)


def _bad(path: str, expected: str, value: object, fix: str, out: list[PolicyIssue]) -> None:
    out.append(PolicyIssue(path, f"expected {expected}, got {type(value).__name__} {value!r}.", fix, _CODE))
