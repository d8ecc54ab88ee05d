"""``PrivateBounds``: the typed spelling of ``"private"`` bounds, per column or for
every column. It plans exactly what ``"private"`` plans with the same settings;
its fields override the call's options for its column; a setting given both ways
with different values is refused before anything is read or charged."""

from __future__ import annotations

import dataclasses
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask import PrivateBounds
from dpmic_dask.batch.jobplan import job_release_plan
from dpmic_dask.batch.jobs import load_job
from dpmic_dask.errors import InvalidParameterError
from tests.jobfiles import write_job


def table(n=3_000, seed=0):
    gen = np.random.default_rng(seed)
    x = gen.uniform(0, 1, n)
    return pd.DataFrame({"x": 1_000 * x, "y": x + gen.normal(0, 0.1, n),
                         "z": gen.uniform(0, 1, n),
                         "signup": pd.Timestamp("2022-01-01") + pd.to_timedelta(x * 700, "D")})


def unreadable(frame: pd.DataFrame):
    """A Dask frame whose every partition refuses to be read."""
    def refuse(part):
        raise AssertionError("the plan read the data")
    return dd.from_pandas(frame, npartitions=2).map_partitions(refuse, meta=frame.iloc[:0])


def funded(eps=10.0):
    ledger = dm.InMemoryLedger()
    ledger.set_budget("d", dm.Budget(eps))
    return ledger


@pytest.mark.parametrize("bad, message", [
    ({"coverage": 1.0}, "coverage must be"), ({"coverage": "high"}, "coverage must be"),
    ({"coverage": True}, "coverage must be"), ({"domain": (5, 1)}, "domain must be"),
    ({"domain": (0, float("inf"))}, "domain must be"), ({"domain": "0-1"}, "domain must be"),
    ({"domain": (0, 1, 2)}, "domain must be"), ({"refine": 1}, "refine must be"),
])
def test_its_fields_are_checked_on_construction(bad, message):
    with pytest.raises(InvalidParameterError, match=message):
        PrivateBounds(**bad)


