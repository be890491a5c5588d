"""Read the Kubernetes API of an EKS cluster from a Lambda: an EKS bearer token, the endpoint and CA, paged lists.

Authentication is an EKS bearer token: ``k8s-aws-v1.`` + the unpadded base64url of an STS
``GetCallerIdentity`` URL presigned (SigV4, 60 s) with the header ``x-k8s-aws-id: <cluster>`` signed in — the
format of aws-iam-authenticator (https://github.com/kubernetes-sigs/aws-iam-authenticator#api-authorization-from-outside-a-cluster)
that EKS accepts. The endpoint and its CA come from ``eks:DescribeCluster`` (or from ``API_ENDPOINT`` and
``CA_DATA``, base64 PEM, when both are set: :func:`endpoint_and_ca`). The caller's role needs an EKS access entry
mapping it to a Kubernetes group with the reads it makes.

Only the standard library, botocore and boto3 (the Lambda Python runtime's) are imported: the scheduled functions
(the eviction collector, the drift audit) put this module in their asset beside their own.
"""

from __future__ import annotations

import base64
import json
import os
import ssl
import urllib.parse
import urllib.request
from typing import Any

import boto3
from botocore.signers import RequestSigner

__all__ = [
    "CLUSTER_ID_HEADER",
    "TOKEN_EXPIRES_SECONDS",
    "TOKEN_PREFIX",
    "cluster_access",
    "eks_token",
    "endpoint_and_ca",
    "list_objects",
]

#: Prefix of an EKS bearer token (aws-iam-authenticator's ``v1`` token format).
TOKEN_PREFIX = "k8s-aws-v1."
#: Header carrying the cluster name, signed into the presigned URL.
CLUSTER_ID_HEADER = "x-k8s-aws-id"
#: Lifetime of the presigned URL (EKS refuses tokens older than 15 minutes).
TOKEN_EXPIRES_SECONDS = 60
#: Objects per list page (``limit``; the API server returns a ``continue`` token for the rest).
PAGE = 500


def eks_token(cluster_name: str, *, session: boto3.session.Session | None = None) -> str:
    """Return an EKS bearer token for ``cluster_name``: a presigned STS ``GetCallerIdentity`` URL, encoded."""
    session = session or boto3.session.Session()
    sts = session.client("sts")
    region = sts.meta.region_name
    credentials = session.get_credentials()
    if credentials is None:
        raise RuntimeError(f"no AWS credentials to sign the EKS token of cluster {cluster_name} with")
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4", credentials, session.events
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"{sts.meta.endpoint_url}/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {CLUSTER_ID_HEADER: cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=TOKEN_EXPIRES_SECONDS,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def cluster_access(eks: Any, cluster_name: str) -> tuple[str, str]:
    """Return the API endpoint and the PEM CA bundle of the cluster (``DescribeCluster``)."""
    cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    return str(cluster["endpoint"]), base64.b64decode(cluster["certificateAuthority"]["data"]).decode()


def endpoint_and_ca(cluster_name: str, *, eks: Any = None) -> tuple[str, str]:
    """Return the endpoint and PEM CA: ``API_ENDPOINT`` and ``CA_DATA`` when both are set, else ``DescribeCluster``."""
    endpoint, ca_data = os.environ.get("API_ENDPOINT", ""), os.environ.get("CA_DATA", "")
    if endpoint and ca_data:
        return endpoint, base64.b64decode(ca_data).decode()
    return cluster_access(eks or boto3.client("eks"), cluster_name)


def list_objects(
    endpoint: str, token: str, ca_pem: str, path: str, *, timeout: float = 30
) -> list[dict[str, Any]]:
    """Return every object of a list ``path`` (all pages), over TLS verified against ``ca_pem``."""
    context = ssl.create_default_context(cadata=ca_pem)
    items: list[dict[str, Any]] = []
    cont = ""
    while True:
        query = {"limit": str(PAGE)} | ({"continue": cont} if cont else {})
        request = urllib.request.Request(
            f"{endpoint.rstrip('/')}{path}?{urllib.parse.urlencode(query)}",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
        )
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            page = json.load(response)
        items += page.get("items") or []
        cont = str((page.get("metadata") or {}).get("continue") or "")
        if not cont:
            return items
