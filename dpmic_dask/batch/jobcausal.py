"""The ``[causal]`` section of a job file: private causal discovery in a batch run.

A job with ``[causal]`` releases a CPDAG of its ``[columns]``
(:func:`dpmic_dask.causal.causal_graph`) instead of pairwise values. It goes
through the same run as every batch release (:mod:`dpmic_dask.batch.runner`):
the same checks before any data is read, one charge on the run's
:class:`~dpmic_dask.batch.journal.JournaledRun`, committed together with the
released graph (a journal payload of kind ``"causal"``), then a delivery from
the journal -- a retry of a charged run id writes the kept graph again and
charges nothing.

Example::

    [causal]
    alpha = 0.05               # level of each independence test
    max_condition_size = 2     # largest conditioning set (levels paid for: 0 .. 2)
    bins = 5                   # bins per bounded column
    test = "auto"              # from the column kinds (docs/causal.md): "copula", "chisq", "tau"
    select_share = 0.25        # share of each level from 1 on choosing separating sets

The output is a folder (``output.path``); a run writes
``run-<run id>--<job>/`` in it with ``edges.csv``, ``separating_sets.json``,
``graph.dot``, ``report.txt``, ``report.html`` (the page of the graph, see
:mod:`dpmic_dask.batch.runpage`) and, when matplotlib is installed, ``graph.png``.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpmic_dask.batch.jobfile import JobError
from dpmic_dask.batch.outputnames import Gap, run_file, shown, undeliverable
from dpmic_dask.causal.copulaunit import check_unit_arguments
from dpmic_dask.causal.request import (
    check_request,
    check_shares,
    seconds_bounds,
    seconds_schema,
    time_kinds,
)
from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.errors import InvalidParameterError, LedgerError
from dpmic_dask.privacy.conversion import check_delta, check_epsilon
from dpmic_dask.privacy.costs import measure_for
from dpmic_dask.release.htmlreport import causal_view, write_page

#: Keys of ``[causal]`` (and the defaults of :func:`dpmic_dask.causal.causal_graph`).
CAUSAL_DEFAULTS: dict[str, Any] = {"alpha": 0.05, "max_condition_size": 2, "bins": 5,
                                   "test": "auto", "select_share": 0.25}
#: The files a causal run writes (``graph.png`` only with matplotlib).
CAUSAL_FILES = ("edges.csv", "separating_sets.json", "graph.dot", "report.txt")
PAYLOAD_KIND = "causal"


def parse_causal(section: dict, src: str) -> dict:
    """The ``[causal]`` section's options with their defaults (types only; values
    are checked by the library's own checks, :func:`check_causal_job`)."""
    kinds: dict[str, tuple[Any, str]] = {"alpha": ((int, float), "a number in (0, 1)"),
             "max_condition_size": (int, "an integer in [0, 8]"),
             "bins": (int, "an integer in [2, 16]"),
             "test": (str, 'one of "auto", "copula", "chisq", "g", "tau"'),
             "select_share": ((int, float), "a number in (0, 1)")}
    options = dict(CAUSAL_DEFAULTS)
    for key, value in section.items():
        kind, what = kinds[key]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise JobError(f"{src}: causal.{key} must be {what}")
        options[key] = value
    return options


