"""A local-model design from outside (a device's copy, a file's metadata) is
checked to be one make_design makes, on the client and on the server; the
server's bootstrap takes 0 replicates (and says it made no ci95) or enough for
one."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.ldp import make_design, pairwise, randomize, read_reports, write_reports

BOUNDS = {"x": (0.0, 1.0), "y": (-0.5, 1.5)}


def frame(n=2000):
    gen = np.random.default_rng(0)  # test data only
    x = gen.uniform(0, 1, n)
    return pd.DataFrame({"x": x, "y": x + gen.normal(0, 0.05, n)})


def edited(design, change):
    out = json.loads(json.dumps(design))
    change(out)
    return out


EDITS = {
    "nan bound": lambda d: d["bounds"].__setitem__("x", [float("nan"), 1.0]),
    "zero width": lambda d: d["bounds"].__setitem__("x", [0.5, 0.5]),
    "eps past the range": lambda d: (d.__setitem__("epsilon", 500.0),
                                     d["protocol"].__setitem__("eps", 500.0)),
    "eps of 1000": lambda d: (d.__setitem__("epsilon", 1000.0),
                              d["protocol"].__setitem__("eps", 1000.0)),
    "a protocol field": lambda d: d["protocol"].__setitem__("keep", d["protocol"]["keep"] + 1),
    "bins": lambda d: d.__setitem__("bins", 3),
    "no pairs": lambda d: d.__setitem__("pairs", []),
    "missing key": lambda d: d.pop("B"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_design_is_refused_by_the_client_and_the_server(edit, tmp_path):
    design = make_design(4.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    bad = edited(design, EDITS[edit])
    with pytest.raises(InvalidParameterError, match="report design"):
        randomize(frame(), design=bad)
    # reports made under the good design, stored with the edited one beside them
    path = tmp_path / "reports.parquet"
    write_reports(randomize(frame(), design=design), path, design=bad)
    with pytest.raises(InvalidParameterError, match="report design"):
        pairwise(read_reports(path), replicates=0)
    assert pairwise(read_reports(path), design=design, replicates=0).estimates


@pytest.mark.parametrize("replicates", [1, 2, 19])
def test_too_few_bootstrap_replicates_for_a_ci95_are_refused(replicates):
    design = make_design(4.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    reports = randomize(frame(), design=design)
    with pytest.raises(InvalidParameterError, match="replicates must be 0"):
        pairwise(reports, replicates=replicates)


def test_no_replicates_says_there_is_no_correction_and_no_ci95():
    design = make_design(4.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    result = pairwise(randomize(frame(), design=design), replicates=0)
    text = result.report()
    assert "not bias-corrected, and no ci95" in text and "95% interval" not in text
    assert "bias-corrected by a parametric bootstrap" in pairwise(
        randomize(frame(), design=design), replicates=20).report()


def test_reports_of_two_designs_in_one_folder_are_refused_on_every_path(tmp_path):
    """Two runs' files in one folder (eps 4 and 0.5): read as one, the second's
    reports were counted under the first's design without a word."""
    import dask
    import dask.dataframe as dd

    from dpmic_dask.ldp import read_design

    first = make_design(4.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    second = make_design(0.5, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    one = tmp_path / "one"
    one.mkdir()
    write_reports(randomize(frame(), design=first), one / "a.parquet")
    write_reports(randomize(frame(), design=first), one / "b.parquet")
    assert read_design(one) == read_design(one / "a.parquet")
    with dask.config.set(scheduler="sync"):
        whole = pairwise(dd.read_parquet(one), design=read_design(one), replicates=0)
    assert whole.privacy.n == 4000
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_reports(randomize(frame(), design=first), mixed / "a.parquet")
    write_reports(randomize(frame(), design=second), mixed / "b.parquet")
    for read in (read_design, read_reports):
        with pytest.raises(InvalidParameterError, match="more than one design"):
            read(mixed)
    with dask.config.set(scheduler="sync"), pytest.raises(
            InvalidDataError, match="made under another design"):
        pairwise(dd.read_parquet(mixed), design=read_design(mixed / "a.parquet"), replicates=0)
    # reports written before the fingerprint was kept are read as before, with a
    # word that their design cannot be checked (reports of a 3 x 3 design fit the
    # ranges of a 4 x 4 one: read under it, they were accepted without one)
    old = randomize(frame(), design=first).drop(columns="design")
    with pytest.warns(UserWarning, match="no design fingerprint"):
        assert pairwise(old, replicates=0).privacy.n == 2000



def test_duplicated_files_fractional_fields_and_huge_grids_are_refused(tmp_path):
    """A folder holding a copy of a reports file (every report counted twice: the
    n doubled and the interval narrowed), fields edited to fractions (silently
    truncated) and a grid no machine can hold (B = 10**6: the process was killed)
    are refused."""
    import shutil

    from dpmic_dask.ldp import read_design

    design = make_design(2.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    folder = tmp_path / "reports"
    folder.mkdir()
    write_reports(randomize(frame(), design=design), folder / "a.parquet")
    shutil.copy(folder / "a.parquet", folder / "b.parquet")
    for read in (read_design, read_reports):
        with pytest.raises(InvalidDataError, match="same bytes"):
            read(folder)
    # a copy a Parquet reader takes but the check did not look at (another suffix,
    # a folder): read_reports counted it (n 1.5x), dd.read_parquet too
    (folder / "b.parquet").rename(folder / "a.parquet.bak")
    for read in (read_design, read_reports):
        with pytest.raises(InvalidDataError, match="other than \\*.parquet files"):
            read(folder)
    (folder / "old").mkdir()
    (folder / "a.parquet.bak").rename(folder / "old" / "a.parquet")
    with pytest.raises(InvalidDataError, match="first 'old'"):
        read_reports(folder)
    (folder / "old" / "a.parquet").unlink()
    (folder / "old").rmdir()
    assert len(read_reports(folder)) == 2000
    reports = randomize(frame(), design=design)
    for name, shift in (("y", 0.7), ("pair", 0.5)):
        edited = reports.astype({name: float})
        edited[name] = edited[name] + shift
        with pytest.raises(InvalidDataError, match="not whole numbers"):
            pairwise(edited, design=design, replicates=0)
    whole = reports.astype({"y": float})  # floats holding whole numbers are reports
    assert pairwise(whole, design=design, replicates=0).privacy.n == 2000
    with pytest.raises(InvalidParameterError, match="B = 1000000"):
        pairwise(reports, design=design, replicates=0, B=10**6)
    with pytest.raises(InvalidParameterError, match="B = 1000000"):
        make_design(2.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr", B=10**6)


@pytest.mark.parametrize("column", [
    pd.Series(pd.Categorical(pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(40), "D"))),
    pd.Series(pd.to_timedelta(np.arange(40), unit="D")).astype("duration[ns][pyarrow]"),
    pd.Series(pd.Categorical(np.linspace(0, 1, 40).round(1))),
    pd.Series([f"{v:.3f}" for v in np.linspace(0, 1, 40)], dtype=object),
    pd.Series([f"{v:.3f}" for v in np.linspace(0, 1, 40)], dtype="string"),
], ids=["category-of-times", "arrow-duration", "category-of-numbers", "object-text",
        "string"])
def test_times_categories_and_text_are_refused_not_read_as_numbers(column):
    """A category of timestamps was read as nanoseconds (every value clamped: MIC
    0 for a strong relation), category codes and numbers written as text as
    ordered numbers; the local model takes numbers only."""
    frame = pd.DataFrame({"t": column, "y": np.linspace(0, 1, 40)})
    with pytest.raises(InvalidDataError, match="holds (times|categories or text)") as caught:
        randomize(frame, 2.0, bounds={"t": (0, 1), "y": (0, 1)}, bins=4)
    assert "0.5" not in str(caught.value) and "2020" not in str(caught.value)


def test_arguments_beside_a_design_and_names_that_are_not_text_are_refused():
    """protocol, pairs, c and columns beside design= were accepted and silently
    ignored (the reports used the design's); integer column names made a design
    its own client refused ("no column '0'", then "an edited design")."""
    design = make_design(2.0, bounds=BOUNDS, rows=2000, bins=4, protocol="grr")
    for extra in ({"protocol": "oue"}, {"pairs": [("x", "y")]}, {"c": 5},
                  {"columns": ["x", "y"]}):
        with pytest.raises(InvalidParameterError, match="not both"):
            randomize(frame(), design=design, **extra)
    numbered = pd.DataFrame({0: np.linspace(0, 1, 50), 1: np.linspace(1, 0, 50)})
    with pytest.raises(InvalidParameterError, match="column names must be text"):
        randomize(numbered, 2.0, bounds={0: (0, 1), 1: (0, 1)})


def test_a_column_the_estimates_put_in_one_bin_is_said():
    """x = 5 everywhere on bounds (0, 1): every value clamped into the top bin, the
    published frequencies showed it, and nothing said so (SPEC 9: mass in one bin
    or outside the bounds is said)."""
    import warnings

    from dpmic_dask.errors import BoundsWarning

    gen = np.random.default_rng(3)  # test data only
    n = 20_000
    x = gen.uniform(0, 1, n)
    data = pd.DataFrame({"c": np.full(n, 5.0), "x": x, "y": x + gen.normal(0, 0.1, n),
                         "z": (gen.random(n) < 0.5).astype(float)})
    reports = randomize(data, 2.0, bounds={"c": (0, 1), "x": (0, 1), "y": (-1, 2), "z": (0, 1)})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = pairwise(reports, replicates=0)
    assert set(result.one_bin()) == {"c"} and result.one_bin()["c"][0] == result.privacy.bins - 1
    said = [str(w.message) for w in seen if issubclass(w.category, BoundsWarning)]
    assert len(said) == 1 and said[0].startswith("Column c:") and "upper bound" in said[0]
    assert said[0] in result.report()
