"""``ClusterStack``: the stack holding the shared cluster."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster import SharedHyperPodCluster
from hyperpod_tenancy.constructs.cluster.vpc import VpcAttributes
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import Platform

__all__ = ["CLUSTER_OPTIONS", "ClusterOptions", "ClusterStack", "zone_context"]


@dataclass(frozen=True, kw_only=True)
class ClusterOptions:
    """Options of the shared cluster a stack passes to :class:`SharedHyperPodCluster` (the policy is the stack's).

    Every field defaults to ``None``: the construct's default.

    Attributes:
        vpc: an existing VPC, or :class:`~hyperpod_tenancy.constructs.cluster.vpc.VpcAttributes` of one in another app.
            Default: a VPC is created with ``cluster.vpcCidr`` in ``cluster.availabilityZones``.
        vpc_cidr_blocks: every IPv4 CIDR block of ``vpc``. Default: what the VPC tells at synth.
        endpoint_access: EKS API endpoint access. Default: private only.
        kubectl_layer: Lambda layer with kubectl/helm for the cluster's handlers. Default: kubectl v1.33.
        posix_identity_image_uri: the POSIX identity webhook's server image, pinned by tag or digest. Default: the
            policy's ``cluster.posixIdentity.imageUri``.

    Raises:
        TenancyError: a field of the wrong type, named with the type it takes.

    """

    vpc: ec2.IVpc | VpcAttributes | None = None
    vpc_cidr_blocks: Sequence[str] | None = None
    endpoint_access: eks.EndpointAccess | None = None
    kubectl_layer: lambda_.ILayerVersion | None = None
    posix_identity_image_uri: str | None = None

    def __post_init__(self) -> None:
        checks: dict[str, tuple[str, Any]] = {
            "vpc": (
                "an ec2.IVpc or VpcAttributes",
                lambda v: isinstance(v, VpcAttributes) or hasattr(v, "vpc_id"),
            ),
            "vpc_cidr_blocks": (
                "a sequence of CIDR strings",
                lambda v: (
                    not isinstance(v, str) and isinstance(v, Sequence) and all(isinstance(b, str) for b in v)
                ),
            ),
            "endpoint_access": ("an eks.EndpointAccess", lambda v: isinstance(v, eks.EndpointAccess)),
            "kubectl_layer": ("a lambda_.ILayerVersion", lambda v: hasattr(v, "layer_version_arn")),
            "posix_identity_image_uri": ("a string", lambda v: isinstance(v, str)),
        }
        for name, (expected, ok) in checks.items():
            value = getattr(self, name)
            if value is not None and not ok(value):
                raise TenancyError(
                    f"ClusterOptions.{name}: {value!r} is not {expected}; pass {expected} or leave it unset."
                )

    def kwargs(self) -> dict[str, Any]:
        """Return the options that are set, as keyword arguments of :class:`SharedHyperPodCluster`."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}


#: The keyword arguments of :class:`SharedHyperPodCluster` a stack passes on (``platform`` is the stack's own).
CLUSTER_OPTIONS = tuple(f.name for f in fields(ClusterOptions))


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
        cluster_options: the options of :class:`SharedHyperPodCluster` besides ``platform``
            (:class:`ClusterOptions`). Default: every one at its default.
        **kwargs: other ``cdk.Stack`` props (``env`` defaults to the platform's account and region).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform,
        cluster_options: ClusterOptions | None = None,
        **kwargs: Any,
    ) -> None:
        options = ClusterOptions() if cluster_options is None else cluster_options
        if not isinstance(options, ClusterOptions):
            raise TenancyError(
                f"{id}: cluster_options is a {type(options).__name__}; pass ClusterOptions(...) with any of "
                f"{', '.join(CLUSTER_OPTIONS)} (the platform comes from `platform`)."
            )
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        self._zones = list(platform.cluster.availability_zones)
        super().__init__(scope, id, **kwargs)
        #: The shared cluster.
        self.cluster = SharedHyperPodCluster(self, "Cluster", platform=platform, **options.kwargs())

    @property
    def availability_zones(self) -> list[str]:
        """The platform's availability zones (no context lookup)."""
        return self._zones
