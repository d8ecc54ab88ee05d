"""Geometry of a page's pictures: the heatmap of pairs, the drawing of a graph and
the step chart of a dataset's budget left (a job's page).

Plain numbers in, plain shapes out (positions, sizes, colours, the words of each
tooltip); the template writes them as SVG elements. Nothing here reads data:
the inputs are released values only.
"""

from __future__ import annotations

import math

#: Stops of the colour scale of values in [0, 1] (viridis at 0, 1/4, 1/2, 3/4, 1).
SCALE = ((0x44, 0x01, 0x54), (0x3b, 0x52, 0x8b), (0x21, 0x91, 0x8c), (0x5e, 0xc9, 0x62),
         (0xfd, 0xe7, 0x25))
#: Above this many columns the heatmap's cells carry no text.
CELL_TEXT_LIMIT = 25


def colour(value: float) -> str:
    """The scale's colour of ``value`` (clipped to [0, 1]) as ``#rrggbb``."""
    if value != value:
        return "#dddddd"
    t = min(max(float(value), 0.0), 1.0) * (len(SCALE) - 1)
    k = min(int(t), len(SCALE) - 2)
    f = t - k
    rgb = [round(a + (b - a) * f) for a, b in zip(SCALE[k], SCALE[k + 1])]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def text_colour(value: float) -> str:
    """Black on the light end of the scale, white on the dark end."""
    return "#000000" if value == value and value >= 0.6 else "#ffffff"


def _label_room(names, per_char: int = 7) -> int:
    longest = max((len(str(n)) for n in names), default=1)
    return int(min(180, 16 + per_char * longest))


