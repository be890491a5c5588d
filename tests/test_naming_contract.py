"""One home per naming and labelling rule.

Every derived name (``hyperpod-ns-<team>``, ``<team>-quota``, ``Team-<Team>``...) is built in
:mod:`hyperpod_tenancy.policy.names`, every label key and the managed-by label in
:mod:`hyperpod_tenancy.k8s.labels`. The source checks read the package's syntax trees, so they see string
literals and f-strings but not comments or docstrings, which may show the names to the reader.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from synth import Synth

from hyperpod_tenancy.k8s import labels
from hyperpod_tenancy.policy import names

PACKAGE = Path(names.__file__).resolve().parents[1]
NAMES_MODULE = Path(names.__file__).resolve()
LABELS_MODULE = Path(labels.__file__).resolve()

#: Literal pieces of derived names; only the names module may contain them.
NAME_MARKERS = (
    names.NAMESPACE_PREFIX,
    names.CLUSTER_QUEUE_SUFFIX,
    names.LOCAL_QUEUE_SUFFIX,
    names.KUBERNETES_GROUP_SUFFIX,
)
#: A piece of a Kubernetes/AWS name: words of letters and digits joined by ``-``.
_PIECE = r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*"
#: A literal glued before an interpolated value (``"hyperpod-tenancy-" + x``, ``f"fsx-dir-{x}"``).
_GLUED_PREFIX = re.compile(rf"^(?:-?{_PIECE})-$")
#: A literal glued after an interpolated value (``x + "-quota"``, ``f"{x}-priority"``).
_GLUED_SUFFIX = re.compile(rf"^-{_PIECE}-?$")


def _modules(*, besides: Path) -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.resolve() != besides:
            yield path, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """String literals (and f-string pieces) of a module with their line, docstrings left out."""
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def _text(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def glued_names(tree: ast.Module) -> Iterator[tuple[int, str]]:
    """Places where a name prefix or suffix is glued onto a value: f-string pieces and ``+`` operands."""
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = node.values
            for i, part in enumerate(parts):
                if not (isinstance(part, ast.Constant) and isinstance(part.value, str)):
                    continue
                before = i > 0 and isinstance(parts[i - 1], ast.FormattedValue)
                after = i + 1 < len(parts) and isinstance(parts[i + 1], ast.FormattedValue)
                if (after and _GLUED_PREFIX.match(part.value)) or (
                    before and _GLUED_SUFFIX.match(part.value)
                ):
                    yield node.lineno, part.value
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = _text(node.left), _text(node.right)
            if left is not None and right is None and _GLUED_PREFIX.match(left):
                yield node.lineno, left
            if right is not None and left is None and _GLUED_SUFFIX.match(right):
                yield node.lineno, right


def _where(path: Path, line: int) -> str:
    return f"{path.relative_to(PACKAGE.parent)}:{line}"


# --- the checks can fail --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        'name = f"hyperpod-tenancy-{team}-queue-reader"',
        'name = f"{cls}-priority"',
        'stack = "Team-" + pascal(team)',
        "quota = team + '-quota'",
        'job = f"fsx-dir-{team}"',
    ],
)
def test_gluing_a_name_together_is_found(source: str) -> None:
    assert list(glued_names(ast.parse(source)))


@pytest.mark.parametrize(
    "source",
    [
        'message = f"team {team!r} is not hosted on cluster {cluster!r}"',
        'arn = f"arn:{partition}:sagemaker:{region}:{account}"',
        'handle = f"{names.fsx_volume(team)}"',
        'both = "a-" + "b"',
        'domain = f"{cluster}-{team}"',
    ],
)
def test_text_that_is_not_a_derived_name_passes(source: str) -> None:
    assert not list(glued_names(ast.parse(source)))


# --- the contract ---------------------------------------------------------------------------------------


def test_no_module_but_names_builds_a_derived_name() -> None:
    found = [
        f"{_where(path, line)}: {piece!r}"
        for path, tree in _modules(besides=NAMES_MODULE)
        for line, piece in glued_names(tree)
    ]
    assert not found, "build these names in hyperpod_tenancy.policy.names:\n" + "\n".join(found)


def test_no_module_but_names_spells_the_team_name_affixes() -> None:
    found = [
        f"{_where(path, line)}: {marker!r}"
        for path, tree in _modules(besides=NAMES_MODULE)
        for line, text in _strings(tree)
        for marker in NAME_MARKERS
        if marker in text
    ]
    assert not found, "use the functions of hyperpod_tenancy.policy.names:\n" + "\n".join(found)


def test_no_module_but_labels_spells_a_label_key_of_the_platform() -> None:
    keys = ("app.kubernetes.io/managed-by", "hyperpod-tenancy.io/", "pod-security.kubernetes.io/")
    found = [
        f"{_where(path, line)}: {text!r}"
        for path, tree in _modules(besides=LABELS_MODULE)
        for line, text in _strings(tree)
        if any(key in text for key in keys) and " " not in text  # a key, not a message
    ]
    assert not found, "use the constants of hyperpod_tenancy.k8s.labels:\n" + "\n".join(found)


def test_managed_by_has_one_value() -> None:
    # the decision (issue 9): the tool's name, as in the `hyperpod-tenancy` command and label domain
    assert dict(labels.MANAGED_BY_LABELS) == {"app.kubernetes.io/managed-by": "hyperpod-tenancy"}
    assert labels.object_labels("research") == {
        "app.kubernetes.io/managed-by": "hyperpod-tenancy",
        "hyperpod-tenancy.io/team": "research",
    }


def test_every_synthesized_manifest_carries_the_one_managed_by_label(synth: Synth) -> None:
    values: dict[str, set[str]] = {}
    for obj in synth.manifests():
        value = obj["metadata"].get("labels", {}).get("app.kubernetes.io/managed-by", "<none>")
        values.setdefault(value, set()).add(f"{obj['kind']}/{obj['metadata']['name']}")
        template = obj.get("spec", {}).get("template", {}).get("metadata", {})
        if "labels" in template:
            values.setdefault(template["labels"].get("app.kubernetes.io/managed-by", "<none>"), set()).add(
                f"{obj['kind']}/{obj['metadata']['name']} pod template"
            )
    assert set(values) == {"hyperpod-tenancy"}, {v: sorted(o)[:5] for v, o in values.items()}


# --- the names themselves (independent oracle: the names HyperPod Task Governance and AWS use) -----------


def test_names_of_a_team() -> None:
    assert names.namespace("computer-vision") == "hyperpod-ns-computer-vision"
    assert names.cluster_queue("research") == "hyperpod-ns-research-clusterqueue"
    assert names.local_queue("research") == "hyperpod-ns-research-localqueue"
    assert names.kubernetes_group("research") == "hyperpod-ns-research-namespace-level-group"
    assert names.workload_priority_class("training") == "training-priority"
    assert names.compute_quota("research") == "research-quota"
    assert names.queue_reader_cluster_role("research") == "hyperpod-tenancy-research-queue-reader"
    assert names.fsx_volume("research") == "hyperpod-tenancy-fsx-research"
    assert names.fsx_root_volume("research") == "hyperpod-tenancy-fsx-root-research"
    assert names.fsx_root_claim("research") == "fsx-root-research"
    assert names.fsx_directory_job("research") == "fsx-dir-research"
    assert names.fsx_directory("research") == "/fsx/research"
    assert names.fsx_volume_handle("fs-1", "research") == "fs-1::research"
    assert names.fsx_root_volume_handle("fs-1", "research") == "fs-1::root-research"
    assert names.data_prefix("research") == "teams/research/"
    assert names.permission_set("computer-vision") == "ComputerVision"
    assert names.team_stack_id("computer-vision") == "Team-ComputerVision"
    assert names.studio_domain("ml-platform", "research") == "ml-platform-research"
    assert names.scheduler_config("ml-platform") == "ml-platform-policy"
    assert names.prometheus_workspace("ml-platform") == "ml-platform-metrics"
