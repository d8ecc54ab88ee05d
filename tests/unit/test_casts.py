"""Casts of numbers to time kinds need their unit (issue #34).

Epoch seconds cast with ``kinds={"ts": "timestamp"}`` used to be read as
nanoseconds: every value fell in the first two seconds of 1970, clamped into one
bin, and a strong relation was released as noise around 0, charged, without a
word. A numeric column cast to a time kind without a unit is now refused from its
dtype, before anything is read or charged; with ``("timestamp", "s")`` it is read
in seconds."""

from __future__ import annotations

import decimal

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

import dpmic_dask as dm
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.release.charge import DEFAULT_DATASET
from dpmic_dask.stats.kinds import axis_arguments, column_kind

JAN_2024 = 1_704_067_200  # 2024-01-01 00:00:00 UTC in seconds since the epoch
BOUNDS = {"ts": ("2024-01-01", "2025-01-01"), "month": (0, 12)}
FIRST_TS = str(JAN_2024)[:6]  # no message may quote a value (nor its leading digits)


def epoch_table(n: int = 20_000, seed: int = 11) -> pd.DataFrame:
    """Test data: int64 epoch seconds over 2024 and the month they fall in."""
    gen = np.random.default_rng(seed)
    days = gen.uniform(0, 365, n)
    return pd.DataFrame({"ts": (JAN_2024 + days * 86400).astype("int64"),
                         "month": np.floor(days / 30.5)})


def never_read(frame: pd.DataFrame) -> dd.DataFrame:
    """A Dask frame whose partitions fail if computed: a refusal must come first."""
    def read(part):
        raise AssertionError("the data was read")

    return dd.from_pandas(frame, npartitions=3).map_partitions(read, meta=frame.iloc[:0])


def check_refusal(message: str, dtype: str = "int64", kind: str = "timestamp") -> None:
    assert message.startswith(f"column 'ts' holds {dtype} numbers; a cast to {kind} "
                              "needs their unit: ")
    assert f"kinds={{'ts': ('{kind}', 's')}}" in message and "ms" in message
    assert "\n" not in message and FIRST_TS not in message


@pytest.mark.parametrize("dask_frame", [False, True])
@pytest.mark.parametrize("kind", ["timestamp", "date", {"kind": "timestamp"}])
def test_epoch_numbers_without_a_unit_are_refused_before_reading_or_charging(dask_frame, kind):
    frame = never_read(epoch_table(200)) if dask_frame else epoch_table(200)
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidParameterError) as info:
        frame.dpmic.pairwise(2.0, bounds=BOUNDS, kinds={"ts": kind}, ledger=ledger)
    check_refusal(str(info.value), kind="date" if kind == "date" else "timestamp")
    with pytest.raises(dm.InvalidParameterError):
        frame.dpmic.top_pairs(1, 2.0, bounds=BOUNDS, kinds={"ts": kind}, ledger=ledger)
    with pytest.raises(dm.InvalidParameterError):
        frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, kinds={"ts": kind}, B=40, c=3)
    assert ledger.spent(DEFAULT_DATASET) == 0 and ledger.charges() == []


@pytest.mark.parametrize("dask_frame", [False, True])
def test_epoch_seconds_with_their_unit_release_the_relation(dask_frame):
    df = epoch_table()
    frame = dd.from_pandas(df, npartitions=4) if dask_frame else df
    exact = frame.dpmic.pairwise_nonprivate(bounds=BOUNDS, kinds={"ts": ("timestamp", "s")},
                                            B=40, c=3).micr.iloc[0]
    assert exact > 0.8
    ledger = InMemoryLedger(uncapped=True)
    for kind in (("timestamp", "s"), {"kind": "timestamp", "unit": "s"}, ("date", "s")):
        result = frame.dpmic.pairwise(2.0, bounds=BOUNDS, kinds={"ts": kind}, B=40, c=3,
                                      ledger=ledger)
        (value,) = result.values
        assert value > 0.8
        assert abs(value - exact) <= 3 * result.privacy.ci95, (kind, value, exact)
    assert len(ledger.charges()) == 3


def test_every_numeric_dtype_and_time_kind_needs_a_unit():
    for dtype in ("int64", "int32", "uint32", "float64", "Int64", "UInt64", "Float64",
                  "int64[pyarrow]", "double[pyarrow]", "decimal128(12, 0)[pyarrow]"):
        if dtype.startswith("decimal"):
            import pyarrow as pa

            series = pd.Series([decimal.Decimal(JAN_2024)], dtype=pd.ArrowDtype(
                pa.decimal128(12, 0)), name="ts")
        else:
            series = pd.Series([JAN_2024], dtype=dtype, name="ts")
        for kind in ("timestamp", "date", "timedelta"):
            with pytest.raises(dm.InvalidParameterError) as info:
                column_kind("ts", series.dtype, kind=kind)
            check_refusal(str(info.value), str(series.dtype), kind)
        got = column_kind("ts", series.dtype, kind=("timestamp", "s")).axis(series)
        np.testing.assert_array_equal(got, [float(JAN_2024)])
        got = column_kind("ts", series.dtype, kind=("timedelta", "h")).axis(series)
        np.testing.assert_array_equal(got, [float(JAN_2024) * 3600])


