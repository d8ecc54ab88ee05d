"""Column kinds: detection from the schema, axis values, bounds in the column's own
kind, refusals that name the column and dtype only, and the registration hook."""

from __future__ import annotations

import datetime as dt
import decimal
import re

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import dpmic_dask as dm
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.stats import kinds
from dpmic_dask.stats.kindbase import ColumnKind
from dpmic_dask.stats.kinds import (
    axis_arguments,
    column_kind,
    format_bounds,
    register_kind,
)
from dpmic_dask.stats.timeticks import seconds_of_ticks

JAN_2024 = 1_704_067_200.0  # 2024-01-01 00:00:00 UTC in seconds since the epoch


def numbers_of_every_dtype():
    base = [1, 2, None]
    return {
        "float32": pd.Series([1.0, 2.0, np.nan], dtype="float32"),
        "float64": pd.Series([1.0, 2.0, np.nan]),
        "int8": pd.Series([1, 2, 3], dtype="int8"),
        "int16": pd.Series([1, 2, 3], dtype="int16"),
        "int32": pd.Series([1, 2, 3], dtype="int32"),
        "int64": pd.Series([1, 2, 3], dtype="int64"),
        "uint8": pd.Series([1, 2, 3], dtype="uint8"),
        "uint64": pd.Series([1, 2, 3], dtype="uint64"),
        "Int64": pd.Series(base, dtype="Int64"),
        "UInt16": pd.Series(base, dtype="UInt16"),
        "Float64": pd.Series(base, dtype="Float64"),
        "int64[pyarrow]": pd.Series(base, dtype="int64[pyarrow]"),
        "double[pyarrow]": pd.Series(base, dtype="double[pyarrow]"),
        "decimal[pyarrow]": pd.Series([decimal.Decimal(1), decimal.Decimal(2), None],
                                      dtype=pd.ArrowDtype(pa.decimal128(10, 2))),
        "decimal256[pyarrow]": pd.Series([decimal.Decimal(1), decimal.Decimal(2), None],
                                         dtype=pd.ArrowDtype(pa.decimal256(40, 2))),
        "Decimal objects": pd.Series([decimal.Decimal(1), decimal.Decimal(2), None]),
    }


@pytest.mark.parametrize("name", list(numbers_of_every_dtype()))
def test_numbers_of_every_dtype_are_their_values(name):
    series = numbers_of_every_dtype()[name]
    kind = column_kind("c", series.dtype, bounds=(0, 10))  # bounds: an object column's kind
    assert kind.name == "number"
    values = kind.axis(series)
    assert values.dtype == np.float64
    expected = [1.0, 2.0, 3.0 if len(series.dropna()) == 3 else np.nan]
    np.testing.assert_array_equal(values, expected)


def test_a_float64_column_is_read_without_a_copy():
    series = pd.Series(np.linspace(0, 1, 10))
    assert np.shares_memory(column_kind("c", series.dtype).axis(series), series.to_numpy())
    axis = axis_arguments(pd.DataFrame({"a": series, "b": series}).dtypes,
                          bounds={"a": (0, 1), "b": (0, 1)})
    assert axis.kinds == {"a": None, "b": None}  # nothing converted
    frame = pd.DataFrame({"a": series, "b": series})
    assert axis_frame(frame, axis.kinds) is frame


def test_decimals_from_sql_numeric_are_numbers_when_their_bounds_are():
    series = pd.Series([decimal.Decimal("1.25"), None, decimal.Decimal("3")])
    kind = column_kind("price", series.dtype, bounds=(0, 10))
    assert kind.name == "number"
    np.testing.assert_array_equal(kind.axis(series), [1.25, np.nan, 3.0])


@pytest.mark.parametrize("arrow_type", [
    pa.decimal128(12, 2), pa.decimal256(12, 2), pa.decimal128(15, 15), pa.decimal128(15, -3),
    pa.decimal128(9, 0), pa.decimal128(18, 4), pa.decimal128(38, 10), pa.decimal256(60, 25)])
