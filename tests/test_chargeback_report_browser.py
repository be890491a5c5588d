"""The chargeback HTML report as finance reads it: laid out in headless Chromium (the reference month and a
30-team month), and the formatting rules of the HTML and Markdown renderings on a hand-built report.

Chromium is Debian's ``chromium`` (``make chromium``); a missing one fails the browser tests with how to
install it. One browser serves the module; each month is generated, reported and laid out once.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import itertools
import json
import re
import struct
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
from chargeback_browser import (
    VIEWPORT,
    MissingChromiumError,
    browser,
    chromium,
    layout,
    overlaps,
    screenshot,
    team_names,
    write_month,
)

from hyperpod_tenancy.chargeback import model, report
from hyperpod_tenancy.cli import main

SERIES = (
    "guaranteedGpuHours",
    "borrowedGpuHours",
    "lentGpuHours",
    "idleGpuHours",
    "lostToPreemptionGpuHours",
)
SVG = "{http://www.w3.org/2000/svg}"

# --- in the browser ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def opened() -> Iterator[Any]:
    """One headless Chromium for the module (a missing Chromium fails, with how to install it)."""
    missing = None
    try:
        chromium()
    except MissingChromiumError as error:
        missing = str(error)
    if missing is not None:
        pytest.fail(missing, pytrace=False)
    with browser() as launched:
        yield launched


@dataclass(frozen=True)
class Laid:
    """A month's report laid out in the browser."""

    teams: int
    png: Path
    layout: dict[str, Any]
    #: The same month's JSON report (what the page must show).
    document: dict[str, Any]


@pytest.fixture(scope="module", params=[3, 30], ids=["reference-month", "30-teams"])
def laid(request: pytest.FixtureRequest, opened: Any, tmp_path_factory: pytest.TempPathFactory) -> Laid:
    teams: int = request.param
    root = tmp_path_factory.mktemp(f"month-{teams}")
    args = write_month(root, teams=teams)
    page, out = root / "report.html", root / "report.json"
    assert main([*args, "--format", "html", "--output", str(page)]) == 0
    assert main([*args, "--format", "json", "--output", str(out)]) == 0
    png = root / "report.png"
    tab = screenshot(opened, page, png)
    try:
        laid_out = layout(tab)
    finally:
        tab.close()
    return Laid(teams, png, laid_out, json.loads(out.read_text(encoding="utf-8")))


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_page_has_a_full_page_screenshot(laid: Laid) -> None:
    width, height = _png_size(laid.png)
    # the window's width (nothing wider than a laptop screen), and as tall as the page: a summary, a table
    # of teams, a chart and a table per instance type
    assert width == VIEWPORT["width"]
    rows = laid.teams + 2  # the teams, the idle row and the shared costs' row
    assert 1200 + 60 * rows < height < 4000 + 250 * rows
    assert laid.png.stat().st_size > 50_000


def test_the_page_is_no_wider_than_the_window(laid: Laid) -> None:
    assert laid.layout["scrollWidth"] <= laid.layout["viewport"] == VIEWPORT["width"]


def test_every_text_has_a_box_and_no_two_texts_overlap(laid: Laid) -> None:
    texts = laid.layout["texts"]
    unboxed = [t["text"] for t in texts if not any(b["w"] > 0 and b["h"] > 0 for b in t["boxes"])]
    assert unboxed == []
    # every team is on the page: the per-team table, the table and the chart of each instance type
    names = [t["text"] for t in texts]
    expected = [f"team-{i:03d}" for i in range(3)] if laid.teams == 3 else team_names(30)
    assert all(names.count(team) >= 5 for team in expected), "every team in 2 charts and 3 tables"
    assert overlaps(texts) == []


def test_team_names_do_not_wrap(laid: Laid) -> None:
    cells = laid.layout["teams"]
    # per-team table, two instance types' tables, the (all) row and the preemption loss table
    assert len(cells) >= 3 * laid.teams
    wrapped = [c["text"] for c in cells if c["lines"] != 1 or c["content"] > 1.5 * c["line"]]
    assert wrapped == []


