"""The monthly chargeback Lambda against moto in server mode (no boto3 patching).

Athena's start/poll/results are moto's; its result rows are seeded with what DuckDB computes from the same
generated Parquet (the Trino SQL transpiled by sqlglot), so the report the Lambda writes to S3 can be compared,
byte for byte, with the offline CLI's report of the same month.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import botocore
import botocore.exceptions
import duckdb
import pytest
from chargeback_data import generate_month, generated_cur, register_tables
from moto_server import moto_server, reset

from hyperpod_tenancy.chargeback import queries, report
from hyperpod_tenancy.chargeback.model import (
    BillingRule,
    BillingTerm,
    ChargebackConfig,
    TeamConfig,
    config_to_json,
    team_config_to_json,
)
from hyperpod_tenancy.runtime import chargeback_job
from hyperpod_tenancy.tools.chargeback.offline import compute, transpile
from hyperpod_tenancy.tools.chargeback.offline.tables import _register_cur

MONTH = "2026-07"
CLUSTER = "shared-gpu"
TYPES = {"ml.g5.12xlarge": 4, "ml.p5.48xlarge": 8}
BUCKET = "reports"
WORKGROUP = "shared-gpu-chargeback"
NAMESPACE = "HyperPodTenancy/Chargeback"
TEAMS = 3


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    """A moto server on loopback; boto3's default session is pointed at it through env vars."""
    with moto_server() as url:
        yield url


@pytest.fixture
def aws(endpoint: str) -> Iterator[str]:
    """A fresh moto state per test."""
    reset(endpoint)
    yield endpoint


def config() -> ChargebackConfig:
    return ChargebackConfig(
        cluster=CLUSTER,
        terms=(
            BillingTerm(
                effective_from=dt.date(2026, 1, 1), rule=BillingRule.RESERVATION, idle_owner="platform"
            ),
        ),
        teams=tuple(
            TeamConfig(name=f"team-{i:03d}", cost_center=f"cc-{i:03d}", quotas=dict.fromkeys(TYPES, 1))
            for i in range(TEAMS)
        ),
        gpus_per_instance=dict(TYPES),
        max_checkpoint_minutes={"training-priority": 60},
    )


@pytest.fixture(scope="module")
def month_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("usage")
    generate_month(root, month=MONTH, cluster=CLUSTER, teams=TEAMS, instance_types=TYPES, nodes_per_type=8)
    cur = generated_cur(
        root / "cur.parquet",
        month=MONTH,
        cluster=CLUSTER,
        instance_types={"ml.g5.12xlarge": "7.09", "ml.p5.48xlarge": "98.32"},
        nodes_per_type=8,
        shared={
            "fsx": ("AmazonFSx", "USE1-Storage", "1200.00"),
            "eks": ("AmazonEKS", "USE1-AmazonEKS-Hours", "73.00"),
        },
    )
    return root, cur


def athena_rows(usage: Path, cur: Path) -> dict[str, tuple[list[str], list[list[str | None]]]]:
    """Query name → (columns, rows as Athena strings) computed by DuckDB over the month's files."""
    con = duckdb.connect()
    register_tables(con, usage)
    _register_cur(con, cur)
    found = {}
    for name in queries.USAGE_QUERIES + queries.COST_QUERIES:
        result = con.execute(transpile(queries.render(name, month=MONTH, cluster=CLUSTER)))
        columns = [d[0] for d in result.description]
        found[name] = (columns, [[None if v is None else str(v) for v in row] for row in result.fetchall()])
    return found


