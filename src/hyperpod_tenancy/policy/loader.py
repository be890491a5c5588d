"""Load a :class:`~hyperpod_tenancy.policy.model.Platform` from YAML (camelCase keys).

The model's validator (:mod:`._adapter`: pydantic over the dataclasses, strict, unknown keys refused) reads the
document; this module only turns its errors into :class:`~hyperpod_tenancy.errors.PolicyIssue` s in the YAML's
words (path, bad value, fix, "did you mean"). Structural problems (unknown keys, wrong types, missing required
keys, duplicate YAML keys) are collected together with the semantic ones from
:func:`~hyperpod_tenancy.policy.validation.validate_platform` and raised once as a
:class:`~hyperpod_tenancy.errors.PolicyError`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy import _adapter
from hyperpod_tenancy.policy._adapter import Loc, Slot
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.rules import inputs_of
from hyperpod_tenancy.policy.validation import mark_valid, validate_platform

__all__ = ["load_platform", "platform_from_dict"]

_SCHEMA = "HPT-SCHEMA"
_YAML = "HPT-YAML"
#: Path shown for the document itself (the root mapping has no key).
_ROOT = "(document)"
#: Rounds of "validate, then repair what failed"; each round repairs every error it sees, so two suffice.
_MAX_ROUNDS = 5


def _kind(value: object) -> str:
    kinds = {
        type(None): "nothing",
        bool: "boolean",
        int: "number",
        float: "number",
        str: "string",
        list: "list",
        dict: "mapping",
    }
    return kinds.get(type(value), type(value).__name__)


def _words(name: str) -> str:
    """Spell a class name as words: ``DeepHealthCheck`` -> ``deep health check``."""
    return "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()


def _without_nulls(data: object) -> object:
    """Copy ``data`` without the ``key:`` entries that have no value: YAML's empty value means "not set"."""
    if isinstance(data, Mapping):
        return {k: _without_nulls(v) for k, v in data.items() if v is not None}
    if isinstance(data, list):
        return [_without_nulls(v) for v in data]
    return data


def _placeholder(slot: Slot) -> object:
    """Make a well-typed stand-in for a value that is missing or broken (so the other rules can still run)."""
    if slot.optional:
        return None
    if slot.is_dataclass:
        return {
            key: _placeholder(slot.child(key)) for key, f in slot.fields().items() if _adapter.required(f)
        }
    if slot.is_enum:
        return next(iter(slot.hint)).value
    return {tuple: [], dict: {}}.get(slot.origin, {bool: False, int: 0, float: 0.0, str: ""}.get(slot.hint))


#: Keys people write for a key of the model that spelling alone would not suggest (``gpus`` looks like ``vcpus``).
_SYNONYMS = {"gpus": "accelerators", "gpu": "accelerators", "count": "instances", "memory": "memoryGiB"}


def _lookup(data: object, loc: Loc) -> object:
    for segment in loc:
        data = data[segment]  # type: ignore[index]
    return data


def _number_as_text(error: ErrorDetails, parent: Slot) -> bool:
    """Tell whether ``error`` is a whole number given for a text field: YAML reads unquoted 1234 as a number."""
    return error["type"] == "string_type" and type(error["input"]) is int and parent.is_dataclass


def _one_per_choice(data: object, errors: list[ErrorDetails]) -> list[ErrorDetails]:
    """Keep, for a value that may be one of several types, only the errors of the type it was written as.

    Pydantic tries every member of ``int | ResourceAmount`` and reports each failure under the member's name
    (``...quotas.ml.p5.48xlarge.int``). A mapping keeps the errors of the mapping type (an unknown key in it), and
    anything else one error at the value itself, worded for the whole choice.
    """
    kept: list[ErrorDetails] = []
    seen: set[Loc] = set()
    for error in errors:
        loc = error["loc"]
        cut = _union_cut(loc)
        if cut is None:
            kept.append(error)
            continue
        value = _lookup(data, loc[:cut])
        member = _adapter.slots(loc[: cut + 1])[-1]
        if isinstance(value, dict):
            if (
                member.is_dataclass
            ):  # a key of the mapping: its own path; the other members' errors say nothing
                kept.append({**error, "loc": loc[:cut] + loc[cut + 1 :]})
        elif loc[:cut] not in seen:
            seen.add(loc[:cut])
            kept.append({**error, "loc": loc[:cut], "type": "union_choice", "input": value})
    return kept


