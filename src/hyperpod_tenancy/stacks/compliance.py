"""The "Compliance" lists of ``docs/compliance.md``: every scanner finding the templates accept, with its reason, generated.

Read from what synthesis produced, not from a list kept by hand: checkov skips from each resource's
``Metadata.checkov.skip`` in the templates, cdk-nag and cfn-lint acknowledgments from the constructs' policy
validation metadata (``aws:cdk:acknowledged-rules``, what ``cdk.Validations.acknowledge`` records). Findings of
one rule with one reason are one row, with how many resources (checkov) or findings (acknowledgments) it covers
on each synthesized platform.

``python -m hyperpod_tenancy.stacks.compliance [PATH] [--write docs/compliance.md]`` synthesizes the policy (default
``platform.yaml``) on both fairness backends with the ``cdk.json`` context of the current directory and prints the
lists, or rewrites them in ``docs/compliance.md`` between their markers; a test fails when those are stale. (A module of
the stacks layer, not a ``hyperpod-tenancy`` command: the CLI stays free of CDK, per the layering contract.)
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from constructs import IConstruct

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import FairnessBackend, Platform, load_platform, validate_platform
from hyperpod_tenancy.policy.fairness import BUILTIN
from hyperpod_tenancy.policy.rules._docs import replace_between_markers
from hyperpod_tenancy.stacks.platform_stage import PlatformStage

__all__ = [
    "END_MARKER",
    "START_MARKER",
    "Acceptance",
    "acceptances",
    "both_backends",
    "compliance_markdown",
    "main",
    "synthesize",
    "update_readme",
]

#: Line before the generated lists in docs/compliance.md.
START_MARKER = "<!-- compliance:start (generated: python -m hyperpod_tenancy.stacks.compliance --write docs/compliance.md) -->"
#: Line after the generated lists in docs/compliance.md.
END_MARKER = "<!-- compliance:end -->"
_ACKNOWLEDGED = "aws:cdk:acknowledged-rules"
#: Prefixes of acknowledged finding IDs, and the scanner that reports them.
_SCANNERS = (("Annotation::AwsSolutions-", "cdk-nag"), ("CloudFormation-Validate::", "cfn-lint"))
_TITLES = (
    ("checkov", "checkov skips"),
    ("cdk-nag", "cdk-nag acknowledgments"),
    ("cfn-lint", "cfn-lint acknowledgments"),
    ("other", "other acknowledgments"),
)


@dataclass(frozen=True, order=True)
class Acceptance:
    """One accepted finding kind: the scanner, its rule, and the reason recorded with it."""

    scanner: str
    #: checkov check ID, cdk-nag rule (without the finding's ``[...]`` detail) or cfn-lint rule.
    rule: str
    reason: str


def _scanner_rule(finding_id: str) -> tuple[str, str]:
    for prefix, scanner in _SCANNERS:
        if finding_id.startswith(prefix):
            rule = finding_id.removeprefix("Annotation::").removeprefix("CloudFormation-Validate::")
            return scanner, rule.split("[", 1)[0]
    return "other", finding_id.split("[", 1)[0]


def acceptances(root: IConstruct, templates: Iterable[Mapping[str, Any]]) -> collections.Counter[Acceptance]:
    """Count the accepted findings of a synthesized app: acknowledgments under ``root``, skips in ``templates``."""
    found: collections.Counter[Acceptance] = collections.Counter()
    for construct in root.node.find_all():
        for entry in construct.node.metadata:
            if entry.type == _ACKNOWLEDGED:
                for finding_id, reason in dict(entry.data).items():
                    scanner, rule = _scanner_rule(str(finding_id))
                    found[Acceptance(scanner, rule, str(reason))] += 1
    for template in templates:
        for resource in template.get("Resources", {}).values():
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", []):
                found[Acceptance("checkov", skip["id"], skip["comment"])] += 1
    return found


def synthesize(
    platform: Platform, *, context: Mapping[str, Any] | None = None
) -> collections.Counter[Acceptance]:
    """Synthesize ``platform`` through :class:`PlatformStage` (in a temporary directory) and count its acceptances.

    ``context``: the app's context (the ``context`` of ``cdk.json``: its feature flags change what CDK creates).
    """
    with tempfile.TemporaryDirectory() as outdir:
        app = cdk.App(outdir=outdir, context=dict(context or {}))
        stage = PlatformStage(app, platform.name, platform=platform)
        app.synth()
        templates = [s.template for s in stage.synth().stacks]
        return acceptances(app, templates)


def both_backends(platform: Platform) -> dict[str, Platform]:
    """``platform`` on each built-in fairness backend (its own first), by column label."""
    columns = {str(platform.fairness_backend): platform}
    for builtin in BUILTIN:
        key = str(builtin.key)
        if key not in columns:
            switched = dataclasses.replace(platform, fairness_backend=FairnessBackend(key))
            validate_platform(switched)
            columns[key] = switched
    return columns


def _cell(text: str) -> str:
    if "\n" in text:
        raise ValueError(f"{text!r} cannot be a Markdown table cell.")
    return text.replace("|", "\\|")


def compliance_markdown(columns: Mapping[str, collections.Counter[Acceptance]]) -> str:
    """Render the accepted findings as Markdown tables (checkov, then cdk-nag, then cfn-lint), one count per column.

    Args:
        columns: per synthesized platform (column label), the counts of :func:`acceptances`.

    Returns:
        The tables, ending with a newline.

    """
    rows = sorted({a for counts in columns.values() for a in counts})
    labels = list(columns)
    out: list[str] = []
    for scanner, title in _TITLES:
        mine = [a for a in rows if a.scanner == scanner]
        if not mine:
            continue
        out += [
            f"**{title}** (count: resources or findings per platform)",
            "",
            "| rule | " + " | ".join(labels) + " | reason |",
            "| --- | " + " | ".join("---:" for _ in labels) + " | --- |",
        ]
        out += [
            f"| `{a.rule}` | "
            + " | ".join(str(columns[label][a]) for label in labels)
            + f" | {_cell(a.reason)} |"
            for a in mine
        ]
        out.append("")
    return "\n".join(out)


def update_readme(text: str, table: str) -> str:
    """Return ``text`` (``docs/compliance.md``) with its compliance section set to ``table``.

    Raises:
        ValueError: the markers are missing or out of order.

    """
    return replace_between_markers(text, table, start_marker=START_MARKER, end_marker=END_MARKER)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the lists for a policy, or rewrite them in a page; return the exit status (0, or 1 on an error)."""
    parser = argparse.ArgumentParser(
        prog="python -m hyperpod_tenancy.stacks.compliance",
        description="List the checkov skips and cdk-nag/cfn-lint acknowledgments of the policy's templates.",
    )
    parser.add_argument(
        "path", nargs="?", default="platform.yaml", help="policy file (default: platform.yaml)"
    )
    parser.add_argument(
        "--write", metavar="FILE", help="rewrite the lists between the markers of FILE (docs/compliance.md)"
    )
    args = parser.parse_args(argv)
    try:
        platform = load_platform(args.path)
    except (PolicyError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 1
    cdk_json = Path("cdk.json")
    context = (
        json.loads(cdk_json.read_text(encoding="utf-8")).get("context", {}) if cdk_json.is_file() else {}
    )
    columns = {label: synthesize(p, context=context) for label, p in both_backends(platform).items()}
    table = compliance_markdown(columns)
    if args.write is None:
        print(table, end="")
        return 0
    readme = Path(args.write)
    try:
        readme.write_text(update_readme(readme.read_text(encoding="utf-8"), table), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"cannot update {str(readme)!r}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
