"""The offline RBAC authorizer (``tests/support/rbac_eval.py``) against the real one, cell by cell.

The RBAC suites (``test_rbac_isolation``, the hostile suites, ``explain``, the probe) judge the rendered Roles and
bindings with :class:`rbac_eval.Authorizer`. Here every cell of the matrix those suites rely on is also asked of
the real API server (a SubjectAccessReview, the RBAC authorizer EKS runs) with the platform applied
(``kueue_on_cluster``; the Task Governance platform too), and the two verdicts must be equal for every cell:

* who: a member of each team, as EKS authenticates an Identity Center user (their ARN, the team's Kubernetes
  group, ``system:authenticated``), and each team's workload ServiceAccount;
* what: every verb of the API (and ``bind``, ``escalate``, ``impersonate``, ``use``, ``approve``) on every
  resource and subresource the rendered RBAC names, plus the resources that would loosen isolation;
  unnamed and by each name the rules list; non-resource URLs;
* where: each team namespace and cluster scope.

One flipped verdict fails the test, with every flip listed. A deliberately wrong model shows that the comparison
can fail.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from cluster_platform import ClusterPlatforms, OnCluster
from kube_client import KubeClient
from rbac_eval import Authorizer, Request, Subject
from synth import Synth
from webhook_server import sso_user

from hyperpod_tenancy.k8s.team_manifests import DEFAULT_SERVICE_ACCOUNT
from hyperpod_tenancy.policy import names

pytestmark = pytest.mark.cluster

VERBS = (
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "bind",
    "escalate",
    "impersonate",
    "use",
    "approve",
)
#: (group, resource) that would loosen isolation, asked whether or not the rendered RBAC names them.
SENSITIVE = (
    ("", "namespaces"),
    ("", "nodes"),
    ("", "persistentvolumes"),
    ("", "resourcequotas"),
    ("", "resourcequotas/status"),
    ("", "limitranges"),
    ("", "serviceaccounts"),
    ("", "serviceaccounts/token"),
    ("", "pods"),
    ("", "pods/attach"),
    ("", "pods/proxy"),
    ("", "pods/ephemeralcontainers"),
    ("", "pods/eviction"),
    ("", "services/proxy"),
    ("", "users"),
    ("", "groups"),
    ("apps", "deployments"),
    ("apps", "daemonsets"),
    ("batch", "cronjobs"),
    ("networking.k8s.io", "networkpolicies"),
    ("rbac.authorization.k8s.io", "roles"),
    ("rbac.authorization.k8s.io", "rolebindings"),
    ("rbac.authorization.k8s.io", "clusterroles"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("authentication.k8s.io", "userextras/scopes"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
    ("certificates.k8s.io", "certificatesigningrequests"),
    ("certificates.k8s.io", "certificatesigningrequests/approval"),
    ("certificates.k8s.io", "signers"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("storage.k8s.io", "storageclasses"),
    ("kueue.x-k8s.io", "clusterqueues"),
    ("kueue.x-k8s.io", "clusterqueues/status"),
    ("kueue.x-k8s.io", "localqueues/status"),
    ("kueue.x-k8s.io", "workloads/status"),
    ("kueue.x-k8s.io", "cohorts"),
    ("kueue.x-k8s.io", "resourceflavors"),
    ("kueue.x-k8s.io", "workloadpriorityclasses"),
)
NON_RESOURCE_URLS = ("/api", "/apis/batch/v1", "/version", "/healthz", "/metrics", "/logs/", "/openapi/v2")
#: Concurrent SubjectAccessReviews (the API server answers each in about a millisecond; the client waits).
PARALLEL = 8


@dataclass(frozen=True)
class Cell:
    """One request of one subject."""

    who: Subject
    request: Request

    def __str__(self) -> str:
        return f"{self.who.user}: {self.request}"


def subjects(synth: Synth) -> list[Subject]:
    """A member of each team (as EKS authenticates them) and each team's workload ServiceAccount."""
    found = []
    for team in synth.platform.hosted_teams:
        user = sso_user(f"{team.name}-member", team.name)
        found.append(Subject(user["username"], tuple(user["groups"])))
        ns = names.namespace(team.name)
        found.append(Subject(f"system:serviceaccount:{ns}:{DEFAULT_SERVICE_ACCOUNT}"))
    return found


