"""A result as the parts of its page (a plain dict the template fills in).

Every part is read from the released result's own fields and its report text
(post-processing of the release): the values, their noise intervals and
flags, the privacy statement, the budget's parts and where bounds and
categories came from. Nothing here reads data, and nothing shows more than
the result holds.

The parts: ``title``, ``subtitle``, ``seeded`` (test noise: NOT PRIVATE),
``facts`` (label, value) and ``guarantee`` (paragraphs) of the privacy
statement, ``steps`` (name, part of the budget) and ``sources`` of the plan,
``map`` (a heatmap) or ``graph`` (a drawn graph), ``pairs`` (what a click on a
cell shows), ``tables`` (sortable, with a text filter), ``ledger`` (a job's page:
the dataset's ledger history, :mod:`.ledgerview`) and ``report`` (the result's
report in plain text).
"""

from __future__ import annotations

import math

import numpy as np

import dpmic_dask.release.htmlreport.svg as svg
from dpmic_dask._version import __version__
from dpmic_dask.release.reportlines import report_lines, said_bounds, spectral_order


def _num(value, digits: int = 3) -> str:
    """A released number for the page (``-`` for a missing one)."""
    if value is None:
        return "-"
    value = float(value)
    if value != value:
        return "NaN"
    return f"{value:.{digits}f}"


def _key(value) -> float | str:
    """The value a table sorts a cell by (NaN last among numbers)."""
    if value is None:
        return ""
    if isinstance(value, (bool, int, float)) or hasattr(value, "__float__"):
        value = float(value)
        return value if math.isfinite(value) else 1e300
    return str(value)


def _cell(value, text: str | None = None) -> dict:
    return {"v": _key(value), "text": text if text is not None else str(value)}


def plain_value(value):
    """A NumPy scalar as the Python value it holds (``'a'``, not ``np.str_('a')``)."""
    return value.item() if isinstance(value, np.generic) else value


def _yes(flag) -> str:
    return "yes" if flag else "no"


def _one_person(epsilon: float, delta: float, unit: str | None, *,
                replace: bool | None = None) -> str:
    """What the guarantee means for one person (or unit), in words. Row-level and
    local releases bound replacing a row (report) by any other; per-unit releases
    (``replace`` false, the default with a ``unit``) bound adding or removing all
    of one unit's rows, and replacing them by another unit's at twice the epsilon
    (and ``(1 + e^eps) delta``)."""
    who = "one row" if unit is None else f"one {unit} (all of its rows)"
    factor = (lambda eps: math.exp(eps) if eps < 700 else math.inf)  # noqa: E731
    replace = unit is None if replace is None else replace
    tail = ("" if not delta else f", except with probability at most {delta:g}")
    if replace:
        said = (f"For {who}: whether it is in the data or replaced by any other, "
                f"the chance of any outcome of this release"
                f"{' (this page included)' if not delta else ''} changes by at most a "
                f"factor e^{epsilon:g} = {factor(epsilon):.4g}{tail}.")
    else:
        twice = "" if not delta else (
            f", except with probability at most {(1.0 + factor(epsilon)) * delta:.3g}")
        said = (f"For {who}: whether it is in the data or not, the chance of any "
                f"outcome of this release{' (this page included)' if not delta else ''} "
                f"changes by at most a factor e^{epsilon:g} = {factor(epsilon):.4g}{tail}; "
                f"whether they are replaced by another {unit}'s rows, by at most "
                f"e^{2 * epsilon:g} = {factor(2 * epsilon):.4g}{twice}.")
    said += " The bound holds whatever else is known about it."
    if unit is None:
        said += (" A person with several rows is protected only per row (privacy_unit "
                 "protects all of a person's rows).")
    return said


def _parts(text: str) -> list[dict]:
    """The budget's parts, from the report's ``name: amount; name: amount`` text."""
    steps = []
    for piece in [s.strip() for s in text.split("; ") if s.strip()]:
        name, _, part = piece.partition(": ")
        steps.append({"name": name, "part": part or piece})
    return steps


