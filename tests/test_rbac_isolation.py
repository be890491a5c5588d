"""RBAC isolation of team groups, proved offline with a small RBAC authorizer (tests/support/rbac_eval.py).

For each team's Kubernetes group, over every team's rendered objects plus the bootstrap roles every cluster
binds to ``system:authenticated``:

* what a team member does works in the team's own namespace;
* nothing that loosens isolation is allowed, in the own namespace or cluster-wide;
* nothing at all is allowed in another team's namespace, and only the team's own ClusterQueue (plus the
  catalogue objects) can be read cluster-wide.

The evaluator itself is tested first, including that a known-permissive binding is reported as allowed.
"""

from __future__ import annotations

import copy
from typing import Any

import platforms
import pytest
from rbac_eval import Authorizer, Request, Subject, resource_matches, rule_allows

from hyperpod_tenancy.k8s.team_manifests import TEAM_ROLE_NAME
from hyperpod_tenancy.policy import Platform, Team, WorkloadKind, names

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")
SPECIAL_VERBS = ("bind", "escalate", "impersonate", "approve", "use", "*")
WRITE = ("create", "update", "patch", "delete", "deletecollection")

# (group, resource) a tenant may use in its namespace, with the verbs it needs
JOB_KINDS = (
    ("batch", "jobs"),
    ("kubeflow.org", "pytorchjobs"),
    ("kubeflow.org", "mpijobs"),
    ("kubeflow.org", "tfjobs"),
    ("kubeflow.org", "xgboostjobs"),
    ("kubeflow.org", "paddlejobs"),
    ("sagemaker.amazonaws.com", "hyperpodpytorchjobs"),
    # KubeRay kinds: granted since the Role derives from hyperpod_tenancy.k8s.workloads.WORKLOAD_KINDS
    ("ray.io", "rayjobs"),
    ("ray.io", "rayclusters"),
)
JOB_VERBS = ("create", "get", "list", "watch", "delete", "patch", "update")
MEMBER_ALLOWED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    *((g, r, JOB_VERBS) for g, r in JOB_KINDS),
    ("", "pods", ("get", "list", "watch", "delete")),
    ("", "pods/log", ("get",)),
    ("", "pods/exec", ("create",)),
    ("", "pods/portforward", ("create",)),
    ("", "configmaps", JOB_VERBS),
    ("", "secrets", JOB_VERBS),
    ("", "services", JOB_VERBS),
    ("", "persistentvolumeclaims", ("get", "list", "watch")),
    ("", "serviceaccounts", ("get", "list", "watch")),
    ("", "events", ("get", "list", "watch")),
    ("events.k8s.io", "events", ("get", "list", "watch")),
    ("kueue.x-k8s.io", "localqueues", ("get", "list", "watch")),
    ("kueue.x-k8s.io", "workloads", ("get", "list", "watch")),
)

# (group, resource, verbs) that would let a tenant loosen isolation; namespaced ones are asked in the
# team's own namespace and cluster-wide, cluster-scoped ones cluster-wide
LOOSENING_NAMESPACED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "namespaces", ("get", "list", *WRITE)),
    ("", "resourcequotas", WRITE),
    ("", "resourcequotas/status", ("update", "patch")),
    ("", "limitranges", WRITE),
    ("networking.k8s.io", "networkpolicies", WRITE),
    ("rbac.authorization.k8s.io", "roles", (*WRITE, "bind", "escalate")),
    ("rbac.authorization.k8s.io", "rolebindings", WRITE),
    ("kueue.x-k8s.io", "localqueues", WRITE),
    ("kueue.x-k8s.io", "localqueues/status", ("update", "patch")),
    ("kueue.x-k8s.io", "workloads", WRITE),
    ("kueue.x-k8s.io", "workloads/status", ("update", "patch")),
    ("", "serviceaccounts", WRITE),
    ("", "serviceaccounts/token", ("create",)),
    ("", "pods", ("create", "update", "patch")),
    ("", "pods/ephemeralcontainers", ("update", "patch")),
    ("", "pods/eviction", ("create",)),
    ("", "persistentvolumeclaims", WRITE),
    ("apps", "deployments", WRITE),  # training teams; inference teams are checked separately
    ("apps", "daemonsets", WRITE),
    ("batch", "cronjobs", WRITE),
)
LOOSENING_CLUSTER: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("", "namespaces", ("get", "list", *WRITE)),
    ("", "nodes", ("get", "list", *WRITE)),
    ("", "persistentvolumes", ("get", "list", *WRITE)),
    ("", "users", ("impersonate",)),
    ("", "groups", ("impersonate",)),
    ("", "serviceaccounts", ("impersonate",)),
    ("authentication.k8s.io", "userextras/scopes", ("impersonate",)),
    ("rbac.authorization.k8s.io", "clusterroles", (*WRITE, "bind", "escalate")),
    ("rbac.authorization.k8s.io", "clusterrolebindings", WRITE),
    ("admissionregistration.k8s.io", "validatingadmissionpolicies", WRITE),
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings", WRITE),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", WRITE),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations", WRITE),
    ("apiextensions.k8s.io", "customresourcedefinitions", WRITE),
    ("kueue.x-k8s.io", "clusterqueues", WRITE),
    ("kueue.x-k8s.io", "clusterqueues/status", ("update", "patch")),
    ("kueue.x-k8s.io", "cohorts", WRITE),
    ("kueue.x-k8s.io", "resourceflavors", WRITE),
    ("kueue.x-k8s.io", "workloadpriorityclasses", WRITE),
    ("scheduling.k8s.io", "priorityclasses", WRITE),
    ("certificates.k8s.io", "certificatesigningrequests", ("create",)),
    ("certificates.k8s.io", "certificatesigningrequests/approval", ("update", "patch")),
    ("certificates.k8s.io", "signers", ("approve", "sign")),
    ("storage.k8s.io", "storageclasses", WRITE),
)
CATALOGUE = ("resourceflavors", "workloadpriorityclasses")