def test_numbers_are_right_aligned(laid: Laid) -> None:
    numbers = laid.layout["numbers"]
    assert len(numbers) >= 11 * 2 * laid.teams
    assert {n["align"] for n in numbers} == {"right"}
    # the text ends at the cell's right edge (its padding aside)
    ragged = [n["text"] for n in numbers if n["right"] is not None and abs(n["inner"] - n["right"]) > 1]
    assert ragged == []
    assert any(re.fullmatch(r"\d{1,3}(,\d{3})+\.\d{2}", n["text"]) for n in numbers), "money with separators"


def test_the_chart_labels_only_bars_that_are_drawn(laid: Laid) -> None:
    bars = laid.layout["bars"]
    assert all(b["bar"]["w"] > 0 and b["bar"]["h"] > 0 for b in bars)
    assert all(len(b["labels"]) == 1 for b in bars)
    assert laid.layout["labels"] == len(bars)  # no value label outside a bar's group
    # one bar per value of a charted series that is not zero at one decimal
    drawn = [
        Decimal(row[field]).quantize(Decimal("0.1"), rounding=ROUND_HALF_EVEN)
        for row in laid.document["rows"]
        for field in SERIES
    ]
    assert len(bars) == sum(1 for value in drawn if value > 0)
    assert sorted(b["labels"][0] for b in bars) == sorted(f"{v:,}" for v in drawn if v > 0)


def test_the_money_chart_shows_what_each_team_is_billed_on_the_drawn_scale(laid: Laid) -> None:
    money = laid.layout["money"]
    # each team's (and the idle and shared rows') amount, as the JSON report's rows add up to it
    billed: dict[tuple[str, str], Decimal] = {}
    for row in laid.document["rows"]:
        key = (row["team"], row["costCenter"])
        billed[key] = billed.get(key, Decimal(0)) + Decimal(str(row["total"]))
    teams = {(m["name"], m["center"]): m for m in money if m["kind"] == "team"}
    assert {key: m["label"] for key, m in teams.items()} == {key: f"${v:,.2f}" for key, v in billed.items()}
    # the platform's cost center holds the idle and the shared rows: its subtotal is drawn too
    subtotals = {m["center"]: m["label"] for m in money if m["kind"] == "subtotal"}
    assert subtotals == {
        "platform": f"${billed[('(idle)', 'platform')] + billed[('(shared)', 'platform')]:,.2f}"
    }
    # as drawn: the axis' ticks evenly spaced, and every bar's right edge where its amount is on that scale
    ticks = [
        (t["box"]["x"] + t["box"]["w"] / 2, Decimal(t["text"][1:].replace(",", "")))
        for t in laid.layout["ticks"]
    ]
    assert len(ticks) >= 3 and ticks[0][1] == 0
    (x0, v0), (x1, v1) = ticks[0], ticks[-1]
    per_dollar = (x1 - x0) / float(v1 - v0)
    for m in money:
        amount = float(Decimal(m["label"][1:].replace(",", "")))
        assert m["bar"]["x"] == pytest.approx(x0, abs=1), m
        assert m["bar"]["x"] + m["bar"]["w"] == pytest.approx(x0 + amount * per_dollar, abs=1.5), m


def test_every_link_on_the_page_leads_to_an_element(laid: Laid) -> None:
    ids = laid.layout["ids"]
    assert len(ids) == len(set(ids)), "ids are unique"
    assert {href.removeprefix("#") for href in laid.layout["links"]} <= set(ids)
    if laid.teams == 30:
        # the month bills its last team, which the configuration does not name: a note explains its rows
        assert "#note-1" in laid.layout["links"]
        assert any(href.startswith("#row-") for href in laid.layout["links"])


# --- formatting rules on a hand-built report --------------------------------------------------------------


