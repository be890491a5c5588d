"""Stacks: the cluster stack, one stack per team, and the stage that builds them from a policy."""

from hyperpod_tenancy.stacks.chargeback_stack import ChargebackOptions, ChargebackStack
from hyperpod_tenancy.stacks.cluster_stack import ClusterOptions, ClusterStack, zone_context
from hyperpod_tenancy.stacks.identity_center import TeamAccessStack, TeamIdentityStack
from hyperpod_tenancy.stacks.platform_stage import PlatformStage, team_stack_id
from hyperpod_tenancy.stacks.team_account import TeamAccountStack
from hyperpod_tenancy.stacks.team_stack import TeamStack

__all__ = [
    "ChargebackOptions",
    "ChargebackStack",
    "ClusterOptions",
    "ClusterStack",
    "PlatformStage",
    "TeamAccessStack",
    "TeamAccountStack",
    "TeamIdentityStack",
    "TeamStack",
    "team_stack_id",
    "zone_context",
]