def _union_cut(loc: Loc) -> int | None:
    """Return the index of the first union member name in ``loc`` (None: it has none)."""
    chain = _adapter.slots(loc)
    for i in range(len(loc)):
        if chain[i].is_union and _adapter.union_member(chain[i], loc[i]) is not None:
            return i
    return None


def _repair(data: object, error: ErrorDetails) -> None:
    """Change ``data`` in place so that ``error`` does not recur: drop, default or stand in for the value."""
    loc = error["loc"]
    if not loc:
        return
    *parents, last = loc
    container: Any = _lookup(data, tuple(parents))
    parent = _adapter.slots(tuple(parents))[-1]
    slot = parent.child(last)
    if error["type"] == "unexpected_keyword_argument":
        del container[last]
    elif _number_as_text(error, parent):
        container[last] = str(error["input"])
    elif parent.is_dataclass and slot.field is not None and not _adapter.required(slot.field):
        del container[last]  # the default applies
    elif parent.origin is dict:
        del container[last]
    else:
        container[last] = _placeholder(slot)


def _issue(data: object, error: ErrorDetails) -> PolicyIssue | None:
    """Word one validator error the YAML's way (None: no problem, e.g. an unquoted number as text)."""
    loc, kind = error["loc"], error["type"]
    chain = _adapter.slots(loc)
    slot, parent = chain[-1], chain[-2 if loc else -1]
    key = str(loc[-1]) if loc else ""
    if _number_as_text(error, parent):
        return None
    if kind == "unexpected_keyword_argument":
        allowed = list(parent.fields())
        close = (
            [_SYNONYMS[key]]
            if _SYNONYMS.get(key) in allowed
            else difflib.get_close_matches(key, allowed, n=1)
        )
        hint = f"did you mean `{close[0]}`?" if close else f"allowed keys here: {', '.join(allowed)}."
        message, fix = f"unknown key `{key}`.", f"remove or rename it; {hint}"
    elif kind == "missing":
        message, fix = "required key is missing (or empty).", f"add `{key}:` with a value here."
    elif (
        parent.origin is tuple
        and not slot.is_dataclass
        and not (slot.is_enum and isinstance(error["input"], str))
    ):
        loc = loc[:-1]  # a list of strings is reported as a whole
        message, fix = _wrong_value(_slot_at(loc), _lookup(data, loc), str(loc[-1]))
    elif slot.is_enum:
        message, fix = _wrong_choice(slot, error["input"], in_list=parent.origin is tuple)
    elif slot.is_union:
        message, fix = _wrong_member(slot, f"{_kind(error['input'])} {error['input']!r}", key)
    else:
        message, fix = _wrong_value(slot, error["input"], key)
    return PolicyIssue(_adapter.render(loc) or _ROOT, message, fix, _SCHEMA)


def _slot_at(loc: Loc) -> Slot:
    return _adapter.slots(loc)[-1]


def _wrong_choice(slot: Slot, value: object, *, in_list: bool) -> tuple[str, str]:
    """Say that ``value`` is not a member of the slot's enumeration."""
    allowed = ", ".join(str(m.value) for m in slot.hint)
    if in_list:
        return f"{value!r} is not a {_words(slot.hint.__name__)}.", f"use {allowed}."
    return f"{value!r} is not one of: {allowed}.", f"use one of: {allowed}."


