"""Every admission denial message of the platform's policies, with what to do (docs/troubleshooting.md).

Generated from the ValidatingAdmissionPolicies the platform renders for a ``platform.yaml`` (the same ones
``hyperpod-tenancy explain --denial`` compares a message with), so a new validation appears on the page as soon as
it exists. ``python -m hyperpod_tenancy.tools.explain.denials_doc [PATH] [--write docs/troubleshooting.md]`` prints the
section, or rewrites it between its markers; ``tests/test_docs.py`` fails when the page's copy is stale, and
when a policy has no entry in :data:`WHAT_TO_DO`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from hyperpod_tenancy.errors import PolicyError
from hyperpod_tenancy.policy import Platform, load_platform, names
from hyperpod_tenancy.policy.rules import GUARDRAILS
from hyperpod_tenancy.policy.rules._docs import replace_between_markers
from hyperpod_tenancy.tools.explain.denials import _policies

__all__ = ["END_MARKER", "START_MARKER", "WHAT_TO_DO", "denials_markdown", "main"]

#: Line before the generated section in docs/troubleshooting.md.
START_MARKER = "<!-- denials:start (generated: python -m hyperpod_tenancy.tools.explain.denials_doc --write docs/troubleshooting.md) -->"
#: Line after the generated section in docs/troubleshooting.md.
END_MARKER = "<!-- denials:end -->"

#: What a team member does about a denial of each policy (the message itself names the field).
WHAT_TO_DO: dict[str, str] = {
    "hyperpod-tenancy-workload-labels": (
        "Label the workload (and, for the HyperPod CLI, its pod template: `--queue-name`, `--priority`) with "
        f"`kueue.x-k8s.io/queue-name: {names.local_queue('<team>')}` and `kueue.x-k8s.io/priority-class` set to "
        "one of your team's classes (`hyperpod-tenancy onboarding <team>` lists them). Never set controller "
        "owner references or finalizers yourself. On `fairnessBackend: kueue`, submit a Kubeflow `PyTorchJob` "
        "instead of a `HyperPodPyTorchJob`."
    ),
    "hyperpod-tenancy-checkpoints": (
        "Declare the checkpoint once, in the training container's environment: "
        "`HYPERPOD_TENANCY_CHECKPOINT_DIR` (a directory below the container's mount of the claim `fsx`, e.g. "
        "`/fsx/<team>/<job>`) and `HYPERPOD_TENANCY_CHECKPOINT_INTERVAL` (e.g. `30m`, at most the class's "
        "`maxCheckpointInterval`), with `kubectl` as with `hyp --environment`. Remove the annotations "
        "`hyperpod-tenancy.io/checkpoint-path` and `hyperpod-tenancy.io/checkpoint-interval` from the job and its "
        "pod templates. See [Submitting work](submitting-work.md)."
    ),
    "hyperpod-tenancy-pod-specs": (
        "Remove `priorityClassName` from the pod template (the Kueue label carries the priority), remove the "
        "device-visibility variables (the device plugin sets them), request the accelerators that go with "
        "any EFA interfaces, and name a topology level the cluster has (or none) in "
        "`kueue.x-k8s.io/podset-required-topology`; see [Submitting work](submitting-work.md#placing-a-job-under-"
        "one-network-node)."
    ),
    "hyperpod-tenancy-workload-deletes": (
        "Delete with the default cascade (`kubectl delete job <name>`, which is `--cascade=background`), or "
        "`--cascade=foreground`; never `--cascade=orphan`."
    ),
    "hyperpod-tenancy-tenant-services": (
        "Use a ClusterIP Service (leave `spec.type` out) without `externalIPs`; inference teams expose endpoints "
        "through the inference operator."
    ),
    "hyperpod-tenancy-tenant-secrets": "Use an `Opaque` Secret; workloads get their AWS access through Pod Identity.",
    "hyperpod-tenancy-tenant-config-owners": (
        "Ask the person who created the ConfigMap or Secret (annotation `hyperpod-tenancy.io/created-by`) to change "
        "it, or create your own. Create what the whole team maintains with the label "
        '`hyperpod-tenancy.io/team-shared: "true"`; the record and the label cannot change afterwards.'
    ),
    "hyperpod-tenancy-operator-fields": (
        "Remove the field the message names: no `enableIngress` or autoscaler `securityContext`/`volumeMounts` on "
        "Ray, no init containers or volumes on an InferenceEndpointConfig, S3 locations under "
        "`s3://<data bucket>/teams/<team>/`, and an FSx model location under `<team>/models/` "
        "(`/fsx/<team>/models`)."
    ),
    "hyperpod-tenancy-posix-identity": (
        "Remove `runAsUser`, `runAsGroup`, `fsGroup` and `supplementalGroups` from the pod spec (the POSIX "
        "identity webhook sets them to your UID and the team GID), set `allowPrivilegeEscalation: false` on every "
        "container, and leave `hostUsers` out. A missing GID label is the platform team's to fix."
    ),
}

#: A workload kind's name at the start of a pod-spec message, and the pod-template paths in parentheses.
_KIND = re.compile(r"^[A-Za-z]+: ")
_PATHS = re.compile(r" \((?:spec[^()]*)\)")


def _code(text: str) -> str:
    """``text`` as a Markdown code span, whatever backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}" if longest else f"{fence}{text}{fence}"


