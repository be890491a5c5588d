"""``hyperpod-tenancy chargeback`` end to end (DuckDB over generated Parquet, the engine, the renderers), and the
renderings themselves on a hand-built report."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import gc
import io
import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from chargeback_data import cur_line, generate_month, generated_cur, month_config, write_cur
from rich.console import Console

from hyperpod_tenancy.chargeback import engine, model, queries, report
from hyperpod_tenancy.chargeback.queries import COLLECTOR_COLUMNS
from hyperpod_tenancy.cli import main
from hyperpod_tenancy.runtime import eviction_collector, node_inventory
from hyperpod_tenancy.tools.chargeback.offline import OfflineInputError, run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-07"
GPUS = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 4}
RATES = {"ml.p5.48xlarge": "98.32", "ml.g5.12xlarge": "7.09"}
NODES = 6


def _config(rule: model.BillingRule = model.BillingRule.RESERVATION) -> model.ChargebackConfig:
    return month_config(
        cluster=CLUSTER,
        teams=[f"team-{i:03d}" for i in range(3)],
        quotas=dict.fromkeys(GPUS, 1),
        gpus=GPUS,
        rule=rule,
        max_checkpoint_minutes={"training-priority": 60},
    )


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("month")
    generate_month(
        root,
        month=MONTH,
        cluster=CLUSTER,
        teams=3,
        instance_types=GPUS,
        nodes_per_type=NODES,
        snapshot_minutes=15,
    )
    generated_cur(
        root / "cur.parquet",
        month=MONTH,
        cluster=CLUSTER,
        instance_types=RATES,
        nodes_per_type=NODES,
        shared={"fsx": ("AmazonFSx", "USE1-Throughput", "1200.50")},
    )
    (root / "chargeback_config.json").write_text(model.config_to_json(_config()), encoding="utf-8")
    (root / "prices.csv").write_text(
        "instance_type,usd_per_gpu_hour\nml.p5.48xlarge,12.29\nml.g5.12xlarge,1.7725\n", encoding="utf-8"
    )
    return root


def _cli(data: Path, *extra: str, source: tuple[str, ...] | None = None) -> list[str]:
    source = source if source is not None else ("--cur", str(data / "cur.parquet"))
    return [
        "chargeback",
        "--usage",
        str(data),
        *source,
        "--config",
        str(data / "chargeback_config.json"),
        "--month",
        MONTH,
        *extra,
    ]


@pytest.fixture(scope="module")
def engine_report(data: Path) -> model.Report:
    """The month's report computed by the engine itself, from the offline queries' results."""
    usage, costs = run_queries(
        usage=data, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS, cur=data / "cur.parquet"
    )
    return engine.compute_report(_config(), MONTH, usage, costs)


def test_a_month_without_collection_gaps_says_it_is_complete(engine_report: model.Report) -> None:
    """The generated month has a node snapshot every 15 minutes and a heartbeat every 5: no gap (see
    test_chargeback_gaps for a month with one)."""
    assert engine_report.collection_gaps == ()
    assert json.loads(report.render(engine_report, "json"))["collectionGaps"] == []
    markdown = report.render(engine_report, "markdown").decode()
    assert "- **Collection:** complete: no collector stopped for longer than its threshold" in markdown
    assert "## Collection gaps" not in markdown


@pytest.mark.parametrize("fmt", ["json", "csv", "markdown", "html"])
def test_the_cli_writes_the_engine_report_deterministically(
    data: Path, engine_report: model.Report, tmp_path: Path, fmt: str
) -> None:
    # engine_report is computed by a run of its own: bytes equal to its rendering show that two runs agree
    out = tmp_path / f"report.{fmt}"
    assert main(_cli(data, "--format", fmt, "--output", str(out))) == 0
    assert out.read_bytes() == report.render(engine_report, fmt)


def _synced_raw(data: Path, raw: Path) -> Path:
    """Lay out ``raw/`` as ``aws s3 sync`` of the report bucket gives it: the operator's Parquet clusterqueue/ and heartdub/ beside
    the node and eviction JSON lines, each file written by the collector's own functions (``snapshot_lines``,
    ``object_key``), from the same generated month."""
    con = duckdb.connect()
    (raw / "clusterqueue").parent.mkdir(parents=True)
    (raw / "clusterqueue").symlink_to(data / "clusterqueue")
    (raw / "heartdub").symlink_to(data / "heartdub")
    nodes = con.execute(
        f"SELECT timestamp, instance_group, instance_type, instance_id, status FROM read_parquet("
        f"'{data / 'node'}/**/*.parquet') ORDER BY timestamp, instance_id"
    ).fetchall()
    by_time: dict[dt.datetime, list[dict[str, object]]] = {}
    for ts, group, itype, iid, status in nodes:
        by_time.setdefault(ts, []).append(
            {
                "InstanceGroupName": group,
                "InstanceType": itype,
                "InstanceId": iid,
                "InstanceStatus": {"Status": status},
            }
        )
    for ts, summaries in by_time.items():
        moment = ts.replace(tzinfo=dt.UTC)
        path = raw / node_inventory.object_key("node/", CLUSTER, moment)
        path.parent.mkdir(parents=True, exist_ok=True)
        # every instance's Kubernetes node Ready, uncordoned and healthy: schedulable where SageMaker says Running
        healthy = node_inventory.nodes_by_instance(
            [
                {
                    "metadata": {
                        "name": node_inventory.NODE_NAME_PREFIX + str(s["InstanceId"]),
                        "labels": {node_inventory.NODE_HEALTH_LABEL: node_inventory.HEALTHY},
                    },
                    "status": {"conditions": [{"type": "Ready", "status": "True"}]},
                }
                for s in summaries
            ]
        )
        path.write_text(
            node_inventory.snapshot_lines(
                summaries, cluster=CLUSTER, moment=moment, gpus_per_instance=GPUS, kubernetes=healthy
            ),
            encoding="utf-8",
        )
    columns = [name for name, _ in COLLECTOR_COLUMNS["eviction"]]
    stamp = "%Y-%m-%d %H:%M:%S"
    for row in con.execute(
        f"SELECT {', '.join(columns)} FROM read_parquet('{data / 'eviction'}/**/*.parquet')"
    ).fetchall():
        record: dict[str, object] = dict(zip(columns, row, strict=True))
        for key in ("timestamp", "admitted_at", "last_checkpoint"):
            value = record[key]
            record[key] = value.strftime(stamp) if isinstance(value, dt.datetime) else value
        record.update(schema_version=eviction_collector.SCHEMA_VERSION, cluster=CLUSTER, uid="")
        path = raw / eviction_collector.object_key("eviction/", record)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    return raw.parent


@pytest.fixture(scope="module")
def synced(data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The month as ``aws s3 sync`` copies it (:func:`_synced_raw`), laid out once; tests that edit it copy it."""
    return _synced_raw(data, tmp_path_factory.mktemp("synced") / "raw")


