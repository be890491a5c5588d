"""The policy model as pydantic sees it: one validator over the dataclasses of :mod:`.model`.

Keys, types, defaults and required fields come from the dataclasses themselves; the YAML key of a field is
its camelCase name unless the field's metadata names an ``alias`` (``ebsVolumeGiB``). Nothing here lists
fields. The loader (YAML data) and the type check (objects built in Python) turn the validator's errors
into :class:`~hyperpod_tenancy.errors.PolicyIssue` s; :mod:`.json_schema` publishes its JSON Schema.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Sequence
from typing import Any

from pydantic import ConfigDict, TypeAdapter
from pydantic.alias_generators import to_camel

from hyperpod_tenancy.policy.model import Platform

#: Strict types (no ``"16"`` -> 16, no ``"yes"`` -> True), unknown keys refused, camelCase keys.
CONFIG = ConfigDict(
    alias_generator=to_camel,
    extra="forbid",
    strict=True,
    validate_by_alias=True,
    validate_by_name=True,
    revalidate_instances="always",
)
#: A location in the validated value, as pydantic reports it (``("teams", 0, "compute", "quotas", "x")``).
Loc = tuple[int | str, ...]


def adapter(hint: Any = Platform) -> TypeAdapter[Any]:
    """Return the validator of ``hint`` (default: a whole :class:`Platform`) under :data:`CONFIG`.

    A plain dataclass takes its pydantic config from the enclosing type, so a dataclass is wrapped in
    ``X | None`` (a type without config of its own); callers never pass ``None``.
    """
    return _adapter(hint)


@functools.cache
def _adapter(hint: Any) -> TypeAdapter[Any]:
    wrapped: Any = typing.Optional[hint] if dataclasses.is_dataclass(hint) else hint  # noqa: UP045
    return TypeAdapter(wrapped, config=CONFIG)


def yaml_key(f: dataclasses.Field[Any]) -> str:
    """Return the ``platform.yaml`` key of a dataclass field: its ``alias`` metadata, else camelCase."""
    alias = f.metadata.get("alias")
    return alias if isinstance(alias, str) else to_camel(f.name)


@dataclasses.dataclass(frozen=True)
class Slot:
    """What the model expects at one location: the type, and the dataclass field that declares it."""

    #: The expected type with ``| None`` removed (``int``, ``tuple[str, ...]``, a dataclass, an enum...).
    hint: Any
    #: The field whose value this is or contains (None at the document root).
    field: dataclasses.Field[Any] | None = None
    #: Whether ``None`` is a valid value here.
    optional: bool = False

    @property
    def origin(self) -> Any:
        """``tuple``, ``dict`` or ``None`` for a non-generic type."""
        return typing.get_origin(self.hint)

    @property
    def item(self) -> Slot:
        """The slot of one element (``tuple[X, ...]``) or one value (``dict[str, X]``)."""
        args = typing.get_args(self.hint)
        return _slot(args[0] if self.origin is tuple else args[-1], self.field)

    @property
    def is_enum(self) -> bool:
        """Whether the expected type is an enumeration."""
        return isinstance(self.hint, type) and issubclass(self.hint, enum.Enum)

    @property
    def is_dataclass(self) -> bool:
        """Whether the expected type is one of the model's dataclasses."""
        return dataclasses.is_dataclass(self.hint)

    def fields(self) -> dict[str, dataclasses.Field[Any]]:
        """YAML key -> field of the expected dataclass (of a union's mapping member)."""
        hint = self.hint
        if self.is_union:
            hint = next(o for o in typing.get_args(self.hint) if dataclasses.is_dataclass(o))
        return {yaml_key(f): f for f in dataclasses.fields(hint)}

    @property
    def is_union(self) -> bool:
        """Whether the slot takes one of several types (``int | ResourceAmount``)."""
        return typing.get_origin(self.hint) is typing.Union

    def child(self, segment: int | str, *, by_name: bool = False) -> Slot:
        """Return the slot one step further in (a field by key, or an element/value); ``object`` when unknown."""
        member = union_member(self, segment)
        if member is not None:
            return member
        if self.is_union:  # a key inside the mapping member (``accelerators`` of ``int | ResourceAmount``)
            mapping = next((o for o in typing.get_args(self.hint) if dataclasses.is_dataclass(o)), None)
            return Slot(mapping, self.field).child(segment, by_name=by_name) if mapping else Slot(object)
        if self.is_dataclass:
            fields = {f.name: f for f in dataclasses.fields(self.hint)} if by_name else self.fields()
            f = fields.get(str(segment))
            return _slot(_hints(self.hint)[f.name], f) if f is not None else Slot(object)
        if self.origin in (tuple, dict):
            return self.item
        return Slot(object)