def _row(team: str, itype: str, **values: str) -> model.TeamCharge:
    fields = {
        name: Decimal(values.get(name, "0"))
        for name in (
            "guaranteed_gpu_hours",
            "used_gpu_hours",
            "borrowed_gpu_hours",
            "lent_gpu_hours",
            "idle_gpu_hours",
            "lost_to_preemption_gpu_hours",
            "gpu_charge",
            "lender_credit",
            "shared_charge",
            "direct_charge",
            "total",
        )
    }
    return model.TeamCharge(cluster="c", team=team, cost_center=f"cc-{team}", instance_type=itype, **fields)


BIG = model.Report(
    schema_version=model.SCHEMA_VERSION,
    month="2026-07",
    cluster="c",
    rule=model.BillingRule.RESERVATION,
    idle_owner="platform",
    shared_costs=model.SharedCostRule.IDLE_OWNER,
    price_sources={"ml.p5.48xlarge": model.PriceSource.CUR},
    gpu_hour_prices={"ml.p5.48xlarge": Decimal("12.29")},
    rows=(
        _row(
            "vision-foundation-models",
            "ml.p5.48xlarge",
            guaranteed_gpu_hours="100452.04",
            used_gpu_hours="17856.05",
            lent_gpu_hours="0.04",
            lost_to_preemption_gpu_hours="28.25",
            gpu_charge="1234567.891",
            lender_credit="-0.001",
            total="1234567.891",
        ),
        _row("speech", "ml.p5.48xlarge", guaranteed_gpu_hours="5952", total="73150.08"),
    ),
    reconciliation=model.Reconciliation(
        charged=Decimal("1307717.97"), bill=Decimal("1307717.97"), difference=Decimal(0), flagged=False
    ),
    preemption_loss_is_upper_bound=False,
    notes=(
        "team 'speech' has usage, evictions or tagged bill lines but is not in the policy: billed without a "
        "guarantee, under its own name as cost center; allowed by `chargeback.unknownTeams: bill`.",
        "ml.p5.48xlarge: the node inventory prices to 10.00, the CUR bills 12.00; compare them.",
        "speech is a word here, not a quoted team name.",
    ),
)


def _page(rep: model.Report = BIG) -> ET.Element:
    page = report.render(rep, "html").decode()
    return ET.fromstring(
        page.removeprefix("<!DOCTYPE html>\n").replace('<meta charset="utf-8">', '<meta charset="utf-8"/>')
    )


def _text(element: ET.Element) -> str:
    return "".join(element.itertext())


def _cells(root: ET.Element, team: str) -> list[str]:
    (row,) = (tr for tr in root.iter("tr") if tr.get("id", "").startswith("row-") and team in _text(tr))
    return [_text(td) for td in row.iter("td")]


def test_html_prints_gpu_hours_to_one_decimal_and_money_with_separators() -> None:
    cells = _cells(_page(), "vision-foundation-models")
    # guaranteed, used, borrowed, lent, idle, lost | GPU charge, lender credit, shared, direct, total
    assert cells[2:] == [
        "100,452.0",
        "17,856.0",  # half to even: 17,856.05 → 17,856.0
        "0.0",
        "0.0",
        "0.0",
        "28.2",
        "1,234,567.89",
        "0.00",  # -0.001 rounds to zero, unsigned
        "0.00",
        "0.00",
        "1,234,567.89",
    ]
    root = _page()
    numbers = [td for td in root.iter("td") if "n" in (td.get("class") or "").split()]
    # money and GPU-hours, a team's use of its guarantee (a percentage, "-" without a guarantee)
    assert numbers and all(
        re.fullmatch(r"-?\d{1,3}(,\d{3})*\.\d{1,2}|none|\d{1,3}(,\d{3})*\.\d %|-|", _text(td))
        for td in numbers
    )
    # the first cell of every row is a team's name, which does not wrap
    firsts = [tr.find("td") for tr in root.iter("tr") if tr.get("id")]
    assert firsts and all(td is not None and td.get("class") == "team" for td in firsts)


