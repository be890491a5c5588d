"""What a guardrail is, what a policy rule adds to it, and the engine that runs rules in registry order.

A :class:`Guardrail` documents one silent failure the platform prevents: its stable code, where it is
enforced (:class:`Stage`), how hard (:class:`Severity`), its :class:`Domain` and two one-line texts for the
guardrail table (docs/guardrails.md). A :class:`Rule` is a guardrail of the policy layer that also carries
its check. Checks yield
:class:`Finding` objects (path, message, fix); the rule stamps its own code on them, so a rule can only
report under its code.

Rules are scoped (:class:`Scope`): a platform rule runs once, an instance-group rule once per instance group,
a team-quota rule once per quota entry of each team. :func:`run_rules` walks the registry in order and runs
consecutive rules of one scope in one loop over that scope's elements, so the registry's order is the order
of the reported issues (``for each team: name, duplicate, quotas, ...``), exactly as a hand-written
validator nests its loops.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias, TypeVar

from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.policy.model import InstanceGroup, Platform, PriorityClass, ResourceAmount, Team

__all__ = [
    "Domain",
    "Finding",
    "Guardrail",
    "Rule",
    "Scope",
    "Severity",
    "Stage",
    "group_rule",
    "platform_rule",
    "priority_class_rule",
    "run_rules",
    "team_quota_rule",
    "team_rule",
]


class Severity(enum.Enum):
    """How a guardrail reacts: an error stops synthesis (or admission), a warning is shown and acknowledged."""

    ERROR = "error"
    WARNING = "warning"


class Stage(enum.Enum):
    """When a guardrail acts."""

    #: Reading ``platform.yaml`` (syntax, keys, types).
    LOAD = "load"
    #: The policy rules: ``hyperpod-tenancy validate`` and every synthesis.
    POLICY = "policy"
    #: A change against the deployed policy (``hyperpod-tenancy validate --baseline``, or ``baseline=`` of
    #: ``PlatformStage`` at synth).
    BASELINE = "baseline"
    #: A construct validation at ``cdk synth`` (documentation here; the construct keeps its check).
    SYNTH = "synth"
    #: A ValidatingAdmissionPolicy on the cluster (documentation here; ``code`` is the policy's name).
    ADMISSION = "admission"
    #: A check of the running platform that logs the code and raises an alert (documentation here).
    RUNTIME = "runtime"


class Domain(enum.Enum):
    """What a guardrail protects; the guardrail table (docs/guardrails.md) is grouped by domain in this order."""

    CAPACITY = "capacity"
    SCHEDULING = "scheduling"
    IDENTITY = "identity"
    NETWORKING = "networking"
    STORAGE = "storage"
    SECURITY = "security"
    NAMING = "naming"
    DEPLOYMENT = "deployment"
    CHARGEBACK = "chargeback"


class Scope(enum.Enum):
    """The elements a rule is checked on; the value is the chain of nested loops, outermost first."""

    PLATFORM = ()
    INSTANCE_GROUP = ("instanceGroups",)
    PRIORITY_CLASS = ("priorityClasses",)
    TEAM = ("teams",)
    TEAM_QUOTA = ("teams", "quotas")


#: Index of the element a scoped rule is checked on: list positions, and the instance type of a quota entry.
Key: TypeAlias = int | str


def _elements(level: str, platform: Platform, bound: tuple[Key, ...]) -> Sequence[Key]:
    if level == "instanceGroups":
        return range(len(platform.cluster.instance_groups))
    if level == "priorityClasses":
        return range(len(platform.scheduling.priority_classes))
    if level == "teams":
        return range(len(platform.teams))
    team = platform.teams[int(bound[-1])]  # level "quotas", inside a team
    return list(team.compute.quotas)


@dataclass(frozen=True)
class Finding:
    """One problem a check found; its rule adds the code.

    Attributes:
        path: YAML path of the bad value.
        message: what is wrong, quoting the bad value.
        fix: how to fix it.

    """

    path: str
    message: str
    fix: str


@dataclass(frozen=True, kw_only=True)
class Guardrail:
    """One silent failure the platform prevents, as the guardrail table of docs/guardrails.md lists it.

    Attributes:
        code: stable identifier (``HPT-...``; for admission policies the policy's name).
        stage: when it acts.
        severity: error or warning.
        domain: what it protects.
        failure: the failure it prevents, one line.
        guardrail: what the platform does about it, one line.

    """

    code: str
    stage: Stage
    severity: Severity
    domain: Domain
    failure: str
    guardrail: str


_INDEX = re.compile(r"\[\*\]")


@dataclass(frozen=True, kw_only=True)
class Rule(Guardrail):
    """A guardrail of the policy layer: a guardrail plus its check.

    Attributes:
        name: short identifier of the rule (its function's name).
        scope: the elements it is checked on.
        at: pattern of the paths it reports at; ``[*]`` stands for the index of the checked element.
        reads: the fields it reads besides the path it reports at (cross-references), as YAML paths. ``[*]``
            at a list of the reported path means the reported element; at any other list it means every
            element. The loader drops an issue when its path or one of these failed to parse (see
            :meth:`inputs`), so a bad value is reported once, not again by the rules that read it.
        check: yields the findings for one element (see the ``*_rule`` decorators).

    """

    name: str
    scope: Scope
    at: str
    reads: tuple[str, ...]
    check: Callable[[Platform, tuple[Key, ...]], Iterable[Finding]] = field(repr=False, compare=False)

    def issues(self, platform: Platform, bound: tuple[Key, ...] = ()) -> Iterator[PolicyIssue]:
        """Check one element and yield its issues under this rule's code.

        Args:
            platform: the policy.
            bound: the element's keys, one per loop of :attr:`scope` (empty for a platform rule).

        Yields:
            One issue per finding.

        """
        for f in self.check(platform, bound):
            yield PolicyIssue(f.path, f.message, f.fix, self.code)

    def reports(self, path: str) -> bool:
        """Whether an issue at ``path`` comes from this rule's :attr:`at` (with ``[*]`` any index or ``*``)."""
        return self._bind(path) is not None

    def inputs(self, path: str) -> tuple[str, ...]:
        """Return the fields besides ``path`` this rule read to report an issue at ``path``, as concrete YAML paths.

        ``[*]`` at the reported element's lists becomes that element's index; at other lists the path stops
        before the ``[*]`` (the whole list).

        Args:
            path: the path of an issue this rule reported.

        Returns:
            The read fields (empty when ``path`` is not one of this rule's).

        """
        bound = self._bind(path)
        if bound is None:
            return ()
        out: list[str] = []
        for read in self.reads:
            parts = _INDEX.split(read)
            concrete = parts[0]
            for i, rest in enumerate(parts[1:]):
                prefix = "[*]".join(parts[: i + 1])
                if prefix not in bound:
                    break
                concrete += f"[{bound[prefix]}]" + rest
            out.append(concrete)
        return tuple(out)

    def _bind(self, path: str) -> dict[str, str] | None:
        parts = _INDEX.split(self.at)
        regex = r"\[(\d+|\*)\]".join(re.escape(p) for p in parts)
        match = re.match(f"{regex}(?=$|[.\\[])", path)
        if match is None:
            return None
        return {"[*]".join(parts[: i + 1]): index for i, index in enumerate(match.groups())}


def run_rules(rules: Sequence[Rule], platform: Platform) -> list[PolicyIssue]:
    """Run ``rules`` in order; consecutive rules of one scope share one loop over its elements.

    Args:
        rules: the rules, in the order their issues are reported.
        platform: the policy.

    Returns:
        Every issue found.

    """
    out: list[PolicyIssue] = []
    _run(rules, platform, (), out)
    return out


def _run(rules: Sequence[Rule], platform: Platform, bound: tuple[Key, ...], out: list[PolicyIssue]) -> None:
    depth = len(bound)

    def level(rule: Rule) -> str | None:
        return rule.scope.value[depth] if len(rule.scope.value) > depth else None

    for key, block in itertools.groupby(rules, key=level):
        run = list(block)
        if key is None:
            for rule in run:
                out.extend(rule.issues(platform, bound))
            continue
        for element in _elements(key, platform, bound):
            _run(run, platform, (*bound, element), out)


def admission_guardrail(*, code: str, domain: Domain, failure: str, guardrail: str) -> Guardrail:
    """Document a ValidatingAdmissionPolicy as a guardrail (``code`` is the policy's name; no policy check)."""
    return Guardrail(
        code=code,
        stage=Stage.ADMISSION,
        severity=Severity.ERROR,
        domain=domain,
        failure=failure,
        guardrail=guardrail,
    )


# --- decorators turning a typed check into a Rule -------------------------------------------------------

PlatformCheck: TypeAlias = Callable[[Platform], Iterable[Finding]]
GroupCheck: TypeAlias = Callable[[Platform, int, InstanceGroup], Iterable[Finding]]
PriorityClassCheck: TypeAlias = Callable[[Platform, int, PriorityClass], Iterable[Finding]]
TeamCheck: TypeAlias = Callable[[Platform, int, Team], Iterable[Finding]]
TeamQuotaCheck: TypeAlias = Callable[[Platform, int, Team, str, int | ResourceAmount], Iterable[Finding]]
_Item = TypeVar("_Item", InstanceGroup, PriorityClass, Team)


@dataclass(frozen=True, kw_only=True)
class _Meta:
    code: str
    domain: Domain
    at: str
    reads: tuple[str, ...]
    failure: str
    guardrail: str
    severity: Severity

    def rule(
        self, name: str, scope: Scope, check: Callable[[Platform, tuple[Key, ...]], Iterable[Finding]]
    ) -> Rule:
        return Rule(
            code=self.code,
            stage=Stage.POLICY,
            severity=self.severity,
            domain=self.domain,
            failure=self.failure,
            guardrail=self.guardrail,
            name=name,
            scope=scope,
            at=self.at,
            reads=self.reads,
            check=check,
        )


def platform_rule(
    *,
    code: str,
    domain: Domain,
    at: str,
    reads: tuple[str, ...],
    failure: str,
    guardrail: str,
    severity: Severity = Severity.ERROR,
) -> Callable[[PlatformCheck], Rule]:
    """Make a rule checked once per platform from ``check(platform)`` (arguments: see :class:`Rule`)."""
    meta = _Meta(
        code=code, domain=domain, at=at, reads=reads, failure=failure, guardrail=guardrail, severity=severity
    )

    def wrap(check: PlatformCheck) -> Rule:
        return meta.rule(check.__name__, Scope.PLATFORM, lambda p, _bound: check(p))

    return wrap


def _indexed_rule(
    scope: Scope, items: Callable[[Platform], Sequence[_Item]], meta: _Meta
) -> Callable[[Callable[[Platform, int, _Item], Iterable[Finding]]], Rule]:
    """Return a decorator: a rule checked per element of ``items(platform)`` by ``check(platform, i, item)``."""

    def wrap(check: Callable[[Platform, int, _Item], Iterable[Finding]]) -> Rule:
        def run(p: Platform, bound: tuple[Key, ...]) -> Iterable[Finding]:
            i = int(bound[0])
            return check(p, i, items(p)[i])

        return meta.rule(check.__name__, scope, run)

    return wrap


def group_rule(
    *,
    code: str,
    domain: Domain,
    at: str,
    reads: tuple[str, ...],
    failure: str,
    guardrail: str,
    severity: Severity = Severity.ERROR,
) -> Callable[[GroupCheck], Rule]:
    """Make a rule checked per instance group from ``check(platform, index, group)``."""
    meta = _Meta(
        code=code, domain=domain, at=at, reads=reads, failure=failure, guardrail=guardrail, severity=severity
    )
    return _indexed_rule(Scope.INSTANCE_GROUP, lambda p: p.cluster.instance_groups, meta)


def priority_class_rule(
    *,
    code: str,
    domain: Domain,
    at: str,
    reads: tuple[str, ...],
    failure: str,
    guardrail: str,
    severity: Severity = Severity.ERROR,
) -> Callable[[PriorityClassCheck], Rule]:
    """Make a rule checked per priority class from ``check(platform, index, priority_class)``."""
    meta = _Meta(
        code=code, domain=domain, at=at, reads=reads, failure=failure, guardrail=guardrail, severity=severity
    )
    return _indexed_rule(Scope.PRIORITY_CLASS, lambda p: p.scheduling.priority_classes, meta)


def team_rule(
    *,
    code: str,
    domain: Domain,
    at: str,
    reads: tuple[str, ...],
    failure: str,
    guardrail: str,
    severity: Severity = Severity.ERROR,
) -> Callable[[TeamCheck], Rule]:
    """Make a rule checked per team from ``check(platform, index, team)``."""
    meta = _Meta(
        code=code, domain=domain, at=at, reads=reads, failure=failure, guardrail=guardrail, severity=severity
    )
    return _indexed_rule(Scope.TEAM, lambda p: p.teams, meta)


def team_quota_rule(
    *,
    code: str,
    domain: Domain,
    at: str,
    reads: tuple[str, ...],
    failure: str,
    guardrail: str,
    severity: Severity = Severity.ERROR,
) -> Callable[[TeamQuotaCheck], Rule]:
    """Make a rule checked per quota entry of each team from ``check(platform, index, team, type, count)``."""
    meta = _Meta(
        code=code, domain=domain, at=at, reads=reads, failure=failure, guardrail=guardrail, severity=severity
    )

    def wrap(check: TeamQuotaCheck) -> Rule:
        def run(p: Platform, bound: tuple[Key, ...]) -> Iterable[Finding]:
            i, itype = int(bound[0]), str(bound[1])
            team = p.teams[i]
            return check(p, i, team, itype, team.compute.quotas[itype])

        return meta.rule(check.__name__, Scope.TEAM_QUOTA, run)

    return wrap
