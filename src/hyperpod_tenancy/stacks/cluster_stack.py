"""``ClusterStack``: the stack holding the shared cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.constructs.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform

__all__ = ["CLUSTER_OPTIONS", "ClusterStack"]

#: The keyword arguments of :class:`SharedHyperPodCluster` a stack passes on (``platform`` is the stack's own).
CLUSTER_OPTIONS = ("vpc", "vpc_cidr_blocks", "endpoint_access", "kubectl_layer", "posix_identity_image_uri")


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