def test_markdown_follows_the_same_rules_and_csv_and_json_stay_machine_readable() -> None:
    text = report.render(BIG, "markdown").decode()
    line = next(x for x in text.splitlines() if x.startswith("| ml.p5.48xlarge | vision-foundation-models"))
    assert line.endswith(
        "| 100,452.0 | 17,856.0 | 0.0 | 0.0 | 0.0 | 28.2 | 1,234,567.89 | 0.00 | 0.00 | 0.00 | 1,234,567.89 |"
    )
    assert "| **all rows** |  |  | **1,307,717.97** |" in text
    assert "charged $1,307,717.97 against a bill of $1,307,717.97" in text
    assert "| speech [note 1] | cc-speech |" in text and "\n1. team 'speech' has usage" in text
    rows = {r["team"]: r for r in csv.DictReader(io.StringIO(report.render(BIG, "csv").decode()))}
    big = rows["vision-foundation-models"]
    assert (big["total"], big["used_gpu_hours"], big["lent_gpu_hours"]) == (
        "1234567.89",
        "17856.050",
        "0.040",
    )
    doc = json.loads(report.render(BIG, "json"), parse_float=Decimal)
    assert doc["reconciliation"]["charged"] == Decimal("1307717.97")


def test_the_summary_box_states_the_billing_rule_and_the_reconciliation() -> None:
    root = _page()
    (box,) = (s for s in root.iter("section") if s.get("class") == "summary")
    text = _text(box)
    assert (
        "Billing rule" in text
        and "reservation: each team pays its guaranteed quota whether it used it" in text
    )
    assert (
        "charged $1,307,717.97 against a bill of $1,307,717.97; difference $0.00 (0.00 %), within tolerance"
        in text
    )
    figures = {
        _text(tr.find("td")): _text(tr.findall("td")[1]) for tr in box.iter("tr") if tr.find("td") is not None
    }
    assert figures == {
        "charged to the rows below": "1,307,717.97",
        "bill (CUR)": "1,307,717.97",
        "difference": "0.00",
    }
    usage = dataclasses.replace(
        BIG,
        rule=model.BillingRule.USAGE,
        reconciliation=model.Reconciliation(charged=Decimal(5), bill=None, difference=None, flagged=False),
    )
    text = _text(next(s for s in _page(usage).iter("section") if s.get("class") == "summary"))
    assert "usage: each team pays the GPU-hours it ran" in text and "no bill (no CUR): not reconciled" in text


def test_the_legend_says_what_each_series_means() -> None:
    (legend,) = (s for s in _page().iter("section") if s.get("class") == "legend")
    meaning = {
        _text(dt_).strip(): _text(dd) for dt_, dd in zip(legend.iter("dt"), legend.iter("dd"), strict=True)
    }
    assert list(meaning) == ["guaranteed", "borrowed", "lent", "idle", "lost"]
    assert "quota over the month" in meaning["guaranteed"]
    assert "beyond its quota" in meaning["borrowed"]
    assert "other teams borrowed" in meaning["lent"]
    assert "nobody borrowed, which the team pays under the reservation rule" in meaning["idle"]
    assert "paid by platform" in meaning["idle"]
    assert "evictions threw away" in meaning["lost"]


def test_the_chart_has_no_bar_and_no_label_for_a_zero_value() -> None:
    (svg,) = (s for s in _page().iter(f"{SVG}svg") if s.get("class") == "chart")
    titles = [_text(t) for g in svg.iter(f"{SVG}g") if g.get("class") == "bar" for t in g.iter(f"{SVG}title")]
    # 0.04 lent GPU-hours are 0.0 at one decimal: no bar; speech has its guarantee only
    assert sorted(titles) == [
        "speech guaranteed: 5,952.0 GPU-hours",
        "vision-foundation-models guaranteed: 100,452.0 GPU-hours",
        "vision-foundation-models lost: 28.2 GPU-hours",
    ]
    values = [_text(t) for t in svg.iter(f"{SVG}text") if t.get("class") == "value"]
    assert sorted(values) == ["100,452.0", "28.2", "5,952.0"]


