"""A team's NetworkPolicies: default deny, DNS, its own namespace, and egress outside the VPC and IMDS."""

from __future__ import annotations

from collections.abc import Sequence

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.k8s.team_manifests._common import OBSERVABILITY_NAMESPACE, Manifest, _meta
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import (
    Platform,
    Team,
)

__all__ = ["IMDS_CIDR"]

#: The EC2 instance metadata service; pods must never reach it (node role credentials).
IMDS_CIDR = "169.254.169.254/32"


def _network_policy(team: Team, name: str, spec: Manifest) -> Manifest:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(name, team, names.namespace(team.name)),
        "spec": {"podSelector": {}, **spec},
    }


def _network_policies(
    platform: Platform, team: Team, service_cidr: str, vpc_cidrs: Sequence[str]
) -> list[Manifest]:
    """Default deny, then allow DNS, the namespace itself, and the internet minus IMDS and the VPC.

    ``default-deny`` selects every pod for ingress and egress. ``allow-same-namespace`` also selects
    every pod for both directions, so the deny is redundant in effect; it is kept so that removing or
    editing one allow policy can never open the namespace. ``allow-internet-egress`` allows egress to
    ``0.0.0.0/0`` except IMDS (node role credentials), every CIDR block of the VPC (other teams' pods and
    nodes: with the VPC CNI pods have VPC addresses) and the Service CIDR (every ClusterIP: other teams' Services, the
    API server, Kueue's and the operators' webhooks and metrics). The EKS Pod Identity agent (``169.254.170.23``) stays reachable, S3 and other AWS
    endpoints are reached through their public addresses (or a gateway endpoint). Ingress from other
    namespaces stays denied, which is what actually isolates teams: it holds even if another team's
    egress were open. With ``cluster.observability`` on, ``allow-observability-scrape`` admits ingress from
    the observability add-on's namespace (:data:`OBSERVABILITY_NAMESPACE`) only, so the collector can scrape
    workload metrics; no team can run pods there.
    """
    except_cidrs = [*vpc_cidrs, IMDS_CIDR, service_cidr]
    dns_peer = {
        "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: "kube-system"}},
        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
    }
    same_namespace: Manifest = {"podSelector": {}}
    policies = [
        _network_policy(team, "default-deny", {"policyTypes": ["Ingress", "Egress"]}),
        _network_policy(
            team,
            "allow-dns",
            {
                "policyTypes": ["Egress"],
                "egress": [
                    {
                        "to": [dns_peer],
                        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
                    }
                ],
            },
        ),
        _network_policy(
            team,
            "allow-same-namespace",
            {
                "policyTypes": ["Ingress", "Egress"],
                "ingress": [{"from": [same_namespace]}],
                "egress": [{"to": [same_namespace]}],
            },
        ),
        _network_policy(
            team,
            "allow-internet-egress",
            {
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": except_cidrs}}]}],
            },
        ),
    ]
    if platform.cluster.observability:
        # The observability add-on's collector scrapes the metrics endpoints of workload pods (Ray,
        # inference, training metrics; SageMaker "Implementing inference observability on HyperPod
        # clusters", "Ray metrics reference"): default-deny ingress would silently blind it. Only pods of
        # its own namespace are admitted, on any port (metrics ports differ per framework).
        collector = {
            "namespaceSelector": {"matchLabels": {labels.NAMESPACE_NAME_LABEL: OBSERVABILITY_NAMESPACE}}
        }
        policies.append(
            _network_policy(
                team,
                "allow-observability-scrape",
                {"policyTypes": ["Ingress"], "ingress": [{"from": [collector]}]},
            )
        )
    return policies