def test_units_other_than_seconds_and_the_pair_form_is_checked():
    millis = pd.Series([JAN_2024 * 1000], dtype="int64", name="ts")
    kind = column_kind("ts", millis.dtype, kind=("timestamp", "ms"))
    np.testing.assert_array_equal(kind.axis(millis), [float(JAN_2024)])
    days = pd.Series([19723], dtype="int32", name="ts")  # 2024-01-01 in days
    np.testing.assert_array_equal(column_kind("ts", days.dtype, kind=("date", "D")).axis(days),
                                  [float(JAN_2024)])
    for bad in [("timestamp",), ("timestamp", "s", "UTC"), ("timestamp", 1)]:
        with pytest.raises(dm.InvalidParameterError, match=r"kinds\['ts'\] as a pair"):
            column_kind("ts", millis.dtype, kind=bad)
    with pytest.raises(dm.InvalidParameterError, match=r"kinds\['ts'\]: unit must be one of"):
        column_kind("ts", millis.dtype, kind=("timestamp", "fortnight"))
    with pytest.raises(dm.InvalidParameterError, match=r"kinds\['ts'\].*takes no option"):
        column_kind("ts", millis.dtype, kind=("number", "s"))


@pytest.mark.parametrize("dask_frame", [False, True])
def test_an_object_column_of_numbers_is_refused_when_read_before_the_charge(dask_frame):
    df = epoch_table(400)
    df["ts"] = pd.Series([decimal.Decimal(int(v)) for v in df.ts], dtype=object)
    frame = dd.from_pandas(df, npartitions=3) if dask_frame else df
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidDataError) as info:
        frame.dpmic.pairwise(2.0, bounds=BOUNDS, kinds={"ts": "timestamp"}, ledger=ledger)
    message = str(info.value)
    assert message.startswith("column 'ts' (dtype ") and "needs their unit" in message
    assert "kinds={'ts': ('timestamp', 's')}" in message
    assert FIRST_TS not in message and "\n" not in message
    assert ledger.spent(DEFAULT_DATASET) == 0
    result = frame.dpmic.pairwise(2.0, bounds=BOUNDS, kinds={"ts": ("timestamp", "s")},
                                  ledger=ledger)
    assert result.values[0] > 0.8


def test_bounds_that_no_value_of_the_dtype_can_reach_are_refused():
    schema = pd.Series({"ts": np.dtype("int32"), "month": np.dtype("float64")})
    # int32 milliseconds span only 25 days around 1970: every value would clamp
    with pytest.raises(dm.InvalidParameterError) as info:
        axis_arguments(schema, bounds=BOUNDS, kinds={"ts": ("timestamp", "ms")})
    message = str(info.value)
    assert message.startswith("bounds['ts']: the column's int32 values in unit 'ms'")
    assert "is the unit right?" in message
    with pytest.raises(dm.InvalidParameterError, match=r"bounds\['ts'\].*uint32"):
        axis_arguments(pd.Series({"ts": np.dtype("uint32")}),
                       bounds={"ts": ("1960-01-01", "1965-01-01")},
                       kinds={"ts": ("timestamp", "s")})
    # bounds the dtype can reach, even in part, are kept
    got = axis_arguments(schema, bounds={"ts": ("2024-01-01", "2040-01-01"), "month": (0, 12)},
                         kinds={"ts": ("timestamp", "s")})
    assert got.bounds["ts"][0] == JAN_2024


@pytest.mark.parametrize("word", ["now", "today"])
def test_the_words_for_the_clock_are_not_dates_in_bounds_or_in_cells(word):
    """pandas reads "now" and "today" as the clock at conversion: as a bound, every
    value was clamped to this moment (MIC 0, charged); in a column cast to times,
    the same column gave other numbers at each conversion. Refused before the
    charge, as any text that is not ISO 8601."""
    gen = np.random.default_rng(5)  # test data only
    days = pd.Timestamp("2024-01-01") + pd.to_timedelta(gen.integers(0, 300, 2000), unit="D")
    frame = pd.DataFrame({"t": days, "x": gen.normal(size=2000)})
    ledger = InMemoryLedger(uncapped=True)
    bounds = {"x": (-5, 5)}
    with pytest.raises(dm.InvalidParameterError, match="ISO 8601"):
        frame.dpmic.pairwise(1.0, bounds={**bounds, "t": ("2023-01-01", word)}, ledger=ledger)
    text = frame.assign(t=frame.t.dt.strftime("%Y-%m-%d").astype(object))
    text.loc[7, "t"] = word
    with pytest.raises(dm.InvalidDataError, match="ISO 8601") as info:
        text.dpmic.pairwise(1.0, bounds={**bounds, "t": ("2023-01-01", "2025-01-01")},
                            kinds={"t": "timestamp"}, ledger=ledger)
    assert f"'{word}'" not in str(info.value)
    assert ledger.charges() == []