def _wrong_member(slot: Slot, got: str, key: str) -> tuple[str, str]:
    """Say that a value of a choice of types (``int | ResourceAmount``) is none of them, with one example of each."""
    samples = [v for e in _adapter.examples(slot) if isinstance(e, dict) for v in list(e.values())[:1]]
    shown = " or ".join(
        f"`{key}: {yaml.safe_dump(v, default_flow_style=True).strip() if isinstance(v, dict) else v}`"
        for v in samples
    )
    return (
        f"expected a whole number or a mapping, got {got}.",
        f"write e.g. {shown}." if shown else "fix its type.",
    )


def _wrong_value(slot: Slot, value: object, key: str) -> tuple[str, str]:
    """Say what the model expects at ``slot`` instead of ``value``, and how to write it."""
    got = f"{_kind(value)} {value!r}"
    if slot.is_dataclass or slot.origin is dict:
        sample = _adapter.example(slot)
        fix = (
            f"write e.g. `{key}: {yaml.safe_dump(sample, default_flow_style=True).strip()}`."
            if sample is not None
            else "write it as indented `key: value` lines."
        )
        return f"expected a mapping, got {got}.", fix
    if slot.origin is tuple and slot.item.is_dataclass:
        return f"expected a list, got {got}.", "write one `- ` item per entry."
    if slot.origin is tuple:
        return f"expected a list of strings, got {got}.", "write a list, e.g. `[a, b]`."
    if slot.hint in (bool, int, float):
        counted = _adapter.unit(slot)
        what, fix = {
            bool: ("true or false", "write `true` or `false`."),
            int: (
                f"a whole number{f' of {counted}' if counted else ''}",
                "write an unquoted integer, e.g. `4`.",
            ),
            float: (f"a number{f' ({counted})' if counted else ''}", "write an unquoted number, e.g. `0.5`."),
        }[slot.hint]
        return f"expected {what}, got {got}.", fix
    if isinstance(value, float):
        return (
            f"expected a string, got {got}.",
            "quote the value so YAML reads it as text (unquoted, 1.30 is the number 1.3).",
        )
    return f"expected a string, got {got}.", f'write a single string, e.g. `{key}: "text"`.'


def _platform(data: Mapping[Any, Any], issues: list[PolicyIssue]) -> Platform | None:
    """Validate ``data`` against the model; every structural problem goes to ``issues``.

    A value that fails is repaired (dropped so its default applies, or replaced by a stand-in) and the document
    is validated again, so the semantic rules still see a whole platform. None: the repairs did not converge.
    """
    # plain JSON data from here on (YAML dates read as text), so locations and repairs match the validator's
    doc: Any = json.loads(json.dumps(_without_nulls(data), default=str))
    for _ in range(_MAX_ROUNDS):
        try:
            platform: Platform = _adapter.adapter().validate_json(
                json.dumps(doc), by_alias=True, by_name=False
            )
        except ValidationError as exc:
            errors = _one_per_choice(doc, exc.errors(include_url=False))
            for error in errors:
                issue = _issue(doc, error)
                if issue is not None and issue not in issues:
                    issues.append(issue)
            for error in reversed(errors):
                _repair(doc, error)
        else:
            return platform
    return None


def _related(a: str, b: str) -> bool:
    """Whether one YAML path is the other or lies inside it."""
    return a == b or a.startswith((b + ".", b + "[")) or b.startswith((a + ".", a + "["))


def _inputs(issue: PolicyIssue) -> tuple[str, ...]:
    """Paths a semantic rule reads besides the issue's own path (cross-references, from the rule registry)."""
    return inputs_of(issue)


