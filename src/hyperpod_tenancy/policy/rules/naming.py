"""Naming rules: the names of the platform, cluster, instance groups, priority classes, teams and domains."""

from __future__ import annotations

import re
from collections.abc import Iterator

from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.model import InstanceGroup, Platform, PriorityClass, Team
from hyperpod_tenancy.policy.rules._base import (
    Domain,
    Finding,
    group_rule,
    platform_rule,
    priority_class_rule,
    team_rule,
)
from hyperpod_tenancy.policy.rules._common import DNS_LABEL, HYPERPOD_NAME, MAX_TEAM_NAME, valid_team_name

_PRIORITY_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9]){0,39}$")
_HYPERPOD_NAME_FIX = "use 1-63 letters, digits and hyphens, starting and ending with a letter or digit."


@platform_rule(
    code="HPT-NAME",
    domain=Domain.NAMING,
    at="name",
    reads=(),
    failure="stack and resource names derived from an unusable platform name",
    guardrail="`name` is a lowercase DNS label of at most 32 characters",
)
def platform_name(p: Platform) -> Iterator[Finding]:
    """Check that the platform name is a short lowercase DNS label."""
    if not DNS_LABEL.match(p.name) or len(p.name) > 32:
        yield Finding(
            "name",
            f"{p.name!r} is not a lowercase DNS label of at most 32 characters.",
            "use lowercase letters, digits and '-', e.g. `ml-platform`.",
        )


@platform_rule(
    code="HPT-NAME",
    domain=Domain.NAMING,
    at="cluster.name",
    reads=(),
    failure="a HyperPod cluster name SageMaker rejects",
    guardrail="`cluster.name` is 1-63 letters, digits and hyphens",
)
def cluster_name(p: Platform) -> Iterator[Finding]:
    """Check that the cluster name is a valid HyperPod cluster name."""
    if not HYPERPOD_NAME.match(p.cluster.name):
        yield Finding(
            "cluster.name", f"{p.cluster.name!r} is not a valid HyperPod cluster name.", _HYPERPOD_NAME_FIX
        )


