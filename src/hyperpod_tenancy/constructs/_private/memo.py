"""Values read from the CDK's runtime once per object.

Every read of a construct's attribute (``bucket.bucket_arn``, ``stack.region``) and every ``Stack.of`` is a call
from Python into the CDK's node process, about a third of a millisecond each. A team stack reads the same tokens of
the shared cluster, its own stack's account, Region and partition, and its own stack many times; a platform of a
thousand teams read them hundreds of thousands of times. What never changes for an object is read here once.

Only immutable facts belong here: a resource attribute's token, a stack's environment, the stack a construct is
in. Nothing a caller may still change (a property of an L1, a policy document) is cached.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import aws_cdk as cdk
from constructs import IConstruct

__all__ = ["arn", "attribute", "once", "stack_of"]

T = TypeVar("T")

#: Object → attribute name → value, dropped with the object.
_ATTRIBUTES: weakref.WeakKeyDictionary[object, dict[str, Any]] = weakref.WeakKeyDictionary()
#: Construct → its stack.
_STACKS: weakref.WeakKeyDictionary[IConstruct, cdk.Stack] = weakref.WeakKeyDictionary()


def attribute(obj: object, name: str) -> str:
    """Return ``obj.<name>``, an immutable string (a token or a fixed value), read from the CDK once per object.

    Raises:
        TypeError: the attribute is not a string (only immutable string attributes are cached here).

    """
    value = once(obj, name, lambda: getattr(obj, name))
    if not isinstance(value, str):
        raise TypeError(f"{type(obj).__name__}.{name} is not a string")
    return value


def once(obj: object, key: str, compute: Callable[[], T]) -> T:
    """Return ``compute()``, called once per ``obj`` and ``key`` (an immutable fact of ``obj``).

    For what takes a call to derive (a VPC's private subnet IDs, a duration's seconds).
    """
    values = _ATTRIBUTES.setdefault(obj, {})
    if key not in values:
        values[key] = compute()
    return values[key]  # type: ignore[no-any-return]


def stack_of(scope: IConstruct) -> cdk.Stack:
    """Return ``cdk.Stack.of(scope)``, looked up once per construct."""
    stack = _STACKS.get(scope)
    if stack is None:
        stack = _STACKS[scope] = cdk.Stack.of(scope)
    return stack


def arn(
    stack: cdk.Stack,
    *,
    service: str,
    resource: str,
    resource_name: str | None = None,
    separator: str = "/",
    region: str | None = None,
) -> str:
    """Return the ARN ``stack.format_arn`` returns, from the stack's partition, Region and account read once.

    ``arn:<partition>:<service>:<region>:<account>:<resource>[<separator><resource_name>]``, the same string
    (tokens included) as aws-cdk-lib's ``Arn.format``; ``region=""`` for a service without Regions.
    """
    partition = attribute(stack, "partition")
    region = attribute(stack, "region") if region is None else region
    account = attribute(stack, "account")
    name = "" if resource_name is None else f"{separator}{resource_name}"
    return f"arn:{partition}:{service}:{region}:{account}:{resource}{name}"