def member(team: Team) -> Subject:
    return Subject("alice@example.com", (names.kubernetes_group(team.name),))


def denied_violations(authz: Authorizer, platform: Platform, team: Team) -> list[str]:
    """Every request the team's group must not be able to make and can; empty when isolation holds."""
    who = member(team)
    own = names.namespace(team.name)
    asked: list[Request] = []
    for group, resource, verbs in LOOSENING_NAMESPACED:
        if team.workload is WorkloadKind.INFERENCE and resource == "deployments":
            continue
        for verb in verbs:
            asked.append(Request(verb, resource, group, own))
            asked.append(Request(verb, resource, group, None))
    for verb in (*VERBS, *SPECIAL_VERBS):  # the namespace object itself, as the API server attributes it
        asked.append(Request(verb, "namespaces", "", own, own))
        asked.append(Request(verb, "namespaces", "", None, own))
    for group, resource, verbs in LOOSENING_CLUSTER:
        asked += [Request(verb, resource, group, None) for verb in verbs]
    for verb in SPECIAL_VERBS:
        asked += [Request(verb, "*", "*", own), Request(verb, "*", "*", None)]
    # every verb on everything in every other team's namespace
    catalogue = {(g, r) for g, r, _ in (*MEMBER_ALLOWED, *LOOSENING_NAMESPACED)} | {("apps", "deployments")}
    for other in platform.teams:
        if other.name == team.name:
            continue
        ns = names.namespace(other.name)
        for group, resource in sorted(catalogue):
            asked += [Request(verb, resource, group, ns) for verb in (*VERBS, *SPECIAL_VERBS)]
            asked += [Request(verb, resource, group, ns, "x") for verb in ("get", "delete")]
        # another team's ClusterQueue, by name and unnamed
        cq = names.cluster_queue(other.name)
        asked += [Request(verb, "clusterqueues", "kueue.x-k8s.io", None, cq) for verb in VERBS]
    asked += [Request(verb, "clusterqueues", "kueue.x-k8s.io", None) for verb in ("get", "list", "watch")]
    return [f"{req} via {d.via}" for req in asked if (d := authz.check(who, req))]


def allowed_gaps(authz: Authorizer, team: Team) -> list[str]:
    """Every request a team member needs and cannot make; empty when the Role is sufficient."""
    who = member(team)
    own = names.namespace(team.name)
    asked = [Request(v, r, g, own) for g, r, verbs in MEMBER_ALLOWED for v in verbs]
    asked += [
        Request(v, r, g, own, "x") for g, r, verbs in MEMBER_ALLOWED for v in verbs if v in ("get", "delete")
    ]
    cq = names.cluster_queue(team.name)
    asked += [Request(v, "clusterqueues", "kueue.x-k8s.io", None, cq) for v in ("get", "list", "watch")]
    asked += [Request(v, r, "kueue.x-k8s.io", None) for r in CATALOGUE for v in ("get", "list", "watch")]
    asked.append(Request("create", "selfsubjectaccessreviews", "authorization.k8s.io", None))
    if team.workload is WorkloadKind.INFERENCE:
        asked += [Request(v, "deployments", "apps", own) for v in JOB_VERBS]
    return [str(req) for req in asked if not authz.check(who, req)]


# --- the evaluator ----------------------------------------------------------------------------------------


def _role(kind: str, name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def _binding(
    name: str,
    role: str,
    subjects: list[dict[str, Any]],
    *,
    namespace: str | None = None,
    role_kind: str = "ClusterRole",
) -> dict[str, Any]:
    """A RoleBinding in ``namespace``, or a ClusterRoleBinding without one."""
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding" if namespace else "ClusterRoleBinding",
        "metadata": meta,
        "subjects": subjects,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
    }


