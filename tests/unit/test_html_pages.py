"""result.to_html(path): one self-contained, well-formed page per result, showing
only the release's own fields; dpmic report rebuilds a run's page from its files."""

import dataclasses
import html
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.batch.jobcausal import _write_files
from dpmic_dask.batch.runpage import causal_from_files, rebuild, rows_page_path
from dpmic_dask.ldp.result import LocalPairwiseResult, LocalReport
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.release.boundsresult import BoundsRelease
from dpmic_dask.release.choose_categories import CategoriesRelease
from dpmic_dask.release.htmlreport import render_page, rows_view
from tests.cli import invoke
from tests.htmlpages import COLUMNS, causal_graph, check_page, pairwise_result


def test_a_pairwise_page_holds_every_pair_the_statement_and_nothing_from_outside(tmp_path):
    result = pairwise_result()
    path = result.to_html(tmp_path / "page.html")
    text = path.read_text()
    check_page(text)
    shown = html.unescape(text)
    for (x, y), value in zip(result.pairs, result.values):
        assert f"{x} × {y}: MIC {value:.3f}, ci95 +/-0.150" in shown
    assert text.count('<g class="cell') == 2 * len(result.pairs)  # both triangles
    assert len(re.findall(r'data-pair="\d+"', text)) == 3 * len(result.pairs)  # cells, rows
    within = sum(abs(v) <= 0.15 for v in result.values)
    assert within and text.count('fill="url(#hatch)"') == 2 * within + 1  # + the legend
    for words in ("1-differentially private", "pure epsilon-differential privacy",
                  "Privacy unit: one row", "micr-lap", "charge-1", "tau_a"):
        assert words in shown
    assert "e^1 = 2.718" in shown  # what it means for one person
    assert '&lt;b&gt;' in text and "<b>&" not in text  # a column name is escaped


def test_a_page_without_tau_has_no_tau_columns(tmp_path):
    text = render_page_of(pairwise_result(tau=False))
    check_page(text)
    assert "tau_a" not in text


def render_page_of(result):
    from dpmic_dask.release.htmlreport import pairwise_view

    return render_page(pairwise_view(result))


def test_many_columns_drop_the_cell_text_but_keep_every_pair():
    columns = tuple(f"c{k}" for k in range(30))
    result = pairwise_result(columns, tau=False)
    text = render_page_of(result)
    check_page(text)
    assert text.count('<g class="cell') == 2 * len(result.pairs)
    assert 'font-style="italic"' not in text  # no per-cell text above 25 columns


def test_the_causal_page_draws_every_edge_and_separating_set(tmp_path):
    graph = causal_graph()
    text = graph.to_html(tmp_path / "graph.html").read_text()
    check_page(text)
    shown = html.unescape(text)
    assert text.count('<g class="edge"') == 3 and text.count('<g class="sep"') == 3
    assert text.count('marker-end="url(#arrow)"') == 2  # a -> c, d -> c
    # a pair without a kept statistic (a page from older delivered files) says none
    assert "b and d separated given {nothing}" in shown
    assert "b and d separated given {nothing}: statistic" not in shown
    for words in ("a -- b: statistic 12.5000", "a -> c: statistic 4.2500",
                  "b and c separated given {a}: statistic 1.2500",
                  "a and d separated given {nothing}: statistic 0.5000",
                  "2-differentially private", "level 1 decisions"):
        assert words in shown


def test_the_other_results_have_a_page_with_their_statement(tmp_path):
    bounds = BoundsRelease({"age": (0.0, 128.0), "z": (0.0, 1.5)}, 1.0, 0.5, 0.99, 13.3, 3000,
                           None, ("z",), "charge-b")
    # the kept values as a release holds them (NumPy scalars); "a, b" is one category
    categories = CategoriesRelease({"city": (np.str_("a"), np.str_("b")), "zone": ("a, b",)},
                                   1.0, 0.0, None, 0.0, 1.0,
                                   "This release is 1-differentially private", "charge-c",
                                   {"city": "from 4 candidates", "zone": "from 2"})
    estimate = type("E", (), {"mic": 0.4, "ci95": 0.1, "raw_mic": 0.5, "bias": 0.1,
                              "reports": 10})
    local = LocalPairwiseResult(("x", "y"), (("x", "y"),), (estimate,),
                                LocalReport(2.0, "oue", 16, 4, 0, 100, 4, 3, 10, False, 1, 1))
    for result, words in ((bounds, ["age", "[0, 128]", "unresolved", "charge-b"]),
                          (categories, ["city", "'a', 'b'", "'a, b'", "city: ['a', 'b']",
                                        "1-differentially private"]),
                          (local, ["x × y: MIC 0.400", "per person", "OUE"])):
        text = result.to_html(tmp_path / "page.html").read_text()
        check_page(text)
        for word in words:
            assert word in html.unescape(text), (type(result).__name__, word)


