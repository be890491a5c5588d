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
(:mod:`hyperpod_tenancy.tools.chargeback.offline`); exit 1 on unreadable or malformed inputs, exit 3 (the report
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
from typing import TYPE_CHECKING, TextIO

from hyperpod_tenancy.tools._common import PROG

if TYPE_CHECKING:
    pass
from hyperpod_tenancy.errors import EXIT_INVALID, EXIT_USAGE

__all__ = ["COMMANDS", "COMMAND_EXTRAS", "EXTRAS", "TOOLS", "main"]

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
#: Each command and the module that adds its parser (``add_parser``) and runs it (``run``), in the order ``--help``
#: lists them. This module only dispatches.
COMMANDS: dict[str, str] = {
    "validate": "hyperpod_tenancy.tools.validate",
    "guardrails": "hyperpod_tenancy.tools.validate",
    "chargeback": "hyperpod_tenancy.tools.chargeback.command",
    "webhook": "hyperpod_tenancy.webhook.command",
    "plan": "hyperpod_tenancy.tools.plan",
    "onboarding": "hyperpod_tenancy.tools.onboarding",
    "explain": "hyperpod_tenancy.tools.explain",
    "recommend-quotas": "hyperpod_tenancy.tools.recommend",
    "probe": "hyperpod_tenancy.tools.probe",
    "audit": "hyperpod_tenancy.tools.audit",
}


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
    module = COMMANDS.get(args.command)
    if module is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: choose a command, e.g. `{PROG} validate platform.yaml`", file=sys.stderr)
        return EXIT_USAGE
    extra = COMMAND_EXTRAS.get(args.command, args.command)
    if extra in EXTRAS and _needs_extra(args) and not _has_extra(extra, command=args.command, err=sys.stderr):
        return EXIT_INVALID
    return int(importlib.import_module(module).run(args, out=sys.stdout, err=sys.stderr))


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
    for module in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(module).add_parser(commands)
    return parser
