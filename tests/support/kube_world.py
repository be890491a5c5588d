"""A deployed cluster's Kubernetes side for the drift audit's unit tests: what its API server lists, and a fake API.

:func:`rendered_cluster` is the platform's own rendered team charts plus the objects a real EKS cluster has of its
own; ``test_cluster_drift_audit.py`` checks it against what the real API server lists of the platform as applied
(every object it names is there, as it names it), so the in-memory drift cases of ``test_audit.py`` start from
what a cluster lists.

:class:`FakeKube` serves such objects as the API server's paged cluster-wide lists over real TLS to the daily
Lambda's ``urllib`` reader (``test_drift_audit_lambda.py``). It remains for what the real API server cannot do
here: verify an EKS bearer token (a presigned STS ``GetCallerIdentity`` URL, which only EKS's authenticator
checks) and answer every list with a chosen failure. The same drifts, the command line and the Lambda's reader
with a service account's token run against the real server in ``test_cluster_drift_audit.py``.
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kube_api_server import ServedOnThread, answer_json
from platforms import FSX
from webhook_server import Certificates

from hyperpod_tenancy.constructs.drift_audit import AUDIT_GROUP, AUDIT_ROLE
from hyperpod_tenancy.k8s.audit_record import kube_expectation
from hyperpod_tenancy.k8s.labels import namespace_labels
from hyperpod_tenancy.k8s.team_chart import TeamChart
from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import FairnessBackend, Platform, names
from hyperpod_tenancy.runtime.kube_drift import LIST_PATHS

#: The prefix of the label ``aws_eks.KubernetesManifest`` puts on what it applies (``prune``), a hash after it.
PRUNE_LABEL_PREFIX = "aws.cdk.eks/prune-"


def rendered_cluster(platform: Platform) -> dict[str, list[dict[str, Any]]]:
    """What a deployed platform's API server lists: the team charts plus EKS's and Kueue's own objects."""
    objects: dict[str, list[dict[str, Any]]] = {
        "Namespace": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-system"}}],
        "RoleBinding": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "system::leader-locking-kube-scheduler", "namespace": "kube-system"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": "system::leader-locking-kube-scheduler",
                },
                "subjects": [
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "User",
                        "name": "system:kube-scheduler",
                    },
                    {"kind": "ServiceAccount", "name": "kube-scheduler", "namespace": "kube-system"},
                ],
            }
        ],
        "ClusterRoleBinding": [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": name},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [subject],
            }
            for name, role, subject in (
                (
                    "system:basic-user",
                    "system:basic-user",
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Group",
                        "name": "system:authenticated",
                    },
                ),
                (
                    "system:discovery",
                    "system:discovery",
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Group",
                        "name": "system:authenticated",
                    },
                ),
                (
                    "cluster-admin",
                    "cluster-admin",
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:masters"},
                ),
                (
                    "kueue-manager-rolebinding",
                    "kueue-manager-role",
                    {
                        "kind": "ServiceAccount",
                        "name": "kueue-controller-manager",
                        "namespace": "kueue-system",
                    },
                ),
                (
                    "hyperpod-tenancy-eviction-collector",
                    "hyperpod-tenancy-eviction-collector",
                    {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Group",
                        "name": "hyperpod-tenancy:eviction-collector",
                    },
                ),
                (
                    AUDIT_ROLE,
                    AUDIT_ROLE,
                    {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": AUDIT_GROUP},
                ),
            )
        ],
        "ResourceQuota": [],
        "LimitRange": [],
    }
    for team in platform.hosted_teams:
        chart = TeamChart(platform, team, fsx=FSX, service_account=DEFAULT_SERVICE_ACCOUNT).to_json()
        if platform.fairness_backend is FairnessBackend.TASK_GOVERNANCE:
            # the service creates the namespace; the team stack labels it
            objects["Namespace"].append(
                {
                    "apiVersion": "v1",
                    "kind": "Namespace",
                    "metadata": {
                        "name": names.namespace(team.name),
                        "labels": {"sagemaker.amazonaws.com/quota-allocation-id": "abc"}
                        | namespace_labels(platform, team),
                    },
                }
            )
        for manifest in chart:
            if manifest["kind"] == "Namespace":  # the label CDK's KubernetesManifest prunes by (no drift)
                manifest["metadata"]["labels"][f"{PRUNE_LABEL_PREFIX}c8{team.name:0>40}"[:60]] = ""
            if manifest["kind"] in objects:
                objects[manifest["kind"]].append(manifest)
    for kind, items in objects.items():
        for i, item in enumerate(items):  # what the API server adds
            item["metadata"] |= {"uid": f"00000000-0000-0000-0000-{i:012d}", "resourceVersion": str(100 + i)}
            if kind == "Namespace":
                item["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = item["metadata"][
                    "name"
                ]
    return objects