def heatmap(columns, cells: dict) -> dict:
    """The heatmap of a symmetric table of pairs.

    ``cells[(i, j)]`` (``i != j``, column indices) is ``(index of the pair in
    the page's pair list, value, within_noise, tooltip)``; missing cells are blank, the
    diagonal is grey (not released). Returns the SVG's size, the labels and the
    cells with their geometry and colours."""
    p = len(columns)
    # cells of 8 px up to 500 columns; past them smaller (to 2 px), so that a
    # canvas of thousands of columns stays within what a browser draws
    size = max(8, min(44, 560 // max(p, 1))) if p <= 500 else max(2, 4000 // p)
    room = _label_room(columns) if size >= 6 else 8
    width = room + p * size + 8
    out = []
    text = p <= CELL_TEXT_LIMIT
    for i in range(p):
        for j in range(p):
            x, y = room + j * size, room + i * size
            if i == j:
                out.append({"x": x, "y": y, "fill": "#eeeeee", "diagonal": True})
                continue
            found = cells.get((i, j))
            if found is None:
                continue
            pair, value, within, tip = found
            out.append({
                "x": x, "y": y, "pair": pair, "fill": colour(value), "within": within,
                "label": f"{value:.2f}" if text and value == value else "",
                "ink": "#555555" if within else text_colour(value),
                "title": tip,
            })
    # labels need 6 px each; below that, a cell's columns show on hover only
    labels = [{"name": str(name), "pos": room + k * size + size / 2}
              for k, name in enumerate(columns)] if size >= 6 else []
    return {"width": width, "height": width, "size": size, "room": room, "cells": out,
            "labels": labels, "columns": p, "font": max(6, min(12, size // 3))}


def legend(width: int = 200) -> list:
    """Colour steps of the scale, left (0) to right (1)."""
    steps = 20
    return [{"x": k * width / steps, "w": width / steps + 0.5, "fill": colour(k / (steps - 1))}
            for k in range(steps)]


def graph(columns, edges, separated) -> dict:
    """A graph on a circle.

    ``edges``: ``(a, b, directed, strength, title)`` with column indices (``a ->
    b`` when directed); ``separated``: ``(a, b, title)``, pairs drawn as faint
    dashed lines that show their separating set on hover. Edge widths grow
    with ``|strength|`` relative to the strongest edge."""
    p = len(columns)
    room = _label_room(columns, 8)
    radius = max(90, min(260, 30 * p))
    centre = radius + room
    node = 7
    pos = []
    for k in range(p):
        angle = math.pi / 2 - 2 * math.pi * k / max(p, 1)
        pos.append((centre + radius * math.cos(angle), centre - radius * math.sin(angle),
                    math.cos(angle), math.sin(angle)))
    nodes = []
    for k, name in enumerate(columns):
        x, y, c, s = pos[k]
        anchor = "start" if c > 0.3 else "end" if c < -0.3 else "middle"
        nodes.append({"name": str(name), "x": x, "y": y, "r": node,
                      "lx": x + 14 * c, "ly": y - 14 * s + (4 if abs(c) > 0.3 else
                                                             -4 if s > 0 else 14),
                      "anchor": anchor})
    finite = [abs(e[3]) for e in edges if e[3] == e[3] and math.isfinite(e[3])]
    top = max(finite, default=0.0)

    def ends(a, b, gap):
        (x0, y0, *_), (x1, y1, *_) = pos[a], pos[b]
        d = math.hypot(x1 - x0, y1 - y0) or 1.0
        ux, uy = (x1 - x0) / d, (y1 - y0) / d
        return {"x1": x0 + ux * gap, "y1": y0 + uy * gap,
                "x2": x1 - ux * (gap + 3), "y2": y1 - uy * (gap + 3)}

    lines = []
    for a, b, directed, strength, title in edges:
        share = abs(strength) / top if top and strength == strength else 0.5
        lines.append({**ends(a, b, node + 2), "directed": directed, "title": title,
                      "width": round(1.5 + 3.5 * share, 2)})
    dashed = [{**ends(a, b, node + 2), "title": title} for a, b, title in separated]
    return {"width": 2 * centre, "height": 2 * centre, "nodes": nodes, "edges": lines,
            "separated": dashed}


def budget_steps(points, cap: float, *, width: int = 560, height: int = 190) -> dict:
    """A step chart of a budget left over time.

    ``points``: one per charge, oldest first, as ``(seconds or None, left after it,
    tooltip, this run's)``; ``cap``: the budget before the first charge (the top of
    the chart, drawn as a dashed line). A charge's mark sits at its time (evenly
    spaced when times are missing or all equal) and at the budget left after it;
    the line steps down at each charge."""
    left_room, right_room, top_room, bottom_room = 64, 16, 14, 30
    inner_w, inner_h = width - left_room - right_room, height - top_room - bottom_room
    lefts = [float(p[1]) for p in points]
    top = max([float(cap), *lefts, 0.0]) or 1.0
    times = [p[0] for p in points]
    timed = all(t is not None for t in times) and len(points) > 1 and times[-1] > times[0]

    def x_of(k: int) -> float:
        if timed:
            share = (times[k] - times[0]) / (times[-1] - times[0])
            return left_room + 12 + (inner_w - 24) * share
        return left_room + inner_w * ((k + 1) / (len(points) + 1))

    def y_of(value: float) -> float:
        return round(top_room + inner_h * (1.0 - max(value, 0.0) / top), 2)

    start = left_room
    path = [f"M{start},{y_of(float(cap))}"]
    marks = []
    for k, (_, left, tip, mine) in enumerate(points):
        x = round(x_of(k), 2)
        path += [f"H{x}", f"V{y_of(float(left))}"]
        marks.append({"x": x, "y": y_of(float(left)), "r": 5 if mine else 3.5,
                      "fill": "#e4572e" if mine else "#3b528b", "title": tip,
                      "left": float(left), "mine": mine})
    path.append(f"H{left_room + inner_w}")
    return {"width": width, "height": height, "path": " ".join(path), "marks": marks,
            "cap_y": y_of(float(cap)), "zero_y": y_of(0.0), "x0": left_room,
            "x1": left_room + inner_w, "label_x": left_room - 6, "time_y": height - 10}


__all__ = ["budget_steps", "colour", "graph", "heatmap", "legend", "text_colour"]
