"""HyperPod Task Governance (``fairnessBackend: task-governance``), the default on HyperPod.

Cluster: the Task Governance add-on, a wait for Kueue's controller (the add-on ships Kueue), and the
``AWS::SageMaker::ClusterSchedulerConfig``. Team: an ``AWS::SageMaker::ComputeQuota``; the service then creates
the namespace ``hyperpod-ns-<team>`` and its queues, which this backend waits for and labels. CloudFormation
properties come from the pure-Python :mod:`hyperpod_tenancy.constructs._private.task_governance`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_sagemaker as sagemaker
from constructs import Construct, Node

from hyperpod_tenancy.constructs._private.annotations import acknowledge
from hyperpod_tenancy.constructs._private.kubectl import KUBECTL_WAIT, eks_addon
from hyperpod_tenancy.constructs._private.task_governance import (
    COMPUTE_QUOTA_TYPE,
    compute_quota_properties,
    scheduler_config_properties,
)
from hyperpod_tenancy.constructs.backends.base import Backend, ClusterFairness, Manifest, TeamFairness
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.k8s.labels import revoked_namespace_labels
from hyperpod_tenancy.k8s.team_manifests import namespace_label_patch
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.policy.fairness import TaskGovernanceFairness

__all__ = ["ADDON_NAME", "ADDON_VERSION", "NAMESPACE_WAIT", "ComputeQuota", "TaskGovernanceBackend"]

#: Name of the EKS add-on.
ADDON_NAME = "amazon-sagemaker-hyperpod-taskgovernance"
#: The add-on version, pinned: it packages Kueue v0.19.2 (SageMaker Developer Guide, "Upgrade the task governance
#: add-on", "Upgrade from v1.5 to v1.6"), the Kueue the kueue backend installs and the admission policies, the
#: fairness tests and the preemption alert are checked against. Without a version EKS installs its default one,
#: which may be older: Kueue puts ``priority_class`` on ``kueue_evicted_workloads_total`` only from v0.14 (the
#: alert would match nothing), and v1.3.x still stores Kueue objects as ``v1alpha1``.
ADDON_VERSION = "v1.6.0-eksbuild.1"
#: How long a team stack waits for Task Governance to create the team namespace; below the 900 s timeout of
#: the kubectl provider Lambda that runs the wait.
NAMESPACE_WAIT = cdk.Duration.minutes(10)


@dataclass(frozen=True)
class ComputeQuota:
    """A team's Task Governance ``AWS::SageMaker::ComputeQuota``, with its attributes typed.

    aws-cdk-lib has no L1 class for the type, so the resource is a ``cdk.CfnResource`` (:attr:`resource`, the
    escape hatch); this view gives what its CloudFormation schema returns (``Ref``: the ARN, the primary
    identifier; ``Fn::GetAtt ComputeQuotaId``) and the name the policy gives it.
    """

    #: The ``AWS::SageMaker::ComputeQuota`` resource.
    resource: cdk.CfnResource
    #: The quota's name (``<team>-quota``; createOnly: changing it replaces the quota).
    name: str

    @property
    def compute_quota_arn(self) -> str:
        """ARN of the compute quota (``Ref``)."""
        return self.resource.ref

    @property
    def compute_quota_id(self) -> str:
        """ID of the compute quota (``Fn::GetAtt ComputeQuotaId``), as the SageMaker API takes it."""
        return self.resource.get_att("ComputeQuotaId").to_string()

    @property
    def node(self) -> Node:
        """The resource's construct node (dependencies, metadata)."""
        return self.resource.node

    @classmethod
    def of(cls, quota: Construct | None, *, team: str) -> ComputeQuota | None:
        """Return the typed view of ``team``'s quota when the backend built a ``ComputeQuota`` resource, else ``None``."""
        if isinstance(quota, cdk.CfnResource) and quota.cfn_resource_type == COMPUTE_QUOTA_TYPE:
            return cls(resource=quota, name=names.compute_quota(team))
        return None