#: Each list path the audit reads → the kind listed and its list kind.
_LISTS = {path: (kind, f"{kind}List") for kind, path in LIST_PATHS.items()}


class FakeKube(ServedOnThread):
    """The cluster-wide lists the audit reads, in pages of ``limit`` (``metadata.continue``), bearer token required.

    Plain HTTP unless ``tls`` (PEM files of the server certificate its CA signed) is given. A request is authorized
    when its bearer token is :attr:`TOKEN`, or when ``accept(token)`` is true.
    """

    TOKEN = "audit-token"

    def __init__(
        self,
        objects: dict[str, list[dict[str, Any]]],
        *,
        tls: Certificates | None = None,
        accept: Callable[[str], bool] | None = None,
    ) -> None:
        self.objects = objects
        self.requests: list[str] = []
        self.tokens: list[str] = []
        #: When set, every list answers this status (``403``: the caller's group has no rule for it).
        self.fail_with: int | None = None
        outer = self

        def authorized(header: str) -> bool:
            token = header.removeprefix("Bearer ")
            outer.tokens.append(token)
            return header.startswith("Bearer ") and (
                token == outer.TOKEN or (accept is not None and accept(token))
            )

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                if not authorized(self.headers.get("Authorization", "")):
                    answer_json(self, 401, {"kind": "Status", "code": 401, "reason": "Unauthorized"})
                    return
                if outer.fail_with is not None:
                    answer_json(self, outer.fail_with, {"kind": "Status", "code": outer.fail_with})
                    return
                url = urllib.parse.urlsplit(self.path)
                if url.path not in _LISTS:
                    answer_json(self, 404, {"kind": "Status", "code": 404, "reason": "NotFound"})
                    return
                kind, list_kind = _LISTS[url.path]
                query = urllib.parse.parse_qs(url.query)
                items = outer.objects[kind]
                limit = min(int(query.get("limit", ["500"])[0]), 3)  # small pages: the audit must follow them
                start = int(query.get("continue", ["0"])[0])
                meta = {"resourceVersion": "1"} | (
                    {"continue": str(start + limit)} if start + limit < len(items) else {}
                )
                answer_json(
                    self,
                    200,
                    {
                        "kind": list_kind,
                        "apiVersion": "v1",
                        "metadata": meta,
                        "items": items[start : start + limit],
                    },
                )

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.cert, tls.key)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"


def write_kube_records(ssm: Any, platform: Platform, *, stack_of: Callable[[str], str]) -> None:
    """Put each hosted team's Kubernetes audit record into SSM, as its team stack writes it."""
    for team in platform.hosted_teams:
        chart = TeamChart(platform, team, fsx=FSX, service_account=DEFAULT_SERVICE_ACCOUNT).to_json()
        expectation = kube_expectation(platform, team, chart, stack=stack_of(team.name))
        value = json.dumps(expectation.to_record(), sort_keys=True, separators=(",", ":"))
        ssm.put_parameter(
            Name=names.drift_audit_kubernetes_record(platform.cluster.name, team.name),
            Value=value,
            Type="String",
            Tier="Standard" if len(value) <= 4096 else "Advanced",
        )


def named(objects: list[dict[str, Any]], namespace: str, name: str) -> dict[str, Any]:
    """The object of ``objects`` in ``namespace`` (``""``: cluster-scoped) called ``name``."""
    return next(
        o
        for o in objects
        if o["metadata"].get("namespace", "") == namespace and o["metadata"]["name"] == name
    )
