"""Large pages: past 60 columns the heatmap is data drawn on a canvas, past 2,000
rows a table's rows are data; every pair's value and words are still on the page,
the same as a small page's elements would hold (300 columns made a 64 MB page that
took a browser more than half a minute to open)."""

import json
import re

import numpy as np
import pytest

from dpmic_dask.causal.result import CausalGraph
from dpmic_dask.release.htmlreport import causal_view, pairwise_view, render_page
from dpmic_dask.release.htmlreport.compact import (
    MAP_SVG_COLUMNS,
    TABLE_DRAWN,
    TABLE_STATIC_ROWS,
)
from tests.htmlpages import causal_graph, check_page, pairwise_result

HOSTILE = '</script><script>alert("x")</script><!--'


def data_block(page: str, name: str):
    found = re.findall(rf'<script type="application/json" id="{name}">(.*?)</script>', page,
                       re.S)
    assert len(found) == 1
    return json.loads(found[0])


def wide(p: int, hostile: bool = True):
    columns = tuple(f"c{k:03d}" for k in range(p - 1)) + ((HOSTILE,) if hostile else ("last",))
    return pairwise_result(columns=columns)


def test_a_wide_release_page_holds_every_pair_as_data_with_the_words_of_its_cells():
    result = wide(MAP_SVG_COLUMNS + 10)
    view = pairwise_view(result)
    page = render_page(view)
    check_page(page)
    # the hostile name ends no block and opens no element: only the page's own scripts
    assert page.count("<script") == 4 and page.count("</script>") == 4
    assert HOSTILE not in page and '<g class="cell' not in page and "<canvas" in page

    cells = data_block(page, "map-data")
    assert cells["p"] == len(result.columns) and cells["size"] == view["map"]["size"]
    # one entry a pair: its place (both orders drawn from it), colour, flag and words,
    # as the small page's two cells of that pair carry them
    small = {(c["y"], c["x"]): c for c in view["map"]["cells"] if not c.get("diagonal")}
    room, size = view["map"]["room"], view["map"]["size"]
    assert len(cells["cells"]) == len(result.pairs) == len(small) // 2
    for i, j, fill, within, words, pair in cells["cells"]:
        for a, b in ((i, j), (j, i)):
            cell = small[(room + a * size, room + b * size)]
            assert (cell["fill"], int(cell["within"]), cell["title"]) == (fill, within, words)
            assert cell["pair"] == pair
        # the pair's index is the one the table's rows carry (data-pair): a hover
        # marks that pair's row (the map's order put another's)
        x, y = result.pairs[pair]
        assert words.split(":")[0] == f"{x} × {y}"
    assert sorted(entry[5] for entry in cells["cells"]) == list(range(len(result.pairs)))

    rows = data_block(page, "pairs-data")["rows"]
    table = view["tables"][0]["rows"]
    assert len(rows) == len(table) == len(result.pairs) > TABLE_STATIC_ROWS
    assert [[[c["v"], c["text"]] for c in r["cells"]] for r in table] == [r[0] for r in rows]
    assert [r["pair"] for r in table] == [r[2] for r in rows]
    assert [int(r["within"]) for r in table] == [r[3] for r in rows]
    assert f'data-limit="{TABLE_DRAWN}"' in page
    assert f"{len(result.pairs)} of {len(result.pairs)} pairs" in page


@pytest.mark.parametrize("p", [MAP_SVG_COLUMNS, 20])
def test_a_page_up_to_the_limits_keeps_its_cells_and_rows_as_elements(p):
    result = wide(p, hostile=False)
    page = render_page(pairwise_view(result))
    check_page(page)
    assert "application/json" not in page and "<canvas" not in page
    assert page.count('<g class="cell') == 2 * len(result.pairs)
    assert page.count("<tr data-text=") == len(result.pairs) <= TABLE_STATIC_ROWS


def test_a_wide_causal_page_lists_its_separated_pairs_without_drawing_them():
    small = causal_graph()
    p = MAP_SVG_COLUMNS + 5
    columns = tuple(f"v{k}" for k in range(p))
    graph = np.zeros((p, p), dtype=bool)
    graph[0, 1] = graph[1, 0] = True
    separated = {(a, b): (0,) for a in range(p) for b in range(a + 1, p) if (a, b) != (0, 1)}
    big = CausalGraph(columns, graph, separated, {(0, 1): 3.5}, small.report(),
                      {"removed": {k: 1.0 for k in separated}})
    page = render_page(causal_view(big))
    check_page(page)
    assert 'class="sep"' not in page and f"The {len(separated)} pairs separated" in page
    rows = data_block(page, "sepsets-data")["rows"]
    assert len(rows) == len(separated) > TABLE_STATIC_ROWS
    assert {(r[0][0][1], r[0][1][1]) for r in rows} == {
        (columns[a], columns[b]) for a, b in separated}
    # the small page still draws its separated pairs
    assert render_page(causal_view(small)).count('class="sep"') == 3


def test_a_very_wide_page_keeps_its_canvas_within_what_a_browser_draws():
    """Past 500 columns the cells shrink (to 2 px) so the canvas stays under a
    browser's limits (8 px cells at 4,000 columns were 32,000 px a side), and the
    names, which need 6 px each, are left out (a cell's words name its pair)."""
    from dpmic_dask.release.htmlreport import svg

    for p, size in ((500, 8), (1000, 4), (2000, 2), (5000, 2)):
        heat = svg.heatmap([f"c{k}" for k in range(p)], {(0, 1): (0, 0.5, False, "c0 × c1"),
                                                           (1, 0): (0, 0.5, False, "c0 × c1")})
        assert heat["size"] == size and heat["columns"] == p
        assert heat["size"] * p <= 10_000
        assert (len(heat["labels"]) == p) == (size >= 6)
    # the page of such a map (its cells made by hand: a real one has 499,500)
    view = pairwise_view(wide(5, hostile=False))
    view["map"] = {**svg.heatmap([f"c{k}" for k in range(1000)], {
        (0, 1): (0, 0.5, False, "c0 × c1"), (1, 0): (0, 0.5, False, "c0 × c1")}),
        "legend": svg.legend()}
    page = render_page(view)
    check_page(page)
    assert 'width="4000"' in page and "column names are left out" in page
    assert data_block(page, "map-data")["cells"] == [[0, 1, svg.colour(0.5), 0, "c0 × c1", 0]]