def _slot(hint: Any, f: dataclasses.Field[Any] | None) -> Slot:
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [o for o in typing.get_args(hint) if o is not type(None)]
        optional = len(options) < len(typing.get_args(hint))
        if len(options) > 1:  # a choice of types (``int | ResourceAmount``): the slot keeps the union
            return Slot(typing.Union[tuple(options)], f, optional=optional)  # noqa: UP007
        return Slot(options[0], f, optional=optional)
    return Slot(hint, f)


def union_members(slot: Slot) -> list[Slot]:
    """Return the members of a union slot (none when it is not a union)."""
    if typing.get_origin(slot.hint) is not typing.Union:
        return []
    return [Slot(option, slot.field) for option in typing.get_args(slot.hint)]


def union_member(slot: Slot, tag: object) -> Slot | None:
    """Return the member of a union slot that pydantic names ``tag`` in an error location.

    Pydantic names ``int`` or a dataclass's name; None when ``slot`` is not a union or no member has that name.
    """
    if typing.get_origin(slot.hint) is not typing.Union:
        return None
    for option in typing.get_args(slot.hint):
        if getattr(option, "__name__", None) == tag:
            return Slot(option, slot.field)
    return None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def slots(loc: Loc, *, root: Any = Platform, by_name: bool = False) -> list[Slot]:
    """Return the slot of the root and of each step of ``loc`` (``by_name``: locations use field names)."""
    out = [_slot(root, None)]
    for segment in loc:
        out.append(out[-1].child(segment, by_name=by_name))
    return out


def required(f: dataclasses.Field[Any]) -> bool:
    """Tell whether a field has no default."""
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def render(loc: Loc, *, root: Any = Platform, by_name: bool = False, prefix: str = "") -> str:
    """Render the YAML path of ``loc``: ``teams[0].compute.quotas.ml.p5.48xlarge`` (field names become YAML keys)."""
    path = prefix
    slot = _slot(root, None)
    for segment in loc:
        if isinstance(segment, int):
            path += f"[{segment}]"
            slot = slot.child(segment)
            continue
        nxt = slot.child(segment, by_name=by_name)
        key = yaml_key(nxt.field) if slot.is_dataclass and nxt.field is not None else str(segment)
        path = f"{path}.{key}" if path else key
        slot = nxt
    return path


def example(slot: Slot) -> object | None:
    """Return the first ``examples`` entry of the slot's field metadata (used in fixes and in the JSON Schema)."""
    examples: Sequence[object] = slot.field.metadata.get("examples", ()) if slot.field else ()
    return examples[0] if examples else None


def examples(slot: Slot) -> Sequence[object]:
    """Return every ``examples`` entry of the slot's field metadata."""
    return tuple(slot.field.metadata.get("examples", ())) if slot.field else ()


def unit(slot: Slot) -> str | None:
    """Return what the numbers of a field count (its ``x-unit`` JSON Schema extra), e.g. ``instances``."""
    extra = slot.field.metadata.get("json_schema_extra", {}) if slot.field else {}
    value = extra.get("x-unit") if isinstance(extra, dict) else None
    return value if isinstance(value, str) else None
