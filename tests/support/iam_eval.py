"""A small IAM identity-policy evaluator for offline tests.

It implements the part of the IAM evaluation logic our policies use, and refuses (raises) on
anything it does not implement, so a test can never pass because a construct was silently ignored:

* ``Effect`` Allow/Deny; an explicit Deny wins, then any Allow, otherwise implicit deny.
* ``Action`` / ``NotAction`` with ``*`` and ``?`` wildcards, case-insensitive.
* ``Resource`` / ``NotResource`` with ``*`` and ``?`` wildcards, case-sensitive (``*`` spans ``/``
  and ``:`` as in IAM).
* ``Condition`` with ``StringEquals``, ``StringNotEquals``, ``StringLike``, ``StringNotLike``
  (optionally ``...IfExists``) on single-valued keys. Blocks are ANDed, keys in a block are ANDed,
  values of a key are ORed. A missing key fails positive operators and satisfies negated ones.
* ``ArnEquals`` / ``ArnLike`` (and their ``Not`` forms), evaluated as ``StringEquals`` / ``StringLike`` on the
  whole ARN (our ARNs have no wildcard inside a segment that would tell the two apart).
* ``Null``: ``"true"`` holds when the key is absent from the context, ``"false"`` when it is present.
* Resource-based policies (a role's trust policy, a bucket policy): ``Principal`` ``{"AWS": ...}`` naming an account
  (``arn:aws:iam::<account>:root`` or the bare ID), a role ARN, or ``*``; ``{"Service": ...}``. A request is
  allowed (:func:`is_allowed_across`) as IAM's evaluation logic decides it across accounts ("Cross-account policy
  evaluation logic", IAM User Guide): an explicit deny in either policy denies; between two accounts both the
  identity policy and the resource policy must allow; in one account either suffices, except that a role's trust
  policy must always allow (``sts:`` actions), and one naming only the account still needs the identity policy's.

Not implemented (raises ``NotImplementedError``): ``NotPrincipal``, set operators (``ForAnyValue:``/
``ForAllValues:``), other operator families and policy variables (``${...}``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

Context = Mapping[str, str]


class Decision(enum.Enum):
    """Outcome of evaluating a request against identity policies."""

    ALLOW = "Allow"
    EXPLICIT_DENY = "ExplicitDeny"
    IMPLICIT_DENY = "ImplicitDeny"


_STRING_OPERATORS = {
    "StringEquals",
    "StringNotEquals",
    "StringLike",
    "StringNotLike",
    "ArnEquals",
    "ArnNotEquals",
    "ArnLike",
    "ArnNotLike",
}


@lru_cache(maxsize=4096)
def _glob(pattern: str, *, ignore_case: bool) -> re.Pattern[str]:
    """Compile an IAM wildcard pattern (``*`` any run, ``?`` one character)."""
    if "${" in pattern:
        raise NotImplementedError(f"policy variables are not supported: {pattern!r}")
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(body, re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def wildcard_match(pattern: str, value: str, *, ignore_case: bool = False) -> bool:
    """Whether ``value`` matches the IAM wildcard ``pattern``."""
    return _glob(pattern, ignore_case=ignore_case).fullmatch(value) is not None


def _as_list(value: Any) -> list[str]:
    """Normalise a string-or-list policy element."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise TypeError(f"expected a string or a list of strings, got {value!r}")


def _one_of(statement: Mapping[str, Any], positive: str, negative: str) -> tuple[list[str], bool]:
    """The patterns of ``positive`` or ``negative`` (exactly one must be present) and whether negated."""
    has_pos, has_neg = positive in statement, negative in statement
    if has_pos == has_neg:
        raise ValueError(f"statement needs exactly one of {positive}/{negative}: {statement!r}")
    return (_as_list(statement[positive]), False) if has_pos else (_as_list(statement[negative]), True)


def _action_matches(statement: Mapping[str, Any], action: str) -> bool:
    patterns, negated = _one_of(statement, "Action", "NotAction")
    hit = any(wildcard_match(p, action, ignore_case=True) for p in patterns)
    return hit != negated


def _resource_matches(statement: Mapping[str, Any], resource: str) -> bool:
    patterns, negated = _one_of(statement, "Resource", "NotResource")
    hit = any(wildcard_match(p, resource) for p in patterns)
    return hit != negated


def _operator_holds(operator: str, block: Mapping[str, Any], context: Context) -> bool:
    """Evaluate one condition block (``{"StringLike": {key: values}}``'s inner mapping)."""
    if ":" in operator and operator.split(":", 1)[0] in {"ForAnyValue", "ForAllValues"}:
        raise NotImplementedError(f"set operator {operator} is not supported")
    if operator == "Null":  # {"key": "true"}: the key is absent; "false": it is present
        present = {k.lower() for k in context}
        return all((key.lower() not in present) == (str(v).lower() == "true") for key, v in block.items())
    if_exists = operator.endswith("IfExists")
    base = operator.removesuffix("IfExists")
    if base not in _STRING_OPERATORS:
        raise NotImplementedError(f"condition operator {operator} is not supported")
    negated = "Not" in base
    like = base.endswith("Like")
    lowered = {k.lower(): v for k, v in context.items()}  # condition keys are case-insensitive
    for key, raw_values in block.items():
        values = _as_list(raw_values)
        actual = lowered.get(key.lower())
        if actual is None:
            if if_exists or negated:
                continue
            return False
        if like:
            hit = any(wildcard_match(v, actual) for v in values)
        else:
            if any("${" in v for v in values):
                raise NotImplementedError(f"policy variables are not supported: {values!r}")
            hit = actual in values
        if hit == negated:
            return False
    return True


