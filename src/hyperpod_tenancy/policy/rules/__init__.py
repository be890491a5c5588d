"""The registry of guardrails: every policy rule (with its check) and every other guardrail (documented).

One module per domain holds the rules of that domain (``capacity``, ``identity``, ``networking``,
``scheduling``, ``security``, ``storage``, ``naming``, ``deployment``, ``chargeback``, ``quotas``), one small decorated function each, in
the spirit of cdk-nag's one rule per file. This module lists them:

* :data:`ERROR_RULES` and :data:`WARNING_RULES`, in the order their issues are reported (consecutive rules of
  one scope share one loop, see :func:`~hyperpod_tenancy.policy.rules._base.run_rules`); adding a rule is a
  function in its domain module plus one line here;
* :data:`GUARDRAILS`, everything the guardrail table of ``docs/guardrails.md`` lists: the rules plus the guardrails enforced
  elsewhere (loading, ``validate --baseline``, construct validations at synth, admission policies).
"""

from __future__ import annotations

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy.fairness import TASK_GOVERNANCE_CONFIRMED_REGIONS
from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.rules import (
    borrowing,
    capacity,
    chargeback,
    deployment,
    identity,
    identity_center,
    mig,
    naming,
    networking,
    quotas,
    scheduling,
    security,
    storage,
    team_accounts,
)
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    Guardrail,
    Rule,
    Scope,
    Severity,
    Stage,
    run_rules,
)
from hyperpod_tenancy.policy.rules._common import (
    MAX_PRIORITY_CLASSES,
    MAX_TEAM_NAME,
    SUPPORTED_KUBERNETES_VERSIONS,
)
from hyperpod_tenancy.policy.rules._docs import (
    END_MARKER,
    START_MARKER,
    markdown_table,
    replace_between_markers,
)

__all__ = [
    "END_MARKER",
    "ERROR_RULES",
    "GUARDRAILS",
    "MAX_PRIORITY_CLASSES",
    "MAX_TEAM_NAME",
    "RULES",
    "START_MARKER",
    "SUPPORTED_KUBERNETES_VERSIONS",
    "TASK_GOVERNANCE_CONFIRMED_REGIONS",
    "WARNING_RULES",
    "Domain",
    "Finding",
    "Guardrail",
    "Rule",
    "Scope",
    "Severity",
    "Stage",
    "check_errors",
    "check_warnings",
    "guardrails_markdown",
    "inputs_of",
    "update_readme",
]

#: The error rules, in reporting order.
ERROR_RULES: tuple[Rule, ...] = (
    # the platform
    naming.platform_name,
    deployment.account,
    deployment.region,
    identity_center.identity_center_instance,
    identity_center.identity_center_region_name,
    identity_center.identity_center_region,
    identity_center.identity_center_account,
    identity_center.identity_center_workloads,
    # the cluster
    naming.cluster_name,
    deployment.kubernetes_version,
    networking.availability_zones,
    networking.vpc_cidr,
    networking.service_cidr,
    capacity.instance_groups_defined,
    # for each instance group
    naming.group_name,
    capacity.group_instance_type,
    capacity.group_count,
    capacity.group_reserved,
    capacity.group_threads,
    networking.group_availability_zone,
    capacity.group_training_plan,
    storage.ebs_volume,
    capacity.deep_health_checks_unique,
    capacity.group_resources,
    capacity.kueue_group_resources,
    scheduling.topology_type,
    mig.mig_config,
    naming.group_name_unique,
    # the rest of the cluster
    capacity.system_node_count,
    capacity.system_node_instance_type,
    storage.fsx_deployment_type,
    storage.fsx_capacity,
    storage.fsx_throughput,
    capacity.kueue_flavor_shapes,
    scheduling.topology_consistent,
    mig.mig_consistent,
    deployment.helm_chart,
    deployment.usage_report_chart,
    security.cluster_classification,
    security.kms_key,
    security.kms_key_fsx,
    identity.posix_failure_policy,
    identity.posix_uid_range,
    identity.posix_webhook_timeout,
    identity.posix_cache_ttl,
    identity.posix_image,
    identity.posix_break_glass_group,
    identity.posix_strict_groups_version,
    # scheduling
    scheduling.priority_class_count,
    # for each priority class
    naming.priority_class_name,
    naming.priority_class_name_unique,
    scheduling.priority_weight,
    scheduling.checkpoint_interval,
    # the teams
    capacity.teams_defined,
    # for each team
    naming.team_name,
    naming.team_name_unique,
    capacity.quota_entries,
    # for each quota entry of the team
    capacity.quota_type,
    capacity.quota_count,
    capacity.quota_grain,
    mig.quota_partition,
    # the rest of the team
    *borrowing.ERROR_RULES,
    scheduling.fair_share_weight,
    identity.group_id,
    identity.group_id_unique,
    identity.posix_gid,
    identity.permission_set_name,
    team_accounts.team_account_id,
    team_accounts.team_account_own,
    team_accounts.team_account_workloads,
    team_accounts.team_studio_network,
    team_accounts.team_studio_cidr,
    team_accounts.team_studio_identity_center,
    scheduling.allowed_priority_classes,
    security.team_classification,
    security.pod_security,
    security.kms_required,
    naming.studio_domain_name,
    chargeback.cost_center,
    # across teams
    capacity.quota_capacity,
    mig.partition_capacity,
    # chargeback
    chargeback.terms_defined,
    chargeback.effective_from,
    chargeback.quarter,
    chargeback.sign_off,
    chargeback.term_rule,
    chargeback.idle_owner,
    chargeback.prices,
    chargeback.tolerance,
    chargeback.alarm_threshold,
)