def test_dpmic_report_rebuilds_a_demo_folder_and_a_run_file(tmp_path):
    result = pairwise_result()
    folder = tmp_path / "demo"
    folder.mkdir()
    result.to_pandas().to_csv(folder / "results.csv", index=False)
    (folder / "report.txt").write_text(result.report() + "\n")
    out = invoke(["report", str(folder)])
    assert out.exit_code == 0, out.output
    text = (folder / "report.html").read_text()
    check_page(text)
    shown = html.unescape(text)
    assert all(f"{x} × {y}: MIC {v:.3f}" in shown for (x, y), v in zip(result.pairs, result.values))
    assert result.privacy.statement in shown and "Privacy unit: one row" in shown
    # the rebuilt page says what the release's own page says (its charge and where
    # its bounds came from were left out)
    def words(page):
        page = re.sub(r"<(script|style).*?</\1>", "", page, flags=re.S)
        return {w.strip() for w in html.unescape(re.sub(r"<[^>]+>", "\n", page)).splitlines()
                if w.strip()}
    assert words(result.to_html(tmp_path / "own.html").read_text()) == words(text)
    # a run's file alone: the guarantee from the rows' own columns
    rows = result.to_pandas().assign(within_noise=lambda t: t.within_noise.astype(int),
                                     charge_id="charge-1")
    run = tmp_path / "out" / "run-r1--nightly.parquet"
    run.parent.mkdir()
    rows.to_parquet(run)
    (page,) = rebuild(tmp_path / "out")
    assert page == rows_page_path(run) == tmp_path / "out" / "_pages" / "run-r1--nightly.html"
    shown = html.unescape(page.read_text())
    assert "This release is 1-differentially private" in shown and "charge-1" in shown


def test_a_causal_run_folder_is_rebuilt_from_its_files(tmp_path):
    graph = causal_graph()
    _write_files(tmp_path, graph, str(graph.report()))
    assert (tmp_path / "report.html").is_file()
    back, report = causal_from_files(tmp_path)
    assert back.columns == graph.columns and (back.graph == graph.graph).all()
    assert back.separating_sets == graph.separating_sets
    # each removed pair's test value comes back; a pair without one stays without
    assert back.separation_statistic == graph.separation_statistic
    assert ("b", "d") in back.separating_sets and ("b", "d") not in back.separation_statistic
    assert back.privacy.epsilon == 2.0 and back.privacy.rows == 2000
    (page,) = rebuild(tmp_path)
    check_page(page.read_text())
    assert "b and c separated given {a}: statistic 1.2500" in html.unescape(page.read_text())
    # files delivered before the value was kept: the page shows no number for it
    sets = json.loads((tmp_path / "separating_sets.json").read_text())
    for item in sets:
        del item["statistic"]
    (tmp_path / "separating_sets.json").write_text(json.dumps(sets))
    back, _ = causal_from_files(tmp_path)
    assert back.separation_statistic == {}
    (page,) = rebuild(tmp_path)
    shown = html.unescape(page.read_text())
    assert "b and c separated given {a}" in shown and ": statistic 1.2500" not in shown


