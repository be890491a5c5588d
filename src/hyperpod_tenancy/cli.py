"""The ``hyperpod-tenancy`` command.

``hyperpod-tenancy validate [PATH] [--baseline OLD_PATH]`` loads and validates a platform policy. On errors
it prints every problem (YAML path, message, fix, rule code) to stderr and exits 1; on success it prints a
one-screen summary of the cluster, priority classes, teams, promised capacity, warnings and, with
``--baseline``, the changes CloudFormation would perform as replacements, and exits 0. Usage errors exit 2.

``hyperpod-tenancy guardrails [--markdown] [--write docs/guardrails.md]`` prints the guardrail table generated from
the rule registry (:mod:`hyperpod_tenancy.policy.rules`), or rewrites it in
``docs/guardrails.md`` between its markers.

``hyperpod-tenancy chargeback --usage DIR (--cur FILE | --prices FILE) --month YYYY-MM
[--platform platform.yaml | --config chargeback_config.json] [--format json|csv|html|markdown] [--output FILE]`` computes a month's chargeback report offline, with the
monthly job's SQL on DuckDB over local copies of the collector's files and the CUR
(:mod:`hyperpod_tenancy.chargeback_offline`); exit 1 on unreadable or malformed inputs, exit 3 (the report
written all the same) when it does not reconcile: a difference from the bill above the tolerance, or usage of a
team the configuration does not name.

``hyperpod-tenancy webhook serve --port P --tls-cert F --tls-key F --table NAME --teams FILE
[--max-body-bytes N] [--kube-api URL --kube-token-file F --kube-ca-file F]`` runs the POSIX identity admission
webhook (:mod:`hyperpod_tenancy.webhook.server`) until SIGTERM; DynamoDB is reached through boto3's default
session (``AWS_REGION``, Pod Identity credentials, ``AWS_ENDPOINT_URL`` when set), the Kubernetes API (to read the
Pod of an exec or port-forward) through the pod's service account unless ``--kube-*`` say otherwise. Exit 1
when the configuration or the certificate files cannot be read.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.chargeback import model
from hyperpod_tenancy.errors import PolicyIssue
from hyperpod_tenancy.tools._common import PROG, load_policy, plain_table

# The policy modules (pydantic, PyYAML) load only for the commands that read a policy: `chargeback --config`
# and `webhook serve` start without them.
if TYPE_CHECKING:
    from hyperpod_tenancy.chargeback.model import ChargebackConfig
    from hyperpod_tenancy.policy.model import Platform, Team
    from hyperpod_tenancy.webhook.kube import KubeApi

__all__ = ["main"]

#: Exit status: the policy is valid.
EXIT_OK = 0
#: Exit status: the policy is invalid or a file cannot be read.
EXIT_INVALID = 1
#: Exit status: the command line is wrong.
EXIT_USAGE = 2
#: Exit status: the chargeback report was written but does not reconcile (a difference from the bill above the
#: tolerance, or teams the configuration does not name).
EXIT_UNRECONCILED = 3
#: The package's extras and the modules each brings (``pip install 'cdk-hyperpod-tenancy[<extra>]'``): the
#: constructs and ``validate`` need none; the commands that run code of their own name theirs.
EXTRAS: dict[str, tuple[str, ...]] = {
    "chargeback": ("duckdb", "sqlglot", "rich"),
    "webhook": ("uvicorn", "uvloop", "httptools", "orjson", "prometheus_client", "boto3"),
    "plan": ("matplotlib", "rich"),
    "explain": ("kubernetes",),
    "probe": ("kubernetes",),
    # not a command's: TeamTenant.add_manifest checks added workloads against the team's admission policies
    "admission": ("cel",),
    "audit": ("boto3", "kubernetes"),
}
#: The commands of :mod:`hyperpod_tenancy.tools`, one module each: ``add_parser(commands)`` and
#: ``run(args, out=, err=) -> int`` (each imports what it needs inside ``run``).
TOOLS = ("plan", "onboarding", "explain", "recommend-quotas", "probe", "audit")
#: Commands that need another command's extra (command → the extra named in :data:`EXTRAS`).
COMMAND_EXTRAS: dict[str, str] = {"recommend-quotas": "chargeback"}


def _version() -> str:
    """Return the installed distribution's version (``unknown`` when run from a tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        return version("cdk-hyperpod-tenancy")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the command line and return the exit status (0 valid, 1 invalid or unreadable, 2 usage).

    Args:
        argv: the arguments after the program name; default ``sys.argv[1:]``.

    Returns:
        The process exit status.

    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "validate": lambda a: _validate(path=a.path, baseline=a.baseline, out=sys.stdout, err=sys.stderr),
        "guardrails": lambda a: _guardrails(write=a.write, out=sys.stdout, err=sys.stderr),
        "chargeback": lambda a: _chargeback(a, err=sys.stderr),
        "webhook": lambda a: _webhook(a, err=sys.stderr),
    }
    if args.command in TOOLS:
        tool = importlib.import_module(f"hyperpod_tenancy.tools.{args.command.replace('-', '_')}")
        commands[args.command] = lambda a: int(tool.run(a, out=sys.stdout, err=sys.stderr))
    run = commands.get(args.command)
    if run is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: choose a command, e.g. `{PROG} validate platform.yaml`", file=sys.stderr)
        return EXIT_USAGE
    extra = COMMAND_EXTRAS.get(args.command, args.command)
    if extra in EXTRAS and _needs_extra(args) and not _has_extra(extra, command=args.command, err=sys.stderr):
        return EXIT_INVALID
    return run(args)


