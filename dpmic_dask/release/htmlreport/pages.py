"""The pages of results other than pairs of columns: private bounds, private
categories, causal graphs, and a run's stored rows (each a dict the template
renders; shared pieces in :mod:`dpmic_dask.release.htmlreport.views`)."""

from __future__ import annotations

import math
import re

import pandas as pd

import dpmic_dask.release.htmlreport.svg as svg
from dpmic_dask.errors import NOISY_CI95
from dpmic_dask.privacy.conversion import rho_from_eps_delta
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.htmlreport.views import (
    _base,
    _cell,
    _measure,
    _num,
    _one_person,
    _pairs_map,
    _parts,
    pair_table,
    plain_value,
)


def bounds_view(result) -> dict:
    """The page of a private bounds release: the statement and a table of bounds."""
    rows = []
    for column in result.bounds:
        status = ("unresolved (fallback)" if column in result.unresolved else
                  "refined" if column in result.refined else "first pass")
        if column in result.unseen:
            status += "; may leave out a tail"
        if column in result.infinite:
            status += (f"; about {result.infinite[column]:,.0f} infinite values (or beyond "
                       "+-3e307) clamped")
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
    def listed(kept) -> str:  # quoted values: "a, b" is one category
        return ", ".join(repr(plain_value(v)) for v in kept) or "(none)"

    rows = [{"cells": [_cell(str(column)), _cell(listed(kept)),
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
    removed = graph.separation_statistic
    for (a, b), given in graph.separating_sets.items():
        names = ", ".join(map(str, given)) or "nothing"
        s = float(removed.get((a, b), math.nan))  # NaN: delivered before it was kept
        title = f"{a} and {b} separated given {{{names}}}" + (
            f": statistic {_num(s, 4)}" if s == s else "")
        separated.append((where[a], where[b], title))
        sep_rows.append({"cells": [_cell(str(a)), _cell(str(b)), _cell(names),
                                   _cell(s, _num(s, 4) if s == s else "-")],
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
                     ("privacy unit", "one row" if p.unit is None else
                      f"per {p.unit}, at most {p.max_rows_per_unit} rows each"),
                     ("mechanism", f"PC with noisy {p.test!r} tests (alpha {p.alpha:g})"),
                     ("noise scale", ", ".join(f"{scale:.4g}" for *_, scale in p.parts
                                               if scale == scale) or "see the report"),
                     ("rows (n)", str(p.rows)), ("bins", str(p.bins)),
                     ("conditioning on at most", f"{p.max_condition_size} columns")]
    statement = p.statement or next((line for line in text.splitlines()
                                     if line.startswith("This release is")), "")
    view["guarantee"] = [g for g in (statement, _one_person(p.epsilon, p.delta, p.unit)
                                     if p.private else "") if g]
    view["steps"] = [{"name": name, "part": amount + (f", noise scale {scale:.4g}"
                                                      if scale == scale else "")}
                     for name, amount, scale in p.parts]
    if not view["steps"]:  # a graph from a journal: the parts are in its report text
        view["steps"] = _text_parts(text)
    view["sources"] = ["Bounds and categories of every column are public (given)."]
    view["tables"] = [
        {"id": "edges", "caption": "edges (statistic: the noisy value of the last decision)",
         "noun": "edges",
         "columns": [{"label": "source", "type": "text"}, {"label": "edge", "type": "text"},
                     {"label": "target", "type": "text"},
                     {"label": "statistic", "type": "number"}], "rows": edge_rows},
        {"id": "sepsets", "caption": "separating sets of the pairs without an edge "
                                     "(statistic: the value of the test that removed it)",
         "noun": "pairs",
         "columns": [{"label": "a", "type": "text"}, {"label": "b", "type": "text"},
                     {"label": "separating set", "type": "text"},
                     {"label": "statistic", "type": "number"}], "rows": sep_rows}]
    return view


def rows_view(table, report: str | None = None, title: str | None = None) -> dict:
    """The page of a delivered run, from its released rows alone (a run's file or
    ``results.csv``: ``x, y, mic, ci95, within_noise`` and the run's columns) and,
    when present, its report text."""
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
                 text or _rows_report(first, len(pairs), sum(bool(p["within"]) for p in pairs)))
    cost_unit = str(first.get("cost_unit", ""))
    measure = "-"
    if cost_unit == "epsilon":
        measure = "pure epsilon-differential privacy"
    elif cost_unit:  # the whole release's rho, as the live page states it
        try:
            measure = (f"zero-concentrated DP: rho = {rho_from_eps_delta(epsilon, delta):.4g} "
                       "(stated as (epsilon, delta))")
        except Exception:  # noqa: BLE001 - rows that do not describe a valid cost
            measure = "zero-concentrated DP (stated as (epsilon, delta))"
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
    lines = text.splitlines()
    charged = (str(first["charge_id"]) if "charge_id" in first else
               next((line.split(": ", 1)[1].rstrip(".") for line in lines
                     if line.startswith("Ledger charge: ")), None))
    if charged:
        view["facts"].append(("ledger charge", charged))
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
         "Public bounds", "Bounds check", "Unresolved bounds", "Rows piled at an end",
         "Fill values outside", "Bounds that may leave out", "Infinite values",
         "About constant", "column ", "No checked", "No other checked"))]
    private = any(line.startswith(("Private bounds used:", "Categories chosen privately"))
                  for line in lines)
    said = any(line.startswith("Public bounds and lists used:") for line in lines)
    if text and not private and not said and "x_lo" not in table.columns:
        view["sources"].append("Public bounds or categories (given, not released): "
                               f"{', '.join(_released_order(lines, columns))}.")
    if not view["sources"] and "x_lo" in table.columns:
        view["sources"] = ["Bounds of each pair: the output's x_lo, x_hi, y_lo, y_hi."]
        if "x_bounds" in table.columns:  # what is wrong with private bounds, per column
            notes = dict(zip(table.x, table.x_bounds)) | dict(zip(table.y, table.y_bounds))
            view["sources"] += [f"Bounds of {c}: {note}." for c, note in notes.items()
                                if str(note).startswith("private: ")]
    view["map"] = _pairs_map(columns, pairs)
    view["pairs"] = pairs
    view["tables"] = [pair_table(pairs, tau=any("tau_a" in x for x in pairs))]
    return view


