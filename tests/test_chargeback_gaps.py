"""Collection gaps through ``hyperpod-tenancy chargeback``: what a stopped collector does to the month's report.

The month is generated in the collectors' formats (the operator's Parquet ``clusterqueue`` and ``heartdub``, the
node inventory's ``node``) with a two-hour hole in which the operator and the node inventory wrote nothing. The
report bills the hole by holding the last snapshot before it, and says so: every gap longer than its collector's
threshold, per table with the clock hours it covers, in the JSON, Markdown and HTML.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest
from chargeback_data import generate_month, heartbeats, month_config, write_table

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.cli import main
from hyperpod_tenancy.tools.chargeback.offline import run_queries

CLUSTER = "shared-gpu"
MONTH = "2026-07"
GPUS = {"ml.g5.12xlarge": 4}
#: The operator (its snapshots and heartbeat) and the node inventory stopped from 10:00 to 12:00 on the 13th.
HOLE = ("2026-07-13 10:00", "2026-07-13 12:00")


def _month(root: Path, holes: dict[str, list[tuple[str, str]]] | None) -> Path:
    generate_month(
        root,
        month=MONTH,
        cluster=CLUSTER,
        teams=2,
        instance_types=GPUS,
        nodes_per_type=2,
        snapshot_minutes=5,
        node_snapshot_minutes=5,
        evictions_per_team=1,
        holes=holes,
    )
    config = month_config(
        cluster=CLUSTER, teams=["team-000", "team-001"], quotas={"ml.g5.12xlarge": 1}, gpus=GPUS
    )
    (root / "config.json").write_text(model.config_to_json(config), encoding="utf-8")
    (root / "prices.csv").write_text(
        "instance_type,usd_per_gpu_hour\nml.g5.12xlarge,1.7725\n", encoding="utf-8"
    )
    return root


@pytest.fixture(scope="module")
def holed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The month with the two-hour hole in the operator's and the node inventory's records."""
    return _month(
        tmp_path_factory.mktemp("holed"), {table: [HOLE] for table in ("clusterqueue", "heartdub", "node")}
    )


def _report(usage: Path, out: Path, fmt: str = "json") -> str:
    args = ["chargeback", "--usage", str(usage), "--prices", str(usage / "prices.csv")]
    args += ["--config", str(usage / "config.json"), "--month", MONTH, "--format", fmt, "--output", str(out)]
    assert main(args) == 0
    return out.read_text(encoding="utf-8")


def test_every_gap_is_in_the_json_per_table_with_its_clock_hours(holed: Path, tmp_path: Path) -> None:
    gaps = json.loads(_report(holed, tmp_path / "report.json"))["collectionGaps"]
    hours = ["2026-07-13T09:00:00Z", "2026-07-13T10:00:00Z", "2026-07-13T11:00:00Z"]
    assert gaps == [
        {
            "table": "heartdub",
            "collector": "usage-report operator (its heartbeat, raw/heartdub/; it writes the clusterqueue snapshots)",
            "start": "2026-07-13T09:55:00Z",
            "end": "2026-07-13T12:00:00Z",
            "minutes": 125,
            "hours": hours,
        },
        {
            "table": "node",
            "collector": "node inventory (raw/node/)",
            "start": "2026-07-13T09:55:00Z",
            "end": "2026-07-13T12:00:00Z",
            "minutes": 125,
            "hours": hours,
        },
    ]


def test_the_readable_reports_say_how_the_gap_was_billed(holed: Path, tmp_path: Path) -> None:
    markdown = _report(holed, tmp_path / "report.md", "markdown")
    assert (
        "- **Collection:** 2 gaps (4 h 10 min; node inventory, usage-report operator): each is billed as the last "
        "snapshot before it, held until the next; see Collection gaps"
    ) in markdown
    table = markdown.split("## Collection gaps\n", 1)[1]
    assert "| node inventory (raw/node/) | 2026-07-13 09:55 | 2026-07-13 12:00 | 2 h 05 min | 3 |" in table
    html = _report(holed, tmp_path / "report.html", "html")
    assert '<dt>Collection</dt><dd class="flagged">2 gaps' in html and "<h2>Collection gaps</h2>" in html


def test_a_gap_is_billed_by_holding_the_last_snapshot_before_it(holed: Path) -> None:
    """Inside the hole each team is billed what the operator's last snapshot before it said it held."""
    usage, _ = run_queries(usage=holed, month=MONTH, cluster=CLUSTER, gpus_per_instance=GPUS)
    # the generator's pattern: team i holds 2 x ((snapshot x 7 + i x 13) % 4) GPUs at 5-minute snapshot `snapshot`
    last = (12 * 24 + 9) * 12 + 11  # 2026-07-13 09:55
    for team in range(2):
        held = 2 * ((last * 7 + team * 13) % 4)
        for hour in (10, 11):
            when = dt.datetime(2026, 7, 13, hour, tzinfo=dt.UTC)
            billed = sum(u.gpu_ms for u in usage.usage if u.team == f"team-{team:03d}" and u.hour == when)
            assert billed == held * 3_600_000, (team, hour)


def test_a_collector_that_wrote_nothing_all_month_is_one_gap_of_the_whole_month(
    holed: Path, tmp_path: Path
) -> None:
    """The operator's heartbeat stopped at the end of June: July is one gap, every hour of it listed."""
    usage = Path(shutil.copytree(holed, tmp_path / "usage"))
    shutil.rmtree(usage / "heartdub")
    write_table(usage, "heartdub", heartbeats("2026-06-30 22:00", "2026-07-01 00:00"), cluster=CLUSTER)
    gaps = json.loads(_report(usage, tmp_path / "r.json"))["collectionGaps"]
    (heartbeat,) = [g for g in gaps if g["table"] == "heartdub"]
    assert (heartbeat["start"], heartbeat["end"]) == ("2026-07-01T00:00:00Z", "2026-08-01T00:00:00Z")
    assert heartbeat["minutes"] == 31 * 24 * 60 and len(heartbeat["hours"]) == 31 * 24


def test_without_the_heartbeat_files_the_operator_is_not_checked_and_the_report_says_so(
    holed: Path, tmp_path: Path
) -> None:
    usage = Path(shutil.copytree(holed, tmp_path / "usage"))
    shutil.rmtree(usage / "heartdub")
    document = json.loads(_report(usage, tmp_path / "r.json"))
    assert [g["table"] for g in document["collectionGaps"]] == ["node"]
    assert (
        "no heartdub/ folder in the usage files: the usage-report operator's collection gaps were not checked; "
        "copy raw/heartdub/ too"
    ) in document["notes"]
