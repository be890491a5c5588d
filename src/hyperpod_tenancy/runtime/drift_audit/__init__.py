"""The drift audit's AWS checks, shared by ``hyperpod-tenancy audit`` and the daily Lambda (:func:`handler`).

Each team stack writes an audit record (SSM parameter under ``/hyperpod-tenancy/<cluster>/drift-audit/``, see
:class:`TeamExpectation`): what its CloudFormation deployed, with the values only known once deployed (the
permission set's ARN, the Identity Center role the lookup resolved, the Studio execution role) and the team's
``AWS::SageMaker::ComputeQuota`` as the stack rendered it from the policy. The checks compare that with what
exists now and return :class:`Finding` objects, each naming the object, what is expected, what exists and the fix.

How an EKS access entry binds (EKS API Reference, ``AccessEntry``, ``principalArn``): "even though the ARN is the
same for the recreated IAM principal, the roleID or userID ... is different ... Amazon EKS stores it with the access
entry." So an entry is stale both when the team's role has another ARN now (Identity Center gives a re-created
permission set a role with a new random suffix) and when a role of the same ARN was created after the entry (the
role's ``CreateDate`` later than the entry's ``createdAt``): the role ID the entry stored is gone.

Only the standard library and boto3 are imported (boto3 on first use, so the constructs, which read
:class:`TeamExpectation` and :data:`SSO_ROLE_LOOKUP_CONTEXT` at synth, need no boto3): the module runs as-is on
the Lambda Python runtime, and the command line (``[audit]`` extra) imports the same functions, so both compare
the same way. The Lambda's asset keeps the import path (``hyperpod_tenancy.runtime``) under a stub package.

The daily handler (:func:`handler`) also runs the Kubernetes checks (:mod:`hyperpod_tenancy.runtime.kube_drift`)
against each team's Kubernetes audit record, reading the cluster through its private API endpoint with an EKS
token (:mod:`hyperpod_tenancy.runtime.kube_api`), and publishes the number of findings of both as the metric
:data:`METRIC_NAME` (namespace from ``METRIC_NAMESPACE``, dimension ``Cluster``). A cluster it cannot read is a
finding too, so the alarm fires instead of the run failing quietly.
"""

from __future__ import annotations

from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding, check_version
from hyperpod_tenancy.runtime.drift_audit._common import (
    METRIC_NAME,
    SCHEMA_VERSION,
    SSO_ROLE_LOOKUP_CONTEXT,
    TeamExpectation,
)
from hyperpod_tenancy.runtime.drift_audit.aws import AwsClients, aws_findings
from hyperpod_tenancy.runtime.drift_audit.daily import handler, read_records

__all__ = [
    "METRIC_NAME",
    "SCHEMA_VERSION",
    "SSO_ROLE_LOOKUP_CONTEXT",
    "AuditError",
    "AwsClients",
    "Finding",
    "TeamExpectation",
    "aws_findings",
    "check_version",
    "handler",
    "read_records",
]