def _copy_of(synced: Path, tmp_path: Path) -> Path:
    """A copy of the synced month of the test's own (the Parquet clusterqueue/ stays a link)."""
    return Path(shutil.copytree(synced, tmp_path / "synced", symlinks=True))


@pytest.fixture(scope="module")
def parquet_json(data: Path, tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The CLI's JSON report of the month from the Parquet files (the reference the JSON-lines runs match)."""
    out = tmp_path_factory.mktemp("parquet-report") / "report.json"
    assert main(_cli(data, "--format", "json", "--output", str(out))) == 0
    return out.read_bytes()


def _json_lines_report(data: Path, synced: Path, out: Path) -> bytes:
    """The CLI's JSON report of the month read from ``synced`` (JSON lines for node/ and eviction/)."""
    args = _cli(data, "--format", "json", "--output", str(out))
    args[args.index("--usage") + 1] = str(synced)
    assert main(args) == 0
    return out.read_bytes()


def test_the_collectors_json_lines_give_the_same_report_as_parquet(
    data: Path, synced: Path, parquet_json: bytes, tmp_path: Path
) -> None:
    """The offline CLI reads what ``aws s3 sync s3://<bucket>/raw`` copies: JSON lines for node/ and eviction/."""
    assert not any(synced.rglob("node/**/*.parquet")) and any(synced.rglob("node/**/*.json"))
    assert any(synced.rglob("eviction/**/*.json"))
    from_json = _json_lines_report(data, synced, tmp_path / "json.json")
    assert from_json == parquet_json
    assert json.loads(from_json)["preemptionLosses"]


def _restamp(synced: Path, table: str, rewrite: Callable[[str], str]) -> int:
    """Rewrite every timestamp of ``table``'s JSON lines with ``rewrite``; the number of values rewritten."""
    stamps = [c for c, kind in COLLECTOR_COLUMNS[table] if kind == "timestamp"]
    count = 0
    for path in synced.rglob(f"{table}/**/*.json"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for record in records:
            for key in stamps:
                if record.get(key) is not None:
                    record[key] = rewrite(record[key])
                    count += 1
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return count


def _rfc3339(stamp: str, variant: int) -> str:
    """``YYYY-MM-DD HH:MM:SS`` (UTC) written as Kubernetes and other RFC 3339 writers do."""
    moment = dt.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.UTC)
    if variant == 0:
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")  # metav1.Time, lastTransitionTime
    if variant == 1:
        return moment.isoformat(timespec="microseconds")  # 2026-06-13T12:00:00.000000+00:00
    return moment.astimezone(dt.timezone(dt.timedelta(hours=2))).isoformat()  # the same instant at +02:00


def test_rfc3339_timestamps_in_the_json_lines_give_the_same_report(
    data: Path, synced: Path, parquet_json: bytes, tmp_path: Path
) -> None:
    synced = _copy_of(synced, tmp_path)
    variants = iter(range(10**9))
    rewritten = sum(
        _restamp(synced, table, lambda s: _rfc3339(s, next(variants) % 3)) for table in ("node", "eviction")
    )
    assert rewritten > 1000
    sample = next(synced.rglob("eviction/**/*.json")).read_text(encoding="utf-8")
    assert "T" in json.loads(sample.splitlines()[0])["timestamp"]
    assert _json_lines_report(data, synced, tmp_path / "json.json") == parquet_json


def test_a_timestamp_of_no_known_format_names_the_file_the_column_and_the_fix(
    data: Path, synced: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    synced = _copy_of(synced, tmp_path)
    bad = sorted(synced.rglob("eviction/**/*.json"))[0]
    records = [json.loads(line) for line in bad.read_text(encoding="utf-8").splitlines()]
    records[0]["timestamp"] = "13/06/2026 12:00"
    bad.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    args = _cli(data, "--format", "json", "--output", str(tmp_path / "out.json"))
    args[args.index("--usage") + 1] = str(synced)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{bad}: column 'timestamp': '13/06/2026 12:00' is not a timestamp; write RFC 3339" in err
    assert "auto_detect" not in err and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()


def test_the_json_report_reconciles_with_the_generated_bill(parquet_json: bytes) -> None:
    doc = json.loads(parquet_json, parse_float=Decimal)
    assert (doc["schemaVersion"], doc["month"], doc["cluster"], doc["billingRule"], doc["idleOwner"]) == (
        1,
        MONTH,
        CLUSTER,
        "reservation",
        "platform",
    )
    # the generated CUR bills every instance-hour: 744 h x 6 instances x rate; the other cluster's line is left out
    bill = sum(Decimal(r) * 744 * NODES for r in RATES.values()) + Decimal("1200.50")
    assert doc["reconciliation"] == {
        "charged": bill,
        "bill": bill,
        "difference": Decimal("0.00"),
        "flagged": False,
        "unknownTeams": [],
        "failed": False,
    }
    # price = rate ÷ GPUs per instance, from the CUR
    assert {p["instanceType"]: (p["usdPerGpuHour"], p["source"]) for p in doc["prices"]} == {
        "ml.g5.12xlarge": (Decimal("1.7725"), "cur"),
        "ml.p5.48xlarge": (Decimal("12.2900"), "cur"),
    }
    assert sum(Decimal(r["total"]) for r in doc["rows"]) == bill
    assert doc["preemptionLossIsUpperBound"] is True
    # 2 evictions per team x 8 GPUs: one declared 30 min (4), one none declared: its whole 3-hour run (24)
    assert sorted(Decimal(p["lostGpuHours"]) for p in doc["preemptionLosses"]) == [Decimal(28)] * 3
    assert {tuple(p["basis"]) for p in doc["preemptionLosses"]} == {("declared interval", "whole run")}


def test_prices_instead_of_a_cur_give_an_unreconciled_report(
    data: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    assert main(_cli(data, "--format", "markdown", source=("--prices", str(data / "prices.csv")))) == 0
    text = capsysbinary.readouterr().out.decode()
    assert text.startswith(f"# Chargeback {MONTH} — cluster {CLUSTER}\n")
    assert "no bill (no CUR): not reconciled" in text
    assert "ml.p5.48xlarge $12.2900/GPU-hour (price-table)" in text


def test_a_bill_off_by_more_than_the_tolerance_fails_the_month(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        cur_line("AmazonSageMaker", f"USE1-Cluster:{t}", "1", "1", cluster=CLUSTER, period=MONTH)
        for t in sorted(GPUS)
    ]
    cur = write_cur(tmp_path / "cur.csv", lines, fmt="csv")
    out = tmp_path / "report.html"
    # instance-hours of 1 against 744 x 6 in the inventory: prices from this CUR charge far more than the bill
    assert main(_cli(data, "--format", "html", "--output", str(out), source=("--cur", str(cur)))) == 3
    page = out.read_text(encoding="utf-8")
    assert '<dd class="flagged">' in page and "FLAGGED" in page
    assert '<p class="flagged" role="alert">RECONCILIATION FAILED: the rows charge $' in page
    assert "RECONCILIATION FAILED: the rows charge $" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [
        (
            ["chargeback", "--usage", "x", "--month", MONTH, "--config", "c.json"],
            2,
            "one of the arguments --cur --prices is required",
        ),
        (
            ["chargeback", "--usage", "x", "--cur", "a", "--prices", "b", "--month", MONTH, "--config", "c"],
            2,
            "not allowed with argument",
        ),
    ],
)
def test_usage_errors_exit_2(
    argv: list[str], status: int, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == status
    assert message in capsys.readouterr().err


def test_input_errors_exit_1_and_name_the_fix(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_cli(data)[:-2], "--month", "2026-13"]) == 1
    assert "month '2026-13': write it as YYYY-MM" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert (
        main(
            [
                "chargeback",
                "--usage",
                str(empty),
                "--cur",
                str(data / "cur.parquet"),
                "--config",
                str(data / "chargeback_config.json"),
                "--month",
                MONTH,
            ]
        )
        == 1
    )
    assert "no clusterqueue/ folder" in capsys.readouterr().err
    assert main(_cli(data, source=("--cur", str(tmp_path / "missing.parquet")))) == 1
    assert "no such file or folder" in capsys.readouterr().err
    bad_prices = tmp_path / "prices.csv"
    bad_prices.write_text("type,price\nml.p5.48xlarge,1\n", encoding="utf-8")
    assert main(_cli(data, source=("--prices", str(bad_prices)))) == 1
    assert "the header must name instance_type and usd_per_gpu_hour" in capsys.readouterr().err
    bad_config = tmp_path / "config.json"
    bad_config.write_text('{"cluster": "x"}', encoding="utf-8")
    assert (
        main(
            [
                "chargeback",
                "--usage",
                str(data),
                "--cur",
                str(data / "cur.parquet"),
                "--config",
                str(bad_config),
                "--month",
                MONTH,
            ]
        )
        == 1
    )
    assert "missing key 'terms'" in capsys.readouterr().err


def test_a_small_memory_limit_spills_and_gives_the_same_report(
    data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB held to 96 MB gives the same report bytes, and whatever it spills goes to a temporary folder of its
    own, not the working directory."""
    monkeypatch.chdir(tmp_path)
    assert main([*_cli(data, "--format", "json"), "--output", str(tmp_path / "default.json")]) == 0
    small = [
        *_cli(data, "--format", "json"),
        "--output",
        str(tmp_path / "small.json"),
        "--memory-limit",
        "96MB",
    ]
    assert main(small) == 0
    assert (tmp_path / "small.json").read_bytes() == (tmp_path / "default.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["default.json", "small.json"]


def test_a_memory_limit_too_small_for_the_month_names_the_limit_and_the_fix(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_cli(data), "--memory-limit", "2MB"]) == 1
    err = capsys.readouterr().err
    assert "--memory-limit 2MB: DuckDB needs more memory than that for this month" in err
    assert "raise it, e.g. --memory-limit 2GB" in err


@pytest.mark.parametrize("limit", ["lots", "700", "-1GB", "1.5 XB", ""])
def test_a_memory_limit_that_is_not_an_amount_is_refused(
    data: Path, limit: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*_cli(data), f"--memory-limit={limit}"]) == 1
    assert (
        f"--memory-limit {limit!r}: not an amount of memory; write a number and a unit"
        in capsys.readouterr().err
    )


def test_progress_is_shown_on_request(data: Path) -> None:
    out = io.StringIO()
    steps: list[str] = []
    run_queries(
        usage=data,
        month=MONTH,
        cluster=CLUSTER,
        gpus_per_instance=GPUS,
        progress=True,
        console=Console(file=out, width=100),
        on_step=steps.append,
    )
    assert steps == [*queries.USAGE_QUERIES, "cur_costs", "inputs"]
    assert "chargeback" in out.getvalue() and "done" in out.getvalue()


# --- renderings of a hand-built report --------------------------------------------------------------------


def _row(
    team: str, itype: str, *, guaranteed: str, used: str, borrowed: str, idle: str, lost: str, total: str
) -> model.TeamCharge:
    return model.TeamCharge(
        cluster=CLUSTER,
        team=team,
        cost_center=f"cc <{team}>",
        instance_type=itype,
        guaranteed_gpu_hours=Decimal(guaranteed),
        used_gpu_hours=Decimal(used),
        borrowed_gpu_hours=Decimal(borrowed),
        lent_gpu_hours=Decimal(0),
        idle_gpu_hours=Decimal(idle),
        lost_to_preemption_gpu_hours=Decimal(lost),
        gpu_charge=Decimal(total),
        lender_credit=Decimal(0),
        shared_charge=Decimal(0),
        total=Decimal(total),
    )


HAND = model.Report(
    schema_version=model.SCHEMA_VERSION,
    month=MONTH,
    cluster=CLUSTER,
    rule=model.BillingRule.USAGE,
    idle_owner="platform",
    shared_costs=model.SharedCostRule.IDLE_OWNER,
    price_sources={"ml.p5.48xlarge": model.PriceSource.CUR},
    gpu_hour_prices={"ml.p5.48xlarge": Decimal("12.29004999")},
    rows=(
        _row(
            "b",
            "ml.p5.48xlarge",
            guaranteed="100",
            used="40.0005",
            borrowed="0",
            idle="0",
            lost="8",
            total="491.605",
        ),
        _row(
            "a",
            "ml.p5.48xlarge",
            guaranteed="50",
            used="60",
            borrowed="10",
            idle="0",
            lost="0",
            total="737.4",
        ),
        _row(
            "(idle)",
            "ml.p5.48xlarge",
            guaranteed="0",
            used="0",
            borrowed="0",
            idle="300",
            lost="0",
            total="3687.015",
        ),
    ),
    reconciliation=model.Reconciliation(
        charged=Decimal("4916.02"), bill=Decimal("4866.00"), difference=Decimal("50.02"), flagged=True
    ),
    preemption_loss_is_upper_bound=False,
    notes=("a note with | a pipe & an <angle>",),
)


def test_json_numbers_are_rounded_decimals_and_rows_sorted() -> None:
    doc = json.loads(report.render(HAND, "json"), parse_float=Decimal)
    assert [r["team"] for r in doc["rows"]] == ["(idle)", "a", "b"]
    b = doc["rows"][2]
    # half to even: 40.0005 → 40.000 (GPU-hours to thousandths), 491.605 → 491.60 (cents)
    assert (b["usedGpuHours"], b["total"], b["costCenter"]) == (
        Decimal("40.000"),
        Decimal("491.60"),
        "cc <b>",
    )
    assert doc["prices"] == [
        {"instanceType": "ml.p5.48xlarge", "usdPerGpuHour": Decimal("12.2900"), "source": "cur"}
    ]
    assert doc["reconciliation"]["flagged"] is True
    assert report.render(HAND, "json").endswith(b"}\n")


def test_csv_has_one_row_per_team_and_instance_type() -> None:
    rows = list(csv.DictReader(io.StringIO(report.render(HAND, "csv").decode())))
    assert [(r["team"], r["total"], r["billing_rule"]) for r in rows] == [
        ("(idle)", "3687.02", "usage"),
        ("a", "737.40", "usage"),
        ("b", "491.60", "usage"),
    ]
    assert b"\r" not in report.render(HAND, "csv")


def test_markdown_escapes_cells_and_states_the_rule() -> None:
    text = report.render(HAND, "markdown").decode()
    assert "- **Billing rule:** usage" in text
    assert "measured from the last checkpoint before each eviction" in text
    assert "a note with \\| a pipe" in text
    assert "difference $50.02 (1.03 %), FLAGGED" in text


def test_html_is_well_formed_with_one_chart_per_instance_type() -> None:
    page = report.render(HAND, "html").decode()
    assert page.startswith("<!DOCTYPE html>\n")
    root = ET.fromstring(
        page.removeprefix("<!DOCTYPE html>\n").replace('<meta charset="utf-8">', '<meta charset="utf-8"/>')
    )
    charts = root.findall(".//{http://www.w3.org/2000/svg}svg")
    # the money chart of the whole month, and one GPU-hours chart per instance type
    assert [svg.get("class") for svg in charts] == ["chart money", "chart"]
    svgs = charts[1:]
    bars = {
        t.text: float(r.get("width", "0"))
        for r in svgs[0].iter("{http://www.w3.org/2000/svg}rect")
        for t in r.iter("{http://www.w3.org/2000/svg}title")
    }
    # the longest bar (the idle row's 300 GPU-hours) spans its column's track; the others are to scale
    track = bars["(idle) idle: 300.0 GPU-hours"]
    assert track == max(bars.values()) >= 80
    assert bars["b guaranteed: 100.0 GPU-hours"] == pytest.approx(track / 3, abs=0.05)
    assert bars["b lost: 8.0 GPU-hours"] == pytest.approx(track * 8 / 300, abs=0.05)
    # a zero value has no bar (b borrowed nothing)
    assert "b borrowed: 0.0 GPU-hours" not in bars and len(bars) == 5
    assert "cc &lt;b&gt;" in page and "<angle>" not in page
    assert re.search(r"\d{4}-\d{2}-\d{2}T", page) is None  # no rendering time


def test_unknown_format_names_the_choices() -> None:
    with pytest.raises(ValueError, match="format 'pdf': choose one of json, csv, markdown, html"):
        report.render(HAND, "pdf")


def test_the_platform_policy_gives_the_same_report_as_the_job_config(tmp_path: Path) -> None:
    from hyperpod_tenancy.policy.chargeback import chargeback_config
    from hyperpod_tenancy.policy.loader import load_platform

    platform_yaml = Path(__file__).resolve().parent.parent / "platform.yaml"
    config = chargeback_config(load_platform(platform_yaml))
    teams = [t.name for t in config.teams]
    generate_month(
        tmp_path,
        month=MONTH,
        cluster=config.cluster,
        teams=len(teams),
        team_names=teams,
        instance_types=config.gpus_per_instance,
        nodes_per_type=16,
        snapshot_minutes=60,
    )
    (tmp_path / "chargeback_config.json").write_text(model.config_to_json(config), encoding="utf-8")
    common = [
        "chargeback",
        "--usage",
        str(tmp_path),
        "--month",
        MONTH,
        "--format",
        "json",
        "--prices",
        str(tmp_path / "none.csv"),
    ]
    (tmp_path / "none.csv").write_text("instance_type,usd_per_gpu_hour\n", encoding="utf-8")
    by_platform, by_config = tmp_path / "a.json", tmp_path / "b.json"
    assert main([*common, "--platform", str(platform_yaml), "--output", str(by_platform)]) == 0
    assert (
        main([*common, "--config", str(tmp_path / "chargeback_config.json"), "--output", str(by_config)]) == 0
    )
    assert by_platform.read_bytes() == by_config.read_bytes()
    doc = json.loads(by_platform.read_bytes())
    # the policy's fallback prices (no CUR), and every team of the policy billed
    assert {p["instanceType"]: p["source"] for p in doc["prices"]} == dict.fromkeys(
        config.gpus_per_instance, "price-table"
    )
    assert set(teams) <= {r["team"] for r in doc["rows"]}


def test_only_the_month_and_the_one_before_are_read(data: Path, tmp_path: Path) -> None:
    """A usage folder keeps months of snapshots: the queries list only the partitions they need."""
    usage = tmp_path / "usage"
    for table in ("clusterqueue", "heartdub", "node", "eviction"):
        shutil.copytree(data / table, usage / table)
    junk = usage / "clusterqueue" / "year=2026" / "month=03" / "day=01" / "hour=00" / f"cluster={CLUSTER}"
    junk.mkdir(parents=True)
    (junk / "truncated.parquet").write_bytes(b"PAR1 not a Parquet file")
    kwargs = {"month": MONTH, "cluster": CLUSTER, "gpus_per_instance": GPUS}
    assert run_queries(usage=usage, **kwargs) == run_queries(usage=data, **kwargs)  # type: ignore[arg-type]
    # the month of the damaged file (and the one after it, which carries its state) read it, and say which table
    for month in ("2026-03", "2026-04"):
        with pytest.raises(OfflineInputError, match=r"clusterqueue"):
            run_queries(usage=usage, month=month, cluster=CLUSTER, gpus_per_instance=GPUS)


def test_the_garbage_collector_is_paused_only_while_rows_are_read() -> None:
    assert gc.isenabled()
    with queries.gc_paused():
        assert not gc.isenabled()
        with queries.gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner pause does not end the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), queries.gc_paused():
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with queries.gc_paused():
            pass
        assert not gc.isenabled()  # a collector the caller disabled stays disabled
    finally:
        gc.enable()


def _without_team_2(data: Path, tmp_path: Path, unknown: model.UnknownTeams) -> Path:
    """The month's configuration without ``team-002``, whose usage stays in the collector's files."""
    config = dataclasses.replace(_config(), teams=_config().teams[:2], unknown_teams=unknown)
    path = tmp_path / f"config-{unknown.value}.json"
    path.write_text(model.config_to_json(config), encoding="utf-8")
    return path


def _cli_with(data: Path, config: Path, *extra: str) -> list[str]:
    argv = _cli(data, *extra)
    argv[argv.index("--config") + 1] = str(config)
    return argv


def _json_report(data: Path, config: Path, tmp_path: Path, *, status: int) -> dict[str, Any]:
    """Run the CLI on the month with ``config`` to a JSON report; check its exit status; the report."""
    out = tmp_path / "report.json"
    assert main(_cli_with(data, config, "--format", "json", "--output", str(out))) == status
    document: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return document


def test_usage_of_a_team_the_configuration_does_not_name_fails_the_reconciliation(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Default: the report is written, its header says why it does not reconcile, and the command exits 3."""
    config = _without_team_2(data, tmp_path, model.UnknownTeams.FAIL)
    doc = _json_report(data, config, tmp_path, status=3)
    err = capsys.readouterr().err
    assert "RECONCILIATION FAILED: team-002 is no team of the configuration yet ran on the cluster" in err
    assert "chargeback.unknownTeams: bill" in err
    assert (doc["reconciliation"]["unknownTeams"], doc["reconciliation"]["failed"]) == (["team-002"], True)
    # still billed (the money adds up), under its own name
    assert {r["costCenter"] for r in doc["rows"] if r["team"] == "team-002"} == {"team-002"}
    markdown = tmp_path / "report.md"
    assert main(_cli_with(data, config, "--format", "markdown", "--output", str(markdown))) == 3
    lines = markdown.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# Chargeback") and lines[2].startswith("> **RECONCILIATION FAILED: team-002")
    page = tmp_path / "report.html"
    assert main(_cli_with(data, config, "--format", "html", "--output", str(page))) == 3
    assert '<p class="flagged" role="alert">RECONCILIATION FAILED: team-002' in page.read_text(
        encoding="utf-8"
    )


def test_a_policy_for_unknown_teams_bills_them_under_their_own_name(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _without_team_2(data, tmp_path, model.UnknownTeams.BILL)
    doc = _json_report(data, config, tmp_path, status=0)
    assert capsys.readouterr().err == ""
    assert (doc["reconciliation"]["unknownTeams"], doc["reconciliation"]["failed"]) == (["team-002"], False)
    assert any(
        "'team-002' has usage, evictions or tagged bill lines but is not in the policy" in n
        for n in doc["notes"]
    )
    assert any("allowed by `chargeback.unknownTeams: bill`" in n for n in doc["notes"])


def test_the_unknown_teams_policy_round_trips_through_the_job_configuration() -> None:
    for unknown in model.UnknownTeams:
        config = dataclasses.replace(_config(), unknown_teams=unknown)
        assert model.config_from_json(model.config_to_json(config)) == config
    # a configuration written before the setting existed keeps the safe default
    legacy = json.loads(model.config_to_json(_config()))
    del legacy["unknownTeams"]
    assert model.config_from_json(json.dumps(legacy)).unknown_teams is model.UnknownTeams.FAIL


@pytest.mark.parametrize(
    ("value", "expected"), [(None, model.UnknownTeams.FAIL), ("bill", model.UnknownTeams.BILL)]
)
def test_the_platform_sets_the_unknown_teams_policy(value: str | None, expected: model.UnknownTeams) -> None:
    from platforms import reference_data

    from hyperpod_tenancy.policy.chargeback import chargeback_config
    from hyperpod_tenancy.policy.loader import platform_from_dict

    data = reference_data()
    data["chargeback"].pop("unknownTeams", None)
    if value is not None:
        data["chargeback"]["unknownTeams"] = value
    assert chargeback_config(platform_from_dict(data)).unknown_teams is expected


def _cur_with_team_lines(tmp_path: Path, team_lines: list[tuple[str, str, str, str]]) -> Path:
    """The generated month's CUR (every instance-hour, FSx) plus lines tagged with the cluster and a team:
    ``(team, product, usage type, cost)``."""
    lines = [
        cur_line(
            "AmazonSageMaker",
            f"USE1-Cluster:{itype}",
            str(744 * NODES),
            f"{float(rate) * 744 * NODES:.2f}",
            cluster=CLUSTER,
            period=MONTH,
        )
        for itype, rate in sorted(RATES.items())
    ]
    lines.append(cur_line("AmazonFSx", "USE1-Throughput", "1", "1200.50", cluster=CLUSTER, period=MONTH))
    lines += [
        cur_line(product, usage, "1", cost, cluster=CLUSTER, period=MONTH, team=team)
        for team, product, usage, cost in team_lines
    ]
    return write_cur(tmp_path / "cur.parquet", lines)


def test_bill_lines_a_team_tag_names_are_charged_to_that_team_alone(data: Path, tmp_path: Path) -> None:
    """A team's Studio spaces (GPU instances too) and its stack's resources carry its tag: its own row, not the
    shared split and not lost."""
    cur = _cur_with_team_lines(
        tmp_path,
        [
            ("team-001", "AmazonSageMaker", "USE1-Studio:ml.g5.2xlarge", "250.00"),
            ("team-001", "AmazonEC2", "USE1-EBS:VolumeUsage.gp3", "12.34"),
            ("team-002", "AmazonSageMaker", "USE1-Studio:ml.t3.medium", "3.01"),
        ],
    )
    out = tmp_path / "report.json"
    assert main(_cli(data, "--format", "json", "--output", str(out), source=("--cur", str(cur)))) == 0
    doc = json.loads(out.read_text(encoding="utf-8"), parse_float=Decimal)
    direct = {
        (r["team"], r["instanceType"]): r["directCharge"] for r in doc["rows"] if r["directCharge"] != 0
    }
    assert direct == {("team-001", "(all)"): Decimal("262.34"), ("team-002", "(all)"): Decimal("3.01")}
    own = next(r for r in doc["rows"] if r["team"] == "team-001" and r["instanceType"] == "(all)")
    assert (own["costCenter"], own["total"], own["sharedCharge"]) == ("cc-1", Decimal("262.34"), 0)
    # the shared lines are still only FSx; the rows add up to the whole bill
    bill = sum(Decimal(r) * 744 * NODES for r in RATES.values()) + Decimal("1200.50") + Decimal("265.35")
    assert doc["reconciliation"]["bill"] == bill and doc["reconciliation"]["difference"] == 0
    assert sum(r["total"] for r in doc["rows"]) == bill
    # the CSV carries the column too
    csv_out = tmp_path / "report.csv"
    assert main(_cli(data, "--format", "csv", "--output", str(csv_out), source=("--cur", str(cur)))) == 0
    assert "direct_charge" in csv_out.read_text(encoding="utf-8").splitlines()[0].split(",")


def test_a_team_tag_of_no_configured_team_fails_the_reconciliation(
    data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cur = _cur_with_team_lines(
        tmp_path, [("team-777", "AmazonSageMaker", "USE1-Studio:ml.g5.2xlarge", "9.99")]
    )
    out = tmp_path / "report.json"
    assert main(_cli(data, "--format", "json", "--output", str(out), source=("--cur", str(cur)))) == 3
    assert "RECONCILIATION FAILED: team-777 is no team of the configuration" in capsys.readouterr().err
