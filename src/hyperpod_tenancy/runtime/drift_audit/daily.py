"""The daily Lambda: read the records, run every check (AWS and Kubernetes), publish the findings."""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Iterable, Mapping
from typing import Any

from hyperpod_tenancy.runtime import kube_drift
from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding
from hyperpod_tenancy.runtime.drift_audit._common import LOG, METRIC_NAME, SCHEMA_VERSION, TeamExpectation
from hyperpod_tenancy.runtime.drift_audit.aws import AwsClients, aws_findings

__all__ = ["handler", "metric_data", "read_records"]


# ---------------------------------------------------------------------- the daily Lambda
def read_records(ssm: Any, path: str) -> tuple[list[TeamExpectation], list[Finding]]:
    """Read the audit records under ``path`` (``GetParametersByPath``); a record that cannot be read is a finding."""
    expectations: list[TeamExpectation] = []
    unreadable: list[Finding] = []
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
        for parameter in page.get("Parameters", []):
            try:
                expectations.append(TeamExpectation.from_record(json.loads(parameter["Value"])))
            except (AuditError, json.JSONDecodeError, TypeError) as exc:
                unreadable.append(_unreadable(parameter["Name"], exc, version=SCHEMA_VERSION))
    return sorted(expectations, key=lambda e: e.team), unreadable


def _unreadable(parameter: str, error: Exception, *, version: int) -> Finding:
    return Finding(
        kind="audit-record-unreadable",
        team="",
        object=f"SSM parameter {parameter}",
        expected=f"an audit record of schema version {version}",
        actual=str(error),
        fix="redeploy the team stack that writes it",
    )


def metric_data(findings: Iterable[Finding], *, cluster: str, timestamp: dt.datetime) -> list[dict[str, Any]]:
    """Return the ``PutMetricData`` entry of a run: :data:`METRIC_NAME`, dimension ``Cluster``, the number of findings."""
    return [
        {
            "MetricName": METRIC_NAME,
            "Dimensions": [{"Name": "Cluster", "Value": cluster}],
            "Timestamp": timestamp,
            "Value": float(sum(1 for _ in findings)),
            "Unit": "Count",
        }
    ]


def _event_time(event: Mapping[str, Any]) -> dt.datetime:
    text = event.get("time")
    if isinstance(text, str):
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)
    return dt.datetime.now(dt.UTC)


def _api_lister(cluster: str) -> Any:
    """Return ``list(kind, path)`` over the cluster's API endpoint with an EKS token (:mod:`.kube_api`)."""
    from hyperpod_tenancy.runtime.kube_api import (  # noqa: PLC0415 - boto3, at run time only
        eks_token,
        endpoint_and_ca,
        list_objects,
    )

    endpoint, ca_pem = endpoint_and_ca(cluster)

    def list_kind(kind: str, path: str) -> list[dict[str, Any]]:
        del kind
        # a token per list: its presigned URL lives 60 seconds, a large cluster's pages may take longer
        return list_objects(endpoint, eks_token(cluster), ca_pem, path)

    return list_kind


