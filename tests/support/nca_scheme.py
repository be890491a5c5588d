"""Build and run a network-config-analyzer (NCA) scheme over team NetworkPolicies, offline.

NCA (IBM, PyPI ``network-config-analyzer``) computes the connections a set of NetworkPolicies allows
between a given topology of namespaces and pods. It runs from its own venv (it pins PyYAML 6.0.2, which
cfn-lint cannot share): ``NCA_BIN`` or ``<repo>/.venv-nca/bin/nca``.

Each question is a *spec*: a NetworkPolicy that allows exactly the connections asked about. A ``forbids``
query passes when the deployed policies allow none of them; a ``permits`` query passes when they allow all
of them. Every network config carries ``expectedWarnings: 0``: a spec (or deployed policy) whose selector
matches no pod makes NCA warn, so a typo cannot turn a check into a vacuous pass.

The scheme's exit code is the number of queries and configs whose result differed from ``expected``; the
names of the failing ones are parsed from NCA's output.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from venv_tools import venv_tool

REPO = Path(__file__).resolve().parents[2]
IMDS = "169.254.169.254/32"
POD_IDENTITY_AGENT = "169.254.170.23/32"
#: Namespaces besides the teams' that exist in every modelled cluster.
OTHER_NAMESPACES = ("kube-system", "hyperpod-tenancy-system", "default", "hyperpod-observability")
#: Namespace of the observability add-on's collector (scrapes workload pods when observability is on).
SCRAPER_NAMESPACE = "hyperpod-observability"
#: Name of the query asserting that no deployed or spec policy (or rule) selects nothing.
EMPTINESS_QUERY = "nothing-selects-no-pods"

_NS_LABEL = "kubernetes.io/metadata.name"


def nca_bin() -> Path:
    """The NCA executable, or a test failure that says how to install it (never a skip)."""
    return venv_tool(
        "NCA_BIN",
        ".venv-nca/bin/nca",
        "Install network-config-analyzer in its own venv with `make .venv-nca/.stamp` (or `python3 -m venv "
        ".venv-nca && .venv-nca/bin/pip install network-config-analyzer==2.1.0`)",
    )


def _ns(name: str) -> dict[str, Any]:
    return {"matchLabels": {_NS_LABEL: name}}


def _policy(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podSelector": {}, **spec},
    }


def _pod(
    name: str, namespace: str, labels: dict[str, str], ports: Sequence[tuple[str, int]]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "public.ecr.aws/docker/library/busybox:1.37.0",
                    "ports": [{"containerPort": port, "protocol": proto} for proto, port in ports],
                }
            ]
        },
    }


def topology(team_namespaces: Iterable[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Namespaces and sample pods: three workload pods per team (one a Ray head), kube-dns and other system pods."""
    namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {_NS_LABEL: n}}}
        for n in (*team_namespaces, *OTHER_NAMESPACES)
    ]
    pods = []
    for ns in team_namespaces:
        pods.append(_pod("trainer-0", ns, {"app": "trainer"}, [("TCP", 29500)]))
        pods.append(_pod("server", ns, {"app": "server"}, [("TCP", 8080)]))
        # a teammate's Ray head: dashboard and job API, GCS, Ray client (KubeRay's default ports)
        pods.append(
            _pod("ray-head", ns, {"ray.io/node-type": "head"}, [("TCP", 8265), ("TCP", 6379), ("TCP", 10001)])
        )
    pods.append(_pod("coredns-1", "kube-system", {"k8s-app": "kube-dns"}, [("UDP", 53), ("TCP", 53)]))
    pods.append(_pod("metrics-server-1", "kube-system", {"k8s-app": "metrics-server"}, [("TCP", 10250)]))
    pods.append(_pod("fsx-dir-x", "hyperpod-tenancy-system", {"app": "fsx-dir"}, []))
    pods.append(_pod("web", "default", {"app": "web"}, [("TCP", 80)]))
    pods.append(_pod("collector-0", SCRAPER_NAMESPACE, {"app": "otel-collector"}, [("TCP", 4317)]))
    return namespaces, pods


@dataclass
class Query:
    """One NCA query: ``kind`` is ``forbids`` or ``permits``; ``specs`` are its spec NetworkPolicies."""

    name: str
    kind: str
    specs: list[dict[str, Any]]