def _needs_extra(args: argparse.Namespace) -> bool:
    """Whether this invocation runs what the command's extra brings.

    ``explain --from-file`` reads a file, ``explain --denial TEXT -n NS`` only the message: the Kubernetes client
    is needed to read the cluster, and to find the namespace of the kubeconfig's context. ``plan`` prints its
    text without the extra (plain lines where ``rich`` is missing); only ``--png`` draws with matplotlib.
    """
    if args.command == "plan":
        return args.png is not None
    offline = getattr(args, "from_file", None) is not None or bool(
        getattr(args, "denial", None) and args.workload is None and args.namespace
    )
    return not offline


def _has_extra(extra: str, *, command: str | None = None, err: TextIO) -> bool:
    """Whether the modules of ``extra`` are installed; if not, say in one line which extra to install."""
    missing = [module for module in EXTRAS[extra] if importlib.util.find_spec(module) is None]
    if missing:
        print(
            f"{PROG}: error: `{PROG} {command or extra}` needs the [{extra}] extra ({', '.join(missing)} not installed): "
            f"pip install 'cdk-hyperpod-tenancy[{extra}]'",
            file=err,
        )
    return not missing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check a shared HyperPod cluster tenancy policy (platform.yaml) before `cdk synth`.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    check = commands.add_parser(
        "validate",
        help="validate a platform policy and print a summary",
        description="Validate a platform policy: list every problem (exit 1) or print a summary (exit 0).",
    )
    check.add_argument(
        "path", nargs="?", default="platform.yaml", type=Path, help="policy file (default: platform.yaml)"
    )
    check.add_argument(
        "--baseline",
        metavar="OLD_PATH",
        type=Path,
        help="the deployed policy: report changes that CloudFormation performs as a replacement",
    )
    table = commands.add_parser(
        "guardrails",
        help="print the guardrail table (Markdown) generated from the rule registry",
        description="Print the guardrail table of docs/guardrails.md, generated from the rule registry.",
    )
    table.add_argument(
        "--markdown", action="store_true", help="print the Markdown table (the default and only format)"
    )
    table.add_argument(
        "--write",
        metavar="FILE",
        type=Path,
        help="replace the table between the guardrail markers of FILE (docs/guardrails.md) instead of printing it",
    )
    _chargeback_parser(commands)
    _webhook_parser(commands)
    for name in TOOLS:
        importlib.import_module(f"hyperpod_tenancy.tools.{name.replace('-', '_')}").add_parser(commands)
    return parser


def _webhook_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    webhook = commands.add_parser(
        "webhook",
        help="the POSIX identity admission webhook",
        description="The POSIX identity admission webhook (runs in the cluster).",
    )
    actions = webhook.add_subparsers(dest="webhook_command", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve /mutate, /validate, /healthz and /readyz over HTTPS until SIGTERM",
        description="Serve the webhook over HTTPS until SIGTERM (DynamoDB endpoint from AWS_ENDPOINT_URL when set).",
    )
    serve.add_argument("--port", required=True, type=int, help="TCP port to listen on (e.g. 8443)")
    serve.add_argument("--tls-cert", required=True, type=Path, metavar="FILE", help="PEM certificate chain")
    serve.add_argument("--tls-key", required=True, type=Path, metavar="FILE", help="PEM private key")
    serve.add_argument("--table", required=True, metavar="NAME", help="DynamoDB table of the UID map")
    serve.add_argument(
        "--teams", required=True, type=Path, metavar="FILE", help="the webhook's configuration JSON"
    )
    serve.add_argument("--host", default="0.0.0.0", help="address to bind (default: all interfaces)")  # noqa: S104
    serve.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        metavar="PORT",
        help="plain-HTTP port of GET /metrics (default: 9090; 0: a free port)",
    )
    serve.add_argument(
        "--max-body-bytes", type=int, default=None, metavar="N", help="largest request body (default: 6 MiB)"
    )
    serve.add_argument(
        "--kube-api",
        default=None,
        metavar="URL",
        help="the Kubernetes API server (default: from KUBERNETES_SERVICE_HOST/PORT in a pod)",
    )
    serve.add_argument("--kube-token-file", type=Path, default=None, metavar="FILE", help="bearer token file")
    serve.add_argument("--kube-ca-file", type=Path, default=None, metavar="FILE", help="API server CA bundle")


