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
