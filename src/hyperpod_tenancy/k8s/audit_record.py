"""A team's Kubernetes drift-audit expectation, rendered from the policy and the team's chart.

``hyperpod-tenancy audit`` renders it from ``platform.yaml``; each team stack writes the same rendering to its
Kubernetes audit record, which the daily audit Lambda compares with the cluster
(:mod:`hyperpod_tenancy.runtime.kube_drift`). One function builds both, so the two compare the same thing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.posix_identity import WEBHOOK_NAMESPACE
from hyperpod_tenancy.k8s.team_manifests import SYSTEM_NAMESPACE
from hyperpod_tenancy.policy import Platform, Team, names
from hyperpod_tenancy.runtime.drift_audit import TeamExpectation
from hyperpod_tenancy.runtime.kube_drift import AUDITED_KINDS, KubeExpectation

__all__ = ["PLATFORM_NAMESPACES", "kube_expectation", "team_expectation"]

#: Namespaces whose service accounts are the cluster's and the platform's own (bindings of theirs are expected).
PLATFORM_NAMESPACES = frozenset({"kube-system", SYSTEM_NAMESPACE, WEBHOOK_NAMESPACE})


def kube_expectation(
    platform: Platform, team: Team, manifests: Iterable[Mapping[str, Any]], *, stack: str
) -> KubeExpectation:
    """Return what ``team``'s chart declares: its namespace labels and the chart's manifests of the audited kinds.

    Args:
        platform: the policy.
        team: a hosted team.
        manifests: the team chart's objects (``TeamChart.to_json()``).
        stack: the team stack's path (what ``cdk deploy`` takes).

    """
    return KubeExpectation(
        team=team.name,
        stack=stack,
        namespace=names.namespace(team.name),
        kubernetes_group=names.kubernetes_group(team.name),
        labels=namespace_labels(platform, team),
        objects=[dict(m) for m in manifests if m.get("kind") in AUDITED_KINDS],
    )


def team_expectation(
    platform: Platform,
    team: Team,
    *,
    stack: str,
    permission_set_arn: str | None = None,
    sso_role_arn: str | None = None,
    execution_role_arn: str | None = None,
    compute_quota: Mapping[str, Any] | None = None,
) -> TeamExpectation:
    """Return a team's AWS audit expectation: the policy's names, with the deployed values that are known.

    The team stack passes its own values (CDK tokens, written to its audit record); ``hyperpod-tenancy audit``
    passes those the record holds, or none when there is no record.

    Args:
        platform: the policy.
        team: a hosted team.
        stack: the team stack's path (what ``cdk deploy`` takes).
        permission_set_arn: the permission set the stack deployed.
        sso_role_arn: the Identity Center role the stack resolved.
        execution_role_arn: the team's Studio execution role (ignored without Studio).
        compute_quota: the compute quota's name and fields, as the stack renders them (``None``: Kueue).

    """
    elsewhere = platform.identity_center_elsewhere
    own = _team_account_fields(platform, team)
    return TeamExpectation(
        team=team.name,
        stack=stack,
        permission_set_name=team.permission_set,
        instance_arn=platform.identity_center.instance_arn,
        group_id=team.identity.group_id,
        kubernetes_group=names.kubernetes_group(team.name),
        permission_set_arn=permission_set_arn,
        sso_role_arn=sso_role_arn,
        studio_domain=names.studio_domain(platform.cluster.name, team.name) if team.studio else None,
        execution_role_arn=execution_role_arn if team.studio else None,
        compute_quota=compute_quota,
        identity_center_account=platform.identity_center_account if elsewhere else None,
        access_stack=_beside(stack, names.team_access_stack_id(team.name)) if elsewhere else None,
        team_account=own[0] if own else None,
        permission_set_policy=own[1] if own else None,
        lookup_role_arn=own[2] if own else None,
    )


def _team_account_fields(platform: Platform, team: Team) -> tuple[str, str, str] | None:
    """Return a team's own account, its permission set's policy (path and name) and its lookup role's ARN."""
    if not platform.team_in_own_account(team):
        return None
    account = platform.team_account(team)
    lookup = names.team_lookup_role(platform.cluster.name, team.name)
    return (
        account,
        names.PERMISSION_SET_POLICY_PATH + names.permission_set_policy(platform.cluster.name, team.name),
        names.role_arn(partition=names.partition(platform.region), account=account, name=lookup),
    )


def _beside(stack: str, stack_id: str) -> str:
    """Return the path of the stack ``stack_id`` in the same stage as the stack at path ``stack``."""
    stage, _, _ = stack.rpartition("/")
    return f"{stage}/{stack_id}" if stage else stack_id