def seed_athena(endpoint: str, results: list[tuple[list[str], list[list[str | None]]]]) -> None:
    """Queue result sets in moto (assigned to query executions in start order), header row first as Athena does."""

    def row(values: list[str | None]) -> dict[str, Any]:
        return {"Data": [{} if v is None else {"VarCharValue": v} for v in values]}

    body = {
        "results": [
            {
                "rows": [row(list(columns)), *(row(r) for r in rows)],
                "column_info": [{"Name": c, "Label": c, "Type": "varchar"} for c in columns],
            }
            for columns, rows in results
        ]
    }
    request = urllib.request.Request(
        f"{endpoint}/moto-api/static/athena/query-results",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    assert urllib.request.urlopen(request).status == 201


@pytest.fixture
def job_env(aws: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    athena = boto3.client("athena")
    try:
        athena.create_work_group(
            Name=WORKGROUP,
            Configuration={"ResultConfiguration": {"OutputLocation": f"s3://{BUCKET}/athena-results/"}},
        )
    except botocore.exceptions.ClientError as error:
        # seen once in a full run (moto answered 404 for Athena while S3 worked): say what the client was
        aws_env = {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "MOTO_"))}
        raise AssertionError(
            f"{error}; endpoint {athena.meta.endpoint_url}, protocol "
            f"{athena.meta.service_model.protocol}, signature {athena.meta.config.signature_version}, "
            f"botocore {botocore.__version__}, env {aws_env}"
        ) from error
    topic = boto3.client("sns").create_topic(Name="shared-gpu-chargeback")["TopicArn"]
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="inbox")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    boto3.client("sns").subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    path = tmp_path / "chargeback_config.json"
    path.write_text(config_to_json(config()))
    env = {
        "BUCKET": BUCKET,
        "WORKGROUP": WORKGROUP,
        "DATABASE": "shared_gpu_chargeback",
        "TOPIC_ARN": topic,
        "METRIC_NAMESPACE": NAMESPACE,
        "TABLES": json.dumps({t: t for t in queries.TABLES}),
        "CHARGEBACK_CONFIG": str(path),
        "POLL_SECONDS": "0",
        "QUEUE": queue,
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _seed(month_data: tuple[Path, Path]) -> tuple[Path, Path]:
    """Queue the month's query results in moto's Athena (in the job's query order); the month's files."""
    usage, cur = month_data
    rows = athena_rows(usage, cur)
    seed_athena(
        os.environ["AWS_ENDPOINT_URL"], [rows[n] for n in queries.USAGE_QUERIES + queries.COST_QUERIES]
    )
    return usage, cur


def _inbox(queue: str) -> list[str]:
    messages = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    return [json.loads(m["Body"])["Message"] for m in messages.get("Messages", [])]


def test_lambda_report_equals_the_cli_report_byte_for_byte(
    job_env: dict[str, str], month_data: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    usage, cur = _seed(month_data)
    monkeypatch.setattr(chargeback_job, "METRIC_MAX_AGE", dt.timedelta(days=36500))

    result = chargeback_job.handler({"month": MONTH})

    assert result["keys"] == [f"reports/{CLUSTER}/{MONTH}/report.{f}" for f in ("json", "csv", "html")]
    cli = compute(config=config(), month=MONTH, usage=usage, cur=cur, progress=False)
    s3 = boto3.client("s3")
    for fmt in ("json", "csv", "html"):
        written = s3.get_object(Bucket=BUCKET, Key=f"reports/{CLUSTER}/{MONTH}/report.{fmt}")["Body"].read()
        assert written == report.render(cli, fmt), fmt
    # the queries ran in the workgroup, against the Glue database
    athena = boto3.client("athena")
    ids = athena.list_query_executions(WorkGroup=WORKGROUP)["QueryExecutionIds"]
    assert len(ids) == len(queries.USAGE_QUERIES + queries.COST_QUERIES)
    execution = athena.get_query_execution(QueryExecutionId=ids[0])["QueryExecution"]
    assert execution["QueryExecutionContext"]["Database"] == "shared_gpu_chargeback"

    # per-team metrics, at the month's last minute
    cloudwatch = boto3.client("cloudwatch")
    metrics = cloudwatch.list_metrics(Namespace=NAMESPACE)["Metrics"]
    assert {m["MetricName"] for m in metrics} == set(chargeback_job.METRICS)
    teams = {d["Value"] for m in metrics for d in m["Dimensions"] if d["Name"] == "Team"}
    assert {f"team-{i:03d}" for i in range(TEAMS)} <= teams
    used = cloudwatch.get_metric_statistics(
        Namespace=NAMESPACE,
        MetricName="GpuHoursUsed",
        Dimensions=[{"Name": "Cluster", "Value": CLUSTER}, {"Name": "Team", "Value": "team-001"}],
        StartTime=dt.datetime(2026, 7, 31, tzinfo=dt.UTC),
        EndTime=dt.datetime(2026, 8, 1, tzinfo=dt.UTC),
        Period=86400,
        Statistics=["Sum"],
    )["Datapoints"]
    expected = sum(r.used_gpu_hours for r in cli.rows if r.team == "team-001")
    assert [round(Decimal(p["Sum"]), 6) for p in used] == [round(expected, 6)]

    (message,) = _inbox(job_env["QUEUE"])
    assert f"s3://{BUCKET}/reports/{CLUSTER}/{MONTH}/report.html" in message
    assert "rule reservation, idle owner platform" in message
    assert "Collection: complete: no collector stopped for longer than its threshold." in message


def test_an_old_month_is_reported_without_metrics_and_says_so(
    job_env: dict[str, str], month_data: tuple[Path, Path]
) -> None:
    _seed(month_data)
    result = chargeback_job.handler({"month": MONTH})
    assert result["metrics_published"] is False
    assert boto3.client("cloudwatch").list_metrics(Namespace=NAMESPACE)["Metrics"] == []
    (message,) = _inbox(job_env["QUEUE"])
    assert "more than 14 days ago" in message


def test_a_failed_query_fails_the_job_with_athenas_reason(job_env: dict[str, str]) -> None:
    class FailingAthena:
        def start_query_execution(self, **_: Any) -> dict[str, str]:
            return {"QueryExecutionId": "q-1"}

        def get_query_execution(self, **_: Any) -> dict[str, Any]:
            return {
                "QueryExecution": {
                    "Status": {"State": "FAILED", "StateChangeReason": "Query exhausted resources"}
                }
            }

    with pytest.raises(chargeback_job.ChargebackJobError, match="q-1 FAILED: Query exhausted resources"):
        chargeback_job.run_query(
            FailingAthena(), "SELECT 1", workgroup=WORKGROUP, database="db", poll_seconds=0
        )


def test_run_query_reads_every_page_and_drops_only_the_header(job_env: dict[str, str]) -> None:
    seed_athena(os.environ["AWS_ENDPOINT_URL"], [(["a", "b"], [["1", None], ["a", "b"], ["3", "4"]])])
    rows = chargeback_job.run_query(
        boto3.client("athena"), "SELECT a, b FROM t", workgroup=WORKGROUP, database="db", poll_seconds=0
    )
    # the header repeats only at the top of the first page; a data row equal to it stays
    assert rows == queries.QueryResult(("a", "b"), [["1", None], ["a", "b"], ["3", "4"]])


@pytest.mark.parametrize(
    ("event", "month"),
    [
        ({"month": "2025-12"}, "2025-12"),
        ({"time": "2026-08-01T06:00:00Z"}, "2026-07"),
        ({"time": "2026-01-01T06:00:00Z"}, "2025-12"),
    ],
)
def test_the_month_comes_from_the_event(event: dict[str, str], month: str) -> None:
    assert chargeback_job.report_month(event) == month


@pytest.mark.parametrize("event", [{}, {"month": "2026-13"}, {"month": "July"}])
def test_a_malformed_event_is_refused_with_the_fix(event: dict[str, str]) -> None:
    with pytest.raises(chargeback_job.ChargebackJobError, match="YYYY-MM"):
        chargeback_job.report_month(event)


def test_a_past_month_rerun_keeps_its_configuration_of_record(
    job_env: dict[str, str], month_data: tuple[Path, Path]
) -> None:
    usage, cur = month_data
    rows = athena_rows(usage, cur)
    results = [rows[n] for n in queries.USAGE_QUERIES + queries.COST_QUERIES]
    s3 = boto3.client("s3")
    prefix = f"reports/{CLUSTER}/{MONTH}/"

    def run(event: dict[str, str]) -> tuple[dict[str, Any], bytes]:
        seed_athena(os.environ["AWS_ENDPOINT_URL"], results)
        outcome = chargeback_job.handler(event)
        _inbox(job_env["QUEUE"])
        return outcome, s3.get_object(Bucket=BUCKET, Key=prefix + "report.json")["Body"].read()

    first, report_a = run({"month": MONTH})
    assert first["configuration"] == "deployed"
    recorded = s3.get_object(Bucket=BUCKET, Key=prefix + chargeback_job.CONFIG_OF_RECORD)["Body"].read()
    assert recorded.decode() == config_to_json(config())

    # the policy changes afterwards: team-000 gives up its guarantees, team-001 moves to another cost center
    changed = dataclasses.replace(
        config(),
        teams=tuple(
            dataclasses.replace(t, quotas={})
            if t.name == "team-000"
            else dataclasses.replace(t, cost_center="cc-moved")
            if t.name == "team-001"
            else t
            for t in config().teams
        ),
    )
    Path(job_env["CHARGEBACK_CONFIG"]).write_text(config_to_json(changed))
    again, report_b = run({"month": MONTH})
    assert again["configuration"] == "recorded"
    assert report_b == report_a  # byte for byte, under the configuration the month was first billed under

    current, report_c = run({"month": MONTH, "policy": "current"})
    assert current["configuration"] == "deployed"
    assert report_c != report_a and b"cc-moved" in report_c
    assert s3.get_object(Bucket=BUCKET, Key=prefix + chargeback_job.CONFIG_OF_RECORD)[
        "Body"
    ].read().decode() == (config_to_json(changed))
    with pytest.raises(chargeback_job.ChargebackJobError, match=r'event "policy": \'latest\'; pass one of'):
        chargeback_job.handler({"month": MONTH, "policy": "latest"})
    s3.put_object(Bucket=BUCKET, Key=prefix + chargeback_job.CONFIG_OF_RECORD, Body=b"{not json")
    with pytest.raises(
        chargeback_job.ChargebackJobError, match=r"config\.json is not a chargeback configuration"
    ):
        chargeback_job.handler({"month": MONTH})


def test_teams_come_from_their_records_and_a_team_removed_mid_month_is_still_billed(
    job_env: dict[str, str], month_data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The asset lists no team (as the chargeback stack's does): the job reads the records the team stacks write
    under TEAM_RECORDS_PATH. The daily roster keeps a team whose stack was deleted during the month, so the
    month's report is the one the full configuration gives."""
    asset = tmp_path / "platform_config.json"
    asset.write_text(config_to_json(dataclasses.replace(config(), teams=())))
    monkeypatch.setenv("CHARGEBACK_CONFIG", str(asset))
    path = f"/hyperpod-tenancy/{CLUSTER}/chargeback/"
    monkeypatch.setenv("TEAM_RECORDS_PATH", path)
    ssm = boto3.client("ssm")
    for team in config().teams:
        ssm.put_parameter(Name=path + team.name, Value=team_config_to_json(team), Type="String")

    # the daily roster while every team is deployed ...
    recorded = chargeback_job.handler({"action": "record", "month": MONTH})
    assert recorded["teams"] == [t.name for t in config().teams]
    # ... then team-001's stack is deleted before the month ends
    ssm.delete_parameter(Name=path + "team-001")
    again = chargeback_job.handler({"action": "record", "month": MONTH})
    assert again["teams"] == recorded["teams"]

    usage, cur = _seed(month_data)
    chargeback_job.handler({"month": MONTH})
    cli = compute(config=config(), month=MONTH, usage=usage, cur=cur, progress=False)
    written = boto3.client("s3").get_object(Bucket=BUCKET, Key=f"reports/{CLUSTER}/{MONTH}/report.json")
    assert written["Body"].read() == report.render(cli, "json")
    assert "team-001" in {r.team for r in cli.rows}


def test_the_first_of_the_month_starts_the_new_months_roster(
    job_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = f"/hyperpod-tenancy/{CLUSTER}/chargeback/"
    monkeypatch.setenv("TEAM_RECORDS_PATH", path)
    team = config().teams[0]
    boto3.client("ssm").put_parameter(Name=path + team.name, Value=team_config_to_json(team), Type="String")
    result = chargeback_job.record(
        {"time": "2026-08-01T06:00:00Z"}, s3=boto3.client("s3"), bucket=BUCKET, platform=config()
    )
    assert result["month"] == "2026-08"
    roster = chargeback_job.read_roster(
        boto3.client("s3"), bucket=BUCKET, prefix=f"reports/{CLUSTER}/2026-08/"
    )
    assert [t.name for t in roster] == [
        t.name for t in config().teams
    ]  # the asset's and the record's, merged


def test_a_malformed_team_record_names_its_parameter(
    job_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = f"/hyperpod-tenancy/{CLUSTER}/chargeback/"
    boto3.client("ssm").put_parameter(Name=path + "broken", Value='{"name": "broken"}', Type="String")
    with pytest.raises(chargeback_job.ChargebackJobError, match=f"{path}broken: team record: missing key"):
        chargeback_job.team_records(boto3.client("ssm"), path)


def test_usage_of_a_team_nobody_recorded_fails_the_month_in_the_message(
    job_env: dict[str, str], month_data: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A namespace with usage and no team record (never onboarded, or gone before the month's first roster):
    the report is written, and the message and its subject say the month does not reconcile."""
    asset = tmp_path / "platform_config.json"
    asset.write_text(config_to_json(dataclasses.replace(config(), teams=config().teams[1:])))
    monkeypatch.setenv("CHARGEBACK_CONFIG", str(asset))
    _seed(month_data)
    result = chargeback_job.handler({"month": MONTH})
    assert result["failed"] is True
    messages = boto3.client("sqs").receive_message(
        QueueUrl=job_env["QUEUE"], MaxNumberOfMessages=10, WaitTimeSeconds=1
    )["Messages"]
    (body,) = [json.loads(m["Body"]) for m in messages]
    assert body["Subject"] == f"Chargeback {CLUSTER} {MONTH} FAILED"
    assert (
        f"RECONCILIATION FAILED: {config().teams[0].name} is no team of the configuration" in body["Message"]
    )
    written = boto3.client("s3").get_object(Bucket=BUCKET, Key=f"reports/{CLUSTER}/{MONTH}/report.json")
    assert json.loads(written["Body"].read())["reconciliation"]["unknownTeams"] == [config().teams[0].name]


def test_a_bill_that_does_not_match_fails_the_month_in_the_message(
    job_env: dict[str, str], month_data: tuple[Path, Path]
) -> None:
    """The CUR's total is 5 % above its lines (a cluster line the queries missed): the month fails, as it does for an
    unknown team, and the message's subject says so."""
    usage, cur = month_data
    rows = athena_rows(usage, cur)
    columns, lines = rows["cur_costs"]
    kind, cost = columns.index("kind"), columns.index("cost")
    for line in lines:
        if line[kind] == "total":
            line[cost] = str(Decimal(str(line[cost])) * Decimal("1.05"))
    seed_athena(
        os.environ["AWS_ENDPOINT_URL"], [rows[n] for n in queries.USAGE_QUERIES + queries.COST_QUERIES]
    )
    result = chargeback_job.handler({"month": MONTH})
    assert (result["flagged"], result["failed"]) == (True, True)
    messages = boto3.client("sqs").receive_message(
        QueueUrl=job_env["QUEUE"], MaxNumberOfMessages=10, WaitTimeSeconds=1
    )["Messages"]
    (body,) = [json.loads(m["Body"]) for m in messages]
    assert body["Subject"] == f"Chargeback {CLUSTER} {MONTH} FAILED"
    assert "RECONCILIATION FAILED: the rows charge $" in body["Message"]
    assert "(4.76 %), above the tolerance of 0.50 %" in body["Message"]  # 0.05 / 1.05 of the bill
