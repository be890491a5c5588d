"""``ClusterStack``: the stack holding the shared cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform

__all__ = ["CLUSTER_OPTIONS", "ClusterStack", "zone_context"]

#: The keyword arguments of :class:`SharedHyperPodCluster` a stack passes on (``platform`` is the stack's own).
CLUSTER_OPTIONS = ("vpc", "vpc_cidr_blocks", "endpoint_access", "kubectl_layer", "posix_identity_image_uri")


def zone_context(platform: Platform) -> dict[str, list[str]]:
    """CDK context giving the platform's account and region the policy's availability zones: no lookup at synth.

    A VPC in a stack with an explicit account and region checks its zones against the region's, which
    ``cdk synth`` looks up with AWS credentials. Passing this to the app (``cdk.App(context=zone_context(p))``)
    answers that lookup from ``cluster.availabilityZones``, so an app of your own synthesizes offline. Every stack
    of that account and region then sees those zones as the region's.
    """
    key = f"availability-zones:account={platform.account}:region={platform.region}"
    return {key: list(platform.cluster.availability_zones)}


class ClusterStack(cdk.Stack):
    """Stack with the :class:`SharedHyperPodCluster` of a platform.

    The stack's availability zones are the platform's, so synthesis never looks them up (no credentials,
    no ``dummy1a`` placeholders).

    Args:
        scope: parent (an App or the platform stage).
        id: stack ID.
        platform: the tenancy policy.
        cluster_options: keyword arguments of :class:`SharedHyperPodCluster` besides ``platform``
            (:data:`CLUSTER_OPTIONS`: ``vpc``, ``vpc_cidr_blocks``, ``endpoint_access``, ``kubectl_layer``,
            ``posix_identity_image_uri``). Default: none, every one at its default.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the platform's account and region).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        cluster_options: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        options = dict(cluster_options or {})
        unknown = sorted(set(options) - set(CLUSTER_OPTIONS))
        if unknown:
            raise TenancyError(
                f"{id}: cluster_options has {', '.join(map(repr, unknown))}; SharedHyperPodCluster takes "
                f"{', '.join(CLUSTER_OPTIONS)} (the platform comes from `platform`)."
            )
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        self._zones = list(platform.cluster.availability_zones)
        super().__init__(scope, id, **kwargs)
        #: The shared cluster.
        self.cluster = SharedHyperPodCluster(self, "Cluster", platform=platform, **options)

    @property
    def availability_zones(self) -> list[str]:
        """The platform's availability zones (no context lookup)."""
        return self._zones