def _kube_api(args: argparse.Namespace) -> KubeApi | None:
    """Return the API server the webhook reads Pods from: the flags, else the pod's service account, else none."""
    from hyperpod_tenancy.webhook import kube  # noqa: PLC0415

    url = args.kube_api or kube.in_cluster_url()
    if url is None:
        return None
    return kube.KubeApi(
        url=url,
        token_file=args.kube_token_file or kube.IN_CLUSTER_TOKEN,
        ca_file=args.kube_ca_file or kube.IN_CLUSTER_CA,
    )


def _webhook(args: argparse.Namespace, *, err: TextIO) -> int:
    """Run ``webhook serve``; return 1 when the configuration or the certificates cannot be used."""
    # imported here: only this command loads the server stack
    from hyperpod_tenancy.webhook import config, server  # noqa: PLC0415

    try:
        settings = config.load_config(args.teams)
    except config.WebhookConfigError as exc:
        print(f"{PROG}: error: --teams: {exc}", file=err)
        return EXIT_INVALID
    for flag, path in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
        if not path.is_file():
            print(f"{PROG}: error: {flag} {str(path)!r} is not a readable file.", file=err)
            return EXIT_INVALID
    if not 0 < args.port < 65536:
        print(f"{PROG}: error: --port {args.port} is not a TCP port (1-65535).", file=err)
        return EXIT_INVALID
    metrics_port = server.DEFAULT_METRICS_PORT if args.metrics_port is None else args.metrics_port
    if not 0 <= metrics_port < 65536 or metrics_port == args.port:
        print(
            f"{PROG}: error: --metrics-port {metrics_port} is not a TCP port (0-65535) other than --port.",
            file=err,
        )
        return EXIT_INVALID
    options = server.ServeOptions(
        port=args.port,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        table=args.table,
        config=settings,
        host=args.host,
        max_body_bytes=args.max_body_bytes or server.DEFAULT_MAX_BODY_BYTES,
        kube_api=_kube_api(args),
        metrics_port=metrics_port,
    )
    try:
        server.serve(options)
    except server.MetricsPortUnavailable as exc:
        print(f"{PROG}: error: {exc}", file=err)
        return EXIT_INVALID
    return EXIT_OK


def _chargeback_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _chargeback_settings(args: argparse.Namespace, err: TextIO) -> ChargebackConfig | None:
    """Return the chargeback configuration from --config or the platform policy; None (reported) on errors."""
    if args.config is None:
        platform = _load(args.platform or Path("platform.yaml"), "", err)
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


def _chargeback(args: argparse.Namespace, *, err: TextIO) -> int:
    """Compute and write the offline chargeback report; return the exit status.

    0; 1 on bad inputs (nothing written); 3 when the report, written all the same, does not reconcile.
    """
    # imported here: DuckDB and sqlglot load only for this command
    from hyperpod_tenancy import chargeback_offline  # noqa: PLC0415
    from hyperpod_tenancy.chargeback import engine, queries, report  # noqa: PLC0415

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
            config=config, month=args.month, usage=args.usage, cur=args.cur, prices=args.prices
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


