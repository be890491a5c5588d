"""Fairness backends: one module per backend, one protocol, one registry keyed by ``Platform.fairness_backend``.

The constructs never branch on the backend: :class:`~hyperpod_tenancy.constructs.SharedHyperPodCluster` calls
``backend_for(platform).build_cluster(...)`` and adds its ``cluster_manifests`` to the platform chart;
:class:`~hyperpod_tenancy.constructs.TeamTenant` calls ``build_team(...)`` and adds its ``team_manifests`` to
the team chart. Adding a backend is one module implementing :class:`Backend` plus :func:`register`.

Where this package sits, and why. The layering is policy <- k8s <- constructs <- stacks. A backend has a
pure-Python rendering (Kueue manifests in :mod:`hyperpod_tenancy.k8s.kueue`, Task Governance CloudFormation
properties in :mod:`hyperpod_tenancy.constructs._private.task_governance`), which stays where it is and
importable without jsii, and a CDK part (add-ons, Helm charts, ``CfnResource``s, waits). The CDK part needs
the constructs layer's helpers (nag acknowledgments, kubectl limits) and the :class:`IHyperPodCluster`
interface, and it is called by the constructs, so it lives in the constructs layer as a sub-package; it imports
neither construct module (only the interface), so there is no cycle. The layers below cannot ask this
registry: the charts (:mod:`hyperpod_tenancy.k8s.team_chart`, ``platform_chart``) and the replacement warnings
(:func:`hyperpod_tenancy.policy.replacement_warnings`) take the backend's contributions as arguments, and keep
defaults for the two built-in backends for direct callers only. Backend-specific policy rules stay in
``policy/validation.py``; each backend lists their codes in ``policy_rule_codes``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from hyperpod_tenancy.constructs.backends.base import Backend, ClusterFairness, Manifest, TeamFairness
from hyperpod_tenancy.constructs.backends.kueue import KueueBackend
from hyperpod_tenancy.constructs.backends.task_governance import TaskGovernanceBackend
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform, ensure_valid
from hyperpod_tenancy.policy.changes import FairnessWording

__all__ = [
    "Backend",
    "ClusterFairness",
    "KueueBackend",
    "Manifest",
    "TaskGovernanceBackend",
    "TeamFairness",
    "backend_for",
    "checked_policy",
    "register",
    "registered",
    "replacement_wording",
    "unregister",
]

_REGISTRY: dict[Hashable, Backend] = {}


def register(backend: Backend, *, replace: bool = False) -> None:
    """Register ``backend`` under its ``key``.

    Raises:
        TenancyError: a backend is already registered under that key and ``replace`` is false.

    """
    if backend.key in _REGISTRY and not replace:
        raise TenancyError(
            f"a fairness backend is already registered for {backend.key!r} ({type(_REGISTRY[backend.key]).__name__}); "
            "pass replace=True to replace it."
        )
    _REGISTRY[backend.key] = backend


def unregister(key: Hashable) -> Backend:
    """Remove and return the backend registered under ``key``.

    Raises:
        TenancyError: nothing is registered under ``key``.

    """
    try:
        return _REGISTRY.pop(key)
    except KeyError:
        raise TenancyError(f"no fairness backend is registered for {key!r}.") from None


def registered() -> dict[Hashable, Backend]:
    """Return the registered backends by key (a copy)."""
    return dict(_REGISTRY)


def backend_for(platform_or_key: Platform | Any) -> Backend:
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


def checked_policy(platform: Platform, *, where: str) -> Platform:
    """Return ``platform`` once it passed every policy rule (a registered backend key is accepted).

    What a construct is given is validated, whoever built it: a policy changed in code is checked as
    ``load_platform`` checks a file (:func:`~hyperpod_tenancy.policy.ensure_valid`, once per policy object).

    Raises:
        PolicyError: every problem of the policy, listed together, naming ``where``.

    """
    return ensure_valid(platform, where=where, registered_backends=tuple(_REGISTRY))


def replacement_wording(platform: Platform) -> FairnessWording:
    """Return the replacement-warning wording of a platform's backend (``replacement_warnings(wording=...)``)."""
    return backend_for(platform).replacement_wording


register(TaskGovernanceBackend())
register(KueueBackend())