def test_pyarrow_decimals_are_the_double_nearest_their_value(arrow_type):
    gen = np.random.default_rng(arrow_type.precision)  # test data only
    digits = gen.integers(0, 10, (2000, arrow_type.precision))
    unscaled = [int("".join(map(str, row[:gen.integers(1, arrow_type.precision + 1)])))
                for row in digits]
    unscaled += [10 ** arrow_type.precision - 1, 1, 0]
    values = [None if k % 11 == 3 else decimal.Decimal((k % 2, tuple(map(int, str(u))),
                                                          -arrow_type.scale))
              for k, u in enumerate(unscaled)]
    exact = np.array([np.nan if v is None else float(v) for v in values])
    array = pa.array(values, type=arrow_type)
    series = pd.Series(array, dtype=pd.ArrowDtype(arrow_type), name="amount")
    kind = column_kind("amount", series.dtype)
    assert kind.name == "number"
    np.testing.assert_array_equal(kind.axis(series), exact)  # NaN where null
    np.testing.assert_array_equal(kind.axis(series.iloc[7:1500]), exact[7:1500])
    chunked = pd.Series(pd.arrays.ArrowExtensionArray(pa.chunked_array(
        [array.slice(5, 300), array.slice(1000, 3), array.slice(0, 0)])))
    np.testing.assert_array_equal(kind.axis(chunked), np.r_[exact[5:305], exact[1000:1003]])
    assert kind.axis(series.iloc[:0]).dtype == np.float64


def test_decimal_columns_are_numbers_never_categories():
    from dpmic_dask.stats import categories

    for arrow_type in (pa.decimal128(12, 2), pa.decimal256(40, 2)):
        dtype = pd.ArrowDtype(arrow_type)
        assert dtype.kind == "O"  # like a string column: the dtype says number, not its kind
        assert categories.column_kind(dtype) == "other"
        assert not categories.needs_categories(dtype)
        axis = axis_arguments({"amount": dtype, "x": np.dtype("float64")},
                              bounds={"amount": (decimal.Decimal(0), 10), "x": (0, 1)})
        assert axis.kinds["amount"].name == "number" and axis.bounds["amount"] == (0, 10)


@pytest.mark.parametrize("values", [
    [decimal.Decimal("1.5"), "2.5"], [decimal.Decimal("1.5"), "SECRET-99"],
    [decimal.Decimal("1.5"), True], [1, "2"], ["1", "2"]])
def test_an_object_column_of_numbers_holds_nothing_else(values):
    series = pd.Series([*values, None] * 4, dtype=object, name="price")
    kind = column_kind("price", series.dtype, bounds=(0, 10))
    with pytest.raises(dm.InvalidDataError) as info:
        kind.axis(series)
    assert str(info.value) == "column 'price' (dtype object) holds values that are not numbers"
    mixed = pd.Series([decimal.Decimal("1.5"), 2, 3.25, np.int64(4), np.float32(0.5), None,
                       np.nan, pd.NA, decimal.Decimal("NaN")], dtype=object)
    np.testing.assert_array_equal(kind.axis(mixed), [1.5, 2, 3.25, 4, 0.5] + [np.nan] * 4)


@pytest.mark.parametrize("dtype", ["bool", "boolean", "bool[pyarrow]"])
def test_booleans_are_zero_one_with_bounds_implied(dtype):
    series = pd.Series([True, False, True], dtype=dtype)
    kind = column_kind("flag", series.dtype)
    assert kind.name == "boolean" and kind.implied_bounds == (0.0, 1.0)
    np.testing.assert_array_equal(kind.axis(series), [1.0, 0.0, 1.0])
    frame = pd.DataFrame({"flag": series, "x": [0.1, 0.2, 0.3]})
    axis = axis_arguments(frame.dtypes, bounds={"x": (0, 1)}, columns=["flag", "x"])
    assert axis.bounds["flag"] == (0.0, 1.0)
    axis = axis_arguments(frame.dtypes, bounds="private", columns=["flag", "x"])
    assert axis.bounds == {"flag": (0.0, 1.0), "x": "private"}  # nothing paid for flag


