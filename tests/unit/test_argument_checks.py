"""The user's ``eps`` is checked where the request is built; the costs derived
from it (the measure's parts, a built mechanism's cost) assert their invariants
without running the argument check again."""

import math
import sys
from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy import conversion
from dpmic_dask.privacy.costs import PURE_DP, ZCDP, PrivacyCost

BOUNDS = {"a": (0, 1), "b": (0, 1), "c": (0, 1)}


@pytest.fixture
def checks(monkeypatch):
    """Every call of ``check_epsilon``, by the module that made it."""
    calls: Counter = Counter()
    original = conversion.check_epsilon

    def counted(eps, name="eps"):
        calls[sys._getframe(1).f_globals["__name__"]] += 1
        return original(eps, name)

    for module in list(sys.modules.values()):
        if (getattr(module, "__name__", "").startswith("dpmic_dask")
                and getattr(module, "check_epsilon", None) is original):
            monkeypatch.setattr(module, "check_epsilon", counted)
    return calls


@pytest.fixture(scope="module")
def frame():
    gen = np.random.default_rng(3)
    table = pd.DataFrame({name: gen.uniform(0, 1, 400) for name in BOUNDS})
    return dd.from_pandas(table, npartitions=2)


@pytest.mark.parametrize(("arguments", "most"), [
    ({}, 3),  # the request, the registry's build, the mechanism's constructor
    ({"delta": 1e-6, "statistics": ("mic", "tau_a")}, 6),  # + two shares, rho(eps, delta)
])
def test_eps_is_checked_where_the_request_is_built_not_per_derived_cost(
        frame, checks, arguments, most):
    # one plan (bounds_check="auto" plans the release with and without a check)
    result = frame.dpmic.pairwise(eps=1, bounds=BOUNDS, bounds_check=None,
                                  ledger=dm.InMemoryLedger(uncapped=True), **arguments)
    assert len(result.values) == 3
    assert checks["dpmic_dask.release.request"] == 1
    assert checks["dpmic_dask.privacy.costs"] == 0  # no derived cost re-checks eps
    assert sum(checks.values()) <= most, dict(checks)


def test_the_counter_sees_a_cost_built_from_user_input(checks):
    """The test above can fail: a cost built with the full constructor is counted."""
    PrivacyCost(0.5)
    PURE_DP.split(PrivacyCost(1.0), [0.5, 0.5])
    assert checks["dpmic_dask.privacy.costs"] == 2


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, math.inf])
def test_derived_costs_still_refuse_what_is_not_a_positive_amount(bad):
    with pytest.raises(dm.InvalidParameterError, match="cost epsilon"):
        PrivacyCost.checked(bad)
    with pytest.raises(dm.InvalidParameterError, match="cost rho"):
        PrivacyCost.checked(1.0, 1e-6, bad)
    with pytest.raises(dm.InvalidParameterError, match="cost delta"):
        PrivacyCost.checked(1.0, math.nan if bad != 0.0 else 1.0)


def test_derived_costs_equal_the_checked_ones():
    total = ZCDP.total(1.0, 1e-6)
    for part in ZCDP.split(total, [0.25, 0.75]) + PURE_DP.split(PrivacyCost(2.0), [0.5, 0.5]):
        assert part == PrivacyCost(part.epsilon, part.delta, part.rho)


def test_a_bad_nulls_names_every_policy_a_release_takes():
    import numpy as np
    import pandas as pd

    import dpmic_dask  # noqa: F401
    from dpmic_dask.errors import InvalidParameterError

    gen = np.random.default_rng(0)  # test data only
    frame = pd.DataFrame({"x": gen.random(100), "y": gen.random(100)})
    for bad in ("bogus", ["drop"], None):
        with pytest.raises(InvalidParameterError) as refused:
            frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (0, 1)}, nulls=bad)
        said = str(refused.value)
        assert all(f"'{p}'" in said for p in ("raise", "fill", "drop", "category")), said


def test_nulls_fill_names_the_columns_without_a_fill_value():
    import dpmic_dask  # noqa: F401
    from dpmic_dask.errors import InvalidParameterError

    gen = np.random.default_rng(0)  # test data only
    frame = pd.DataFrame({"a": gen.random(100), "b": gen.random(100), "c": gen.random(100)})
    frame.loc[3, "c"] = np.nan
    with pytest.raises(InvalidParameterError) as refused:
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, nulls="fill", fill={"c": 0.5})
    said = str(refused.value)
    assert "fill gives none for column(s) ['a', 'b']" in said, said
    assert "fill=0.0" in said  # the one-number form is offered
    for bad in ("zero", [0.0], True):
        with pytest.raises(InvalidParameterError, match=r"one number for every column"):
            frame.dpmic.pairwise(1.0, bounds=BOUNDS, nulls="fill", fill=bad)


