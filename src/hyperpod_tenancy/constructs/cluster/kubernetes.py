"""The shared cluster's EKS cluster, its system nodes and the add-ons every node needs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk.lambda_layer_kubectl_v33 import KubectlV33Layer
from constructs import IValidation

from hyperpod_tenancy.constructs._private.kubectl import eks_addon
from hyperpod_tenancy.constructs.cluster.build import ClusterBuild
from hyperpod_tenancy.k8s import labels

__all__ = [
    "NODE_BOOTSTRAP_ADDONS",
    "BaseAddons",
    "RejectAl2OnNewKubernetes",
    "add_addon",
    "addons_after_the_system_nodes",
    "create_base_addons",
    "create_eks",
]

_KUBERNETES_VERSIONS = {
    "1.30": eks.KubernetesVersion.V1_30,
    "1.31": eks.KubernetesVersion.V1_31,
    "1.32": eks.KubernetesVersion.V1_32,
    "1.33": eks.KubernetesVersion.V1_33,
}
#: EKS add-ons that are DaemonSets a node needs before it is Ready (the CNI, kube-proxy, the Pod Identity agent):
#: created with the cluster, not after its nodes. Every other add-on runs a Deployment and waits for the system
#: node group (``SharedHyperPodCluster._addons_after_the_system_nodes``).
NODE_BOOTSTRAP_ADDONS = frozenset({"vpc-cni", "kube-proxy", "eks-pod-identity-agent"})


def create_eks(
    shared: ClusterBuild,
    endpoint_access: eks.EndpointAccess | None,
    kubectl_layer: lambda_.ILayerVersion | None,
) -> tuple[eks.Cluster, eks.Nodegroup]:
    """Create the EKS cluster (authentication mode API, NODEGROUP capacity) and its system node group."""
    spec = shared.platform.cluster
    private = list(shared._subnets_by_az.values())
    key = kms.Key(shared, "SecretsKey", enable_key_rotation=True, description=f"EKS secrets of {spec.name}")
    cluster = eks.Cluster(
        shared,
        "Eks",
        cluster_name=spec.name,
        version=_KUBERNETES_VERSIONS[spec.kubernetes_version],
        # eks_v2 defaults to Auto Mode, which HyperPod does not support: use managed node groups.
        default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
        default_capacity=0,
        vpc=shared.vpc,
        vpc_subnets=[ec2.SubnetSelection(subnets=private)],
        security_group=shared.api_endpoint_security_group,
        service_ipv4_cidr=spec.service_cidr,
        endpoint_access=endpoint_access or eks.EndpointAccess.PRIVATE,
        secrets_encryption_key=key,
        cluster_logging=[
            eks.ClusterLoggingTypes.API,
            eks.ClusterLoggingTypes.AUDIT,
            eks.ClusterLoggingTypes.AUTHENTICATOR,
            eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
            eks.ClusterLoggingTypes.SCHEDULER,
        ],
        kubectl_provider_options=eks.KubectlProviderOptions(
            kubectl_layer=kubectl_layer or KubectlV33Layer(shared, "KubectlLayer"),
            private_subnets=private,
        ),
    )
    system = spec.system_node_group
    instance_type = ec2.InstanceType(system.instance_type)
    system_nodes = cluster.add_nodegroup_capacity(
        "SystemNodes",
        instance_types=[instance_type],
        # EKS publishes no AL2 AMIs after Kubernetes 1.32, and CDK picks AL2 unless told otherwise
        # (https://docs.aws.amazon.com/eks/latest/userguide/al2023.html): name the AL2023 type explicitly.
        ami_type=(
            eks.NodegroupAmiType.AL2023_ARM_64_STANDARD
            if instance_type.architecture == ec2.InstanceArchitecture.ARM_64
            else eks.NodegroupAmiType.AL2023_X86_64_STANDARD
        ),
        min_size=system.count,
        desired_size=system.count,
        max_size=max(system.count, 2) * 2,
        subnets=ec2.SubnetSelection(subnets=private),
        labels={labels.NODE_ROLE_LABEL: labels.SYSTEM_NODE_ROLE},
    )
    return cluster, system_nodes


def add_addon(shared: ClusterBuild, id: str, name: str, **props: Any) -> eks.CfnAddon:
    """Create an EKS add-on of the cluster."""
    return eks_addon(shared, id, cluster_name=shared.eks_cluster.cluster_name, addon_name=name, **props)


@dataclass(frozen=True)
class BaseAddons:
    """What :func:`create_base_addons` created."""

    #: The vpc-cni add-on (network policy enforcement switched on).
    vpc_cni: eks.CfnAddon
    #: The EKS Pod Identity agent add-on.
    pod_identity: eks.CfnAddon
    #: The cert-manager add-on (the HyperPod training operator and the POSIX identity webhook need it).
    cert_manager: eks.CfnAddon
    #: Every base add-on, in creation order.
    all: tuple[eks.CfnAddon, ...]


def create_base_addons(shared: ClusterBuild) -> BaseAddons:
    """Create the add-ons every node needs (VPC CNI with network policy, Pod Identity, cert-manager)."""
    # VPC CNI enforces NetworkPolicy only with its network policy agent switched on.
    vpc_cni = add_addon(
        shared, "VpcCni", "vpc-cni", configuration_values=json.dumps({"enableNetworkPolicy": "true"})
    )
    pod_identity = add_addon(shared, "PodIdentityAgent", "eks-pod-identity-agent")
    cert_manager = add_addon(shared, "CertManager", "cert-manager")
    addons = (
        vpc_cni,
        add_addon(shared, "KubeProxy", "kube-proxy"),
        add_addon(shared, "CoreDns", "coredns"),
        pod_identity,
        add_addon(shared, "FsxCsiDriver", "aws-fsx-csi-driver"),
        cert_manager,
    )
    return BaseAddons(vpc_cni=vpc_cni, pod_identity=pod_identity, cert_manager=cert_manager, all=addons)


def addons_after_the_system_nodes(shared: ClusterBuild) -> None:
    """Create every add-on whose pods need a node after the system node group.

    An add-on whose Deployment is created before any node can schedule stays ``DEGRADED`` and fails the stack
    (terraform-aws-modules/terraform-aws-eks#1801, fixed by ordering add-ons after node groups in #1840;
    aws/containers-roadmap#1389). The DaemonSets a node needs to become Ready (:data:`NODE_BOOTSTRAP_ADDONS`)
    stay unordered: the nodes wait for them, not the other way round.
    """
    for child in shared.node.find_all():
        if isinstance(child, eks.CfnAddon) and child.addon_name not in NODE_BOOTSTRAP_ADDONS:
            child.node.add_dependency(shared.system_node_group)


#: First Kubernetes version for which EKS publishes no Amazon Linux 2 AMIs
#: (https://docs.aws.amazon.com/eks/latest/userguide/al2023.html; research/hyperpod.md section 21).
_FIRST_VERSION_WITHOUT_AL2 = (1, 33)


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


@jsii.implements(IValidation)
class RejectAl2OnNewKubernetes:
    """A managed node group with an ``AL2_*`` AMI type on Kubernetes >= 1.33 fails to create: refuse it at synth."""

    def __init__(self, cluster: ClusterBuild) -> None:
        self._cluster = cluster

    def validate(self) -> list[str]:
        """Return an error per AL2 node group of the cluster on a Kubernetes version with no AL2 AMIs."""
        version = self._cluster.platform.cluster.kubernetes_version
        if _version_tuple(version) < _FIRST_VERSION_WITHOUT_AL2:
            return []
        errors = []
        eks_path = self._cluster.eks_cluster.node.path
        for construct in self._cluster.node.root.node.find_all():
            if not isinstance(construct, eks.Nodegroup) or construct.cluster.node.path != eks_path:
                continue
            cfn = construct.node.default_child
            ami_type = cfn.ami_type if isinstance(cfn, eks.CfnNodegroup) else None
            if isinstance(ami_type, str) and ami_type.startswith("AL2_"):
                errors.append(
                    f"[HPT-NODEGROUP-AMI] node group {construct.node.path} has AMI type {ami_type} on Kubernetes "
                    f"{version}; EKS publishes no Amazon Linux 2 AMIs after 1.32, so the node group would fail to "
                    "create. Pass ami_type=NodegroupAmiType.AL2023_* (or BOTTLEROCKET_*) matching the instance "
                    "architecture."
                )
        return errors