@pytest.mark.parametrize("bounds, kept", [
    ((2, 10), False), ((0, 1e9), False), ((-5, 0.5), False), ((-3, 3), False),
    ((0, 1), True), ((-0.5, 1.5), True), ((0.2, 0.8), True), ((0.5, 1.5), True),
])
def test_boolean_bounds_must_keep_false_and_true_apart(bounds, kept):
    """Bounds given to a boolean column are refused before anything is read or
    charged when False and True would share every cell of the coarsest grids;
    bounds that keep them apart release the pair as it is."""
    gen = np.random.default_rng(5)  # test data only
    x = gen.uniform(0, 100, 3000)
    frame = pd.DataFrame({"x": x, "flag": x > 50})
    ledger = dm.InMemoryLedger()
    ledger.set_budget("d", dm.Budget(5.0))

    def release():
        return frame.dpmic.pairwise(4.0, bounds={"x": (0, 100), "flag": bounds},
                                    ledger=ledger, dataset="d")

    if not kept:
        with pytest.raises(dm.InvalidParameterError, match=r"bounds\['flag'\].*midpoint"):
            release()
        assert ledger.spent("d") == 0
        return
    # flag is a step function of x: MIC 1 exactly; at eps = 4 and 3,000 rows the
    # noise's ci95 is about 0.05 (both on one side, it read as 0.0-0.01)
    assert release().values[0] > 0.8


@pytest.mark.parametrize("series", [
    pd.Series(pd.to_datetime(["2024-01-01", None])),
    pd.Series(pd.to_datetime(["2024-01-01", None]).as_unit("us").tz_localize("UTC")),
    pd.Series(pd.to_timedelta(["1 day", None])),
    pd.Series([dt.date(2024, 1, 1), None], dtype="date32[pyarrow]"),
    pd.Series(pd.to_datetime(["2024-01-01", None]), dtype="timestamp[ms][pyarrow]"),
], ids=["ns", "us-utc", "timedelta", "date32", "arrow-ms"])
def test_times_named_numbers_are_refused_not_read_as_their_storage_ticks(series):
    with pytest.raises(dm.InvalidParameterError, match=r"kinds\['t'\].*storage ticks"):
        column_kind("t", series.dtype, kind="number")
    assert column_kind("t", series.dtype).name in ("timestamp", "timedelta")


def test_unit_casts_refuse_numeric_bounds_that_hold_no_whole_unit():
    """Days since the epoch with bounds given as day numbers (read as seconds):
    no whole day lies in (19700, 20100) s, so every value would clamp to one end."""
    days = pd.Series([19700, 19800, 20000], dtype="int64", name="days")
    frame = pd.DataFrame({"days": days})
    with pytest.raises(dm.InvalidParameterError, match=r"bounds\['days'\].*whole 'D'"):
        axis_arguments(frame.dtypes, bounds={"days": (19700, 20100)},
                       kinds={"days": ("timestamp", "D")})
    day = 86400
    # a bound on a whole day counts; seconds spanning the data are the documented form
    for lo, hi in ((19700 * day, 19700 * day + 10), (19700 * day, 20100 * day)):
        axis = axis_arguments(frame.dtypes, bounds={"days": (lo, hi)},
                              kinds={"days": ("timestamp", "D")})
        assert axis.bounds["days"] == (lo, hi)
    # a float column can hold parts of a day: not refused on this ground
    frame = pd.DataFrame({"days": days.astype("float64")})
    axis_arguments(frame.dtypes, bounds={"days": (19700, 20100)},
                   kinds={"days": ("timestamp", "D")})


