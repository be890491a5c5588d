"""``PlatformStage``: every stack of a platform, built from its policy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import aws_cdk as cdk
from constructs import Construct

from hyperpod_tenancy.chargeback.queries import CLUSTER_TAG_KEY
from hyperpod_tenancy.constructs._private.annotations import warn
from hyperpod_tenancy.constructs.backends import replacement_wording
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import TEAM_COST_CENTER_TAG, TEAM_TAG
from hyperpod_tenancy.policy import Platform, names, replacement_warnings, select_teams
from hyperpod_tenancy.policy.plan import TenancyPlan
from hyperpod_tenancy.stacks.chargeback_stack import ChargebackOptions, ChargebackStack, chargeback_options
from hyperpod_tenancy.stacks.cluster_stack import ClusterOptions, ClusterStack
from hyperpod_tenancy.stacks.identity_center import TeamAccessStack, TeamIdentityStack
from hyperpod_tenancy.stacks.progress import SynthProgress
from hyperpod_tenancy.stacks.team_account import TeamAccountStack
from hyperpod_tenancy.stacks.team_stack import TeamStack
from hyperpod_tenancy.stacks.team_studio import TeamStudioStack

__all__ = ["PlatformStage", "team_stack_id"]


def team_stack_id(team: str) -> str:
    """Stack ID of a team: ``Team-<PascalCase name>`` (stable: changing it replaces the stack)."""
    return names.team_stack_id(team)


class PlatformStage(cdk.Stage):
    """The cluster stack and one :class:`TeamStack` per team hosted on the cluster.

    Teams flagged for a dedicated cluster (``onDataClassificationMismatch: dedicated-cluster``) get no stack;
    the cluster emits a warning naming them.

    Args:
        scope: the CDK app.
        id: stage ID (the platform name is a good choice).
        platform: the tenancy policy, or a :class:`~hyperpod_tenancy.policy.plan.TenancyPlan` an app built from one
            (``TenancyPlan.resolve(policy).with_team(...)``). The stage resolves a policy once into its plan
            (:attr:`plan`); one built or changed in code is validated as ``load_platform`` validates a file
            (:class:`~hyperpod_tenancy.errors.PolicyError` lists every problem; nothing is synthesized).
        baseline: the policy that is deployed now (e.g. ``platform.yaml`` of the main branch). Default: none.
            When given, every change CloudFormation would perform as a replacement (cluster name, VPC, a
            removed or renamed team, ...) becomes a synth-time warning ``hyperpod-tenancy:HPT-REPLACE-*`` on
            the cluster stack.
        cluster_options: the options of
            :class:`~hyperpod_tenancy.constructs.cluster.shared_hyperpod_cluster.SharedHyperPodCluster` besides the
            policy (:class:`~hyperpod_tenancy.stacks.cluster_stack.ClusterOptions`: ``vpc``, ``vpc_cidr_blocks``,
            ``endpoint_access``, ``kubectl_layer``, ``posix_identity_image_uri``), passed by the cluster stack.
            Default: every one at its default.
        chargeback: options of :class:`~hyperpod_tenancy.constructs.chargeback.chargeback_pipeline.ChargebackPipeline`
            on top of the policy's ``chargeback:`` section
            (:class:`~hyperpod_tenancy.stacks.chargeback_stack.ChargebackOptions`, for example
            ``usage_report_chart``; without a section, ``billing_rule`` and ``idle_owner`` at least). With either, the stage adds a ``Chargeback`` stack, tags
            the cluster stack ``hyperpod-tenancy:cluster`` and every team stack ``hyperpod-tenancy:team`` and
            ``hyperpod-tenancy:cost-center`` (the cost allocation tags the pipeline activates), and gives every team
            stack the team's part of the chargeback (``TeamStack.add_chargeback``). Default: no chargeback unless
            the policy has a ``chargeback:`` section.
        progress: write a line per 10 % of the team stacks built to standard error, with the elapsed time
            (:class:`~hyperpod_tenancy.stacks.progress.SynthProgress`). Default: above 50 teams.
        teams: build only these teams' stacks (names of teams hosted on the cluster, at least one). The shared
            stacks are the same whichever teams are built, so a pipeline that deploys one team can synthesize the
            shared stacks and that team alone (``cdk deploy -c teams=research ml-platform/Team-Research``) in
            seconds, whatever the number of teams. Stacks left out are not deleted by a deploy; they are simply not
            in the cloud assembly. Default: every hosted team. Raises
            :class:`~hyperpod_tenancy.errors.PolicyError` for a name that is not a hosted team.
        **kwargs: other ``cdk.Stage`` props (``env`` defaults to the platform's account and region).

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        platform: Platform | TenancyPlan,
        baseline: Platform | None = None,
        cluster_options: ClusterOptions | None = None,
        chargeback: ChargebackOptions | None = None,
        progress: bool | None = None,
        teams: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        plan = (
            platform
            if isinstance(platform, TenancyPlan)
            else TenancyPlan.resolve(platform, where=f"PlatformStage {id!r}")
        )
        platform = plan.platform
        options = None if chargeback is None else chargeback_options(chargeback)
        hosted = platform.hosted_teams if teams is None else select_teams(platform, teams)
        kwargs.setdefault("env", cdk.Environment(account=platform.account, region=platform.region))
        super().__init__(scope, id, **kwargs)
        # team stacks import a few cluster attributes; keep CloudFormation's exports protecting them
        self.node.set_context("@aws-cdk/core:defaultCrossStackReferences", "strong")
        #: The policy resolved once: what every stack of the stage is built from.
        self.plan: TenancyPlan = plan
        #: The policy the stage was built from.
        self.platform = platform
        #: The shared cluster's stack.
        self.cluster_stack = ClusterStack(
            self, names.CLUSTER_STACK_ID, platform=platform, cluster_options=cluster_options
        )
        if baseline is not None:
            for issue in replacement_warnings(baseline, platform, wording=replacement_wording):
                warn(self.cluster_stack, issue.code, f"{issue.path}: {issue.message} {issue.fix}")
        #: Progress of the team stacks (a line per 10 % on standard error above 50 teams).
        self.progress = SynthProgress(len(hosted), enabled=progress)
        #: Team stacks by team name (the selected teams with ``teams``).
        self.team_stacks: dict[str, TeamStack] = {}
        #: With Identity Center in another account (``identityCenter.account``): each team's permission set and
        #: assignment there, and its role lookup and access entry in the cluster's account, by team name.
        self.identity_stacks: dict[str, TeamIdentityStack] = {}
        self.access_stacks: dict[str, TeamAccessStack] = {}
        #: Teams with an account of their own (``teams[].account``): each one's stack there, by team name.
        self.account_stacks: dict[str, TeamAccountStack] = {}
        #: Teams with a Studio domain in their own account: each one's Studio stack there, by team name.
        self.studio_stacks: dict[str, TeamStudioStack] = {}
        for done, spec in enumerate(hosted, start=1):
            own = (
                TeamAccountStack(
                    self, names.team_account_stack_id(spec.name), platform=platform, team=spec.name
                )
                if platform.team_in_own_account(spec)
                else None
            )
            team_stack = TeamStack(
                self, plan.team(spec.name).stack_id, cluster=self.cluster_stack.cluster, team=spec.name
            )
            self.team_stacks[spec.name] = team_stack
            if own is not None:
                team_stack.add_stack_dependency(
                    own,
                    reason="the pods' target role and the lookup role exist before the association and the lookup use "
                    "them, and the permission set's policy before its assignment",
                )
                self.account_stacks[spec.name] = own
            last: cdk.Stack = team_stack
            if own is not None and platform.studio_in_team_account(spec):
                studio = TeamStudioStack(
                    self,
                    names.team_studio_stack_id(spec.name),
                    platform=platform,
                    team=spec.name,
                    account_resources=own.resources,
                )
                studio.add_stack_dependency(
                    team_stack,
                    reason="the peering of the team's Studio VPC exists and is accepted before its routes",
                )
                self.studio_stacks[spec.name] = studio
                last = studio
            if platform.identity_center_elsewhere:
                self._identity_center_stacks(spec.name, after=last)
            self.progress.step(done)
        #: The chargeback stack (``None`` without ``chargeback``).
        self.chargeback_stack: ChargebackStack | None = None
        if options is not None or platform.chargeback is not None:
            self.chargeback_stack = ChargebackStack(
                self, "Chargeback", cluster=self.cluster_stack.cluster, options=options
            )
            pipeline = self.chargeback_stack.pipeline
            cdk.Tags.of(self.cluster_stack).add(CLUSTER_TAG_KEY, platform.cluster.name)
            cdk.Tags.of(self.chargeback_stack).add(CLUSTER_TAG_KEY, platform.cluster.name)
            for team, stack in self.team_stacks.items():
                # the team's record, dashboard and alert live in its own stack: the chargeback stack lists no team
                stack.add_chargeback(pipeline)
                # the stack in the team's own account too: its bucket's lines on that account's bill carry them
                for tagged in (stack, self.account_stacks.get(team)):
                    if tagged is None:
                        continue
                    tags = cdk.Tags.of(tagged)
                    tags.add(CLUSTER_TAG_KEY, platform.cluster.name)
                    tags.add(TEAM_TAG, team)
                    tags.add(TEAM_COST_CENTER_TAG, pipeline.cost_center(team))

    def _identity_center_stacks(self, team: str, *, after: cdk.Stack) -> None:
        """Add the team's Identity Center stack and access stack, ordered after its team stack by dependencies."""
        identity = TeamIdentityStack(
            self, names.team_identity_stack_id(team), platform=self.platform, team=team
        )
        identity.add_stack_dependency(
            after,
            reason="the policy its permission set references exists before the assignment is provisioned, and the "
            "Studio domain before its group is assigned",
        )
        access = TeamAccessStack(
            self, names.team_access_stack_id(team), cluster=self.cluster_stack.cluster, team=team
        )
        access.add_stack_dependency(identity, reason="the role exists once the assignment is provisioned")
        self.identity_stacks[team] = identity
        self.access_stacks[team] = access
