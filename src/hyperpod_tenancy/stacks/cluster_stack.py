"""``ClusterStack``: the stack holding the shared cluster."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.policy import Platform

__all__ = ["ClusterStack"]


class ClusterStack(cdk.Stack):
    """Stack with the :class:`SharedHyperPodCluster` of a platform.

    The stack's availability zones are the platform's, so synthesis never looks them up (no credentials,
    no ``dummy1a`` placeholders).

    Args:
        scope: parent (an App or the platform stage).
        id: stack ID.
        platform: the tenancy policy.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the platform's account and region).

    """

    def __init__(self, scope: Construct, id: str, *, platform: Platform, **kwargs: Any) -> None:
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        self._zones = list(platform.cluster.availability_zones)
        super().__init__(scope, id, **kwargs)
        #: The shared cluster.
        self.cluster = SharedHyperPodCluster(self, "Cluster", platform=platform)

    @property
    def availability_zones(self) -> list[str]:
        """The platform's availability zones (no context lookup)."""
        return self._zones