def _messages(policy: dict[str, object]) -> list[str]:
    spec = policy["spec"]
    if not isinstance(spec, dict):
        raise TypeError(f"policy {policy_name(policy)}: spec is not a mapping")
    out: list[str] = []
    for validation in spec.get("validations") or ():
        message = " ".join(str(validation.get("message") or validation.get("messageExpression")).split())
        if policy_name(policy) == "hyperpod-tenancy-pod-specs":
            message = "<kind>: " + _PATHS.sub(" (<pod template>)", _KIND.sub("", message, count=1))
        if message not in out:
            out.append(message)
    return out


def policy_name(policy: dict[str, object]) -> str:
    """Return the ``metadata.name`` of a rendered policy."""
    metadata = policy["metadata"]
    if not isinstance(metadata, dict):
        raise TypeError("a rendered policy without metadata")
    return str(metadata["name"])


def denials_markdown(platform: Platform) -> str:
    """Return the generated section: per policy, what it prevents, what to do, and every message it denies with.

    Raises:
        KeyError: a policy has no entry in :data:`WHAT_TO_DO`.

    """
    failures = {g.code: g.failure for g in GUARDRAILS}
    lines: list[str] = []
    seen: set[str] = set()
    for policy in _policies(platform):
        name = policy_name(policy)
        if name in seen:
            continue
        seen.add(name)
        lines += [f"### `{name}`", ""]
        if name in failures:
            lines += [f"It prevents: {failures[name]}.", ""]
        lines += [f"**What to do.** {WHAT_TO_DO[name]}", "", "Messages:", ""]
        lines += [f"- {_code(message)}" for message in _messages(policy)]
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the section for a policy, or rewrite it in a page; return the exit status (0, or 1 on an error)."""
    parser = argparse.ArgumentParser(
        prog="python -m hyperpod_tenancy.tools.explain.denials_doc",
        description="List every admission denial message of the platform's policies, with what to do.",
    )
    parser.add_argument(
        "path", nargs="?", default="platform.yaml", help="policy file (default: platform.yaml)"
    )
    parser.add_argument(
        "--write",
        metavar="FILE",
        help="rewrite the section between the markers of FILE (docs/troubleshooting.md)",
    )
    args = parser.parse_args(argv)
    try:
        section = denials_markdown(load_platform(args.path))
        if args.write is None:
            print(section, end="")
            return 0
        page = Path(args.write)
        text = page.read_text(encoding="utf-8")
        page.write_text(
            replace_between_markers(text, section, start_marker=START_MARKER, end_marker=END_MARKER),
            encoding="utf-8",
        )
    except (PolicyError, OSError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
