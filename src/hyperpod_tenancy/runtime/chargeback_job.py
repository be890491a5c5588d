"""Monthly Lambda: the chargeback report of one month, from Athena to S3, CloudWatch and SNS.

Triggered by an EventBridge schedule on the 1st of each month (the report of the month that just ended), or
on demand for any past month with the event ``{"month": "YYYY-MM"}``. For that month it

1. runs the queries of :mod:`hyperpod_tenancy.chargeback.queries` (Trino SQL) in the Athena workgroup, polls
   them, and reads their result rows (every page);
2. turns the rows into the engine's inputs (``queries.usage_inputs``, ``queries.cost_inputs``) and computes
   the report (``engine.compute_report``) under the month's configuration of record: the one stored with the
   month's first report (``config.json`` beside it), else the deployed one, which is then stored. So a re-run
   of a past month gives the same report after quotas, teams or cost centers change; the event
   ``{"month": "YYYY-MM", "policy": "current"}`` recomputes it under the deployed configuration instead (and
   records that one). The deployed configuration is the platform's (``chargeback_config.json`` in the asset,
   written by ``model.config_to_json`` at synth: terms, prices, GPUs per instance; no team) billing the month's
   teams: the records every team stack writes under the SSM path ``TEAM_RECORDS_PATH`` (cost center, quotas;
   ``model.team_config_to_json``), merged over the month's *roster* (``teams.json`` beside the report: the
   records as they were at the start of the month and on each day since, kept by the event
   ``{"action": "record"}`` of a daily schedule and by the monthly run for the month that begins). So a team
   removed in the middle of a month is still billed for that month, under its last record;
3. writes ``report.json``, ``report.csv`` and ``report.html`` (``report.render``) to
   ``s3://<BUCKET>/reports/<cluster>/<month>/``;
4. publishes per-team metrics (GPU-hours used, borrowed, lent, lost to preemption) to CloudWatch namespace
   ``METRIC_NAMESPACE`` with dimensions ``Cluster`` and ``Team``, timestamped at the month's last minute
   (CloudWatch refuses data points older than two weeks: a re-run of an older month writes the report and
   skips the metrics, and says so);
5. notifies the SNS topic ``TOPIC_ARN``.

The report depends only on the month, the data and the configuration of record: the same month run twice
writes the same bytes. Environment: ``BUCKET``, ``WORKGROUP``, ``DATABASE``, ``TOPIC_ARN``, ``METRIC_NAMESPACE``,
``TABLES`` (JSON: query placeholder → Glue table name), ``TEAM_RECORDS_PATH`` (SSM path of the team
records; without it, the asset's teams only), ``CHARGEBACK_CONFIG`` (path of the configuration,
default next to the package), ``POLL_SECONDS`` (default 2). Only the standard library and boto3 are imported;
the chargeback package next to this module is standard library only.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3

from hyperpod_tenancy.chargeback import engine, model, queries, report

LOG = logging.getLogger(__name__)
LOG.setLevel(logging.INFO)

#: Formats written for every report, with their content types.
FORMATS = {"json": "application/json", "csv": "text/csv", "html": "text/html"}
#: Per-team metrics: name → (what it sums in the report rows, unit).
METRICS = {
    "GpuHoursUsed": "used_gpu_hours",
    "GpuHoursBorrowed": "borrowed_gpu_hours",
    "GpuHoursLent": "lent_gpu_hours",
    "GpuHoursLostToPreemption": "lost_to_preemption_gpu_hours",
}
#: CloudWatch accepts data points at most this old.
METRIC_MAX_AGE = dt.timedelta(days=14)
_TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}
_DEFAULT_CONFIG = Path(__file__).resolve().parent.parent.parent / "chargeback_config.json"


class ChargebackJobError(RuntimeError):
    """The job could not produce the report (a query failed, the event is malformed, ...)."""


def report_month(event: Mapping[str, Any]) -> str:
    """Return the month to report: the event's ``month``, else the month before the scheduled event's ``time``.

    Raises:
        ChargebackJobError: neither is present, or ``month`` is not a past ``YYYY-MM``.

    """
    month = event.get("month")
    if month is not None:
        try:
            queries.month_bounds(str(month))
        except queries.QueryInputError as error:
            raise ChargebackJobError(f'event "month": {error}') from None
        return str(month)
    moment = event.get("time")
    if not isinstance(moment, str):
        raise ChargebackJobError('event: pass {"month": "YYYY-MM"} (or invoke from the monthly schedule)')
    when = dt.datetime.fromisoformat(moment.replace("Z", "+00:00"))
    first = when.date().replace(day=1)
    return f"{(first - dt.timedelta(days=1)):%Y-%m}"


def run_query(
    athena: Any, sql: str, *, workgroup: str, database: str, poll_seconds: float = 2.0
) -> queries.QueryResult:
    """Run one query in the workgroup, wait for it, and return its result (column names, rows of strings).

    Raises:
        ChargebackJobError: the query failed or was cancelled (the message carries Athena's reason).

    """
    started = athena.start_query_execution(
        QueryString=sql, WorkGroup=workgroup, QueryExecutionContext={"Database": database}
    )
    query_id = started["QueryExecutionId"]
    while True:
        status = athena.get_query_execution(QueryExecutionId=query_id)["QueryExecution"]["Status"]
        state = status["State"]
        if state in _TERMINAL:
            break
        time.sleep(poll_seconds)
    if state != "SUCCEEDED":
        reason = status.get("StateChangeReason", "no reason given")
        raise ChargebackJobError(f"Athena query {query_id} {state}: {reason}")
    rows: list[list[str | None]] = []
    columns: list[str] = []
    kwargs: dict[str, Any] = {"QueryExecutionId": query_id}
    first_page = True
    while True:
        page = athena.get_query_results(**kwargs)
        result = page["ResultSet"]
        if not columns:
            columns = [c["Name"] for c in result.get("ResultSetMetadata", {}).get("ColumnInfo", [])]
        data = result.get("Rows", [])
        if first_page and data and [d.get("VarCharValue") for d in data[0].get("Data", [])] == columns:
            data = data[1:]  # the first row of the first page repeats the header
        first_page = False
        for raw in data:
            values = [d.get("VarCharValue") for d in raw.get("Data", [])]
            rows.append(values)
        token = page.get("NextToken")
        if not token:
            return queries.QueryResult(tuple(columns), rows)
        kwargs["NextToken"] = token


def load_config(path: str | None = None) -> model.ChargebackConfig:
    """Load the chargeback configuration shipped with the function (``CHARGEBACK_CONFIG`` or the asset's copy)."""
    return model.config_from_json(
        Path(path or os.environ.get("CHARGEBACK_CONFIG") or _DEFAULT_CONFIG).read_text()
    )


#: The configuration a month's report was computed under, stored beside it.
CONFIG_OF_RECORD = "config.json"
#: The teams billed in a month: their records at its start and on each day since, stored beside its report.
ROSTER = "teams.json"


def team_records(ssm: Any, path: str) -> list[model.TeamConfig]:
    """Read every team record under the SSM ``path`` (``GetParametersByPath``, every page), sorted by name.

    Raises:
        ChargebackJobError: a record is not a team record (the message names the parameter).

    """
    found: list[model.TeamConfig] = []
    kwargs: dict[str, Any] = {"Path": path, "Recursive": True, "MaxResults": 10}
    while True:
        page = ssm.get_parameters_by_path(**kwargs)
        for parameter in page.get("Parameters", []):
            try:
                found.append(model.team_config_from_json(parameter["Value"]))
            except ValueError as error:
                raise ChargebackJobError(f"SSM parameter {parameter['Name']}: {error}") from None
        token = page.get("NextToken")
        if not token:
            return sorted(found, key=lambda t: t.name)
        kwargs["NextToken"] = token


def _roster_json(teams: Iterable[model.TeamConfig]) -> str:
    return (
        json.dumps([json.loads(model.team_config_to_json(t)) for t in teams], indent=2, sort_keys=True) + "\n"
    )


def read_roster(s3: Any, *, bucket: str, prefix: str) -> list[model.TeamConfig]:
    """Return the month's roster (``teams.json`` under ``prefix``), or no team when there is none yet.

    Raises:
        ChargebackJobError: the stored roster cannot be read.

    """
    try:
        body = s3.get_object(Bucket=bucket, Key=prefix + ROSTER)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return []
    try:
        return [model.team_config_from_json(json.dumps(item)) for item in json.loads(body.decode("utf-8"))]
    except (ValueError, TypeError) as error:
        raise ChargebackJobError(
            f"s3://{bucket}/{prefix}{ROSTER} is not a roster ({error}); delete it"
        ) from None


def record_roster(
    s3: Any, *, bucket: str, prefix: str, current: Iterable[model.TeamConfig]
) -> list[model.TeamConfig]:
    """Merge the current team records into the month's roster, store it when it changed, and return it.

    A team in the roster and no longer deployed keeps its last record; a deployed team's record replaces the
    roster's.
    """
    stored = read_roster(s3, bucket=bucket, prefix=prefix)
    merged = list(model.merge_teams([*stored, *current]))
    if merged != stored:
        s3.put_object(
            Bucket=bucket,
            Key=prefix + ROSTER,
            Body=_roster_json(merged).encode(),
            ContentType="application/json",
        )
    return merged


#: ``policy`` values of an event: the month's configuration of record (the default), or the deployed one.
POLICIES = ("recorded", "current")


def config_of_record(
    s3: Any, *, bucket: str, prefix: str, deployed: model.ChargebackConfig, policy: str = "recorded"
) -> tuple[model.ChargebackConfig, bool]:
    """Return the configuration to bill a month under, and whether it is the one recorded with its first report.

    Args:
        s3: a boto3 S3 client.
        bucket: the report bucket.
        prefix: the month's report prefix (``reports/<cluster>/<month>/``).
        deployed: the configuration shipped in the asset.
        policy: ``recorded`` (the stored one where there is one) or ``current`` (always ``deployed``).

    Raises:
        ChargebackJobError: ``policy`` is neither, or the stored configuration cannot be read.

    """
    if policy not in POLICIES:
        raise ChargebackJobError(f'event "policy": {policy!r}; pass one of {", ".join(POLICIES)}')
    if policy == "current":
        return deployed, False
    try:
        body = s3.get_object(Bucket=bucket, Key=prefix + CONFIG_OF_RECORD)["Body"].read()
    # S3 answers NoSuchKey only to a caller that may also list the bucket, 403 otherwise (GetObject, "Permissions"):
    # the job role may list it (tested in test_chargeback_pipeline)
    except s3.exceptions.NoSuchKey:
        return deployed, False
    try:
        return model.config_from_json(body.decode("utf-8")), True
    except ValueError as error:
        raise ChargebackJobError(
            f"s3://{bucket}/{prefix}{CONFIG_OF_RECORD} is not a chargeback configuration ({error}); delete it "
            'or re-run with {"policy": "current"}'
        ) from None


def collect_rows(
    month: str,
    *,
    cluster: str,
    tables: Mapping[str, str],
    run: Callable[[str], queries.QueryResult],
) -> dict[str, queries.QueryResult]:
    """Return the result of every usage and cost query for ``month`` (query name → result), run through ``run``."""
    return {
        name: run(queries.render(name, month=month, cluster=cluster, tables=tables))
        for name in queries.USAGE_QUERIES + queries.COST_QUERIES
    }


def compute(
    config: model.ChargebackConfig, month: str, rows: Mapping[str, queries.QueryResult]
) -> tuple[model.Report, dict[str, bytes]]:
    """Compute the report of ``month`` and its renderings (format → UTF-8 bytes), from the query results."""
    with queries.gc_paused():
        usage = queries.usage_inputs(
            {name: rows[name] for name in queries.USAGE_QUERIES if name in rows},
            gpus_per_instance=config.gpus_per_instance,
        )
        cost = queries.cost_inputs(rows.get("cur_costs", queries.QueryResult((), ())))
        result = engine.compute_report(config, month, usage, cost)
    return result, {fmt: report.render(result, fmt) for fmt in FORMATS}


def team_metrics(result: model.Report) -> dict[str, dict[str, Decimal]]:
    """Team → metric name → GPU-hours summed over the team's rows (instance types), sorted by team."""
    totals: dict[str, dict[str, Decimal]] = {}
    for row in result.rows:
        team = totals.setdefault(row.team, dict.fromkeys(METRICS, Decimal(0)))
        for metric, attribute in METRICS.items():
            team[metric] += getattr(row, attribute)
    return dict(sorted(totals.items()))


def metric_data(result: model.Report, *, timestamp: dt.datetime) -> list[dict[str, Any]]:
    """``PutMetricData`` entries for the report (one per team and metric)."""
    return [
        {
            "MetricName": metric,
            "Dimensions": [{"Name": "Cluster", "Value": result.cluster}, {"Name": "Team", "Value": team}],
            "Timestamp": timestamp,
            "Value": float(value),
            "Unit": "None",
        }
        for team, values in team_metrics(result).items()
        for metric, value in values.items()
    ]


def _chunks(items: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _month_prefix(cluster: str, month: str) -> str:
    return f"reports/{cluster}/{month}/"


def _current_teams(platform: model.ChargebackConfig) -> list[model.TeamConfig]:
    path = os.environ.get("TEAM_RECORDS_PATH")
    if not path:
        return list(platform.teams)
    return [*platform.teams, *team_records(boto3.client("ssm"), path)]


def record(
    event: Mapping[str, Any], *, s3: Any, bucket: str, platform: model.ChargebackConfig
) -> dict[str, Any]:
    """Merge the current team records into the roster of the month in progress (``{"action": "record"}``).

    The month is the event's ``month``, else the month of its ``time``, else the current UTC month.
    """
    moment = event.get("time")
    month = str(event.get("month") or "")
    if not month:
        when = dt.datetime.fromisoformat(moment.replace("Z", "+00:00")) if isinstance(moment, str) else None
        month = f"{(when or dt.datetime.now(dt.UTC)):%Y-%m}"
    roster = record_roster(
        s3, bucket=bucket, prefix=_month_prefix(platform.cluster, month), current=_current_teams(platform)
    )
    return {"month": month, "action": "record", "teams": [t.name for t in roster]}


def handler(event: Mapping[str, Any], context: Any = None) -> dict[str, Any]:
    """Compute, store, publish and announce the report of one month (see the module docstring)."""
    del context
    platform = load_config()
    bucket = os.environ["BUCKET"]
    s3 = boto3.client("s3")
    if event.get("action") == "record":
        return record(event, s3=s3, bucket=bucket, platform=platform)
    month = report_month(event)
    workgroup = os.environ["WORKGROUP"]
    database = os.environ["DATABASE"]
    tables = json.loads(os.environ.get("TABLES", "{}"))
    poll = float(os.environ.get("POLL_SECONDS", "2"))
    athena = boto3.client("athena")

    def run(sql: str) -> queries.QueryResult:
        return run_query(athena, sql, workgroup=workgroup, database=database, poll_seconds=poll)

    prefix = _month_prefix(platform.cluster, month)
    current = _current_teams(platform)
    if isinstance(event.get("time"), str):
        # the scheduled run on the 1st: the roster of the month that begins starts with today's teams
        record(event, s3=s3, bucket=bucket, platform=platform)
    roster = read_roster(s3, bucket=bucket, prefix=prefix)
    deployed = model.with_teams(platform, [*roster, *current])
    config, recorded = config_of_record(
        s3, bucket=bucket, prefix=prefix, deployed=deployed, policy=str(event.get("policy", "recorded"))
    )
    rows = collect_rows(month, cluster=config.cluster, tables=tables, run=run)
    result, rendered = compute(config, month, rows)
    if not recorded:
        s3.put_object(
            Bucket=bucket,
            Key=prefix + CONFIG_OF_RECORD,
            Body=model.config_to_json(config).encode("utf-8"),
            ContentType="application/json",
        )
    keys = []
    for fmt, content_type in FORMATS.items():
        key = f"{prefix}report.{fmt}"
        s3.put_object(Bucket=bucket, Key=key, Body=rendered[fmt], ContentType=content_type)
        keys.append(key)
    _, month_end = queries.month_bounds(month)
    stamp = month_end - dt.timedelta(minutes=1)
    published = dt.datetime.now(dt.UTC) - stamp < METRIC_MAX_AGE
    if published:
        cloudwatch = boto3.client("cloudwatch")
        for chunk in _chunks(metric_data(result, timestamp=stamp), 500):
            cloudwatch.put_metric_data(Namespace=os.environ["METRIC_NAMESPACE"], MetricData=chunk)
    flagged = result.reconciliation.flagged
    failed = report.failure(result)
    lines = [
        f"Chargeback report of {config.cluster} for {month}: rule {result.rule.value}, idle owner {result.idle_owner}.",
        *(f"s3://{bucket}/{key}" for key in keys),
        *([failed] if failed is not None else []),
        "Reconciliation: MISMATCH above tolerance, check the report."
        if flagged
        else "Reconciliation: within tolerance.",
        f"Collection: {report.collection(result)}.",
        "Configuration: the one recorded with the month's first report."
        if recorded
        else f"Configuration: the deployed one, now recorded as s3://{bucket}/{prefix}{CONFIG_OF_RECORD}.",
    ]
    if not published:
        lines.append("CloudWatch metrics were not published: the month ended more than 14 days ago.")
    boto3.client("sns").publish(
        TopicArn=os.environ["TOPIC_ARN"],
        Subject=f"Chargeback {config.cluster} {month}{' FAILED' if failed is not None else ''}"[:100],
        Message="\n".join(lines),
    )
    return {
        "month": month,
        "keys": keys,
        "metrics_published": published,
        "flagged": flagged,
        "failed": failed is not None,
        "configuration": "recorded" if recorded else "deployed",
    }