def time_columns():
    stamps = pd.to_datetime(["2024-01-01", "2024-01-02 12:00", None], format="ISO8601")
    return {
        "datetime64[ns]": pd.Series(stamps),
        "datetime64[s]": pd.Series(stamps.as_unit("s")),
        "datetime64[ms, UTC]": pd.Series(stamps.as_unit("ms").tz_localize("UTC")),
        "datetime64[us, Asia/Tokyo]": pd.Series(
            stamps.tz_localize("UTC").tz_convert("Asia/Tokyo").as_unit("us")),
        "timestamp[us][pyarrow]": pd.Series(stamps, dtype="timestamp[us][pyarrow]"),
        "timestamp[ns, tz=UTC][pyarrow]": pd.Series(stamps.tz_localize("UTC"),
                                                    dtype="timestamp[ns, tz=UTC][pyarrow]"),
    }


@pytest.mark.parametrize("name", list(time_columns()))
def test_times_are_seconds_since_the_epoch_utc(name):
    series = time_columns()[name]
    kind = column_kind("t", series.dtype)
    assert kind.name == "timestamp"
    np.testing.assert_array_equal(kind.axis(series), [JAN_2024, JAN_2024 + 1.5 * 86400, np.nan])


def test_dates_are_midnight_utc():
    days = [dt.date(2024, 1, 1), dt.date(2024, 1, 3), None]
    for series, bounds in ((pd.Series(days, dtype="date32[pyarrow]"), None),
                           (pd.Series(days), ("2023-01-01", dt.date(2025, 1, 1)))):
        kind = column_kind("d", series.dtype, bounds=bounds)
        assert kind.name == "timestamp"
        np.testing.assert_array_equal(kind.axis(series), [JAN_2024, JAN_2024 + 2 * 86400, np.nan])
    assert kind.format(JAN_2024) == pd.Timestamp("2024-01-01", tz="UTC")
    assert column_kind("d", pd.Series(days, dtype="date32[pyarrow]").dtype).format(
        JAN_2024) == dt.date(2024, 1, 1)


def test_durations_are_seconds():
    for series in (pd.Series(pd.to_timedelta(["1 day", "90 min", None])),
                   pd.Series(pd.to_timedelta(["1 day", "90 min", None]),
                             dtype="duration[ms][pyarrow]")):
        kind = column_kind("wait", series.dtype)
        assert kind.name == "timedelta"
        np.testing.assert_array_equal(kind.axis(series), [86400.0, 5400.0, np.nan])
        assert kind.bound("2 hours", "b") == 7200.0
        assert kind.bound(dt.timedelta(days=1), "b") == 86400.0


def test_nanosecond_times_keep_the_precision_of_a_double():
    ticks = np.array([1_704_067_200_123_456_789], dtype=np.int64)
    seconds = seconds_of_ticks(ticks, "ns")[0]
    assert abs(seconds - 1_704_067_200.123456789) < 3e-7  # one ulp at 1.7e9 is 2.4e-7


def test_time_bounds_in_the_columns_own_kind():
    kind = column_kind("t", np.dtype("M8[ns]"))
    for given in ("2024-01-01", "2024-01-01T00:00:00Z", dt.date(2024, 1, 1),
                  dt.datetime(2024, 1, 1), pd.Timestamp("2024-01-01 09:00", tz="Asia/Tokyo"),
                  np.datetime64("2024-01-01")):
        assert kind.bound(given, "bounds['t']") == JAN_2024
    assert kind.bound(JAN_2024, "b") == JAN_2024  # numbers are seconds already
    with pytest.raises(dm.InvalidParameterError, match="are seconds"):
        kind.bound(JAN_2024 * 1e9, "bounds['t']")  # nanoseconds by mistake
    with pytest.raises(dm.InvalidParameterError, match=r"bounds\['t'\] must be a pair of dates"):
        kind.bound("not a date", "bounds['t']")


