"""The chargeback HTML report in headless Chromium: generated months, the page's layout, its screenshot.

Chromium is Debian's ``chromium`` (``make chromium``, part of ``make test``'s setup), driven by Playwright for
Python with the system browser (no browser download). A missing Chromium fails the tests (never skips them).

Two months, both from :func:`chargeback_data.generate_month`:

* the reference month: the 3 teams, 2 instance types and 6 nodes per type of tests/test_chargeback_cli.py;
* a month of N teams with names of realistic length (up to 38 characters), the last of which the configuration
  does not name (billed under its own name by ``chargeback.unknownTeams: bill``, so the report has a note that
  explains its rows).

Regenerate the docs' screenshot of the reference month (docs/images/chargeback-report.png)::

    .venv/bin/python tests/support/chargeback_browser.py docs/images/chargeback-report.png
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chargeback_data import generate_month, generated_cur, month_config

from hyperpod_tenancy.chargeback import model

CLUSTER = "shared-gpu"
MONTH = "2026-07"
GPUS = {"ml.p5.48xlarge": 8, "ml.g5.12xlarge": 4}
RATES = {"ml.p5.48xlarge": "98.32", "ml.g5.12xlarge": "7.09"}
#: The width of the browser window the page is laid out in (a laptop screen).
VIEWPORT = {"width": 1280, "height": 900}

INSTALL = (
    "Chromium is missing: the chargeback report's browser tests need Debian's `chromium` on PATH. Install it "
    "with `make chromium` (as root: `apt-get install -y --no-install-recommends chromium`), or set CHROMIUM to "
    "its executable."
)

_AREAS = ("search", "speech", "vision", "ads", "robotics", "recsys")
_WORK = ("ranking", "foundation-models-pretraining", "eval", "fine-tuning", "inference-research")


def team_names(teams: int) -> list[str]:
    """``teams`` distinct Kubernetes-safe team names, short and long (``search-ranking``,
    ``speech-foundation-models-pretraining``...)."""
    names = [f"{area}-{work}" for work in _WORK for area in _AREAS]
    if teams > len(names):
        names += [f"team-{i:03d}" for i in range(teams - len(names))]
    return names[:teams]


class MissingChromiumError(RuntimeError):
    """Chromium is not installed; the message says how to install it."""


def chromium() -> str:
    """Return the Chromium executable (``$CHROMIUM`` or ``chromium`` on PATH).

    Raises:
        MissingChromiumError: none found; the message says how to install it.

    """
    import os

    found = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not found or not Path(found).exists():
        raise MissingChromiumError(INSTALL)
    return found


def write_month(root: Path, *, teams: int = 3) -> list[str]:
    """Write a month of ``teams`` teams under ``root`` (usage, CUR, job configuration); return the CLI's
    arguments that report it (append ``--format`` and ``--output``).

    The reference month (3 teams) names every team in its configuration; a larger one leaves its last team
    out and bills it under its own name.
    """
    root.mkdir(parents=True, exist_ok=True)
    names = [f"team-{i:03d}" for i in range(teams)] if teams == 3 else team_names(teams)
    nodes = 6 if teams == 3 else teams + 3
    generate_month(
        root,
        month=MONTH,
        cluster=CLUSTER,
        teams=teams,
        instance_types=GPUS,
        nodes_per_type=nodes,
        snapshot_minutes=15 if teams == 3 else 60,
        team_names=names,
    )
    generated_cur(
        root / "cur.parquet",
        month=MONTH,
        cluster=CLUSTER,
        instance_types=RATES,
        nodes_per_type=nodes,
        shared={"fsx": ("AmazonFSx", "USE1-Throughput", "1200.50")},
    )
    configured = names if teams == 3 else names[:-1]
    config = month_config(
        cluster=CLUSTER,
        teams=configured,
        quotas=dict.fromkeys(GPUS, 1),
        gpus=GPUS,
        max_checkpoint_minutes={"training-priority": 60},
        unknown_teams=model.UnknownTeams.BILL,
    )
    (root / "chargeback_config.json").write_text(model.config_to_json(config), encoding="utf-8")
    return [
        "chargeback",
        *("--usage", str(root), "--cur", str(root / "cur.parquet")),
        *("--config", str(root / "chargeback_config.json"), "--month", MONTH),
    ]


def html_report(root: Path, *, teams: int = 3) -> Path:
    """Write the month of ``teams`` teams under ``root`` and its HTML report (``root/report.html``)."""
    from hyperpod_tenancy.cli import main

    args = write_month(root, teams=teams)
    out = root / "report.html"
    status = main([*args, "--format", "html", "--output", str(out)])
    if status != 0:
        raise RuntimeError(f"hyperpod-tenancy chargeback exited {status}")
    return out


@contextmanager
def browser() -> Iterator[Any]:
    """Headless system Chromium driven by Playwright (the ``playwright.sync_api.Browser``)."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            launched.close()


def screenshot(open_browser: Any, page: Path, png: Path) -> Any:
    """Open ``page`` in a new tab of the laptop-sized window, write its full-page screenshot to ``png`` and
    return the tab (a ``playwright.sync_api.Page``; the caller closes it)."""
    tab = open_browser.new_page(viewport=VIEWPORT)
    tab.goto(page.resolve().as_uri())
    tab.screenshot(path=str(png), full_page=True)
    return tab


