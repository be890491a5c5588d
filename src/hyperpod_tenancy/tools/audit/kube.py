"""The Kubernetes half of ``hyperpod-tenancy audit``: the team namespaces, RBAC and quotas against the charts.

The expectation is the platform's own rendering (:func:`hyperpod_tenancy.k8s.audit_record.kube_expectation` of each
team's :class:`~hyperpod_tenancy.k8s.team_chart.TeamChart`, what ``TeamTenant`` applies and what its Kubernetes
audit record holds); the comparison is :func:`hyperpod_tenancy.runtime.kube_drift.kube_findings`, the one the daily
Lambda runs, which lists what is checked.

Live objects are read with the official ``kubernetes`` client (the ``[audit]`` extra) and the user's kubeconfig:
``list`` of namespaces, rolebindings, clusterrolebindings, resourcequotas and limitranges, cluster-wide (a
platform administrator's read).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hyperpod_tenancy.k8s.audit_record import PLATFORM_NAMESPACES, kube_expectation
from hyperpod_tenancy.k8s.labels import TENANT_LABEL
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT, FsxVolume
from hyperpod_tenancy.policy import Platform
from hyperpod_tenancy.runtime import kube_drift
from hyperpod_tenancy.runtime.drift_audit import AuditError, Finding
from hyperpod_tenancy.runtime.kube_drift import LiveCluster, expected_subject

__all__ = ["LiveCluster", "expected_subject", "kube_findings", "read_live"]

#: The FSx values do not reach the audited kinds; the chart needs some.
_NO_FSX = FsxVolume(file_system_id="fs-audit", dns_name="fs-audit.invalid", mount_name="audit")


def kube_findings(platform: Platform, live: LiveCluster, *, stack_of: Mapping[str, str]) -> list[Finding]:
    """Every Kubernetes finding of ``live`` against the charts ``platform`` renders.

    Args:
        platform: the policy.
        live: what the cluster holds.
        stack_of: each team's stack as ``cdk deploy`` takes it (the fixes name it).

    """
    expectations = [
        kube_expectation(
            platform,
            team,
            TeamChart(platform, team, fsx=_NO_FSX, service_account=DEFAULT_SERVICE_ACCOUNT).to_json(),
            stack=stack_of[team.name],
        )
        for team in platform.hosted_teams
    ]
    return kube_drift.kube_findings(
        expectations, live, platform_namespaces=PLATFORM_NAMESPACES, tenant_label=TENANT_LABEL
    )


def read_live(*, kubeconfig: str | None, context: str | None) -> LiveCluster:
    """List the audited objects of every namespace with the kubeconfig's credentials (all pages).

    Raises:
        AuditError: the kubeconfig cannot be used or the API refuses a list (the message names it).

    """
    from kubernetes import client, config  # noqa: PLC0415 - the [audit] extra
    from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
    from urllib3.exceptions import HTTPError  # noqa: PLC0415

    try:
        api = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, context=context, persist_config=False
        )
    except (config.ConfigException, OSError, ValueError) as exc:
        raise AuditError(f"cannot use the kubeconfig ({kubeconfig or '~/.kube/config'}): {exc}") from None
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    calls: dict[str, Any] = {
        "Namespace": core.list_namespace,
        "RoleBinding": rbac.list_role_binding_for_all_namespaces,
        "ClusterRoleBinding": rbac.list_cluster_role_binding,
        "ResourceQuota": core.list_resource_quota_for_all_namespaces,
        "LimitRange": core.list_limit_range_for_all_namespaces,
    }

    def list_kind(kind: str, path: str) -> list[Mapping[str, Any]]:
        del path  # the client's typed call of the kind lists the same path
        items: list[Mapping[str, Any]] = []
        token: str | None = None
        while True:
            try:
                kwargs: dict[str, Any] = {"limit": 500, "_preload_content": False, "_request_timeout": 30}
                if token:
                    kwargs["_continue"] = token
                page = json.loads(calls[kind](**kwargs).data)
            except ApiException as exc:
                raise AuditError(
                    f"list {kind} refused by {api.configuration.host}: {exc.status} {exc.reason} (the audit needs "
                    "cluster-wide list on namespaces, rolebindings, clusterrolebindings, resourcequotas, limitranges)"
                ) from None
            except HTTPError as exc:
                raise AuditError(
                    f"cannot reach the Kubernetes API at {api.configuration.host}: {exc}"
                ) from None
            items += page.get("items") or []
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return items

    return kube_drift.read_live(list_kind)