def _kubernetes_findings(ssm: Any, *, path: str, cluster: str, read: Any = None) -> tuple[int, list[Finding]]:
    """Run the Kubernetes checks of the records under ``path``; return the teams audited and the findings.

    ``read`` lists a kind (``read(kind, path)``); by default the cluster's API with an EKS token. A list the API
    refuses, or an unreachable endpoint, is one ``kubernetes-unreadable`` finding.
    """
    expectations: list[kube_drift.KubeExpectation] = []
    findings: list[Finding] = []
    for page in ssm.get_paginator("get_parameters_by_path").paginate(Path=path, Recursive=False):
        for parameter in page.get("Parameters", []):
            try:
                expectations.append(kube_drift.KubeExpectation.from_record(json.loads(parameter["Value"])))
            except (AuditError, json.JSONDecodeError, TypeError) as exc:
                findings.append(_unreadable(parameter["Name"], exc, version=kube_drift.KUBE_SCHEMA_VERSION))
    if not expectations:
        return 0, findings
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - boto3's own dependency

    try:
        live = kube_drift.read_live(read or _api_lister(cluster))
    except (OSError, ValueError, BotoCoreError, ClientError) as exc:  # urllib's errors are OSErrors
        return len(expectations), [
            *findings,
            Finding(
                kind="kubernetes-unreadable",
                team="",
                object=f"EKS cluster {cluster}",
                expected="cluster-wide list of namespaces, rolebindings, clusterrolebindings, resourcequotas and "
                "limitranges for the audit's group",
                actual=f"{type(exc).__name__}: {exc}",
                fix="check the audit function's access entry and ClusterRole binding, and that its security group "
                "reaches the private API endpoint (cdk deploy the chargeback stack)",
            ),
        ]
    platform_namespaces = frozenset(n for n in os.environ.get("PLATFORM_NAMESPACES", "").split(",") if n)
    findings += kube_drift.kube_findings(
        sorted(expectations, key=lambda e: e.team),
        live,
        platform_namespaces=platform_namespaces,
        tenant_label=os.environ.get("TENANT_LABEL", ""),
    )
    return len(expectations), findings


def handler(
    event: Mapping[str, Any],
    context: Any = None,
    *,
    clients: AwsClients | None = None,
    ssm: Any = None,
    cloudwatch: Any = None,
    read_kubernetes: Any = None,
) -> dict[str, Any]:
    """Run the AWS and Kubernetes checks of every team recorded; publish :data:`METRIC_NAME`.

    Environment: ``CLUSTER_NAME`` (the ``Cluster`` dimension), ``EKS_CLUSTER_NAME``, ``HYPERPOD_CLUSTER_ARN``,
    ``ACCOUNT_ID``, ``RECORDS_PATH``, ``METRIC_NAMESPACE``; for the Kubernetes checks ``KUBE_RECORDS_PATH`` (unset:
    none), ``PLATFORM_NAMESPACES`` (comma-separated), ``TENANT_LABEL`` and optionally ``API_ENDPOINT`` and
    ``CA_DATA`` (:func:`hyperpod_tenancy.runtime.kube_api.endpoint_and_ca`). Returns the findings (JSON) and their
    number. The clients default to boto3's default session's; ``read_kubernetes(kind, path)`` to the cluster's API.
    """
    del context
    import boto3  # noqa: PLC0415 - the Lambda runtime's; the constructs import this module without it

    session = boto3.session.Session()
    cluster = os.environ["CLUSTER_NAME"]
    eks_cluster = os.environ.get("EKS_CLUSTER_NAME") or cluster
    ssm = ssm or session.client("ssm")
    expectations, findings = read_records(ssm, os.environ["RECORDS_PATH"])
    findings += aws_findings(
        clients=clients or AwsClients.of(session),
        expectations=expectations,
        eks_cluster=eks_cluster,
        account=os.environ["ACCOUNT_ID"],
        cluster_arn=os.environ.get("HYPERPOD_CLUSTER_ARN") or None,
    )
    namespaces = 0
    kube_records = os.environ.get("KUBE_RECORDS_PATH")
    if kube_records:
        namespaces, kube = _kubernetes_findings(
            ssm, path=kube_records, cluster=eks_cluster, read=read_kubernetes
        )
        findings += kube
    for finding in findings:
        LOG.warning("drift: %s", json.dumps(finding.to_dict(), sort_keys=True))
    (cloudwatch or session.client("cloudwatch")).put_metric_data(
        Namespace=os.environ["METRIC_NAMESPACE"],
        MetricData=metric_data(findings, cluster=cluster, timestamp=_event_time(event)),
    )
    LOG.info(
        "%d team(s) audited in AWS, %d in Kubernetes, %d finding(s)",
        len(expectations),
        namespaces,
        len(findings),
    )
    return {
        "teams": len(expectations),
        "kubernetes_teams": namespaces,
        "findings": [f.to_dict() for f in findings],
        "count": len(findings),
    }