#: Two teams of one cost center, a team alone in its own, the idle owner's row and the shared costs' row on
#: the same cost center, and a team whose credits exceed its charges (a negative total).
MONEY = dataclasses.replace(
    BIG,
    rows=(
        dataclasses.replace(_row("vision", "ml.p5.48xlarge", total="61234.5"), cost_center="research"),
        dataclasses.replace(_row("speech", "ml.p5.48xlarge", total="18000.25"), cost_center="research"),
        dataclasses.replace(_row("speech", "ml.g5.12xlarge", total="765.43"), cost_center="research"),
        dataclasses.replace(_row("ads", "ml.p5.48xlarge", total="-1500"), cost_center="marketing"),
        dataclasses.replace(_row(model.IDLE_ROW, "ml.p5.48xlarge", total="9876.54"), cost_center="platform"),
        dataclasses.replace(
            _row(model.SHARED_COSTS_ROW, "ml.p5.48xlarge", total="1200.5"), cost_center="platform"
        ),
    ),
)


def _money_chart(root: ET.Element) -> ET.Element:
    (svg,) = (s for s in root.iter(f"{SVG}svg") if "money" in (s.get("class") or "").split())
    return svg


def _dollars(text: str) -> Decimal:
    """``$1,234.56`` or ``-$1,500.00`` as a number (the chart writes money with its currency sign)."""
    assert re.fullmatch(r"-?\$\d{1,3}(,\d{3})*(\.\d+)?", text), text
    return Decimal(text.replace("$", "").replace(",", ""))


def _amounts(svg: ET.Element, kind: str) -> dict[tuple[str, str], tuple[str, ET.Element]]:
    """(name, cost center) → (the drawn label, the group) of each bar group of ``kind`` (team or subtotal)."""
    found = {}
    for g in svg.iter(f"{SVG}g"):
        if (g.get("class") or "").split() == ["amount", kind]:
            key = (g.get("data-name", ""), g.get("data-cost-center", ""))
            assert key not in found, key
            (label,) = (t for t in g.iter(f"{SVG}text") if t.get("class") == "amount")
            found[key] = (_text(label), g)
    return found


def _table(root: ET.Element, heading: str) -> list[list[str]]:
    children = list(root.iter())
    start = next(i for i, el in enumerate(children) if el.tag == "h2" and _text(el) == heading)
    table = next(el for el in children[start:] if el.tag == "table")
    return [[_text(td) for td in tr.iter("td")] for tr in table.iter("tr") if tr.find("td") is not None]


def test_the_money_chart_shows_each_teams_billed_amount_as_the_tables_do() -> None:
    root = _page(MONEY)
    svg = _money_chart(root)
    teams = _amounts(svg, "team")
    # every row of the per-team table (its footer aside) is a bar labelled with the table's figure, in USD
    *per_team, _ = _table(root, "Per team")
    assert {(team, center): _usd(total) for team, center, _, total in per_team} == {
        key: _dollars(label) for key, (label, _) in teams.items()
    }
    assert teams[("speech", "research")][0] == "$18,765.68"
    assert teams[("ads", "marketing")][0] == "-$1,500.00"
    # a cost center of two or more rows has a subtotal bar, equal to the per-cost-center table's figure;
    # a center of one row is its team's bar
    *per_center, _ = _table(root, "Per cost center")
    centers = {center: _usd(total) for center, total in per_center}
    subtotals = _amounts(svg, "subtotal")
    assert {center: _dollars(label) for (_, center), (label, _) in subtotals.items()} == {
        "platform": centers["platform"],
        "research": centers["research"],
    }
    assert centers["platform"] == Decimal("11077.04")
    # the bars are grouped by cost center: each center's rows are drawn together, its subtotal under them
    order = [
        (g.get("data-cost-center"), (g.get("class") or "").split()[1])
        for g in svg.iter(f"{SVG}g")
        if "amount" in (g.get("class") or "").split()
    ]
    assert [center for center, _ in order] == sorted(center for center, _ in order)
    assert [kind for center, kind in order if center == "research"] == ["team", "team", "subtotal"]


def _x(element: ET.Element, name: str) -> float:
    return float(element.get(name, "nan"))


