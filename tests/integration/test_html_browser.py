"""The HTML pages in a real browser: headless Chromium (the Debian package
``chromium``; ``.ci/run`` installs it). ``--dump-dom`` gives the document after
the page's script ran, ``--screenshot`` a picture of it; the page's script
applies a view of its table given in the address (``#sort=mic&dir=desc&filter=age``),
which is how sorting and filtering are driven here. Console messages (errors,
refused loads) come back on Chromium's log; the page also writes any script
error into ``#page-errors`` and the number of resources it loaded into
``data-resources``."""

import html
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from dpmic_dask.batch.runpage import rebuild
from tests.htmlpages import (
    causal_graph,
    check_page,
    ledger_with_charges,
    pairwise_result,
    run_file,
)

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def browse(tmp_path, page, *args, fragment=""):
    """Open ``page`` in headless Chromium; returns (stdout, console lines)."""
    if CHROMIUM is None:
        if os.environ.get("DPMIC_TEST_EVERYTHING"):  # set by .ci/run, which installs it
            pytest.fail("headless Chromium is not installed (apt-get install chromium)")
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    done = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--enable-logging=stderr", "--v=0",
         f"--user-data-dir={profile}", "--window-size=1280,1600", "--hide-scrollbars",
         *args, page.as_uri() + fragment],
        capture_output=True, text=True, timeout=120)
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