#: The warning rules, in reporting order.
WARNING_RULES: tuple[Rule, ...] = (
    scheduling.inference_lowest_priority,
    scheduling.topology_request,
    security.dedicated_cluster,
    deployment.task_governance_region,
    capacity.unused_instance_type,
    mig.quota_partition_offered,
    *borrowing.WARNING_RULES,
    identity.posix_supplemental_groups,
    chargeback.price_unused,
    chargeback.tags_in_payer,
    *quotas.RULES,
)

#: Every policy rule.
RULES: tuple[Rule, ...] = ERROR_RULES + WARNING_RULES

#: Every guardrail, as the table of docs/guardrails.md lists them.
GUARDRAILS: tuple[Guardrail, ...] = (
    *deployment.LOADING,
    *RULES,
    *deployment.REPLACEMENTS,
    networking.NETWORK_POLICY_ENFORCEMENT,
    security.IMPORTED_KEY_POLICY,
    deployment.NODEGROUP_AMI,
    deployment.TEAM_SELECTION,
    *deployment.USER_APP,
    *deployment.CHARGEBACK_PIPELINE,
    *scheduling.KUEUE_LINTS,
    *scheduling.ADMISSION,
    *security.ADMISSION,
    security.NAMESPACE_COVERAGE,
)


def check_errors(platform: Platform) -> list[PolicyIssue]:
    """Run every error rule on ``platform`` and return the issues in reporting order."""
    return run_rules(ERROR_RULES, platform)


def check_warnings(platform: Platform) -> list[PolicyIssue]:
    """Run every warning rule on ``platform`` and return the issues in reporting order."""
    return run_rules(WARNING_RULES, platform)


def inputs_of(issue: PolicyIssue) -> tuple[str, ...]:
    """Return the fields besides ``issue.path`` the rule that reported ``issue`` read (empty for non-rule issues).

    Args:
        issue: an issue of :func:`check_errors` or :func:`check_warnings`.

    Returns:
        Concrete YAML paths (a whole list where the rule read every element).

    """
    paths = (p for r in RULES if r.code == issue.code and r.reports(issue.path) for p in r.inputs(issue.path))
    return tuple(dict.fromkeys(paths))


def guardrails_markdown() -> str:
    """Return the guardrail table of ``docs/guardrails.md``, generated from :data:`GUARDRAILS` (``hyperpod-tenancy guardrails``)."""
    return markdown_table(GUARDRAILS)


def update_readme(text: str) -> str:
    """Return ``text`` (``docs/guardrails.md``) with the guardrail table between its markers replaced by the current one.

    Raises:
        ValueError: the markers are missing.

    """
    return replace_between_markers(text, guardrails_markdown())