def rbac_objects(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    kinds = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
    return [o for o in objects if o["kind"] in kinds]


def cells(synth: Synth, objects: Sequence[Mapping[str, Any]]) -> list[Cell]:
    """The matrix: every subject, verb, resource (rendered or sensitive), name and namespace; non-resource URLs."""
    resources: set[tuple[str, str]] = set(SENSITIVE)
    named: dict[tuple[str, str], set[str]] = {}
    for role in objects:
        if role["kind"] not in ("Role", "ClusterRole"):
            continue
        for rule in role.get("rules") or ():
            for group in rule.get("apiGroups") or ():
                for resource in rule.get("resources") or ():
                    resources.add((group, resource))
                    named.setdefault((group, resource), set()).update(rule.get("resourceNames") or ())
    namespaces: list[str | None] = [names.namespace(t.name) for t in synth.platform.hosted_teams]
    namespaces.append(None)
    found: list[Cell] = []
    for who in subjects(synth):
        for group, resource in sorted(resources):
            for verb in VERBS:
                for ns in namespaces:
                    for name in ("", *sorted(named.get((group, resource), ()))):
                        found.append(Cell(who, Request(verb, resource, group, ns, name)))
        for url in NON_RESOURCE_URLS:
            found += [Cell(who, Request(verb, non_resource_url=url)) for verb in ("get", "post")]
    return found


def review(client: KubeClient, cell: Cell) -> bool:
    """The real RBAC authorizer's verdict (a SubjectAccessReview)."""
    req = cell.request
    spec: dict[str, Any] = {"user": cell.who.user, "groups": sorted(cell.who.all_groups)}
    if req.non_resource_url:
        spec["nonResourceAttributes"] = {"path": req.non_resource_url, "verb": req.verb}
    else:
        resource, _, sub = req.resource.partition("/")
        attributes = {"verb": req.verb, "group": req.api_group, "resource": resource}
        attributes |= {"subresource": sub} if sub else {}
        attributes |= {"namespace": req.namespace} if req.namespace else {}
        attributes |= {"name": req.name} if req.name else {}
        spec["resourceAttributes"] = attributes
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
    answer = client.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
    return bool(answer["status"].get("allowed"))


def flips(model: Authorizer, client: KubeClient, matrix: Sequence[Cell]) -> list[str]:
    """Every cell where the model's verdict differs from the real server's."""
    with ThreadPoolExecutor(PARALLEL) as pool:
        real = list(pool.map(lambda c: review(client, c), matrix))
    out = []
    for cell, server in zip(matrix, real, strict=True):
        offline = model.check(cell.who, cell.request)
        if offline.allowed != server:
            out.append(f"{cell}: rbac_eval {offline.allowed} via {offline.via}, API server {server}")
    return out


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module", params=["kueue", "task-governance", "team-accounts"])
def applied(request: pytest.FixtureRequest, cluster_platforms: ClusterPlatforms) -> Iterator[OnCluster]:
    """Each backend's platform applied in turn (their RBAC differs: Kueue's queues are read or not), and the
    platform with a team in an account of its own."""
    fixture = {
        "kueue": "kueue_reference",
        "task-governance": "reference",
        "team-accounts": "team_accounts_example",
    }
    name = {"kueue": "reference-kueue", "task-governance": "reference"}.get(request.param, request.param)
    yield cluster_platforms.on(name, request.getfixturevalue(fixture[request.param]))


# --------------------------------------------------------------------------------------------------- tests


def test_rbac_eval_agrees_with_the_real_authorizer_on_every_cell(applied: OnCluster) -> None:
    objects = rbac_objects(applied.objects)
    matrix = cells(applied.synth, objects)
    started = time.monotonic()
    found = flips(Authorizer(objects), applied.admin, matrix)
    took = time.monotonic() - started
    print(f"{applied.name}: {len(matrix)} SubjectAccessReviews in {took:.1f} s, {len(found)} flips")
    assert found == [], f"{len(found)} of {len(matrix)} cells flipped:\n" + "\n".join(found)


def test_a_wrong_model_is_caught(applied: OnCluster) -> None:
    """A model given a binding the cluster does not have (a team group bound to ``edit`` in its namespace)."""
    team = applied.synth.platform.hosted_teams[0]
    ns = names.namespace(team.name)
    leaky = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "not-on-the-cluster", "namespace": ns},
        "subjects": [
            {
                "kind": "Group",
                "apiGroup": "rbac.authorization.k8s.io",
                "name": names.kubernetes_group(team.name),
            }
        ],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "widened"},
    }
    widened = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "widened"},
        "rules": [{"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": ["patch"]}],
    }
    objects = rbac_objects(applied.objects)
    matrix = [c for c in cells(applied.synth, objects) if c.request.resource == "networkpolicies"]
    found = flips(Authorizer([*objects, widened, leaky]), applied.admin, matrix)
    assert any(f"patch networking.k8s.io/networkpolicies -n {ns}" in f for f in found), found
