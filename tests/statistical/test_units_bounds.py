"""Private bounds per unit (docs/privacy.md, section 12): the histograms are counted on
the frame bounded to ``k`` rows per unit, whose histograms move by at most ``k`` in L1
when one unit is added or removed, so each pass's noise is discrete Laplace at
``k / eps_pass`` -- checked here through the public functions, at the true scale and
at 0.7x and 1.3x of it."""

import itertools

import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
import dpmic_dask.release.histograms as pb
import dpmic_dask.release.steps as units_module
from dpmic_dask.privacy.bounds import BoundsGrid, column_histograms
from dpmic_dask.privacy.costs import PrivacyCost, column_epsilon
from dpmic_dask.release.bounding import bound_contributions
from tests.statistical.helpers import ALPHA, chi_square_pvalue, discrete_laplace_pmf, rerun_once


def unit_table(n_units=2000, seed=0, whale_rows=0):
    """A planted per-unit table: each unit's level is uniform in [100, 200], its
    1..6 rows sit within +-1 of it; optionally one unit with ``whale_rows`` rows at
    a far value (test data only)."""
    gen = np.random.default_rng(seed)
    sizes = gen.integers(1, 7, n_units)
    unit = np.repeat(np.arange(n_units), sizes)
    level = gen.uniform(100.0, 200.0, n_units)[unit]
    x = level + gen.uniform(-1.0, 1.0, unit.size)
    y = 0.5 * level + gen.uniform(-1.0, 1.0, unit.size)
    frame = pd.DataFrame({"cid": unit, "x": x, "y": y})
    if whale_rows:
        whale = pd.DataFrame({"cid": -1, "x": np.full(whale_rows, 1e6),
                              "y": np.full(whale_rows, -1e6)})
        frame = pd.concat([frame, whale], ignore_index=True)
    return frame


def spy_on_histograms(monkeypatch):
    seen = []
    real = pb.noisy_histograms

    def spy(counts, eps_pass, **kw):
        noisy, scale = real(counts, eps_pass, **kw)
        seen.append((np.asarray(counts, dtype=np.int64), noisy, scale))
        return noisy, scale

    monkeypatch.setattr(pb, "noisy_histograms", spy)
    return seen


@pytest.mark.slow
def test_adding_or_removing_one_unit_moves_each_bounded_histogram_by_at_most_k():
    """Exhaustively over small tables (fixed key): removing every row of one unit
    changes each column's histogram of the bounded frame by at most k in L1."""
    grid = BoundsGrid()
    points = [-3.0, 0.7, 1e9]
    key = (12345, 67890)
    for k in (1, 2, 3):
        for values in itertools.product(points, repeat=4):
            for owners in ((0, 0, 0, 1), (0, 1, 1, 1), (0, 0, 1, 2), (2, 2, 2, 2)):
                frame = pd.DataFrame({"u": owners, "x": values})
                full = column_histograms(
                    [bound_contributions(frame, ("u",), k, ("x",), key)["x"].to_numpy()],
                    grid)[0]
                for gone in set(owners):
                    rest = frame[frame["u"] != gone]
                    less = column_histograms(
                        [bound_contributions(rest, ("u",), k, ("x",), key)["x"].to_numpy()],
                        grid)[0]
                    assert np.abs(full - less).sum() <= k


@pytest.mark.slow
@rerun_once
def test_pairwise_private_bounds_per_unit_draw_noise_at_k_over_eps(monkeypatch):
    """Through dm.pairwise(bounds="private", privacy_unit=..., max_rows_per_unit=k):
    the first-pass histograms (two columns, 2 x 8,177 draws) are discrete Laplace at
    k / eps_column -- not at the row-level 2 / eps_column, nor at 0.7x or 1.3x."""
    k, eps, share = 4, 2.0, 0.25
    seen = spy_on_histograms(monkeypatch)
    frame = unit_table(n_units=1500)
    ledger = dm.InMemoryLedger(uncapped=True)
    result = frame.dpmic.pairwise(eps=eps, bounds="private", columns=["x", "y"],
                                  privacy_unit="cid", max_rows_per_unit=k,
                                  bounds_share=share, refine=False, ledger=ledger)
    assert len(ledger.charges()) == 1
    assert result.privacy.privacy_unit == "cid" and result.privacy.max_rows_per_unit == k
    found = result.private_bounds
    assert found.privacy_unit == "cid" and found.max_rows_per_unit == k
    # the bounds' part of the release's part (the row count's share comes first)
    eps_column = found.epsilon_per_column
    # release_cost is the values' own part: the bounds took share of both together
    inner = result.privacy.release_cost.epsilon / (1 - share)
    assert eps_column == pytest.approx(column_epsilon(PrivacyCost(inner * share), 2),
                                       rel=1e-6)
    (counts, noisy, scale), = seen  # one draw for both columns, no refining pass
    assert scale == pytest.approx(k / eps_column) and found.noise_scale == scale
    assert len(noisy) == 2
    z = np.concatenate([(n - c).astype(np.int64) for c, n in zip(counts, noisy)])
    assert z.size == 2 * BoundsGrid().size
    for mult, fits in [(1.0, True), (0.7, False), (1.3, False), (2 / k, False)]:
        pvalue = chi_square_pvalue(z, lambda s: discrete_laplace_pmf(mult * scale, s))
        assert (pvalue > ALPHA) == fits, (mult, pvalue)
    assert "per cid, at most 4 rows each" in result.report()


