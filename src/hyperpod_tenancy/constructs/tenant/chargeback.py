"""``TeamChargeback``: a team's part of the chargeback, created in the team's own stack.

Everything of the chargeback that exists once per team lives here, so adding or removing a team changes no
shared stack: the team's record (an SSM parameter the monthly job reads at run time), its CloudWatch dashboard
and its same-day alerts, preemption loss, work waiting too long and borrowed work whose checkpoints are overdue
(a rule groups namespace on the cluster's Prometheus workspace).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_aps as aps
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_ssm as ssm
from constructs import Construct

import hyperpod_tenancy.runtime as runtime_package
from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.constructs._private.annotations import acknowledge_role, skip_checkov_each
from hyperpod_tenancy.constructs._private.memo import arn, attribute, stack_of
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import METRIC_NAMESPACE, MONTHLY_METRICS
from hyperpod_tenancy.constructs.encryption import encrypt_new_log_groups_and_tables, skip_without_key
from hyperpod_tenancy.constructs.interfaces import IHyperPodCluster
from hyperpod_tenancy.constructs.tenant.team_tenant import TeamTenant
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s.alert_rules import preemption_rules
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.policy.chargeback import team_borrows
from hyperpod_tenancy.policy.grains import instances_by_type

__all__ = ["TeamChargeback"]

#: The checkov checks a team's widget function does not meet, each with the reason.
_WIDGET_CHECKOV_SKIPS = {
    **dict.fromkeys(
        ("CKV_AWS_115", "CKV_AWS_116"),
        "invoked synchronously by the team's dashboard to draw a widget: a failed draw is retried by reloading "
        "the dashboard, so a dead-letter queue would hold nothing, and reserved concurrency would take from the "
        "account's other functions",
    ),
    "CKV_AWS_117": "calls an AWS API only, nothing inside the VPC",
    "CKV_AWS_173": "the environment holds names and IDs, no secret",
}


@dataclasses.dataclass(frozen=True)
class _Constants:
    """The values every team's part repeats, made once per process (each is a call into the CDK's runtime)."""

    runtime: lambda_.Runtime
    timeout: cdk.Duration
    day: cdk.Duration
    dashboard_interval: cdk.Duration


@functools.cache
def _constants() -> _Constants:
    return _Constants(
        runtime=lambda_.Runtime.PYTHON_3_14,
        timeout=cdk.Duration.seconds(30),
        day=cdk.Duration.days(1),
        dashboard_interval=cdk.Duration.days(400),
    )


class TeamChargeback(Construct):
    """A team's chargeback record, dashboard and same-day alert (create it in the team's stack).

    Creates: the SSM parameter ``/hyperpod-tenancy/<cluster>/chargeback/<team>`` holding the team's record (cost
    center, quotas: ``model.team_config_to_json``), which the monthly job reads at run time and keeps in the
    month's roster, so a team removed in the middle of a month is still billed for it; the team's notification
    topic ``<cluster>-preemptions-<team>`` (encrypted with a key of its own), to which the eviction collector
    publishes each of the team's preempted workloads, the workload that preempted it and why, and the GPU-hours
    lost, and to which the team's members may subscribe (given its tenant); the CloudWatch dashboard
    ``<cluster>-chargeback-<team>`` (monthly GPU-hours used, borrowed, lent and lost to preemption); and, given
    a Prometheus workspace, the rule groups namespace ``<cluster>-chargeback-<team>`` with the team's same-day
    preemption, waiting and overdue-checkpoint alerts
    (:func:`~hyperpod_tenancy.k8s.alert_rules.preemption_rules`), which the workspace's alert
    manager routes to the chargeback topic. The dashboard's first widget is the team's live GPUs
    (in use and borrowed, against its guarantee and ceiling, every 5 minutes), a custom widget drawn by the
    team's own function (:mod:`hyperpod_tenancy.runtime.gpu_widget`); given a workspace, the last widget is the
    state of the team's alerts and of the cluster-wide ones, drawn by a second function of the team's
    (:mod:`hyperpod_tenancy.runtime.alert_widget`, Amazon Managed Prometheus' ListRules kept to this team's rules
    and the cluster's). Given the team's tenant, its permission set may read the dashboard and invoke those
    functions, and nothing of another team (IAM cannot limit ``cloudwatch:GetMetricData`` to one team's
    dimensions, nor ``aps:ListRules`` to one team's rules, so the members get neither permission at all).

    Args:
        scope: parent construct (the team's stack).
        id: construct ID.
        cluster: the shared cluster.
        team: name of a team of the cluster's platform policy.
        config: the chargeback configuration (GPUs per instance and checkpoint bounds weigh the alert; its
            ``teams`` are not read).
        cost_center: the team's cost center. Default: the policy's (``costCenter``, else the team name).
        alert_workspace: the Prometheus workspace with Kueue's metrics. Default: no alert rule.
        preemption_alarm_gpu_hours_per_day: alert when the team's estimated loss over 24 hours exceeds this.
            Default: 24.
        pending_alarm_minutes: alert when the team's ClusterQueue has held pending work this long (including
            work never admitted: :func:`~hyperpod_tenancy.k8s.alert_rules.waiting_rule`).
            Default: 60.
        tenant: the team's tenant, whose permission set gets read access to the dashboard. Default: none.

    Attributes:
        record, topic, dashboard, widget, alert_widget, rule_group: the created resources (``alert_widget`` and
            ``rule_group`` are ``None`` without a workspace).
        team_config: the team's record as the engine reads it.

    Raises:
        TenancyError: the team is not in the policy.

    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster: IHyperPodCluster,
        team: str,
        config: model.ChargebackConfig,
        cost_center: str | None = None,
        alert_workspace: aps.CfnWorkspace | None = None,
        preemption_alarm_gpu_hours_per_day: float = 24,
        pending_alarm_minutes: float = 60,
        tenant: TeamTenant | None = None,
    ) -> None:
        super().__init__(scope, id)
        platform = cluster.platform
        self._platform_key = cluster.platform_key
        encrypt_new_log_groups_and_tables(self, self._platform_key)
        try:
            spec = platform.team(team)
        except KeyError:
            raise TenancyError(f"{self.node.path}: team {team!r} is not in the platform policy.") from None
        name = platform.cluster.name
        #: The team's record as the monthly job reads it.
        self.team_config = model.TeamConfig(
            name=spec.name,
            cost_center=cost_center or spec.effective_cost_center,
            quotas=instances_by_type(platform, spec),
            borrows=team_borrows(platform, spec),
        )
        #: The team's record (read by the monthly job under ``names.team_records_path(<cluster>, "chargeback")``).
        self.record = ssm.StringParameter(
            self,
            "Record",
            parameter_name=names.chargeback_record(name, spec.name),
            string_value=model.team_config_to_json(self.team_config),
            description=f"Chargeback record of team {spec.name} on HyperPod cluster {name}",
            tier=ssm.ParameterTier.STANDARD,
        )
        #: The team's notification topic: the eviction collector tells it of each of the team's preempted workloads
        #: (who preempted it, why, the GPU-hours lost); its members may subscribe to it.
        self.topic = self._topic(name, spec.name)
        #: The role of the team's widget functions (one role for both: each team costs the account as few IAM
        #: roles as possible, and both only read what their team's dashboard shows).
        self.widget_role = iam.Role(
            self,
            "WidgetRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Dashboard widgets of team {spec.name} on HyperPod cluster {name}",
            managed_policies=[
                iam.ManagedPolicy.from_aws_managed_policy_name("service-role/AWSLambdaBasicExecutionRole")
            ],
        )
        acknowledge_role(
            self.widget_role,
            managed_policies="AWSLambdaBasicExecutionRole only lets the widget functions write their logs",
            wildcards="cloudwatch:GetMetricData supports no resource-level permission; the GPU widget reads the "
            "gauges of its own team only (its environment names the team), and the team members may only "
            "invoke it, never read metrics themselves",
        )
        #: The function drawing the team's live GPU widget (reads this team's gauges only).
        self.widget = self._widget(name)
        #: The team's dashboard.
        self.dashboard = self._dashboard(name)
        #: The function drawing the team's alert-state widget (``None`` without a workspace).
        self.alert_widget: lambda_.Function | None = None
        if alert_workspace is not None:
            self.alert_widget = self._alert_widget(name, alert_workspace)
            self.dashboard.add_widgets(
                cloudwatch.CustomWidget(
                    function_arn=self.alert_widget.function_arn,
                    title=f"{spec.name}: alerts of the team and of the cluster, now",
                    width=24,
                    height=6,
                    update_on_refresh=True,
                    update_on_resize=False,
                    update_on_time_range_change=False,
                )
            )
        # a team in its own account signs in there: the dashboard and topic here are the platform team's to share
        if tenant is not None and not tenant.in_own_account:
            stack = stack_of(self)
            widgets = [names.team_gpu_widget(name, spec.name)]
            if alert_workspace is not None:
                widgets.append(names.team_alert_widget(name, spec.name))
            tenant.allow_in_permission_set(
                {
                    "Sid": "SubscribeToTeamTopic",
                    "Effect": "Allow",
                    "Action": ["sns:Subscribe", "sns:Unsubscribe", "sns:ListSubscriptionsByTopic"],
                    "Resource": arn(
                        stack, service="sns", resource=names.chargeback_team_topic(name, spec.name)
                    ),
                },
                {
                    "Sid": "ReadTeamDashboard",
                    "Effect": "Allow",
                    "Action": "cloudwatch:GetDashboard",
                    "Resource": arn(
                        stack,
                        service="cloudwatch",
                        region="",
                        resource="dashboard",
                        resource_name=names.chargeback_team_dashboard(name, spec.name),
                    ),
                },
                {
                    "Sid": "DrawTeamWidgets",
                    "Effect": "Allow",
                    "Action": "lambda:InvokeFunction",
                    # formatted from the fixed names, so a policy reader sees whose functions they are
                    "Resource": [
                        arn(
                            stack,
                            service="lambda",
                            resource="function",
                            resource_name=function,
                            separator=":",
                        )
                        for function in widgets
                    ],
                },
            )
        #: The team's same-day preemption, waiting and overdue-checkpoint alerts (``None`` without a workspace).
        self.rule_group: aps.CfnRuleGroupsNamespace | None = None
        if alert_workspace is not None:
            classes = [
                platform.priority_class(c).workload_priority_class for c in spec.allowed_priority_classes
            ]
            self.rule_group = aps.CfnRuleGroupsNamespace(
                self,
                "PreemptionRules",
                name=names.team_alert_rules(name, spec.name),
                workspace=alert_workspace.attr_arn,
                data=preemption_rules(
                    dataclasses.replace(config, teams=(self.team_config,)),
                    threshold_gpu_hours_per_day=preemption_alarm_gpu_hours_per_day,
                    priority_classes={spec.name: classes},
                    max_pending_minutes=pending_alarm_minutes,
                    checkpoints=True,
                ),
            )

    def _metric(
        self, cluster: str, metric: str, *, period: cdk.Duration, statistic: str
    ) -> cloudwatch.Metric:
        return cloudwatch.Metric(
            namespace=METRIC_NAMESPACE,
            metric_name=metric,
            dimensions_map={"Cluster": cluster, "Team": self.team_config.name},
            statistic=statistic,
            period=period,
            label=metric,
        )

    def _topic(self, cluster: str, team: str) -> sns.Topic:
        """Create the team's encrypted notification topic (its own key, tagged for the eviction collector)."""
        key = kms.Key(
            self,
            "TopicKey",
            enable_key_rotation=True,
            description=f"Preemption notices of team {team} on HyperPod cluster {cluster}",
            removal_policy=cdk.RemovalPolicy.RETAIN,
        )
        cdk.Tags.of(key).add(names.TEAM_TOPIC_KEY_TAG, cluster)
        return sns.Topic(
            self,
            "Topic",
            topic_name=names.chargeback_team_topic(cluster, team),
            display_name=f"{cluster} {team} preemptions",
            master_key=key,
            enforce_ssl=True,
        )

    def _widget(self, cluster: str) -> lambda_.Function:
        return self._widget_function(
            "GpuWidget",
            module="gpu_widget.py",
            function_name=names.team_gpu_widget(cluster, self.team_config.name),
            description=f"Live GPUs of team {self.team_config.name} on {cluster} (custom dashboard widget)",
            environment={"CLUSTER": cluster, "TEAM": self.team_config.name, "NAMESPACE": METRIC_NAMESPACE},
            # GetMetricData has no resource-level permission; the code reads this team's dimensions only
            statement=iam.PolicyStatement(actions=["cloudwatch:GetMetricData"], resources=["*"]),
        )

    def _alert_widget(self, cluster: str, workspace: aps.CfnWorkspace) -> lambda_.Function:
        return self._widget_function(
            "AlertWidget",
            module="alert_widget.py",
            function_name=names.team_alert_widget(cluster, self.team_config.name),
            description=f"Alert state of team {self.team_config.name} on {cluster} (custom dashboard widget)",
            environment={
                "TEAM": self.team_config.name,
                "WORKSPACE_ID": workspace.attr_workspace_id,
                "REGION": attribute(stack_of(self), "region"),
            },
            # ListRules is authorized on the workspace; the code keeps this team's rules and the cluster's
            statement=iam.PolicyStatement(actions=["aps:ListRules"], resources=[workspace.attr_arn]),
        )

    def _widget_function(
        self,
        id: str,
        *,
        module: str,
        function_name: str,
        description: str,
        environment: dict[str, str],
        statement: iam.PolicyStatement,
    ) -> lambda_.Function:
        """Create a team's custom-widget function: ``module`` of the runtime package inline, :attr:`widget_role`.

        ``statement`` (the function's one permission) is added to the shared role.
        """
        source = (Path(runtime_package.__file__).parent / module).read_text(encoding="utf-8")
        function = lambda_.Function(
            self,
            id,
            runtime=_constants().runtime,
            handler="index.handler",
            code=lambda_.Code.from_inline(source),
            timeout=_constants().timeout,
            memory_size=256,
            function_name=function_name,
            description=description,
            environment=environment,
            log_group=(log_group := logs.LogGroup(self, f"{id}Logs", retention=logs.RetentionDays.ONE_YEAR)),
            role=self.widget_role,
        )
        if self._platform_key is None:  # with a key, the stack's property injection encrypts it
            skip_without_key(
                [log_group], "CKV_AWS_158", "the log group", "CloudWatch Logs' service-managed key"
            )
        function.add_to_role_policy(statement)
        skip_checkov_each(function, _WIDGET_CHECKOV_SKIPS)
        return function

    def _dashboard(self, cluster: str) -> cloudwatch.Dashboard:
        team = self.team_config
        dashboard = cloudwatch.Dashboard(
            self,
            "Dashboard",
            dashboard_name=names.chargeback_team_dashboard(cluster, team.name),
            default_interval=_constants().dashboard_interval,
        )
        dashboard.add_widgets(
            cloudwatch.CustomWidget(
                function_arn=self.widget.function_arn,
                title=f"{team.name}: GPUs now, against the guarantee and the ceiling (every 5 minutes)",
                width=24,
                height=7,
                update_on_refresh=True,
                update_on_resize=False,
                update_on_time_range_change=True,
            ),
            cloudwatch.TextWidget(
                markdown=f"# {team.name} (cost center {team.cost_center})\nMonthly GPU-hours on {cluster}; "
                f"reports under `s3://<report bucket>/reports/{cluster}/`.",
                width=24,
                height=2,
            ),
            cloudwatch.GraphWidget(
                title=f"{team.name}: GPU-hours per month",
                left=[
                    self._metric(cluster, m, period=_constants().day, statistic="Sum")
                    for m in MONTHLY_METRICS
                ],
                width=24,
                height=8,
                view=cloudwatch.GraphWidgetView.BAR,
            ),
        )
        return dashboard