def test_it_is_a_frozen_value_and_the_default_is_private():
    assert PrivateBounds(domain=[0, 10]) == PrivateBounds(domain=(0.0, 10.0))
    assert PrivateBounds(domain=("2020-01-01", "2030-01-01")).domain == ("2020-01-01",
                                                                         "2030-01-01")
    assert PrivateBounds() == PrivateBounds(coverage=0.99, domain=None, refine=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        PrivateBounds().coverage = 0.5  # type: ignore[misc]
    assert "PrivateBounds" in dm.__all__ and "PrivateBounds" in dir(dm)


#: (string spelling, typed spelling): the same release asked for both ways.
SAME = [
    ({"bounds": "private", "columns": ["x", "y"]},
     {"bounds": PrivateBounds(), "columns": ["x", "y"]}),
    ({"bounds": "private", "columns": ["x", "y"], "coverage": 0.95, "refine": False},
     {"bounds": PrivateBounds(coverage=0.95, refine=False), "columns": ["x", "y"]}),
    ({"bounds": "private", "columns": ["x", "y"], "coverage": 0.95},  # the call's option
     {"bounds": PrivateBounds(), "columns": ["x", "y"], "coverage": 0.95}),
    ({"bounds": {"x": "private", "y": (0, 2), "z": "private"},
      "domain": {"x": (0, 1e6)}, "coverage": {"z": 0.9}, "delta": 1e-6},
     {"bounds": {"x": PrivateBounds(domain=(0, 1e6)), "y": (0, 2),
                 "z": PrivateBounds(coverage=0.9)}, "delta": 1e-6}),
    ({"bounds": {"x": "private", "z": (0, 1)}, "coverage": 0.9},
     {"bounds": {"x": PrivateBounds(coverage=0.9), "z": (0, 1)}, "coverage": 0.9}),
    ({"bounds": {"x": "private", "y": "private", "z": (0, 1)}, "top_k": 1,
      "refine": {"y": False}, "bounds_share": 0.2},
     {"bounds": {"x": PrivateBounds(), "y": PrivateBounds(refine=False), "z": (0, 1)},
      "top_k": 1, "bounds_share": 0.2}),
    ({"bounds": {"x": "private", "z": (0, 1)}, "threshold": 0.3, "max_pairs": 1,
      "domain": {"x": (0, 5e3)}},
     {"bounds": {"x": PrivateBounds(domain=(0, 5e3)), "z": (0, 1)}, "threshold": 0.3,
      "max_pairs": 1}),
    ({"bounds": {"signup": "private", "z": (0, 1)},
      "domain": {"signup": ("2020-01-01", "2030-01-01")}},
     {"bounds": {"signup": PrivateBounds(domain=("2020-01-01", "2030-01-01")),
                 "z": (0, 1)}}),
]


@pytest.mark.parametrize("string, typed", SAME)
def test_private_bounds_plans_exactly_what_the_string_plans(string, typed):
    frame = unreadable(table())
    a, b = frame.dpmic.plan(2.0, **string), frame.dpmic.plan(2.0, **typed)
    assert a.cost == b.cost and a.steps == b.steps and "private bounds" in b.steps
    assert a.planned.bounds.bounds == b.planned.bounds.bounds
    assert a.explain(10_000, show=False) == b.explain(10_000, show=False)


def test_a_columns_settings_reach_the_plan_and_its_explanation():
    plan = unreadable(table()).dpmic.plan(
        2.0, bounds={"x": PrivateBounds(domain=(0, 1e6), refine=False),
                     "y": PrivateBounds(coverage=0.95), "z": (0, 1),
                     "signup": PrivateBounds(domain=("2020-01-01", "2030-01-01"))},
        coverage={"x": 0.9})
    step = plan.planned.bounds.bounds
    settings = {c: (cov, grid.domain, refine) for c, cov, grid, refine
                in zip(step.columns, step.coverages, step.grids, step.refines)}
    assert settings["x"] == (0.9, (0.0, 1e6), False)  # coverage from the call's option
    assert settings["y"] == (0.95, None, True)
    assert settings["signup"][1] == (pd.Timestamp("2020-01-01").timestamp(),
                                     pd.Timestamp("2030-01-01").timestamp())
    columns = plan.explain(show=False).split("Columns:\n")[1].split("Noise of")[0]
    lines = {line.split()[0]: line for line in columns.splitlines()}
    assert "coverage 0.9, public domain [0, 1e+06], first pass only" in lines["x"]
    assert "coverage 0.95)" in lines["y"] and "domain" not in lines["y"]
    assert "public domain [2020-01-01" in lines["signup"]
    assert "public bounds [0, 1]" in plan.explain(show=False)
    plain = unreadable(table()).dpmic.plan(2.0, bounds={"x": PrivateBounds(), "z": (0, 1)})
    assert "bounds released privately (private bounds step)" in plain.explain(show=False)


@pytest.mark.parametrize("arguments, named", [
    ({"bounds": {"x": PrivateBounds(coverage=0.9), "z": (0, 1)}, "coverage": 0.95},
     "column 'x': coverage"),
    ({"bounds": {"x": PrivateBounds(domain=(0, 10)), "z": (0, 1)},
      "domain": {"x": (0, 20)}}, "column 'x': domain"),
    ({"bounds": {"x": PrivateBounds(refine=False), "z": (0, 1)}, "refine": {None: True}},
     "column 'x': refine"),
    ({"bounds": PrivateBounds(coverage=0.9), "columns": ["x", "y"], "coverage": 0.8},
     "every column: coverage"),
    ({"bounds": PrivateBounds(coverage=0.9), "columns": ["x", "y"],
      "coverage": {"y": 0.8}}, "column 'y': coverage"),
])
def test_a_setting_given_twice_differently_is_refused_before_anything(arguments, named):
    ledger = funded()
    for frame in (unreadable(table()), table()):
        with pytest.raises(InvalidParameterError, match=named):
            frame.dpmic.pairwise(2.0, ledger=ledger, dataset="d", **arguments)
        with pytest.raises(InvalidParameterError, match=named):
            frame.dpmic.plan(2.0, **arguments)
    assert ledger.history("d") == []


def test_the_same_setting_given_twice_alike_is_accepted():
    frame = unreadable(table())
    plan = frame.dpmic.plan(2.0, bounds={"x": PrivateBounds(coverage=0.9, domain=[0, 10]),
                                         "z": (0, 1)},
                            coverage=0.9, domain={"x": (0, 10)})
    assert plan.planned.bounds.bounds.coverages == (0.9,)


def test_a_release_with_typed_and_public_bounds_runs_with_one_charge():
    ledger = funded()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dm.BoundsWarning)
        result = table().dpmic.pairwise(
            4.0, bounds={"x": PrivateBounds(domain=(0, 1e4), coverage=0.95),
                         "y": PrivateBounds(refine=False), "z": (0, 1)},
            ledger=ledger, dataset="d")
    assert set(result.private_bounds.bounds) == {"x", "y"} and len(result.values) == 3
    assert result.private_bounds.coverage == {"x": 0.95, "y": 0.99}
    assert "y" not in result.private_bounds.refined
    assert "x [0, " in result.report() and "(coverage 0.95, public domain [0, 10000])" \
        in result.report()
    assert len(ledger.history("d")) == 1