def test_the_money_chart_draws_amounts_on_an_axis_in_usd() -> None:
    svg = _money_chart(_page(MONEY))
    # an accessible picture: a title and a description the image is labelled by
    assert svg.get("role") == "img"
    title, desc = svg.find(f"{SVG}title"), svg.find(f"{SVG}desc")
    assert title is not None and desc is not None
    assert svg.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    assert "USD" in _text(title) and "cost center" in _text(title)
    assert "$89,577.22" in _text(desc), "the description states the total charged"
    # the axis: ticks labelled in dollars, evenly spaced, and its title names the currency
    (axis,) = (g for g in svg.iter(f"{SVG}g") if g.get("class") == "axis")
    ticks = [(_x(t, "x"), _dollars(_text(t))) for t in axis.iter(f"{SVG}text") if t.get("class") == "tick"]
    assert len(ticks) >= 3 and ticks[0][1] < 0 < ticks[-1][1], (
        "the axis spans the negative total and the largest"
    )
    assert any(value == 0 for _, value in ticks)
    steps = {b[1] - a[1] for a, b in itertools.pairwise(ticks)}
    pitches = [b[0] - a[0] for a, b in itertools.pairwise(ticks)]
    assert len(steps) == 1 and max(pitches) - min(pitches) < 0.2
    assert any("USD" in _text(t) for t in axis.iter(f"{SVG}text") if t.get("class") == "axis-title")
    # each bar runs from the axis' zero to its amount, on the axis' scale
    (x0, v0), (x1, v1) = ticks[0], ticks[-1]
    per_dollar = (x1 - x0) / float(v1 - v0)
    zero = x0 - float(v0) * per_dollar
    for kind in ("team", "subtotal"):
        for key, (label, g) in _amounts(svg, kind).items():
            amount = float(_dollars(label))
            rect = g.find(f"{SVG}rect")
            assert rect is not None, key
            left, right = _x(rect, "x"), _x(rect, "x") + _x(rect, "width")
            assert (left, right) == pytest.approx(sorted((zero, zero + amount * per_dollar)), abs=0.6), key
    # the legend inside the picture names both kinds of bar in the colours drawn
    legend = {
        _text(g.find(f"{SVG}text")): g.find(f"{SVG}rect").get("fill")  # type: ignore[union-attr]
        for g in svg.iter(f"{SVG}g")
        if g.get("class") == "key"
    }
    fills = {
        kind: {g.find(f"{SVG}rect").get("fill") for _, (_, g) in _amounts(svg, kind).items()}  # type: ignore[union-attr]
        for kind in ("team", "subtotal")
    }
    assert legend == {
        "billed to the team (USD)": fills["team"].pop(),
        "cost center subtotal (USD)": fills["subtotal"].pop(),
    }
    assert fills == {"team": set(), "subtotal": set()}


def test_notes_link_to_the_rows_they_explain_and_back() -> None:
    root = _page()
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    links = [a.get("href", "") for a in root.iter("a")]
    assert links and all(href.startswith("#") and href[1:] in ids for href in links)
    notes = {li.get("id"): li for li in root.iter("li") if (li.get("id") or "").startswith("note-")}
    assert list(notes) == ["note-1", "note-2", "note-3"]
    # the note that names 'speech' links to its row, and the row to the note
    (back,) = (a.get("href", "")[1:] for a in notes["note-1"].iter("a"))
    row = next(el for el in root.iter("tr") if el.get("id") == back)
    assert _text(row).startswith("speech") and row.find(".//a[@href='#note-1']") is not None
    # the note about an instance type links to its section, whose heading links to the note
    (section,) = (a.get("href", "")[1:] for a in notes["note-2"].iter("a"))
    heading = next(el for el in root.iter("h2") if el.get("id") == section)
    assert _text(heading).startswith("ml.p5.48xlarge") and heading.find(".//a[@href='#note-2']") is not None
    # a team's name as a plain word is no reference to it
    assert list(notes["note-3"].iter("a")) == []
    assert not any(a.get("href") == "#note-3" for a in root.iter("a"))


