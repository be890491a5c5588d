"""Names derived from a team name, identical to the ones HyperPod Task Governance creates.

Both fairness backends use these names, so jobs and dashboards do not change when the backend does.
"""

from __future__ import annotations

#: Namespace prefix Task Governance uses (``hyperpod-ns-<team>``).
NAMESPACE_PREFIX = "hyperpod-ns-"
#: Kubernetes label values (queue and priority-class labels) are limited to 63 characters.
LABEL_VALUE_MAX = 63
#: Identity Center permission set names: ``[\w+=,.@-]{1,32}`` (AWS::SSO::PermissionSet Name).
PERMISSION_SET_MAX = 32
#: SageMaker DomainName: at most 63 characters, ``^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`` (AWS::SageMaker::Domain).
STUDIO_DOMAIN_MAX = 63


def namespace(team: str) -> str:
    """Namespace of a team: ``hyperpod-ns-<team>``."""
    return f"{NAMESPACE_PREFIX}{team}"


def cluster_queue(team: str) -> str:
    """ClusterQueue of a team: ``hyperpod-ns-<team>-clusterqueue``."""
    return f"{namespace(team)}-clusterqueue"


def local_queue(team: str) -> str:
    """LocalQueue of a team (the value of ``kueue.x-k8s.io/queue-name``)."""
    return f"{namespace(team)}-localqueue"


def kubernetes_group(team: str) -> str:
    """Kubernetes group the team's access entries map to (the HyperPod chart's convention)."""
    return f"{namespace(team)}-namespace-level-group"


def workload_priority_class(priority_class: str) -> str:
    """Kueue WorkloadPriorityClass name of a scheduler-config priority class."""
    return f"{priority_class}-priority"


def permission_set(team: str) -> str:
    """Default Identity Center permission set name: the team name in PascalCase."""
    return "".join(part.capitalize() for part in team.split("-"))


def studio_domain(cluster: str, team: str) -> str:
    """SageMaker Studio domain name of a team: ``<cluster>-<team>``."""
    return f"{cluster}-{team}"


def derived_names(team: str) -> dict[str, str]:
    """Every name derived from ``team`` that must fit in a label value, keyed by role."""
    return {
        "namespace": namespace(team),
        "clusterQueue": cluster_queue(team),
        "localQueue": local_queue(team),
    }