@pytest.mark.filterwarnings("ignore:Glyph")  # graph.png: a control character has no glyph
@pytest.mark.parametrize("odd", ["c\u2028d", "c\nd", "c\rd", 'c"d\\', "c\x0cd"])
def test_a_causal_run_whose_names_hold_line_breaks_is_rebuilt(tmp_path, odd):
    graph = causal_graph()
    graph = dataclasses.replace(graph, columns=(*graph.columns[:2], odd, graph.columns[3]))
    _write_files(tmp_path, graph, str(graph.report()))
    back, _ = causal_from_files(tmp_path)
    assert back.columns == graph.columns and (back.graph == graph.graph).all()
    assert back.separating_sets == graph.separating_sets
    (page,) = rebuild(tmp_path)
    check_page(page.read_text())


@pytest.mark.parametrize("damage", ["edges.csv", "separating_sets.json", "graph.dot"])
def test_dpmic_report_on_damaged_files_is_one_line_naming_the_folder(tmp_path, damage):
    graph = causal_graph()
    folder = tmp_path / "run-r1--job"
    folder.mkdir()
    _write_files(folder, graph, str(graph.report()))
    (folder / damage).write_bytes(b"\xff\xfe not what was written {")
    out = invoke(["report", str(folder)])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert "cannot rebuild the run's page" in out.output and str(folder) in out.output
    assert len(out.output.strip().splitlines()) == 1


@pytest.mark.parametrize("link", ["report.txt", "graph.dot", "edges.csv",
                                  "separating_sets.json", "report.html", "pages-txt",
                                  "pages-dir", "page-html", "run-file"])
def test_dpmic_report_reads_no_symbolic_link_inside_the_folder(tmp_path, link):
    """A link planted among a run's files would show its target on the page: refused
    in one line (exit 2), and the target's text is on no page."""
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the page 7f3a\n")
    out = tmp_path / "out"
    if link in ("pages-txt", "pages-dir", "page-html", "run-file"):
        rows = pd.DataFrame({"x": ["a"], "y": ["b"], "mic": [0.5], "ci95": [0.1],
                             "within_noise": [0]})
        real = out / "run-r1--job.csv"
        out.mkdir()
        rows.to_csv(real, index=False)
        page = rows_page_path(real)
        if link == "pages-txt":
            page.parent.mkdir()
            page.with_suffix(".txt").symlink_to(secret)
        elif link == "pages-dir":  # the folder of pages itself, holding the text
            elsewhere = tmp_path / "pages"
            elsewhere.mkdir()
            (elsewhere / page.with_suffix(".txt").name).write_text("not for the page 7f3a\n")
            page.parent.symlink_to(elsewhere)
        elif link == "page-html":  # another page's recorded ledger would be read
            page.parent.mkdir()
            page.symlink_to(secret)
        else:
            moved = tmp_path / "elsewhere.csv"
            real.rename(moved)
            real.symlink_to(moved)
    else:
        graph = causal_graph()
        folder = out / "run-r1--job"
        folder.mkdir(parents=True)
        _write_files(folder, graph, str(graph.report()))
        if link == "report.txt":
            (folder / link).unlink()
            (folder / link).symlink_to(secret)
        elif link == "report.html":
            (folder / link).unlink()
            (folder / link).symlink_to(secret)
        else:
            moved = tmp_path / link
            (folder / link).rename(moved)
            (folder / link).symlink_to(moved)
    refused = invoke(["report", str(out)])
    assert refused.exit_code == 2 and "symbolic link" in refused.output, refused.output
    assert len(refused.output.strip().splitlines()) == 1
    if link == "run-file":  # the same link named directly is refused too
        named = invoke(["report", str(out / "run-r1--job.csv")])
        assert named.exit_code == 2 and "symbolic link" in named.output, named.output
    for page in out.rglob("*.html"):
        assert page.is_symlink() or "7f3a" not in page.read_text()


def test_the_page_shows_no_field_the_rows_do_not_hold():
    rows = pd.DataFrame({"x": ["a"], "y": ["b"], "mic": [0.5], "ci95": [math.nan],
                         "within_noise": [0]})
    view = rows_view(rows)
    text = render_page(view)
    check_page(text)
    assert "NaN" in html.unescape(text)
    json.dumps(view["facts"])  # plain words and numbers


