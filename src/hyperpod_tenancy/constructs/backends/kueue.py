"""Self-managed Kueue (``fairnessBackend: kueue``), e.g. plain EKS or regions without Task Governance.

Cluster: the upstream Kueue Helm chart (values from :func:`hyperpod_tenancy.k8s.kueue.kueue_helm_values`) and,
in the platform chart, the ResourceFlavors, Cohort and WorkloadPriorityClasses. Team: its Namespace, ClusterQueue
and LocalQueue in the team chart. The manifests come from the pure-Python :mod:`hyperpod_tenancy.k8s.kueue`.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT
from hyperpod_tenancy.constructs.backends.base import Backend, ClusterFairness, Manifest, TeamFairness
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.k8s.kueue import cluster_objects, kueue_helm_values, team_objects
from hyperpod_tenancy.policy import Platform, Team
from hyperpod_tenancy.policy.fairness import KueueFairness

__all__ = ["KueueBackend"]


class KueueBackend(KueueFairness, Backend):
    """The self-managed Kueue backend (see the module docstring)."""

    policy_rule_codes = ("HPT-RESOURCES",)

    def validate(self, platform: Platform) -> Sequence[PolicyIssue]:
        """No checks beyond ``policy/validation.py`` (the renderers also lint their own output)."""
        return ()

    def cluster_manifests(self, platform: Platform) -> list[Manifest]:
        """Render the ResourceFlavors, the Cohort and the WorkloadPriorityClasses."""
        return cluster_objects(platform)

    def team_manifests(self, platform: Platform, team: Team) -> list[Manifest]:
        """Render the team's ClusterQueue and LocalQueue."""
        return team_objects(platform, team)

    def build_cluster(
        self, scope: Construct, cluster: IHyperPodCluster, *, after: Construct
    ) -> ClusterFairness:
        """Install the Kueue Helm chart after ``after``."""
        chart = cluster.platform.cluster.kueue_chart
        kueue = eks.HelmChart(
            scope,
            "Kueue",
            cluster=cluster.kubernetes,
            repository=chart.repository,
            chart="kueue",
            version=chart.version,
            release="kueue",
            namespace="kueue-system",
            create_namespace=True,
            values=kueue_helm_values(cluster.platform),
            wait=True,
            timeout=KUBECTL_WAIT,
        )
        kueue.node.add_dependency(after)
        return ClusterFairness(ready=kueue)

    def build_team(self, scope: Construct, cluster: IHyperPodCluster, team: Team) -> TeamFairness:
        """Nothing outside the chart; the chart comes after Kueue and the platform chart (its flavors, cohort)."""
        after = (cluster.fairness_ready, cluster.platform_chart_manifest)
        return TeamFairness(chart_after=tuple(c for c in after if c is not None))
