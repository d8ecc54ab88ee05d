"""Results built by hand (no data, no noise drawn) for the tests of the HTML
pages, and the checks every page must pass: well-formed, self-contained."""

import re
from html.parser import HTMLParser

import numpy as np

from dpmic_dask.causal.result import CausalGraph, CausalReport
from dpmic_dask.privacy.accounting import Budget
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
from dpmic_dask.privacy.statement import privacy_statement
from dpmic_dask.release.report import PrivacyReport
from dpmic_dask.release.results import Companion, PairwiseResult

COLUMNS = ("age", "income", "height", "weight", 'odd "name" <b>&')


def pairwise_result(columns=COLUMNS, tau=True, ci95=0.15) -> PairwiseResult:
    pairs = tuple((a, b) for i, a in enumerate(columns) for b in columns[i + 1:])
    values = tuple(round(0.05 + 0.9 * ((7 * k) % 11) / 10, 4) for k in range(len(pairs)))
    report = PrivacyReport(
        mechanism="micr-lap", statistic="micr", epsilon=1.0, delta=0.0, rho=None,
        noise_scale=ci95 / np.log(20), ci95=ci95, sensitivity=0.01, n=5000, B=70.7, c=5,
        charge_id="charge-1", seeded=False,
        statement=privacy_statement(PrivacyCost(1.0), len(pairs)),
        released=len(pairs), candidates=len(pairs))
    companions = ()
    if tau:
        taus = tuple(round(-0.6 + 1.2 * ((3 * k) % 7) / 6, 4) for k in range(len(pairs)))
        companions = (Companion("tau", "tau-lap", taus, 0.02, 0.06, 0.001, PrivacyCost(0.5)),)
    return PairwiseResult(tuple(columns), pairs, values, report, companions)


def causal_graph() -> CausalGraph:
    columns = ("a", "b", "c", "d")
    graph = np.zeros((4, 4), dtype=bool)
    graph[0, 1] = graph[1, 0] = True  # a -- b
    graph[0, 2] = True  # a -> c
    graph[3, 2] = True  # d -> c
    report = CausalReport(
        True, "tau", 0.05, 2000, 5, 1, epsilon=2.0, delta=0.0,
        statement=privacy_statement(PrivacyCost(2.0), 1, detail="2 levels"),
        parts=(("level 0 decisions", "epsilon 1", 0.9), ("level 1 decisions", "epsilon 1", 1.8)))
    return CausalGraph(columns, graph, {(0, 3): (), (1, 2): (0,), (1, 3): ()},
                       {(0, 1): 12.5, (0, 2): 4.25, (2, 3): 7.0}, report,
                       {"removed": {(0, 3): 0.5, (1, 2): 1.25}})


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr"}


class Balance(HTMLParser):
    """Every element closed, in order (void elements excepted)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors = [], []

    def handle_starttag(self, tag, attrs):
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass  # <rect ... />: opened and closed

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_page(text: str) -> None:
    """Well-formed (tags balanced, one document) and self-contained (no address
    outside the page in any src, href, url() or import)."""
    parser = Balance()
    parser.feed(text)
    parser.close()
    assert parser.errors == [] and parser.stack == [], (parser.errors, parser.stack)
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//|file:)""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?(?!#)", text), "url() to anything but an inline id"
    assert "@import" not in text and "<link" not in text and "<iframe" not in text
    assert not re.search(r"https?://", text), "an address outside the page"
    assert "default-src 'none'" in text  # the page forbids loading anything


def ledger_with_charges(path, dataset="sales", epsilon=2.0, delta=1e-6):
    """A SQLite ledger at ``path`` holding a zCDP budget for ``dataset`` and three
    runs' charges (a pure one between two zCDP ones); returns its URL and the
    charges, oldest first."""
    url = f"sqlite:///{path}"
    ledger = SQLLedger(url)
    ledger.init(dataset, Budget(epsilon, delta))
    charges = [ledger.charge(dataset, cost, description=f"pairwise ({words})", run_id=run,
                             job="nightly")
               for run, cost, words in (("r1", PrivacyCost(0.5, 1e-7, 0.01), "first"),
                                        ("r2", PrivacyCost(0.3), "second"),
                                        ("r3", PrivacyCost(0.5, 1e-7, 0.02), "third"))]
    return url, charges


def run_file(folder, result, run_id, charge_id, dataset="sales", job="nightly"):
    """A pairwise run's file (``run-<run id>--<job>.parquet``) of ``result``."""
    rows = result.to_pandas().assign(within_noise=lambda t: t.within_noise.astype(int),
                                      run_id=run_id, job=job, dataset=dataset,
                                      charge_id=charge_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"run-{run_id}--{job}.parquet"
    rows.to_parquet(path)
    return path