def test_a_page_rebuilt_from_rows_says_their_noise_and_what_they_do_not_hold():
    rows = pd.DataFrame({"x": ["a", "a"], "y": ["b", "c"], "mic": [0.9, 0.1],
                         "ci95": [0.3, 0.3], "within_noise": [0, 1]})
    shown = html.unescape(render_page(rows_view(rows)))
    assert "within +/-0.3 per value (above 0.25); 1 of 2 released values" in shown
    assert "Rebuilt from the delivered rows alone" in shown
    quiet = html.unescape(render_page(rows_view(rows.assign(ci95=0.05, within_noise=0))))
    assert "above 0.25" not in quiet and "Rebuilt from the delivered rows alone" in quiet


def test_a_page_rebuilt_from_rows_says_which_private_bounds_are_wrong():
    """Rows without their report text: the page names the columns whose private
    bounds the rows say are wrong (unresolved, piled ...), and only those."""
    rows = pd.DataFrame({"x": ["a", "a"], "y": ["b", "c"], "mic": [0.9, 0.1],
                         "ci95": [0.05, 0.05], "within_noise": [0, 0],
                         "x_lo": [0.0, 0.0], "x_hi": [1.0, 1.0], "y_lo": [-1.0, 0.0],
                         "y_hi": [1.0, 5.0], "x_bounds": ["public", "public"],
                         "y_bounds": ["private: unresolved, fallback bounds", "private"]})
    shown = html.unescape(render_page(rows_view(rows)))
    assert "Bounds of b: private: unresolved, fallback bounds." in shown
    assert "Bounds of c:" not in shown and "Bounds of a:" not in shown


def test_report_refuses_a_folder_without_a_run(tmp_path):
    out = invoke(["report", str(tmp_path)])
    assert out.exit_code == 2 and "no delivered run found" in out.output


@pytest.mark.parametrize("name", COLUMNS[:1])
def test_a_pair_filter_text_is_lower_case(name):
    text = render_page_of(pairwise_result())
    assert f'data-text="{name} income"' in text


def test_a_per_unit_page_states_the_unit_and_what_replacing_one_costs(tmp_path):
    row = causal_graph()
    shown = html.unescape(row.to_html(tmp_path / "row.html").read_text())
    assert "<dt>privacy unit</dt><dd>one row" in shown
    assert "For one row: whether it is in the data or replaced by any other" in shown
    assert "A person with several rows is protected only per row" in shown
    assert "Nothing more" not in shown  # not an overclaim: the bound holds, no more
    report = dataclasses.replace(row.report(), unit="cid", max_rows_per_unit=3, delta=1e-6)
    unit = dataclasses.replace(row, privacy=report)
    shown = html.unescape(unit.to_html(tmp_path / "unit.html").read_text())
    check_page(shown)
    assert "<dt>privacy unit</dt><dd>per cid, at most 3 rows each" in shown
    assert "For one cid (all of its rows): whether it is in the data or not" in shown
    # replacing a unit is removing one and adding another: twice the epsilon
    assert f"by at most e^4 = {math.exp(4):.4g}, except with probability at most " \
           f"{(1 + math.exp(2)) * 1e-6:.3g}" in shown
    assert "replaced by any other, the chance" not in shown


def test_a_page_of_columns_labelled_by_numbers_maps_every_pair_to_its_own_cells(tmp_path):
    # labels 1 and "1" are two columns (one text): each pair keeps its own two cells
    gen = np.random.default_rng(2)  # test data only
    frame = pd.DataFrame({0: gen.random(500), 1: gen.random(500), "1": gen.random(500)})
    result = frame.dpmic.pairwise(1.0, bounds={0: (0, 1), 1: (0, 1), "1": (0, 1)},
                                  ledger=InMemoryLedger(uncapped=True), bounds_check=None)
    text = result.to_html(tmp_path / "numbers.html").read_text()
    check_page(text)
    cells = re.findall(r'<g class="cell[^"]*" tabindex="0" data-pair="(\d+)"', text)
    assert sorted(cells) == sorted(str(k) for k in range(3) for _ in range(2))


