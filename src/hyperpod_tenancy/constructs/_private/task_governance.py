"""CloudFormation properties of the Task Governance resources, rendered from the policy.

Pure Python (no jsii): the constructs pass the returned dicts to ``CfnClusterSchedulerConfig`` /
``CfnResource(type="AWS::SageMaker::ComputeQuota")`` unchanged. Property names are PascalCase and were
checked against the cfn-lint 1.58 registry schemas of both resource types.

Semantics shared with the self-managed Kueue rendering (:mod:`hyperpod_tenancy.k8s.kueue`):

* A team's guarantee is ``Count`` instances, or ``Accelerators``, of each instance type in ``compute.quotas``.
* ``BorrowLimit`` is a percentage of the team's guarantee (per instance type), and ``AbsoluteBorrowLimits``
  an amount per instance type that replaces it there, both rendered only when the team's strategy borrows
  (``LendAndBorrow``); :mod:`hyperpod_tenancy.policy.borrowing` is the same rule for Kueue.
* When ``scheduling.idle_resource_sharing`` is false nobody lends or borrows. Besides
  ``IdleResourceSharing: Disabled`` on the cluster policy, every team's quota is rendered with
  ``Strategy: DontLend`` (and no ``BorrowLimit``), so each ComputeQuota states the policy on its own and
  stays correct if the cluster policy is edited out of band. :func:`effective_sharing` is that rule.
"""

from __future__ import annotations

import re
from typing import Any

from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import Platform, ResourceAmount, SharingStrategy, Team

__all__ = [
    "COMPUTE_QUOTA_TYPE",
    "QUOTA_NAME_SUFFIX",
    "SCHEDULER_CONFIG_TYPE",
    "compute_quota_name",
    "compute_quota_properties",
    "effective_sharing",
    "resource_config",
    "scheduler_config_properties",
]

#: CloudFormation type of the cluster policy.
SCHEDULER_CONFIG_TYPE = "AWS::SageMaker::ClusterSchedulerConfig"
#: CloudFormation type of a team's compute allocation (no L1 in aws-cdk-lib 2.275: use ``CfnResource``).
COMPUTE_QUOTA_TYPE = "AWS::SageMaker::ComputeQuota"
#: Suffix of a team's compute quota name: ``<team>-quota``.
QUOTA_NAME_SUFFIX = names.COMPUTE_QUOTA_SUFFIX

# Name pattern of both resource types (cfn-lint schema); the schema also caps the length at 63.
_RESOURCE_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_NAME_MAX = 63


def _valid_name(name: str) -> bool:
    return len(name) <= _NAME_MAX and _RESOURCE_NAME.match(name) is not None


def _enabled(flag: bool) -> str:
    return "Enabled" if flag else "Disabled"


def effective_sharing(platform: Platform, team: Team) -> SharingStrategy:
    """Return the sharing strategy actually in force for ``team`` (see :meth:`Platform.effective_sharing`)."""
    return platform.effective_sharing(team)


def compute_quota_name(team: str) -> str:
    """Name of a team's ``AWS::SageMaker::ComputeQuota``: ``<team>-quota``.

    Raises:
        TenancyError: the name does not match ``[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}`` or is longer
            than 63 characters.

    """
    name = names.compute_quota(team)
    if not _valid_name(name):
        raise TenancyError(
            f"compute quota name {name!r} (from team {team!r}) is longer than 63 characters or does not "
            "match [a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; use a team name of lowercase letters, digits and '-' "
            f"of at most {63 - len(QUOTA_NAME_SUFFIX)} characters."
        )
    return name


def scheduler_config_properties(platform: Platform, *, cluster_arn: str, name: str) -> dict[str, Any]:
    """Properties of the ``AWS::SageMaker::ClusterSchedulerConfig`` (the cluster policy).

    Args:
        platform: the policy.
        cluster_arn: ARN of the HyperPod cluster; may be an unresolved CDK token (passed through untouched).
        name: name of the cluster policy (createOnly).

    Raises:
        TenancyError: ``name`` is not a valid cluster policy name.

    """
    if not _valid_name(name):
        raise TenancyError(
            f"cluster scheduler config name {name!r} is longer than 63 characters or does not match "
            "[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}; "
            "use 1-63 letters, digits and '-', e.g. `<cluster>-policy`."
        )
    scheduling = platform.scheduling
    return {
        "Name": name,
        "ClusterArn": cluster_arn,
        "SchedulerConfig": {
            "PriorityClasses": [{"Name": pc.name, "Weight": pc.weight} for pc in scheduling.priority_classes],
            "FairShare": _enabled(scheduling.fair_share),
            "IdleResourceSharing": _enabled(scheduling.idle_resource_sharing),
        },
    }


#: The ``ComputeQuotaResourceConfig`` key of each ``platform.yaml`` grain.
_API_GRAIN = {
    "instances": "Count",
    "accelerators": "Accelerators",
    "vcpus": "VCpu",
    "memoryGiB": "MemoryInGiB",
}


def resource_config(instance_type: str, amount: int | ResourceAmount) -> dict[str, Any]:
    """Return a ``ComputeQuotaResourceConfig``: ``{"InstanceType": ..., "Accelerators": 8}`` (an int: ``Count``)."""
    if isinstance(amount, int):
        return {"InstanceType": instance_type, "Count": amount}
    config: dict[str, Any] = {
        "InstanceType": instance_type,
        **{_API_GRAIN[k]: v for k, v in amount.given.items()},
    }
    if amount.accelerator_partition is not None:
        partition = amount.accelerator_partition
        config["AcceleratorPartition"] = {"Type": partition.type, "Count": partition.count}
    return config


def compute_quota_properties(platform: Platform, team: Team, *, cluster_arn: str) -> dict[str, Any]:
    """Properties of the team's ``AWS::SageMaker::ComputeQuota``.

    ``ResourceSharingConfig.Strategy`` is :func:`effective_sharing`; ``BorrowLimit`` (percent of the team's
    guarantee) and ``AbsoluteBorrowLimits`` are present only when that strategy borrows. ``FairShareWeight`` is always rendered; the
    service uses it only when the cluster policy has ``FairShare: Enabled``.

    Args:
        platform: the policy.
        team: a team hosted on this cluster.
        cluster_arn: ARN of the HyperPod cluster; may be an unresolved CDK token (passed through untouched).

    Raises:
        TenancyError: the team is not hosted on this cluster, or its quota name is invalid.

    """
    if team not in platform.hosted_teams:
        raise TenancyError(
            f"team {team.name!r} is not hosted on cluster {platform.cluster.name!r} (its data classification "
            "needs a dedicated cluster); it gets no compute quota here."
        )
    compute = team.compute
    sharing = effective_sharing(platform, team)
    resource_sharing: dict[str, Any] = {"Strategy": sharing.api_value}
    if sharing.borrows:
        resource_sharing["BorrowLimit"] = compute.borrow_limit
        if compute.absolute_borrow_limits:
            resource_sharing["AbsoluteBorrowLimits"] = [
                resource_config(instance_type, amount)
                for instance_type, amount in compute.absolute_borrow_limits.items()
            ]
    return {
        "Name": compute_quota_name(team.name),
        "ClusterArn": cluster_arn,
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": [
                resource_config(instance_type, quota) for instance_type, quota in compute.quotas.items()
            ],
            "ResourceSharingConfig": resource_sharing,
            "PreemptTeamTasks": compute.preempt_team_tasks.value,
        },
        "ComputeQuotaTarget": {"TeamName": team.name, "FairShareWeight": compute.fair_share_weight},
        "ActivationState": "Enabled",
    }
