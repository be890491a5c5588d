"""Network isolation of team namespaces, proved offline with network-config-analyzer (NCA).

The rendered NetworkPolicies of every team are loaded with a sample topology (two pods per team,
kube-dns and another kube-system pod, pods in the platform and default namespaces) and NCA answers, for
the reference platform (three teams) and a four-team variant:

* for every ordered pair of teams, no pod of one reaches any pod of the other on any port;
* nothing outside a team namespace (other namespaces, any IP address) reaches into it;
* team pods cannot reach IMDS or the VPC CIDR (other teams' pods by address), nor kube-system except
  kube-dns on port 53;
* DNS to kube-dns, traffic inside the namespace and internet egress (and the Pod Identity agent) work.

Deliberately broken policies must make the same checks fail, so the checker is not vacuous.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nca_scheme
import platforms
import pytest
from nca_scheme import Query, SchemeResult

from hyperpod_tenancy.k8s.team_manifests import team_manifests
from hyperpod_tenancy.policy import Platform, names

PLATFORMS = {name: platforms.TENANT_PLATFORMS[name] for name in ("reference", "four-teams")}


def _policies(platform: Platform, **kwargs: Any) -> list[dict[str, Any]]:
    out = []
    for team in platform.teams:
        out += [
            o
            for o in team_manifests(platform, team, fsx=platforms.FSX, **kwargs)
            if o["kind"] == "NetworkPolicy"
        ]
    return out


def _namespaces(platform: Platform) -> list[str]:
    return [names.namespace(t.name) for t in platform.teams]


def _run(tmp: Path, platform: Platform, policies: list[dict[str, Any]], **kwargs: Any) -> SchemeResult:
    return nca_scheme.run_scheme(
        tmp,
        policies=policies,
        team_namespaces=kwargs.pop("team_namespaces", _namespaces(platform)),
        vpc_cidr=platform.cluster.vpc_cidr,
        service_cidr=kwargs.pop("service_cidr", platform.cluster.service_cidr),
        scraped=kwargs.pop("scraped", platform.cluster.observability),
        **kwargs,
    )


@pytest.fixture(scope="module", params=sorted(PLATFORMS))
def verdict(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Platform, SchemeResult]:
    platform = PLATFORMS[request.param]()
    result = _run(tmp_path_factory.mktemp(f"nca-{request.param}"), platform, _policies(platform))
    return platform, result


def test_every_isolation_check_passes(verdict: tuple[Platform, SchemeResult]) -> None:
    platform, result = verdict
    assert result.returncode == 0, (
        f"NCA reported {result.returncode} mismatches: {sorted(result.failed)}\n{result.output}"
    )
    assert not result.failed
    teams = _namespaces(platform)
    pairs = {f"cross-{a}-to-{b}" for a in teams for b in teams if a != b}
    assert len(pairs) == len(teams) * (len(teams) - 1)
    assert pairs <= set(result.queries), "every ordered pair of teams is asked about"
    kinds = ["foreign-ingress", "vpc", "imds", "dns-only", "dns", "same-namespace", "internet"]
    assert platform.cluster.observability, "the reference platforms run the observability add-on"
    for kind in [*kinds, "observability"]:
        assert {f"{kind}-{t}" for t in teams} <= set(result.queries)
    # each query is reported as run (NCA prints the name of every query it executes)
    for name in result.queries:
        assert f"Running query {name}\n" in result.output


def test_four_team_variant_really_has_four_teams() -> None:
    assert [t.name for t in platforms.four_team_platform().teams] == [
        "research",
        "vision",
        "inference",
        "speech",
    ]


# --- the checker is not vacuous: broken policies fail the matching checks -------------------------------


@pytest.fixture(scope="module")
def reference() -> Platform:
    return platforms.reference_platform()


def test_without_default_deny_the_namespaces_open(reference: Platform, tmp_path: Path) -> None:
    policies = [
        p
        for p in _policies(reference)
        if p["metadata"]["name"] not in {"default-deny", "allow-same-namespace", "allow-observability-scrape"}
    ]
    result = _run(tmp_path, reference, policies)
    assert result.returncode > 0
    teams = _namespaces(reference)
    # nothing selects the pods for ingress any more: every namespace is open to the world
    assert {f"foreign-ingress-{t}" for t in teams} <= result.failed
    # and the namespace's own pods no longer reach each other (egress is still restricted)
    assert {f"same-namespace-{t}" for t in teams} <= result.failed


def test_a_leak_on_both_sides_is_found_for_exactly_that_pair(reference: Platform, tmp_path: Path) -> None:
    research, vision = names.namespace("research"), names.namespace("vision")
    open_egress = nca_scheme._policy("leak-egress", research, {"policyTypes": ["Egress"], "egress": [{}]})
    open_ingress = nca_scheme._policy("leak-ingress", vision, {"policyTypes": ["Ingress"], "ingress": [{}]})
    result = _run(tmp_path, reference, [*_policies(reference), open_egress, open_ingress])
    cross = {f for f in result.failed if f.startswith("cross-")}
    assert cross == {f"cross-{research}-to-{vision}"}, result.output
    assert {
        f"foreign-ingress-{vision}",
        f"vpc-{research}",
        f"imds-{research}",
        f"dns-only-{research}",
    } <= result.failed


def test_a_leak_on_one_side_is_still_caught(reference: Platform, tmp_path: Path) -> None:
    # ingress opened in one namespace: the other teams' egress still denies it, but the namespace is open to
    # everything that is not a team (other namespaces, addresses), and the check says so
    vision = names.namespace("vision")
    open_ingress = nca_scheme._policy("leak-ingress", vision, {"policyTypes": ["Ingress"], "ingress": [{}]})
    result = _run(tmp_path, reference, [*_policies(reference), open_ingress])
    assert result.failed == {f"foreign-ingress-{vision}"}


def test_imds_reachable_is_caught(reference: Platform, tmp_path: Path) -> None:
    policies = _policies(reference)
    for p in policies:
        if p["metadata"]["name"] == "allow-internet-egress":
            p["spec"]["egress"][0]["to"][0]["ipBlock"]["except"] = [
                reference.cluster.vpc_cidr,
                reference.cluster.service_cidr,
            ]
    result = _run(tmp_path, reference, policies)
    assert result.failed == {f"imds-{t}" for t in _namespaces(reference)}


def test_vpc_reachable_is_caught(reference: Platform, tmp_path: Path) -> None:
    policies = _policies(reference)
    for p in policies:
        if p["metadata"]["name"] == "allow-internet-egress":
            p["spec"]["egress"][0]["to"][0]["ipBlock"]["except"] = [
                nca_scheme.IMDS,
                reference.cluster.service_cidr,
            ]
    result = _run(tmp_path, reference, policies)
    assert result.failed == {f"vpc-{t}" for t in _namespaces(reference)}


def test_dns_selector_typo_is_caught(reference: Platform, tmp_path: Path) -> None:
    policies = _policies(reference)
    for p in policies:
        if p["metadata"]["name"] == "allow-dns":
            p["spec"]["egress"][0]["to"][0]["podSelector"]["matchLabels"]["k8s-app"] = "kube-dsn"
    result = _run(tmp_path, reference, policies)
    teams = _namespaces(reference)
    # DNS stops working, and NCA warns that the rule selects no pods (expectedWarnings: 0)
    assert result.failed == {f"dns-{t}" for t in teams} | {
        "warnings:deployed",
        nca_scheme.EMPTINESS_QUERY,
        "empty:deployed",
    }


def test_dns_without_port_restriction_is_caught(reference: Platform, tmp_path: Path) -> None:
    policies = _policies(reference)
    for p in policies:
        if p["metadata"]["name"] == "allow-dns":
            del p["spec"]["egress"][0]["ports"]
    result = _run(tmp_path, reference, policies)
    assert result.failed == {f"dns-only-{t}" for t in _namespaces(reference)}


def test_a_spec_that_selects_nothing_fails_instead_of_passing(reference: Platform, tmp_path: Path) -> None:
    # ask about a namespace the topology does not have: every forbids about it would "pass" vacuously
    # without the expectedWarnings and emptiness guards
    teams = _namespaces(reference)
    ghost = "hyperpod-ns-ghost"
    result = _run(
        tmp_path, reference, _policies(reference), team_namespaces=[*teams, ghost], topology_namespaces=teams
    )
    assert result.returncode > 0
    assert nca_scheme.EMPTINESS_QUERY in result.failed
    # specs whose policy selects no pod (NCA does not warn about those) and specs whose rule selects none
    for config in (
        f"spec-cross-{teams[0]}-to-{ghost}",
        f"spec-imds-{ghost}",
        f"spec-internet-{ghost}",
        f"spec-cross-{ghost}-to-{teams[0]}",
    ):
        assert f"empty:{config}" in result.failed, config
    assert f"warnings:spec-cross-{ghost}-to-{teams[0]}" in result.failed
    # the real teams' specs are not affected
    assert not {f for f in result.failed if f.startswith("empty:") and ghost not in f}


# --- the Service CIDR exclusion (issue 8, class 4) ---------------------------------------------------------


def _service_cidr_query(namespace: str, cidr: str) -> Query:
    spec = nca_scheme._policy(
        "q", namespace, {"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": cidr}}]}]}
    )
    return Query(f"service-cidr-{namespace}", "forbids", [spec])


@pytest.mark.parametrize(("service_cidr", "blocked"), [(None, True), ("10.100.0.0/16", False)])
def test_the_cluster_service_cidr_is_excluded_by_default(
    reference: Platform, tmp_path: Path, service_cidr: str | None, blocked: bool
) -> None:
    # default: the policy's cluster.serviceCidr (what the cluster sets as the EKS serviceIpv4Cidr) is kept out
    # of team egress; an explicit other CIDR replaces it, and then the policy's range is reachable again,
    # which shows the query is not vacuous
    teams = _namespaces(reference)
    queries = [_service_cidr_query(t, reference.cluster.service_cidr) for t in teams]
    policies = _policies(reference, service_cidr=service_cidr)
    result = _run(tmp_path, reference, policies, queries=queries)
    expected_failures = set() if blocked else {q.name for q in queries}
    assert result.failed == expected_failures, result.output


# --- the observability collector scrapes team pods; nothing else gets in -----------------------------------


def test_without_the_scrape_policy_the_collector_is_blind(reference: Platform, tmp_path: Path) -> None:
    # The HyperPod observability add-on scrapes workload metrics (Ray, inference, training) from the pods
    # (SageMaker docs "Implementing inference observability on HyperPod clusters", "Ray metrics reference").
    policies = [p for p in _policies(reference) if p["metadata"]["name"] != "allow-observability-scrape"]
    result = _run(tmp_path, reference, policies)
    assert {f"observability-{t}" for t in _namespaces(reference)} == result.failed


def test_a_scrape_policy_open_to_every_namespace_is_caught(reference: Platform, tmp_path: Path) -> None:
    policies = _policies(reference)
    for p in policies:
        if p["metadata"]["name"] == "allow-observability-scrape":
            p["spec"]["ingress"] = [{"from": [{"namespaceSelector": {}}]}]
    result = _run(tmp_path, reference, policies)
    teams = _namespaces(reference)
    assert {f"foreign-ingress-{t}" for t in teams} <= result.failed


def test_without_observability_no_namespace_is_admitted() -> None:
    import dataclasses

    platform = platforms.reference_platform()
    off = dataclasses.replace(platform, cluster=dataclasses.replace(platform.cluster, observability=False))
    assert "allow-observability-scrape" not in {p["metadata"]["name"] for p in _policies(off)}
    assert "allow-observability-scrape" in {p["metadata"]["name"] for p in _policies(platform)}


def _ray_job_api(namespace: str, source: dict[str, Any]) -> dict[str, Any]:
    """Spec: ingress to the Ray head pods of ``namespace`` on the job API, GCS and client ports from ``source``."""
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "q", "namespace": namespace},
        "spec": {
            "podSelector": {"matchLabels": {"ray.io/node-type": "head"}},
            "policyTypes": ["Ingress"],
            "ingress": [
                {
                    "from": [source],
                    "ports": [{"protocol": "TCP", "port": p} for p in (8265, 6379, 10001)],
                }
            ],
        },
    }


def test_a_teammate_can_submit_a_ray_job_to_your_cluster_as_the_readme_says(
    reference: Platform, tmp_path: Path
) -> None:
    """The hostile case inside a team: ``ray job submit --address http://<your head>:8265`` from a teammate's pod.

    A namespace is one trust zone: the security model (docs/security-model.md) says a teammate reaches every port of your pods,
    and why (multi-node jobs need every port between their pods; NetworkPolicy cannot select "the same person").
    Another team cannot.
    """
    research, vision = names.namespace("research"), names.namespace("vision")
    queries = [
        nca_scheme.Query(
            "teammate-to-ray-head",
            "permits",
            [_ray_job_api(research, {"podSelector": {"matchLabels": {"app": "trainer"}}})],
        ),
        nca_scheme.Query(
            "other-team-to-ray-head",
            "forbids",
            [
                _ray_job_api(
                    research,
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": vision}},
                        "podSelector": {"matchLabels": {"app": "trainer"}},
                    },
                )
            ],
        ),
    ]
    result = _run(tmp_path, reference, _policies(reference), queries=queries)
    assert result.returncode == 0, result.output
    page = (Path(__file__).resolve().parents[1] / "docs" / "security-model.md").read_text()
    assert "reach every port of your pods over the network" in page
    assert "Ray dashboard and job API on 8265" in page
