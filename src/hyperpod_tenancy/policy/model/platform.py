"""The whole policy (``platform.yaml``): the cluster, the teams, encryption, Identity Center and chargeback."""

from __future__ import annotations

from dataclasses import dataclass, field

from hyperpod_tenancy.policy.model.chargeback import ChargebackSpec
from hyperpod_tenancy.policy.model.cluster import ClusterSpec, InstanceGroup
from hyperpod_tenancy.policy.model.enums import FairnessBackend, SharingStrategy
from hyperpod_tenancy.policy.model.team import PriorityClass, SchedulingSpec, Team

__all__ = ["CREATE_KMS_KEY", "EncryptionSpec", "IdentityCenter", "Platform"]

#: ``encryption.kmsKey`` value that creates the platform's key.
CREATE_KMS_KEY = "create"


@dataclass(frozen=True, kw_only=True)
class EncryptionSpec:
    """The platform-wide customer-managed KMS key (optional; without it AWS-managed keys encrypt everything)."""

    #: ``create`` (a key created in the cluster stack: retained, rotation on) or the ARN of an existing key in
    #: the platform's region. Used for the CloudWatch log groups, the Studio domains' volumes, the team data and
    #: report buckets (SSE-KMS with a bucket key), FSx for Lustre and DynamoDB tables. Default: none.
    kms_key: str | None = field(
        default=None,
        metadata={
            "examples": [
                "create",
                "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            ]
        },
    )


@dataclass(frozen=True, kw_only=True)
class IdentityCenter:
    """The organization's IAM Identity Center instance, and the account it is administered from."""

    #: Instance ARN, ``arn:aws:sso:::instance/ssoins-...``.
    instance_arn: str
    #: Region Identity Center lives in (the SSO role path has no region segment in us-east-1).
    region: str
    #: The account the permission sets and their assignments are created in: the organization's management
    #: account or an Identity Center delegated administrator (12 digits). Default: the platform's ``account``
    #: (one account holds Identity Center and the cluster).
    account: str | None = field(default=None, metadata={"examples": ["999988887777"]})
    #: Whether the cluster may run in the Identity Center account. AWS advises against workloads in the
    #: management account. Default: allowed when ``account`` is not given (one account), refused when it is.
    allow_workloads: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Platform:
    """The whole tenancy policy: one cluster, its scheduling policy and its teams."""

    #: Short name; prefixes stack names.
    name: str
    #: Target AWS account (12 digits).
    account: str
    #: Target region.
    region: str
    #: The shared cluster.
    cluster: ClusterSpec
    #: Priorities and fair-share settings.
    scheduling: SchedulingSpec
    #: Identity Center instance.
    identity_center: IdentityCenter
    #: Tenants.
    teams: tuple[Team, ...]
    #: Task Governance (default) or self-managed Kueue.
    fairness_backend: FairnessBackend = FairnessBackend.TASK_GOVERNANCE
    #: Monthly chargeback. Default: none (no chargeback pipeline).
    chargeback: ChargebackSpec | None = None
    #: Customer-managed encryption key. Default: AWS-managed keys.
    encryption: EncryptionSpec = field(default_factory=EncryptionSpec)

    @property
    def identity_center_account(self) -> str:
        """The account the permission sets and their assignments live in (``identityCenter.account``, else ``account``)."""
        return self.identity_center.account or self.account

    @property
    def identity_center_elsewhere(self) -> bool:
        """Whether Identity Center is administered from another account than the cluster's."""
        return self.identity_center_account != self.account

    def team_account(self, team: Team) -> str:
        """Return the account of ``team``'s people and data: ``teams[].account``, else the cluster's ``account``."""
        return team.account or self.account

    def team_in_own_account(self, team: Team) -> bool:
        """Whether ``team`` has an account of its own, other than the cluster's."""
        return self.team_account(team) != self.account

    def studio_in_team_account(self, team: Team) -> bool:
        """Whether ``team`` has a Studio domain in an account of its own (in a VPC there: ``studioNetwork``)."""
        return team.studio and self.team_in_own_account(team)

    @property
    def teams_in_own_accounts(self) -> tuple[Team, ...]:
        """The hosted teams with an account of their own."""
        return tuple(team for team in self.hosted_teams if self.team_in_own_account(team))

    def team(self, name: str) -> Team:
        """Return the team called ``name``.

        Raises:
            KeyError: no such team.

        """
        for team in self.teams:
            if team.name == name:
                return team
        raise KeyError(name)

    def team_classification(self, team: Team) -> str:
        """Return the team's data classification, defaulting to the cluster's."""
        return team.data_classification or self.cluster.data_classification

    @property
    def hosted_teams(self) -> tuple[Team, ...]:
        """Teams that run on this cluster (teams flagged for a dedicated cluster are left out)."""
        return tuple(t for t in self.teams if self.team_classification(t) == self.cluster.data_classification)

    @property
    def dedicated_cluster_teams(self) -> tuple[Team, ...]:
        """Teams whose classification differs from the cluster's and need a cluster of their own."""
        return tuple(t for t in self.teams if self.team_classification(t) != self.cluster.data_classification)

    def effective_sharing(self, team: Team) -> SharingStrategy:
        """Return the sharing strategy in force for ``team``.

        The team's own strategy, or ``DONT_LEND`` for every team when ``scheduling.idleResourceSharing`` is off
        (nothing is lent or borrowed anywhere then). Both fairness backends render from this one rule.
        """
        if not self.scheduling.idle_resource_sharing:
            return SharingStrategy.DONT_LEND
        return team.compute.sharing

    def priority_class(self, name: str) -> PriorityClass:
        """Return the priority class called ``name``.

        Raises:
            KeyError: no such priority class.

        """
        for pc in self.scheduling.priority_classes:
            if pc.name == name:
                return pc
        raise KeyError(name)

    def instance_group_for(self, instance_type: str) -> tuple[InstanceGroup, ...]:
        """Instance groups of the given type."""
        return tuple(g for g in self.cluster.instance_groups if g.instance_type == instance_type)