def _guardrails(*, write: Path | None, out: TextIO, err: TextIO) -> int:
    """Print the guardrail table, or rewrite it in ``write`` between its markers.

    Returns:
        0, or 1 when ``write`` cannot be read or has no markers.

    """
    from hyperpod_tenancy.policy import rules  # noqa: PLC0415 - see the imports

    if write is None:
        print(rules.guardrails_markdown(), end="", file=out)
        return EXIT_OK
    try:
        write.write_text(rules.update_readme(write.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"{PROG}: error: cannot update {str(write)!r}: {exc}", file=err)
        return EXIT_INVALID
    return EXIT_OK


def _validate(*, path: Path, baseline: Path | None = None, out: TextIO, err: TextIO) -> int:
    """Validate ``path`` (and compare it with ``baseline``), print the outcome and return the exit status.

    Args:
        path: the policy file.
        baseline: the deployed policy file, to report replacements against.
        out: where the summary goes.
        err: where problems go.

    Returns:
        0 when the policy (and the baseline) are valid, 1 otherwise.

    """
    platform = _load(path, "", err)
    old = _load(baseline, "baseline ", err) if baseline is not None else None
    if platform is None or (baseline is not None and old is None):
        return EXIT_INVALID
    from hyperpod_tenancy.policy.changes import replacement_warnings  # noqa: PLC0415 - see the imports

    replacements = replacement_warnings(old, platform) if old is not None else None
    for line in _summary(platform, source=str(path), replacements=replacements, baseline=baseline):
        print(line, file=out)
    return EXIT_OK


def _load(path: Path, role: str, err: TextIO) -> Platform | None:
    return load_policy(path, err, role=role)


def _summary(
    platform: Platform,
    *,
    source: str,
    replacements: Sequence[PolicyIssue] | None = None,
    baseline: Path | None = None,
) -> list[str]:
    """Return the one-screen summary of a valid platform, one string per line.

    Args:
        platform: the validated policy.
        source: where it was loaded from.
        replacements: replacement warnings against ``baseline``; None when no baseline was given.
        baseline: the baseline file the replacements were computed against.

    Returns:
        The lines to print.

    """
    c = platform.cluster
    lines = [
        f"{source}: valid. Platform {platform.name}, account {platform.account}, region {platform.region}.",
        f"cluster  {c.name}  backend {platform.fairness_backend.value}  Kubernetes {c.kubernetes_version}  "
        f"zones {', '.join(c.availability_zones)}",
        f"         VPC {c.vpc_cidr}  data {c.data_classification}  FSx {c.fsx.deployment_type} "
        f"{c.fsx.storage_capacity_gib} GiB",
        "instance groups",
    ]
    groups = [["name", "type", "count", "reserved", "promisable", "zone"]]
    groups += [
        [
            g.name,
            g.instance_type,
            str(g.count),
            str(g.reserved),
            str(g.quota_capacity),
            g.availability_zone or "-",
        ]
        for g in c.instance_groups
    ]
    lines += _table(groups)
    s = platform.scheduling
    on_off = {True: "on", False: "off"}
    lines.append(
        f"priority classes (weight; * preemptible: must checkpoint)  fair share {on_off[s.fair_share]}, "
        f"idle sharing {on_off[s.idle_resource_sharing]}, checkpoints {s.checkpoint_enforcement.value}"
    )
    lines.append(
        "  " + ", ".join(f"{_class_label(platform, pc.name)} {pc.weight}" for pc in s.priority_classes)
    )
    lines.append("teams")
    rows = [["name", "namespace", "quotas", "sharing", "borrow", "weight", "priority classes"]]
    rows += [_team_row(platform, t) for t in platform.teams]
    lines += _table(rows)
    lines.append("quotas per instance type (promisable = count - reserved)")
    lines += _table(_capacity_rows(platform))
    from hyperpod_tenancy.policy.validation import policy_warnings  # noqa: PLC0415 - see the imports

    lines += _issues("warnings", policy_warnings(platform))
    if replacements is not None:
        lines += _issues(f"replacements vs baseline {baseline}", replacements)
    return lines


def _class_label(platform: Platform, name: str) -> str:
    return f"{name}*" if platform.priority_class(name).preemptible else name


def _team_row(platform: Platform, team: Team) -> list[str]:
    from hyperpod_tenancy.policy import names  # noqa: PLC0415 - see the imports

    hosted = team in platform.hosted_teams
    compute = team.compute
    borrows = platform.scheduling.idle_resource_sharing and compute.sharing.borrows
    return [
        team.name,
        names.namespace(team.name)
        if hosted
        else f"- (dedicated cluster: {platform.team_classification(team)})",
        ", ".join(f"{t}={n}" for t, n in compute.quotas.items()) or "-",
        compute.sharing.value,
        f"{compute.borrow_limit}%" if borrows else "-",
        str(compute.fair_share_weight) if platform.scheduling.fair_share else "-",
        ", ".join(_class_label(platform, n) for n in team.allowed_priority_classes),
    ]


def _capacity_rows(platform: Platform) -> list[list[str]]:
    rows = [["type", "promised", "promisable", "unpromised", "teams"]]
    for itype in dict.fromkeys(g.instance_type for g in platform.cluster.instance_groups):
        capacity = sum(g.quota_capacity for g in platform.instance_group_for(itype))
        shares = [
            (t.name, t.compute.quotas[itype]) for t in platform.hosted_teams if itype in t.compute.quotas
        ]
        promised = sum(n for _, n in shares)
        rows.append(
            [
                itype,
                str(promised),
                str(capacity),
                str(capacity - promised),
                ", ".join(f"{name} {n}" for name, n in shares) or "-",
            ]
        )
    return rows


def _issues(title: str, issues: Sequence[PolicyIssue]) -> list[str]:
    if not issues:
        return [f"{title}: none"]
    return [f"{title} ({len(issues)})"] + [f"  {issue}" for issue in issues]


def _table(rows: list[list[str]]) -> list[str]:
    return plain_table(rows)