def test_reports_print_bounds_back_in_the_kind():
    utc = column_kind("t", np.dtype("M8[ns]"))
    assert format_bounds(utc, (JAN_2024, JAN_2024 + 86400)) == "[2024-01-01, 2024-01-02]"
    assert format_bounds(utc, (JAN_2024 + 3600, JAN_2024 + 7200)) == (
        "[2024-01-01 01:00:00 UTC, 2024-01-01 02:00:00 UTC]")
    tokyo = column_kind("t", pd.DatetimeTZDtype("ns", "Asia/Tokyo"))
    assert format_bounds(tokyo, (JAN_2024, JAN_2024)).startswith("[2024-01-01T09:00:00+09:00")
    assert format_bounds(column_kind("w", np.dtype("m8[s]")), (0, 5400)) == (
        "[0 days 00:00:00, 0 days 01:30:00]")
    assert format_bounds(None, (0.5, 2e6)) == "[0.5, 2e+06]"
    # a released bound no time can show (past what pandas holds, a year past 9999)
    # prints as its number of seconds: a report always reads
    assert format_bounds(column_kind("w", np.dtype("m8[s]")), (0, 4.49e307)) == (
        "[0 days 00:00:00, 4.49e+307]")
    assert format_bounds(utc, (0, 5.5e11)) == "[1970-01-01, 5.5e+11]"
    assert format_bounds(utc, (-1e15, JAN_2024)) == "[-1e+15, 2024-01-01]"


def test_casts_read_strings_and_epoch_numbers_as_times():
    strings = pd.Series(["2024-01-01", "2024-01-02T12:00:00Z", None], name="s")
    kind = column_kind("s", strings.dtype, kind="timestamp")
    np.testing.assert_array_equal(kind.axis(strings), [JAN_2024, JAN_2024 + 1.5 * 86400, np.nan])
    millis = pd.Series([JAN_2024 * 1000, None], dtype="Int64", name="ms")
    kind = column_kind("ms", millis.dtype, kind={"kind": "timestamp", "unit": "ms"})
    np.testing.assert_array_equal(kind.axis(millis), [JAN_2024, np.nan])
    with pytest.raises(dm.InvalidParameterError, match="unit"):
        column_kind("ms", millis.dtype, kind={"kind": "timestamp", "unit": "fortnight"})
    with pytest.raises(dm.InvalidParameterError, match=r"kinds\['ms'\].*takes only"):
        column_kind("ms", millis.dtype, kind={"kind": "timestamp", "zone": "UTC"})


@pytest.mark.parametrize("layout", ["%d/%m/%Y", "%m/%d/%Y", "%d %B %Y", "mixed"])
def test_text_times_are_read_in_iso_8601_only_never_guessed(layout):
    """Casts never guess (SPEC section 9): day-first text such as 13/02/2024 and
    01/02/2024 was read value by value, the first day-first and the second
    month-first, and a planted relation released 0.69 where it is 0.97, charged.
    Text in any layout but ISO 8601 is refused before the charge with the way out;
    ISO text (with a time, an offset, or none) still reads, and so do bounds."""
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(400) % 360, unit="D")
    text = (np.where(np.arange(400) % 2 == 0, days.strftime("%Y-%m-%d"),
                     days.strftime("%m/%d/%Y")) if layout == "mixed" else days.strftime(layout))
    frame = pd.DataFrame({"t": pd.Series(text, dtype=object), "x": np.linspace(0, 1, 400)})
    ledger = dm.InMemoryLedger(uncapped=True)
    for data in (frame, dd.from_pandas(frame, npartitions=2)):
        with pytest.raises(dm.InvalidDataError, match="ISO 8601.*not guessed") as info:
            data.dpmic.pairwise(1.0, bounds={"t": ("2024-01-01", "2025-01-01"), "x": (0, 1)},
                                kinds={"t": "timestamp"}, ledger=ledger)
        assert "2024" not in str(info.value).split("(", 1)[0]  # no value of the column
    assert ledger.charges() == []
    iso = pd.Series(["2024-01-31", "2024-01-31 08:00:00+02:00", "2024-01-31T06:00:00Z"],
                    name="t")
    kind = column_kind("t", iso.dtype, kind="timestamp")
    midnight = kind.bound("2024-01-31", "bounds['t']")
    np.testing.assert_array_equal(kind.axis(iso), [midnight, midnight + 6 * 3600,
                                                   midnight + 6 * 3600])
    with pytest.raises(dm.InvalidParameterError, match="must be a pair of dates or times"):
        kind.bound("01/02/2024", "bounds['t']")