def _condition_holds(statement: Mapping[str, Any], context: Context) -> bool:
    condition = statement.get("Condition", {})
    if not isinstance(condition, Mapping):
        raise TypeError(f"Condition must be a mapping: {condition!r}")
    return all(_operator_holds(op, block, context) for op, block in condition.items())


def statements(policy: Mapping[str, Any], *, resource_policy: bool = False) -> list[Mapping[str, Any]]:
    """The statements of a policy document (``Statement`` may be one object or a list).

    An identity policy's statements have no ``Principal``; a resource policy's each have one.
    """
    raw = policy["Statement"]
    items = [raw] if isinstance(raw, Mapping) else list(raw)
    for item in items:
        if "NotPrincipal" in item:
            raise NotImplementedError("NotPrincipal is not supported")
        if "Principal" in item and not resource_policy:
            raise NotImplementedError(
                f"an identity policy statement has no Principal (a resource policy goes to is_allowed_across): {item!r}"
            )
        if "Principal" not in item and resource_policy:
            raise ValueError(f"a resource policy statement needs a Principal: {item!r}")
        if item.get("Effect") not in {"Allow", "Deny"}:
            raise ValueError(f"Effect must be Allow or Deny: {item!r}")
    return items


def evaluate(
    policies: Sequence[Mapping[str, Any]],
    action: str,
    resource: str,
    context: Context | None = None,
) -> Decision:
    """Decide ``action`` on ``resource`` with request ``context`` under identity ``policies``."""
    ctx = context or {}
    allowed = False
    for policy in policies:
        for statement in statements(policy):
            if not (
                _action_matches(statement, action)
                and _resource_matches(statement, resource)
                and _condition_holds(statement, ctx)
            ):
                continue
            if statement["Effect"] == "Deny":
                return Decision.EXPLICIT_DENY
            allowed = True
    return Decision.ALLOW if allowed else Decision.IMPLICIT_DENY


def is_allowed(
    policies: Sequence[Mapping[str, Any]] | Mapping[str, Any],
    action: str,
    resource: str,
    context: Context | None = None,
) -> bool:
    """Whether the request is allowed (accepts one policy document or several)."""
    docs = [policies] if isinstance(policies, Mapping) else policies
    return evaluate(docs, action, resource, context) is Decision.ALLOW


def account_of(arn: str) -> str:
    """The account of an IAM or STS ARN (``arn:aws:iam::<account>:...``), or a bare 12-digit ID itself."""
    return arn if re.fullmatch(r"\d{12}", arn) else arn.split(":")[4]


def _principal_match(statement: Mapping[str, Any], principal: str) -> str | None:
    """How ``statement``'s ``Principal`` names ``principal``: ``"arn"`` (itself or ``*``), ``"account"``, or ``None``."""
    named = statement["Principal"]
    if named == "*":
        return "arn"
    if not isinstance(named, Mapping):
        raise TypeError(f"Principal must be * or a mapping: {named!r}")
    unknown = set(named) - {"AWS", "Service"}
    if unknown:
        raise NotImplementedError(f"Principal types {sorted(unknown)} are not supported")
    found: str | None = None
    for value in _as_list(named.get("AWS", [])) + _as_list(named.get("Service", [])):
        if value in ("*", principal):
            return "arn"
        names_account = re.fullmatch(r"\d{12}", value) is not None or value.endswith(":root")
        if (
            names_account
            and not principal.endswith(".amazonaws.com")
            and account_of(value) == account_of(principal)
        ):
            found = "account"
    return found


def is_allowed_across(
    identity_policies: Sequence[Mapping[str, Any]],
    resource_policy: Mapping[str, Any],
    *,
    principal: str,
    action: str,
    resource: str,
    context: Context | None = None,
) -> bool:
    """Whether ``principal`` may perform ``action`` on ``resource`` under its identity policies and the resource's.

    ``principal`` is the caller's ARN (a role ARN; ``aws:PrincipalArn`` is added to the context); ``resource`` is
    the resource's ARN, whose account decides whether the request crosses accounts. ``sts:`` actions on a role
    always need its trust policy's allow, also within one account.
    """
    ctx = {"aws:PrincipalArn": principal, **(context or {})}
    identity = evaluate(identity_policies, action, resource, ctx)
    named: set[str] = set()
    for statement in statements(resource_policy, resource_policy=True):
        how = _principal_match(statement, principal)
        if how is None:
            continue
        scoped = "Resource" in statement or "NotResource" in statement
        if scoped and not _resource_matches(statement, resource):
            continue
        if not (_action_matches(statement, action) and _condition_holds(statement, ctx)):
            continue
        if statement["Effect"] == "Deny":
            return False
        named.add(how)
    if identity is Decision.EXPLICIT_DENY:
        return False
    if account_of(principal) != account_of(resource):
        return identity is Decision.ALLOW and bool(named)
    if action.lower().startswith("sts:"):
        # a role's trust policy must allow even in its own account ("Cross-account policy evaluation logic": the
        # role trust policy is required); naming only the account leaves it to the identity policy
        return "arn" in named or (identity is Decision.ALLOW and "account" in named)
    return "arn" in named or identity is Decision.ALLOW