def _released_order(lines, columns) -> list:
    """``columns`` in the order the report's first line lists them (the release's
    own), where it names the same columns; else as they are."""
    for line in lines:
        found = re.search(r" columns \((.*)\), n = ", line) if line.startswith("Released:") \
            else None
        if found and sorted(found.group(1).split(", ")) == sorted(columns):
            return found.group(1).split(", ")
    return list(columns)


#: The line of a causal report after which its parts are listed, one a line.
_PARTS_HEAD = "budget split from public quantities, charged once before any noise:"


def _text_parts(text: str) -> list[dict]:
    """The parts a causal report's text lists under :data:`_PARTS_HEAD` (every
    test: levels, medians, sign sums, a row count; epsilon or rho)."""
    steps: list[dict] = []
    lines = text.splitlines()
    if _PARTS_HEAD not in lines:
        return steps
    for line in lines[lines.index(_PARTS_HEAD) + 1:]:
        if not line.startswith("  ") or not (": epsilon" in line or ": rho" in line):
            break
        # the amount is after the last ": " (a part's name may say "not run: ...")
        name, _, part = line.strip().rpartition(": ")
        steps.append({"name": name, "part": part})
    return steps


def _rows_statement(first, epsilon: float, delta: float, pairs: int) -> str:
    """The guarantee of a run's rows in words (the privacy statement of its cost)."""
    try:
        # the whole release's rho: value_cost is the values' own part (a selection
        # or a step in front of them spent the rest), so not value_cost x pairs
        rho = (rho_from_eps_delta(epsilon, delta)
               if str(first.get("cost_unit", "epsilon")) != "epsilon" else None)
        cost = PrivacyCost(epsilon, delta, rho)
    except Exception:  # noqa: BLE001 - rows that do not describe a valid cost
        return ""
    return privacy_statement(cost, max(pairs, 1))


def _rows_report(first, pairs: int, within: int = 0) -> str:
    """A short plain-text account of a run's rows (no report text was kept): what
    they say, what can be read off them (the noise), and that the release's other
    notes are not among them."""
    fields = ("mechanism", "statistic", "release_epsilon", "release_delta", "noise_scale",
              "ci95", "n", "B", "c", "charge_id")
    lines = [f"{pairs} released pairs; the run's rows say:"]
    lines += [f"  {name}: {first[name]}" for name in fields if name in first]
    ci95 = float(first.get("ci95", math.nan))
    if ci95 == ci95 and ci95 > NOISY_CI95:
        lines.append(f"Noise: 95% of it lies within +/-{ci95:.3g} per value (above "
                     f"{NOISY_CI95}); {within} of {pairs} released values are within it "
                     "(within_noise), indistinguishable from 0.")
    lines.append("Rebuilt from the delivered rows alone: the release's other notes and "
                 "warnings (bounds, selection, checks) are not among them; the log of the "
                 "run that released it has them.")
    return "\n".join(lines)


__all__ = ["bounds_view", "categories_view", "causal_view", "rows_view"]
