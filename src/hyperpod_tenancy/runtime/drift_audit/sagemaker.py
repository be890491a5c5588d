"""SageMaker: each team's Studio domain and compute quota are as its stack deployed them."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import Finding
from hyperpod_tenancy.runtime.drift_audit._common import TeamExpectation, _deploy, _team_account_unreadable

__all__ = ["compute_quota_findings", "studio_findings"]


# ---------------------------------------------------------------------- SageMaker
def studio_findings(
    sagemaker: Any,
    expectations: Sequence[TeamExpectation],
    *,
    sagemaker_in: Callable[[str], Any] | None = None,
) -> list[Finding]:
    """Each team's Studio domain exists and its default execution role is the team's.

    A domain in a team's own account is read there, through the team's lookup role (``sagemaker_in``); where it
    cannot be assumed, or without ``sagemaker_in``, the domain is not checked and a finding says so.
    """
    wanted = [e for e in expectations if e.studio_domain]
    if not wanted:
        return []
    listed: dict[str, tuple[Any, dict[str, str]]] = {}
    findings: list[Finding] = []
    for exp in wanted:
        where = exp.team_account or ""
        if where not in listed:
            try:
                client = sagemaker if not where else _team_account_client(exp, sagemaker_in)
            except PermissionError as exc:
                findings.append(_team_account_unreadable(exp, str(exc), to_read="the team's Studio domain"))
                continue
            listed[where] = (client, _domains(client))
        client, domains = listed[where]
        findings += _domain_findings(client, domains, exp)
    return findings


def _team_account_client(exp: TeamExpectation, sagemaker_in: Callable[[str], Any] | None) -> Any:
    if sagemaker_in is None or exp.lookup_role_arn is None:
        raise PermissionError(
            "the audit reads no team account (no STS client, or no lookup role in the record)"
        )
    return sagemaker_in(exp.lookup_role_arn)


def _domains(sagemaker: Any) -> dict[str, str]:
    """Domain IDs by name, in the account of ``sagemaker``."""
    return {
        str(d.get("DomainName")): str(d.get("DomainId"))
        for page in sagemaker.get_paginator("list_domains").paginate()
        for d in page.get("Domains", [])
    }


def _domain_findings(sagemaker: Any, domains: dict[str, str], exp: TeamExpectation) -> list[Finding]:
    domain_id = domains.get(str(exp.studio_domain))
    if domain_id is None:
        return [
            Finding(
                kind="studio-domain-missing",
                team=exp.team,
                object=f"Studio domain {exp.studio_domain}"
                + (f" in {exp.team_account}" if exp.team_account else ""),
                expected="the team's domain",
                actual="no domain of that name",
                # a domain in the team's account is in its Studio stack, one of the team's stacks the pattern names
                fix=f"cdk deploy '{exp.stack}*'" if exp.team_account else _deploy(exp),
            )
        ]
    described = sagemaker.describe_domain(DomainId=domain_id)
    role = (described.get("DefaultUserSettings") or {}).get("ExecutionRole")
    if exp.execution_role_arn and role != exp.execution_role_arn:
        return [
            Finding(
                kind="studio-execution-role",
                team=exp.team,
                object=f"Studio domain {exp.studio_domain} ({domain_id})",
                expected=f"DefaultUserSettings.ExecutionRole {exp.execution_role_arn}",
                actual=f"DefaultUserSettings.ExecutionRole {role}",
                fix=f"{_deploy(exp)} (if CloudFormation sees no change: aws sagemaker update-domain "
                f"--domain-id {domain_id} --default-user-settings ExecutionRole={exp.execution_role_arn})",
            )
        ]
    return []


#: The figure a ``ComputeQuotaResourceConfig`` is stated in, first found first: the service fills the others in the
#: instance's ratio ("Read may return values the customer did not supply", CloudFormation schema of
#: ``AWS::SageMaker::ComputeQuota``), so only the one the stack renders is compared.
_STATED = ("Count", "Accelerators", "VCpu", "MemoryInGiB")


def _resources_view(resources: Any) -> list[dict[str, Any]]:
    """Each ``ComputeQuotaResourceConfig`` as its type and the figure it is stated in, sorted by type."""
    view = []
    for r in resources or []:
        stated = next((k for k in _STATED if r.get(k) is not None), "Count")
        view.append({"InstanceType": r.get("InstanceType"), stated: r.get(stated)})
    return sorted(view, key=lambda r: str(r["InstanceType"]))


def _quota_view(quota: Mapping[str, Any]) -> dict[str, Any]:
    """Return the :data:`QUOTA_FIELDS` of a quota, with only the keys the stack renders (what the service adds dropped)."""
    config = quota.get("ComputeQuotaConfig") or {}
    sharing = config.get("ResourceSharingConfig") or {}
    target = quota.get("ComputeQuotaTarget") or {}
    return {
        "ComputeQuotaConfig": {
            "ComputeQuotaResources": _resources_view(config.get("ComputeQuotaResources")),
            "ResourceSharingConfig": {
                **{k: sharing[k] for k in ("Strategy", "BorrowLimit") if k in sharing},
                **(
                    {"AbsoluteBorrowLimits": _resources_view(sharing["AbsoluteBorrowLimits"])}
                    if sharing.get("AbsoluteBorrowLimits")
                    else {}
                ),
            },
            "PreemptTeamTasks": config.get("PreemptTeamTasks"),
        },
        "ComputeQuotaTarget": {k: target.get(k) for k in ("TeamName", "FairShareWeight")},
        "ActivationState": quota.get("ActivationState"),
    }


def _differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return [
            d
            for k in sorted(set(expected) | set(actual))
            for d in _differences(expected.get(k), actual.get(k), f"{path}.{k}".lstrip("."))
        ]
    return [] if expected == actual else [f"{path} {json.dumps(expected)} -> {json.dumps(actual)}"]


def compute_quota_findings(
    sagemaker: Any, expectations: Sequence[TeamExpectation], *, cluster_arn: str | None = None
) -> list[Finding]:
    """Each team's Task Governance compute quota against the one its stack rendered (``ListComputeQuotas``).

    Compared: instance types and counts, sharing strategy and borrow limit, ``PreemptTeamTasks``, team name,
    fair-share weight and activation state (the properties ``compute_quota_properties`` renders). Quotas of a
    deleted state are ignored (not confirmed which ``Status`` values a deleted quota keeps listing with).
    """
    wanted = sorted((e for e in expectations if e.compute_quota), key=lambda e: e.team)
    if not wanted:
        return []
    query: dict[str, Any] = {"ClusterArn": cluster_arn} if cluster_arn else {}
    quotas = {
        (str(q.get("Name")), str(q.get("ClusterArn"))): q
        for page in sagemaker.get_paginator("list_compute_quotas").paginate(**query)
        for q in page.get("ComputeQuotaSummaries", [])
        if q.get("Status") not in ("Deleted", "Deleting")
    }
    findings: list[Finding] = []
    for exp in wanted:
        rendered = exp.compute_quota or {}
        name = str(rendered.get("Name"))
        # the quota of this name on the team's HyperPod cluster (the rendered ClusterArn), or on any cluster
        summary = next(
            (q for (n, arn), q in quotas.items() if n == name and rendered.get("ClusterArn") in (None, arn)),
            None,
        )
        if summary is None:
            findings.append(
                Finding(
                    kind="compute-quota-missing",
                    team=exp.team,
                    object=f"compute quota {name}",
                    expected="the team's Task Governance compute quota",
                    actual="none",
                    fix=_deploy(exp),
                )
            )
            continue
        live = sagemaker.describe_compute_quota(ComputeQuotaId=summary["ComputeQuotaId"])
        differences = _differences(_quota_view(rendered), _quota_view(live))
        if differences:
            findings.append(
                Finding(
                    kind="compute-quota-edited",
                    team=exp.team,
                    object=f"compute quota {name} ({summary['ComputeQuotaId']})",
                    expected="as platform.yaml renders it (the team stack's ComputeQuota)",
                    actual="; ".join(differences),
                    fix=f"{_deploy(exp)} (CloudFormation writes the quota back only when its template changes: "
                    f"otherwise aws sagemaker update-compute-quota --compute-quota-id {summary['ComputeQuotaId']} "
                    "with the policy's values, and change quotas in platform.yaml)",
                )
            )
    return findings
