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
cell shows), ``tables`` (sortable, with a text filter) and ``report`` (the
result's report in plain text).
"""

from __future__ import annotations

import math

from dpmic_dask.release.htmlreport import svg


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


def _yes(flag) -> str:
    return "yes" if flag else "no"


def _one_person(epsilon: float, delta: float, unit: str | None) -> str:
    """What the guarantee means for one person (or unit), in words."""
    who = "one row" if unit is None else f"one {unit} (all of its rows)"
    factor = math.exp(epsilon) if epsilon < 700 else math.inf
    if not delta:
        return (f"For one person: whether {who} is in the data or replaced by any other, "
                f"the chance of any outcome of this release (this page included) changes by "
                f"at most a factor e^{epsilon:g} = {factor:.4g}. Nothing more about {who} can "
                "be learned from it, whatever else is known.")
    return (f"For one person: whether {who} is in the data or replaced by any other, the "
            f"chance of any outcome of this release changes by at most a factor "
            f"e^{epsilon:g} = {factor:.4g}, except with probability at most {delta:g}.")


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
    columns = list(columns)
    if len(columns) > svg.CELL_TEXT_LIMIT:
        import numpy as np

        from dpmic_dask.release.results import spectral_order

        where = {c: k for k, c in enumerate(columns)}
        grid = np.zeros((len(columns), len(columns)))
        for pair in pairs:
            v = abs(pair["mic"]) if pair["mic"] == pair["mic"] else 0.0
            grid[where[pair["x"]], where[pair["y"]]] = grid[where[pair["y"]], where[pair["x"]]] = v
        columns = [columns[k] for k in spectral_order(grid)]
    where = {c: k for k, c in enumerate(columns)}
    cells = {}
    for k, pair in enumerate(pairs):
        i, j = where[pair["x"]], where[pair["y"]]
        cells[(i, j)] = cells[(j, i)] = (k, pair["mic"], pair["within"], pair_tip(pair))
    return {**svg.heatmap(columns, cells), "legend": svg.legend()}


def _pairs(result) -> list[dict]:
    """The released pairs of a :class:`~dpmic_dask.release.results.PairwiseResult`."""
    ci95 = float(result.privacy.ci95)
    tau = next((c for c in result.companions if c.statistic == "tau"), None)
    pairs = []
    for k, ((x, y), value) in enumerate(zip(result.pairs, result.values)):
        value = float(value)
        pair = {"x": str(x), "y": str(y), "mic": value, "ci95": ci95,
                "within": bool(ci95 == ci95 and abs(value) <= ci95)}
        if tau is not None:
            t = float(tau.values[k])
            pair.update(tau_a=t, tau_ci95=float(tau.ci95),
                        tau_within=bool(t == t and abs(t) <= tau.ci95))
        pairs.append(pair)
    return pairs


def _base(title: str, subtitle: str, seeded: bool, report: str) -> dict:
    from dpmic_dask._version import __version__

    return {"title": title, "subtitle": subtitle, "seeded": seeded, "report": report,
            "facts": [], "guarantee": [], "steps": [], "sources": [], "map": None,
            "graph": None, "pairs": [], "tables": [], "version": __version__}


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
    from dpmic_dask.release.bounds_check import report_lines

    lines = []
    found = result.private_bounds
    if found is not None:
        for column in found.bounds:
            how = (" (unresolved: fallback bounds)" if column in found.unresolved else
                   " (refined)" if column in found.refined else "")
            lines.append(f"Bounds of {column}: {found.formatted(column)}, released privately"
                         f"{how}.")
    public = [c for c in result.columns if found is None or c not in found.bounds]
    chosen = result.private_categories or {}
    public = [c for c in public if c not in chosen]
    if public:
        lines.append(f"Public bounds or categories (given, not released): "
                     f"{', '.join(map(str, public))}.")
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
    for (x, y), e in zip(result.pairs, result.estimates):
        mic, ci = float(e.mic), float(e.ci95)
        pairs.append({"x": str(x), "y": str(y), "mic": mic, "ci95": ci,
                      "within": bool(ci == ci and mic <= ci)})
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
    view["guarantee"] = [p.statement(), _one_person(p.epsilon, 0.0, "person's report"),
                         p.protocol_line()]
    view["steps"] = [{"name": "on each device",
                      "part": f"epsilon {p.epsilon:g}: one randomized report of "
                              f"{p.pairs_per_person} of the {p.design_pairs} pairs"},
                     {"name": "on the server", "part": "post-processing: nothing charged"}]
    view["map"] = _pairs_map(result.columns, pairs)
    view["pairs"] = pairs
    view["tables"] = [pair_table(pairs, tau=False, local=True)]
    return view


def bounds_view(result) -> dict:
    """The page of a private bounds release: the statement and a table of bounds."""
    rows = []
    for column in result.bounds:
        status = ("unresolved (fallback)" if column in result.unresolved else
                  "refined" if column in result.refined else "first pass")
        use = result.domain_use.get(column)
        rows.append({"cells": [_cell(str(column)), _cell(result.formatted(column)),
                               _cell(status), _cell(use, "-" if use is None else f"{use:.1%}")],
                     "text": str(column).lower()})
    view = _base("Private bounds", f"bounds of {len(rows)} column(s)", result.seeded,
                 result.report())
    unit = ("one row" if result.privacy_unit is None else
            f"per {result.privacy_unit}, at most {result.max_rows_per_unit} rows each")
    view["facts"] = [("epsilon", f"{result.epsilon:g}"), ("delta", "0"),
                     ("measure", _measure(None)), ("privacy unit", unit),
                     ("mechanism", "noisy histograms (discrete Laplace), per column"),
                     ("noise scale", f"{result.noise_scale:.4g} counts"),
                     ("ledger charge", str(result.charge_id))]
    neighbour = ("replacing any one row" if result.privacy_unit is None else
                 f"adding or removing one {result.privacy_unit}")
    view["guarantee"] = [
        f"This release is {result.epsilon:g}-differentially private with respect to "
        f"{neighbour} (epsilon {result.epsilon_per_column:.4g} per column).",
        _one_person(result.epsilon, 0.0, result.privacy_unit)]
    view["steps"] = [{"name": f"bounds of {column}",
                      "part": f"epsilon {result.epsilon_per_column:.4g}"}
                     for column in result.bounds]
    view["tables"] = [{"id": "bounds", "caption": "bounds released privately", "noun": "columns",
                       "columns": [{"label": "column", "type": "text"},
                                   {"label": "bounds", "type": "text"},
                                   {"label": "how", "type": "text"},
                                   {"label": "share of public domain", "type": "number"}],
                       "rows": rows}]
    return view


def categories_view(result) -> dict:
    """The page of privately chosen categories: the statement and the lists."""
    rows = [{"cells": [_cell(str(column)), _cell(", ".join(map(str, kept)) or "(none)"),
                       _cell(len(kept)), _cell(result.details.get(column, ""))],
             "text": str(column).lower()} for column, kept in result.categories.items()]
    view = _base("Private categories", f"categories of {len(rows)} column(s)", False,
                 result.report())
    view["facts"] = [("epsilon", f"{result.epsilon:g}"), ("delta", f"{result.delta:g}"),
                     ("measure", _measure(result.rho)), ("privacy unit", "one row"),
                     ("mechanism", "noisy counts and a threshold, per column"),
                     ("epsilon per column", f"{result.eps_column:.4g}"),
                     ("ledger charge", str(result.charge_id))]
    view["guarantee"] = [result.statement, _one_person(result.epsilon, result.delta, None)]
    view["steps"] = [{"name": f"categories of {column}",
                      "part": f"epsilon {result.eps_column:.4g}"}
                     for column in result.categories]
    view["tables"] = [{"id": "categories", "caption": "categories kept (public from now on)",
                       "noun": "columns",
                       "columns": [{"label": "column", "type": "text"},
                                   {"label": "kept", "type": "text"},
                                   {"label": "how many", "type": "number"},
                                   {"label": "how chosen", "type": "text"}],
                       "rows": rows}]
    return view


def causal_view(graph, report: str | None = None) -> dict:
    """The page of a causal graph: the CPDAG drawn on a circle (edge widths by
    their released statistic, separating sets on hover), the statement, the
    budget's parts and the tables of edges and separating sets. ``report``: the
    report text when the graph came back from a journal (its parts are in it)."""
    p = graph.privacy
    columns = [str(c) for c in graph.columns]
    where = {c: k for k, c in enumerate(graph.columns)}
    edges, edge_rows = [], []
    for row in graph.edges.itertuples(index=False):
        s = float(row.statistic)
        mark = "->" if row.directed else "--"
        title = f"{row.source} {mark} {row.target}: statistic {_num(s, 4)}"
        edges.append((where[row.source], where[row.target], bool(row.directed), s, title))
        edge_rows.append({"cells": [_cell(str(row.source)), _cell(mark),
                                    _cell(str(row.target)), _cell(s, _num(s, 4))],
                          "text": f"{row.source} {row.target}".lower()})
    separated, sep_rows = [], []
    for (a, b), given in graph.separating_sets.items():
        names = ", ".join(map(str, given)) or "nothing"
        title = f"{a} and {b} separated given {{{names}}}"
        separated.append((where[a], where[b], title))
        sep_rows.append({"cells": [_cell(str(a)), _cell(str(b)), _cell(names)],
                         "text": f"{a} {b} {names}".lower()})
    text = report if report is not None else str(p)
    view = _base("Private causal graph" if p.private else "Causal graph (NOT PRIVATE: exact)",
                 f"CPDAG of {len(columns)} columns, {len(edges)} edges "
                 f"({sum(e[2] for e in edges)} directed)", False, text)
    if not p.private:
        view["seeded"] = True
    view["graph"] = svg.graph(columns, edges, separated)
    view["facts"] = [("epsilon", f"{p.epsilon:g}"), ("delta", f"{p.delta:g}"),
                     ("measure", _measure(None) if not p.delta else
                      "zero-concentrated DP (stated as (epsilon, delta))"),
                     ("privacy unit", "one row"),
                     ("mechanism", f"PC with noisy {p.test!r} tests (alpha {p.alpha:g})"),
                     ("noise scale", ", ".join(f"{scale:.4g}" for *_, scale in p.parts) or
                      "see the report"),
                     ("rows (n)", str(p.rows)), ("bins", str(p.bins)),
                     ("conditioning on at most", f"{p.max_condition_size} columns")]
    statement = p.statement or next((line for line in text.splitlines()
                                     if line.startswith("This release is")), "")
    view["guarantee"] = [g for g in (statement, _one_person(p.epsilon, p.delta, None)
                                     if p.private else "") if g]
    view["steps"] = [{"name": name, "part": f"{amount}, noise scale {scale:.4g}"}
                     for name, amount, scale in p.parts]
    if not view["steps"]:  # a graph from a journal: the parts are in its report text
        for line in text.splitlines():
            if line.startswith("  level") and ": epsilon" in line:
                name, _, part = line.strip().partition(": ")
                view["steps"].append({"name": name, "part": part})
    view["sources"] = ["Bounds and categories of every column are public (given)."]
    view["tables"] = [
        {"id": "edges", "caption": "edges (statistic: the noisy value of the last decision)",
         "noun": "edges",
         "columns": [{"label": "source", "type": "text"}, {"label": "edge", "type": "text"},
                     {"label": "target", "type": "text"},
                     {"label": "statistic", "type": "number"}], "rows": edge_rows},
        {"id": "sepsets", "caption": "separating sets of the pairs without an edge",
         "noun": "pairs",
         "columns": [{"label": "a", "type": "text"}, {"label": "b", "type": "text"},
                     {"label": "separating set", "type": "text"}], "rows": sep_rows}]
    return view


def rows_view(table, report: str | None = None, title: str | None = None) -> dict:
    """The page of a delivered run, from its released rows alone (a run's file or
    ``results.csv``: ``x, y, mic, ci95, within_noise`` and the run's columns) and,
    when present, its report text."""
    import pandas as pd

    first = table.iloc[0] if len(table) else pd.Series(dtype=object)
    pairs = []
    for row in table.itertuples(index=False):
        row = row._asdict()
        mic, ci = float(row["mic"]), float(row["ci95"])
        within = row.get("within_noise")
        pair = {"x": str(row["x"]), "y": str(row["y"]), "mic": mic, "ci95": ci,
                "within": bool(within) if within is not None and within == within
                else bool(ci == ci and abs(mic) <= ci)}
        if "tau_a" in row:
            t = float(row["tau_a"])
            tci = float(row.get("tau_a_ci95", math.nan))
            pair.update(tau_a=t, tau_ci95=tci, tau_within=bool(
                row.get("tau_a_within_noise", t == t and abs(t) <= tci)))
        pairs.append(pair)
    columns = list(dict.fromkeys([p["x"] for p in pairs] + [p["y"] for p in pairs]))
    epsilon = float(first.get("release_epsilon", math.nan))
    delta = float(first.get("release_delta", 0.0) or 0.0)
    unit_name = first.get("privacy_unit")
    unit_name = unit_name if isinstance(unit_name, str) and unit_name else None
    text = report or ""
    seeded = text.startswith("NOT PRIVATE")
    view = _base(title or "Private MIC release",
                 f"private MIC of {len(pairs)} pairs of {len(columns)} columns", seeded,
                 text or _rows_report(first, len(pairs)))
    cost_unit = str(first.get("cost_unit", ""))
    measure = ("pure epsilon-differential privacy" if cost_unit == "epsilon" else
               "zero-concentrated DP (stated as (epsilon, delta))" if cost_unit else "-")
    unit = ("one row" if unit_name is None else
            f"per {unit_name}, at most {first.get('max_rows_per_unit')} rows each")
    view["facts"] = [("epsilon", f"{epsilon:g}"), ("delta", f"{delta:g}"),
                     ("measure", measure), ("privacy unit", unit),
                     ("mechanism", f"{first.get('mechanism', '-')} ({first.get('statistic', '-')}"
                                   f", B = {first.get('B', '-')}, c = {first.get('c', '-')})"),
                     ("noise scale", f"{float(first.get('noise_scale', math.nan)):.4g} per "
                                     "value"),
                     ("noise, 95%", f"+/-{float(first.get('ci95', math.nan)):.4g}"),
                     ("rows (n)", str(first.get("n", "-")))]
    if "charge_id" in first:
        view["facts"].append(("ledger charge", str(first["charge_id"])))
    lines = text.splitlines()
    statement = next((line for line in lines if line.startswith("This release is")), None)
    if statement is None and epsilon == epsilon:
        statement = _rows_statement(first, epsilon, delta, len(pairs))
    view["guarantee"] = [g for g in (statement, _one_person(epsilon, delta, unit_name)
                                     if epsilon == epsilon else "") if g]
    view["guarantee"] += [line for line in lines if line.startswith(("Privacy unit:",
                                                                     "Noise:"))]
    budget = next((line for line in lines if line.startswith("Budget:")), "")
    if "; " in budget and " in total; " in budget:
        view["steps"] = _parts(budget.split(" in total; ", 1)[1].rstrip("."))
    else:
        view["steps"] = [{"name": "release", "part": f"{first.get('mechanism', '-')}: the "
                                                     f"whole budget (epsilon {epsilon:g})"}]
    view["sources"] = [line for line in lines if line.startswith(
        ("Selection:", "Private bounds used:", "Categories chosen privately",
         "Public bounds", "Bounds check", "Unresolved bounds"))]
    if not view["sources"] and "x_lo" in table.columns:
        view["sources"] = ["Bounds of each pair: the output's x_lo, x_hi, y_lo, y_hi."]
    view["map"] = _pairs_map(columns, pairs)
    view["pairs"] = pairs
    view["tables"] = [pair_table(pairs, tau=any("tau_a" in x for x in pairs))]
    return view


def _rows_statement(first, epsilon: float, delta: float, pairs: int) -> str:
    """The guarantee of a run's rows in words (the privacy statement of its cost)."""
    from dpmic_dask.privacy.costs import PrivacyCost
    from dpmic_dask.privacy.statement import privacy_statement

    rho = None
    if str(first.get("cost_unit", "epsilon")) != "epsilon":
        rho = float(first.get("value_cost", math.nan)) * max(pairs, 1)
    try:
        cost = PrivacyCost(epsilon, delta, rho if rho and rho == rho else None)
    except Exception:  # noqa: BLE001 - rows that do not describe a valid cost
        return ""
    return privacy_statement(cost, max(pairs, 1))


def _rows_report(first, pairs: int) -> str:
    """A short plain-text account of a run's rows (no report text was kept)."""
    fields = ("mechanism", "statistic", "release_epsilon", "release_delta", "noise_scale",
              "ci95", "n", "B", "c", "charge_id")
    return "\n".join([f"{pairs} released pairs; the run's rows say:"]
                     + [f"  {name}: {first[name]}" for name in fields if name in first])


__all__ = ["bounds_view", "categories_view", "causal_view", "local_view", "pair_table",
           "pairwise_view", "rows_view"]
