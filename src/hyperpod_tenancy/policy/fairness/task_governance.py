"""HyperPod Task Governance (``fairnessBackend: task-governance``), as the policy and the renderers see it."""

from __future__ import annotations

from collections.abc import Iterator

from hyperpod_tenancy.policy.fairness.base import Fairness, FairnessWording, Problem
from hyperpod_tenancy.policy.model import FairnessBackend, Platform

__all__ = ["TASK_GOVERNANCE_CONFIRMED_REGIONS", "TaskGovernanceFairness"]

#: Regions where ``AWS::SageMaker::ComputeQuota`` and ``ClusterSchedulerConfig`` are both confirmed.
TASK_GOVERNANCE_CONFIRMED_REGIONS = ("us-east-1",)


class TaskGovernanceFairness(Fairness):
    """Task Governance: the service creates each team's namespace and queues, from a ``ComputeQuota``."""

    key = FairnessBackend.TASK_GOVERNANCE
    replacement_wording = FairnessWording(
        team_objects_deleted="its AWS::SageMaker::ComputeQuota is deleted",
        rename_cause="AWS::SageMaker::ComputeQuota ComputeQuotaTarget/TeamName is createOnly, so CloudFormation "
        "replaces the team's quota",
    )
    creates_team_namespace = False
    admits_hyp_pytorch_job = True

    def region_problems(self, platform: Platform) -> Iterator[Problem]:
        """Warn outside the Regions where the resource types are confirmed, saying how to check."""
        if platform.region not in TASK_GOVERNANCE_CONFIRMED_REGIONS:
            yield (
                "region",
                f"AWS::SageMaker::ComputeQuota and ClusterSchedulerConfig are not both confirmed in {platform.region}.",
                "run `aws cloudformation describe-type --type RESOURCE --type-name AWS::SageMaker::ComputeQuota` "
                "(and ClusterSchedulerConfig) in the region, or use `fairnessBackend: kueue`.",
            )
