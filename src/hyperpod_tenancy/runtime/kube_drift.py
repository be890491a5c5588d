"""The drift audit's Kubernetes checks, shared by ``hyperpod-tenancy audit`` and the daily Lambda.

Each team's expectation (:class:`KubeExpectation`) is the platform's own rendering: the namespace labels
(:func:`hyperpod_tenancy.k8s.labels.namespace_labels`) and the RoleBindings, ClusterRoleBindings, ResourceQuotas
and LimitRanges of the team's chart (:class:`hyperpod_tenancy.k8s.team_chart.TeamChart`, what ``TeamTenant``
applies). The command line renders it from ``platform.yaml``; each team stack writes the same rendering to its
Kubernetes audit record (SSM, under ``/hyperpod-tenancy/<cluster>/drift-audit-kubernetes/``), which the daily
Lambda reads, so the scheduled check lists no team and compares with what was deployed. Checked
(:func:`kube_findings`):

* every team namespace exists and carries each expected label with its value (without the tenancy label the
  admission policies no longer select it);
* RoleBindings in a team namespace: the rendered ones unchanged (subjects, role), and no other binding whose
  subjects are not :func:`expected_subject` (``system:`` users and groups other than the broad ones, service
  accounts of ``kube-system`` and of the platform's namespaces);
* ClusterRoleBindings: the rendered ones unchanged, and no other binding reaching a team: a subject that is a
  team's group, a service account of a team namespace, ``system:serviceaccounts:<team namespace>``, or one of the
  broad groups (``system:authenticated``, ``system:serviceaccounts``, ``system:unauthenticated``) bound to a
  ClusterRole that is not a ``system:`` or ``eks:`` one (the bootstrap roles Kubernetes and EKS bind to them:
  Kubernetes "Using RBAC Authorization", "Default roles and role bindings"; the ``eks:`` ones are not confirmed
  one by one);
* ResourceQuotas and LimitRanges of the chart: present, and the same ``spec``, quantities compared by value
  (:func:`parse_quantity`: the API server may write ``1`` for ``1000m``).

The live objects come from cluster-wide lists (:data:`LIST_PATHS`, :func:`read_live`): the caller supplies the
lister (the command line the official client with the user's kubeconfig, the Lambda
:func:`hyperpod_tenancy.runtime.kube_api.list_objects` with an EKS token). Only the standard library is imported:
the module runs as-is on the Lambda Python runtime.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from hyperpod_tenancy.runtime.audit_findings import AuditError, Finding, check_version

__all__ = [
    "AUDITED_KINDS",
    "BROAD_GROUPS",
    "KUBE_SCHEMA_VERSION",
    "LIST_PATHS",
    "KubeExpectation",
    "LiveCluster",
    "expected_subject",
    "kube_findings",
    "parse_quantity",
    "read_live",
]

#: Version of the Kubernetes audit record format; a record of another version is reported, not guessed at.
KUBE_SCHEMA_VERSION = 1
#: The kinds of a team's chart the audit compares.
AUDITED_KINDS = ("RoleBinding", "ClusterRoleBinding", "ResourceQuota", "LimitRange")
#: The cluster-wide list of each kind read (Kubernetes API reference: core/v1, rbac.authorization.k8s.io/v1).
LIST_PATHS = {
    "Namespace": "/api/v1/namespaces",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/rolebindings",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "ResourceQuota": "/api/v1/resourcequotas",
    "LimitRange": "/api/v1/limitranges",
}
#: Groups every (authenticated) caller or every service account is in: binding them reaches every team.
BROAD_GROUPS = frozenset({"system:authenticated", "system:unauthenticated", "system:serviceaccounts"})
#: ClusterRoles a broad group may be bound to (Kubernetes' and EKS's bootstrap roles).
_SYSTEM_ROLE_PREFIXES = ("system:", "eks:")
#: A Kubernetes quantity: a signed decimal number, then a binary or decimal SI suffix or an exponent
#: (``k8s.io/apimachinery/pkg/api/resource`` ``Quantity``).
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


def parse_quantity(value: object) -> Decimal:
    """Return a Kubernetes quantity (``"1000m"``, ``"1Gi"``, ``"2e3"``, ``4``) as an exact :class:`Decimal`.

    Raises:
        ValueError: ``value`` is not a quantity.

    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"not a quantity: {value!r}")
    if not isinstance(value, str):
        return Decimal(str(value))
    match = _QUANTITY.match(value.strip())
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number = Decimal(match.group(1))
    suffix = match.group(2) or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:])) if suffix else number


