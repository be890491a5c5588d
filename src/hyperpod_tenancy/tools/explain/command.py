"""``hyperpod-tenancy explain``: why is my job pending, in plain words for the team member who submitted it.

``hyperpod-tenancy explain [WORKLOAD] [-n NAMESPACE] [--from-file FILE] [--denial TEXT] [--platform PATH]``
reads a Kueue Workload (by its name or its job's name), its team's ClusterQueue, the Events and Pods of its job
and the policy (``platform.yaml``), and says what holds it: the team's own quota, the borrowing ceiling, lenders
without idle capacity, a missing flavor, a priority class the team is not entitled to, a preemption (by whom),
or, when Kueue is not the cause, pods that no node takes, the home-directory init container, an admission
denial (``--denial`` or the job's ``FailedCreate`` Events) or the POSIX identity webhook being down.

Live, it uses the official ``kubernetes`` client (the ``[explain]`` extra) with the user's kubeconfig and makes
only reads the team's Kubernetes group is granted (:mod:`._explain_live`); offline, ``--from-file`` reads what
``kubectl get ... -o json`` wrote (``docs/explain.md`` describes the format). Exit status: 0 explained, 1 input
that cannot be read or an object that is not there, 2 usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:  # the policy model and the diagnosis load inside `run`, not with `--help`
    from hyperpod_tenancy.policy.model import Platform
    from hyperpod_tenancy.tools.explain.objects import Diagnosis, Objects

__all__ = ["EXIT_EXPLAINED", "EXIT_INPUT", "EXIT_USAGE", "add_parser", "read_documents", "run"]

#: Exit status: the workload (or the refusal) was explained.
EXIT_EXPLAINED = 0
#: Exit status: an input cannot be read, or the Workload is not there.
EXIT_INPUT = 1
#: Exit status: the command line is wrong.
EXIT_USAGE = 2
_PROG = "hyperpod-tenancy"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``explain`` subcommand to ``commands``."""
    parser = commands.add_parser(
        "explain",
        help="say in plain words why a job is pending (Kueue quota, preemption, pods, admission)",
        description=(
            "Explain what holds a job: its Kueue Workload, its team's ClusterQueue, its pods and events, and "
            "platform.yaml. Reads the cluster with your kubeconfig, or a file from `kubectl get -o json`."
        ),
    )
    parser.add_argument("workload", nargs="?", help="the Workload's name, or its job's name")
    parser.add_argument(
        "-n", "--namespace", help="the team namespace (default: the file's, or the kubeconfig context's)"
    )
    parser.add_argument(
        "--from-file",
        dest="from_file",
        metavar="FILE",
        help="read the objects from FILE (JSON or YAML: a Workload, a List, or several documents; - for stdin)",
    )
    parser.add_argument(
        "--denial",
        action="append",
        default=[],
        metavar="TEXT",
        help="an admission error as kubectl printed it (repeatable)",
    )
    parser.add_argument(
        "--platform",
        metavar="PATH",
        help=(
            "the policy (default: platform.yaml when there is one; without it, your team's facts are read from "
            "the cluster)"
        ),
    )
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--json", action="store_true", help="print the diagnosis as JSON")