def test_a_per_unit_causal_run_is_rebuilt_per_unit_never_per_row(tmp_path):
    """The page rebuilt from a per-unit run's files states the guarantee per unit
    (replacing a unit's rows costs twice its epsilon), as the page it replaces did;
    it was rebuilt as row level ("one row ... e^eps"), a stronger claim."""
    from dpmic_dask.causal import causal_graph as release_graph
    from dpmic_dask.privacy.accounting import Budget
    from tests.unit.test_causal_units import BOUNDS, unit_frame

    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0, privacy_unit="who"))
    graph = release_graph(unit_frame(units=600), 1.0, bounds=BOUNDS, privacy_unit="who",
                          max_rows_per_unit=3, ledger=ledger, dataset="d")
    _write_files(tmp_path, graph, str(graph.report()))
    back, _ = causal_from_files(tmp_path)
    assert back.privacy.unit == graph.report().unit == "who"
    assert back.privacy.max_rows_per_unit == 3
    assert back.privacy.rows_noisy == graph.report().rows_noisy
    (page,) = rebuild(tmp_path)
    shown = " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page.read_text())).split())
    assert "per who, at most 3 rows each" in shown
    assert "by at most e^2 = 7.389" in shown and "privacy unit one row" not in shown


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_a_causal_page_from_report_text_lists_every_part_of_every_test(delta):
    """A page built from a journaled run has only the report's text: its plan is read
    from the parts listed there, for the copula test's medians and sign sums and
    under zCDP too (only pure 'level' lines were read, so those pages had none)."""
    from dpmic_dask.causal import causal_graph as release_graph
    from dpmic_dask.release.htmlreport.pages import _text_parts
    from tests.unit.test_causal_units import BOUNDS, unit_frame

    graph = release_graph(unit_frame(units=600), 1.0, delta=delta, bounds=BOUNDS,
                          columns=["x", "y", "z"], ledger=InMemoryLedger(uncapped=True))
    parts = graph.report().parts
    steps = _text_parts(str(graph.report()))
    assert len(parts) >= 2 and [s["name"] for s in steps] == [name for name, _, _ in parts]
    assert all(s["part"].startswith(amount) for s, (_, amount, _) in zip(steps, parts))


@pytest.mark.parametrize("test", ["tau", "chisq"])
def test_a_causal_page_from_report_text_keeps_the_parts_of_levels_not_run(test):
    """A search that ended before its last level lists that level's parts as "not
    run: ..."; read back from the report's text they keep their names and amounts
    (the name was cut at that colon and the amount became the rest of the name)."""
    from dpmic_dask.causal import causal_graph as release_graph
    from dpmic_dask.release.htmlreport.pages import _text_parts

    gen = np.random.default_rng(1)  # test data only
    frame = pd.DataFrame({c: gen.integers(0, 3, 20000) for c in "abcd"})
    kinds = ({"bounds": {c: (0.0, 3.0) for c in "abcd"}, "bins": 3} if test == "tau" else
             {"categories": {c: [0, 1, 2] for c in "abcd"}})
    graph = release_graph(frame.astype(float) if test == "tau" else frame, 5.0, test=test,
                          alpha=1e-3, ledger=InMemoryLedger(uncapped=True), **kinds)
    parts = graph.report().parts
    assert any("not run" in name for name, _, _ in parts)
    steps = _text_parts(str(graph.report()))
    assert [s["name"] for s in steps] == [name for name, _, _ in parts]
    assert [s["part"].split(",")[0] for s in steps] == [amount for _, amount, _ in parts]


def test_a_page_rebuilt_from_zcdp_rows_states_the_whole_releases_rho():
    """The live page says "zero-concentrated DP: rho = ..."; one rebuilt from the
    run's rows dropped the rho ("zero-concentrated DP (stated as ...)")."""
    import pandas as pd

    from dpmic_dask.privacy.conversion import rho_from_eps_delta
    from dpmic_dask.release.htmlreport.pages import rows_view

    gen = np.random.default_rng(0)
    frame = pd.DataFrame({"x": gen.random(3000), "y": gen.random(3000)})
    result = frame.dpmic.pairwise(1.0, delta=1e-6, bounds={"x": (0, 1), "y": (0, 1)})
    facts = dict(rows_view(result.to_pandas())["facts"])
    assert facts["measure"] == (f"zero-concentrated DP: rho = "
                                f"{rho_from_eps_delta(1.0, 1e-6):.4g} (stated as (epsilon, delta))")