def _refuse_with_causal(job) -> None:
    """Job settings a causal release does not take (one line each)."""
    if job.select_rule is not None:
        raise InvalidParameterError("[causal] and [select] cannot be combined: a job "
                                    "releases either a causal graph or pairwise values")
    private = [c for c, b in job.bounds.items()
               if b == "private" or (isinstance(b, dict) and not isinstance(b["categories"], list))]
    if private:
        raise InvalidParameterError(
            f"with [causal], columns need public bounds or public categories: "
            f"{private[0]!r} asks for private ones")
    unsupported = [key for key, value, default in (
        ("mechanism", job.mechanism, "auto"), ("nulls", job.nulls, "raise"),
        ("B", job.B, None), ("c", job.c, None), ("bounds_share", job.bounds_share, None),
        ("min_rows", job.min_rows, None), ("statistics", tuple(job.statistics), ("mic",)))
        if value != default]
    if unsupported:
        raise InvalidParameterError(
            f"privacy.{unsupported[0]} does not apply to [causal] (the causal release has "
            "its own test and refuses missing values)")
    cast = [c for c, k in job.kinds.items() if k.get("kind") not in ("number", "boolean")]
    if cast:
        raise InvalidParameterError(
            f"with [causal], columns must be numbers, booleans or categories: "
            f"{cast[0]!r} is a {job.kinds[cast[0]]['kind']}")
    if not job.output_path:
        raise InvalidParameterError("[causal] writes files: output.path (a folder) is needed")


def causal_arguments(job) -> dict:
    """The keyword arguments of :func:`~dpmic_dask.causal.causal_graph` for ``job``."""
    bounds = {c: b for c, b in job.bounds.items() if not isinstance(b, dict)}
    categories = {c: b["categories"] for c, b in job.bounds.items() if isinstance(b, dict)}
    unit = {} if job.privacy_unit is None else {
        "privacy_unit": list(job.privacy_unit), "max_rows_per_unit": job.max_rows_per_unit}
    return {"delta": job.delta, "columns": list(job.bounds), "bounds": bounds,
            "categories": categories, **unit, **job.causal}


@dataclass(frozen=True)
class CausalPlan:
    """What a ``[causal]`` job releases (checked, nothing read) and its one charge."""

    request: Any
    cost: Any


def causal_plan(job, schema) -> CausalPlan:
    """Every check :func:`~dpmic_dask.causal.causal_graph` makes before reading data,
    on ``schema``; the cost of its one charge."""
    _refuse_with_causal(job)
    eps, delta = check_epsilon(job.eps), check_delta(job.delta)
    args = causal_arguments(job)
    try:
        kinds = time_kinds(schema, args["bounds"])  # read as seconds, as the release does
        request = check_request(seconds_schema(schema, kinds), columns=args["columns"],
                                alpha=args["alpha"],
                                max_condition_size=args["max_condition_size"],
                                bounds=seconds_bounds(args["bounds"], kinds),
                                categories=args["categories"],
                                bins=args["bins"], test=args["test"],
                                per_unit=args.get("privacy_unit") is not None)
        check_shares(None, request.levels, args["select_share"])
        check_unit_arguments(schema, request, args.get("privacy_unit"),
                             args.get("max_rows_per_unit"), None)
    except InvalidParameterError as exc:
        message = str(exc)
        if message.startswith(tuple(CAUSAL_DEFAULTS)):  # a [causal] key: spell it so
            raise InvalidParameterError(f"causal.{message}") from None
        raise
    return CausalPlan(request, measure_for(delta).total(eps, delta))


#: What each test releases, for a causal plan's lines.
_RELEASED = {
    "copula": "one noisy Kendall tau matrix of the columns (bins at released quantiles; "
              "with too few rows, sums of signs at released medians); every test of the "
              "search is post-processing",
    "chisq": "each level's joint tables, once, with noise on every count; every test of "
             "the search is post-processing",
    "tau": "one noisy decision per possible edge at each level (each level paid for its "
           "worst case) and noisy choices of separating sets",
    "g": "one noisy decision per possible edge at each level (each level paid for its "
         "worst case) and noisy choices of separating sets",
}


