"""Fairness backends as the policy, the renderers and the tools see them: one module per backend, one registry.

Code outside the backend modules never asks which backend a platform has; it calls
:func:`fairness_of` and asks the returned :class:`Fairness` what differs (does the team chart create the
namespace, is ``hyp create hyp-pytorch-job`` admitted, what does a replacement delete). The built-in backends
are registered here; the CDK half of a backend (:mod:`hyperpod_tenancy.constructs.backends`) extends
:class:`Fairness` and registers itself here too when it is registered there.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy.fairness.base import Fairness, FairnessWording, Problem
from hyperpod_tenancy.policy.fairness.kueue import HYP_CLI_KUEUE_API_VERSION, KueueFairness
from hyperpod_tenancy.policy.fairness.task_governance import (
    TASK_GOVERNANCE_CONFIRMED_REGIONS,
    TaskGovernanceFairness,
)
from hyperpod_tenancy.policy.model import Platform

__all__ = [
    "BUILTIN",
    "HYP_CLI_KUEUE_API_VERSION",
    "TASK_GOVERNANCE_CONFIRMED_REGIONS",
    "Fairness",
    "FairnessWording",
    "KueueFairness",
    "Problem",
    "TaskGovernanceFairness",
    "fairness_of",
    "register_fairness",
    "registered_keys",
    "unregister_fairness",
]

#: The built-in backends, the policy's default first.
BUILTIN: tuple[Fairness, ...] = (TaskGovernanceFairness(), KueueFairness())

_REGISTRY: dict[Hashable, Fairness] = {f.key: f for f in BUILTIN}


def register_fairness(fairness: Fairness) -> None:
    """Register (or replace) the backend serving ``fairness.key``.

    Raises:
        TenancyError: ``fairness`` is not a :class:`Fairness`.

    """
    if not isinstance(fairness, Fairness):
        raise TenancyError(
            f"a fairness backend must extend hyperpod_tenancy.policy.fairness.Fairness (got {type(fairness).__name__}); "
            "its defaults describe a scheduler that needs nothing special."
        )
    _REGISTRY[fairness.key] = fairness


def unregister_fairness(key: Hashable) -> None:
    """Forget the backend registered under ``key``; a built-in one is put back."""
    _REGISTRY.pop(key, None)
    for builtin in BUILTIN:
        if builtin.key == key:
            _REGISTRY[key] = builtin


def registered_keys() -> tuple[Hashable, ...]:
    """Return the keys of every registered backend (the built-in ones and those registered in code)."""
    return tuple(_REGISTRY)


def fairness_of(platform_or_key: Platform | Any) -> Fairness:
    """Return the backend serving a platform (its ``fairness_backend``) or a registry key.

    Raises:
        TenancyError: no backend is registered for it.

    """
    key = platform_or_key.fairness_backend if isinstance(platform_or_key, Platform) else platform_or_key
    try:
        return _REGISTRY[key]
    except KeyError:
        known = ", ".join(repr(k) for k in _REGISTRY)
        raise TenancyError(
            f"no fairness backend is registered for {key!r} (registered: {known}); register one with "
            "hyperpod_tenancy.constructs.backends.register(...)."
        ) from None
