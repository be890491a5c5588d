"""Every AWS check of the audit, run with one set of clients."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding
from hyperpod_tenancy.runtime.drift_audit._common import TeamExpectation
from hyperpod_tenancy.runtime.drift_audit.access_entries import access_entries, access_entry_findings
from hyperpod_tenancy.runtime.drift_audit.identity_center import identity_center_findings
from hyperpod_tenancy.runtime.drift_audit.sagemaker import compute_quota_findings, studio_findings

__all__ = ["AwsClients", "aws_findings"]


# ---------------------------------------------------------------------- all AWS checks
@dataclass(frozen=True, kw_only=True)
class AwsClients:
    """The clients the checks call, one per purpose (a test may give each its own endpoint or stub)."""

    sso: Any
    iam: Any
    eks: Any
    studio: Any
    quotas: Any
    #: STS of the same credentials: IAM of a team's own account through its lookup role (``None``: not read).
    sts: Any = None

    @classmethod
    def of(cls, session: Any) -> AwsClients:
        """Return the clients of a ``boto3.session.Session``."""
        return cls(
            sso=session.client("sso-admin"),
            iam=session.client("iam"),
            eks=session.client("eks"),
            studio=session.client("sagemaker"),
            quotas=session.client("sagemaker"),
            sts=session.client("sts"),
        )

    def iam_in(self, role_arn: str) -> Any:
        """Return an IAM client acting as ``role_arn`` (a team's lookup role in its own account).

        Raises:
            PermissionError: STS refused the role (its message says why).

        """
        return self._client_in("iam", role_arn)

    def sagemaker_in(self, role_arn: str) -> Any:
        """Return a SageMaker client acting as ``role_arn`` (a team's lookup role: its Studio domain is there).

        Raises:
            PermissionError: STS refused the role (its message says why).

        """
        return self._client_in("sagemaker", role_arn)

    def _client_in(self, service: str, role_arn: str) -> Any:
        import boto3  # noqa: PLC0415 - loaded on first use, as every AWS client of the audit
        from botocore.exceptions import ClientError  # noqa: PLC0415 - boto3's own dependency

        try:
            credentials = self.sts.assume_role(RoleArn=role_arn, RoleSessionName="hyperpod-tenancy-audit")[
                "Credentials"
            ]
        except ClientError as exc:
            raise PermissionError(f"sts:AssumeRole refused: {exc}") from None
        make: Any = boto3.client  # one service or another: the stubs type each by its literal name
        return make(
            service,
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
        )


def aws_findings(
    *,
    clients: AwsClients,
    expectations: Sequence[TeamExpectation],
    eks_cluster: str,
    account: str,
    cluster_arn: str | None = None,
) -> list[Finding]:
    """Every AWS check of ``expectations``.

    Raises:
        AuditError: an API refused (the message names the call and the missing permission).

    """
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - boto3's own dependency

    try:
        findings = identity_center_findings(clients.sso, expectations, account=account)
        entries = access_entries(clients.eks, eks_cluster)
        findings += access_entry_findings(
            clients.iam,
            entries,
            expectations,
            cluster=eks_cluster,
            iam_in=clients.iam_in if clients.sts is not None else None,
        )
        findings += studio_findings(
            clients.studio,
            expectations,
            sagemaker_in=clients.sagemaker_in if clients.sts is not None else None,
        )
        findings += compute_quota_findings(clients.quotas, expectations, cluster_arn=cluster_arn)
    except ClientError as exc:
        error = exc.response.get("Error", {})
        raise AuditError(
            f"{exc.operation_name} refused: {error.get('Code')}: {error.get('Message')} (the audit needs the "
            "read-only permissions listed in docs/audit.md)"
        ) from None
    except BotoCoreError as exc:
        raise AuditError(str(exc)) from None
    return findings
