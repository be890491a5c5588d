"""Issue 8, class 4: team pods must not reach ClusterIPs by address (Service CIDR egress).

The internet-egress rule admitted ``0.0.0.0/0`` minus the VPC CIDR and IMDS, so a team pod could reach every
ClusterIP in the cluster: the API server's ``kubernetes`` Service (the first address of the Service CIDR on
EKS), Kueue's and the operators' webhooks and metrics (no ingress policy protects them), other teams'
Services. The cluster sets its EKS Service CIDR explicitly (``cluster.serviceCidr`` →
``serviceIpv4Cidr``) and every team's egress excludes it, while DNS stays reachable.

The NetworkPolicies are taken from the synthesized platform on both fairness backends and checked with
network-config-analyzer (tests/support/nca_scheme.py). NCA reasons about addresses and pod selectors; the
kube-dns *ClusterIP* stays reachable on EKS because the VPC CNI network-policy controller adds the ClusterIPs
of Services whose selector the egress rule's pod selector matches (``k8s-app: kube-dns``) to the rule
(aws/amazon-network-policy-controller-k8s ``pkg/resolvers/endpoints.go``, ``getMatchingServiceClusterIPs``;
issue #194), so the ``dns-*`` permits query on the kube-dns pods is the check that matters.
"""

from __future__ import annotations

import ipaddress
from typing import Any

import nca_scheme
import pytest
from nca_scheme import Query
from synth import Synth

from hyperpod_tenancy.policy import names


def _egress(namespace: str, cidr: str, ports: list[dict[str, Any]] | None = None) -> Query:
    rule: dict[str, Any] = {"to": [{"ipBlock": {"cidr": cidr}}]}
    if ports:
        rule["ports"] = ports
    return Query(
        "",
        "forbids",
        [nca_scheme._policy("q", namespace, {"policyTypes": ["Egress"], "egress": [rule]})],
    )


def _addresses(service_cidr: str) -> dict[str, str]:
    net = ipaddress.ip_network(service_cidr)
    return {
        # EKS gives the `kubernetes` Service the first address and kube-dns the tenth
        # (https://docs.aws.amazon.com/eks/latest/userguide/create-cluster.html, "Service IPv4 range")
        "api-server": f"{net[1]}/32",
        "kube-dns-ip": f"{net[10]}/32",
        "some-cluster-ip": f"{net[net.num_addresses // 2]}/32",
        "whole-range": service_cidr,
    }


def _queries(synth: Synth) -> list[Query]:
    addresses = _addresses(synth.platform.cluster.service_cidr)
    queries = []
    for team in synth.platform.teams:
        ns = names.namespace(team.name)
        cases = {
            # the API server through its ClusterIP, HTTPS
            "api-server": _egress(ns, addresses["api-server"], [{"protocol": "TCP", "port": 443}]),
            # another team's (or Kueue's webhook / an operator's metrics) Service by ClusterIP, any port
            "other-cluster-ip": _egress(ns, addresses["some-cluster-ip"]),
            # the kube-dns ClusterIP on a port that is not DNS
            "kube-dns-ip-other-port": _egress(
                ns, addresses["kube-dns-ip"], [{"protocol": "TCP", "port": 9153}]
            ),
            # anything in the Service CIDR
            "whole-range": _egress(ns, addresses["whole-range"]),
        }
        for name, query in cases.items():
            query.name = f"{name}-{ns}"
            queries.append(query)
    return queries


@pytest.fixture(scope="module")
def verdict(synth: Synth, tmp_path_factory: pytest.TempPathFactory) -> nca_scheme.SchemeResult:
    policies = [m for m in synth.manifests() if m["kind"] == "NetworkPolicy"]
    teams = [names.namespace(t.name) for t in synth.platform.teams]
    isolation = nca_scheme.isolation_queries(teams, synth.platform.cluster.vpc_cidr)
    dns = [q for q in isolation if q.name.startswith("dns-")]  # DNS must keep working
    return nca_scheme.run_scheme(
        tmp_path_factory.mktemp("nca-service-cidr"),
        policies=policies,
        team_namespaces=teams,
        vpc_cidr=synth.platform.cluster.vpc_cidr,
        queries=[*_queries(synth), *dns],
    )


@pytest.mark.parametrize(
    "attack", ["api-server", "other-cluster-ip", "kube-dns-ip-other-port", "whole-range"]
)
def test_no_team_reaches_cluster_ips_by_address(
    synth: Synth, verdict: nca_scheme.SchemeResult, attack: str
) -> None:
    asked = {f"{attack}-{names.namespace(t.name)}" for t in synth.platform.teams}
    assert asked <= set(verdict.queries)
    leaked = asked & verdict.failed
    assert not leaked, f"reachable: {sorted(leaked)}\n{verdict.output}"


def test_dns_to_kube_dns_still_works(synth: Synth, verdict: nca_scheme.SchemeResult) -> None:
    dns = {f"dns-{names.namespace(t.name)}" for t in synth.platform.teams}
    assert dns <= set(verdict.queries)
    assert not dns & verdict.failed, verdict.output
    assert verdict.returncode == 0, verdict.output


def test_the_rendered_exclusion_is_the_cluster_service_cidr(synth: Synth) -> None:
    # the Service CIDR in team egress is the one the EKS cluster is created with (serviceIpv4Cidr)
    cluster = synth.cluster["Resources"]
    (eks,) = [r for r in cluster.values() if r["Type"] == "AWS::EKS::Cluster"]
    configured = eks["Properties"]["KubernetesNetworkConfig"]["ServiceIpv4Cidr"]
    assert configured == synth.platform.cluster.service_cidr
    for policy in (m for m in synth.manifests() if m["metadata"]["name"] == "allow-internet-egress"):
        assert configured in policy["spec"]["egress"][0]["to"][0]["ipBlock"]["except"]