class TaskGovernanceBackend(TaskGovernanceFairness, Backend):
    """The Task Governance backend (see the module docstring)."""

    policy_rule_codes = ("HPT-REGION-TASK-GOVERNANCE",)

    def validate(self, platform: Platform) -> Sequence[PolicyIssue]:
        """No checks beyond ``policy/validation.py``."""
        return ()

    def cluster_manifests(self, platform: Platform) -> list[Manifest]:
        """None: the service creates its priority classes and queues."""
        return []

    def team_manifests(self, platform: Platform, team: Team) -> list[Manifest]:
        """None: the service creates the namespace and queues; the namespace is labelled by a patch."""
        return []

    def build_cluster(
        self, scope: Construct, cluster: IHyperPodCluster, *, after: Construct
    ) -> ClusterFairness:
        """Create the add-on, a wait for Kueue's webhook, then the ``ClusterSchedulerConfig``."""
        platform = cluster.platform
        addon = eks_addon(
            scope,
            "TaskGovernance",
            cluster_name=cluster.eks_cluster_name,
            addon_name=ADDON_NAME,
            addon_version=ADDON_VERSION,
        )
        addon.node.add_dependency(after)
        # Kueue's webhook must serve before the scheduler config and quotas create Kueue objects.
        kueue_ready = eks.KubernetesObjectValue(
            scope,
            "KueueReady",
            cluster=cluster.kubernetes,
            object_type="deployment",
            object_name="kueue-controller-manager",
            object_namespace="kueue-system",
            json_path=".status.readyReplicas",
            timeout=KUBECTL_WAIT,
        )
        kueue_ready.node.add_dependency(addon)
        props = scheduler_config_properties(
            platform,
            cluster_arn=cluster.hyperpod_cluster_arn,
            name=names.scheduler_config(platform.cluster.name),
        )
        sched = props["SchedulerConfig"]
        config = sagemaker.CfnClusterSchedulerConfig(
            scope,
            "SchedulerConfig",
            name=props["Name"],
            cluster_arn=props["ClusterArn"],
            scheduler_config=sagemaker.CfnClusterSchedulerConfig.SchedulerConfigProperty(
                priority_classes=[
                    sagemaker.CfnClusterSchedulerConfig.PriorityClassProperty(
                        name=p["Name"], weight=p["Weight"]
                    )
                    for p in sched["PriorityClasses"]
                ],
                fair_share=sched["FairShare"],
                idle_resource_sharing=sched.get("IdleResourceSharing"),
            ),
        )
        config.node.add_dependency(kueue_ready)
        return ClusterFairness(ready=config, scheduling_policy=config)

    def build_team(self, scope: Construct, cluster: IHyperPodCluster, team: Team) -> TeamFairness:
        """Create the ``ComputeQuota``, a wait for the namespace the service creates, and its labels."""
        platform = cluster.platform
        namespace = names.namespace(team.name)
        quota = cdk.CfnResource(
            scope,
            "ComputeQuota",
            type=COMPUTE_QUOTA_TYPE,
            properties=compute_quota_properties(platform, team, cluster_arn=cluster.hyperpod_cluster_arn),
        )
        if cluster.fairness_ready is not None:
            quota.node.add_dependency(cluster.fairness_ready)
        acknowledge(
            quota,
            "CloudFormation-Validate::F3006",
            "aws-cdk-lib's bundled schemas predate AWS::SageMaker::ComputeQuota; cfn-lint 1.58 knows and "
            "validates it (the test suite lints every template)",
        )
        # the service creates the namespace with the quota, possibly a little later: wait for it (below the
        # kubectl provider Lambda's 15-minute timeout, so a failure reports the handler's error)
        namespace_ready = eks.KubernetesObjectValue(
            scope,
            "NamespaceReady",
            cluster=cluster.kubernetes,
            object_type="namespace",
            object_name=namespace,
            json_path=".metadata.name",
            timeout=NAMESPACE_WAIT,
        )
        namespace_ready.node.add_dependency(quota)
        # then label it for the admission policies
        patch = eks.KubernetesPatch(
            scope,
            "NamespaceLabels",
            cluster=cluster.kubernetes,
            resource_name=f"namespace/{namespace}",
            apply_patch=namespace_label_patch(platform, team),
            # explicit values, never null: CDK drops nulls when it renders the patch, and the handler's
            # strategic merge keeps every key a patch leaves out
            restore_patch={"metadata": {"labels": revoked_namespace_labels(platform, team)}},
        )
        patch.node.add_dependency(namespace_ready)
        return TeamFairness(chart_after=(quota, patch), quota=quota)
