"""The check of public bounds reads its histograms off the values' own pass
(``CheckFromCounts``) wherever the grid's joint refinement holds the check's
bin edges: the same counts as a pass of its own, bin for bin, with no pass of
its own; and its own pass where the grid cannot (small ``B``, count noise).
Through the public release functions, on Dask and pandas frames, with values on
and beyond the bounds, filled nulls, and pairs counted in many blocks."""

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask  # noqa: E402,F401  (registers the accessor)
from dpmic_dask.release import bounds_check, stages  # noqa: E402

BOUNDS = {"a": (-3.0, 10.0), "b": (-1.0, 1.0), "c": (0.0, 9.0), "d": (0.0, 1.0)}
FILL = {"a": 0.5, "b": 0.0, "c": 4.0, "d": 0.25}
ROWS = 48_000


@pytest.fixture(scope="module")
def table():
    gen = np.random.default_rng(5)  # test data only
    frame = pd.DataFrame({
        "a": gen.normal(size=ROWS),
        "b": gen.uniform(-5.0, 5.0, ROWS),  # mostly beyond the bounds: clamped
        "c": gen.integers(0, 10, ROWS).astype(float),  # on every edge of its bins
        "d": gen.beta(0.5, 0.5, ROWS),
    })
    frame.loc[::7, "a"] = 10.0  # on the upper bound
    frame.loc[::11, "a"] = -3.0  # on the lower bound
    frame.loc[::13, "d"] = np.nan  # filled with a public value
    return frame


def exact(frame, bounds=BOUNDS, fill=FILL) -> np.ndarray:
    """Each column's histogram on the check's bins, counted directly."""
    filled = frame.fillna(fill)
    return np.stack([np.bincount(bounds_check.bins(filled[c].to_numpy(), bounds[c],
                                                   bounds_check.CHECK_BINS),
                                 minlength=bounds_check.CHECK_BINS) for c in frame.columns])


@pytest.fixture
def seen(check_spy):
    """The check's exact histograms when its noise is drawn, and its own passes."""
    return check_spy


def release(frame, how="pairwise", **kw):
    args = dict(eps=4.0, bounds=BOUNDS, bounds_check=0.1, nulls="fill", fill=FILL, c=3)
    args.update(kw)
    if how == "top_pairs":
        return frame.dpmic.top_pairs(2, **args)
    return frame.dpmic.pairwise(**args)


@pytest.mark.parametrize("how", ["pairwise", "top_pairs"])
@pytest.mark.parametrize("partitions", [1, 6])
def test_the_check_reads_the_values_pass_on_dask(table, seen, how, partitions):
    frame = dd.from_pandas(table, npartitions=partitions)
    result = release(frame, how, B=40)
    assert seen["passes"] == 0  # no pass of its own
    np.testing.assert_array_equal(seen["hists"], exact(table))
    assert result.bounds_check is not None


def test_the_check_reads_the_values_pass_of_a_block_whose_rows_are_split(
        table, seen, monkeypatch):
    """Where one block's rows are split over its counting tasks (forced here, as on
    2 threads with many rows), the check's histograms are summed from each task's
    partitions: the same counts, no pass of its own."""
    from dpmic_dask.backends import dask as dask_backend

    wide = table.assign(e=table["a"] * 0.5, f=table["c"] - 1.0, g=table["b"] * 0.1)
    bounds = {**BOUNDS, "e": (-2.0, 5.0), "f": (-1.0, 8.0), "g": (-0.1, 0.1)}
    fill = {**FILL, "e": 1.0, "f": 3.0, "g": 0.0}
    split = []
    monkeypatch.setattr(dask_backend, "rows_split_pays", lambda *a: split.append(a) or True)
    monkeypatch.setattr(dask_backend, "_worker_threads", lambda: 2)
    monkeypatch.setattr(stages, "block_size", lambda request, B, c: 12)  # 21 pairs: blocks
    frame = dd.from_pandas(wide, npartitions=6)
    release(frame, B=40, bounds=bounds, fill=fill)
    assert split and seen["passes"] == 0
    np.testing.assert_array_equal(seen["hists"], exact(wide, bounds, fill))


def test_the_check_reads_the_values_pass_on_pandas(table, seen):
    release(table, B=60)
    assert seen["passes"] == 0
    np.testing.assert_array_equal(seen["hists"], exact(table))


def test_each_column_is_counted_once_when_pairs_are_counted_in_many_blocks(
        table, seen, monkeypatch):
    wide = table.assign(e=table["a"] * 2.0, f=table["c"] - 1.0)
    bounds = {**BOUNDS, "e": (-6.0, 20.0), "f": (-1.0, 8.0)}
    fill = {**FILL, "e": 1.0, "f": 3.0}
    blocks = []
    real = stages.block_size

    def small_blocks(request, B, c):
        blocks.append(real(request, B, c))
        return 2  # 15 pairs in many blocks; each column in several of them

    monkeypatch.setattr(stages, "block_size", small_blocks)
    frame = dd.from_pandas(wide, npartitions=4)
    release(frame, B=40, bounds=bounds, fill=fill)
    assert blocks and seen["passes"] == 0
    np.testing.assert_array_equal(seen["hists"], exact(wide, bounds, fill))


@pytest.mark.parametrize("kw", [dict(B=20), dict(B=40, mechanism="micr-geom")],
                         ids=["grid-without-the-edges", "count-noise"])
def test_the_check_makes_its_own_pass_where_the_values_pass_cannot_serve(table, seen, kw):
    frame = dd.from_pandas(table, npartitions=3)
    release(frame, **kw)
    assert seen["passes"] == 3
    np.testing.assert_array_equal(seen["hists"], exact(table))


def test_a_refusal_of_the_values_pass_charges_nothing(table):
    from dpmic_dask import InMemoryLedger
    from dpmic_dask.errors import MissingValuesError
    from dpmic_dask.privacy.accounting import Budget

    ledger = InMemoryLedger({"d": Budget(10.0)})
    frame = dd.from_pandas(table, npartitions=3)
    with pytest.raises(MissingValuesError):
        frame.dpmic.pairwise(eps=4.0, bounds=BOUNDS, bounds_check=0.1, B=40, c=3,
                             ledger=ledger, dataset="d")  # column d holds nulls
    assert ledger.history("d") == []


class PlainFrame(pd.DataFrame):
    """A frame type whose backend has ``evaluate`` without ``marginals``."""

    @property
    def _constructor(self):
        return PlainFrame


def _plain_backend():
    from dpmic_dask.backends import register
    from dpmic_dask.backends.base import Backend
    from dpmic_dask.backends.pandas import PandasBackend

    @register(PlainFrame)
    class PlainBackend(PandasBackend):
        counts_marginals = Backend.counts_marginals  # says it cannot

        def evaluate(self, frame, spec, fn, *, pairs_per_block, split_every, progress,
                     rows=None, task_memory=None):
            return super().evaluate(frame, spec, fn, pairs_per_block=pairs_per_block,
                                    split_every=split_every, progress=progress)

    return PlainBackend


def test_a_backend_without_marginals_gets_the_check_in_a_pass_of_its_own(table, seen):
    _plain_backend()
    release(PlainFrame(table), B=40)
    assert seen["passes"] == 1
    np.testing.assert_array_equal(seen["hists"], exact(table))