@pytest.mark.parametrize("fill", [0.5, 0, np.float32(0.25)])
def test_nulls_fill_takes_one_number_for_every_column(fill):
    import dask

    import dpmic_dask  # noqa: F401

    gen = np.random.default_rng(1)  # test data only
    frame = pd.DataFrame({"a": gen.random(100), "b": gen.random(100), "c": gen.random(100)})
    frame.loc[[3, 7], "c"] = np.nan
    with dask.config.set(scheduler="sync"):
        for data in (frame, dd.from_pandas(frame, npartitions=2)):
            one = data.dpmic.pairwise(50.0, bounds=BOUNDS, nulls="fill", fill=fill)
            each = data.dpmic.pairwise(50.0, bounds=BOUNDS, nulls="fill",
                                       fill=dict.fromkeys("abc", fill))
            assert one.pairs == each.pairs and one.privacy.n == each.privacy.n == 100
    with pytest.raises(dm.InvalidParameterError, match=r"fill\['a'\] must be a finite number"):
        frame.dpmic.pairwise(1.0, bounds=BOUNDS, nulls="fill", fill=2.0)  # outside (0, 1)


@pytest.mark.parametrize("fill, filled", [(False, 0.0), (True, 1.0), (np.bool_(True), 1.0)])
def test_a_boolean_column_is_filled_with_a_boolean(fill, filled):
    """A nullable boolean column's fill may be False or True (its bounds are 0 and
    1): the missing cells are counted as that value, as 0 or 1 are; the private
    release takes it too."""
    gen = np.random.default_rng(2)  # test data only
    x = gen.uniform(0, 1, 400)
    flag = pd.array(x > 0.5, dtype="boolean")
    flag[[3, 9, 27]] = pd.NA
    frame = pd.DataFrame({"a": x, "f": flag})
    exact = [frame.dpmic.pairwise_nonprivate(bounds={"a": (0, 1), "f": (False, True)},
                                             nulls="fill", B=16, c=2,
                                             fill={"a": 0.0, "f": value})["micr"].iloc[0]
             for value in (fill, filled, 1.0 - filled)]
    assert exact[0] == exact[1] != exact[2]
    released = frame.dpmic.pairwise(1.0, bounds={"a": (0, 1)}, columns=["a", "f"],
                                     nulls="fill", fill={"a": 0.0, "f": fill})
    assert released.privacy.n == 400


def test_bounds_too_narrow_for_their_magnitude_are_refused_before_the_charge():
    """Integers near 2**64 read as doubles are 4096 apart: bounds 1000 wide there
    held one or two doubles, every value rounded together and a pair whose exact
    MICr is 0.89 read 0.09, charged. Refused; the same relation offset to small
    numbers releases it."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    offset = gen.integers(0, 1000, 5000)
    y = offset / 10 + gen.normal(0, 1, offset.size)
    ledger = InMemoryLedger(uncapped=True)
    huge = pd.DataFrame({"u": np.uint64(2**64 - 2000) + offset.astype("uint64"), "y": y})
    with pytest.raises(dm.InvalidParameterError, match="too narrow for its magnitude"):
        huge.dpmic.pairwise(eps=1e6, bounds={"u": (2**64 - 2000, 2**64 - 1000),
                                             "y": (-20, 120)}, ledger=ledger)
    assert ledger.charges() == []
    small = pd.DataFrame({"u": offset.astype(float), "y": y})
    with pytest.warns(dm.LargeEpsilonWarning):
        result = small.dpmic.pairwise(eps=1e6, bounds={"u": (0, 1000), "y": (-20, 120)},
                                      ledger=ledger)
    assert result.to_pandas()["mic"].iloc[0] > 0.8


def test_narrow_bounds_that_doubles_resolve_are_accepted():
    """The refusal of bounds too narrow for their magnitude is for bounds the
    doubles cannot resolve (near 2**64): a 10 ms window of timestamps (about
    40,000 doubles of epoch seconds) and width 1e-3 near 1e9 release their
    relations."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    gen = np.random.default_rng(0)  # test data only
    offsets = gen.uniform(0, 0.01, 5000)
    stamps = pd.Timestamp("2024-01-02T09:30:00") + pd.to_timedelta(offsets, unit="s")
    frame = pd.DataFrame({"t": stamps, "f": 1e9 + offsets / 10,
                          "y": offsets * 1000 + gen.normal(0, 0.3, offsets.size)})
    with pytest.warns(dm.LargeEpsilonWarning):
        result = frame.dpmic.pairwise(
            eps=1e6, bounds={"t": ("2024-01-02T09:30:00", "2024-01-02T09:30:00.010"),
                             "f": (1e9, 1e9 + 1e-3), "y": (-5, 15)},
            ledger=InMemoryLedger(uncapped=True))
    table = result.to_pandas().set_index(["x", "y"])["mic"]
    assert table[("t", "y")] > 0.8 and table[("f", "y")] > 0.8