def pair_tip(pair: dict) -> str:
    """What hovering or clicking a pair's cell says: its value, ci95, tau_a (when
    released) and whether it lies within its noise."""
    text = f"{pair['x']} × {pair['y']}: MIC {_num(pair['mic'])}, ci95 +/-{_num(pair['ci95'])}"
    if "tau_a" in pair:
        text += (f"; tau_a {_num(pair['tau_a'])}, ci95 +/-{_num(pair['tau_ci95'])}"
                 + (" (within its noise)" if pair["tau_within"] else ""))
    return text + (f"; within_noise: {_yes(pair['within'])}"
                   + (" (indistinguishable from 0 at this budget)" if pair["within"] else ""))


def pair_table(pairs: list[dict], *, tau: bool, local: bool = False) -> dict:
    """The sortable table of pairs (``pairs``: the page's pair dicts)."""
    columns = [("x", "text"), ("y", "text"), ("mic", "number"),
               ("ci95", "number"), ("within_noise", "text")]
    if tau:
        columns[4:4] = [("tau_a", "number"), ("tau_a_ci95", "number"),
                        ("tau_a_within_noise", "text"), ("nonlinearity", "number")]
    rows = []
    for k, pair in enumerate(pairs):
        cells = [_cell(pair["x"]), _cell(pair["y"]), _cell(pair["mic"], _num(pair["mic"])),
                 _cell(pair["ci95"], _num(pair["ci95"]))]
        if tau:
            t = pair.get("tau_a")
            nonlinear = pair["mic"] - t * t if t is not None and t == t else math.nan
            cells += [_cell(t, _num(t)), _cell(pair["tau_ci95"], _num(pair["tau_ci95"])),
                      _cell(_yes(pair["tau_within"])), _cell(nonlinear, _num(nonlinear))]
        cells.append(_cell(_yes(pair["within"])))
        rows.append({"cells": cells, "text": f"{pair['x']} {pair['y']}".lower(), "pair": k,
                     "within": pair["within"]})
    order = [c for c in columns if c[0] != "within_noise"] + [("within_noise", "text")]
    caption = ("ci95: half-width of each estimate's own 95% interval" if local else
               "ci95: 95% of the noise alone lies within +/- this; within_noise: |value| "
               "<= ci95, indistinguishable from 0 at this budget")
    return {"id": "pairs", "caption": caption, "noun": "pairs",
            "columns": [{"label": name, "type": kind} for name, kind in order], "rows": rows}


def _pairs_map(columns, pairs: list[dict]) -> dict:
    """The heatmap of the page's pairs (both triangles), in the columns' order, or,
    with many columns, an order that places related columns together."""
    columns = [str(c) for c in columns]
    # each pair's place: its columns' positions where it carries them ("at", from
    # the result's own labels: 1 and "1" are two columns), else by name
    named = {c: k for k, c in enumerate(columns)}
    at = [pair.get("at") or (named[pair["x"]], named[pair["y"]]) for pair in pairs]
    order = list(range(len(columns)))
    if len(columns) > svg.CELL_TEXT_LIMIT:
        grid = np.zeros((len(columns), len(columns)))
        for (i, j), pair in zip(at, pairs):
            grid[i, j] = grid[j, i] = abs(pair["mic"]) if pair["mic"] == pair["mic"] else 0.0
        order = [int(k) for k in spectral_order(grid)]
    place = {k: position for position, k in enumerate(order)}
    cells = {}
    for k, ((i, j), pair) in enumerate(zip(at, pairs)):
        i, j = place[i], place[j]
        cells[(i, j)] = cells[(j, i)] = (k, pair["mic"], pair["within"], pair_tip(pair))
    return {**svg.heatmap([columns[k] for k in order], cells), "legend": svg.legend()}