SECRET = "4111-1111-1111-1111"


def test_an_unusable_column_is_one_line_naming_it_and_its_dtype_never_a_value():
    frame = pd.DataFrame({"card": [SECRET] * 8, "x": np.linspace(0, 1, 8)})
    with pytest.raises(dm.InvalidDataError) as info:
        frame.dpmic.pairwise(1.0, bounds={"card": (0, 1), "x": (0, 1)})
    message = str(info.value)
    assert "'card'" in message and ("object" in message or "str" in message)
    assert SECRET not in message and "\n" not in message
    # a cast that the values do not fit: named, no value, nothing charged
    ledger = dm.InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidDataError) as info:
        frame.dpmic.pairwise(1.0, bounds={"card": ("2024-01-01", "2025-01-01"), "x": (0, 1)},
                             kinds={"card": "timestamp"}, ledger=ledger)
    assert "'card'" in str(info.value) and "not dates or times" in str(info.value)
    assert "4111" not in str(info.value)
    assert ledger.charges() == []


def test_string_columns_with_date_bounds_are_times():
    frame = pd.DataFrame({"day": pd.array(["2024-01-01", "2024-06-30"] * 20, dtype="str"),
                          "x": np.tile([0.0, 1.0], 20)})
    got = frame.dpmic.pairwise_nonprivate(bounds={"day": ("2024-01-01", "2025-01-01"),
                                                  "x": (0, 1)}, B=8, c=2)
    assert got.micr.iloc[0] == pytest.approx(1.0)


def test_unknown_kinds_and_columns_are_refused_before_reading():
    frame = pd.DataFrame({"a": [1.0] * 8, "b": [2.0] * 8})
    with pytest.raises(dm.InvalidParameterError, match="unknown column kind"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 3)}, kinds={"a": "colour"})
    with pytest.raises(dm.InvalidParameterError, match="unknown column"):
        frame.dpmic.pairwise(1.0, bounds={"a": (0, 1), "b": (0, 3)}, kinds={"zz": "number"})


def test_a_registered_kind_is_tried_first_and_reads_its_columns():
    class Magnitude(ColumnKind):
        """A toy kind: complex numbers read by their magnitude."""

        name = "magnitude"

        def detects(self, dtype):
            return getattr(dtype, "kind", None) == "c"

        def axis(self, series):
            return np.abs(series.to_numpy()).astype(np.float64)

    saved = list(kinds._REGISTRY)
    frame = pd.DataFrame({"z": np.tile([1j, 2, 3j, 4 + 0j], 50),
                          "x": np.tile([1.0, 2.0, 3.0, 4.0], 50)})
    with pytest.raises(dm.InvalidDataError, match=r"column 'z' has dtype complex128"):
        frame.dpmic.pairwise_nonprivate(bounds={"z": (0, 5), "x": (0, 5)}, B=8, c=2)
    try:
        register_kind(Magnitude())
        assert kinds.registered_kinds()[0] == "magnitude"
        got = frame.dpmic.pairwise_nonprivate(bounds={"z": (0, 5), "x": (0, 5)}, B=8, c=2)
        assert got.micr.iloc[0] == pytest.approx(1.0)
    finally:
        kinds._REGISTRY[:] = saved
    assert "magnitude" not in kinds.registered_kinds()