class Dom(HTMLParser):
    """What the tests read of a dumped document: the body's attributes, the error
    box, and each table's rows (hidden or not, each cell's sort value and text)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.body, self.errors, self.tables, self.texts = {}, "", {}, []
        self.charges = []  # the ledger chart's marks: (class, data-left)
        self.canvas = None  # a large heatmap's canvas: its attributes
        self._table = self._row = self._cell = None
        self._in_errors = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "g" and "charge" in (attrs.get("class") or "").split():
            self.charges.append((attrs["class"], float(attrs["data-left"])))
        elif tag == "canvas":
            self.canvas = attrs
        elif tag == "pre" and attrs.get("id") == "page-errors":
            self._in_errors = True
        elif tag == "table":
            self._table = self.tables.setdefault(attrs.get("id"), {"attrs": attrs, "rows": []})
        elif tag == "tr" and self._table is not None and "data-text" in attrs:
            self._row = {"hidden": "hidden" in attrs, "cells": []}
            self._table["rows"].append(self._row)
        elif tag == "td" and self._row is not None:
            self._cell = [attrs.get("data-v"), ""]
            self._row["cells"].append(self._cell)

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in_errors = False
        elif tag == "table":
            self._table = None
        elif tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        self.texts.append(data)
        if self._in_errors:
            self.errors += data
        if self._cell is not None:
            self._cell[1] += data


def opened(tmp_path, page, fragment=""):
    out, console = browse(tmp_path, page, "--dump-dom", fragment=fragment)
    dom = Dom(out)
    assert console == []  # no error, no refused load, nothing logged at all
    assert dom.body.get("data-ready") == "1" and dom.errors.strip() == ""
    assert dom.body.get("data-resources") == "0"  # nothing fetched by the page
    return dom


def not_blank(tmp_path, page):
    from PIL import Image

    shot = tmp_path / "shot.png"
    browse(tmp_path, page, f"--screenshot={shot}")
    with Image.open(shot) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # text, cells and lines, not one colour
    return {rgb for _, rgb in colours}


def test_a_pairwise_page_in_the_browser(tmp_path):
    result = pairwise_result()
    page = result.to_html(tmp_path / "pairs.html")
    check_page(page.read_text())
    dom = opened(tmp_path, page)
    text = html.unescape(" ".join(dom.texts))
    for (x, y), value in zip(result.pairs, result.values):
        assert f"{x} × {y}: MIC {value:.3f}" in text
    assert result.privacy.statement in text and "pure epsilon-differential privacy" in text
    rows = dom.tables["pairs"]["rows"]
    assert len(rows) == len(result.pairs) and not any(r["hidden"] for r in rows)
    not_blank(tmp_path, page)

    # sorting: by mic, largest first; by x, then filtered to the pairs of 'age'
    dom = opened(tmp_path, page, "#sort=mic&dir=desc")
    mic = [float(r["cells"][2][0]) for r in dom.tables["pairs"]["rows"]]
    assert mic == sorted(result.values, reverse=True)
    assert dom.tables["pairs"]["attrs"]["data-sorted"] == "mic:desc"
    dom = opened(tmp_path, page, "#sort=y&dir=asc&filter=age")
    table = dom.tables["pairs"]
    shown = [r for r in table["rows"] if not r["hidden"]]
    assert {(r["cells"][0][1], r["cells"][1][1]) for r in shown} == {
        p for p in result.pairs if "age" in p}
    assert [r["cells"][1][1] for r in shown] == sorted(r["cells"][1][1] for r in shown)
    assert table["attrs"]["data-shown"] == str(len(shown)) == "4"
    assert f"4 of {len(result.pairs)} pairs" in " ".join(dom.texts)


def test_a_causal_page_in_the_browser(tmp_path):
    graph = causal_graph()
    page = graph.to_html(tmp_path / "graph.html")
    dom = opened(tmp_path, page)
    text = html.unescape(" ".join(dom.texts))
    assert "a -- b: statistic 12.5000" in text and "b and c separated given {a}" in text
    assert graph.privacy.statement in text
    assert len(dom.tables["edges"]["rows"]) == 3 and len(dom.tables["sepsets"]["rows"]) == 3
    not_blank(tmp_path, page)
    dom = opened(tmp_path, page, "#table=edges&sort=statistic&dir=desc")
    assert [r["cells"][3][0] for r in dom.tables["edges"]["rows"]] == ["12.5", "7.0", "4.25"]


def test_a_job_runs_page_in_the_browser(tmp_path):
    result = pairwise_result(tau=False)
    url, charges = ledger_with_charges(tmp_path / "ledger.db")
    run_file(tmp_path / "out", result, "r2", charges[1].charge_id)
    (page,) = rebuild(tmp_path / "out", url)
    dom = opened(tmp_path, page, "#sort=mic&dir=asc")
    text = html.unescape(" ".join(dom.texts))
    assert all(f"{x} × {y}: MIC {v:.3f}" in text for (x, y), v in zip(result.pairs, result.values))
    assert "This release is 1-differentially private" in text and charges[1].charge_id in text
    mic = [float(r["cells"][2][0]) for r in dom.tables["pairs"]["rows"]]
    assert mic == sorted(result.values)
    # the dataset's ledger history up to this run's charge: r1 then r2 (pure eps 0.3)
    assert "Ledger history of dataset sales" in text and "1 later charge(s)" in text
    assert [c for c, _ in dom.charges] == ["charge", "charge mine"]
    assert dom.charges[-1][1] == pytest.approx(dom.charges[0][1] - 0.045)
    rows = dom.tables["ledger-charges"]["rows"]
    assert [r["cells"][1][1] for r in rows] == ["r2 / nightly", "r1 / nightly"]
    assert rows[1]["cells"][3][1] == "rho 0.01 (zCDP; epsilon 0.5, delta 1e-07)"
    assert rows[0]["cells"][3][1] == "epsilon 0.3"
    not_blank(tmp_path, page)


def test_a_job_runs_page_without_its_ledger_in_the_browser(tmp_path):
    run_file(tmp_path / "out", pairwise_result(tau=False), "r1", "charge-1")
    (page,) = rebuild(tmp_path / "out")
    dom = opened(tmp_path, page)
    text = html.unescape(" ".join(dom.texts))
    assert "The ledger's history is not available" in text and dom.charges == []
    assert "ledger-charges" not in dom.tables


def test_a_wide_page_draws_its_cells_and_its_first_rows_from_data(tmp_path):
    """70 columns, 2,415 pairs: the heatmap is drawn on a canvas and the table draws
    the first 1,000 rows of its order and filter; sorting and filtering see every
    pair."""
    from dpmic_dask.release.htmlreport.svg import colour, legend

    columns = tuple(f"c{k:03d}" for k in range(70))
    result = pairwise_result(columns=columns, tau=False)
    page = result.to_html(tmp_path / "wide.html")
    dom = opened(tmp_path, page)
    assert dom.canvas is not None and dom.canvas["data-cells"] == str(len(result.pairs))
    rows = dom.tables["pairs"]["rows"]
    assert len(rows) == 1000 and not any(r["hidden"] for r in rows)
    assert "2415 of 2415 pairs (the first 1000 drawn" in " ".join(dom.texts)
    # the canvas's cells: every colour of a value outside its noise is on the screen
    # (the legend's own steps left out)
    seen = not_blank(tmp_path, page)
    fills = {colour(v) for v in result.values if abs(v) > result.privacy.ci95}
    fills -= {step["fill"] for step in legend()}
    assert len(fills) >= 5
    assert {tuple(int(f[k:k + 2], 16) for k in (1, 3, 5)) for f in fills} <= seen

    dom = opened(tmp_path, page, "#sort=mic&dir=desc")
    mic = [float(r["cells"][2][0]) for r in dom.tables["pairs"]["rows"]]
    assert mic == sorted(result.values, reverse=True)[:1000]
    dom = opened(tmp_path, page, "#sort=x&dir=desc&filter=c007")
    table = dom.tables["pairs"]
    shown = {(r["cells"][0][1], r["cells"][1][1]) for r in table["rows"]}
    assert shown == {p for p in result.pairs if "c007" in p} and len(shown) == 69
    assert table["attrs"]["data-shown"] == "69" and "69 of 2415 pairs" in " ".join(dom.texts)
    x = [r["cells"][0][1] for r in table["rows"]]
    assert x == sorted(x, reverse=True)