def _positions(columns) -> dict:
    """Each column label's position (labels compared as themselves, not as text)."""
    return {c: k for k, c in enumerate(columns)}


def _pairs(result) -> list[dict]:
    """The released pairs of a :class:`~dpmic_dask.release.results.PairwiseResult`."""
    ci95 = float(result.privacy.ci95)
    tau = next((c for c in result.companions if c.statistic == "tau"), None)
    pairs = []
    where = _positions(result.columns)
    for k, ((x, y), value) in enumerate(zip(result.pairs, result.values)):
        value = float(value)
        pair = {"x": str(x), "y": str(y), "mic": value, "ci95": ci95,
                "within": bool(ci95 == ci95 and abs(value) <= ci95),
                "at": (where[x], where[y])}
        if tau is not None:
            t = float(tau.values[k])
            pair.update(tau_a=t, tau_ci95=float(tau.ci95),
                        tau_within=bool(t == t and abs(t) <= tau.ci95))
        pairs.append(pair)
    return pairs


def _base(title: str, subtitle: str, seeded: bool, report: str) -> dict:

    return {"title": title, "subtitle": subtitle, "seeded": seeded, "report": report,
            "facts": [], "guarantee": [], "steps": [], "sources": [], "map": None,
            "graph": None, "pairs": [], "tables": [], "ledger": None, "version": __version__}


def _measure(rho) -> str:
    if rho is None:
        return "pure epsilon-differential privacy"
    return f"zero-concentrated DP: rho = {rho:.4g} (stated as (epsilon, delta))"


def pairwise_view(result) -> dict:
    """The page of a central release of pairs (``pairwise``, ``top_pairs``,
    ``pairs_above``): the map, the statement, the plan and the table."""
    p = result.privacy
    pairs = _pairs(result)
    what = f"private MIC of {len(pairs)} pair{'s' if len(pairs) != 1 else ''} of " \
           f"{len(result.columns)} columns"
    view = _base("Private MIC release", what, p.seeded, result.report())
    unit = ("one row" if p.privacy_unit is None else
            f"per {p.privacy_unit}, at most {p.max_rows_per_unit} rows each")
    view["facts"] = [
        ("epsilon", f"{p.epsilon:g}"), ("delta", f"{p.delta:g}"),
        ("measure", _measure(p.rho)), ("privacy unit", unit),
        ("mechanism", f"{p.mechanism} ({p.statistic}, B = {p.B:g}, c = {p.c})"),
        ("noise scale", f"{p.noise_scale:.4g} per value"),
        ("noise, 95%", f"+/-{p.ci95:.4g}" if p.ci95 == p.ci95 else "no interval (noise "
                                                                   "on grid counts)"),
        ("rows (n)", str(p.n)), ("ledger charge", str(p.charge_id)),
    ]
    view["guarantee"] = [p.statement, _one_person(p.epsilon, p.delta, p.privacy_unit),
                         p.unit_line(), p.budget_line(), p.noise_line()]
    view["steps"] = (_parts(p.parts) if p.parts else
                     [{"name": "release", "part": f"{p.mechanism}: the whole budget "
                                                  f"(epsilon {p.epsilon:g})"}])
    if p.selection != "all pairs":
        view["sources"].append(f"Pairs chosen privately: {p.selection} ({len(pairs)} of "
                               f"{p.candidates} pairs).")
    view["sources"] += _bounds_sources(result)
    view["map"] = _pairs_map(result.columns, pairs)
    view["pairs"] = pairs
    view["tables"] = [pair_table(pairs, tau=any("tau_a" in x for x in pairs))]
    return view