def mixed_table(n=3000, seed=5):
    gen = np.random.default_rng(seed)  # test data only
    days = gen.uniform(0, 730, n)
    signup = pd.Timestamp("2023-01-01") + pd.to_timedelta(days, unit="D")
    churn = (days < 365) ^ (gen.uniform(size=n) < 0.1)
    amount = pd.array(np.round(50 + 30 * np.sin(days / 58)).astype(int), dtype="Int64")
    wait = pd.to_timedelta(gen.uniform(0, 48, n), unit="h")
    return pd.DataFrame({"signup": signup, "churn": churn, "amount": amount, "wait": wait,
                         "small": gen.integers(0, 100, n).astype("int8")})


def test_a_mixed_table_gives_exactly_the_values_of_its_axis_numbers():
    frame = mixed_table()
    bounds = {"signup": ("2023-01-01", "2025-01-01"), "amount": (0, 100),
              "wait": ("0 hours", "48 hours"), "small": (0, 100)}
    columns = ["signup", "churn", "amount", "wait", "small"]
    floats = pd.DataFrame({
        "signup": (frame.signup - pd.Timestamp("1970-01-01")).dt.total_seconds(),
        "churn": frame.churn.astype(float), "amount": frame.amount.astype(float),
        "wait": frame.wait.dt.total_seconds(), "small": frame.small.astype(float)})

    float_bounds = {"signup": (pd.Timestamp("2023-01-01").timestamp(),
                               pd.Timestamp("2025-01-01").timestamp()),
                    "churn": (0, 1), "amount": (0, 100), "wait": (0, 48 * 3600),
                    "small": (0, 100)}
    expected = floats.dpmic.pairwise_nonprivate(bounds=float_bounds, B=40, c=3)
    for data in (frame, dd.from_pandas(frame, npartitions=4)):
        got = data.dpmic.pairwise_nonprivate(bounds=bounds, columns=columns, B=40, c=3)
        pd.testing.assert_frame_equal(got, expected)
    assert expected.set_index(["x", "y"]).micr[("signup", "churn")] > 0.4
    assert expected.set_index(["x", "y"]).micr[("signup", "amount")] > 0.8


def test_private_releases_accept_every_kind():
    frame = mixed_table()
    ddf = dd.from_pandas(frame, npartitions=3)
    bounds = {"signup": ("2023-01-01", "2025-01-01"), "amount": (0, 100),
              "wait": ("0 hours", "2 days"), "small": (0, 100)}
    ledger = dm.InMemoryLedger(uncapped=True)
    columns = ["signup", "churn", "amount", "wait", "small"]
    every = ddf.dpmic.pairwise(10.0, bounds=bounds, columns=columns, ledger=ledger)
    assert len(every.pairs) == 10
    top = ddf.dpmic.top_pairs(2, 10.0, bounds=bounds, columns=columns, ledger=ledger)
    assert ("signup", "amount") in top.pairs
    above = frame.dpmic.pairs_above(0.5, 10.0, bounds=bounds, columns=columns, max_pairs=3,
                                    ledger=ledger)
    assert len(above.pairs) <= 3
    private = ddf.dpmic.pairwise(10.0, bounds={**bounds, "signup": "private"}, columns=columns,
                                 ledger=ledger)
    report = private.report()
    assert re.search(r"Private bounds used: signup \[\d{4}-\d\d-\d\d", report)
    found = dm.private_bounds(ddf, 1.0, columns=["signup", "wait"], ledger=ledger)
    assert re.search(r"signup: \[\d{4}-\d\d-\d\d", found.report())
    assert re.search(r"wait: \[\d+ days \d\d:\d\d:\d\d", found.report())


