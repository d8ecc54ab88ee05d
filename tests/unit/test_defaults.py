import pytest

from dpmic_dask.privacy.mechanisms import default_parameters
from dpmic_dask.stats.defaults import B_CAP, TABLE2

KIND = {"micr-lap": "values", "micr-gauss": "values", "micr-geom": "counts"}


@pytest.mark.parametrize("mechanism", ["micr-lap", "micr-geom"])
def test_table_points_are_reproduced(mechanism):
    for n, at1, at01 in TABLE2[KIND[mechanism]]:
        assert default_parameters(mechanism, n, 1.0) == (at1[1], at1[0])
        assert default_parameters(mechanism, n, 0.1) == (at01[1], at01[0])


def test_interpolation_between_rows_and_columns():
    B, c = default_parameters("micr-lap", 750, 1.0)
    assert B == 70 and c == 5  # halfway between (500, 60) and (1000, 80)
    B_mid, _ = default_parameters("micr-lap", 500, 10 ** -0.5)
    assert B_mid == 70  # halfway in log10(eps) between 60 (eps=1) and 80 (eps=0.1)
    assert default_parameters("micr-lap", 5000, 100.0) == default_parameters("micr-lap", 5000, 1.0)
    assert default_parameters("micr-lap", 5, 1.0) == default_parameters("micr-lap", 25, 1.0)


def test_extrapolation_grows_then_caps():
    small, _ = default_parameters("micr-lap", 10_000, 1.0)
    bigger, _ = default_parameters("micr-lap", 20_000, 1.0)
    assert bigger == round(150 * 2 ** 0.4)
    assert bigger > small
    for mechanism in ("micr-lap", "micr-gauss", "micr-geom"):
        assert default_parameters(mechanism, 10**9, 1.0)[0] == B_CAP[KIND[mechanism]]


def test_mice_lap_defaults_grow_like_n_to_the_alpha_whatever_eps():
    for n in (100, 5000, 10**6):
        B, c = default_parameters("mice-lap", n, 1.0)
        assert (B, c) == default_parameters("mice-lap", n, 0.01)  # MICe's grid ignores eps
        assert B == pytest.approx(max(n ** 0.6, 4.0)) and c == 15
    assert default_parameters("mice-lap", 2, 1.0)[0] == 4.0


def test_a_mechanism_gets_its_default_grid_from_what_it_is_not_its_name():
    """A newly registered mechanism needs no row keyed by its name (a missing row
    was a KeyError after every partition was read)."""
    from dpmic_dask.privacy.mechanisms import register
    from dpmic_dask.privacy.mechanisms.laplace import LaplaceMechanism
    from dpmic_dask.stats.statistics import get_statistic

    class Renamed(LaplaceMechanism):
        pass

    from dpmic_dask.privacy.mechanisms import _RELEASES

    register("micr-renamed", "micr", Renamed)
    try:
        built = Renamed(epsilon=1.0, statistic=get_statistic("micr"), label="micr-renamed")
        assert built.grid_kind == "values"
        assert default_parameters("micr-renamed", 5000, 1.0) == default_parameters(
            "micr-lap", 5000, 1.0)
    finally:
        del _RELEASES["micr-renamed"]


def _wide_frame(columns=20, rows=20_000):
    import numpy as np
    import pandas as pd

    gen = np.random.default_rng(5)
    frame = pd.DataFrame({f"c{i}": gen.normal(size=rows) for i in range(columns)})
    return frame, {name: (-4.0, 4.0) for name in frame.columns}


def _eps_for(band, n, pairs):
    """An eps whose Gaussian noise on each of ``pairs`` values has its ci95 in ``band``."""
    import numpy as np

    from dpmic_dask.privacy.mechanisms import plan_noise

    for eps in np.geomspace(0.05, 20, 400):
        ci = plan_noise(mechanism="micr-gauss", n=n, eps=float(eps), delta=1e-7, pairs=pairs,
                        B=200, c=5).ci95
        if band[0] <= ci < band[1]:
            return float(eps)
    raise AssertionError("no eps in the band")