def test_a_missing_chromium_fails_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHROMIUM", "/nonexistent/chromium")
    with pytest.raises(
        MissingChromiumError, match=r"make chromium.*apt-get install -y --no-install-recommends chromium"
    ):
        chromium()
    monkeypatch.delenv("CHROMIUM")
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MissingChromiumError):
        chromium()


def test_the_month_generator_names_30_distinct_kubernetes_teams() -> None:
    names = team_names(30)
    assert len(set(names)) == 30
    assert all(re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", n) and len(n) <= 50 for n in names)
    assert max(len(n) for n in names) >= 30, "long names test the no-wrap rule"


def test_the_worked_example_of_the_docs_is_the_commands_output(tmp_path: Path) -> None:
    """docs/chargeback.md shows the reference month's Markdown report up to its per-instance-type table."""
    args = write_month(tmp_path)
    out = tmp_path / "report.md"
    assert main([*args, "--format", "markdown", "--output", str(out)]) == 0
    rendered = out.read_text(encoding="utf-8")
    excerpt = rendered[: rendered.index("## Per team and instance type")].rstrip("\n")
    page = (Path(__file__).resolve().parents[1] / "docs" / "chargeback.md").read_text(encoding="utf-8")
    example = page[page.index("## Worked example") :]
    block = example[example.index("```text\n") + len("```text\n") :]
    block = block[: block.index("\n```")]
    command, _, shown = block.partition("\n")
    assert command.startswith("$ hyperpod-tenancy chargeback ")
    assert shown == excerpt


#: Reads, in the page, the per-cost-center table and the per-team table's use of guarantee (as drawn).
_TOTALS_JS = """() => {
  const table = document.querySelector('#cost-centers + table');
  const cells = (row) => Array.from(row.querySelectorAll('td')).map((c) => c.textContent);
  const teams = document.querySelector('h2 + table');
  const header = Array.from(teams.querySelectorAll('thead th')).map((c) => c.textContent);
  return {
    centers: Array.from(table.querySelectorAll('tbody tr')).map(cells),
    total: cells(table.querySelector('tfoot tr')),
    header,
    teams: Array.from(teams.querySelectorAll('tbody tr')).map(cells),
  };
}"""


def _usd(text: str) -> Decimal:
    return Decimal(text.replace(",", ""))


def test_the_cost_center_subtotals_add_up_to_the_total_and_each_team_shows_its_use(
    opened: Any, tmp_path: Path
) -> None:
    args = write_month(tmp_path)
    page, out = tmp_path / "report.html", tmp_path / "report.json"
    assert main([*args, "--format", "html", "--output", str(page)]) == 0
    assert main([*args, "--format", "json", "--output", str(out)]) == 0
    document = json.loads(out.read_text(encoding="utf-8"), parse_float=Decimal)
    tab = screenshot(opened, page, tmp_path / "report.png")
    try:
        drawn = tab.evaluate(_TOTALS_JS)
        laid_out = layout(tab)
    finally:
        tab.close()
    # one subtotal per cost center of the rows, and they add up to the total the rows charge
    expected: dict[str, Decimal] = {}
    for row in document["rows"]:
        expected[row["costCenter"]] = expected.get(row["costCenter"], Decimal(0)) + Decimal(str(row["total"]))
    assert {center: _usd(total) for center, total in drawn["centers"]} == expected
    assert drawn["total"][0] == "all"
    assert (
        _usd(drawn["total"][1])
        == sum(expected.values())
        == Decimal(str(document["reconciliation"]["charged"]))
    )
    # each team's use of its guarantee: its used GPU-hours over its guaranteed ones, as the JSON rows say
    assert drawn["header"] == ["team", "cost center", "used of guarantee", "total (USD)"]
    for team, _, shown, _ in drawn["teams"]:
        mine = [r for r in document["rows"] if r["team"] == team]
        used = sum(Decimal(str(r["usedGpuHours"])) for r in mine)
        guaranteed = sum(Decimal(str(r["guaranteedGpuHours"])) for r in mine)
        if guaranteed:
            assert abs(Decimal(shown.removesuffix(" %")) - used / guaranteed * 100) <= Decimal("0.05"), team
    assert overlaps(laid_out["texts"]) == []
