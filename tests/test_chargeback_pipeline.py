"""ChargebackPipeline: the synthesized resources, their least privilege, compliance and the same-day alert rule."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import platforms
import pytest
import yaml
from aws_cdk.assertions import Annotations, Match, Template
from cfn_lint import lint_template
from kube_api_server import KubeApiServer
from pipeline_template import imported_cluster
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from synth import TOKEN, new_app, render_intrinsics, resources_of
from webhook_server import Certificates, WebhookProcess, create_table, platform_webhook_config

from hyperpod_tenancy.chargeback import queries
from hyperpod_tenancy.chargeback.model import BillingRule, config_from_json, team_config_from_json
from hyperpod_tenancy.chargeback.queries import GAP_THRESHOLD_MINUTES
from hyperpod_tenancy.constructs.chargeback.chargeback_pipeline import (
    COLLECTION_ALARMS,
    COST_ALLOCATION_TAG_KEYS,
    EVICTION_COLLECTOR_HANDLER,
    METRIC_NAMESPACE,
    ChargebackPipeline,
    UsageReportChart,
    job_asset_files,
)
from hyperpod_tenancy.errors import TenancyError
from hyperpod_tenancy.k8s import labels as k8s_labels
from hyperpod_tenancy.k8s import posix_identity
from hyperpod_tenancy.k8s.alert_rules import (
    CHECKPOINTS_OVERDUE_SERIES,
    WEBHOOK_LATENCY_SHARE_OF_TIMEOUT,
    preemption_rules,
)
from hyperpod_tenancy.policy import names
from hyperpod_tenancy.stacks import ChargebackOptions, PlatformStage
from hyperpod_tenancy.webhook.metrics import WebhookMetrics
from hyperpod_tenancy.webhook.server import NAMESPACE_REFRESH_ENV

CHART = UsageReportChart(
    oci_repository="oci://111122223333.dkr.ecr.us-east-1.amazonaws.com/mirror/sagemaker-hyperpod-usage-report"
)
PIPELINE = ChargebackOptions(
    billing_rule=BillingRule.RESERVATION,
    idle_owner="platform",
    cost_centers={"research": "cc-1001"},
    usage_report_chart=CHART,
)


class Synthesized:
    def __init__(self, stage: PlatformStage, tmp: Path) -> None:
        self.stage = stage
        assembly = stage.synth()
        self.templates = {s.stack_name: s.template for s in assembly.stacks}
        assert stage.chargeback_stack is not None
        self.stack = stage.chargeback_stack
        self.template = self.templates[self.stack.stack_name]
        self.pipeline = self.stack.pipeline
        self.outdir = tmp


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    from cdk_nag import AwsSolutionsChecks

    tmp = tmp_path_factory.mktemp("chargeback")
    app = new_app(tmp)
    platform = platforms.reference_platform()
    stage = PlatformStage(app, platform.name, platform=platform, chargeback=PIPELINE)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    app.synth()  # raises ValidationFailed on any unacknowledged cdk-nag finding
    return Synthesized(stage, tmp)


def _policy_statements(template: dict[str, Any], role_logical_prefix: str) -> list[dict[str, Any]]:
    found = []
    for policy in resources_of(template, "AWS::IAM::Policy").values():
        roles = json.dumps(policy["Properties"].get("Roles", []))
        if role_logical_prefix in roles:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def test_report_bucket_is_retained_encrypted_tls_only_logged_and_expires_raw(
    synthesized: Synthesized,
) -> None:
    template = Template.from_json(synthesized.template)
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "Properties": Match.object_like(
                {
                    "BucketEncryption": {
                        "ServerSideEncryptionConfiguration": [
                            {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                        ]
                    },
                    "LoggingConfiguration": Match.object_like({"LogFilePrefix": "reportbucket/"}),
                    "LifecycleConfiguration": {
                        "Rules": Match.array_with(
                            [
                                Match.object_like(
                                    {"Id": "expire-raw", "Prefix": "raw/", "ExpirationInDays": 400}
                                )
                            ]
                        )
                    },
                }
            ),
        },
    )
    policies = resources_of(synthesized.template, "AWS::S3::BucketPolicy")
    denies = [
        s
        for p in policies.values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert len(denies) == 2  # the report bucket and its access-log bucket


def test_glue_tables_project_partitions_of_the_collector_and_the_cur(synthesized: Synthesized) -> None:
    tables = {
        t["Properties"]["TableInput"]["Name"]: t["Properties"]["TableInput"]
        for t in resources_of(synthesized.template, "AWS::Glue::Table").values()
    }
    assert sorted(tables) == [
        "clusterqueue",
        "cur",
        "eviction",
        "heartdub",
        "node",
        "partition_usage",
        "pod",
        "workload",
    ]
    # the GPU partitions the eviction collector writes: JSON lines, the collector schema's columns
    partitions = tables["partition_usage"]
    assert partitions["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"].endswith("JsonSerDe")
    assert [(c["Name"], c["Type"]) for c in partitions["StorageDescriptor"]["Columns"]] == list(
        queries.COLLECTOR_COLUMNS["partition_usage"]
    )
    node = tables["node"]
    assert node["Parameters"]["projection.enabled"] == "true"
    assert node["Parameters"]["projection.cluster.values"] == "shared-gpu"
    assert json.dumps(node["Parameters"]["storage.location.template"]).endswith(
        'raw/node/year=${year}/month=${month}/day=${day}/hour=${hour}/cluster=${cluster}/"]]}'
    )
    assert [c["Name"] for c in node["PartitionKeys"]] == ["year", "month", "day", "hour", "cluster"]
    assert (
        node["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"] == "org.openx.data.jsonserde.JsonSerDe"
    )
    assert tables["clusterqueue"]["StorageDescriptor"]["SerdeInfo"]["SerializationLibrary"].endswith(
        "ParquetHiveSerDe"
    )
    # the operator's heartbeat is partitioned by the hour only, its cluster a column (its CloudFormation template,
    # cloudformation/usage-report.yaml HeartdubTable at awslabs/sagemaker-hyperpod-usage-report@e71f39ae)
    heartbeat = tables["heartdub"]
    assert [c["Name"] for c in heartbeat["PartitionKeys"]] == ["year", "month", "day", "hour"]
    assert [(c["Name"], c["Type"]) for c in heartbeat["StorageDescriptor"]["Columns"]] == [
        ("timestamp", "timestamp"),
        ("cluster", "string"),
    ]
    assert "projection.cluster.type" not in heartbeat["Parameters"]
    assert json.dumps(heartbeat["Parameters"]["storage.location.template"]).endswith(
        'raw/heartdub/year=${year}/month=${month}/day=${day}/hour=${hour}/"]]}'
    )
    cur = tables["cur"]
    assert cur["Parameters"]["projection.billing_period.type"] == "date"
    assert "BILLING_PERIOD=${billing_period}/" in json.dumps(cur["Parameters"]["storage.location.template"])
    # every column the chargeback SQL reads is declared
    columns = {c["Name"] for c in cur["StorageDescriptor"]["Columns"]}
    assert {"line_item_product_code", "line_item_usage_type", "line_item_usage_amount"} <= columns
    assert {"line_item_unblended_cost", "resource_tags"} <= columns


def test_athena_workgroup_has_a_results_location_and_a_scan_cutoff(synthesized: Synthesized) -> None:
    Template.from_json(synthesized.template).has_resource_properties(
        "AWS::Athena::WorkGroup",
        {
            "Name": "shared-gpu-chargeback",
            "WorkGroupConfiguration": Match.object_like(
                {
                    "BytesScannedCutoffPerQuery": 100 * 1024**3,
                    "EnforceWorkGroupConfiguration": True,
                    "ResultConfiguration": {
                        "OutputLocation": Match.any_value(),
                        "EncryptionConfiguration": {"EncryptionOption": "SSE_S3"},
                    },
                }
            ),
        },
    )


def test_data_export_in_us_east_1_waits_for_the_bucket_policy(synthesized: Synthesized) -> None:
    exports = resources_of(synthesized.template, "AWS::BCMDataExports::Export")
    ((_, export),) = exports.items()
    destination = export["Properties"]["Export"]["DestinationConfigurations"]["S3Destination"]
    assert destination["S3Prefix"] == "cur"
    assert export["Properties"]["Export"]["RefreshCadence"] == {"Frequency": "SYNCHRONOUS"}
    policy_id = next(iter(resources_of(synthesized.template, "AWS::S3::BucketPolicy")))
    assert any(
        policy_id == d or d.startswith("ChargebackStorageReportBucketPolicy") for d in export["DependsOn"]
    )


def test_operator_writes_only_under_raw_and_its_rbac_is_the_charts(synthesized: Synthesized) -> None:
    statements = _policy_statements(synthesized.template, "ChargebackOperatorRole")
    actions = {
        a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions <= {
        "s3:PutObject",
        "s3:PutObjectLegalHold",
        "s3:PutObjectRetention",
        "s3:PutObjectTagging",
        "s3:PutObjectVersionTagging",
        "s3:Abort*",
    }
    resources = json.dumps([s["Resource"] for s in statements])
    assert "/raw/*" in resources
    Template.from_json(synthesized.template).has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "hyperpod-usage-report", "ServiceAccount": "hyperpod-usage-report"},
    )
    charts = resources_of(synthesized.template, "Custom::AWSCDK-EKS-HelmChart")
    ((_, chart),) = charts.items()
    values = json.loads(render_intrinsics(chart["Properties"]["Values"]))
    assert values["clusterName"] == "shared-gpu"
    assert values["serviceAccount"] == {"create": True, "name": "hyperpod-usage-report"}
    assert values["s3BucketName"] == TOKEN
    assert chart["Properties"]["Namespace"] == "hyperpod-usage-report"
    assert chart["Properties"].get("CreateNamespace") in (None, False)


def test_monthly_job_is_least_privilege(synthesized: Synthesized) -> None:
    statements = _policy_statements(synthesized.template, "ChargebackMonthlyJobServiceRole")
    by_sid = {s.get("Sid"): s for s in statements if s.get("Sid")}
    assert by_sid["Metrics"]["Condition"] == {"StringEquals": {"cloudwatch:namespace": METRIC_NAMESPACE}}
    assert by_sid["Athena"]["Resource"] != "*"
    publish = [s for s in statements if s["Action"] == "sns:Publish"]
    assert publish and all("Ref" in s["Resource"] for s in publish)
    everything = json.dumps(statements)
    for prefix in ("/raw/*", "/cur/*", "/athena-results/*", "/reports/*"):
        assert prefix in everything
    wildcard_resources = [s for s in statements if s["Resource"] == "*"]
    assert [s.get("Sid") for s in wildcard_resources] == ["Metrics"]


def test_monthly_job_can_tell_a_missing_configuration_of_record_from_a_denied_one(
    synthesized: Synthesized,
) -> None:
    """A re-run reads ``reports/<cluster>/<month>/config.json`` and bills under the deployed configuration when it
    is absent. S3 answers a GetObject of a missing key with 404 NoSuchKey only to a caller that may also
    s3:ListBucket the bucket, otherwise with 403 AccessDenied (Amazon S3 API Reference, GetObject, "Permissions"),
    and the job treats only NoSuchKey as absent: without the list grant, a month's first run would fail."""

    def actions(statement: dict[str, Any]) -> list[str]:
        action = statement["Action"]
        return [action] if isinstance(action, str) else list(action)

    def resources(statement: dict[str, Any]) -> str:
        return json.dumps(statement["Resource"])

    statements = _policy_statements(synthesized.template, "ChargebackMonthlyJobServiceRole")
    reads = [s for s in statements if "s3:GetObject*" in actions(s) and "/reports/*" in resources(s)]
    assert reads, "the job must read back reports/"
    lists = [
        s
        for s in statements
        if {"s3:List*", "s3:ListBucket"} & set(actions(s)) and "/*" not in resources(s)  # the bucket itself
    ]
    assert lists, "the job must be able to list the report bucket"
    writes = [a for s in statements if "/reports/*" in resources(s) for a in actions(s)]
    assert not [a for a in writes if a.startswith("s3:DeleteObject")], "reports are never deleted by the job"


