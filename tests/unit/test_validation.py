import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm

SECRET = 987654.321
OK = dict(x_bounds=(0, 1), y_bounds=(0, 1), B=10, c=2)


def call_micr(x, y, **overrides):
    kw = {**OK, **overrides}
    return dm.micr(x, y, **kw)


def test_mismatched_lengths():
    with pytest.raises(dm.InvalidDataError, match="same length"):
        call_micr([SECRET] * 5, [0.1] * 6)


def test_too_few_rows():
    with pytest.raises(dm.InvalidDataError, match="at least 4 rows"):
        call_micr([SECRET] * 3, [0.1] * 3)
    with pytest.raises(dm.InvalidDataError, match="at least 4 rows"):
        dm.mice([SECRET] * 3, [0.1] * 3)


@pytest.mark.parametrize("bounds", [(1, 1), (2, 1), (0, np.inf), (np.nan, 1), (0,), "ab",
                                    ("0", "1"), (-1e308, 1e308), (True, 2)])
def test_bad_bounds_name_the_argument(bounds):
    with pytest.raises(dm.InvalidParameterError, match="y_bounds"):
        call_micr([0.2] * 5, [0.3] * 5, y_bounds=bounds)


@pytest.mark.parametrize("B", [3, 2.5, None])
def test_bad_B(B):
    with pytest.raises(dm.InvalidParameterError, match="B must"):
        call_micr([0.2] * 5, [0.3] * 5, B=B)


@pytest.mark.parametrize("c", [0, 1.5, None])
def test_bad_c(c):
    with pytest.raises(dm.InvalidParameterError, match="c must"):
        call_micr([0.2] * 5, [0.3] * 5, c=c)
    with pytest.raises(dm.InvalidParameterError, match="c must"):
        dm.mice([0.2] * 5, [0.3] * 5, c=c)


@pytest.mark.parametrize("alpha", [0, -0.5, 1.5, 3.9, np.nan, "0.6"])
def test_bad_alpha(alpha):
    with pytest.raises(dm.InvalidParameterError, match="alpha"):
        dm.mice([0.2] * 5, [0.3] * 5, alpha=alpha)


@pytest.mark.parametrize("bad", [
    np.array(["a", "b", "c", "d"]),
    np.array([1, 2, 3, 4], dtype=object),
    pd.Series(["1", "2", "3", "4"]),
    np.array([1 + 1j] * 4),
    np.zeros((4, 2)),
])
def test_non_numeric_or_wrong_shape(bad):
    with pytest.raises(dm.InvalidDataError, match="x must"):
        call_micr(bad, [0.1, 0.2, 0.3, 0.4])


def test_nan_is_refused_without_quoting_values():
    x = np.array([SECRET, 0.2, np.nan, 0.4, 0.5])
    for fn in (lambda: call_micr(x, x), lambda: dm.mice(x, x)):
        with pytest.raises(dm.MissingValuesError, match="missing") as info:
            fn()
        message = str(info.value)
        assert "987654" not in message and "nan" not in message.lower().replace("(nan)", "")


def test_errors_can_be_caught_as_value_and_type_errors():
    """Callers may catch the built-in kinds: what the library raises for a bad
    argument, a bad type and missing values is caught by them."""
    frame = pd.DataFrame({"a": [0.1, np.nan] * 10, "b": ["x", "y"] * 10, "c": [0.5] * 20})
    with pytest.raises(ValueError):
        frame.dpmic.pairwise(-1.0, bounds={"a": (0, 1), "c": (0, 1)})
    with pytest.raises(TypeError):
        frame.dpmic.pairwise(1.0, bounds={"b": (0, 1), "c": (0, 1)})
    with pytest.raises(ValueError):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "c": (0, 1)})


def test_accepts_integers_booleans_and_pandas():
    x = pd.Series([0, 1, 0, 1, 1, 0, 0, 1])
    y = np.array([False, True, False, True, True, False, False, True])
    assert call_micr(x, y) == pytest.approx(1.0)
    assert dm.mice(x, y) == pytest.approx(1.0)
