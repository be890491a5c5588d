"""No code outside the fairness backend modules asks which backend a platform has: it asks the backend object.

A question such as ``platform.fairness_backend is FairnessBackend.KUEUE`` spreads one backend's behaviour over
the code base, and a third backend registered in code would silently get the other branch. The backends answer
through :func:`hyperpod_tenancy.policy.fairness.fairness_of` (the jsii-free half) and
:func:`hyperpod_tenancy.constructs.backends.backend_for` (the CDK half). This test reads every source module
and refuses a member of ``FairnessBackend`` named outside those modules, and a comparison with a platform's
``fairness_backend``; the exceptions are named exactly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hyperpod_tenancy

SOURCE = Path(hyperpod_tenancy.__file__).parent
#: The backend modules: the jsii-free half, the CDK half and the renderers' half.
BACKEND_MODULES = ("policy/fairness/", "constructs/backends/", "k8s/fairness_objects.py")
#: Named exceptions: (module, function), each with its reason.
ALLOWED = {
    # the field's default value in the policy model
    ("policy/model/platform.py", "Platform"),
    # the replacement warning says that the backend itself changes between two policies
    ("policy/changes.py", "_scheduler"),
    # a key registered in code is accepted as the field's value (registry membership, not behaviour)
    ("policy/validation.py", "ensure_valid"),
}


def _questions(tree: ast.AST) -> list[tuple[str, int]]:
    """(enclosing definition, line) of each backend question in a module."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.ClassDef) else where
            if (
                isinstance(child, ast.Attribute)
                and isinstance(child.value, ast.Name)
                and child.value.id == "FairnessBackend"
                and child.attr.isupper()
            ):
                found.append((where, child.lineno))
            if isinstance(child, ast.Compare):
                sides = [child.left, *child.comparators]
                if any(isinstance(s, ast.Attribute) and s.attr == "fairness_backend" for s in sides):
                    found.append((where, child.lineno))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_no_module_outside_the_backends_asks_which_backend_it_has() -> None:
    questions = []
    for path in sorted(SOURCE.rglob("*.py")):
        rel = path.relative_to(SOURCE).as_posix()
        if rel.startswith(BACKEND_MODULES):
            continue
        for where, line in _questions(ast.parse(path.read_text(), str(path))):
            if (rel, where) not in ALLOWED:
                questions.append(f"{rel}:{line} ({where})")
    assert not questions, "ask the backend object (fairness_of / backend_for) instead: " + ", ".join(
        questions
    )


def test_the_check_sees_each_form_of_the_question() -> None:
    source = (
        "def a(p):\n    return p.fairness_backend is FairnessBackend.KUEUE\n"
        "def b(p):\n    return p.fairness_backend == 'kueue'\n"
        "def c(p):\n    return {FairnessBackend.TASK_GOVERNANCE: 1}\n"
    )
    assert [where for where, _ in _questions(ast.parse(source))] == ["a", "a", "b", "c"]
