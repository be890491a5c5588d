"""Security rules: data classification, Pod Security, dedicated clusters, tenant admission policies."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy.model import ClassificationMismatch, Platform, PodSecurityLevel, Team
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Severity,
    admission_guardrail,
    platform_rule,
    team_rule,
)
from hyperpod_tenancy.policy.rules._common import DNS_LABEL


@platform_rule(
    code="HPT-DATA-CLASSIFICATION",
    domain=Domain.SECURITY,
    at="cluster.dataClassification",
    reads=(),
    failure="a classification label teams cannot be compared against",
    guardrail="`cluster.dataClassification` is a lowercase label",
)
def cluster_classification(p: Platform) -> Iterator[Finding]:
    """Check that the cluster's data classification is a lowercase label."""
    if not DNS_LABEL.match(p.cluster.data_classification):
        yield Finding(
            "cluster.dataClassification",
            f"{p.cluster.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`.",
        )


@team_rule(
    code="HPT-DATA-CLASSIFICATION",
    domain=Domain.SECURITY,
    at="teams[*].dataClassification",
    reads=("cluster.dataClassification", "cluster.onDataClassificationMismatch"),
    failure="namespace treated as a security boundary between data classes",
    guardrail="error, or `onDataClassificationMismatch: dedicated-cluster` keeps the team off and warns "
    "`HPT-DEDICATED-CLUSTER`",
)
def team_classification(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team holding data of another class than the cluster's is refused (or kept off, see the warning)."""
    path = f"teams[{i}].dataClassification"
    if team.data_classification is not None and not DNS_LABEL.match(team.data_classification):
        yield Finding(
            path,
            f"{team.data_classification!r} is not a lowercase label.",
            "use e.g. `internal` or `confidential`, spelled as in cluster.dataClassification.",
        )
        return
    cls = p.team_classification(team)
    if cls == p.cluster.data_classification:
        return
    if p.cluster.on_data_classification_mismatch is ClassificationMismatch.REFUSE:
        yield Finding(
            path,
            f"team {team.name!r} holds {cls!r} data but the cluster is approved for "
            f"{p.cluster.data_classification!r}. A namespace is an organisational boundary, not a security "
            "boundary: pods of every team share nodes, the kernel and the cluster's control plane.",
            "run this team on a cluster in its own account (set cluster.onDataClassificationMismatch: "
            "dedicated-cluster to flag it and keep it off this cluster), or correct the classification.",
        )


@team_rule(
    code="HPT-POD-SECURITY-PRIVILEGED",
    domain=Domain.SECURITY,
    at="teams[*].podSecurity",
    reads=(),
    failure="`podSecurity: privileged` on nodes every team shares",
    guardrail="refused outright: a privileged pod is root on a node other teams share",
)
def pod_security(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """``podSecurity: privileged`` gives node root on nodes every team shares: refused outright.

    A privileged pod (or one with ``hostPath``, ``hostPID``, ``hostNetwork``, which only the privileged
    level admits) owns its node: the kubelet's credentials, the node role, every other team's FSx mounts,
    GPU memory and Pod Identity tokens on that node. The platform has no dedicated-node wiring (a tainted
    instance group per team plus an admission rule pinning the team's pods to it), so no acknowledgment
    could make it safe here.
    """
    if team.pod_security is PodSecurityLevel.PRIVILEGED:
        yield Finding(
            f"teams[{i}].podSecurity",
            f"team {team.name!r} asks for Pod Security level 'privileged' on a cluster whose nodes every team "
            "shares; a privileged pod is root on its node and can read other teams' FSx mounts, GPU memory and "
            "Pod Identity credentials on it. The platform offers no dedicated, tainted nodes per team, so this "
            "cannot be acknowledged.",
            "use `podSecurity: baseline` (the default; root in the container, no host access) or `restricted`; "
            "a team that really needs host access belongs on its own cluster (a separate platform).",
        )


@team_rule(
    code="HPT-DEDICATED-CLUSTER",
    domain=Domain.SECURITY,
    at="teams[*].dataClassification",
    reads=("cluster.dataClassification", "cluster.onDataClassificationMismatch"),
    failure="a team whose data may not share this cluster silently left without a cluster",
    guardrail="warning naming the team that needs a dedicated cluster (it is kept off this one)",
    severity=Severity.WARNING,
)
def dedicated_cluster(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that a team kept off the cluster because of its data classification is named."""
    if team in p.dedicated_cluster_teams:
        yield Finding(
            f"teams[{i}].dataClassification",
            f"team {team.name!r} ({p.team_classification(team)!r}) is kept off this "
            f"{p.cluster.data_classification!r} cluster and needs a dedicated cluster.",
            "deploy a separate platform (own account and cluster) for this team.",
        )


def _admission(code: str, failure: str, guardrail: str) -> Guardrail:
    return admission_guardrail(code=code, domain=Domain.SECURITY, failure=failure, guardrail=guardrail)


#: ValidatingAdmissionPolicies of :mod:`hyperpod_tenancy.k8s.admission` and :mod:`~hyperpod_tenancy.k8s.tenant_guards`.
ADMISSION = (
    _admission(
        "hyperpod-tenancy-pod-specs",
        "a pod preempting other teams through a Kubernetes PriorityClass, or seeing GPUs it was not given",
        "no `priorityClassName` and no GPU-visibility environment variables in any PodSpec, from every requester",
    ),
    _admission(
        "hyperpod-tenancy-posix-identity",
        "a pod writing to /fsx as root, as another team's group, or able to regain root through a setuid binary",
        "every Pod, from every requester: non-root, `runAsGroup`/`fsGroup` (and only supplemental group) the "
        "team GID, no container-level group override, `allowPrivilegeEscalation: false` on every container",
    ),
    _admission(
        "hyperpod-tenancy-tenant-services",
        "a NodePort, LoadBalancer, ExternalName or externalIPs Service opening a path around network isolation",
        "tenant Services are ClusterIP without `externalIPs` (the inference operator excepted)",
    ),
    _admission(
        "hyperpod-tenancy-tenant-secrets",
        "a service-account token Secret minting a non-expiring token",
        "no Secret of type `kubernetes.io/service-account-token` in tenant namespaces",
    ),
)
