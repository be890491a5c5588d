"""A VPC given to the cluster: :class:`VpcAttributes`, and the IPv4 blocks of the VPC in use.

With the VPC CNI, pods take addresses of the VPC: a team's ``allow-internet-egress`` NetworkPolicy must exclude
every block of the VPC in use, secondary blocks included, or team pods reach other teams' pods and the nodes.
The policy's ``cluster.vpcCidr`` describes the VPC the cluster creates; a VPC given to the cluster has its own.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import aws_cdk as cdk
import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from hyperpod_tenancy.errors import TenancyError

__all__ = ["VpcAttributes", "blocks_of_vpc", "check_service_cidr", "refuse_foreign_stage"]


@dataclass(frozen=True, kw_only=True)
class VpcAttributes:
    """An existing VPC, by its attributes: what ``PlatformStage`` (or a cluster in any stage) imports.

    A VPC *object* built in another stage of the app cannot be referenced from the platform's stacks (CDK refuses
    cross-stage references); give its attributes instead, as plain values (or tokens of the cluster stack's own).

    Args:
        vpc_id: the VPC's ID.
        cidr_blocks: every IPv4 CIDR block of the VPC, secondary blocks included (team egress excludes them).
        private_subnets: a private subnet with egress per availability zone, ``{zone: subnet ID}``, one for each
            zone of ``cluster.availabilityZones``.
        private_route_tables: the route table of each of those subnets, ``{zone: route table ID}``. Default: not
            known (CDK then warns where a route table is read).

    """

    vpc_id: str
    cidr_blocks: Sequence[str]
    private_subnets: Mapping[str, str]
    private_route_tables: Mapping[str, str] | None = None

    def to_vpc(self, scope: Construct, id: str, *, zones: Sequence[str]) -> ec2.IVpc:
        """Import the VPC in ``scope`` with its private subnets in ``zones`` (the platform's), in that order.

        Raises:
            TenancyError: a zone of ``zones`` has no subnet, or a subnet is in a zone the platform does not use.

        """
        missing = [z for z in zones if z not in self.private_subnets]
        extra = sorted(set(self.private_subnets) - set(zones))
        if missing or extra:
            raise TenancyError(
                f"{scope.node.path}: vpc=VpcAttributes(private_subnets=...) names zones {sorted(self.private_subnets)} "
                f"but cluster.availabilityZones is {list(zones)}; give one private subnet per zone of the policy."
            )
        tables = self.private_route_tables
        return ec2.Vpc.from_vpc_attributes(
            scope,
            id,
            vpc_id=self.vpc_id,
            vpc_cidr_block=self.cidr_blocks[0] if self.cidr_blocks else None,
            availability_zones=list(zones),
            private_subnet_ids=[self.private_subnets[z] for z in zones],
            private_subnet_route_table_ids=[tables[z] for z in zones] if tables else None,
        )


def refuse_foreign_stage(vpc: ec2.IVpc, scope: Construct) -> None:
    """Refuse a VPC object from another stage than ``scope``'s, naming the ``vpc`` prop and :class:`VpcAttributes`."""
    theirs, ours = cdk.Stage.of(vpc), cdk.Stage.of(scope)
    if theirs is not ours:
        where = theirs.node.path if theirs is not None else "the app"
        mine = ours.node.path if ours is not None else "the app"
        raise TenancyError(
            f"{scope.node.path}: vpc is the VPC object {vpc.node.path!r} of another stage ({where or 'the app'}) "
            f"than the cluster's ({mine or 'the app'}); CDK cannot reference it across stages. Pass its attributes "
            "instead: vpc=VpcAttributes(vpc_id=..., cidr_blocks=[...], private_subnets={zone: subnet ID}) "
            "(in PlatformStage: cluster_options=ClusterOptions(vpc=VpcAttributes(...)))."
        )


def _ipv4(value: str, where: str) -> str:
    try:
        net = ipaddress.ip_network(value)
    except ValueError:
        net = None
    if not isinstance(net, ipaddress.IPv4Network):
        raise TenancyError(
            f"{where}: {value!r} is not an IPv4 CIDR block; give blocks such as '10.50.0.0/16'."
        )
    return str(net)


def _primary_block(vpc: ec2.IVpc) -> str | None:
    """Return the VPC's primary block when it is known at synth, else ``None``."""
    try:
        block = vpc.vpc_cidr_block
    except (jsii.errors.JSIIError, RuntimeError):
        # an imported VPC without ``vpc_cidr_block`` refuses the attribute
        return None
    if not cdk.Token.is_unresolved(block):
        return block
    cfn = vpc.node.default_child
    if isinstance(cfn, ec2.CfnVPC) and cfn.cidr_block and not cdk.Token.is_unresolved(cfn.cidr_block):
        return cfn.cidr_block
    return None


def _secondary_blocks(vpc: ec2.IVpc) -> tuple[list[str], list[str]]:
    """Return the IPv4 blocks associated with ``vpc`` in its stack (``AWS::EC2::VPCCidrBlock``), and unknown ones."""
    stack = cdk.Stack.of(vpc)
    vpc_id = stack.resolve(vpc.vpc_id)
    known: list[str] = []
    unknown: list[str] = []
    for construct in stack.node.find_all():
        if not isinstance(construct, ec2.CfnVPCCidrBlock) or stack.resolve(construct.vpc_id) != vpc_id:
            continue
        if (
            construct.amazon_provided_ipv6_cidr_block
            or construct.ipv6_cidr_block
            or construct.ipv6_ipam_pool_id
        ):
            continue
        block = construct.cidr_block
        if block and not cdk.Token.is_unresolved(block):
            known.append(block)
        else:
            unknown.append(construct.node.path)
    return known, unknown


def blocks_of_vpc(vpc: ec2.IVpc, *, given: Sequence[str] | None, where: str) -> tuple[str, ...]:
    """Every IPv4 CIDR block of ``vpc``: ``given`` and what the VPC tells at synth (primary, then secondary).

    Raises:
        TenancyError: a block is not known at synth (a token, e.g. an IPAM allocation or an imported VPC without
            ``vpc_cidr_block``) and ``given`` does not list the blocks; naming ``vpc_cidr_blocks``, the fix.

    """
    blocks = [_ipv4(b, f"{where}: vpc_cidr_blocks") for b in given or ()]
    primary = _primary_block(vpc)
    secondary, unknown = _secondary_blocks(vpc)
    if given is None and (primary is None or unknown):
        what = "its primary CIDR block" if primary is None else f"the secondary block(s) {unknown}"
        raise TenancyError(
            f"{where}: the VPC {vpc.node.path!r} does not tell {what} at synth, and team NetworkPolicies must "
            "exclude every block of the VPC (pods take VPC addresses); pass vpc_cidr_blocks=['10.50.0.0/16', ...] "
            "listing all of its IPv4 blocks."
        )
    for block in ([primary] if primary else []) + secondary:
        normal = _ipv4(block, f"{where}: the VPC's CIDR block")
        if normal not in blocks:
            blocks.append(normal)
    if not blocks:
        raise TenancyError(f"{where}: vpc_cidr_blocks is empty; list every IPv4 block of the VPC.")
    return tuple(blocks)


def check_service_cidr(service_cidr: str, blocks: Sequence[str], *, where: str) -> None:
    """Refuse a Service CIDR that overlaps a block of the VPC in use (EKS refuses it at deploy)."""
    service = ipaddress.ip_network(service_cidr, strict=False)
    for block in blocks:
        if service.overlaps(ipaddress.ip_network(block)):
            raise TenancyError(
                f"{where}: cluster.serviceCidr {service_cidr!r} overlaps the VPC's block {block!r}; EKS refuses a "
                "Service CIDR inside the VPC. Set cluster.serviceCidr to a block outside every VPC block."
            )
