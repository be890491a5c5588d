"""Translate a platform's ``chargeback:`` section into the engine's :class:`~hyperpod_tenancy.chargeback.model.ChargebackConfig`.

The engine (:mod:`hyperpod_tenancy.chargeback`) knows nothing of the policy model; this is the one place that
decides what it reads: the hosted teams, their quotas and cost centers, GPUs per instance from the instance
groups (their ``resources`` or the built-in catalogue), the priority classes' checkpoint maxima, the billing terms,
fallback prices and the reconciliation tolerance.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal

from hyperpod_tenancy.chargeback.model import BillingTerm, ChargebackConfig, TeamConfig
from hyperpod_tenancy.policy.borrowing import may_borrow
from hyperpod_tenancy.policy.grains import instances_by_type
from hyperpod_tenancy.policy.instance_types import resource_shape
from hyperpod_tenancy.policy.mig import slices_in_partitions
from hyperpod_tenancy.policy.model import Platform, Team

__all__ = ["chargeback_config", "team_borrows"]


def chargeback_config(platform: Platform) -> ChargebackConfig:
    """Build the chargeback engine's configuration from a validated platform.

    Args:
        platform: a platform that passed :func:`~hyperpod_tenancy.policy.validate_platform` (so every billing term
            has a rule, an idle owner and a first-of-month date).

    Returns:
        The configuration: terms sorted by effective date, the hosted teams (teams flagged for a dedicated cluster
        are not billed here), GPUs per instance of every instance type with accelerators, prices as ``Decimal``.

    Raises:
        ValueError: the platform has no ``chargeback:`` section, or a term lacks its rule or idle owner (the
            platform was not validated).

    """
    spec = platform.chargeback
    if spec is None:
        raise ValueError(
            f"platform {platform.name!r} has no `chargeback:` section; add one to build a chargeback pipeline."
        )
    terms = []
    for i, term in enumerate(spec.billing_terms):
        if term.rule is None or not term.idle_owner:
            raise ValueError(
                f"chargeback.billingTerms[{i}] has no rule or idle owner; validate the platform first "
                "(HPT-CHARGEBACK-RULE, HPT-CHARGEBACK-IDLE-OWNER)."
            )
        terms.append(
            BillingTerm(
                effective_from=dt.date.fromisoformat(term.effective_from),
                rule=term.rule,
                idle_owner=term.idle_owner,
                shared_costs=term.shared_costs,
                signed_off_by=term.signed_off_by or "",
                mid_quarter_reason=term.mid_quarter_reason or "",
            )
        )
    return ChargebackConfig(
        cluster=platform.cluster.name,
        terms=tuple(sorted(terms, key=lambda t: t.effective_from)),
        teams=team_configs(platform),
        gpus_per_instance=gpus_per_instance(platform),
        prices={itype: _decimal(price) for itype, price in sorted(spec.prices.items())},
        max_checkpoint_minutes=max_checkpoint_minutes(platform),
        tolerance=_decimal(spec.reconciliation_tolerance),
        unknown_teams=spec.unknown_teams,
        partitioned_slices=partitioned_slices(platform),
    )


def team_configs(platform: Platform, cost_centers: Mapping[str, str] | None = None) -> tuple[TeamConfig, ...]:
    """Return the chargeback record of each team the cluster hosts, by name.

    Its cost center is the one ``cost_centers`` gives for it, else the policy's ``costCenter``, else the team
    name; with its guarantee and whether it borrows.
    """
    chosen = cost_centers or {}
    return tuple(
        TeamConfig(
            name=t.name,
            cost_center=chosen.get(t.name, t.effective_cost_center),
            quotas=instances_by_type(platform, t),
            borrows=team_borrows(platform, t),
        )
        for t in sorted(platform.hosted_teams, key=lambda t: t.name)
    )


def gpus_per_instance(platform: Platform) -> dict[str, int]:
    """Return the accelerators of one instance, per instance type of the cluster that has any."""
    gpus: dict[str, int] = {}
    for group in platform.cluster.instance_groups:
        shape = resource_shape(group)
        if shape is not None and shape.accelerators > 0:
            gpus.setdefault(group.instance_type, shape.accelerators)
    return dict(sorted(gpus.items()))


def partitioned_slices(platform: Platform) -> dict[str, int]:
    """Return, per partitioned instance type, the compute slices of each GPU its MIG layout puts in partitions."""
    found = {
        g.instance_type: slices_in_partitions(g.instance_type, g.mig_config)
        for g in platform.cluster.instance_groups
        if g.mig_config
    }
    return dict(sorted(found.items()))


def max_checkpoint_minutes(platform: Platform) -> dict[str, int]:
    """Return the checkpoint bound in minutes of each WorkloadPriorityClass with a ``maxCheckpointInterval``."""
    return dict(
        sorted(
            (pc.workload_priority_class, minutes)
            for pc in platform.scheduling.priority_classes
            if (minutes := pc.max_checkpoint_minutes) is not None
        )
    )


def _decimal(value: float) -> Decimal:
    """Return the decimal a YAML number was written as (``12.29`` stays 12.29, not its binary approximation)."""
    return Decimal(repr(value))


def team_borrows(platform: Platform, team: Team) -> bool:
    """Whether the policy lets ``team`` borrow idle capacity (:func:`~hyperpod_tenancy.policy.borrowing.may_borrow`)."""
    return may_borrow(platform, team)
