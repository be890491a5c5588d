"""The shared cluster's network: its VPC (created or given), private subnets by zone, and the nodes' security group."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

from hyperpod_tenancy.constructs._private.annotations import (
    acknowledge,
    warn,
)
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.constructs.cluster.vpc import (
    VpcAttributes,
    blocks_of_vpc,
    check_service_cidr,
    refuse_foreign_stage,
)
from hyperpod_tenancy.errors import TenancyError

__all__ = [
    "admit_cidr_to_api_endpoint",
    "admit_to_api_endpoint",
    "connect_node_security_groups",
    "create_api_endpoint_groups",
    "create_security_group",
    "create_vpc",
    "private_subnets_by_az",
    "use_vpc",
]

_LUSTRE_PORTS = (ec2.Port.tcp(988), ec2.Port.tcp_range(1018, 1023))


def admit_to_api_endpoint(scope: Construct, id: str, *, group_id: str, peer: ec2.ISecurityGroup) -> None:
    """Admit ``peer`` to the API endpoint's group (``group_id``) on TCP 443."""
    ec2.CfnSecurityGroupIngress(
        scope,
        id,
        group_id=group_id,
        source_security_group_id=peer.security_group_id,
        ip_protocol="tcp",
        from_port=443,
        to_port=443,
        description="EKS private API endpoint from an admitted peer",
    )


def admit_cidr_to_api_endpoint(
    scope: Construct, id: str, *, group_id: str, cidr: str
) -> ec2.CfnSecurityGroupIngress:
    """Admit the IPv4 block ``cidr`` (a peered VPC) to the API endpoint's group (``group_id``) on TCP 443."""
    return ec2.CfnSecurityGroupIngress(
        scope,
        id,
        group_id=group_id,
        cidr_ip=cidr,
        ip_protocol="tcp",
        from_port=443,
        to_port=443,
        description="EKS private API endpoint from a peered VPC",
    )


def create_vpc(shared: ClusterBuild) -> ec2.Vpc:
    """Create the cluster's VPC from ``cluster.vpcCidr`` and ``cluster.availabilityZones``."""
    spec = shared.platform.cluster
    vpc = ec2.Vpc(
        shared,
        "Vpc",
        ip_addresses=ec2.IpAddresses.cidr(spec.vpc_cidr),
        availability_zones=list(spec.availability_zones),
        # one NAT gateway per zone (the default): with one, the other zone's instance group sends all its
        # egress (image pulls, S3 without the endpoint) across zones and loses it when that zone fails
        # (https://docs.aws.amazon.com/vpc/latest/userguide/nat-gateway-basics.html).
        nat_gateways=len(spec.availability_zones),
        # set, not left to the app's @aws-cdk/aws-ec2:restrictDefaultSecurityGroup flag (Security Hub EC2.2)
        restrict_default_security_group=True,
        subnet_configuration=[
            ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
            # HyperPod nodes and pods take VPC IPs (VPC CNI): give them large subnets.
            ec2.SubnetConfiguration(
                name="private", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=19
            ),
        ],
    )
    vpc.add_flow_log(
        "FlowLog",
        destination=ec2.FlowLogDestination.to_cloud_watch_logs(
            logs.LogGroup(shared, "FlowLogs", retention=logs.RetentionDays.ONE_YEAR)
        ),
    )
    vpc.add_gateway_endpoint("S3Endpoint", service=ec2.GatewayVpcEndpointAwsService.S3)
    acknowledge(
        vpc,
        "CloudFormation-Validate::W3010",
        "the platform names its zones on purpose: GPU capacity (reservations, training plans) is per zone",
    )
    return vpc