def _normal(value: Any) -> Any:
    """Return ``value`` with every quantity as a number (``None`` entries dropped), for comparing specs."""
    if isinstance(value, Mapping):
        return {str(k): _normal(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_normal(v) for v in value]
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        try:
            return parse_quantity(value)
        except ValueError:
            return value
    return value


@dataclass(frozen=True, kw_only=True)
class LiveCluster:
    """The objects read from the cluster (as the API's JSON), by kind."""

    namespaces: Sequence[Mapping[str, Any]] = ()
    objects: Mapping[str, Sequence[Mapping[str, Any]]] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class KubeExpectation:
    """What a team's chart declares in the cluster (see the module docstring).

    Attributes:
        team, stack: the team and its CloudFormation stack (the fixes name it).
        namespace: the team's namespace.
        kubernetes_group: the group its people's access entries map to.
        labels: every label the namespace must carry, with its value.
        objects: the chart's manifests of :data:`AUDITED_KINDS`.

    """

    team: str
    stack: str
    namespace: str
    kubernetes_group: str
    labels: Mapping[str, str]
    objects: Sequence[Mapping[str, Any]]

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> KubeExpectation:
        """Read a Kubernetes audit record (:meth:`to_record`'s JSON object).

        Raises:
            AuditError: the record is of another schema version or lacks a field.

        """
        check_version(record, KUBE_SCHEMA_VERSION, what="Kubernetes audit record")
        try:
            return cls(
                team=str(record["team"]),
                stack=str(record["stack"]),
                namespace=str(record["namespace"]),
                kubernetes_group=str(record["kubernetesGroup"]),
                labels={str(k): str(v) for k, v in dict(record["labels"]).items()},
                objects=[dict(m) for m in record["objects"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AuditError(
                f"Kubernetes audit record of team {record.get('team')!r} is incomplete ({exc}): redeploy the "
                "team stack"
            ) from None

    def to_record(self) -> dict[str, Any]:
        """Return the Kubernetes audit record the team stack writes."""
        return {
            "schemaVersion": KUBE_SCHEMA_VERSION,
            "team": self.team,
            "stack": self.stack,
            "namespace": self.namespace,
            "kubernetesGroup": self.kubernetes_group,
            "labels": dict(self.labels),
            "objects": [dict(m) for m in self.objects],
        }


def _finding_kind(kind: str, what: str) -> str:
    """Return the finding kind of ``what`` happened to an object of ``kind``: ``rolebinding-edited`` and so on."""
    return "-".join((kind.lower(), what))


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name"))


def _subjects(binding: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    return sorted(
        (str(s.get("kind")), str(s.get("name")), str(s.get("namespace") or ""))
        for s in binding.get("subjects") or []
    )


def _role_ref(binding: Mapping[str, Any]) -> tuple[str, str]:
    ref = binding.get("roleRef") or {}
    return str(ref.get("kind")), str(ref.get("name"))


def _subject_text(subject: tuple[str, str, str]) -> str:
    kind, name, namespace = subject
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _grant_text(binding: Mapping[str, Any]) -> str:
    return f"{'/'.join(_role_ref(binding))} to {', '.join(map(_subject_text, _subjects(binding)))}"


def expected_subject(
    subject: tuple[str, str, str], *, team_namespaces: frozenset[str], platform_namespaces: frozenset[str]
) -> bool:
    """Whether a subject of an undeclared binding is the cluster's or the platform's own (no finding).

    ``system:`` users and groups other than :data:`BROAD_GROUPS` and a team's ``system:serviceaccounts:<ns>``;
    service accounts of ``platform_namespaces``.
    """
    kind, name, namespace = subject
    if kind == "ServiceAccount":
        return namespace in platform_namespaces
    if name in BROAD_GROUPS:
        return False
    if name.startswith("system:serviceaccounts:"):
        return name.removeprefix("system:serviceaccounts:") not in team_namespaces
    if name.startswith("system:serviceaccount:"):  # a service account named as a user
        return name.removeprefix("system:serviceaccount:").split(":")[0] in platform_namespaces
    return name.startswith("system:")


def _team_reached(
    subject: tuple[str, str, str], team_of_group: Mapping[str, str], team_of_ns: Mapping[str, str]
) -> str | None:
    """Return the team a subject belongs to: its group, a service account of its namespace, or that namespace's SAs."""
    kind, name, namespace = subject
    if kind == "ServiceAccount":
        return team_of_ns.get(namespace)
    if kind == "Group" and name.startswith("system:serviceaccounts:"):
        return team_of_ns.get(name.removeprefix("system:serviceaccounts:"))
    if kind == "User" and name.startswith("system:serviceaccount:"):
        return team_of_ns.get(name.removeprefix("system:serviceaccount:").split(":")[0])
    return team_of_group.get(name) if kind == "Group" else None


def _apply(manifest: Mapping[str, Any]) -> str:
    return f"echo {shlex.quote(json.dumps(manifest, sort_keys=True, separators=(',', ':')))} | kubectl apply -f -"


def _namespace_findings(
    expectations: Sequence[KubeExpectation], live: LiveCluster, *, tenant_label: str
) -> list[Finding]:
    findings: list[Finding] = []
    by_name = {_key(ns)[1]: ns for ns in live.namespaces}
    for exp in expectations:
        namespace = by_name.get(exp.namespace)
        if namespace is None:
            findings.append(
                Finding(
                    kind="namespace-missing",
                    team=exp.team,
                    object=f"Namespace {exp.namespace}",
                    expected="the team's namespace",
                    actual="none",
                    fix=f"cdk deploy {exp.stack}",
                )
            )
            continue
        have = (namespace.get("metadata") or {}).get("labels") or {}
        wrong = {k: v for k, v in sorted(exp.labels.items()) if have.get(k) != v}
        if wrong:
            tenancy = " (without it the admission policies do not apply)" if tenant_label in wrong else ""
            findings.append(
                Finding(
                    kind="namespace-label",
                    team=exp.team,
                    object=f"Namespace {exp.namespace}",
                    expected=", ".join(f"{k}={v}" for k, v in wrong.items()),
                    actual=", ".join(f"{k}={have[k]}" if k in have else f"{k} missing" for k in wrong)
                    + tenancy,
                    fix=f"kubectl label namespace {exp.namespace} --overwrite "
                    + " ".join(shlex.quote(f"{k}={v}") for k, v in wrong.items()),
                )
            )
    return findings


def _declared_binding_findings(
    kind: str, declared: Mapping[tuple[str, str], tuple[str, Mapping[str, Any]]], seen: Mapping[Any, Any]
) -> list[Finding]:
    findings: list[Finding] = []
    for key, (team, manifest) in sorted(declared.items()):
        binding = seen.get(key)
        if binding is None:
            actual, what = "none", "missing"
        elif (_subjects(binding), _role_ref(binding)) != (_subjects(manifest), _role_ref(manifest)):
            actual, what = _grant_text(binding), "edited"
        else:
            continue
        findings.append(
            Finding(
                kind=_finding_kind(kind, what),
                team=team,
                object=f"{kind} {'/'.join(p for p in key if p)}",
                expected=_grant_text(manifest),
                actual=actual,
                fix=_apply(manifest),
            )
        )
    return findings


def _binding_findings(
    expectations: Sequence[KubeExpectation], live: LiveCluster, *, platform_namespaces: frozenset[str]
) -> list[Finding]:
    findings: list[Finding] = []
    team_of_ns = {e.namespace: e.team for e in expectations}
    team_of_group = {e.kubernetes_group: e.team for e in expectations}
    team_namespaces = frozenset(team_of_ns)
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        declared = {_key(m): (e.team, m) for e in expectations for m in e.objects if m.get("kind") == kind}
        seen = {_key(b): b for b in live.objects.get(kind, ())}
        findings += _declared_binding_findings(kind, declared, seen)
        for key, binding in sorted(seen.items()):
            if key in declared:
                continue
            namespace, name = key
            subjects = _subjects(binding)
            role = _role_ref(binding)
            if kind == "RoleBinding":
                owner = team_of_ns.get(namespace)
                if owner is None:
                    continue
                team = owner
                extra = [
                    s
                    for s in subjects
                    if not expected_subject(
                        s, team_namespaces=team_namespaces, platform_namespaces=platform_namespaces
                    )
                ]
            else:
                extra = [
                    s
                    for s in subjects
                    if _team_reached(s, team_of_group, team_of_ns)
                    or (s[1] in BROAD_GROUPS and not role[1].startswith(_SYSTEM_ROLE_PREFIXES))
                ]
                reached = sorted({_team_reached(s, team_of_group, team_of_ns) or "" for s in extra})
                team = ", ".join(t for t in reached if t) or "every team"
            if not extra:
                continue
            where = f" -n {namespace}" if namespace else ""
            findings.append(
                Finding(
                    kind=_finding_kind(kind, "undeclared"),
                    team=team,
                    object=f"{kind} {'/'.join(p for p in key if p)}",
                    expected="no binding the platform does not declare for team subjects"
                    if kind == "ClusterRoleBinding"
                    else f"only the team's own bindings in {namespace}",
                    actual=f"{'/'.join(role)} granted to {', '.join(map(_subject_text, extra))}",
                    fix=f"kubectl delete {kind.lower()} {name}{where} (grant access through platform.yaml)",
                )
            )
    return findings


def _spec_findings(expectations: Sequence[KubeExpectation], live: LiveCluster) -> list[Finding]:
    findings: list[Finding] = []
    for kind in ("ResourceQuota", "LimitRange"):
        seen = {_key(o): o for o in live.objects.get(kind, ())}
        for exp in sorted(expectations, key=lambda e: e.team):
            for manifest in exp.objects:
                if manifest.get("kind") != kind:
                    continue
                key = _key(manifest)
                obj = seen.get(key)
                spec = manifest.get("spec") or {}
                if obj is not None and _normal(obj.get("spec") or {}) == _normal(spec):
                    continue
                findings.append(
                    Finding(
                        kind=_finding_kind(kind, "missing" if obj is None else "edited"),
                        team=exp.team,
                        object=f"{kind} {key[0]}/{key[1]}",
                        expected=json.dumps(spec, sort_keys=True),
                        actual="none" if obj is None else json.dumps(obj.get("spec"), sort_keys=True),
                        fix=_apply(manifest),
                    )
                )
    return findings


def kube_findings(
    expectations: Sequence[KubeExpectation],
    live: LiveCluster,
    *,
    platform_namespaces: frozenset[str],
    tenant_label: str,
) -> list[Finding]:
    """Every Kubernetes finding of ``live`` against the teams' ``expectations``.

    Args:
        expectations: each audited team's expectation.
        live: what the cluster holds.
        platform_namespaces: namespaces whose service accounts are the cluster's and the platform's own.
        tenant_label: the namespace label the admission policies select tenant namespaces by.

    """
    return (
        _namespace_findings(expectations, live, tenant_label=tenant_label)
        + _binding_findings(expectations, live, platform_namespaces=platform_namespaces)
        + _spec_findings(expectations, live)
    )


def read_live(list_kind: Callable[[str, str], Sequence[Mapping[str, Any]]]) -> LiveCluster:
    """Read every audited kind with ``list_kind(kind, path)`` (each :data:`LIST_PATHS` entry, all pages)."""
    found = {kind: list(list_kind(kind, path)) for kind, path in LIST_PATHS.items()}
    return LiveCluster(namespaces=found.pop("Namespace"), objects=found)