def test_an_object_column_of_iso_text_or_datetimes_with_text_bounds_is_read_as_times():
    """An ``object`` column of ISO text, or of ``datetime`` objects, with bounds as
    ISO text was refused as categorical (the category kind claimed every object
    column with text bounds); it is read as times, the same values as the
    ``datetime64`` column."""
    from tests.statistical.test_release_noise_paths import zero_noise

    gen = np.random.default_rng(9)  # test data only
    stamps = pd.to_datetime(np.round(1.6e9 + gen.uniform(0, 1e8, 3000)), unit="s")
    y = (stamps - stamps.min()).total_seconds().to_numpy() / 1e8 + gen.normal(0, 0.1, 3000)
    bounds = {"t": ("2020-09-01T00:00:00", "2023-12-01T00:00:00"), "y": (-1, 2)}
    columns = {"datetime64": pd.Series(stamps),
               "object ISO text": pd.Series(stamps.strftime("%Y-%m-%dT%H:%M:%S"), dtype=object),
               "object datetimes": pd.Series(list(stamps.to_pydatetime()), dtype=object)}
    values = {}
    for name, column in columns.items():
        with zero_noise():
            released = pd.DataFrame({"t": column, "y": y}).dpmic.pairwise(
                1.0, bounds=bounds, ledger=InMemoryLedger(uncapped=True), bounds_check=None)
        values[name] = released.values[0]
    assert values["datetime64"] > 0.5
    assert values["object ISO text"] == values["object datetimes"] == values["datetime64"]
    # text bounds that are not times still point a text column to its category list
    with pytest.raises(dm.InvalidDataError, match="is categorical"):
        pd.DataFrame({"t": columns["object ISO text"], "y": y}).dpmic.pairwise(
            1.0, bounds={"t": ("a", "z"), "y": (-1, 2)}, ledger=InMemoryLedger(uncapped=True))


@pytest.mark.parametrize("cells", [["3600", "12", "7"], ["1 day", "5", "2 h"]],
                         ids=["all numbers", "some numbers"])
def test_durations_written_as_bare_numbers_are_refused_before_the_charge(cells):
    """pandas reads "5" as 5 ns: a text column of seconds cast to timedelta was read
    as nanoseconds (every row clamped to the lower bound, MIC 0, charged), and a
    "5" among "1 day"s too. A unit is never guessed: refused before the charge;
    text with units ("90 s") and timedelta objects are read as before."""
    size = 600
    text = pd.Series((cells * size)[:size], dtype="string")
    frame = dd.from_pandas(pd.DataFrame({"d": text, "y": np.arange(size, dtype=float)}),
                           npartitions=2)
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(dm.InvalidDataError, match="unit") as refused:
        frame.dpmic.pairwise(eps=1.0, bounds={"d": ("0 s", "1 day"), "y": (0, size)},
                             kinds={"d": "timedelta"}, bounds_check=None, ledger=ledger)
    assert ledger.charges() == [] and "3600" not in str(refused.value)
    units = pd.Series([f"{v} s" for v in range(size)], dtype="string")
    result = dd.from_pandas(pd.DataFrame({"d": units, "y": np.arange(size, dtype=float)}),
                            npartitions=2).dpmic.pairwise(
        eps=1e6, bounds={"d": ("0 s", "1 h"), "y": (0, size)}, kinds={"d": "timedelta"},
        bounds_check=None, ledger=ledger)
    assert result.to_pandas()["mic"].iloc[0] > 0.9


def test_time_casts_say_what_the_column_or_its_bounds_are():
    """Duration text as bounds of a time column said only "must be dates or times"
    (a job file reads text bounds as times: its duration columns need their kind);
    a boolean column cast to times was said to hold "numbers as text"."""
    ledger = InMemoryLedger(uncapped=True)
    frame = pd.DataFrame({"d": pd.to_datetime(np.arange(100), unit="D"),
                          "b": np.arange(100) % 2 == 0, "y": np.arange(100.0)})
    with pytest.raises(dm.InvalidParameterError, match="these read as durations: for a "
                                                       "column of durations name its kind"):
        frame.dpmic.pairwise(eps=1.0, bounds={"d": ("0 days", "100 days"), "y": (0, 100)},
                             columns=["d", "y"], ledger=ledger)
    with pytest.raises(dm.InvalidDataError, match="holds booleans, which are not dates"):
        frame.dpmic.pairwise(eps=1.0, bounds={"b": ("2024-01-01", "2024-02-01"),
                                              "y": (0, 100)}, columns=["b", "y"],
                             kinds={"b": ("timestamp", "s")}, ledger=ledger)
    assert ledger.charges() == []