def test_standalone_private_bounds_per_unit_scales_and_report(monkeypatch):
    """dm.private_bounds(..., privacy_unit=...): both passes at k / eps_pass, the row
    count not released, the unit in the report."""
    seen = spy_on_histograms(monkeypatch)
    k, eps = 3, 1.0
    found = dm.private_bounds(unit_table(n_units=1500), eps, columns=["x"],
                              privacy_unit="cid", max_rows_per_unit=k,
                              ledger=dm.InMemoryLedger(uncapped=True))
    first, second = [s for _, _, s in seen]
    assert first == pytest.approx(k / (0.3 * eps)) and second == pytest.approx(k / (0.7 * eps))
    assert found.noise_scale == first and found.refine_noise_scale == second
    assert found.rows is None
    report = found.report()
    assert "per cid, at most 3 rows each" in report and "n not released" in report


def test_zcdp_bounds_per_unit_are_k_over_eps_column_at_the_rho_of_their_passes():
    k = 3
    frame = unit_table(n_units=1000)
    result = frame.dpmic.pairwise(eps=2.0, delta=1e-6, bounds="private", columns=["x", "y"],
                                  privacy_unit="cid", max_rows_per_unit=k, bounds_share=0.2,
                                  ledger=dm.InMemoryLedger(uncapped=True))
    found = result.private_bounds
    eps_column = found.epsilon_per_column
    rho_values = result.privacy.release_cost.amount()  # the values' own part
    # two columns, each two pure passes (0.3 and 0.7 of eps_column): rho adds up to
    # the bounds' share, 0.2 of the part the bounds and the values split
    bounds_rho = 2 * ((0.3 * eps_column) ** 2 + (0.7 * eps_column) ** 2) / 2
    assert bounds_rho <= 0.25 * rho_values * (1 + 1e-6)
    assert bounds_rho == pytest.approx(0.25 * rho_values, rel=1e-6)
    assert found.noise_scale == pytest.approx(k / (0.3 * eps_column))
    assert found.refine_noise_scale == pytest.approx(k / (0.7 * eps_column))


def test_bounds_cover_a_planted_per_unit_table_and_ignore_a_whale():
    """The released bounds cover the planted levels [100, 200] (+-1) tightly; a unit
    with 20,000 rows at 1e6 keeps only k of them, too few to widen the bounds --
    at row level the same table's bounds reach out to it."""
    frame = unit_table(n_units=3000, seed=3, whale_rows=20_000)
    ledger = dm.InMemoryLedger(uncapped=True)
    found = dm.private_bounds(frame, 1.0, columns=["x", "y"], privacy_unit="cid",
                              max_rows_per_unit=2, ledger=ledger)
    (xlo, xhi), (ylo, yhi) = found.bounds["x"], found.bounds["y"]
    assert 40 <= xlo <= 102 and 198 <= xhi <= 400, found.bounds
    assert 20 <= ylo <= 52 and 99 <= yhi <= 200, found.bounds
    bounded = frame[frame["cid"] >= 0]
    inside = ((bounded["x"] >= xlo) & (bounded["x"] <= xhi)).mean()
    assert inside >= 0.97
    row_level = dm.private_bounds(frame, 1.0, columns=["x"], refine=False, ledger=ledger)
    assert row_level.bounds["x"][1] >= 1e6  # the whale's rows stand out at row level
    assert len(ledger.charges()) == 2


def test_one_bounded_frame_serves_the_bounds_and_the_values(monkeypatch):
    """One bounding (one key) per release: the bounds' passes and the values read
    the same rows of each unit."""
    calls = []
    real = units_module.bound_refusing_missing

    def counting(*args, **kw):
        calls.append(args[2])
        return real(*args, **kw)

    monkeypatch.setattr(units_module, "bound_refusing_missing", counting)
    ledger = dm.InMemoryLedger(uncapped=True)
    result = unit_table(n_units=800).dpmic.pairwise(
        eps=4.0, bounds="private", columns=["x", "y"], privacy_unit="cid",
        max_rows_per_unit=2, ledger=ledger)
    assert calls == [2] and len(ledger.charges()) == 1
    assert np.isfinite(result.values).all()
    assert result.private_bounds.rows == result.privacy.rows_lower_bound


def test_per_unit_bounds_refusals_come_before_any_charge():
    frame = unit_table(n_units=300)
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError, match="privacy_unit needs max_rows"):
        dm.private_bounds(frame, 1.0, columns=["x"], privacy_unit="cid", ledger=ledger)
    with pytest.raises(dm.InvalidParameterError, match="cannot have bounds"):
        dm.private_bounds(frame, 1.0, columns=["cid", "x"], privacy_unit="cid",
                          max_rows_per_unit=2, ledger=ledger)
    with pytest.raises(dm.InvalidParameterError):  # k / eps too large to sample
        dm.private_bounds(frame, 1e-12, columns=["x"], privacy_unit="cid",
                          max_rows_per_unit=2**20, ledger=ledger)
    with pytest.raises(dm.InvalidParameterError):
        frame.dpmic.pairwise(eps=1e-9, bounds="private", columns=["x", "y"],
                             privacy_unit="cid", max_rows_per_unit=2**20, ledger=ledger)
    assert ledger.charges() == []
