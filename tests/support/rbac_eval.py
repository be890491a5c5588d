"""A small offline Kubernetes RBAC authorizer: "can-i" over manifest dicts, no API server.

Matching follows upstream ``pkg/apis/rbac/v1/evaluation_helpers.go`` and the RBAC authorizer
(``plugin/pkg/auth/authorizer/rbac``):

* a rule matches when its verbs, apiGroups, resources and resourceNames all match; ``*`` matches any verb,
  group or resource; a request for a subresource (``pods/log``) is matched by ``pods/log``, ``*/log`` or
  ``*`` but **not** by ``pods``; non-empty ``resourceNames`` match only requests that name one of them
  (a ``list`` or ``create`` without a name never matches);
* non-resource URLs match exactly or by a trailing ``*`` prefix, and only through ClusterRoleBindings;
* a RoleBinding grants its Role or ClusterRole **only inside the binding's namespace**; a
  ClusterRoleBinding grants its ClusterRole in every namespace and for cluster-scoped requests;
* subjects: ``User`` by name, ``Group`` by membership, ``ServiceAccount`` as user
  ``system:serviceaccount:<ns>:<name>`` (whose groups are ``system:serviceaccounts`` and
  ``system:serviceaccounts:<ns>``);
* ClusterRoles with an ``aggregationRule`` get the rules of every ClusterRole whose labels match.

RBAC is purely additive, so "denied" means no binding grants the request.

``tests/test_cluster_rbac.py`` asks the real API server (SubjectAccessReview) every cell of the matrix the RBAC
suites rely on, with the platform applied, and fails on any verdict that differs from this model's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

Manifest = Mapping[str, Any]

# Bootstrap policy every cluster has (kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy), bound
# to ``system:authenticated``: so that tests judge a tenant with the permissions it really gets, not
# only with ours.
BOOTSTRAP: tuple[dict[str, Any], ...] = (
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:basic-user"},
        "rules": [
            {
                "apiGroups": ["authorization.k8s.io"],
                "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                "verbs": ["create"],
            },
            {
                "apiGroups": ["authentication.k8s.io"],
                "resources": ["selfsubjectreviews"],
                "verbs": ["create"],
            },
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:discovery"},
        "rules": [
            {
                "nonResourceURLs": [
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
                "verbs": ["get"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "system:public-info-viewer"},
        "rules": [
            {"nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}
        ],
    },
    *(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": role},
            "subjects": [
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:authenticated"}
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        }
        for role in ("system:basic-user", "system:discovery", "system:public-info-viewer")
    ),
)


@dataclass(frozen=True)
class Subject:
    """Who asks: a user name and its groups (``system:authenticated`` is added automatically)."""

    user: str
    groups: tuple[str, ...] = ()

    @property
    def all_groups(self) -> frozenset[str]:
        """Groups including the implicit ``system:authenticated`` (and service-account groups)."""
        groups = {*self.groups, "system:authenticated"}
        parts = self.user.split(":")
        if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
            groups |= {"system:serviceaccounts", f"system:serviceaccounts:{parts[2]}"}
        return frozenset(groups)


@dataclass(frozen=True)
class Request:
    """One API request, as the authorizer sees it.

    ``resource`` may carry a subresource (``pods/log``); ``namespace`` None means cluster scope.
    """

    verb: str
    resource: str = ""
    api_group: str = ""
    namespace: str | None = None
    name: str = ""
    non_resource_url: str = ""

    def __str__(self) -> str:
        if self.non_resource_url:
            return f"{self.verb} {self.non_resource_url}"
        group = f"{self.api_group}/" if self.api_group else ""
        where = f" -n {self.namespace}" if self.namespace else " (cluster)"
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {group}{self.resource}{named}{where}"


@dataclass
class Decision:
    """Outcome of :meth:`Authorizer.check`: allowed, and by which bindings."""

    allowed: bool
    via: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.allowed


def _match_any(patterns: Iterable[str], value: str) -> bool:
    return any(p in ("*", value) for p in patterns)


def resource_matches(rule: Manifest, resource: str) -> bool:
    """Upstream ``ResourceMatches``: ``*``, exact ``res/sub``, or ``*/sub`` for a subresource request."""
    sub = resource.split("/", 1)[1] if "/" in resource else ""
    for r in rule.get("resources") or ():
        if r in ("*", resource):
            return True
        if sub and r == f"*/{sub}":
            return True
    return False


def non_resource_url_matches(rule: Manifest, url: str) -> bool:
    """Upstream ``NonResourceURLMatches``: ``*``, the exact URL, or a ``prefix*``."""
    for pattern in rule.get("nonResourceURLs") or ():
        if pattern in ("*", url) or (pattern.endswith("*") and url.startswith(pattern[:-1])):
            return True
    return False


def rule_allows(rule: Manifest, req: Request) -> bool:
    """Whether one PolicyRule allows ``req`` (upstream ``RuleAllows``)."""
    if not _match_any(rule.get("verbs") or (), req.verb):
        return False
    if req.non_resource_url:
        return non_resource_url_matches(rule, req.non_resource_url)
    names = rule.get("resourceNames") or ()
    return (
        _match_any(rule.get("apiGroups") or (), req.api_group)
        and resource_matches(rule, req.resource)
        and (not names or req.name in names)
    )


class Authorizer:
    """RBAC over a set of manifests (Roles, ClusterRoles, RoleBindings, ClusterRoleBindings).

    Other kinds are ignored, so the full output of a renderer can be passed as is.
    """

    def __init__(self, manifests: Iterable[Manifest], *, bootstrap: bool = True) -> None:
        objs = [*manifests, *(BOOTSTRAP if bootstrap else ())]
        self.roles: dict[tuple[str, str], list[Manifest]] = {}
        self.cluster_roles: dict[str, Manifest] = {}
        self.role_bindings: list[Manifest] = []
        self.cluster_role_bindings: list[Manifest] = []
        for o in objs:
            kind, meta = o.get("kind"), o.get("metadata", {})
            if kind == "Role":
                self.roles[(meta["namespace"], meta["name"])] = list(o.get("rules") or ())
            elif kind == "ClusterRole":
                self.cluster_roles[meta["name"]] = o
            elif kind == "RoleBinding":
                self.role_bindings.append(o)
            elif kind == "ClusterRoleBinding":
                self.cluster_role_bindings.append(o)

    def cluster_role_rules(self, name: str) -> list[Manifest]:
        """Rules of a ClusterRole, including aggregated ones (empty if it does not exist)."""
        role = self.cluster_roles.get(name)
        if role is None:
            return []
        rules = list(role.get("rules") or ())
        for selector in (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or ():
            wanted = selector.get("matchLabels") or {}
            for other_name, other in self.cluster_roles.items():
                labels = other.get("metadata", {}).get("labels") or {}
                if other_name != name and all(labels.get(k) == v for k, v in wanted.items()):
                    rules += list(other.get("rules") or ())
        return rules

    @staticmethod
    def _binds(binding: Manifest, who: Subject) -> bool:
        groups = who.all_groups
        for s in binding.get("subjects") or ():
            kind = s.get("kind")
            if kind == "User" and s.get("name") == who.user:
                return True
            if kind == "Group" and s.get("name") in groups:
                return True
            if (
                kind == "ServiceAccount"
                and who.user == f"system:serviceaccount:{s.get('namespace')}:{s.get('name')}"
            ):
                return True
        return False

    def _ref_rules(self, ref: Manifest, namespace: str | None) -> list[Manifest]:
        if ref.get("kind") == "ClusterRole":
            return self.cluster_role_rules(ref["name"])
        if ref.get("kind") == "Role" and namespace is not None:
            return self.roles.get((namespace, ref["name"]), [])
        return []

    def check(self, who: Subject, req: Request) -> Decision:
        """Whether ``who`` may make ``req``, and through which bindings."""
        via: list[str] = []
        for crb in self.cluster_role_bindings:
            if self._binds(crb, who) and any(
                rule_allows(r, req) for r in self._ref_rules(crb["roleRef"], None)
            ):
                via.append(f"ClusterRoleBinding/{crb['metadata']['name']}")
        if req.namespace is not None and not req.non_resource_url:
            for rb in self.role_bindings:
                ns = rb["metadata"]["namespace"]
                if ns != req.namespace or not self._binds(rb, who):
                    continue
                if any(rule_allows(r, req) for r in self._ref_rules(rb["roleRef"], ns)):
                    via.append(f"RoleBinding/{ns}/{rb['metadata']['name']}")
        return Decision(bool(via), via)

    def can(
        self,
        who: Subject,
        verb: str,
        resource: str,
        *,
        group: str = "",
        namespace: str | None = None,
        name: str = "",
    ) -> bool:
        """Shorthand for ``check(who, Request(...)).allowed``."""
        return self.check(who, Request(verb, resource, group, namespace, name)).allowed
