"""The documentation: the site builds without a warning, every link resolves, every offline example runs.

The pages of ``docs/`` are a Sphinx site (MyST Markdown, ``docs/conf.py``). Built here as ``make docs`` builds
it, with warnings as errors and ``-n``: a page outside the toctree, a missing image, and a link to a page or to
a heading (``myst_heading_anchors``) that does not exist all fail. The README is the repository's front page
and not part of the site, so its relative links are checked here. Every ``sh``/``bash``/``shell`` block of the
pages runs with ``bash -e`` and every ``python`` block is executed, in a scratch directory holding the
repository's files, unless the line before its fence marks what it needs (``<!-- needs: aws -->``, the marks
of :data:`NEEDS`; ``docs/contributing.md`` documents them).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
#: What a block may be marked as needing; such a block is shown, not run.
NEEDS = {"aws", "cluster", "docker", "network", "setup", "context"}
#: The languages whose blocks run.
SHELLS = {"sh", "bash", "shell"}
README_MAX_LINES = 250

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
_MARK = re.compile(r"^\s*<!--\s*needs:\s*(?P<what>[^>]*?)\s*-->\s*$")
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s]+)\)")


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, its first line (1-based), its text and its mark."""

    page: Path
    line: int
    lang: str
    text: str
    needs: str | None

    @property
    def id(self) -> str:
        return f"{self.page.name}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` at any depth (list items included), fences inside fences skipped."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = _MARK.match(previous)
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                break
            body.append(lines[j])
            j += 1
        text = textwrap.dedent("\n".join(b[len(indent) :] if b.startswith(indent) else b for b in body))
        found.append(
            Block(page, i + 1, info.split()[0] if info else "", text, mark["what"] if mark else None)
        )
        i = j + 1
    return found


def _outside_fences(text: str) -> str:
    """``text`` without its fenced blocks (links and headings in code are not links and headings)."""
    out, fence = [], ""
    for line in text.split("\n"):
        m = _FENCE.match(line)
        if fence:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= len(fence):
                fence = ""
            continue
        if m is not None:
            fence = m["fence"]
            continue
        out.append(line)
    return "\n".join(out)


def slug(heading: str) -> str:
    """A heading's anchor as GitHub and MyST (``myst_heading_anchors``) write it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of every heading of ``page``."""
    text = _outside_fences(page.read_text(encoding="utf-8"))
    return {slug(m[1]) for m in re.finditer(r"^#{1,6} +(.+?)\s*#*$", text, flags=re.M)}


RUNNABLE = [
    b for page in PAGES for b in blocks(page) if b.needs is None and (b.lang in SHELLS or b.lang == "python")
]


# ------------------------------------------------------------------------------------------- the site
def test_the_site_builds_without_a_warning(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            *(sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html"),
            *("-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0 and "WARNING" not in result.stderr, result.stderr[-6000:]
    assert (tmp_path / "html" / "index.html").is_file()


# ------------------------------------------------------------------------------------------- the README
def test_the_readme_is_the_front_door() -> None:
    text = README.read_text(encoding="utf-8")
    assert text.count("\n") <= README_MAX_LINES, (
        f"README.md has {text.count(chr(10))} lines; move text to docs/"
    )
    linked = {(README.parent / m["target"].split("#")[0]).resolve() for m in _LINK.finditer(text)}
    missing = [p.name for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md links to no {missing}"


def test_every_relative_link_of_the_readme_resolves() -> None:
    text = _outside_fences(README.read_text(encoding="utf-8"))
    broken = []
    for m in [*_LINK.finditer(text), *_IMAGE.finditer(text)]:
        target = m["target"]
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (README.parent / path).resolve() if path else README
        outside = not file.exists() or not file.is_relative_to(REPO)
        if outside or (anchor and (file.suffix != ".md" or anchor not in anchors(file))):
            broken.append(target)
    assert not broken, f"README.md: broken links {broken}"


def test_the_slug_matches_the_site_anchors() -> None:
    assert slug("Scale: many teams on one cluster") == "scale-many-teams-on-one-cluster"
    assert slug("Synthesis, images and extras") == "synthesis-images-and-extras"
    assert "what-a-teammate-can-and-cannot-do-to-a-teammate" in anchors(DOCS / "security-model.md")


# ------------------------------------------------------------------------------------------- user-facing text
@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_no_issue_number_or_path_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = [
        m[0]
        for pattern in (r"(?<![\w&/#])#\d+\b", r"\b[Ii]ssues? #?\d+\b", r"\.\./shared\b", r"(?<![\w.])/work/")
        for m in re.finditer(pattern, text)
    ]
    assert not found, f"{page.name}: {found} (name what a reader can open: the upstream URL or the title)"


# ------------------------------------------------------------------------------------------- the examples
def test_every_mark_is_known() -> None:
    unknown = [
        f"{b.id} needs {b.needs!r}" for page in PAGES for b in blocks(page) if b.needs not in (None, *NEEDS)
    ]
    assert not unknown, f"unknown marks (known: {sorted(NEEDS)}): {unknown}"


def test_the_offline_commands_of_the_docs_are_run() -> None:
    """The commands the docs promise run offline are among the blocks this module runs."""
    shown = "\n".join(b.text for b in RUNNABLE if b.lang in SHELLS)
    for command in (
        "hyperpod-tenancy validate platform.yaml",
        "hyperpod-tenancy plan",
        "hyperpod-tenancy guardrails",
        "hyperpod-tenancy explain job-batch-eval-0000d --from-file tests/support/explain_cases/",
        "hyperpod-tenancy onboarding research",
    ):
        assert command in shown, command


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the repository's files (links to them): what an example writes stays here."""
    root = tmp_path_factory.mktemp("docs-examples")
    for entry in REPO.iterdir():
        if entry.name not in {".git", "cdk.out"}:
            (root / entry.name).symlink_to(entry)
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.id)
def test_the_example_runs(block: Block, scratch: Path) -> None:
    if block.lang == "python":
        command = [str(REPO / ".venv" / "bin" / "python"), "-c", block.text]
    else:
        command = ["bash", "-e", "-o", "pipefail", "-c", block.text]
    result = subprocess.run(
        command, cwd=scratch, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, (
        f"{block.id} ({block.lang}) exited {result.returncode}; mark it `<!-- needs: ... -->` if it cannot run "
        f"offline\n--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
    )


# ------------------------------------------------------------------------------------------- generated pages
def test_the_troubleshooting_page_lists_every_denial_message() -> None:
    from hyperpod_tenancy.policy import load_platform
    from hyperpod_tenancy.tools.explain.denials_doc import END_MARKER, START_MARKER, denials_markdown

    text = (DOCS / "troubleshooting.md").read_text(encoding="utf-8")
    assert text.count(START_MARKER) == 1 and text.count(END_MARKER) == 1
    shown = text.split(START_MARKER + "\n", 1)[1].split(END_MARKER, 1)[0]
    assert shown == denials_markdown(load_platform(REPO / "platform.yaml")), (
        "docs/troubleshooting.md's denial messages are stale: run "
        "`python -m hyperpod_tenancy.tools.explain.denials_doc --write docs/troubleshooting.md`"
    )