def causal_plan_lines(plan: CausalPlan, job) -> list[str]:
    """What a ``[causal]`` job will release, in words (``--dry-run``, ``validate
    --schema``): the test, its one charge, what is released, each column's public
    bounds or categories. Nothing read but the schema, nothing charged."""
    request = plan.request
    lines = [f"Causal plan: {len(request.codings)} columns, test {request.test!r} (alpha "
             f"{request.alpha:g}, conditioning on at most {request.max_condition_size} "
             f"column{'s' if request.max_condition_size != 1 else ''}); one charge of "
             f"epsilon {plan.cost.epsilon:g}"
             + (f", delta {plan.cost.delta:g}" if plan.cost.delta else "")
             + f" ({plan.cost.describe()})."]
    unit = ", ".join(map(str, job.privacy_unit or ()))
    lines.append(f"Privacy unit: per {unit}, at most {job.max_rows_per_unit} rows each."
                 if unit else "Privacy unit: one row.")
    released = _RELEASED.get(request.test, "noisy tests")
    if unit and request.test == "copula":  # per unit never bins (docs/causal.md)
        released = ("a noisy row count, then one noisy vector of sums of signs at "
                    "released medians (no bins) on the kept rows; every test of the "
                    "search is post-processing")
    lines.append(f"Released: {released}.")
    lines.append("Columns:")
    width = max(len(str(c.name)) for c in request.codings)
    # the copula test places its own bins (at released quantiles) or none
    binned = "" if request.test == "copula" else f", {request.bins} bins"
    for coding in request.codings:
        k = len(coding.categories or ())
        said = (f"{k} public categor{'y' if k == 1 else 'ies'} (others: 'other')"
                if coding.categories is not None else
                f"public bounds [{coding.bounds[0]:g}, {coding.bounds[1]:g}]{binned}")
        lines.append(f"  {str(coding.name):<{width}}  {said}")
    return lines


# ---------------------------------------------------------------- journal payload


def encode_graph(graph, *, run_id: str, job) -> str:
    """The released graph as journal text (post-processing of the release only:
    the CPDAG, separating sets, noisy statistics and the report)."""
    report = graph.report()
    p = len(graph.columns)
    where = {c: k for k, c in enumerate(graph.columns)}
    return json.dumps({
        "kind": PAYLOAD_KIND, "run_id": run_id, "job": job.name, "dataset": job.dataset,
        "nodes": [str(c) for c in graph.columns],
        "graph": [[bool(graph.graph[i, j]) for j in range(p)] for i in range(p)],
        "separating_sets": [[int(i), int(j), [int(k) for k in s]]
                            for (i, j), s in sorted(graph.separating_pairs.items())],
        "statistic": [[int(i), int(j), _finite(v)]
                      for (i, j), v in sorted(graph.statistic.items())],
        "separation_statistic": [[where[a], where[b], _finite(v)]
                                 for (a, b), v in graph.separation_statistic.items()],
        "report": str(report), "test": report.test, "alpha": report.alpha,
        "rows": report.rows, "bins": report.bins,
        "max_condition_size": report.max_condition_size,
        "epsilon": report.epsilon, "delta": report.delta, "unit": report.unit,
        "max_rows_per_unit": report.max_rows_per_unit, "rows_noisy": report.rows_noisy,
    })


def _finite(value) -> float | None:
    """A statistic for JSON: ``None`` when missing or not finite."""
    return None if value is None or not math.isfinite(value) else float(value)


def decode_graph(text: str):
    """``(CausalGraph, report text)`` from :func:`encode_graph`'s text."""
    try:
        data = json.loads(text)
        report = CausalReport(True, data["test"], data["alpha"], data["rows"], data["bins"],
                              data["max_condition_size"], epsilon=data["epsilon"],
                              delta=data["delta"], unit=data.get("unit"),
                              max_rows_per_unit=data.get("max_rows_per_unit"),
                              rows_noisy=data.get("rows_noisy"))
        graph = CausalGraph(
            tuple(data["nodes"]), np.array(data["graph"], dtype=bool).reshape(
                len(data["nodes"]), len(data["nodes"])),
            {(i, j): tuple(s) for i, j, s in data["separating_sets"]},
            {(i, j): math.nan if v is None else v for i, j, v in data["statistic"]}, report,
            {"removed": {(i, j): v for i, j, v in data.get("separation_statistic", [])
                         if v is not None}})
        return graph, data["report"]
    except Exception:  # noqa: BLE001 - any unparsable journal entry
        raise LedgerError("the ledger is corrupt: a journaled causal graph does not parse "
                          "(restore the ledger from a backup)") from None