def test_private_bounds_takes_typed_columns():
    ledger = funded()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dm.BoundsWarning)
        found = dm.private_bounds(table(), 2.0, columns={"x": PrivateBounds(
            coverage=0.9, domain=(0, 1e4)), "y": "private"}, ledger=ledger, dataset="d")
    assert found.coverage == {"x": 0.9, "y": 0.99} and found.domain == {"x": (0.0, 1e4)}
    assert "public domain of x [0, 10000]" in found.report()
    for columns, options, message in [
            ({"x": (0, 1)}, {}, r"columns\['x'\] must be PrivateBounds"),
            ({"x": PrivateBounds(coverage=0.9)}, {"coverage": 0.8}, "column 'x': coverage")]:
        with pytest.raises(InvalidParameterError, match=message):
            dm.private_bounds(unreadable(table()), 2.0, columns=columns, ledger=ledger,
                              dataset="d", **options)
    assert len(ledger.history("d")) == 1


def test_a_job_files_private_column_plans_as_private_bounds_do(tmp_path):
    """Job files already say it per column: ``x = { bounds = "private", domain =
    [...], coverage = ... }``."""
    job = load_job(write_job(tmp_path / "job.toml", columns={
        "x": {"bounds": "private", "domain": [0, 1_000_000], "coverage": 0.95},
        "z": [0, 1]}, eps=2.0))
    schema = pd.Series({"x": np.dtype("float64"), "z": np.dtype("float64")})
    from_job = job_release_plan(job, schema)
    typed = unreadable(table()[["x", "z"]]).dpmic.plan(
        2.0, bounds={"x": PrivateBounds(domain=(0, 1e6), coverage=0.95), "z": (0, 1)})
    assert from_job.bounds.bounds == typed.planned.bounds.bounds
    assert from_job.cost == typed.cost


def test_a_date_columns_private_bounds_pin_to_the_released_numbers():
    """A date column's released private bounds were pinned as whole days: the upper
    one up to a day inside the released one (the next release's grid not the one
    released, the last day's rows clamped to its start). Pinned as full-precision
    times, they read back as the released numbers."""
    from dpmic_dask.privacy.accounting import InMemoryLedger
    from dpmic_dask.stats.kinds import axis_arguments

    gen = np.random.default_rng(0)  # test data only
    n = 50_000
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(gen.integers(0, 120, n), unit="D")
    frame = pd.DataFrame({"d": pd.Series(days).astype("date32[pyarrow]"),
                          "y": gen.normal(size=n)})
    found = dm.private_bounds(dd.from_pandas(frame, npartitions=2), 2.0, columns=["d", "y"],
                              ledger=InMemoryLedger(uncapped=True))
    assert "d" in found.pinnable()
    pinned = found.pinned("d")
    read = axis_arguments(dict(frame.dtypes), bounds={"d": pinned}, columns=["d"]).bounds["d"]
    assert read == pytest.approx(found.bounds["d"], abs=1e-6)
    assert found.formatted("d").count("-") == 4  # the report still prints days


@pytest.mark.filterwarnings("ignore::dpmic_dask.errors.BoundsWarning")  # u's wide domain
def test_one_domain_of_dates_for_every_column_of_dates():
    """``domain=("2023-01-01", "2025-01-01")`` for every column was refused ("two
    finite numbers") where the same pair per column was read as dates; one pair is
    read in each column's kind, and a number column still refuses dates."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    n = 40_000
    frame = pd.DataFrame({
        "t": pd.Timestamp("2024-01-01") + pd.to_timedelta(gen.uniform(0, 200, n), unit="D"),
        "u": pd.Timestamp("2024-03-01") + pd.to_timedelta(gen.uniform(0, 100, n), unit="D"),
        "x": gen.normal(size=n)})
    pair = ("2023-01-01", "2025-01-01")
    each = dm.private_bounds(dd.from_pandas(frame, npartitions=2), 2.0, columns=["t", "u"],
                             domain=pair, ledger=InMemoryLedger(uncapped=True))
    assert each.domain == {c: (1672531200.0, 1735689600.0) for c in ("t", "u")}
    assert "public domain [2023-01-01, 2025-01-01]" in frame.dpmic.pairwise(
        eps=2.0, bounds="private", columns=["t", "u"], domain=pair,
        ledger=InMemoryLedger(uncapped=True)).report()
    with pytest.raises(dm.InvalidParameterError, match="domain must be"):
        frame.dpmic.pairwise(eps=2.0, bounds="private", columns=["t", "x"], domain=pair,
                             ledger=InMemoryLedger(uncapped=True))


def test_private_bounds_take_kinds_as_pairwise_does():
    """``private_bounds`` had no ``kinds=``: epoch seconds could not be estimated as
    times there, though ``pairwise(bounds="private", kinds=...)`` could."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    seconds = (1.7e9 + gen.uniform(0, 1e7, 40_000)).astype(int)
    found = dm.private_bounds(dd.from_pandas(pd.DataFrame({"t": seconds}), npartitions=2),
                              2.0, columns=["t"], kinds={"t": ("timestamp", "s")},
                              ledger=InMemoryLedger(uncapped=True))
    lo, hi = found.bounds["t"]
    assert lo <= seconds.min() + 1e5 and hi >= seconds.max() - 1e5
    assert found.formatted("t").endswith("UTC]")