def isolation_queries(
    team_namespaces: Sequence[str], vpc_cidr: str, service_cidr: str | None = None, *, scraped: bool = False
) -> list[Query]:
    """The isolation questions for a set of team namespaces.

    * ``cross-<a>-to-<b>`` (forbids), every ordered pair: any pod of ``a`` to any pod of ``b``, any port;
    * ``foreign-ingress-<a>`` (forbids): any other namespace or any IP address into ``a`` (with ``scraped``,
      the observability collector's namespace excepted);
    * ``observability-<a>`` (permits, when ``scraped``): the collector's pods into ``a``, any port;
    * ``vpc-<a>`` (forbids): egress from ``a`` to the VPC CIDR (other teams' pods and nodes by address);
    * ``imds-<a>`` (forbids): egress from ``a`` to 169.254.169.254, any port;
    * ``dns-only-<a>`` (forbids): egress to kube-system other than kube-dns port 53;
    * ``dns-<a>`` (permits): egress to kube-dns pods on UDP and TCP 53;
    * ``same-namespace-<a>`` (permits): any pod of ``a`` to any pod of ``a``, any port;
    * ``internet-<a>`` (permits): egress to the internet on TCP 443 and to the Pod Identity agent;
    * ``service-cidr-<a>`` (forbids, when ``service_cidr`` is given): egress from ``a`` to any ClusterIP by
      address (other teams' Services, the API server's ``kubernetes`` Service, webhooks, metrics).
    """
    queries: list[Query] = []
    for a in team_namespaces:
        for b in team_namespaces:
            if a != b:
                spec = _policy(
                    "q",
                    b,
                    {"policyTypes": ["Ingress"], "ingress": [{"from": [{"namespaceSelector": _ns(a)}]}]},
                )
                queries.append(Query(f"cross-{a}-to-{b}", "forbids", [spec]))
    for a in team_namespaces:
        allowed_in = [a, SCRAPER_NAMESPACE] if scraped else [a]
        others = {"matchExpressions": [{"key": _NS_LABEL, "operator": "NotIn", "values": allowed_in}]}
        if scraped:
            scrape = [{"from": [{"namespaceSelector": _ns(SCRAPER_NAMESPACE)}]}]
            queries.append(
                Query(
                    f"observability-{a}",
                    "permits",
                    [_policy("q", a, {"policyTypes": ["Ingress"], "ingress": scrape})],
                )
            )
        ingress = [{"from": [{"namespaceSelector": others}, {"ipBlock": {"cidr": "0.0.0.0/0"}}]}]
        queries.append(
            Query(
                f"foreign-ingress-{a}",
                "forbids",
                [_policy("q", a, {"policyTypes": ["Ingress"], "ingress": ingress})],
            )
        )
        queries.append(
            Query(
                f"vpc-{a}",
                "forbids",
                [
                    _policy(
                        "q",
                        a,
                        {"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": vpc_cidr}}]}]},
                    )
                ],
            )
        )
        queries.append(
            Query(
                f"imds-{a}",
                "forbids",
                [
                    _policy(
                        "q", a, {"policyTypes": ["Egress"], "egress": [{"to": [{"ipBlock": {"cidr": IMDS}}]}]}
                    )
                ],
            )
        )
        kube_dns = {
            "namespaceSelector": _ns("kube-system"),
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
        not_dns = {
            "namespaceSelector": _ns("kube-system"),
            "podSelector": {"matchLabels": {"k8s-app": "metrics-server"}},
        }
        queries.append(
            Query(
                f"dns-only-{a}",
                "forbids",
                [
                    _policy("q1", a, {"policyTypes": ["Egress"], "egress": [{"to": [not_dns]}]}),
                    _policy(
                        "q2",
                        a,
                        {
                            "policyTypes": ["Egress"],
                            "egress": [
                                {
                                    "to": [kube_dns],
                                    "ports": [
                                        {"protocol": "TCP", "port": 80},
                                        {"protocol": "UDP", "port": 5353},
                                    ],
                                }
                            ],
                        },
                    ),
                ],
            )
        )
        queries.append(
            Query(
                f"dns-{a}",
                "permits",
                [
                    _policy(
                        "q",
                        a,
                        {
                            "policyTypes": ["Egress"],
                            "egress": [
                                {
                                    "to": [kube_dns],
                                    "ports": [
                                        {"protocol": "UDP", "port": 53},
                                        {"protocol": "TCP", "port": 53},
                                    ],
                                }
                            ],
                        },
                    )
                ],
            )
        )
        queries.append(
            Query(
                f"same-namespace-{a}",
                "permits",
                [_policy("q", a, {"policyTypes": ["Ingress"], "ingress": [{"from": [{"podSelector": {}}]}]})],
            )
        )
        if service_cidr is not None:
            queries.append(
                Query(
                    f"service-cidr-{a}",
                    "forbids",
                    [
                        _policy(
                            "q",
                            a,
                            {
                                "policyTypes": ["Egress"],
                                "egress": [{"to": [{"ipBlock": {"cidr": service_cidr}}]}],
                            },
                        )
                    ],
                )
            )
        private = [vpc_cidr, IMDS] + ([service_cidr] if service_cidr is not None else [])
        internet = {"ipBlock": {"cidr": "0.0.0.0/0", "except": private}}
        queries.append(
            Query(
                f"internet-{a}",
                "permits",
                [
                    _policy(
                        "q",
                        a,
                        {
                            "policyTypes": ["Egress"],
                            "egress": [
                                {"to": [internet], "ports": [{"protocol": "TCP", "port": 443}]},
                                {
                                    "to": [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}],
                                    "ports": [{"protocol": "TCP", "port": 80}],
                                },
                            ],
                        },
                    )
                ],
            )
        )
    return queries