def read_documents(text: str, source: str) -> list[object]:
    """Return the documents of an offline file: one or more JSON values one after another, or YAML documents.

    Raises:
        ExplainInputError: the text is neither.

    """
    from hyperpod_tenancy.tools.explain.objects import ExplainInputError  # noqa: PLC0415

    decoder = json.JSONDecoder()
    docs: list[object] = []
    pos = 0
    stripped = text.strip()
    if stripped.startswith(("{", "[")):
        try:
            while pos < len(stripped):
                doc, pos = decoder.raw_decode(stripped, pos)
                docs.append(doc)
                while pos < len(stripped) and stripped[pos].isspace():
                    pos += 1
            return docs
        except json.JSONDecodeError as exc:
            raise ExplainInputError(f"{source} is not valid JSON (line {exc.lineno}: {exc.msg})") from None
    import yaml  # noqa: PLC0415 - the policy's own dependency

    try:
        return [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise ExplainInputError(f"{source} is neither JSON nor YAML{where}") from None


def _read_file(path: str) -> str:
    from hyperpod_tenancy.tools.explain.objects import ExplainInputError  # noqa: PLC0415

    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ExplainInputError(
            f"cannot read {path}: {exc.strerror if isinstance(exc, OSError) else 'not UTF-8 text'}"
        ) from None


def _as_json(diagnoses: list[Diagnosis], namespace: str, workload: str | None) -> str:
    return json.dumps(
        {
            "namespace": namespace,
            "workload": workload,
            "diagnoses": [
                {
                    "cause": d.cause.value,
                    "summary": d.summary,
                    "details": list(d.details),
                    "fix": list(d.fix),
                    "notVisible": d.not_visible,
                }
                for d in diagnoses
            ],
        },
        indent=2,
    )


class _UsageError(Exception):
    """The command line does not say enough (exit :data:`EXIT_USAGE`)."""


#: The policy read when ``--platform`` is not given and the file is there.
_DEFAULT_POLICY = "platform.yaml"


class _NoPolicy:
    """``--platform`` was not given and there is no ``platform.yaml``: the team's facts come from the cluster."""


def _platform(path: str | None, err: TextIO) -> Platform | _NoPolicy | None:
    """Return the loaded policy, :class:`_NoPolicy`, or None after saying in one line why it cannot be used."""
    from hyperpod_tenancy.errors import PolicyError  # noqa: PLC0415
    from hyperpod_tenancy.policy import load_platform  # noqa: PLC0415

    if path is None:
        if not Path(_DEFAULT_POLICY).is_file():
            return _NoPolicy()
        path = _DEFAULT_POLICY
    try:
        return load_platform(path)
    except FileNotFoundError:
        print(f"{_PROG} explain: error: {path} not found: pass --platform PATH, or leave it out", file=err)
    except (PolicyError, OSError) as exc:
        print(f"{_PROG} explain: error: {path} cannot be used: {str(exc).splitlines()[0]}", file=err)
    return None


def _objects(args: argparse.Namespace, platform: Platform | None) -> Objects:
    """Return the objects to diagnose: from ``--from-file``, or read live (only a team namespace is read)."""
    from hyperpod_tenancy.tools.explain.diagnose import facts_of  # noqa: PLC0415
    from hyperpod_tenancy.tools.explain.objects import Objects, objects_from_documents  # noqa: PLC0415

    if args.from_file is not None:
        docs = read_documents(_read_file(args.from_file), args.from_file)
        return objects_from_documents(
            docs, asked=args.workload, namespace=args.namespace, denials=args.denial
        )
    from hyperpod_tenancy.policy import names  # noqa: PLC0415
    from hyperpod_tenancy.tools.explain.live import context_namespace, read_live  # noqa: PLC0415

    namespace = args.namespace or context_namespace(args.kubeconfig, args.context)
    if namespace is None:
        raise _UsageError(f"pass -n {names.namespace('<team>')}: the kubeconfig context sets no namespace")
    facts_of(platform, Objects(namespace=namespace))  # refuses a namespace that is no team's
    if args.workload is None:
        return Objects(namespace=namespace, denials=tuple(args.denial))
    return read_live(
        namespace=namespace,
        asked=args.workload,
        denials=tuple(args.denial),
        kubeconfig=args.kubeconfig,
        context=args.context,
    )


def _print(
    platform: Platform | None, objects: Objects, diagnoses: list[Diagnosis], *, as_json: bool, out: TextIO
) -> None:
    from hyperpod_tenancy.tools.explain.diagnose import facts_of  # noqa: PLC0415

    name = ((objects.workload or {}).get("metadata") or {}).get("name")
    if as_json:
        print(_as_json(diagnoses, objects.namespace, name), file=out)
        return
    team = facts_of(platform, objects).name
    what = f"Workload {name}" if name else f"{objects.asked or 'your request'} (no Workload)"
    print(f"{what} in {objects.namespace} (team {team}):", file=out)
    for i, diagnosis in enumerate(diagnoses):
        if i == 1:
            print("\nAlso:", file=out)
        print(diagnosis.render(), file=out)


def run(args: argparse.Namespace, *, out: TextIO, err: TextIO) -> int:
    """Run ``explain`` with parsed ``args``: the diagnosis to ``out``, problems to ``err``; return the exit status."""
    from hyperpod_tenancy.tools.explain.diagnose import diagnose  # noqa: PLC0415
    from hyperpod_tenancy.tools.explain.objects import ExplainInputError  # noqa: PLC0415

    if args.from_file is None and args.workload is None and not args.denial:
        print(
            f"{_PROG} explain: error: name the workload (or its job), or pass --from-file or --denial",
            file=err,
        )
        return EXIT_USAGE
    loaded = _platform(args.platform, err)
    if loaded is None:
        return EXIT_INPUT
    platform = None if isinstance(loaded, _NoPolicy) else loaded
    try:
        objects = _objects(args, platform)
        diagnoses = diagnose(platform, objects)
    except _UsageError as exc:
        print(f"{_PROG} explain: error: {exc}", file=err)
        return EXIT_USAGE
    except ExplainInputError as exc:
        print(f"{_PROG} explain: error: {exc}", file=err)
        return EXIT_INPUT
    _print(platform, objects, diagnoses, as_json=args.json, out=out)
    return EXIT_EXPLAINED