#: Collects the layout the tests check (run in the page): every box of visible text, and the boxes of the
#: team-name cells, the number cells, the charts' bars and the money chart's axis ticks.
LAYOUT_JS = """() => {
  const hidden = new Set(['TITLE', 'STYLE', 'SCRIPT', 'HEAD']);
  const box = (r) => ({x: r.left, y: r.top, w: r.width, h: r.height});
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.textContent.trim();
    const parent = node.parentElement;
    if (!text || parent.closest('title, desc, style, script')) continue;
    if (hidden.has(parent.tagName.toUpperCase())) continue;
    let rects;
    if (parent instanceof SVGElement) {
      rects = [parent.getBoundingClientRect()];
    } else {
      const range = document.createRange();
      range.selectNodeContents(node);
      rects = Array.from(range.getClientRects()).filter((r) => r.width > 0 || r.height > 0);
    }
    texts.push({text, tag: parent.tagName.toLowerCase(), boxes: rects.map(box)});
  }
  const lineHeight = (el) => {
    const style = getComputedStyle(el);
    return parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.2;
  };
  const teams = Array.from(document.querySelectorAll('td.team')).map((td) => {
    const range = document.createRange();
    range.selectNodeContents(td.firstChild);
    const lines = new Set(Array.from(range.getClientRects()).map((r) => Math.round(r.top)));
    // the height of everything in the cell (the name and its note marks), not of the cell: a row is as tall
    // as its tallest cell
    const whole = document.createRange();
    whole.selectNodeContents(td);
    const rects = Array.from(whole.getClientRects());
    const content = Math.max(...rects.map((r) => r.bottom)) - Math.min(...rects.map((r) => r.top));
    return {text: td.textContent, lines: lines.size, content, line: lineHeight(td)};
  });
  const numbers = Array.from(document.querySelectorAll('td.n, th.n')).map((cell) => {
    const style = getComputedStyle(cell);
    const range = document.createRange();
    range.selectNodeContents(cell);
    const rects = Array.from(range.getClientRects());
    const right = rects.length ? Math.max(...rects.map((r) => r.right)) : null;
    const inner = cell.getBoundingClientRect().right - parseFloat(style.paddingRight)
      - parseFloat(style.borderRightWidth);
    return {text: cell.textContent, align: style.textAlign, right, inner};
  });
  const bars = Array.from(document.querySelectorAll('svg.chart g.bar')).map((g) => ({
    bar: box(g.querySelector('rect').getBoundingClientRect()),
    labels: Array.from(g.querySelectorAll('text')).map((t) => t.textContent),
  }));
  const labels = document.querySelectorAll('svg.chart text.value').length;
  const money = Array.from(document.querySelectorAll('svg.money g.amount')).map((g) => {
    const rect = g.querySelector('rect');
    return {kind: g.classList.contains('subtotal') ? 'subtotal' : 'team', name: g.dataset.name,
            center: g.dataset.costCenter, label: g.querySelector('text.amount').textContent,
            bar: rect ? box(rect.getBoundingClientRect()) : null};
  });
  const ticks = Array.from(document.querySelectorAll('svg.money text.tick')).map(
    (t) => ({text: t.textContent, box: box(t.getBoundingClientRect())}));
  const ids = Array.from(document.querySelectorAll('[id]')).map((el) => el.id);
  const links = Array.from(document.querySelectorAll('a[href^="#"]')).map((a) => a.getAttribute('href'));
  return {texts, teams, numbers, bars, labels, money, ticks, ids, links,
          scrollWidth: document.documentElement.scrollWidth, viewport: window.innerWidth};
}"""


def layout(tab: Any) -> dict[str, Any]:
    """The page's layout as :data:`LAYOUT_JS` collects it."""
    result: dict[str, Any] = tab.evaluate(LAYOUT_JS)
    return result


def overlaps(texts: list[dict[str, Any]], tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of texts whose boxes overlap by more than ``tolerance`` px both ways (a sweep over the boxes
    sorted by their top edge)."""
    boxes = sorted(
        ((b["y"], b["y"] + b["h"], b["x"], b["x"] + b["w"], t["text"]) for t in texts for b in t["boxes"]),
    )
    found: list[tuple[str, str]] = []
    for i, (top, bottom, left, right, text) in enumerate(boxes):
        for top2, bottom2, left2, right2, text2 in boxes[i + 1 :]:
            if top2 >= bottom - tolerance:
                break
            if (
                min(bottom, bottom2) - max(top, top2) > tolerance
                and min(right, right2) - max(left, left2) > tolerance
            ):
                found.append((text, text2))
    return found


def main(argv: list[str]) -> int:
    """Write the screenshot of the reference month's HTML report to ``argv[0]``."""
    import tempfile

    if len(argv) != 1:
        print("usage: chargeback_browser.py OUTPUT.png", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as work, browser() as opened:
        page = html_report(Path(work))
        opened_tab = screenshot(opened, page, Path(argv[0]))
        opened_tab.close()
    print(f"wrote {argv[0]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
