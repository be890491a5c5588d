"""Semantic rules of a platform policy: the entry points over the rule registry.

Every rule has a stable code (``HPT-...``), names the YAML path of the bad value, quotes it and says how
to fix it. The rules themselves live in :mod:`hyperpod_tenancy.policy.rules`, one module per domain.
:func:`validate_platform` returns (or raises) every error at once; :func:`policy_warnings` returns the
problems that should not stop synthesis but must be seen.
"""

from __future__ import annotations

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
    "policy_warnings",
    "validate_platform",
]


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