def test_schedules_monthly_job_on_the_first_and_inventory_every_five_minutes(
    synthesized: Synthesized,
) -> None:
    schedules = sorted(
        r["Properties"]["ScheduleExpression"]
        for r in resources_of(synthesized.template, "AWS::Events::Rule").values()
    )
    # the monthly job, its daily roster; the node inventory and the eviction collector every 5 minutes; the drift
    # audit (tests/test_drift_audit_lambda.py) once a day
    assert schedules == [
        "cron(0 6 1 * ? *)",
        "cron(30 5 * * ? *)",
        "rate(1 day)",
        "rate(5 minutes)",
        "rate(5 minutes)",
    ]


def test_dashboards_one_per_team_in_its_stack_and_one_for_the_platform(synthesized: Synthesized) -> None:
    names_ = [
        d["Properties"]["DashboardName"]
        for d in resources_of(synthesized.template, "AWS::CloudWatch::Dashboard").values()
    ]
    assert names_ == ["shared-gpu-chargeback"]  # the platform's: search expressions, no team listed
    for team, stack in synthesized.stage.team_stacks.items():
        (dashboard,) = resources_of(
            synthesized.templates[stack.stack_name], "AWS::CloudWatch::Dashboard"
        ).values()
        assert dashboard["Properties"]["DashboardName"] == f"shared-gpu-chargeback-{team}"


def test_each_team_stack_has_its_own_encrypted_topic_the_collector_publishes_to(
    synthesized: Synthesized,
) -> None:
    """A topic per team, in the team's stack, with a key of its own tagged for the eviction collector; the
    collector's role may publish to the teams' topics and use their keys through SNS only."""
    for team, stack in synthesized.stage.team_stacks.items():
        template = synthesized.templates[stack.stack_name]
        (topic,) = resources_of(template, "AWS::SNS::Topic").values()
        assert topic["Properties"]["TopicName"] == f"shared-gpu-preemptions-{team}"
        key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
        key = template["Resources"][key_id]
        assert key["Properties"]["EnableKeyRotation"] is True
        assert {"Key": "hyperpod-tenancy:preemption-topic", "Value": "shared-gpu"} in key["Properties"][
            "Tags"
        ]
    statements = _policy_statements(synthesized.template, "ChargebackEvictionCollectorServiceRole")
    (publish,) = [s for s in statements if s.get("Sid") == "TeamTopics"]
    assert publish["Action"] == "sns:Publish"
    assert publish["Resource"] == "arn:aws:sns:us-east-1:111122223333:shared-gpu-preemptions-*"


