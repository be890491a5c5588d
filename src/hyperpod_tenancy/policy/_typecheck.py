"""Runtime type check of a platform built in Python (the YAML loader already guarantees types).

A Python caller without mypy can pass ``count="16"`` or ``sharing="lend"``; the semantic rules would then
fail with a ``TypeError`` deep inside. The model's validator (:mod:`._adapter`, strict) re-checks every
field of the objects; its errors become ``HPT-SCHEMA`` issues with the camelCase paths the YAML uses.
Lists are accepted where the model declares tuples.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy import _adapter
from hyperpod_tenancy.policy._adapter import Loc, Slot

_CODE = "HPT-SCHEMA"
_ROOT = "(platform)"


def type_issues(value: object, cls: type, path: str = "") -> list[PolicyIssue]:
    """Return an ``HPT-SCHEMA`` issue for every field of ``value`` whose type does not match ``cls``."""
    out: list[PolicyIssue] = []
    if value is None:  # the validator of a dataclass also admits None (see _adapter.adapter)
        _bad(path or _ROOT, f"an instance of {cls.__name__}", value, f"pass {cls.__name__}(...).", out)
    else:
        _check(value, cls, (), (cls, path), out)
    return out


#: The checked type and the path shown for it.
_Root = tuple[type, str]


def _check(value: object, hint: Any, loc: Loc, root: _Root, out: list[PolicyIssue]) -> None:
    """Validate ``value`` (found at ``loc`` under ``root``) against ``hint``, appending issues."""
    try:
        _adapter.adapter(hint).validate_python(value, by_alias=False, by_name=True)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            _report(error, loc, root, out)


def _report(error: ErrorDetails, base: Loc, root_: _Root, out: list[PolicyIssue]) -> None:
    root, prefix = root_
    loc = (*base, *error["loc"])
    if loc and loc[-1] == "[key]":
        path = _adapter.render(loc[:-2], root=root, by_name=True, prefix=prefix)
        _bad(f"{path}.{loc[-2]}", "a string key", error["input"], "pass a str key.", out)
        return
    chain = _adapter.slots(loc, root=root, by_name=True)
    cut = next((i for i in range(len(loc)) if _adapter.union_member(chain[i], loc[i]) is not None), None)
    if (
        cut is not None and len(loc) > cut + 1
    ):  # inside the mapping member: its own path, without the member name
        loc = (*loc[:cut], *loc[cut + 1 :])
        chain = _adapter.slots(loc, root=root, by_name=True)
    elif cut is not None:  # the value is none of ``int | ResourceAmount``: reported once, as a whole
        if dataclasses.is_dataclass(error["input"]):
            return  # a ResourceAmount: its own fields' errors say what is wrong in it
        path = _adapter.render(loc[:cut], root=root, by_name=True, prefix=prefix) or _ROOT
        if not any(issue.path == path for issue in out):
            options = " or ".join(_expectation(m)[0] for m in _adapter.union_members(chain[cut]))
            _bad(path, options, error["input"], f"pass {options}.", out)
        return
    slot = chain[-1]
    value = error["input"]
    if slot.origin is tuple and isinstance(value, list):
        # a list where the model says tuple is fine: check its items instead
        _check(tuple(value), slot.hint, loc, root_, out)
        return
    path = _adapter.render(loc, root=root, by_name=True, prefix=prefix) or _ROOT
    expected, fix = _expectation(slot)
    _bad(path, expected, value, fix, out)


#: Expected value and fix for the scalar types of the model.
_SCALARS: dict[Any, tuple[str, str]] = {
    bool: ("True or False", "pass a bool."),
    int: ("a whole number", "pass an int, e.g. 4."),
    str: ("a string", "pass a str."),
}


def _expectation(slot: Slot) -> tuple[str, str]:
    """Say what the model expects at ``slot``, and how to pass it."""
    hint = slot.hint
    if slot.is_dataclass:
        return f"an instance of {hint.__name__}", f"pass {hint.__name__}(...)."
    if slot.is_enum:
        return f"a {hint.__name__}", f"pass a member, e.g. {hint.__name__}.{next(iter(hint)).name}."
    if slot.origin is tuple:
        return "a tuple", "pass a tuple (or list) of items, e.g. ('a', 'b')."
    if slot.origin is dict:
        return "a dict", f"pass a dict, e.g. {_adapter.example(slot)!r}."
    return _SCALARS.get(hint, (f"a {hint!r}", f"pass a {hint!r}."))


def _bad(path: str, expected: str, value: object, fix: str, out: list[PolicyIssue]) -> None:
    out.append(PolicyIssue(path, f"expected {expected}, got {type(value).__name__} {value!r}.", fix, _CODE))
