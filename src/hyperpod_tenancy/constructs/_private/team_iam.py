"""IAM policy documents of a team, as plain dicts (no jsii, so they can be evaluated in unit tests).

ARNs are passed in as strings that may be CDK tokens: they are only concatenated, never parsed,
split or compared. The team name is plain text and is validated, because a wildcard in it would
widen every S3 grant.

What a team gets:

* Identity Center permission set (people): read the shared EKS and HyperPod clusters (enough for
  ``aws eks update-kubeconfig --name <cluster>`` and ``hyp set-cluster-context``), read/write S3
  under ``<bucket>/teams/<team>/`` and open Studio user profiles of the team's own domain.
  Everything inside the cluster is RBAC's job (the access entry maps the role to the team group).
* Team data policy (Studio execution role, pod identity role): S3 under the team prefix only.
* Studio policy (Studio execution role): create, use and delete the apps and spaces of the team's
  own domain, tag them on creation, describe them, and list what the Studio UI lists.

``eks:ListClusters`` / ``sagemaker:ListClusters`` are left out on purpose: they only take
``Resource: "*"``, reveal every cluster in the account, and no team workflow needs them when the
cluster name is handed out with the team's onboarding.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from hyperpod_tenancy.policy import names

#: IAM policy language version.
POLICY_VERSION = "2012-10-17"
#: Key prefix of every team's data in the shared bucket: ``teams/<team>/``.
TEAM_PREFIX_ROOT = names.DATA_PREFIX_ROOT
#: Object-level S3 actions a team may perform under its own prefix.
S3_OBJECT_ACTIONS = (
    "s3:GetObject",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
)
#: What a person or role reading and writing SSE-KMS objects needs on the key, through S3 only ("Using
#: server-side encryption with AWS KMS keys", S3 User Guide, Permissions: ``kms:GenerateDataKey`` to upload,
#: ``kms:Decrypt`` to download and to complete multipart uploads).
DATA_KEY_ACTIONS = ("kms:Decrypt", "kms:GenerateDataKey")
#: Actions on the shared EKS cluster.
EKS_CLUSTER_ACTIONS = ("eks:DescribeCluster",)
#: Actions on the shared HyperPod cluster (describe it, list and describe its nodes).
HYPERPOD_CLUSTER_ACTIONS = (
    "sagemaker:DescribeCluster",
    "sagemaker:DescribeClusterNode",
    "sagemaker:ListClusterNodes",
)
#: Studio sign-in through a presigned URL (IAM-auth domains), scoped to the team's domain.
STUDIO_ACTIONS = ("sagemaker:CreatePresignedDomainUrl",)
#: What the Studio execution role does on the apps of its own domain (JupyterLab, Code Editor...):
#: "Give your users access to spaces", https://docs.aws.amazon.com/sagemaker/latest/dg/studio-updated-jl-admin-guide-permissions.html
STUDIO_APP_ACTIONS = ("sagemaker:CreateApp", "sagemaker:DeleteApp", "sagemaker:DescribeApp")
#: What the Studio execution role does on the spaces of its own domain (same page).
STUDIO_SPACE_ACTIONS = (
    "sagemaker:CreateSpace",
    "sagemaker:UpdateSpace",
    "sagemaker:DeleteSpace",
    "sagemaker:DescribeSpace",
)
#: Studio tags every app and space it creates; ``AddTags`` is allowed only as part of these creations
#: (``sagemaker:TaggingAction``, "Provide permissions for tagging SageMaker AI resources",
#: https://docs.aws.amazon.com/sagemaker/latest/dg/security_iam_id-based-policy-examples.html#grant-tagging-permissions).
STUDIO_TAGGING_ACTIONS = ("CreateApp", "CreateSpace")
#: List operations the Studio UI calls. They support no resource-level permission (``Resource: "*"``) and
#: return names and status only; what a team can open or change stays limited to its own domain.
STUDIO_LIST_ACTIONS = ("sagemaker:ListApps", "sagemaker:ListSpaces", "sagemaker:ListUserProfiles")

_TEAM = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DOMAIN_ID = re.compile(r"^d-[a-z0-9]+$")


def team_prefix(team: str) -> str:
    """Return the S3 key prefix of a team's data: ``teams/<team>/``.

    Raises:
        ValueError: ``team`` is not a DNS label (wildcards or slashes would widen the grants).

    """
    if not _TEAM.match(team):
        raise ValueError(
            f"team name {team!r} is not a DNS label ([a-z0-9-], starting and ending alphanumeric); "
            "it is used verbatim in S3 resource ARNs and s3:prefix conditions"
        )
    return names.data_prefix(team)


def team_data_policy(*, team: str, bucket_arn: str) -> dict[str, Any]:
    """Build the policy of a team's execution / pod-identity role: S3 under ``teams/<team>/`` only.

    Objects: read, write, delete and multipart uploads under the prefix. Listing: ``s3:ListBucket``
    on the bucket only with an ``s3:prefix`` under the team prefix (a listing without a prefix, or
    with ``teams/``, is denied, so other teams' key names stay private). Note that S3 listing
    needs the trailing slash: ``aws s3 ls s3://<bucket>/teams/<team>/``.

    Raises:
        ValueError: bad team name or a wildcard in ``bucket_arn``.

    """
    return {"Version": POLICY_VERSION, "Statement": _s3_statements(team, bucket_arn)}


def permission_set_inline_policy(
    *,
    team: str,
    eks_cluster_arn: str,
    hyperpod_cluster_arn: str,
    bucket_arn: str,
    domain_id: str | None,
    region: str,
    account: str,
    partition: str = "aws",
    data_key_arn: str | None = None,
) -> dict[str, Any]:
    """Build the inline policy of a team's Identity Center permission set.

    Args:
        team: team name (DNS label).
        eks_cluster_arn: ARN of the shared EKS cluster (may be a token).
        hyperpod_cluster_arn: ARN of the HyperPod cluster (may be a token).
        bucket_arn: ARN of the shared data bucket (may be a token).
        domain_id: ID (``d-...``, may be a token) of the team's SageMaker domain; ``None`` when the
            team has no Studio domain, in which case no SageMaker Studio permission is granted.
            An ID rather than an ARN because the user-profile ARNs the grant needs are built from it.
        region: region of the domain (may be a token).
        account: account of the domain (may be a token).
        partition: ARN partition. Default: ``aws`` (pass ``Aws.PARTITION`` for GovCloud/China).
        data_key_arn: ARN of the customer-managed key the data bucket is encrypted with (may be a token):
            :data:`DATA_KEY_ACTIONS` on it through S3 in ``region`` only. Default: none (AWS-managed S3 keys
            need no grant).

    Raises:
        ValueError: bad team name, bad domain ID or a wildcard in one of the ARNs.

    """
    for label, arn in (("eks_cluster_arn", eks_cluster_arn), ("hyperpod_cluster_arn", hyperpod_cluster_arn)):
        _no_wildcards(label, arn)
    statements: list[dict[str, Any]] = [
        {
            "Sid": "DescribeSharedEksCluster",
            "Effect": "Allow",
            "Action": list(EKS_CLUSTER_ACTIONS),
            "Resource": eks_cluster_arn,
        },
        {
            "Sid": "DescribeSharedHyperPodCluster",
            "Effect": "Allow",
            "Action": list(HYPERPOD_CLUSTER_ACTIONS),
            "Resource": hyperpod_cluster_arn,
        },
        *_s3_statements(team, bucket_arn),
    ]
    if data_key_arn is not None:
        _no_wildcards("data_key_arn", data_key_arn)
        statements.append(
            {
                "Sid": "TeamDataKeyThroughS3",
                "Effect": "Allow",
                "Action": list(DATA_KEY_ACTIONS),
                "Resource": data_key_arn,
                "Condition": {"StringEquals": {"kms:ViaService": f"s3.{region}.amazonaws.com"}},
            }
        )
    if domain_id is not None:
        for label, value in (("domain_id", domain_id), ("region", region), ("account", account)):
            _no_wildcards(label, value)
        if not _is_token(domain_id) and not _DOMAIN_ID.match(domain_id):
            raise ValueError(f"domain_id {domain_id!r} is not a SageMaker domain ID (d-...)")
        statements.append(
            {
                "Sid": "OpenTeamStudioDomain",
                "Effect": "Allow",
                "Action": list(STUDIO_ACTIONS),
                "Resource": f"arn:{partition}:sagemaker:{region}:{account}:user-profile/{domain_id}/*",
            }
        )
    return {"Version": POLICY_VERSION, "Statement": statements}


def studio_execution_policy(
    *, domain_id: str, region: str, account: str, partition: str = "aws"
) -> dict[str, Any]:
    """Build the Studio policy of a team's execution role: apps and spaces of its own domain only.

    Allows ``CreateApp``/``DeleteApp``/``DescribeApp`` on ``app/<domain_id>/*``, ``CreateSpace``/``UpdateSpace``/
    ``DeleteSpace``/``DescribeSpace`` on ``space/<domain_id>/*``, ``DescribeUserProfile`` on
    ``user-profile/<domain_id>/*``, ``DescribeDomain`` on ``domain/<domain_id>``, ``AddTags`` on the domain's apps
    and spaces only while creating them (``sagemaker:TaggingAction``), and the list calls of
    :data:`STUDIO_LIST_ACTIONS` (``Resource: "*"``, no resource-level permission exists). Another team's domain,
    apps and spaces are out of reach.

    Args:
        domain_id: ID of the team's domain (``d-...``; may be a CDK token).
        region: region of the domain (may be a token).
        account: account of the domain (may be a token).
        partition: ARN partition. Default: ``aws``.

    Raises:
        ValueError: a bad domain ID or a wildcard in one of the values.

    """
    for label, value in (("domain_id", domain_id), ("region", region), ("account", account)):
        _no_wildcards(label, value)
    if not _is_token(domain_id) and not _DOMAIN_ID.match(domain_id):
        raise ValueError(f"domain_id {domain_id!r} is not a SageMaker domain ID (d-...)")
    arn = f"arn:{partition}:sagemaker:{region}:{account}"
    apps, spaces = f"{arn}:app/{domain_id}/*", f"{arn}:space/{domain_id}/*"
    return {
        "Version": POLICY_VERSION,
        "Statement": [
            {
                "Sid": "TeamDomainApps",
                "Effect": "Allow",
                "Action": list(STUDIO_APP_ACTIONS),
                "Resource": apps,
            },
            {
                "Sid": "TeamDomainSpaces",
                "Effect": "Allow",
                "Action": list(STUDIO_SPACE_ACTIONS),
                "Resource": spaces,
            },
            {
                "Sid": "DescribeTeamDomain",
                "Effect": "Allow",
                "Action": ["sagemaker:DescribeDomain", "sagemaker:DescribeUserProfile"],
                "Resource": [f"{arn}:domain/{domain_id}", f"{arn}:user-profile/{domain_id}/*"],
            },
            {
                "Sid": "TagTeamDomainResourcesOnCreate",
                "Effect": "Allow",
                "Action": "sagemaker:AddTags",
                "Resource": [apps, spaces],
                "Condition": {"StringEquals": {"sagemaker:TaggingAction": list(STUDIO_TAGGING_ACTIONS)}},
            },
            {
                "Sid": "StudioListings",
                "Effect": "Allow",
                "Action": list(STUDIO_LIST_ACTIONS),
                "Resource": "*",
            },
        ],
    }


def studio_trust_conditions(*, account: str) -> dict[str, Any]:
    """Conditions of the Studio execution role's trust in ``sagemaker.amazonaws.com`` (confused deputy).

    ``aws:SourceAccount`` only: SageMaker's "Cross-service confused deputy prevention" page
    (https://docs.aws.amazon.com/sagemaker/latest/dg/security-confused-deputy-prevention.html, section
    "SageMaker Studio") shows the Studio execution role conditioned on ``aws:SourceAccount``; an
    ``aws:SourceArn`` on the domain would also have to match the user-profile and space ARNs Studio calls from.
    """
    _no_wildcards("account", account)
    return {"StringEquals": {"aws:SourceAccount": account}}


def _s3_statements(team: str, bucket_arn: str) -> list[dict[str, Any]]:
    """Object read/write under the team prefix and a prefix-conditioned ListBucket."""
    prefix = team_prefix(team)
    _no_wildcards("bucket_arn", bucket_arn)
    return [
        {
            "Sid": "TeamPrefixObjects",
            "Effect": "Allow",
            "Action": list(S3_OBJECT_ACTIONS),
            "Resource": f"{bucket_arn}/{prefix}*",
        },
        {
            "Sid": "ListTeamPrefixOnly",
            "Effect": "Allow",
            "Action": "s3:ListBucket",
            "Resource": bucket_arn,
            "Condition": {"StringLike": {"s3:prefix": [f"{prefix}*"]}},
        },
    ]


def _no_wildcards(label: str, value: str) -> None:
    """Reject IAM wildcards in a value that ends up in a ``Resource`` (tokens never contain them).

    Raises:
        ValueError: ``value`` is empty or contains ``*`` or ``?``.

    """
    if not value or "*" in value or "?" in value:
        raise ValueError(f"{label} {value!r} must be a concrete value without IAM wildcards")


def _is_token(value: str) -> bool:
    """Tell whether ``value`` embeds an unresolved CDK token (``${Token[...]}``)."""
    return "${Token[" in value


def extend_policy(policy: object, statements: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the policy document ``policy`` with ``statements`` appended.

    Raises:
        TypeError: ``policy`` is not a policy document.

    """
    if not isinstance(policy, Mapping):
        raise TypeError("the permission set has no policy document to extend")
    return {**policy, "Statement": [*policy["Statement"], *(dict(s) for s in statements)]}
