"""``hyperpod-tenancy chargeback``: a month's report computed offline with the monthly job's SQL on DuckDB."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.errors import EXIT_INVALID, EXIT_OK, EXIT_UNRECONCILED
from hyperpod_tenancy.tools._common import PROG, load_policy
from hyperpod_tenancy.tools.chargeback.limits import DEFAULT_MEMORY_LIMIT

if TYPE_CHECKING:
    from hyperpod_tenancy.chargeback.model import ChargebackConfig

__all__ = ["add_parser", "run"]


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``chargeback`` command."""
    bill = commands.add_parser(
        "chargeback",
        help="compute a month's chargeback report offline (DuckDB over the collector's files and the CUR)",
        description="Compute a month's chargeback report from local copies of the collector's tables and a CUR "
        "2.0 export (or a price table), with the monthly job's SQL and rules.",
    )
    bill.add_argument(
        "--usage",
        required=True,
        type=Path,
        metavar="DIR",
        help="folder with clusterqueue/, node/ and eviction/",
    )
    source = bill.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--cur", type=Path, metavar="FILE", help="CUR 2.0 export (Parquet or CSV file or folder)"
    )
    source.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="price table CSV: instance_type,usd_per_gpu_hour (no bill)",
    )
    bill.add_argument("--month", required=True, metavar="YYYY-MM", help="the month to report")
    settings = bill.add_mutually_exclusive_group()
    settings.add_argument(
        "--platform",
        type=Path,
        metavar="FILE",
        help="the platform policy whose chargeback: section gives the rule (default: platform.yaml)",
    )
    settings.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="the chargeback configuration JSON the monthly job's asset carries (chargeback_config.json)",
    )
    bill.add_argument(
        "--team-records",
        type=Path,
        metavar="DIR",
        help="folder of team records (*.json, one per team, as the team stacks store them under "
        "/hyperpod-tenancy/<cluster>/chargeback/): teams billed besides the configuration's",
    )
    bill.add_argument(
        "--format", default="markdown", choices=["json", "csv", "html", "markdown"], help="default: markdown"
    )
    bill.add_argument("--output", type=Path, metavar="FILE", help="write the report here (default: stdout)")
    bill.add_argument(
        "--memory-limit",
        default=DEFAULT_MEMORY_LIMIT,
        metavar="SIZE",
        help=f"DuckDB's memory for the queries, beyond which it spills to a temporary folder (default: "
        f"{DEFAULT_MEMORY_LIMIT}, which keeps a month of 1,000 teams under 1 GiB; more is faster)",
    )


def _chargeback_settings(args: argparse.Namespace, err: TextIO) -> ChargebackConfig | None:
    """Return the chargeback configuration from --config or the platform policy; None (reported) on errors."""
    if args.config is None:
        platform = load_policy(args.platform or Path("platform.yaml"), err)
        if platform is None:
            return None
        from hyperpod_tenancy.policy.chargeback import chargeback_config  # noqa: PLC0415 - see the imports

        try:
            return chargeback_config(platform)
        except ValueError as exc:
            print(f"{PROG}: error: {exc}", file=err)
            return None
    try:
        return model.config_from_json(args.config.read_text(encoding="utf-8"))
    except OSError as exc:
        print(f"{PROG}: error: cannot read --config {str(args.config)!r}: {exc.strerror or exc}.", file=err)
    except ValueError as exc:
        print(f"{PROG}: error: --config {str(args.config)!r}: {exc}", file=err)
    return None


def _team_records(folder: Path, err: TextIO) -> list[model.TeamConfig] | None:
    """Return the team records of ``--team-records`` (sorted by file name); None (reported) on errors."""
    if not folder.is_dir():
        print(f"{PROG}: error: --team-records {str(folder)!r} is not a folder.", file=err)
        return None
    records = []
    for path in sorted(folder.glob("*.json")):
        try:
            records.append(model.team_config_from_json(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            print(f"{PROG}: error: --team-records {str(path)!r}: {exc}", file=err)
            return None
    return records


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Compute and write the offline chargeback report; return the exit status.

    0; 1 on bad inputs (nothing written); 3 when the report, written all the same, does not reconcile.
    """
    # imported here: DuckDB and sqlglot load only for this command
    from hyperpod_tenancy.chargeback import engine, queries, report  # noqa: PLC0415
    from hyperpod_tenancy.tools.chargeback import offline as chargeback_offline  # noqa: PLC0415

    config = _chargeback_settings(args, err)
    if config is None:
        return EXIT_INVALID
    if args.team_records is not None:
        records = _team_records(args.team_records, err)
        if records is None:
            return EXIT_INVALID
        config = model.with_teams(config, [*config.teams, *records])
    try:
        result = chargeback_offline.compute(
            config=config,
            month=args.month,
            usage=args.usage,
            cur=args.cur,
            prices=args.prices,
            memory_limit=args.memory_limit,
        )
    except (
        chargeback_offline.OfflineInputError,
        queries.QueryInputError,
        engine.ChargebackInputError,
    ) as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_INVALID
    rendered = report.render(result, args.format)
    if args.output is None:
        sys.stdout.buffer.write(rendered)
        sys.stdout.flush()
    else:
        try:
            args.output.write_bytes(rendered)
        except OSError as exc:
            print(
                f"{PROG}: error: cannot write --output {str(args.output)!r}: {exc.strerror or exc}.", file=err
            )
            return EXIT_INVALID
    failed = report.failure(result)
    if failed is not None:
        print(f"{PROG}: {failed}", file=err)
        return EXIT_UNRECONCILED
    return EXIT_OK