def _group(name: str) -> list[dict[str, Any]]:
    return [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": name}]


ADMIN = _role(
    "ClusterRole",
    "all-powerful",
    [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}],
)


def test_rule_matching_follows_upstream() -> None:
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    assert rule_allows(rule, Request("get", "pods", "", "ns"))
    assert not rule_allows(rule, Request("get", "pods/log", "", "ns")), (
        "a resource does not cover its subresources"
    )
    assert not rule_allows(rule, Request("list", "pods", "", "ns"))
    assert not rule_allows(rule, Request("get", "pods", "apps", "ns"))
    assert resource_matches({"resources": ["*/log"]}, "pods/log")
    assert not resource_matches({"resources": ["*/log"]}, "pods")
    assert resource_matches({"resources": ["*"]}, "pods/exec")
    named = {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues"],
        "verbs": ["get", "list"],
        "resourceNames": ["a"],
    }
    assert rule_allows(named, Request("get", "clusterqueues", "kueue.x-k8s.io", None, "a"))
    assert not rule_allows(named, Request("get", "clusterqueues", "kueue.x-k8s.io", None, "b"))
    assert not rule_allows(named, Request("list", "clusterqueues", "kueue.x-k8s.io", None)), "unnamed list"
    urls = {"nonResourceURLs": ["/metrics", "/api/*"], "verbs": ["get"]}
    assert rule_allows(urls, Request("get", non_resource_url="/api/v1"))
    assert not rule_allows(urls, Request("get", non_resource_url="/metricsx"))


def test_a_known_permissive_binding_is_reported_allowed() -> None:
    ns = "hyperpod-ns-a"
    who = Subject("mallory", ("team-a",))
    rb = _binding("oops", ADMIN["metadata"]["name"], _group("team-a"), namespace=ns)
    authz = Authorizer([ADMIN, rb])
    assert authz.can(who, "patch", "networkpolicies", group="networking.k8s.io", namespace=ns)
    assert authz.can(who, "escalate", "roles", group="rbac.authorization.k8s.io", namespace=ns)
    assert authz.check(who, Request("delete", "resourcequotas", "", ns)).via == [
        "RoleBinding/hyperpod-ns-a/oops"
    ]
    # a RoleBinding to a ClusterRole stays confined to its namespace
    assert not authz.can(
        who, "patch", "networkpolicies", group="networking.k8s.io", namespace="hyperpod-ns-b"
    )
    assert not authz.can(who, "create", "clusterroles", group="rbac.authorization.k8s.io")
    crb = _binding("worse", ADMIN["metadata"]["name"], _group("team-a"))
    authz = Authorizer([ADMIN, crb])
    assert authz.can(who, "patch", "networkpolicies", group="networking.k8s.io", namespace="hyperpod-ns-b")
    assert authz.can(who, "create", "clusterroles", group="rbac.authorization.k8s.io")
    assert authz.check(who, Request("get", non_resource_url="/metrics")).allowed
    # nobody else
    assert not authz.can(Subject("bob", ("team-b",)), "get", "pods", namespace="hyperpod-ns-b")


def test_subjects_roles_and_aggregation() -> None:
    reader = _role("Role", "reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}], "ns1")
    sa = [{"kind": "ServiceAccount", "name": "bot", "namespace": "ns1"}]
    user = [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "carol"}]
    rb_sa = _binding("sa", "reader", sa, namespace="ns1", role_kind="Role")
    rb_user = _binding("u", "reader", user, namespace="ns2", role_kind="Role")  # no Role 'reader' in ns2
    agg = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "agg"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x/aggregate": "true"}}]},
        "rules": [],
    }
    part = _role("ClusterRole", "part", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])
    part["metadata"]["labels"] = {"x/aggregate": "true"}
    crb = _binding("agg", "agg", [{"kind": "Group", "name": "system:serviceaccounts:ns1"}])
    authz = Authorizer([reader, rb_sa, rb_user, agg, part, crb])
    bot = Subject("system:serviceaccount:ns1:bot")
    assert authz.can(bot, "get", "pods", namespace="ns1")
    assert not authz.can(Subject("system:serviceaccount:ns2:bot"), "get", "pods", namespace="ns1")
    assert not authz.can(Subject("carol"), "get", "pods", namespace="ns2")
    assert authz.can(bot, "list", "configmaps", namespace="ns7"), "aggregated rule via service-account group"
    # bootstrap: every authenticated user may ask what it may do, and nothing more
    anyone = Subject("dave")
    assert authz.can(anyone, "create", "selfsubjectaccessreviews", group="authorization.k8s.io")
    assert not authz.can(anyone, "get", "pods", namespace="ns1")