def test_cost_allocation_tags_are_activated_and_team_stacks_tagged(synthesized: Synthesized) -> None:
    ((_, custom),) = resources_of(synthesized.template, "Custom::AWS").items()
    create = json.loads(render_intrinsics(custom["Properties"]["Create"]))
    assert create["action"] == "updateCostAllocationTagsStatus"
    assert [t["TagKey"] for t in create["parameters"]["CostAllocationTagsStatus"]] == list(
        COST_ALLOCATION_TAG_KEYS
    )
    research = synthesized.templates[synthesized.stage.team_stacks["research"].stack_name]
    tagged = [
        r["Properties"]["Tags"]
        for r in research["Resources"].values()
        if isinstance(r.get("Properties", {}).get("Tags"), list)
    ]
    assert tagged
    for tags in tagged:
        pairs = {t["Key"]: t["Value"] for t in tags}
        assert pairs["hyperpod-tenancy:team"] == "research"
        assert pairs["hyperpod-tenancy:cost-center"] == "cc-1001"


def test_alerts_route_to_the_topic_from_the_cluster_workspace(synthesized: Synthesized) -> None:
    cluster = synthesized.templates[synthesized.stage.cluster_stack.stack_name]
    ((_, workspace),) = resources_of(cluster, "AWS::APS::Workspace").items()
    definition = json.dumps(workspace["Properties"]["AlertManagerDefinition"])
    assert "sns_configs" in definition and ":shared-gpu-chargeback" in definition
    topic_policy = json.dumps(resources_of(synthesized.template, "AWS::SNS::TopicPolicy"))
    assert "aps.amazonaws.com" in topic_policy and "aws:SourceArn" in topic_policy


def test_an_alarm_fires_when_a_collector_stops_writing_for_longer_than_its_gap_threshold(
    synthesized: Synthesized,
) -> None:
    """The node inventory and the operator's heartbeat are watched through S3 request metrics of their prefix,
    the eviction collector (which writes only evictions) through its successful runs: three periods in a row with
    nothing, or no data at all, is the gap threshold of the report (queries.GAP_THRESHOLD_MINUTES)."""
    template = synthesized.template
    ((_, bucket),) = (
        (k, r)
        for k, r in resources_of(template, "AWS::S3::Bucket").items()
        if "MetricsConfigurations" in r["Properties"]
    )
    filters = {m["Id"]: m["Prefix"] for m in bucket["Properties"]["MetricsConfigurations"]}
    assert filters == {
        metrics_filter: f"raw/{table}/" for table, metrics_filter in COLLECTION_ALARMS.values()
    }
    # S3 API Reference, MetricsConfiguration: "The ID has a 64 character limit and can only contain letters,
    # numbers, periods, dashes, and underscores."
    assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,64}", f) for f in filters)
    alarms = {
        a["Properties"]["AlarmName"]: a["Properties"]
        for a in resources_of(template, "AWS::CloudWatch::Alarm").values()
        # the collectors' (the drift audit's is tests/test_drift_audit_lambda.py's)
        if a["Properties"]["AlarmName"].endswith("-stopped")
    }
    assert sorted(alarms) == [
        "shared-gpu-chargeback-eviction-collector-stopped",
        "shared-gpu-chargeback-node-inventory-stopped",
        "shared-gpu-chargeback-usage-report-operator-stopped",
    ]
    ((topic_id, _),) = resources_of(template, "AWS::SNS::Topic").items()
    for name, alarm in alarms.items():
        assert alarm["ComparisonOperator"] == "LessThanThreshold" and alarm["Threshold"] == 1, name
        assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (3, 3), name
        assert alarm["TreatMissingData"] == "breaching", name
        assert alarm["AlarmActions"] == [{"Ref": topic_id}], name
    for collector, (table, metrics_filter) in COLLECTION_ALARMS.items():
        alarm = alarms[f"shared-gpu-chargeback-{collector}-stopped"]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == (
            "AWS/S3",
            "PutRequests",
            "Sum",
        )
        dimensions = {d["Name"]: d["Value"] for d in alarm["Dimensions"]}
        assert dimensions["FilterId"] == metrics_filter and "Ref" in dimensions["BucketName"]
        assert 3 * alarm["Period"] == 60 * GAP_THRESHOLD_MINUTES[table]
        # CloudWatch PutMetricAlarm: Period is 10, 20, 30 or a multiple of 60 seconds
        assert alarm["Period"] % 60 == 0
    runs = alarms["shared-gpu-chargeback-eviction-collector-stopped"]["Metrics"]
    (expression,) = [m for m in runs if "Expression" in m]
    assert expression["Expression"] == "FILL(invocations, 0) - FILL(errors, 0)" and expression["ReturnData"]
    watched = {m["Id"]: m["MetricStat"]["Metric"]["MetricName"] for m in runs if "MetricStat" in m}
    assert watched == {"invocations": "Invocations", "errors": "Errors"}
    assert all(m["MetricStat"]["Period"] * 3 == 15 * 60 for m in runs if "MetricStat" in m)


def test_alarms_can_publish_to_the_encrypted_topic(synthesized: Synthesized) -> None:
    """CloudWatch publishes to a KMS-encrypted topic only with kms:GenerateDataKey* and kms:Decrypt on its key (SNS
    Developer Guide, "Managing Amazon SNS encryption keys", compatibility with AWS services), and, the topic policy
    replacing SNS's default one, only where the topic policy lets cloudwatch.amazonaws.com publish: for this
    account's alarms whose names the pipeline gives."""
    template = synthesized.template
    ((_, topic),) = resources_of(template, "AWS::SNS::Topic").items()
    key_id = topic["Properties"]["KmsMasterKeyId"]["Fn::GetAtt"][0]
    key_statements = template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    (grant,) = [s for s in key_statements if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}]
    assert sorted(grant["Action"]) == ["kms:Decrypt", "kms:GenerateDataKey*"] and grant["Effect"] == "Allow"
    ((_, policy),) = resources_of(template, "AWS::SNS::TopicPolicy").items()
    (publish,) = [
        s
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s.get("Principal") == {"Service": "cloudwatch.amazonaws.com"}
    ]
    assert publish["Action"] == "sns:Publish" and publish["Effect"] == "Allow"
    pattern = render_intrinsics(publish["Condition"]["ArnLike"]["aws:SourceArn"])
    assert pattern == "arn:aws:cloudwatch:us-east-1:111122223333:alarm:shared-gpu-chargeback-*"
    assert "aws:SourceAccount" in publish["Condition"]["StringEquals"]
    names = [a["Properties"]["AlarmName"] for a in resources_of(template, "AWS::CloudWatch::Alarm").values()]
    assert names and all(fnmatch.fnmatchcase(name, pattern.rsplit(":", 1)[1]) for name in names)


def test_cfn_lint_is_clean_on_the_chargeback_and_cluster_stacks(synthesized: Synthesized) -> None:
    accepted = {"W3005", "W3010"}
    for name in (synthesized.stack.stack_name, synthesized.stage.cluster_stack.stack_name):
        matches = lint_template(synthesized.templates[name], "us-east-1")
        problems = [f"{m.rule.id} {m.message}" for m in matches if m.rule.id not in accepted]
        assert not problems, f"{name}: {problems}"


