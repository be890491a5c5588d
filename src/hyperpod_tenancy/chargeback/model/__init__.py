"""Inputs and outputs of the chargeback engine (standard library only; see the package docstring).

Units: hours are UTC clock hours (``datetime`` at the top of the hour, timezone-aware UTC); GPU-hours are
GPU counts integrated over time; hourly usage and capacity come in whole GPU-milliseconds (the SQL's
integrals); money is ``decimal.Decimal`` in the bill's currency (USD). Other inputs carry any precision; a
:class:`Report` carries money in cents (the engine rounds by largest remainder, so the rows add up to the
reconciled total exactly) and GPU-hours to four decimal places.
"""

from __future__ import annotations

from hyperpod_tenancy.chargeback.model.config import (
    ALL_INSTANCE_TYPES,
    IDLE_ROW,
    SCHEMA_VERSION,
    SHARED,
    SHARED_COSTS_ROW,
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    PriceSource,
    SharedCostRule,
    TeamConfig,
    UnknownTeams,
    starts_a_quarter,
)
from hyperpod_tenancy.chargeback.model.inputs import (
    MS_PER_HOUR,
    SLICES_PER_GPU,
    BillCredit,
    CollectionGap,
    CostInputs,
    Eviction,
    HourlyCapacity,
    HourlyUsage,
    HourlyUsageBlock,
    InstanceTypeCost,
    SharedCost,
    TeamCost,
    TeamPeriod,
    UsageInputs,
    UsageRecords,
    gpu_hours,
)
from hyperpod_tenancy.chargeback.model.outputs import (
    LossBasis,
    PreemptionLoss,
    Reconciliation,
    Report,
    TeamCharge,
)
from hyperpod_tenancy.chargeback.model.records import (
    RECORD_VERSION,
    config_from_json,
    config_to_json,
    merge_teams,
    month_span,
    team_config_from_json,
    team_config_to_json,
    with_teams,
)

__all__ = [
    "ALL_INSTANCE_TYPES",
    "IDLE_ROW",
    "MS_PER_HOUR",
    "RECORD_VERSION",
    "SCHEMA_VERSION",
    "SHARED",
    "SHARED_COSTS_ROW",
    "SLICES_PER_GPU",
    "BillCredit",
    "BillingRule",
    "BillingTerm",
    "ChargebackConfig",
    "CollectionGap",
    "CostInputs",
    "Eviction",
    "HourlyCapacity",
    "HourlyUsage",
    "HourlyUsageBlock",
    "InstanceTypeCost",
    "LossBasis",
    "PreemptionLoss",
    "PriceSource",
    "Reconciliation",
    "Report",
    "SharedCost",
    "SharedCostRule",
    "TeamCharge",
    "TeamConfig",
    "TeamCost",
    "TeamPeriod",
    "UnknownTeams",
    "UsageInputs",
    "UsageRecords",
    "config_from_json",
    "config_to_json",
    "gpu_hours",
    "merge_teams",
    "month_span",
    "starts_a_quarter",
    "team_config_from_json",
    "team_config_to_json",
    "with_teams",
]