@dataclass
class SchemeResult:
    """Outcome of one ``nca --scheme`` run."""

    returncode: int
    output: str
    seconds: float
    queries: list[str] = field(default_factory=list)

    @property
    def failed(self) -> set[str]:
        """What differed from the expectation: query names, ``warnings:<config>`` and ``empty:<config>``."""
        out = self.output
        found = set(re.findall(r"Unexpected result for query (\S+?):", out))
        found |= {
            f"warnings:{n}"
            for n in re.findall(r"Unexpected number of warnings for NetworkConfig (\S+?):", out)
        }
        found |= {
            f"empty:{n}"
            for n in re.findall(r"There are empty NetworkPolicies and/or empty \S+ rules in (\S+)", out)
        }
        return found


def run_scheme(
    workdir: Path,
    *,
    policies: Sequence[dict[str, Any]],
    team_namespaces: Sequence[str],
    vpc_cidr: str,
    queries: Sequence[Query] | None = None,
    topology_namespaces: Sequence[str] | None = None,
    service_cidr: str | None = None,
    scraped: bool = False,
) -> SchemeResult:
    """Write the topology, the deployed policies, the specs and the scheme to ``workdir`` and run NCA.

    ``topology_namespaces`` defaults to ``team_namespaces``; pass fewer to ask about a namespace that does
    not exist (its specs select no pods, which must fail through ``expectedWarnings``). ``scraped``: the
    platform runs the observability add-on, whose collector must reach team pods (and nothing else may).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    namespaces, pods = topology(team_namespaces if topology_namespaces is None else topology_namespaces)
    (workdir / "namespaces.yaml").write_text(yaml.safe_dump_all(namespaces))
    (workdir / "pods.yaml").write_text(yaml.safe_dump_all(pods))
    (workdir / "deployed.yaml").write_text(yaml.safe_dump_all(list(policies)))
    spec_dir = workdir / "specs"
    spec_dir.mkdir(exist_ok=True)
    qs = list(
        isolation_queries(team_namespaces, vpc_cidr, service_cidr, scraped=scraped)
        if queries is None
        else queries
    )
    configs: list[dict[str, Any]] = [
        {"name": "deployed", "networkPolicyList": ["deployed.yaml"], "expectedWarnings": 0}
    ]
    scheme_queries = []
    for q in qs:
        path = spec_dir / f"{q.name}.yaml"
        path.write_text(yaml.safe_dump_all(q.specs))
        configs.append(
            {"name": f"spec-{q.name}", "networkPolicyList": [f"specs/{path.name}"], "expectedWarnings": 0}
        )
        scheme_queries.append({"name": q.name, q.kind: ["deployed", f"spec-{q.name}"], "expected": 0})
    # a policy or rule that selects no pod makes a forbids pass vacuously: NCA's emptiness query counts them
    every_config = [c["name"] for c in configs]
    scheme_queries.append({"name": EMPTINESS_QUERY, "emptiness": every_config, "expected": 0})
    scheme = {
        "namespaceList": "namespaces.yaml",
        "podList": "pods.yaml",
        "networkConfigList": configs,
        "queries": scheme_queries,
    }
    scheme_path = workdir / "scheme.yaml"
    scheme_path.write_text(yaml.safe_dump(scheme, sort_keys=False))
    start = time.perf_counter()
    proc = subprocess.run(  # noqa: PLW1510 - the return code is the result, checked by the caller
        [str(nca_bin()), "--scheme", str(scheme_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=workdir,
    )
    seconds = time.perf_counter() - start
    return SchemeResult(proc.returncode, proc.stdout + proc.stderr, seconds, [q.name for q in qs])
