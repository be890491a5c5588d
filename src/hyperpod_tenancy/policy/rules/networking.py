"""Networking rules: availability zones, the VPC and Service CIDRs, NetworkPolicy enforcement."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from hyperpod_tenancy.policy.model import InstanceGroup, Platform
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Severity,
    Stage,
    group_rule,
    platform_rule,
)

#: EKS accepts a Service CIDR inside these blocks, /12 to /24, not overlapping the VPC
#: (https://docs.aws.amazon.com/eks/latest/APIReference/API_KubernetesNetworkConfigRequest.html).
_PRIVATE_BLOCKS = tuple(ipaddress.IPv4Network(b) for b in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def _vpc_network(cidr: str) -> ipaddress.IPv4Network | None:
    """Return the VPC CIDR when it passes ``HPT-VPC-CIDR`` (an IPv4 network of /20 or larger), else None."""
    try:
        net = ipaddress.ip_network(cidr)
    except ValueError:
        return None
    return net if isinstance(net, ipaddress.IPv4Network) and net.prefixlen <= 20 else None


@platform_rule(
    code="HPT-AZ",
    domain=Domain.NETWORKING,
    at="cluster.availabilityZones",
    reads=("region",),
    failure="an EKS cluster without subnets in two zones of its region",
    guardrail="`cluster.availabilityZones` lists at least two distinct zones of `region`",
)
def availability_zones(p: Platform) -> Iterator[Finding]:
    """Check that the cluster spans at least two distinct zones, all of the platform's region."""
    zones = p.cluster.availability_zones
    if len(set(zones)) < 2:
        yield Finding(
            "cluster.availabilityZones",
            f"{list(zones)!r} names fewer than two distinct zones.",
            "list at least two zones of the region (EKS needs subnets in two zones).",
        )
    for i, zone in enumerate(zones):
        if not (zone.startswith(p.region) and len(zone) > len(p.region)):
            yield Finding(
                f"cluster.availabilityZones[{i}]",
                f"{zone!r} is not a zone of region {p.region}.",
                f"use a zone such as {p.region}a.",
            )


@platform_rule(
    code="HPT-VPC-CIDR",
    domain=Domain.NETWORKING,
    at="cluster.vpcCidr",
    reads=(),
    failure="a VPC too small for the subnets of HyperPod, EKS and FSx",
    guardrail="`cluster.vpcCidr` is an IPv4 CIDR of /20 or larger",
)
def vpc_cidr(p: Platform) -> Iterator[Finding]:
    """Check that the VPC CIDR is an IPv4 network of /20 or larger."""
    if _vpc_network(p.cluster.vpc_cidr) is None:
        yield Finding(
            "cluster.vpcCidr",
            f"{p.cluster.vpc_cidr!r} is not an IPv4 CIDR of /20 or larger.",
            "use e.g. 10.192.0.0/16.",
        )


@platform_rule(
    code="HPT-SERVICE-CIDR",
    domain=Domain.NETWORKING,
    at="cluster.serviceCidr",
    reads=("cluster.vpcCidr",),
    failure="Service CIDR overlapping the VPC, or left implicit so team egress cannot exclude it",
    guardrail="`cluster.serviceCidr` is private, /12-/24 and outside `vpcCidr`",
)
def service_cidr(p: Platform) -> Iterator[Finding]:
    """Check that the Service CIDR is one EKS accepts and lies outside the VPC."""
    service = p.cluster.service_cidr
    net: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    try:
        net = ipaddress.ip_network(service)
    except ValueError:
        net = None
    vpc = _vpc_network(p.cluster.vpc_cidr)
    if (
        not isinstance(net, ipaddress.IPv4Network)
        or not 12 <= net.prefixlen <= 24
        or not any(net.subnet_of(block) for block in _PRIVATE_BLOCKS)
    ):
        yield Finding(
            "cluster.serviceCidr",
            f"{service!r} is not an IPv4 CIDR from /12 to /24 inside 10.0.0.0/8, 172.16.0.0/12 or "
            "192.168.0.0/16 (what EKS accepts).",
            "use e.g. 172.20.0.0/16.",
        )
    elif vpc is not None and net.overlaps(vpc):
        yield Finding(
            "cluster.serviceCidr",
            f"{service!r} overlaps cluster.vpcCidr {str(vpc)!r}; EKS refuses a Service CIDR inside the VPC.",
            "pick a block outside the VPC, e.g. 172.20.0.0/16 (or 10.100.0.0/16 if the VPC is in 172.16.0.0/12).",
        )


@group_rule(
    code="HPT-AZ",
    domain=Domain.NETWORKING,
    at="cluster.instanceGroups[*].availabilityZone",
    reads=("cluster.availabilityZones",),
    failure="an instance group pinned to a zone the cluster has no subnet in",
    guardrail="`availabilityZone` of a group is one of `cluster.availabilityZones`",
)
def group_availability_zone(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that an instance group pinned to a zone uses one of the cluster's zones."""
    if g.availability_zone is not None and g.availability_zone not in p.cluster.availability_zones:
        yield Finding(
            f"cluster.instanceGroups[{i}].availabilityZone",
            f"{g.availability_zone!r} is not one of cluster.availabilityZones "
            f"{list(p.cluster.availability_zones)}.",
            "add the zone to cluster.availabilityZones or pick one of them.",
        )


#: Construct validation of :class:`~hyperpod_tenancy.constructs.TeamTenant`.
NETWORK_POLICY_ENFORCEMENT = Guardrail(
    code="HPT-NETWORK-POLICY-ENFORCEMENT",
    stage=Stage.SYNTH,
    severity=Severity.ERROR,
    domain=Domain.NETWORKING,
    failure="NetworkPolicy applied but the CNI does not enforce it",
    guardrail="vpc-cni is configured with `enableNetworkPolicy`; a team on a cluster that cannot prove it fails "
    "synthesis",
)
