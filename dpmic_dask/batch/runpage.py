"""The HTML page of a batch run (``report.html``), written with the run's other
output and rebuilt later from the delivered files by ``dpmic report``.

Where the page goes:

* ``dpmic demo``: ``report.html`` in the ``--out`` folder, beside
  ``results.csv`` and ``report.txt``;
* a ``[causal]`` run: ``report.html`` in the run's folder, beside
  ``edges.csv``, ``separating_sets.json``, ``graph.dot`` and ``report.txt``;
* a pairwise run to an output folder: ``_pages/run-<run id>--<job>.html`` in the
  output folder, and the release's report text beside it (``.txt``), so that a
  page rebuilt from the run's file has the release's notes (a run to a SQL
  table writes no page). The folder's name starts
  with ``_``, which Parquet and Dask readers skip, so the output folder stays a
  dataset of the runs' files only.

What ``dpmic report PATH`` reads (only delivered files, never the data): a
folder with ``results.csv`` (the released rows: ``x, y, mic, ci95`` and
``within_noise``, and ``tau_a``... when released) and, if there, ``report.txt``;
a causal run's folder (``edges.csv``, ``separating_sets.json``, ``graph.dot``,
``report.txt``); a run's file ``run-*.parquet`` or ``run-*.csv``; or an output
folder, for each of its runs. A page built from a run's rows alone states the
guarantee from the rows' own columns (``release_epsilon``, ``release_delta``,
``cost_unit``, ``mechanism``...).

A job's page (a pairwise run's, or a causal run's folder ``run-<id>--<job>``)
also shows its dataset's ledger history up to the run's own charge
(:mod:`dpmic_dask.batch.pageledger`): the only thing ``dpmic report`` reads
besides the delivered files, from ``--ledger URL`` or the URL the page recorded
(without its password); when neither can be read, the section says the history
is not available.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from dpmic_dask.batch.pageledger import history_at, recorded
from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.errors import DPMICError, InvalidParameterError
from dpmic_dask.release.htmlreport import (
    causal_view,
    pairwise_view,
    rows_view,
    write_page,
    write_whole,
)

#: The page's name in a run's folder.
PAGE = "report.html"


#: The folder of a pairwise run's page inside its output folder (skipped by
#: Parquet and Dask readers, as every name starting with ``_`` is).
PAGES = "_pages"


def rows_page_path(rows_file: Path) -> Path:
    """The page of a pairwise run's file: the same name, ending ``.html``, in the
    output folder's :data:`PAGES` folder."""
    name = rows_file.name
    for suffix in (".parquet", ".csv"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return rows_file.parent / PAGES / (name + ".html")


def report_text_path(page: Path) -> Path:
    """Where a pairwise run's report text is kept: beside its page, ending ``.txt``."""
    return page.with_suffix(".txt")


def write_report_text(page: Path, text: str) -> Path:
    """Keep a pairwise run's report text beside its ``page`` (written whole)."""
    return write_whole(report_text_path(page), text + "\n")


def missing_parts(page: Path, report: str | None) -> list[str]:
    """What of a pairwise run's page is gone: ``"page"``, and ``"report text"``
    where there is a report to keep."""
    gone = [] if page.is_file() else ["page"]
    if report is not None and not report_text_path(page).is_file():
        gone.append("report text")
    return gone


def write_rows_page(rows: pd.DataFrame, path: Path, *, report: str | None = None,
                    title: str | None = None, ledger: dict | None = None) -> Path:
    """The page of a run's released rows (and its report text, when kept);
    ``ledger``: the dataset's ledger history section (:mod:`.pageledger`)."""
    view = rows_view(rows, report, title)
    view["ledger"] = ledger
    return write_page(view, path)


def write_result_page(result, path: Path, *, title: str | None = None,
                      ledger: dict | None = None) -> Path:
    """The page of a pairwise result at hand (the run that released it)."""
    view = pairwise_view(result)
    if title:
        view["title"] = title
    view["ledger"] = ledger
    return write_page(view, path)


# ---------------------------------------------------------------- dpmic report


def _read_rows(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.name.endswith(".parquet") else pd.read_csv(path)


def _own(path: Path) -> Path:
    """``path``, a file (or the folder of pages) of the run's own: a symbolic link
    there is refused, since its target's text would be shown on the page (a link
    planted in an output folder could show a file the folder's writer cannot read
    to whoever runs ``dpmic report``), or an old page's recorded ledger read."""
    if path.is_symlink():
        raise InvalidParameterError(
            f"{path}: a symbolic link; dpmic report reads only a run's own files, so "
            "that no other file is shown on its page (replace the link with the file)")
    return path


def _text(path: Path) -> str | None:
    return _own(path).read_text(encoding="utf-8").rstrip("\n") if path.is_file() else None


_HEADER = re.compile(r"causal graph \((?P<private>private|NOT PRIVATE: exact)\), test "
                     r"'(?P<test>\w+)', alpha (?P<alpha>[0-9.eE+-]+), (?P<rows>\d+) rows, "
                     r"(?P<bins>\d+) bins per bounded column, conditioning on at most "
                     r"(?P<size>\d+) columns")
_PURE = re.compile(r"This release is (?P<eps>[0-9.eE+-]+)-differentially private")
#: The report's line of a per-unit run (:meth:`CausalReport.lines`).
_UNIT = re.compile(r"^per (?P<unit>.+?): at most (?P<k>\d+) rows each; ", re.MULTILINE)
_NOISY_ROWS = re.compile(r"the bounded row count is private \(noisy (?P<rows>\d+)\)")
_APPROX = re.compile(r"This release is \((?P<eps>[0-9.eE+-]+), (?P<delta>[0-9.eE+-]+)\)-"
                     r"differentially private")


#: What :func:`~dpmic_dask.causal.result._dot` escaped besides itself and quotes.
_UNESCAPED = {"n": "\n", "r": "\r"}


def _dot_nodes(text: str) -> list[str]:
    """The node names of ``graph.dot`` (one ``"name";`` line each)."""
    names = []
    # lines end at "\n" only: a name may hold U+2028 or a form feed, which
    # str.splitlines would split on
    for line in text.split("\n"):
        found = re.fullmatch(r'\s*"((?:[^"\\]|\\.)*)";\r?', line)
        if found:
            names.append(re.sub(r"\\(.)", lambda m: _UNESCAPED.get(m.group(1), m.group(1)),
                                found.group(1)))
    return names


def causal_from_files(folder: Path) -> tuple[CausalGraph, str]:
    """A causal run's graph and report text, from its delivered files."""
    report = _text(folder / "report.txt") or ""
    nodes = _dot_nodes(_own(folder / "graph.dot").read_text(encoding="utf-8"))
    edges = pd.read_csv(_own(folder / "edges.csv"))
    sets = json.loads(_own(folder / "separating_sets.json").read_text(encoding="utf-8"))
    where = {name: k for k, name in enumerate(nodes)}
    for name in list(edges["source"]) + list(edges["target"]):
        where.setdefault(str(name), len(where))
    nodes = list(where)
    p = len(nodes)
    graph = np.zeros((p, p), dtype=bool)
    statistic = {}
    strengths = edges["statistic"].astype(float).tolist()
    for source, target, directed, strength in zip(edges["source"], edges["target"],
                                                  edges["directed"], strengths):
        a, b = where[str(source)], where[str(target)]
        graph[a, b] = True
        if str(directed).lower() != "true":
            graph[b, a] = True
        statistic[(min(a, b), max(a, b))] = strength
    separating, removed = {}, {}
    for item in sets:
        a, b = (where[str(n)] for n in item["pair"])
        separating[(min(a, b), max(a, b))] = tuple(where[str(n)] for n in item["separating_set"])
        if item.get("statistic") is not None:  # files written before it was delivered lack it
            removed[(min(a, b), max(a, b))] = float(item["statistic"])
    head = _HEADER.search(report)
    approx = _APPROX.search(report)
    stated = approx or _PURE.search(report)
    if head is None or stated is None:
        raise InvalidParameterError(
            f"{folder}: the run's report.txt is missing or does not state its test and "
            "guarantee, so a page could not say what was released; 'dpmic deliver JOB "
            "--run-id ID --to FOLDER' writes the run's files again from its journal")
    epsilon = float(stated.group("eps")) if stated else math.nan
    delta = float(approx.group("delta")) if approx else 0.0
    # per unit: the page states the guarantee per unit (as the report does), never
    # a row's (replacing a row costs twice a unit's epsilon)
    unit, noisy = _UNIT.search(report), _NOISY_ROWS.search(report)
    privacy = CausalReport(
        private=head is None or head.group("private") == "private",
        test=head.group("test") if head else "?", alpha=float(head.group("alpha")) if head
        else math.nan, rows=int(head.group("rows")) if head else 0,
        bins=int(head.group("bins")) if head else 0,
        max_condition_size=int(head.group("size")) if head else 0,
        epsilon=epsilon, delta=delta,
        unit=unit.group("unit") if unit else None,
        max_rows_per_unit=int(unit.group("k")) if unit else None,
        rows_noisy=int(noisy.group("rows")) if noisy else None)
    return (CausalGraph(tuple(nodes), graph, separating, statistic, privacy,
                        {"removed": removed}), report)


def _first(rows: pd.DataFrame, column: str):
    """The run's ``column`` (the same in each of its rows), or ``None``."""
    if column not in rows.columns or not len(rows):
        return None
    value = rows[column].iloc[0]
    return str(value) if isinstance(value, str) and value else None


def _run_of(name: str) -> tuple[str | None, str | None]:
    """The run id and job a run's file or folder is named after
    (``run-<run id>--<job>``, a file ending ``.parquet`` or ``.csv``)."""
    found = re.fullmatch(r"run-(.+?)--(.+?)(?:\.(?:parquet|csv))?", name)
    return (found.group(1), found.group(2)) if found else (None, None)


def rebuild_causal_page(folder: Path, ledger_url: str | None = None) -> Path:
    """The page of a causal run's folder. A job's folder (``run-<run id>--<job>``)
    gets its dataset's ledger history from ``ledger_url``, else from the ledger
    and dataset its page recorded before; a folder a job did not write gets a
    page without one."""
    graph, report = causal_from_files(folder)
    page = _own(folder / PAGE)
    before = recorded(page)
    run_id, job = _run_of(folder.name)
    view = causal_view(graph, report)
    if run_id or ledger_url or before:
        view["ledger"] = history_at(ledger_url or before.get("ledger"), before.get("dataset"),
                                    run_id=run_id, job=job)
        _matches_charge(folder, graph.privacy, view["ledger"].get("own_cost"))
    return write_page(view, page)


def _matches_charge(folder: Path, privacy, charged) -> None:
    """Refuse a page whose report text states another guarantee than the ledger's
    charge of the run (an edited report.txt: the page would say one epsilon in
    its guarantee and another in its ledger section)."""
    if charged is None:
        return
    close = (math.isclose(privacy.epsilon, charged.epsilon, rel_tol=1e-4)
             and math.isclose(privacy.delta, charged.delta, rel_tol=1e-4, abs_tol=1e-15))
    if not close:
        raise InvalidParameterError(
            f"{folder}: the run's report.txt states epsilon {privacy.epsilon:g}, delta "
            f"{privacy.delta:g}, but the ledger charged the run epsilon "
            f"{charged.epsilon:g}, delta {charged.delta:g}: the report text was changed; "
            "'dpmic deliver JOB --run-id ID --to FOLDER' writes the run's files again")


def rebuild_rows_page(path: Path, ledger_url: str | None = None) -> Path:
    """The page of a run's file, with the release's report text kept beside its
    page (when there) and its dataset's ledger history from ``ledger_url``, else
    from the ledger the page recorded before."""
    rows = _read_rows(path)
    page = rows_page_path(path)
    _own(page.parent)  # the folder of pages: read from, and written to
    before = recorded(_own(page))
    run_id, job = _run_of(path.name)
    dataset = _first(rows, "dataset") or before.get("dataset")
    history = history_at(ledger_url or before.get("ledger"), dataset,
                         charge_id=_first(rows, "charge_id"),
                         run_id=_first(rows, "run_id") or run_id, job=_first(rows, "job") or job)
    return write_rows_page(rows, page, title=f"Private MIC release: {path.name}",
                           ledger=history, report=_text(report_text_path(page)))


def _readable(path: Path, build, *args) -> Path:
    """``build(*args)``, with files that do not read back (damaged or edited: a
    missing column, text where a number was, bad JSON, not UTF-8) refused in one
    line naming ``path`` and the kind of failure, never a value."""
    try:
        return build(*args)
    except DPMICError:
        raise
    except (KeyError, IndexError, ValueError, TypeError, AttributeError, OSError,
            pd.errors.ParserError, pd.errors.EmptyDataError, pa.ArrowException) as exc:
        raise InvalidParameterError(
            f"{path}: cannot rebuild the run's page ({type(exc).__name__}): its files are "
            "damaged or were edited (deliver the run again to rewrite them), or the page "
            "cannot be written") from None


def rebuild(path, ledger_url: str | None = None) -> list[Path]:
    """``dpmic report PATH``: write the page of each run found at ``path`` from its
    delivered files; returns the pages written. A job's page (a pairwise run's
    file, a causal run's folder) shows its dataset's ledger history, read from
    ``ledger_url`` or the ledger its page recorded (else the section says the
    history is not available)."""
    path = Path(path)
    if path.is_file():
        _own(path)  # a run's file named directly: a link is refused as in its folder
        if not path.name.endswith((".parquet", ".csv")):
            raise InvalidParameterError(f"{path}: a run's page is built from its rows "
                                        "(a .parquet or .csv file) or a run's folder")
        return [_readable(path, rebuild_rows_page, path, ledger_url)]
    if not path.is_dir():
        raise InvalidParameterError(f"{path}: no such file or folder")
    if (path / "edges.csv").is_file() and (path / "graph.dot").is_file():
        return [_readable(path, rebuild_causal_page, path, ledger_url)]
    if (path / "results.csv").is_file():
        return [_readable(path, lambda: write_rows_page(
            pd.read_csv(_own(path / "results.csv")), path / PAGE,
            report=_text(path / "report.txt")))]
    written = []
    for item in sorted(path.glob("run-*")):
        _own(item)
        if item.is_dir() and (item / "edges.csv").is_file():
            written += rebuild(item, ledger_url)
        elif item.is_file() and item.name.endswith((".parquet", ".csv")):
            written += rebuild(item, ledger_url)
    if not written:
        raise InvalidParameterError(
            f"{path}: no delivered run found (results.csv, a causal run's edges.csv and "
            "graph.dot, or run-*.parquet / run-*.csv files)")
    return written


__all__ = ["PAGE", "causal_from_files", "rebuild", "rebuild_causal_page", "rebuild_rows_page",
           "missing_parts", "report_text_path", "rows_page_path", "write_report_text",
           "write_result_page", "write_rows_page"]