def test_job_asset_carries_the_stdlib_engine_and_the_config(synthesized: Synthesized) -> None:
    files = job_asset_files(synthesized.pipeline.config)
    assert "hyperpod_tenancy/runtime/chargeback_job.py" in files
    assert "hyperpod_tenancy/chargeback/sql/hourly_usage.sql" in files
    assert config_from_json(files["chargeback_config.json"].decode()) == synthesized.pipeline.config
    assert job_asset_files(synthesized.pipeline.config) == files  # deterministic
    assert not any("__pycache__" in path for path in files)


def test_the_job_bills_the_team_records_of_the_team_stacks(synthesized: Synthesized) -> None:
    """The job's asset lists no team; each team stack writes its record (cost center, quotas) under the path the
    job reads, which its role may read and nothing else of SSM."""
    platform_config = synthesized.pipeline.platform_config
    assert platform_config.teams == ()
    assert platform_config == dataclasses.replace(synthesized.pipeline.config, teams=())
    (job,) = [
        f["Properties"]
        for f in resources_of(synthesized.template, "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == "hyperpod_tenancy.runtime.chargeback_job.handler"
    ]
    path = job["Environment"]["Variables"]["TEAM_RECORDS_PATH"]
    assert path == "/hyperpod-tenancy/shared-gpu/chargeback/"
    for team in synthesized.stage.platform.hosted_teams:
        stack = synthesized.templates[synthesized.stage.team_stacks[team.name].stack_name]
        (record,) = [
            r["Properties"]
            for r in resources_of(stack, "AWS::SSM::Parameter").values()
            if r["Properties"]["Name"].startswith(path)
        ]
        assert record["Name"] == path + team.name
        assert team_config_from_json(record["Value"]) == next(
            t for t in synthesized.pipeline.config.teams if t.name == team.name
        )
    ssm = [
        s
        for s in _policy_statements(synthesized.template, "MonthlyJob")
        if any(
            str(a).startswith("ssm:")
            for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
        )
    ]
    assert [s["Action"] for s in ssm] == ["ssm:GetParametersByPath"]
    assert all(path.rstrip("/") in render_intrinsics(r) for r in ssm[0]["Resource"])


def test_outside_native_regions_no_export_and_a_warning_naming_the_alternative(tmp_path: Path) -> None:
    platform = platforms.reference_platform()
    app = new_app(tmp_path)
    stack = cdk.Stack(app, "Cb", env=cdk.Environment(account="111122223333", region="eu-west-1"))
    ChargebackPipeline(
        stack,
        "Chargeback",
        cluster=imported_cluster(stack, platform),
        billing_rule=BillingRule.USAGE,
        idle_owner="shared",
    )
    template = Template.from_stack(stack)
    template.resource_count_is("AWS::BCMDataExports::Export", 0)
    template.resource_count_is("AWS::APS::RuleGroupsNamespace", 0)
    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("HPT-CHARGEBACK-DATA-EXPORT")
    )
    assert warnings and "bcm-data-exports create-export --region us-east-1" in json.dumps(
        warnings[0].entry.data
    )
    assert Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("HPT-CHARGEBACK-OPERATOR")
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"idle_owner": ""}, "idle_owner is empty"),
        ({"cost_centers": {"nobody": "cc"}}, "not teams of the cluster"),
        ({"preemption_alarm_gpu_hours_per_day": 0}, "positive number of GPU-hours"),
        ({"pending_alarm_minutes": 0}, "positive number of minutes"),
        ({"usage_report_chart": UsageReportChart()}, "exactly one of oci_repository or directory"),
    ],
)
def test_fails_on_contradictory_props(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    platform = platforms.reference_platform()
    stack = cdk.Stack(
        new_app(tmp_path), "Cb", env=cdk.Environment(account="111122223333", region="eu-west-1")
    )
    props: dict[str, Any] = {"billing_rule": BillingRule.USAGE, "idle_owner": "shared", **kwargs}
    with pytest.raises(TenancyError, match=message):
        ChargebackPipeline(stack, "Chargeback", cluster=imported_cluster(stack, platform), **props)


# ---------------------------------------------------------------------- the rule file, checked by promtool

PROMTOOL = shutil.which("promtool")


@pytest.fixture
def _promtool() -> None:
    """Fail (never skip) without promtool: the alerting rules are only checked by it."""
    if PROMTOOL is None:
        pytest.fail(
            "promtool is not installed: run `make promtool` (Debian's prometheus package)", pytrace=False
        )


needs_promtool = pytest.mark.usefixtures("_promtool")


def _cluster_rules(synthesized: Synthesized) -> dict[str, Any]:
    """The chargeback stack's one rule groups namespace: the cluster-wide alerts, no team's."""
    ((_, rules),) = resources_of(synthesized.template, "AWS::APS::RuleGroupsNamespace").items()
    assert rules["Properties"]["Name"] == "shared-gpu-chargeback.cluster"
    assert "hyperpod-ns-" not in rules["Properties"]["Data"]
    return rules


def _team_rules(synthesized: Synthesized, team: str) -> dict[str, Any]:
    """The rule groups namespace of a team: in its own stack, not in the chargeback stack."""
    _cluster_rules(synthesized)
    stack = synthesized.stage.team_stacks[team].stack_name
    ((_, rules),) = resources_of(synthesized.templates[stack], "AWS::APS::RuleGroupsNamespace").items()
    assert rules["Properties"]["Name"] == f"shared-gpu-chargeback-{team}"
    return rules


def _rules_files(synthesized: Synthesized, tmp_path: Path) -> list[str]:
    paths = []
    for team in sorted(synthesized.stage.team_stacks):
        path = tmp_path / f"rules-{team}.yaml"
        path.write_text(yaml.safe_dump(json.loads(_team_rules(synthesized, team)["Properties"]["Data"])))
        paths.append(str(path))
    path = tmp_path / "rules-cluster.yaml"
    path.write_text(yaml.safe_dump(json.loads(_cluster_rules(synthesized)["Properties"]["Data"])))
    paths.append(str(path))
    return paths


def _promtool_test(tmp_path: Path, rules: list[str], series: list[dict[str, str]], alerts: list[Any]) -> None:
    """Run ``promtool test rules`` on ``rules`` with one test: ``series`` every minute, ``alerts`` checked."""
    tests = {
        "rule_files": rules,
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": alerts}],
    }
    path = tmp_path / "rules_test.yaml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [PROMTOOL or "", "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _rule(synthesized: Synthesized, alert: str, **labels: str) -> dict[str, Any]:
    resources = [_cluster_rules(synthesized)] + [
        _team_rules(synthesized, team) for team in sorted(synthesized.stage.team_stacks)
    ]
    for resource in resources:
        for group in json.loads(resource["Properties"]["Data"])["groups"]:
            for rule in group["rules"]:
                if rule["alert"] == alert and labels.items() <= rule["labels"].items():
                    return dict(rule)
    raise AssertionError(alert, labels)


def _expected(rule: dict[str, Any], value: str) -> dict[str, Any]:
    return {
        "exp_labels": rule["labels"],
        "exp_annotations": {
            k: v.replace('{{ $value | printf "%.0f" }}', value) for k, v in rule["annotations"].items()
        },
    }


_PENDING = (
    'kueue_pending_workloads{{cluster_queue="hyperpod-ns-{team}-clusterqueue",status="{status}",'
    'replica_role="{role}"}}'
)


@needs_promtool
def test_a_workload_never_admitted_alerts_after_the_teams_threshold(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    # research: one workload pending from t0 and never admitted (Kueue's gauge stays at 1, inadmissible after
    # its first attempt); vision: a workload admitted after 30 minutes; the follower replica's copy is ignored
    rule = _rule(synthesized, "HyperPodTenancyWorkloadsWaiting", team="research")
    assert rule["for"] == "60m"
    series = [
        {"series": _PENDING.format(team="research", status="active", role="leader"), "values": "1 0x150"},
        {
            "series": _PENDING.format(team="research", status="inadmissible", role="leader"),
            "values": "0 1x150",
        },
        {"series": _PENDING.format(team="vision", status="active", role="leader"), "values": "1x30 0x120"},
        {"series": _PENDING.format(team="vision", status="active", role="follower"), "values": "1x150"},
    ]
    _promtool_test(
        tmp_path,
        _rules_files(synthesized, tmp_path),
        series,
        [
            {"eval_time": "59m", "alertname": "HyperPodTenancyWorkloadsWaiting", "exp_alerts": []},
            {
                "eval_time": "2h",
                "alertname": "HyperPodTenancyWorkloadsWaiting",
                "exp_alerts": [_expected(rule, "1")],
            },
        ],
    )


_ATTEMPTS = 'kueue_admission_attempts_total{{result="{result}",replica_role="leader"}}'


@needs_promtool
def test_admission_stalled_alerts_when_queued_work_gets_no_attempt(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    rule = _rule(synthesized, "HyperPodTenancyAdmissionStalled")
    rules = _rules_files(synthesized, tmp_path)
    queued = {"series": _PENDING.format(team="research", status="active", role="leader"), "values": "3x60"}
    # attempts every minute for 20 minutes, then none: stalled from 0h20m, alerting 10m + 5m later
    stalls = {"series": _ATTEMPTS.format(result="inadmissible"), "values": "0+1x20 20x40"}
    _promtool_test(
        tmp_path,
        rules,
        [queued, stalls],
        [
            {"eval_time": "30m", "alertname": "HyperPodTenancyAdmissionStalled", "exp_alerts": []},
            {
                "eval_time": "40m",
                "alertname": "HyperPodTenancyAdmissionStalled",
                "exp_alerts": [_expected(rule, "3")],
            },
        ],
    )
    # the scheduler keeps trying (and failing): no alert
    trying = {"series": _ATTEMPTS.format(result="inadmissible"), "values": "0+1x60"}
    _promtool_test(
        tmp_path,
        rules,
        [queued, trying],
        [{"eval_time": "50m", "alertname": "HyperPodTenancyAdmissionStalled", "exp_alerts": []}],
    )


def _node_series(nodes: dict[str, tuple[str, str, bool]]) -> list[dict[str, str]]:
    """kube-state-metrics series of ``nodes``: name → (instance type, Ready condition values, HyperPod taint)."""
    series = []
    for node, (instance_type, ready, tainted) in nodes.items():
        series.append(
            {
                "series": f'kube_node_labels{{node="{node}",label_node_kubernetes_io_instance_type="{instance_type}"}}',
                "values": "1x30",
            }
        )
        series.append(
            {
                "series": f'kube_node_status_condition{{node="{node}",condition="Ready",status="true"}}',
                "values": ready,
            }
        )
        series.append({"series": f'kube_node_spec_unschedulable{{node="{node}"}}', "values": "0x30"})
        if tainted:
            series.append(
                {
                    "series": f'kube_node_spec_taint{{node="{node}",key="sagemaker.amazonaws.com/node-health-status",'
                    'value="UnschedulablePendingReplacement",effect="NoSchedule"}',
                    "values": "1x30",
                }
            )
    return series


@needs_promtool
def test_more_unavailable_nodes_of_a_type_than_reserved_alerts(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    # the reference policy reserves 1 ml.p5.48xlarge: one NotReady node is covered, a second (tainted by
    # HyperPod for replacement) is not; one NotReady ml.g5.12xlarge is within its 1 reserved
    rule = _rule(synthesized, "HyperPodTenancyNodesUnavailable", instance_type="ml.p5.48xlarge")
    assert rule["expr"].endswith("> 1")
    nodes = {
        "hyperpod-i-0001": ("ml.p5.48xlarge", "0x30", False),
        "hyperpod-i-0002": ("ml.p5.48xlarge", "1x30", True),
        "hyperpod-i-0003": ("ml.p5.48xlarge", "1x30", False),
        "hyperpod-i-0101": ("ml.g5.12xlarge", "0x30", False),
    }
    _promtool_test(
        tmp_path,
        _rules_files(synthesized, tmp_path),
        _node_series(nodes),
        [
            {"eval_time": "9m", "alertname": "HyperPodTenancyNodesUnavailable", "exp_alerts": []},
            {
                "eval_time": "15m",
                "alertname": "HyperPodTenancyNodesUnavailable",
                "exp_alerts": [_expected(rule, "2")],
            },
            {"eval_time": "15m", "alertname": "HyperPodTenancyNodeTypeUnknown", "exp_alerts": []},
        ],
    )
    # without the instance-type label (not allowlisted in kube-state-metrics) the companion alert fires
    unknown = _rule(synthesized, "HyperPodTenancyNodeTypeUnknown")
    unlabelled = [{"series": 'kube_node_labels{node="hyperpod-i-0001"}', "values": "1x40"}]
    _promtool_test(
        tmp_path,
        _rules_files(synthesized, tmp_path),
        unlabelled,
        [
            {
                "eval_time": "35m",
                "alertname": "HyperPodTenancyNodeTypeUnknown",
                "exp_alerts": [_expected(unknown, "")],
            }
        ],
    )


# ------------------------------------------------------------------ the POSIX identity webhook's alerts


def _rendered(rule: dict[str, Any], value: str) -> dict[str, Any]:
    """The labels and annotations the rule fires with when its expression has ``value``."""
    return {
        "exp_labels": rule["labels"],
        "exp_annotations": {
            k: re.sub(r"\{\{ \$value \| [^}]* \}\}", value, v) for k, v in rule["annotations"].items()
        },
    }


def _webhook_exposition() -> list[tuple[str, dict[str, str]]]:
    """(sample name, labels) of the webhook's own exposition, once a request of each outcome was observed."""
    metrics = WebhookMetrics(ready=lambda: True, team_namespaces=lambda: 2, team_records_loaded=lambda: True)
    for result in posix_identity.ADMISSION_OUTCOMES:
        metrics.observe(path=posix_identity.MUTATE_PATH, result=result, seconds=0.01)
    text = generate_latest(metrics.registry).decode()
    return [(s.name, dict(s.labels)) for f in text_string_to_metric_families(text) for s in f.samples]


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    """One input series, with the pod label a collector adds to what it scrapes."""
    body = ",".join(f'{k}="{v}"' for k, v in {**labels, "pod": "posix-identity-webhook-0"}.items())
    return {"series": f"{name}{{{body}}}", "values": values}


def _requests(per_minute: dict[str, float]) -> list[dict[str, str]]:
    """The exposition's request counters, ``/mutate`` growing by ``per_minute[outcome]``, the rest flat."""
    return [
        _series(
            name,
            labels,
            f"0+{per_minute.get(labels['outcome'], 0) if labels['path'] == '/mutate' else 0:g}x40",
        )
        for name, labels in _webhook_exposition()
        if name == posix_identity.ADMISSION_REQUESTS_METRIC
    ]


def _latency(per_minute: float, *, between: tuple[float, float]) -> list[dict[str, str]]:
    """The exposition's histogram series: ``per_minute`` requests on ``/mutate``, each lasting within ``between``."""
    histogram = posix_identity.ADMISSION_DURATION_METRIC
    low, high = between
    series = []
    for name, labels in _webhook_exposition():
        rate = per_minute if labels.get("path") == "/mutate" else 0
        if name == f"{histogram}_bucket":
            series.append(_series(name, labels, f"0+{rate if float(labels['le']) >= high else 0:g}x40"))
        elif name == f"{histogram}_count":
            series.append(_series(name, labels, f"0+{rate:g}x40"))
        elif name == f"{histogram}_sum":
            series.append(_series(name, labels, f"0+{rate * (low + high) / 2:g}x40"))
    return series


@needs_promtool
def test_webhook_errors_alert_above_the_ratio_and_not_on_denials_or_a_quiet_cluster(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    rule = _rule(synthesized, "HyperPodTenancyWebhookErrors")
    rules = _rules_files(synthesized, tmp_path)
    alert = "HyperPodTenancyWebhookErrors"
    # 10 % of 100 requests a minute are errors (DynamoDB down, say)
    _promtool_test(
        tmp_path,
        rules,
        _requests({"allowed": 90, "error": 10}),
        [
            {"eval_time": "4m", "alertname": alert, "exp_alerts": []},
            {"eval_time": "15m", "alertname": alert, "exp_alerts": [_rendered(rule, "10%")]},
        ],
    )
    # denials are the webhook doing its job; 1 % errors is below the threshold
    _promtool_test(
        tmp_path,
        rules,
        _requests({"allowed": 49, "denied": 50, "error": 1}),
        [{"eval_time": "20m", "alertname": alert, "exp_alerts": []}],
    )
    # a quiet cluster: every request fails, but one every two minutes
    _promtool_test(
        tmp_path,
        rules,
        _requests({"error": 0.5}),
        [{"eval_time": "20m", "alertname": alert, "exp_alerts": []}],
    )


@needs_promtool
def test_webhook_p99_latency_alerts_well_below_the_timeout(synthesized: Synthesized, tmp_path: Path) -> None:
    rule = _rule(synthesized, "HyperPodTenancyWebhookSlow")
    timeout = synthesized.stage.cluster_stack.cluster.posix_identity.timeout_seconds
    threshold = timeout * WEBHOOK_LATENCY_SHARE_OF_TIMEOUT
    assert threshold < timeout / 2 and f" > {threshold:g} and on() " in rule["expr"]
    assert f"timeoutSeconds is {timeout})" in rule["annotations"]["summary"]
    rules = _rules_files(synthesized, tmp_path)
    alert = "HyperPodTenancyWebhookSlow"
    # 100 requests a minute, each between 2 and 3 s: p99 interpolates to 2.99 s in the (2, 3] bucket
    assert {2.0, 3.0} <= {float(labels["le"]) for _, labels in _webhook_exposition() if "le" in labels}
    _promtool_test(
        tmp_path,
        rules,
        _latency(100, between=(2.0, 3.0)),
        [
            {"eval_time": "9m", "alertname": alert, "exp_alerts": []},
            {"eval_time": "20m", "alertname": alert, "exp_alerts": [_rendered(rule, "2.99")]},
        ],
    )
    for fast_or_quiet in (_latency(100, between=(0.005, 0.01)), _latency(0.5, between=(2.0, 3.0))):
        _promtool_test(
            tmp_path, rules, fast_or_quiet, [{"eval_time": "20m", "alertname": alert, "exp_alerts": []}]
        )


def _deployment(*, spec: str, available: str, unavailable: str) -> list[dict[str, str]]:
    """kube-state-metrics' series of the webhook Deployment (namespace and name from the manifests module)."""
    selector = f'namespace="{posix_identity.WEBHOOK_NAMESPACE}",deployment="{posix_identity.DEPLOYMENT}"'
    return [
        {"series": f"kube_deployment_spec_replicas{{{selector}}}", "values": spec},
        {"series": f"kube_deployment_status_replicas_available{{{selector}}}", "values": available},
        {"series": f"kube_deployment_status_replicas_unavailable{{{selector}}}", "values": unavailable},
    ]


def _ready() -> list[dict[str, str]]:
    """The webhook's ready gauge as scraped (its one unlabelled series of the exposition)."""
    return [
        _series(name, labels, "1x40")
        for name, labels in _webhook_exposition()
        if name == posix_identity.READY_METRIC
    ]


@needs_promtool
def test_webhook_replicas_unavailable_warns_and_all_unavailable_is_critical(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    some = _rule(synthesized, "HyperPodTenancyWebhookReplicasUnavailable")
    down = _rule(synthesized, "HyperPodTenancyWebhookDown")
    assert (some["labels"]["severity"], down["labels"]["severity"]) == ("warning", "critical")
    rules = _rules_files(synthesized, tmp_path)
    # one of two replicas unavailable from minute 5: a warning after 10 minutes, never critical
    one = _deployment(spec="2x40", available="2x5 1x35", unavailable="0x5 1x35")
    _promtool_test(
        tmp_path,
        rules,
        one + _ready(),
        [
            {"eval_time": "12m", "alertname": some["alert"], "exp_alerts": []},
            {"eval_time": "20m", "alertname": some["alert"], "exp_alerts": [_rendered(some, "1")]},
            {"eval_time": "20m", "alertname": down["alert"], "exp_alerts": []},
            {"eval_time": "20m", "alertname": "HyperPodTenancyWebhookMetricsMissing", "exp_alerts": []},
        ],
    )
    # both unavailable: critical after 2 minutes (and no metrics-missing alert: nothing is there to scrape)
    both = _deployment(spec="2x40", available="0x40", unavailable="2x40")
    _promtool_test(
        tmp_path,
        rules,
        both,
        [
            {"eval_time": "1m", "alertname": down["alert"], "exp_alerts": []},
            {"eval_time": "5m", "alertname": down["alert"], "exp_alerts": [_rendered(down, "2")]},
            {"eval_time": "20m", "alertname": "HyperPodTenancyWebhookMetricsMissing", "exp_alerts": []},
        ],
    )
    # all available: silent
    healthy = _deployment(spec="2x40", available="2x40", unavailable="0x40")
    _promtool_test(
        tmp_path,
        rules,
        healthy + _ready(),
        [
            {"eval_time": "30m", "alertname": some["alert"], "exp_alerts": []},
            {"eval_time": "30m", "alertname": down["alert"], "exp_alerts": []},
        ],
    )


@needs_promtool
def test_webhook_metrics_missing_while_replicas_run_alerts(synthesized: Synthesized, tmp_path: Path) -> None:
    missing = _rule(synthesized, "HyperPodTenancyWebhookMetricsMissing")
    unseen = _rule(synthesized, "HyperPodTenancyWebhookDeploymentUnseen")
    rules = _rules_files(synthesized, tmp_path)
    healthy = _deployment(spec="2x40", available="2x40", unavailable="0x40")
    # two replicas available, no webhook series at all: the collector does not scrape them
    _promtool_test(
        tmp_path,
        rules,
        healthy,
        [
            {"eval_time": "10m", "alertname": missing["alert"], "exp_alerts": []},
            {"eval_time": "20m", "alertname": missing["alert"], "exp_alerts": [_rendered(missing, "2")]},
            {"eval_time": "35m", "alertname": unseen["alert"], "exp_alerts": []},
        ],
    )
    # scraped: silent
    _promtool_test(
        tmp_path,
        rules,
        healthy + _ready(),
        [{"eval_time": "30m", "alertname": missing["alert"], "exp_alerts": []}],
    )
    # kube-state-metrics reports no such Deployment: the replica alerts could not fire, which is said
    _promtool_test(
        tmp_path,
        rules,
        _ready(),
        [
            {"eval_time": "25m", "alertname": unseen["alert"], "exp_alerts": []},
            {
                "eval_time": "35m",
                "alertname": unseen["alert"],
                # absent() carries the selector's equality matchers as labels
                "exp_alerts": [
                    {
                        **_rendered(unseen, ""),
                        "exp_labels": {
                            **unseen["labels"],
                            "namespace": posix_identity.WEBHOOK_NAMESPACE,
                            "deployment": posix_identity.DEPLOYMENT,
                        },
                    }
                ],
            },
        ],
    )


@needs_promtool
def test_promtool_accepts_the_rule_file(synthesized: Synthesized, tmp_path: Path) -> None:
    result = subprocess.run(
        [PROMTOOL or "", "check", "rules", *_rules_files(synthesized, tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@needs_promtool
def test_an_eviction_at_2am_alerts_within_15_minutes_and_a_small_one_does_not(
    synthesized: Synthesized, tmp_path: Path
) -> None:
    rules = _rules_files(synthesized, tmp_path)
    # research may run training (1h checkpoint bound) on ml.p5.48xlarge (8 GPUs): one eviction ~ 8 GPU-hours;
    # four evictions at 02:00 are ~32 > 24 GPU-hours, one is not
    series = (
        'kueue_evicted_workloads_total{{cluster_queue="hyperpod-ns-{team}-clusterqueue",reason="Preempted",'
        'priority_class="training-priority",replica_role="leader"}}'
    )
    # one sample a minute from midnight: 0 until 02:00 (minute 120), then the counter's new value
    tests = {
        "rule_files": rules,
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    {"series": series.format(team="research"), "values": "0x119 4x60"},
                    {"series": series.format(team="vision"), "values": "0x119 1x60"},
                ],
                "alert_rule_test": [
                    {"eval_time": "1h59m", "alertname": "HyperPodTenancyPreemptionLoss", "exp_alerts": []},
                    {
                        "eval_time": "2h15m",
                        "alertname": "HyperPodTenancyPreemptionLoss",
                        "exp_alerts": [
                            {
                                "exp_labels": {
                                    "severity": "warning",
                                    "team": "research",
                                    "cluster": "shared-gpu",
                                },
                                "exp_annotations": _annotations(synthesized, "research"),
                            }
                        ],
                    },
                ],
            }
        ],
    }
    path = tmp_path / "rules_test.yaml"
    path.write_text(yaml.safe_dump(tests))
    result = subprocess.run(
        [PROMTOOL or "", "test", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _annotations(synthesized: Synthesized, team: str) -> dict[str, str]:
    rules = _team_rules(synthesized, team)
    for rule in json.loads(rules["Properties"]["Data"])["groups"][0]["rules"]:
        if rule["labels"]["team"] == team:
            return {
                k: v.replace('{{ $value | printf "%.0f" }}', "32") for k, v in rule["annotations"].items()
            }
    raise AssertionError(team)


def test_rule_weights_each_eviction_by_the_class_bound_and_instance_gpus(synthesized: Synthesized) -> None:
    text = preemption_rules(
        synthesized.pipeline.config,
        threshold_gpu_hours_per_day=10,
        priority_classes={"research": ["experimentation-priority"]},
    )
    (rule,) = json.loads(text)["groups"][0]["rules"]
    # experimentation: 30-minute bound x 8 GPUs of ml.p5.48xlarge
    assert rule["expr"].endswith("* 4) > 10")
    assert 'priority_class="experimentation-priority"' in rule["expr"]


def test_props_from_the_policy_give_the_policys_engine_config(tmp_path: Path) -> None:
    from hyperpod_tenancy.policy import chargeback_config
    from hyperpod_tenancy.stacks.chargeback_stack import pipeline_props

    platform = platforms.reference_platform()
    stack = cdk.Stack(
        new_app(tmp_path), "Cb", env=cdk.Environment(account="111122223333", region="us-east-1")
    )
    pipeline = ChargebackPipeline(
        stack, "Chargeback", cluster=imported_cluster(stack, platform), **pipeline_props(platform)
    )
    assert pipeline.config == chargeback_config(platform)


def test_a_pipeline_built_directly_bills_each_team_as_the_stage_does(tmp_path: Path) -> None:
    """A user's app that builds the pipeline itself gets the cost centers of the team records (``costCenter``)
    and the same derived figures as the platform stage, not the team names."""
    platform = platforms.reference_platform()
    assert any(t.cost_center for t in platform.teams), "the reference policy names a cost center"
    stack = cdk.Stack(
        new_app(tmp_path), "Cb", env=cdk.Environment(account="111122223333", region="us-east-1")
    )
    direct = ChargebackPipeline(
        stack,
        "Chargeback",
        cluster=imported_cluster(stack, platform),
        billing_rule=BillingRule.USAGE,
        idle_owner="shared",
    ).config
    stage = PlatformStage(new_app(tmp_path / "stage"), platform.name, platform=platform)
    assert stage.chargeback_stack is not None
    staged = stage.chargeback_stack.pipeline.config
    assert direct.teams == staged.teams
    assert direct.gpus_per_instance == staged.gpus_per_instance
    assert direct.max_checkpoint_minutes == staged.max_checkpoint_minutes


_OVERDUE = 'hyperpod_tenancy_checkpoints_overdue{{cluster="shared-gpu",team="{team}"}}'


@needs_promtool
def test_overdue_checkpoints_alert_after_two_runs_in_a_row(synthesized: Synthesized, tmp_path: Path) -> None:
    # the eviction collector writes every 5 minutes ("_": no sample in between): research is overdue in the runs
    # at 5, 10 and 15 minutes; vision at 5 and 15 but not at 10 (one late scan pages nobody)
    rule = _rule(synthesized, "HyperPodTenancyCheckpointsOverdue", team="research")
    assert rule["expr"].startswith("min_over_time(hyperpod_tenancy_checkpoints_overdue{")
    series = [
        {"series": _OVERDUE.format(team="research"), "values": "0 _x4 1 _x4 1 _x4 1"},
        {"series": _OVERDUE.format(team="vision"), "values": "0 _x4 2 _x4 0 _x4 2"},
    ]
    _promtool_test(
        tmp_path,
        _rules_files(synthesized, tmp_path),
        series,
        [
            {"eval_time": "10m", "alertname": "HyperPodTenancyCheckpointsOverdue", "exp_alerts": []},
            {
                "eval_time": "15m",
                "alertname": "HyperPodTenancyCheckpointsOverdue",
                "exp_alerts": [_expected(rule, "1")],
            },
        ],
    )


@needs_promtool
def test_a_missing_checkpoint_count_alerts_for_the_cluster(synthesized: Synthesized, tmp_path: Path) -> None:
    rule = _rule(synthesized, "HyperPodTenancyCheckpointSignalMissing")
    # the collector writes for 20 minutes, then its remote write fails
    series = [{"series": _OVERDUE.format(team="research"), "values": "0x20"}]
    _promtool_test(
        tmp_path,
        _rules_files(synthesized, tmp_path),
        series,
        [
            {"eval_time": "45m", "alertname": "HyperPodTenancyCheckpointSignalMissing", "exp_alerts": []},
            {
                "eval_time": "55m",
                "alertname": "HyperPodTenancyCheckpointSignalMissing",
                "exp_alerts": [_expected(rule, "1")],
            },
        ],
    )


def test_each_team_alerts_on_its_own_overdue_checkpoints_only(synthesized: Synthesized) -> None:
    from hyperpod_tenancy.runtime import eviction_collector

    assert eviction_collector.OVERDUE_SERIES == CHECKPOINTS_OVERDUE_SERIES  # what is written is what is read
    for team in synthesized.stage.team_stacks:
        rules = [
            r
            for g in json.loads(_team_rules(synthesized, team)["Properties"]["Data"])["groups"]
            for r in g["rules"]
            if r["alert"] == "HyperPodTenancyCheckpointsOverdue"
        ]
        assert [r["labels"]["team"] for r in rules] == [team]
        assert f'team="{team}"' in rules[0]["expr"] and 'cluster="shared-gpu"' in rules[0]["expr"]


def test_the_collector_may_write_the_checkpoint_series_to_the_workspace_only(
    synthesized: Synthesized,
) -> None:
    from synth import render_intrinsics

    template = synthesized.template
    (function,) = [
        f["Properties"]
        for f in resources_of(template, "AWS::Lambda::Function").values()
        if f["Properties"].get("Handler") == EVICTION_COLLECTOR_HANDLER
    ]
    url = render_intrinsics(function["Environment"]["Variables"]["REMOTE_WRITE_URL"])
    assert str(url).endswith("api/v1/remote_write")
    statements = [
        s
        for p in resources_of(template, "AWS::IAM::Policy").values()
        for s in p["Properties"]["PolicyDocument"]["Statement"]
        if "aps:RemoteWrite" in json.dumps(s["Action"])
    ]
    ((statement,),) = [statements]
    assert statement["Action"] == "aps:RemoteWrite" and statement["Sid"] == "CheckpointSeries"
    assert "*" not in json.dumps(statement["Resource"])


def _uncovered_gauge(webhook: WebhookProcess) -> float:
    """The webhook's own reading of the uncovered team namespaces, scraped from its metrics port."""
    with urllib.request.urlopen(
        f"http://127.0.0.1:{webhook.metrics_port}{posix_identity.METRICS_PATH}", timeout=5
    ) as answer:
        text = answer.read().decode()
    (value,) = [
        s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == posix_identity.UNCOVERED_NAMESPACES_METRIC
    ]
    return float(value)


def _settled(webhook: WebhookProcess, want: float) -> float:
    deadline = time.monotonic() + 20
    while (value := _uncovered_gauge(webhook)) != want and time.monotonic() < deadline:
        time.sleep(0.2)
    return value


@needs_promtool
@pytest.mark.parametrize("backend", ["task-governance", "kueue"])
def test_a_relabelled_team_namespace_alerts_within_minutes(
    synthesized: Synthesized, tmp_path: Path, moto: str, certs: Certificates, backend: str
) -> None:
    """The real webhook lists the namespaces (a stand-in API server), counts the relabelled one, and the rule fires."""
    platform = platforms.reference_platform() if backend == "task-governance" else platforms.kueue_platform()
    teams = ("research", "inference")
    honest = [
        {
            "metadata": {
                "name": names.namespace(t),
                "labels": {
                    k8s_labels.NAMESPACE_NAME_LABEL: names.namespace(t),
                    **k8s_labels.namespace_labels(platform, platform.team(t)),
                },
            }
        }
        for t in teams
    ]
    relabelled = json.loads(json.dumps(honest))
    del relabelled[0]["metadata"]["labels"][k8s_labels.TENANT_LABEL]
    other = {"metadata": {"name": "kube-system", "labels": {}}}
    (tmp_path / "teams.json").write_text(json.dumps(platform_webhook_config(platform, teams)))
    (tmp_path / "token").write_text("token\n")
    with KubeApiServer(cert=certs.cert, key=certs.key, token="token") as api:
        api.namespaces = [*relabelled, other]
        extra = (
            "--kube-api",
            api.url,
            "--kube-token-file",
            str(tmp_path / "token"),
            "--kube-ca-file",
            str(certs.ca),
        )
        with WebhookProcess(
            certs=certs,
            table=create_table(),
            config_path=tmp_path / "teams.json",
            extra_args=extra,
            env={NAMESPACE_REFRESH_ENV: "0.2"},
        ) as webhook:
            seen = _settled(webhook, 1)
            api.namespaces = [*honest, other]
            healed = _settled(webhook, 0)
    assert (seen, healed) == (1, 0)
    rule = _rule(synthesized, "HyperPodTenancyTeamNamespaceUncovered")
    rules = _rules_files(synthesized, tmp_path)
    gauge = [(n, ls) for n, ls in _webhook_exposition() if n == posix_identity.UNCOVERED_NAMESPACES_METRIC]
    assert gauge, "the webhook's exposition has the gauge"
    for value, fires in ((seen, True), (healed, False)):
        series = [_series(name, lbls, f"{value:g}x20") for name, lbls in gauge]
        expected = [_rendered(rule, f"{value:g}")] if fires else []
        _promtool_test(
            tmp_path,
            rules,
            series,
            [
                {"eval_time": "1m", "alertname": rule["alert"], "exp_alerts": []},
                {"eval_time": "4m", "alertname": rule["alert"], "exp_alerts": expected},
            ],
        )


def test_the_stage_takes_typed_chargeback_options_and_refuses_a_dict(tmp_path: Path) -> None:
    platform = platforms.reference_platform()
    with pytest.raises(TenancyError, match=r"pass ChargebackOptions\(\.\.\.\)"):
        PlatformStage(
            cdk.App(outdir=str(tmp_path)), platform.name, platform=platform, chargeback={"idle_owner": "x"}
        )  # type: ignore[arg-type]
    with pytest.raises(TenancyError, match=r"ChargebackOptions\.tolerance: 0\.01 is not a Decimal"):
        ChargebackOptions(tolerance=0.01)  # type: ignore[arg-type]
    assert ChargebackOptions(idle_owner="platform").kwargs() == {"idle_owner": "platform"}
