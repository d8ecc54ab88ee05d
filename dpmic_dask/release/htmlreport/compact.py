"""Large pages: what a browser cannot lay out as elements travels as data.

A table of 300 columns' pairs (44,850 rows) and its heatmap (89,700 cells) made a
64 MB page that took a browser more than half a minute to open. Past
:data:`MAP_SVG_COLUMNS` columns the heatmap is drawn by the page's script on a
canvas from the cells' positions, colours and words; past
:data:`TABLE_STATIC_ROWS` rows a table's rows are data, of which the script
draws the first :data:`TABLE_DRAWN` of the current order and filter (sorting
and filtering still see every row), and a graph leaves out the dashed lines of
its separated pairs (they are listed in the table below it). Every value and
word is the same as on a small page: only how they reach the screen differs.

The data sit in ``<script type="application/json">`` blocks, which a browser
never runs; ``<``, ``>`` and ``&`` are written as JSON escapes, so no text (a
column named ``</script>``, say) can end the block early.
"""

from __future__ import annotations

import json

from markupsafe import Markup

#: Above this many columns the heatmap is a canvas drawn by the page's script.
MAP_SVG_COLUMNS = 60
#: Above this many rows a table's rows are data drawn by the page's script.
TABLE_STATIC_ROWS = 2000
#: How many rows of a table held as data the script draws at a time.
TABLE_DRAWN = 1000


def embedded(data) -> Markup:
    """``data`` as JSON that is safe inside a ``<script>`` element."""
    text = json.dumps(data, separators=(",", ":"), allow_nan=False, ensure_ascii=False)
    for char, code in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                       ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, code)
    return Markup(text)  # noqa: S704 - escaped above for a script element's content


def _canvas(heat: dict) -> dict:
    """The heatmap's cells as data: one entry a pair (both triangles drawn from
    it), its position, colour, within-noise flag, words and the pair's index in
    the page's pair list (which the table's rows carry as ``data-pair``)."""
    size = heat["size"]
    room = heat["room"]
    pairs: dict[int, list] = {}
    for cell in heat["cells"]:
        if cell.get("diagonal"):
            continue
        i, j = (cell["y"] - room) // size, (cell["x"] - room) // size
        if cell["pair"] not in pairs:
            pairs[cell["pair"]] = [int(i), int(j), cell["fill"], int(bool(cell["within"])),
                                   cell["title"], int(cell["pair"])]
    return {"p": heat["columns"], "size": size, "cells": list(pairs.values()),
            "diagonal": "#eeeeee"}  # not released, as the small map's grey cells


def _table(table: dict) -> dict:
    """A table's rows as data: each row's cells (sort value, text), filter text,
    pair and within-noise flag."""
    return {"rows": [[[[c["v"], c["text"]] for c in row["cells"]], row["text"],
                      row.get("pair", -1), int(bool(row.get("within")))]
                     for row in table["rows"]]}


def compact(view: dict) -> dict:
    """``view`` with its large parts turned into data (a new dict; small parts as
    they were). Every table gets ``total`` (its row count), ``data`` and ``limit``
    (``None`` and 0 for rows written as elements); the map ``canvas``, the graph
    ``left_out`` (how many separated pairs are not drawn)."""
    view = dict(view)
    heat = view.get("map")
    if heat:
        view["map"] = {**heat, "canvas": None}
        if heat["columns"] > MAP_SVG_COLUMNS:
            view["map"].update(cells=[], canvas=embedded(_canvas(heat)))
    graph = view.get("graph")
    if graph:
        view["graph"] = {**graph, "left_out": 0}
        if len(graph["nodes"]) > MAP_SVG_COLUMNS:
            view["graph"].update(separated=[], left_out=len(graph["separated"]))
    tables = []
    for table in view.get("tables", []):
        table = {**table, "total": len(table["rows"]), "data": None, "limit": 0}
        if table["total"] > TABLE_STATIC_ROWS:
            table.update(data=embedded(_table(table)), rows=[], limit=TABLE_DRAWN)
        tables.append(table)
    view["tables"] = tables
    return view


__all__ = ["MAP_SVG_COLUMNS", "TABLE_DRAWN", "TABLE_STATIC_ROWS", "compact", "embedded"]