def use_vpc(
    shared: ClusterBuild, given: ec2.IVpc | VpcAttributes | None, given_blocks: Sequence[str] | None
) -> tuple[ec2.IVpc, tuple[str, ...]]:
    """Return the VPC in use (created without one given) and its IPv4 blocks, checked against the Service CIDR."""
    spec = shared.platform.cluster
    if given is None:
        return create_vpc(shared), (spec.vpc_cidr,)
    if isinstance(given, VpcAttributes):
        given_vpc = given.to_vpc(shared, "Vpc", zones=spec.availability_zones)
        given_blocks = [*given.cidr_blocks, *(given_blocks or ())]
    else:
        refuse_foreign_stage(given, shared)
        given_vpc = given
    blocks = blocks_of_vpc(given_vpc, given=given_blocks, where=f"{shared.node.path} (vpc)")
    check_service_cidr(spec.service_cidr, blocks, where=shared.node.path)
    if spec.vpc_cidr not in blocks:
        warn(
            shared,
            "HPT-VPC-CIDR-GIVEN",
            f"cluster.vpcCidr is {spec.vpc_cidr!r} but the VPC given has {list(blocks)}; team NetworkPolicies "
            "exclude the VPC's blocks. Set cluster.vpcCidr to the VPC's primary block so that the policy "
            "describes the cluster.",
        )
    return given_vpc, blocks


def private_subnets_by_az(shared: ClusterBuild) -> dict[str, ec2.ISubnet]:
    """Return the VPC's private subnets by availability zone."""
    selected = shared.vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS).subnets
    by_az = {subnet.availability_zone: subnet for subnet in selected}
    missing = [z for z in shared.platform.cluster.availability_zones if z not in by_az]
    if missing:
        raise TenancyError(
            f"{shared.node.path}: the VPC has no private subnet with egress in {missing}; "
            "add subnets in every zone of cluster.availabilityZones or pass a VPC that has them."
        )
    return by_az


def create_security_group(shared: ClusterBuild) -> ec2.SecurityGroup:
    """Create the security group of the HyperPod nodes and FSx (EFA and Lustre within the group)."""
    sg = ec2.SecurityGroup(
        shared,
        "SecurityGroup",
        vpc=shared.vpc,
        description="HyperPod nodes and FSx for Lustre (EFA within the group, Lustre)",
        allow_all_outbound=True,
    )
    sg.add_ingress_rule(sg, ec2.Port.all_traffic(), "all traffic within the group (EFA, node-to-node)")
    for port in _LUSTRE_PORTS:
        sg.add_ingress_rule(sg, port, "FSx for Lustre")
    return sg


def connect_node_security_groups(shared: ClusterBuild) -> None:
    """Open the Lustre ports between the nodes' group and the EKS cluster group (system nodes)."""
    # FSx uses this construct's group only; Lustre clients on system nodes (EKS cluster group) need the Lustre
    # ports both ways: client -> file servers, and file servers -> client
    # (https://docs.aws.amazon.com/fsx/latest/LustreGuide/limit-access-security-groups.html).
    cluster_sg = shared.eks_cluster.cluster_security_group
    for port in _LUSTRE_PORTS:
        shared.security_group.add_ingress_rule(cluster_sg, port, "FSx for Lustre from system nodes")
        cluster_sg.add_ingress_rule(
            shared.security_group, port, "FSx for Lustre servers to system-node clients"
        )


def create_api_endpoint_groups(shared: ClusterBuild) -> tuple[ec2.SecurityGroup, ec2.SecurityGroup]:
    """Create the API endpoint's security group and the group whose members it admits on TCP 443."""
    endpoint = ec2.SecurityGroup(
        shared,
        "ApiEndpointSecurityGroup",
        vpc=shared.vpc,
        description="EKS control plane ENIs (private API endpoint): TCP 443 from admitted peers",
        allow_all_outbound=False,
    )
    client = ec2.SecurityGroup(
        shared,
        "ApiClientSecurityGroup",
        vpc=shared.vpc,
        description="Clients of the private EKS API endpoint (Studio apps): membership admits to TCP 443",
        allow_all_outbound=False,
    )
    client.add_egress_rule(endpoint, ec2.Port.tcp(443), "EKS private API endpoint")
    admit_to_api_endpoint(
        shared,
        "ApiClientAccess",
        group_id=endpoint.security_group_id,
        peer=client,
    )
    return endpoint, client