def _build(data: object, source: str | None, issues: list[PolicyIssue]) -> Platform:
    if not isinstance(data, Mapping):
        shown = "an empty document" if data is None else f"{_kind(data)} {data!r}"
        issues.append(
            PolicyIssue(
                _ROOT,
                f"expected a mapping of platform settings at the top level, got {shown}.",
                "start from the reference platform.yaml (top-level keys: name, account, region, cluster...).",
                _SCHEMA,
            )
        )
        raise PolicyError(issues, source)
    structural: list[PolicyIssue] = []
    platform = _platform(data, structural)
    issues.extend(structural)
    if platform is None:
        raise PolicyError(issues, source)
    broken = [i.path for i in structural]
    for issue in validate_platform(platform, raise_on_error=False):
        # a value that failed to parse is reported once, not again by the rules that read it
        reads = (issue.path, *_inputs(issue))
        if not any(_related(path, bad) for path in reads for bad in broken):
            issues.append(issue)
    if issues:
        raise PolicyError(issues, source)
    mark_valid(platform)
    return platform


def platform_from_dict(data: object, *, source: str | None = None) -> Platform:
    """Build and validate a platform from parsed YAML/JSON data (camelCase keys, as in ``platform.yaml``).

    Args:
        data: the parsed document, e.g. ``yaml.safe_load(text)``.
        source: where the data came from (a file name), shown in the error.

    Raises:
        PolicyError: every structural and semantic problem, listed together.

    """
    return _build(data, source, [])


class _DuplicateKeys:
    """A loader mix-in that records duplicate mapping keys (plain PyYAML silently keeps the last one)."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)  # type: ignore[call-arg]  # the loader class it is mixed into
        self.duplicate_keys: list[PolicyIssue] = []


class _FastLoader(_DuplicateKeys, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """libyaml's parser where PyYAML has it (its wheels do): about ten times the pure-Python parser's speed."""


class _ExactLoader(_DuplicateKeys, yaml.SafeLoader):
    """The pure-Python parser, for a document libyaml refused: its messages are the ones users search for."""


def _construct_mapping(loader: _FastLoader | _ExactLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    first_line: dict[object, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            seen = first_line.get(key)
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        mark = key_node.start_mark
        if seen is not None and key != "<<":
            loader.duplicate_keys.append(
                PolicyIssue(
                    f"line {mark.line + 1}, column {mark.column + 1}",
                    f"duplicate key `{key}` (first defined on line {seen}); YAML would silently keep "
                    "only the last value.",
                    "remove one of the two entries or merge them.",
                    _YAML,
                )
            )
        else:
            first_line[key] = mark.line + 1
    return loader.construct_mapping(node, deep=True)


for _loader in (_FastLoader, _ExactLoader):
    _loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _load(loader_class: type[_FastLoader | _ExactLoader], text: str) -> tuple[object, list[PolicyIssue]]:
    loader = loader_class(text)
    try:
        return loader.get_single_data(), loader.duplicate_keys
    finally:
        loader.dispose()


def _parse(text: str, source: str) -> tuple[object, list[PolicyIssue]]:
    try:
        return _load(_FastLoader, text)
    except yaml.YAMLError:
        pass
    try:
        return _load(_ExactLoader, text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(document)"
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        context_mark = getattr(exc, "context_mark", None)
        if context and context_mark is not None:
            problem += (
                f" ({context} started on line {context_mark.line + 1}, column {context_mark.column + 1})"
            )
        elif context:
            problem += f" ({context})"
        issue = PolicyIssue(
            where,
            f"not valid YAML: {problem}.",
            "fix the YAML syntax at that position (indent with spaces, close brackets and quotes).",
            _YAML,
        )
        raise PolicyError([issue], source) from None


def load_platform(path: str | Path) -> Platform:
    """Load and validate ``platform.yaml``.

    Args:
        path: the YAML file.

    Raises:
        PolicyError: the file is not valid YAML or the policy is invalid (all problems listed).
        OSError: the file cannot be read (e.g. ``FileNotFoundError``).

    """
    source = str(path)
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        issue = PolicyIssue(
            f"byte {exc.start}", f"the file is not UTF-8 text ({exc.reason}).", "save it as UTF-8.", _YAML
        )
        raise PolicyError([issue], source) from None
    data, duplicates = _parse(text, source)
    return _build(data, source, duplicates)
