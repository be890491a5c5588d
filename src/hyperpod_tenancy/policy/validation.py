"""Semantic rules of a platform policy: the entry points over the rule registry.

Every rule has a stable code (``HPT-...``), names the YAML path of the bad value, quotes it and says how
to fix it. The rules themselves live in :mod:`hyperpod_tenancy.policy.rules`, one module per domain.
:func:`validate_platform` returns (or raises) every error at once; :func:`policy_warnings` returns the
problems that should not stop synthesis but must be seen.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Hashable

from hyperpod_tenancy.errors import PolicyError, PolicyIssue
from hyperpod_tenancy.policy._typecheck import type_issues
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.rules import (
    MAX_PRIORITY_CLASSES,
    MAX_TEAM_NAME,
    SUPPORTED_KUBERNETES_VERSIONS,
    TASK_GOVERNANCE_CONFIRMED_REGIONS,
    check_errors,
    check_warnings,
)

__all__ = [
    "MAX_PRIORITY_CLASSES",
    "MAX_TEAM_NAME",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "TASK_GOVERNANCE_CONFIRMED_REGIONS",
    "ensure_valid",
    "mark_valid",
    "policy_warnings",
    "validate_platform",
]

#: Platforms already found valid, by object identity (a frozen policy object cannot change after validation).
_VALID: dict[int, weakref.ref[Platform]] = {}


def mark_valid(platform: Platform) -> None:
    """Record that ``platform`` passed :func:`validate_platform` (the loader calls it), so no construct repeats it."""
    key = id(platform)
    _VALID[key] = weakref.ref(platform, lambda _ref: _VALID.pop(key, None))


def ensure_valid(
    platform: Platform, *, where: str, registered_backends: Collection[Hashable] = ()
) -> Platform:
    """Validate a policy a construct was given, once per policy object, whatever built it.

    A ``Platform`` from :func:`~hyperpod_tenancy.policy.load_platform` was validated when loaded; one built or
    changed in code (``dataclasses.replace``, a constructor) is checked here, so every construct that renders a
    policy refuses one ``validate_platform`` refuses.

    Args:
        platform: the policy given to the construct.
        where: the construct's path, shown as the error's source.
        registered_backends: fairness backend keys registered besides the built-in ones; a platform whose
            ``fairness_backend`` is one of them is not refused for it (the backend validates its own part).

    Returns:
        ``platform`` itself.

    Raises:
        PolicyError: every problem of the policy, listed together; nothing is synthesized.

    """
    known = _VALID.get(id(platform))
    if known is not None and known() is platform:
        return platform
    issues = type_issues(platform, Platform)
    if platform.fairness_backend in registered_backends:
        issues = [i for i in issues if i.path != "fairnessBackend"]
    issues = issues or check_errors(platform)
    if issues:
        raise PolicyError(issues, source=f"the policy given to {where}")
    mark_valid(platform)
    return platform


def validate_platform(platform: Platform, *, raise_on_error: bool = True) -> list[PolicyIssue]:
    """Check every rule and return the errors (or raise them together).

    A platform built in Python is first checked for wrong field types (``HPT-SCHEMA``, e.g. ``count="16"``);
    when there are any, only those are reported, because the other rules cannot read such values.

    Args:
        platform: the policy to check.
        raise_on_error: raise :class:`PolicyError` when any error is found (default).

    Returns:
        Every error found (empty when the policy is valid).

    Raises:
        PolicyError: at least one error, with all of them listed.

    """
    issues = type_issues(platform, Platform) or check_errors(platform)
    if issues and raise_on_error:
        raise PolicyError(issues)
    return issues


def policy_warnings(platform: Platform) -> list[PolicyIssue]:
    """Return the problems that do not stop synthesis but must be seen (also emitted as CDK warnings).

    Codes: ``HPT-INFERENCE-LOWEST-PRIORITY``, ``HPT-DEDICATED-CLUSTER``, ``HPT-REGION-TASK-GOVERNANCE``,
    ``HPT-UNUSED-INSTANCE-TYPE``. Call it on a valid platform.
    """
    return check_warnings(platform)
