"""Account quota rules: what a platform of many teams needs from the account, against the quotas' defaults.

Each team adds resources that count against an account, Region, Identity Center instance or cluster quota. The
platform designs around the quotas that need not bind (one API client security group instead of a rule per team
on the endpoint's group; team records read at run time instead of listing teams in the shared stacks). For the
others, ``validate`` warns when the platform needs more than the quota's default, naming the quota and its
Service Quotas code, so the increase is requested before a deploy fails half-way. Each :class:`AccountQuota`
cites where its default is documented.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from hyperpod_tenancy.policy.model import Platform
from hyperpod_tenancy.policy.rules._base import Domain, Finding, PlatformCheck, Rule, Severity, platform_rule

__all__ = [
    "ACCESS_ENTRIES",
    "IAM_ROLES",
    "PERMISSION_SETS_PER_ACCOUNT",
    "PERMISSION_SETS_PER_INSTANCE",
    "POD_IDENTITY_ASSOCIATIONS",
    "QUOTAS",
    "RULES",
    "STACKS",
    "STUDIO_DOMAINS",
    "AccountQuota",
    "need",
]


@dataclass(frozen=True, kw_only=True)
class AccountQuota:
    """A quota a number of teams runs into."""

    #: Rule code of the warning.
    code: str
    #: The quota's name (as the Service Quotas console shows it, or the documentation where it is not there).
    name: str
    #: Service code and quota code in Service Quotas (``None``: the quota is not in Service Quotas).
    service_quota: tuple[str, str] | None
    #: The default value.
    default: int
    #: Whether an increase can be requested.
    adjustable: bool
    #: Where the default is documented.
    source: str
    #: What counts against it, per team and for the platform itself.
    counts: str

    @property
    def label(self) -> str:
        """``<name> (<service>/<code>)``, or the name with "not in Service Quotas"."""
        if self.service_quota is None:
            return f"{self.name!r} (not in Service Quotas)"
        service, code = self.service_quota
        return f"{self.name!r} (Service Quotas {service} {code})"


#: Roles the shared stacks create besides the teams' (cluster, add-ons, webhook, chargeback, CDK handlers); the
#: reference platform synthesizes fewer (a test checks this bound).
PLATFORM_ROLES = 40
#: Pod Identity associations of the shared stacks (webhook, training operator, observability, usage report).
PLATFORM_POD_IDENTITY_ASSOCIATIONS = 4
#: Access entries of the shared stacks (the eviction collector, the drift audit, the node inventory; the cluster
#: creator's is EKS's own).
PLATFORM_ACCESS_ENTRIES = 4
#: Stacks of the platform besides the teams' (cluster, chargeback, the CDK bootstrap stack).
PLATFORM_STACKS = 3

IAM_ROLES = AccountQuota(
    code="HPT-QUOTA-IAM-ROLES",
    name="Roles per account",
    service_quota=("iam", "L-FE177D64"),
    default=1000,
    adjustable=True,
    source="https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html",
    counts="3 per team (execution role, workload role, the AWSReservedSSO_ role Identity Center provisions), "
    f"4 with chargeback (the dashboard widgets' one role), + about {PLATFORM_ROLES} for the platform",
)
STUDIO_DOMAINS = AccountQuota(
    code="HPT-QUOTA-STUDIO-DOMAINS",
    name="Maximum number of Studio domains per account and Region",
    service_quota=None,
    default=5,
    adjustable=True,
    source="https://docs.aws.amazon.com/sagemaker/latest/dg/studio-notebooks-emr-cluster.html "
    '("SageMaker AI allows 5 Studio domains per AWS account and AWS Region by default")',
    counts="1 per team with studio: true",
)
PERMISSION_SETS_PER_INSTANCE = AccountQuota(
    code="HPT-QUOTA-PERMISSION-SETS",
    name="Number of permission sets allowed in IAM Identity Center",
    service_quota=None,
    default=3500,
    adjustable=True,
    source="https://docs.aws.amazon.com/singlesignon/latest/userguide/limits.html",
    counts="1 per team (shared with every other permission set of the instance)",
)
PERMISSION_SETS_PER_ACCOUNT = AccountQuota(
    code="HPT-QUOTA-PERMISSION-SETS-ACCOUNT",
    name="Number of provisioned permission sets allowed per AWS account",
    service_quota=None,
    default=500,
    adjustable=True,
    source="https://docs.aws.amazon.com/singlesignon/latest/userguide/limits.html",
    counts="1 per team, all provisioned to the platform's account",
)
STACKS = AccountQuota(
    code="HPT-QUOTA-STACKS",
    name="Stack count",
    service_quota=("cloudformation", "L-0485CB21"),
    default=2000,
    adjustable=True,
    source="https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/cloudformation-limits.html",
    counts=f"1 per team + {PLATFORM_STACKS} (cluster, chargeback, CDK bootstrap)",
)
ACCESS_ENTRIES = AccountQuota(
    code="HPT-QUOTA-ACCESS-ENTRIES",
    name="Access entries per cluster",
    service_quota=("eks", "L-C56B9FC3"),
    default=3000,
    adjustable=False,
    source="https://docs.aws.amazon.com/general/latest/gr/eks.html",
    counts=f"1 per team (Identity Center role) + 1 per team with studio: true + {PLATFORM_ACCESS_ENTRIES}",
)
POD_IDENTITY_ASSOCIATIONS = AccountQuota(
    code="HPT-QUOTA-POD-IDENTITY",
    name="Pod Identity associations per cluster",
    service_quota=None,
    default=1000,
    adjustable=False,
    source="https://docs.aws.amazon.com/eks/latest/userguide/service-quotas.html",
    counts=f"1 per team (its workload role) + {PLATFORM_POD_IDENTITY_ASSOCIATIONS} for the platform",
)


def _teams(p: Platform) -> int:
    return len(p.hosted_teams)


def _studio_teams(p: Platform) -> int:
    return sum(1 for t in p.hosted_teams if t.studio)


#: What the platform needs of each quota.
_NEEDS: dict[str, Callable[[Platform], int]] = {
    IAM_ROLES.code: lambda p: (4 if p.chargeback is not None else 3) * _teams(p) + PLATFORM_ROLES,
    STUDIO_DOMAINS.code: _studio_teams,
    PERMISSION_SETS_PER_INSTANCE.code: _teams,
    PERMISSION_SETS_PER_ACCOUNT.code: _teams,
    STACKS.code: lambda p: _teams(p) + PLATFORM_STACKS,
    ACCESS_ENTRIES.code: lambda p: _teams(p) + _studio_teams(p) + PLATFORM_ACCESS_ENTRIES,
    POD_IDENTITY_ASSOCIATIONS.code: lambda p: _teams(p) + PLATFORM_POD_IDENTITY_ASSOCIATIONS,
}

#: Every quota the rules check, in reporting order (their rules: :data:`RULES`).
QUOTAS = (
    IAM_ROLES,
    STUDIO_DOMAINS,
    PERMISSION_SETS_PER_INSTANCE,
    PERMISSION_SETS_PER_ACCOUNT,
    STACKS,
    ACCESS_ENTRIES,
    POD_IDENTITY_ASSOCIATIONS,
)


def need(quota: AccountQuota, platform: Platform) -> int:
    """How much of ``quota`` the platform needs."""
    return _NEEDS[quota.code](platform)


def _check(quota: AccountQuota, p: Platform) -> Iterator[Finding]:
    needed = need(quota, p)
    if needed <= quota.default:
        return
    if quota.adjustable:
        fix = (
            f"request an increase of {quota.label} to at least {needed} before deploying (the default is "
            f"{quota.default}; {quota.source})."
        )
    else:
        fix = (
            f"this quota cannot be raised ({quota.source}): host some teams on another cluster (a second "
            "platform), or fewer teams here."
        )
    yield Finding(
        "teams",
        f"{len(p.hosted_teams)} teams need {needed} of {quota.label}, whose default is {quota.default} "
        f"({quota.counts}).",
        fix,
    )


def _rule(quota: AccountQuota) -> Callable[[PlatformCheck], Rule]:
    return platform_rule(
        code=quota.code,
        domain=Domain.DEPLOYMENT,
        at="teams",
        reads=(),
        failure=f"a deploy that fails part-way at {quota.name} ({quota.default} by default)",
        guardrail=f"warning when the teams need more than the default of {quota.label}",
        severity=Severity.WARNING,
    )


def _quota_rule(quota: AccountQuota, name: str, what: str) -> Rule:
    """Return the warning rule of ``quota``, named ``name`` (its check says "Check <what> ...")."""

    def check(p: Platform) -> Iterator[Finding]:
        yield from _check(quota, p)

    check.__name__ = check.__qualname__ = name
    check.__doc__ = f"Check {what} against the default of {quota.name!r}."
    return _rule(quota)(check)


iam_roles = _quota_rule(IAM_ROLES, "iam_roles", "the IAM roles the teams and the platform need")
studio_domains = _quota_rule(STUDIO_DOMAINS, "studio_domains", "the teams' Studio domains")
permission_sets = _quota_rule(PERMISSION_SETS_PER_INSTANCE, "permission_sets", "the teams' permission sets")
permission_sets_account = _quota_rule(
    PERMISSION_SETS_PER_ACCOUNT, "permission_sets_account", "the permission sets provisioned to the account"
)
stacks = _quota_rule(STACKS, "stacks", "the platform's stacks")
access_entries = _quota_rule(ACCESS_ENTRIES, "access_entries", "the cluster's access entries")
pod_identity_associations = _quota_rule(
    POD_IDENTITY_ASSOCIATIONS, "pod_identity_associations", "the cluster's Pod Identity associations"
)

#: The quota rules, in the order of :data:`QUOTAS`.
RULES: tuple[Rule, ...] = (
    iam_roles,
    studio_domains,
    permission_sets,
    permission_sets_account,
    stacks,
    access_entries,
    pod_identity_associations,
)