def test_isolation_checks_are_not_vacuous() -> None:
    # the same checks that pass on the rendered objects fail once a permissive binding is added
    platform = platforms.reference_platform()
    team = platform.teams[0]
    ns = names.namespace(team.name)
    objects = platforms.all_objects(platform)
    leaky = _binding("oops", "all-powerful", _group(names.kubernetes_group(team.name)), namespace=ns)
    violations = denied_violations(Authorizer([*objects, ADMIN, leaky]), platform, team)
    assert any("patch networking.k8s.io/networkpolicies -n " + ns in v for v in violations)
    assert not any(f"-n {names.namespace(platform.teams[1].name)}" in v for v in violations), "confined"
    # a ClusterRole that reads every ClusterQueue is caught as cross-team
    wide = copy.deepcopy(objects)
    for o in wide:
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].endswith(f"-{team.name}-queue-reader"):
            del o["rules"][0]["resourceNames"]
    violations = denied_violations(Authorizer(wide), platform, team)
    assert any(names.cluster_queue(platform.teams[1].name) in v for v in violations)
    # a Role missing a rule is caught as a gap
    narrow = [o for o in objects if not (o["kind"] == "Role" and o["metadata"]["namespace"] == ns)]
    assert allowed_gaps(Authorizer(narrow), team)


# --- the rendered RBAC ------------------------------------------------------------------------------------

PLATFORMS = platforms.TENANT_PLATFORMS


@pytest.fixture(scope="module", params=sorted(PLATFORMS))
def rendered(request: pytest.FixtureRequest) -> tuple[Platform, Authorizer, list[dict[str, Any]]]:
    platform = PLATFORMS[request.param]()
    objects = platforms.all_objects(platform)
    return platform, Authorizer(objects), objects


def test_team_members_can_do_their_work(rendered: tuple[Platform, Authorizer, list[dict[str, Any]]]) -> None:
    platform, authz, _ = rendered
    for team in platform.teams:
        assert allowed_gaps(authz, team) == [], team.name


def test_nothing_loosens_isolation(rendered: tuple[Platform, Authorizer, list[dict[str, Any]]]) -> None:
    platform, authz, _ = rendered
    for team in platform.teams:
        assert denied_violations(authz, platform, team) == [], team.name


def test_only_inference_teams_manage_deployments(
    rendered: tuple[Platform, Authorizer, list[dict[str, Any]]],
) -> None:
    platform, authz, _ = rendered
    for team in platform.teams:
        can = authz.can(
            member(team), "create", "deployments", group="apps", namespace=names.namespace(team.name)
        )
        assert can is (team.workload is WorkloadKind.INFERENCE), team.name


def test_rules_have_no_wildcards_or_privilege_verbs(
    rendered: tuple[Platform, Authorizer, list[dict[str, Any]]],
) -> None:
    _, _, objects = rendered
    roles = [o for o in objects if o["kind"] in {"Role", "ClusterRole"}]
    assert roles
    for role in roles:
        for rule in role["rules"]:
            for key in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(key, []), (role["metadata"]["name"], rule)
            assert not {"bind", "escalate", "impersonate"} & set(rule["verbs"])
            assert "nonResourceURLs" not in rule
        if role["kind"] == "ClusterRole":
            assert all(set(r["verbs"]) <= {"get", "list", "watch"} for r in role["rules"]), (
                "cluster-wide is read-only"
            )


def test_bindings_name_only_the_team_group(
    rendered: tuple[Platform, Authorizer, list[dict[str, Any]]],
) -> None:
    platform, _, objects = rendered
    for team in platform.teams:
        bindings = [
            o
            for o in objects
            if o["kind"] in {"RoleBinding", "ClusterRoleBinding"}
            and o["metadata"]["labels"].get("hyperpod-tenancy.io/team") == team.name
        ]
        assert {b["kind"] for b in bindings} == {"RoleBinding", "ClusterRoleBinding"}
        for b in bindings:
            assert b["subjects"] == _group(names.kubernetes_group(team.name))
            if b["kind"] == "RoleBinding":
                assert b["metadata"]["namespace"] == names.namespace(team.name)
                assert b["roleRef"] == {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "Role",
                    "name": TEAM_ROLE_NAME,
                }


def test_workload_service_account_has_no_permissions(
    rendered: tuple[Platform, Authorizer, list[dict[str, Any]]],
) -> None:
    platform, authz, objects = rendered
    for team in platform.teams:
        ns = names.namespace(team.name)
        sa = next(o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["namespace"] == ns)
        who = Subject(f"system:serviceaccount:{ns}:{sa['metadata']['name']}")
        for verb in VERBS:
            for group, resource, _ in MEMBER_ALLOWED:
                assert not authz.can(who, verb, resource, group=group, namespace=ns)
