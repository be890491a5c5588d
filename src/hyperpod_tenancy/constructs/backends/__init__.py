"""Fairness backends: one module per backend, one protocol, one registry keyed by ``Platform.fairness_backend``.

The constructs never branch on the backend: :class:`~hyperpod_tenancy.constructs.SharedHyperPodCluster` calls
``backend_for(platform).build_cluster(...)`` and adds its ``cluster_manifests`` to the platform chart;
:class:`~hyperpod_tenancy.constructs.TeamTenant` calls ``build_team(...)`` and adds its ``team_manifests`` to
the team chart. Adding a backend is one module implementing :class:`Backend` plus :func:`register`.

Where this package sits, and why. The layering is policy <- k8s <- constructs <- stacks. A backend has a
jsii-free half, :class:`hyperpod_tenancy.policy.fairness.Fairness` (what the policy rules, the replacement
warnings, the renderers and the tools ask of it: its wording, whether the team chart creates the namespace,
the problems it finds in a policy), with the Kubernetes objects of the built-in backends rendered in
:mod:`hyperpod_tenancy.k8s.fairness_objects`; and a CDK half, :class:`Backend`, which extends it with the
add-ons, Helm charts, ``CfnResource`` s and waits. :func:`register` registers a backend in both registries, so
the layers below ask ``fairness_of(platform)`` and never which backend a platform has.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from hyperpod_tenancy.constructs.backends.base import Backend, ClusterFairness, Manifest, TeamFairness
from hyperpod_tenancy.constructs.backends.kueue import KueueBackend
from hyperpod_tenancy.constructs.backends.task_governance import TaskGovernanceBackend
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.policy.fairness import FairnessWording, register_fairness, unregister_fairness

__all__ = [
    "Backend",
    "ClusterFairness",
    "KueueBackend",
    "Manifest",
    "TaskGovernanceBackend",
    "TeamFairness",
    "backend_for",
    "register",
    "registered",
    "replacement_wording",
    "unregister",
]

_REGISTRY: dict[Hashable, Backend] = {}


def register(backend: Backend, *, replace: bool = False) -> None:
    """Register ``backend`` under its ``key``.

    The backend is registered for the layers below the constructs too (the policy rules, the charts and the
    tools ask :func:`hyperpod_tenancy.policy.fairness.fairness_of`).

    Raises:
        TenancyError: a backend is already registered under that key and ``replace`` is false, or it does not
            extend :class:`Backend`.

    """
    if not isinstance(backend, Backend):
        raise TenancyError(
            f"a fairness backend must extend hyperpod_tenancy.constructs.backends.Backend (got "
            f"{type(backend).__name__})."
        )
    if backend.key in _REGISTRY and not replace:
        raise TenancyError(
            f"a fairness backend is already registered for {backend.key!r} ({type(_REGISTRY[backend.key]).__name__}); "
            "pass replace=True to replace it."
        )
    _REGISTRY[backend.key] = backend
    register_fairness(backend)


def unregister(key: Hashable) -> Backend:
    """Remove and return the backend registered under ``key``.

    Raises:
        TenancyError: nothing is registered under ``key``.

    """
    try:
        backend = _REGISTRY.pop(key)
    except KeyError:
        raise TenancyError(f"no fairness backend is registered for {key!r}.") from None
    unregister_fairness(key)
    return backend


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


def replacement_wording(platform: Platform) -> FairnessWording:
    """Return the replacement-warning wording of a platform's backend (``replacement_warnings(wording=...)``)."""
    return backend_for(platform).replacement_wording


register(TaskGovernanceBackend())
register(KueueBackend())