def _bounds_sources(result) -> list[str]:
    """Where the release's bounds and categories came from (its own fields)."""
    lines = []
    found = result.private_bounds
    if found is not None:
        for column in found.bounds:
            how = (" (unresolved: fallback bounds)" if column in found.unresolved else
                   " (refined)" if column in found.refined else "")
            if column in found.unseen:
                how += (f" (may leave out a tail: a bin beyond them holding up to about "
                        f"{found.unseen[column]:,.0f} rows is not seen at this budget)")
            if column in found.clamped_fills:
                how += " (its fill value lies outside them: every filled row is clamped)"
            if column in found.piled:
                side, share = found.piled[column]
                how += (f" ({min(share, 1.0):.0%} of the rows piled at the {side} end of its "
                        "public domain: the column may run past it, clamped there)")
            if column in found.infinite:
                how += (f" (about {found.infinite[column]:,.0f} infinite values, or beyond "
                        "+-3e307, clamped to them)")
            if column in getattr(found, "one_bin", {}):
                how += (f" (about constant: {min(found.one_bin[column], 1.0):.0%} of the rows "
                        "in one bin of the refining pass; its pairs' MIC is capped)")
            lines.append(f"Bounds of {column}: {found.formatted(column)}, released privately"
                         f"{how}.")
    public = [c for c in result.columns if found is None or c not in found.bounds]
    chosen = result.private_categories or {}
    public = [c for c in public if c not in chosen]
    given = getattr(result, "public_bounds", None)
    listed = [c for c in public if given is not None and c in given]
    if listed:
        lines.append("Public bounds and lists used (given, not released): " + "; ".join(
            f"{c} {said_bounds(given[c])}" for c in listed) + ".")  # type: ignore[index]
    rest = [c for c in public if c not in listed]
    if rest and given is not None:  # kept with the release: the rest have typed bounds
        lines.append(f"Bounds from each column's type (booleans: 0 and 1): "
                     f"{', '.join(map(str, rest))}.")
    elif rest:
        lines.append(f"Public bounds or categories (given, not released): "
                     f"{', '.join(map(str, rest))}.")
    for column, kept in chosen.items():
        lines.append(f"Categories of {column} chosen privately: "
                     f"{', '.join(map(str, kept)) or '(none)'}; other values in 'other'.")
    lines += report_lines(result)
    return lines


def local_view(result) -> dict:
    """The page of a local-model result: the map and the table, with each
    estimate's own ci95, and what protects each person."""
    p = result.privacy
    pairs = []
    where = _positions(result.columns)
    for (x, y), e in zip(result.pairs, result.estimates):
        mic, ci = float(e.mic), float(e.ci95)
        pairs.append({"x": str(x), "y": str(y), "mic": mic, "ci95": ci,
                      "within": bool(ci == ci and mic <= ci), "at": (where[x], where[y])})
    view = _base("Local-model MIC estimates",
                 f"MIC of {len(pairs)} pairs of {len(result.columns)} columns from eps-LDP "
                 "reports", p.seeded, result.report())
    view["facts"] = [
        ("epsilon", f"{p.epsilon:g} per person (local DP)"), ("delta", "0"),
        ("measure", "pure epsilon-local differential privacy"),
        ("privacy unit", "one person's whole row, on their device"),
        ("mechanism", f"{p.protocol.upper()} on a {p.bins} x {p.bins} grid per pair"),
        ("noise scale", "randomized response on the device (per estimate: its ci95)"),
        ("reports (n)", str(p.n)),
    ]
    view["guarantee"] = [p.statement(),
                         _one_person(p.epsilon, 0.0, "person's report", replace=True),
                         p.protocol_line()]
    view["steps"] = [{"name": "on each device",
                      "part": f"epsilon {p.epsilon:g}: one randomized report of "
                              f"{p.pairs_per_person} of the {p.design_pairs} pairs"},
                     {"name": "on the server", "part": "post-processing: nothing charged"}]
    view["map"] = _pairs_map(result.columns, pairs)
    view["pairs"] = pairs
    view["tables"] = [pair_table(pairs, tau=False, local=True)]
    return view


__all__ = ["local_view", "pair_table", "pair_tip", "pairwise_view", "plain_value"]
