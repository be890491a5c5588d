"""The AWS half of ``hyperpod-tenancy audit``: credentials, the team records, then the shared checks.

The comparisons are :mod:`hyperpod_tenancy.runtime.drift_audit`'s, the very functions the daily Lambda runs;
this module only opens the session (``--profile``, ``--region``), reads the records under
``names.drift_audit_records(<cluster>)`` and builds the expectations (:mod:`._audit_model`). Reads only.
"""

from __future__ import annotations

from typing import Any

from hyperpod_tenancy.policy import Platform, names
from hyperpod_tenancy.runtime.drift_audit import AuditError, AwsClients, Finding, aws_findings, read_records
from hyperpod_tenancy.tools.audit.model import team_expectations

__all__ = ["aws_session", "run_aws_checks"]


def aws_session(*, profile: str | None, region: str) -> Any:
    """Open a boto3 session with credentials (``profile``, else the default chain).

    Raises:
        AuditError: the profile does not exist or no credentials are found (the message says what to do).

    """
    import boto3  # noqa: PLC0415 - the [audit] extra
    from botocore.exceptions import BotoCoreError, ProfileNotFound  # noqa: PLC0415

    try:
        session = boto3.session.Session(profile_name=profile, region_name=region)
        credentials = session.get_credentials()
    except ProfileNotFound:
        raise AuditError(
            f"AWS profile {profile!r} is not configured: pass --profile NAME of ~/.aws/config"
        ) from None
    except BotoCoreError as exc:
        raise AuditError(f"cannot load AWS credentials: {exc}") from None
    if credentials is None:
        where = f"profile {profile!r}" if profile else "the environment, ~/.aws or an instance role"
        raise AuditError(
            f"no AWS credentials in {where}: run `aws sso login{' --profile ' + profile if profile else ''}` "
            "or pass --profile NAME (the audit reads the platform account's Identity Center, IAM, EKS and SageMaker)"
        )
    return session


def run_aws_checks(
    platform: Platform,
    *,
    session: Any,
    clients: AwsClients | None = None,
    eks_cluster: str | None = None,
) -> list[Finding]:
    """Every AWS finding of ``platform``: records first, then the shared checks of each team.

    Args:
        platform: the policy.
        session: the boto3 session (:func:`aws_session`).
        clients: the clients of the checks. Default: ``session``'s.
        eks_cluster: the EKS cluster's name. Default: the policy's cluster name (the cluster construct's).

    Raises:
        AuditError: an API refused, or the credentials are not usable.

    """
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - the [audit] extra

    try:
        read, findings = read_records(session.client("ssm"), names.drift_audit_records(platform.cluster.name))
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise AuditError(
            f"ssm:GetParametersByPath refused: {error.get('Code')}: {error.get('Message')}"
        ) from None
    except BotoCoreError as exc:
        raise AuditError(str(exc)) from None
    expectations, missing = team_expectations(platform, {r.team: r for r in read})
    findings += missing
    quota_cluster = next(
        (
            str(e.compute_quota["ClusterArn"])
            for e in expectations
            if e.compute_quota and "ClusterArn" in e.compute_quota
        ),
        None,
    )
    return findings + aws_findings(
        clients=clients or AwsClients.of(session),
        expectations=expectations,
        eks_cluster=eks_cluster or platform.cluster.name,
        account=platform.account,
        cluster_arn=quota_cluster,
    )