@group_rule(
    code="HPT-NAME",
    domain=Domain.NAMING,
    at="cluster.instanceGroups[*].name",
    reads=(),
    failure="an instance group name SageMaker rejects",
    guardrail="instance group names are 1-63 letters, digits and hyphens",
)
def group_name(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that the instance group name is a valid HyperPod name."""
    if not HYPERPOD_NAME.match(g.name):
        yield Finding(
            f"cluster.instanceGroups[{i}].name",
            f"{g.name!r} is not a valid instance group name.",
            _HYPERPOD_NAME_FIX,
        )


@group_rule(
    code="HPT-DUPLICATE",
    domain=Domain.NAMING,
    at="cluster.instanceGroups[*].name",
    reads=(),
    failure="two instance groups of one name, one silently replacing the other",
    guardrail="instance group names are unique",
)
def group_name_unique(p: Platform, i: int, g: InstanceGroup) -> Iterator[Finding]:
    """Check that no earlier instance group has the same name."""
    if any(other.name == g.name for other in p.cluster.instance_groups[:i]):
        yield Finding(
            f"cluster.instanceGroups[{i}].name",
            f"instance group {g.name!r} is defined twice.",
            "give every instance group a unique name.",
        )


@priority_class_rule(
    code="HPT-NAME",
    domain=Domain.NAMING,
    at="scheduling.priorityClasses[*].name",
    reads=(),
    failure="a priority class name that cannot be a label value",
    guardrail="priority class names are lowercase DNS labels of at most 40 characters",
)
def priority_class_name(p: Platform, i: int, pc: PriorityClass) -> Iterator[Finding]:
    """Check that the priority class name is a short lowercase DNS label."""
    if not _PRIORITY_NAME.match(pc.name):
        yield Finding(
            f"scheduling.priorityClasses[{i}].name",
            f"{pc.name!r} is not a lowercase DNS label of at most 40 characters.",
            "use e.g. `training`.",
        )


@priority_class_rule(
    code="HPT-DUPLICATE",
    domain=Domain.NAMING,
    at="scheduling.priorityClasses[*].name",
    reads=(),
    failure="two priority classes of one name with different weights",
    guardrail="priority class names are unique",
)
def priority_class_name_unique(p: Platform, i: int, pc: PriorityClass) -> Iterator[Finding]:
    """Check that no earlier priority class has the same name."""
    if any(other.name == pc.name for other in p.scheduling.priority_classes[:i]):
        yield Finding(
            f"scheduling.priorityClasses[{i}].name",
            f"priority class {pc.name!r} is defined twice.",
            "give every priority class a unique name.",
        )


@team_rule(
    code="HPT-TEAM-NAME",
    domain=Domain.NAMING,
    at="teams[*].name",
    reads=(),
    failure="names too long for label values",
    guardrail="team names are DNS labels whose derived names fit 63 characters; the message shows the computed "
    "names",
)
def team_name(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that the team name is a DNS label and every name derived from it fits in a label value."""
    path = f"teams[{i}].name"
    if not DNS_LABEL.match(team.name):
        yield Finding(
            path,
            f"{team.name!r} is not a DNS label.",
            "use lowercase letters, digits and '-', starting and ending with a letter or digit.",
        )
        return
    derived = names.derived_names(team.name)
    limit = names.LABEL_VALUE_MAX
    if any(len(v) > limit for v in derived.values()):
        shown = ", ".join(
            f"{k} {v!r} ({len(v)}{' > ' + str(limit) if len(v) > limit else ''})" for k, v in derived.items()
        )
        yield Finding(
            path,
            f"{team.name!r} ({len(team.name)} characters) is too long: the names derived from it must fit in "
            f"{limit} characters (Kubernetes label values): {shown}.",
            f"shorten the team name to at most {MAX_TEAM_NAME} characters.",
        )


@team_rule(
    code="HPT-TEAM-DUPLICATE",
    domain=Domain.NAMING,
    at="teams[*].name",
    reads=(),
    failure="two teams of one name sharing a namespace, quota and permission set",
    guardrail="team names are unique",
)
def team_name_unique(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Check that no earlier team has the same name."""
    first = next((j for j, other in enumerate(p.teams[:i]) if other.name == team.name), None)
    if first is not None:
        yield Finding(
            f"teams[{i}].name",
            f"team {team.name!r} is already defined at teams[{first}].",
            "give every team a unique name.",
        )


@team_rule(
    code="HPT-STUDIO-DOMAIN-NAME",
    domain=Domain.NAMING,
    at="teams[*].name",
    reads=("cluster.name", "teams[*].studio"),
    failure="Studio domain names over the service limit",
    guardrail="`<cluster>-<team>` fits SageMaker's DomainName limit; the message shows the computed name",
)
def studio_domain_name(p: Platform, i: int, team: Team) -> Iterator[Finding]:
    """Refuse a Studio domain name ``<cluster>-<team>`` that is not a valid SageMaker DomainName."""
    if not team.studio or not valid_team_name(team.name) or not HYPERPOD_NAME.match(p.cluster.name):
        return  # no domain, or a bad name that HPT-TEAM-NAME / HPT-NAME already report
    domain = names.studio_domain(p.cluster.name, team.name)
    if len(domain) > names.STUDIO_DOMAIN_MAX or not HYPERPOD_NAME.match(domain):
        yield Finding(
            f"teams[{i}].name",
            f"the Studio domain name {domain!r} (cluster.name + '-' + team name) has {len(domain)} characters; "
            f"SageMaker allows at most {names.STUDIO_DOMAIN_MAX}.",
            f"shorten the team name or cluster.name by {len(domain) - names.STUDIO_DOMAIN_MAX} characters, or set "
            "`studio: false` for the team.",
        )