@pytest.mark.filterwarnings("ignore")  # a domain far wider than the data is warned of
def test_a_private_bounds_domain_is_given_in_the_columns_kind():
    gen = np.random.default_rng(8)  # test data only
    n = 20_000
    frame = pd.DataFrame({"t": pd.Timestamp("2024-01-01")
                          + pd.to_timedelta(gen.uniform(0, 365, n), unit="D"),
                          "x": gen.uniform(size=n)})
    result = frame.dpmic.pairwise(1.0, bounds={"t": "private", "x": (0, 1)},
                                  domain={"t": ("2020-01-01", dt.date(2030, 1, 1))},
                                  ledger=dm.InMemoryLedger(uncapped=True))
    lo, hi = result.private_bounds.bounds["t"]
    assert pd.Timestamp("2020-01-01").timestamp() <= lo < hi <= pd.Timestamp(
        "2030-01-01").timestamp()
    with pytest.raises(dm.InvalidParameterError, match=r"domain\['t'\]"):
        frame.dpmic.pairwise(1.0, bounds={"t": "private", "x": (0, 1)},
                             domain={"t": ("soon", "later")})


def test_dropping_rows_is_listwise_and_reads_only_the_release_columns():
    frame = mixed_table(400)
    frame["unused"] = "x"  # a column the release does not read
    frame.loc[::7, "amount"] = pd.NA
    frame.loc[::5, "signup"] = pd.NaT
    axis = axis_arguments(frame.dtypes, bounds={"signup": ("2023-01-01", "2025-01-01"),
                                                "amount": (0, 100)},
                          columns=["signup", "churn", "amount"])
    expected = axis_frame(frame, axis.kinds, drop=list(axis.kinds))
    assert len(expected) == len(frame.dropna(subset=["signup", "amount"]))
    lazy = axis_frame(dd.from_pandas(frame, npartitions=3), axis.kinds, drop=list(axis.kinds))
    assert list(lazy.columns) == ["signup", "churn", "amount"]
    got = lazy.compute()
    pd.testing.assert_frame_equal(got, expected[["signup", "churn", "amount"]])
    assert (got.dtypes == np.float64).all()


@pytest.mark.parametrize("column", [
    pd.Series(pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(400), unit="s")),
    pd.Series(np.arange(400)),
    pd.Series((np.arange(400) / 400).round(2).astype(str), dtype="string"),
], ids=["times", "integers", "numbers as text"])
def test_kind_boolean_refuses_a_column_that_is_not_boolean(column):
    """``kinds={"d": "boolean"}`` gave any column implied bounds (0, 1): times were
    read as storage ticks and integers above 1 clamped (MIC 0), text turned into
    numbers -- charged. Refused before the charge; boolean dtypes are read."""
    from dpmic_dask.privacy.accounting import InMemoryLedger

    ledger = InMemoryLedger(uncapped=True)
    y = np.arange(400, dtype=float)
    frame = dd.from_pandas(pd.DataFrame({"d": column, "y": y}), npartitions=2)
    with pytest.raises(dm.InvalidParameterError, match="kind 'boolean' reads columns of a"):
        frame.dpmic.pairwise(eps=1.0, bounds={"y": (0, 400)}, columns=["d", "y"],
                             kinds={"d": "boolean"}, bounds_check=None, ledger=ledger)
    assert ledger.charges() == []
    for dtype in ("bool", "boolean", "bool[pyarrow]"):
        flags = dd.from_pandas(pd.DataFrame({"d": pd.Series(y > 200, dtype=dtype), "y": y}),
                               npartitions=2)
        result = flags.dpmic.pairwise(eps=1e6, bounds={"y": (0, 400)}, columns=["d", "y"],
                                      kinds={"d": "boolean"}, bounds_check=None,
                                      ledger=ledger)
        assert result.to_pandas()["mic"].iloc[0] > 0.9


def test_a_boolean_bound_between_false_and_true_prints_as_its_number():
    """Private bounds (0.9975, 1.0013) of an all-True column printed as
    [True, True]: a bound of zero width, which no release may show."""
    from dpmic_dask.stats.kindbase import BooleanKind

    kind = BooleanKind()
    assert kind.format(0.0) is False and kind.format(1.0) is True
    assert kind.format(0.9975) == 0.9975 and kind.format(1.0013) == 1.0013
