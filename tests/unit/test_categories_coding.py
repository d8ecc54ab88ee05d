"""The category coding's fast paths against a plain Python reference, per dtype."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpmic_dask.errors import InvalidDataError
from dpmic_dask.stats.categories import CategoryAxis

LISTED = ("north", "south", "east")


def reference(values, axis: CategoryAxis) -> np.ndarray:
    out = []
    for v in values:
        if v is None or v is pd.NA or (isinstance(v, float) and v != v):
            out.append(np.nan if axis.null_code is None else axis.null_code + 0.5)
        elif v in axis.categories:
            out.append(axis.categories.index(v) + 0.5)
        else:
            out.append(axis.other_code + 0.5)
    return np.array(out, dtype=np.float64)


@pytest.mark.parametrize("null_category", [False, True])
@pytest.mark.parametrize("dtype", ["object", "string[pyarrow]", "str", "string[python]",
                                   "category", "large_string[pyarrow]"])
def test_every_dtype_codes_like_the_reference(dtype, null_category):
    gen = np.random.default_rng(6)  # test data only
    values = gen.choice(["north", "south", "east", "west", "zz"], 5000).astype(object)
    values[::7] = None
    values[3::11] = np.nan
    axis = CategoryAxis("region", LISTED, null_category=null_category)
    if dtype == "category":
        series = pd.Series(values).astype("category")
    elif dtype == "large_string[pyarrow]":
        import pyarrow as pa

        series = pd.Series(values, dtype=pd.ArrowDtype(pa.large_string()))
    else:
        series = pd.Series(values, dtype=dtype)
    np.testing.assert_array_equal(axis.encode(series), reference(values, axis))


@pytest.mark.parametrize("dtype", ["int64", "Int64", "int64[pyarrow]", "int16", "object"])
def test_integer_categories(dtype):
    values = [3, 7, 5, None, 7, 3] if dtype in ("Int64", "int64[pyarrow]", "object") \
        else [3, 7, 5, 0, 7, 3]
    axis = CategoryAxis("k", (3, 7), null_category=True)
    expected = reference(values, axis)
    np.testing.assert_array_equal(axis.encode(pd.Series(values, dtype=dtype)), expected)


class _Secret:
    """A value whose own failures would quote it."""

    def __hash__(self):
        raise RuntimeError("secret-hash-4471")

    def __eq__(self, other):
        raise RuntimeError("secret-eq-4471")


@pytest.mark.parametrize("odd", [_Secret(), [1, 2]])
def test_a_value_that_cannot_be_looked_up_is_refused_without_its_message(odd):
    import dpmic_dask  # noqa: F401  (the accessor)

    frame = pd.DataFrame({"g": pd.Series([odd] + ["a"] * 99, dtype=object),
                          "x": np.linspace(0, 1, 100)})
    with pytest.raises(InvalidDataError, match="cannot be matched") as caught:
        frame.dpmic.pairwise(eps=1.0, bounds={"x": (0, 1)}, categories={"g": ["a", "b"]})
    assert "4471" not in str(caught.value) and "'g'" in str(caught.value)