# ---------------------------------------------------------------- delivery


def _write_files(folder: Path, graph, report: str, ledger: dict | None = None) -> None:
    # names quoted: one holding a carriage return would otherwise end its line
    graph.edges.to_csv(folder / "edges.csv", index=False, quoting=csv.QUOTE_NONNUMERIC)
    removed = graph.separation_statistic
    sets = [{"pair": [a, b], "separating_set": list(s), "statistic": _finite(removed.get((a, b)))}
            for (a, b), s in graph.separating_sets.items()]
    (folder / "separating_sets.json").write_text(json.dumps(sets, indent=2) + "\n",
                                                 encoding="utf-8")
    (folder / "graph.dot").write_text(graph.to_dot() + "\n", encoding="utf-8")
    (folder / "report.txt").write_text(report + "\n", encoding="utf-8")
    view = causal_view(graph, report)
    view["ledger"] = ledger  # the dataset's ledger history up to this run's charge
    write_page(view, folder / "report.html")
    try:
        from matplotlib.figure import Figure  # no pyplot state, no display needed
    except ImportError:
        return
    figure = Figure(figsize=(6, 6))
    graph.plot(ax=figure.add_subplot())
    figure.savefig(folder / "graph.png", dpi=120, bbox_inches="tight")


def deliver_graph(job, payload: str, run_id: str, ledger: dict | None = None) -> str:
    """Write a run's journaled graph into its folder (``run-<id>--<job>/`` in the
    output folder) atomically: written under a hidden name, then renamed into
    place (an earlier delivery of the same run is replaced). ``ledger``: the
    history section of its page
    (:func:`~dpmic_dask.batch.pageledger.history_section`)."""
    graph, report = decode_graph(payload)
    final = run_file(job, run_id)
    tmp = final.with_name(f".{final.name}.{uuid.uuid4().hex[:12]}.tmp")
    old = final.with_name(f".{final.name}.{uuid.uuid4().hex[:12]}.old")
    try:
        tmp.mkdir()
        _write_files(tmp, graph, report, ledger)
        if final.exists():
            os.replace(final, old)
        os.replace(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise undeliverable(job, run_id, exc.strerror or type(exc).__name__) from None
    finally:
        shutil.rmtree(old, ignore_errors=True)
    return str(final)


def graph_gap(job, run_id: str):
    """What of a delivered graph's folder is missing now
    (a :class:`~dpmic_dask.batch.joboutput.Gap`), or ``None``: the folder and
    each of its files, its page and (where matplotlib is installed) ``graph.png``,
    none of them empty (every file a delivery writes holds something)."""
    folder = run_file(job, run_id)
    name = shown(os.path.abspath(folder))
    if not folder.is_dir():
        return Gap(f"its folder {name} is missing")
    wanted = [*CAUSAL_FILES, "report.html"]
    if importlib.util.find_spec("matplotlib") is not None:
        wanted.append("graph.png")
    absent = [file for file in wanted
              if not (folder / file).is_file() or (folder / file).stat().st_size == 0]
    if not absent:
        return None
    if len(absent) == 1:
        return Gap(f"{absent[0]} is missing or empty in its folder {name}")
    more = len(absent) - 1
    return Gap(f"{absent[0]} and {more} more file{'s' if more > 1 else ''} are missing or "
               f"empty in its folder {name}")


def released_sentence(graph, run_id: str, where: str) -> str:
    """``dpmic run``'s line about a released graph (public values only)."""
    edges = graph.edges
    report = graph.report()
    return (f"run {run_id}: released a causal graph of {len(graph.columns)} columns "
            f"({len(edges)} edges, {int(edges.directed.sum())} directed; "
            f"causal-pc-{report.test}, eps={report.epsilon:g}) to {where}")