def test_wide_noise_caps_the_default_grid_of_a_release():
    """Where each released value's noise is wide (ci95 >= 0.3; >= 0.2), the release's
    default B is 120 (150): finer grids buy no accuracy there. A narrower noise keeps
    the table's B, and a B the caller gives is used as given."""
    import warnings

    from dpmic_dask.privacy.accounting import InMemoryLedger
    from dpmic_dask.stats.defaults import NOISY_B_CAPS

    frame, bounds = _wide_frame()
    n, pairs = len(frame), 190
    table_B, _ = default_parameters("micr-gauss", n, 0.1)
    assert table_B > max(cap for _, cap in NOISY_B_CAPS)  # so that a cap shows
    expected = {(0.3, 5.0): 120, (0.2, 0.3): 150, (0.0, 0.2): table_B}
    for band, B in expected.items():
        eps = _eps_for(band, n, pairs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = frame.dpmic.pairwise(eps, delta=1e-7, bounds=bounds,
                                          ledger=InMemoryLedger(uncapped=True))
        assert result.privacy.B == B, band
        assert f"B = {B}," in result.report()
        assert (f"{B} is the largest default B" in result.report()) == (B != table_B)
        lines = frame.dpmic.plan(eps, delta=1e-7, bounds=bounds).explain(rows=n, show=False)
        assert (f"the default B is capped at {B}" in lines) == (B != table_B)
    eps = _eps_for((0.3, 5.0), n, pairs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        given = frame.dpmic.pairwise(eps, delta=1e-7, bounds=bounds, B=200,
                                     ledger=InMemoryLedger(uncapped=True))
    assert given.privacy.B == 200


def test_one_pair_release_caps_only_wide_noise():
    """The cap follows the release's own noise: one pair at eps 1 keeps the table's
    B, at a tiny eps it gets the cap."""
    import dpmic_dask as dm
    from dpmic_dask.privacy.accounting import InMemoryLedger

    frame, bounds = _wide_frame(columns=2)
    x, y = frame["c0"].to_numpy(), frame["c1"].to_numpy()
    result = dm.private_mic(x, y, eps=1.0, x_bounds=bounds["c0"], y_bounds=bounds["c1"],
                            ledger=InMemoryLedger(uncapped=True))
    assert result.B == default_parameters("micr-lap", len(x), 1.0)[0]
    tiny = dm.private_mic(x, y, eps=0.002, x_bounds=bounds["c0"], y_bounds=bounds["c1"],
                          ledger=InMemoryLedger(uncapped=True))
    assert tiny.B == 120


@pytest.mark.slow
def test_the_plan_shows_the_grid_the_checked_release_uses():
    """With ``bounds_check="auto"`` at a row count where the check speaks, the
    release spends a share on the check, so its values' noise is a little wider
    than without it; the plan must show that release's noise and B (a ci95 just
    under the cap's 0.2 without the check is over it with the check; at 25,000
    rows the check speaks from 100 columns on, about 10 s of release)."""
    import re
    import warnings

    from dpmic_dask.privacy.accounting import InMemoryLedger
    from dpmic_dask.privacy.mechanisms import plan_noise
    from dpmic_dask.release.bounds_check import rows_to_speak

    frame, bounds = _wide_frame(columns=100, rows=25_000)
    n, pairs = len(frame), 4950
    lo, hi = 1e-3, 1e3
    for _ in range(60):  # the eps at which the unchecked noise's ci95 is 0.2
        mid = (lo * hi) ** 0.5
        ci = plan_noise(mechanism="micr-lap", n=n, eps=mid, delta=0.0, pairs=pairs,
                        B=200, c=5).ci95
        lo, hi = (mid, hi) if ci >= 0.2 else (lo, mid)
    eps = hi * 1.005  # unchecked: ci95 just under 0.2
    plan = frame.dpmic.plan(eps, bounds=bounds, mechanism="micr-lap")
    assert rows_to_speak(plan.planned.auto_check.bounds_check) <= n  # the check runs
    said = plan.explain(rows=n, show=False)
    shown = re.search(r"ci95 \+/-([0-9.]+) \(B = (\d+)", said)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = plan.release(ledger=InMemoryLedger(uncapped=True))
    assert result.bounds_note is None  # the checked plan was released
    assert int(shown.group(2)) == result.privacy.B == 150
    assert float(shown.group(1)) == float(f"{result.privacy.ci95:.3g}")
