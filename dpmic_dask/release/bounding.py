"""Contribution bounding: at most ``k`` rows per privacy unit, chosen by a keyed
hash of each row's own content (:func:`bound_contributions`), and the frame a
release then sees (:class:`BoundedFrame`, counted by its own backend). The
per-unit release around it is :mod:`dpmic_dask.release.units`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for, register
from dpmic_dask.backends.base import Backend, guarded
from dpmic_dask.checks import FILL_HINT, refuse_missing
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, counted
from dpmic_dask.release.keeprows import (  # noqa: F401 (re-exported)
    PRIORITY,
    bound_and_check,
    bound_contributions,
    bound_contributions_shuffled,
    keep_smallest,
    new_key,
    row_priority,
)
from dpmic_dask.stats.counting import column_values


def check_unit_columns(unit) -> tuple[str, ...]:
    """``"customer_id"`` or a list of column names -> a tuple of names."""
    names = (unit,) if isinstance(unit, str) else unit
    try:
        names = tuple(names)
    except TypeError:
        names = ()
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(
            names):
        raise InvalidParameterError(
            "privacy_unit must name one column or a list of distinct columns")
    return names


def _kind_of_type(t: type) -> str:
    """The kind of a unit value's type: 17 and np.int64(17) are both ``int``."""
    for kind, types in (("bool", (bool, np.bool_)), ("int", (int, np.integer)),
                        ("float", (float, np.floating)), ("str", (str,)), ("bytes", (bytes,))):
        if issubclass(t, types):
            return kind
    return t.__name__


def _mixed_message(name: str, kinds) -> str:
    types = set(kinds) - {"int text", "decimal text"}
    shown = types if len(types) > 1 else {"int text", "decimal text"}
    return (f"privacy_unit column {name!r} mixes value types ({', '.join(sorted(shown))}): "
            "one unit written both as a number and as text, or as whole and decimal "
            "text (Dask turns an object column of whole numbers and floats into text "
            "without and with a decimal point), would be counted as two units, or two "
            "units as one. Convert the column to one type (nothing was charged)")


def check_unit_dtypes(schema, unit) -> None:
    """Refuse, before anything is read, a unit column whose dtype already says it mixes
    value types (a categorical whose categories are ints and strings), or one that
    pandas cannot even name a type for (an Arrow interval, where pandas raised
    ``NotImplementedError`` from its own checks). Object columns are checked while
    reading (:func:`refuse_mixed_units`)."""
    for name in unit:
        dtype = schema[name]
        try:
            dtype.type  # noqa: B018 - pandas knows no Python type for some Arrow types
        except NotImplementedError:
            raise InvalidDataError(
                f"privacy_unit column {name!r} has a type pandas cannot compare or hash "
                f"({dtype}): convert it to integers or text (nothing was charged)") from None
        if isinstance(dtype, pd.CategoricalDtype) and dtype.categories is not None:
            kinds = {_kind_of_type(t) for t in set(map(type, dtype.categories))}
            if "str" in kinds:
                texts = pd.Series(dtype.categories, dtype=object)
                kinds |= _text_kinds(texts[texts.map(lambda v: isinstance(v, str))])
            if _mixed(kinds):
                raise InvalidDataError(_mixed_message(name, kinds))


#: Text of a whole number, and text of a whole number as a float prints it: ids
#: written both ways ("7" and "7.0", "100000000000000000000" and "1e+20") are one
#: unit to pandas's object column and two as text, and Dask's ``convert-string``
#: turns an object column of 7 and 7.0 into such text. Other decimals ("10.5")
#: cannot meet a whole number, and text such as hex ids ("3e5f") is neither.
_INT_TEXT = r"[+-]?\d+"
_DECIMAL_TEXT = r"[+-]?(\d+\.0+|\d(\.\d+)?[eE][+-]\d+)"


def _text_kinds(values: pd.Series) -> set:
    """``int text`` and ``decimal text`` when some of ``values`` (text) read so."""
    text = values.astype("string")
    kinds = set()
    if text.str.fullmatch(_INT_TEXT).fillna(False).any():
        kinds.add("int text")
    if text.str.fullmatch(_DECIMAL_TEXT).fillna(False).any():
        kinds.add("decimal text")
    return kinds


def unit_value_kinds(frame: pd.DataFrame, *, columns) -> tuple[frozenset, ...]:
    """A partition's value kinds (``int``, ``str``, ...) per column, missing values left
    out, and for text whether some reads as a whole number (``int text``) or a decimal
    one (``decimal text``). Kinds only: never a value."""
    out = []
    for c in columns:
        values = frame[c].dropna()
        if pd.api.types.is_string_dtype(values.dtype) and not \
                pd.api.types.is_object_dtype(values.dtype):
            kinds = {"str"} if len(values) else set()
            texts = values
        else:  # one pass for the types; the text among them picked by type
            types = values.map(type)
            found = set(types)
            kinds = {_kind_of_type(t) for t in found}
            texts = values[types.isin([t for t in found if issubclass(t, str)])]
        if len(texts):
            kinds |= _text_kinds(texts)
        out.append(frozenset(kinds))
    return tuple(out)


def _mixed(found) -> bool:
    """Value types that one unit could be written in two ways with."""
    types = found - {"int text", "decimal text"}
    return len(types) > 1 or {"int text", "decimal text"} <= found


def add_value_kinds(a, b):
    """Two partitions' :func:`unit_value_kinds` together."""
    return tuple(x | y for x, y in zip(a, b))


def refuse_mixed_units(frame, unit, *, split_every: int, progress=None) -> None:
    """Refuse, before the charge, a unit column of object dtype whose values mix types
    over the whole table (partitions may each hold one type), or of object or text
    dtype whose text holds a whole number and a whole number as a float prints it
    (:func:`_mixed`): the keyed hash, the shuffle and the grouping would not agree on
    which rows are one unit. Names the column and the kinds found, never a value.
    Other dtypes hold one type: no pass."""
    schema = backend_for(frame).schema(frame)
    check_unit_dtypes(schema, unit)
    columns = [u for u in unit if pd.api.types.is_object_dtype(schema[u])
               or pd.api.types.is_string_dtype(schema[u])]
    if not columns:
        return
    kinds = backend_for(frame).reduce(
        frame, columns, partial(unit_value_kinds, columns=columns), add_value_kinds,
        split_every=split_every, progress=progress)
    for name, found in zip(columns, kinds):
        if _mixed(found):
            raise InvalidDataError(_mixed_message(name, found))


@dataclass(frozen=True)
class ContributionBound:
    """A released choice of ``k`` rows per unit (:func:`~dpmic_dask.contribution_bound`);
    pass it as ``max_rows_per_unit`` as it is (its ``k`` is used).

    ``rule``: ``"error"`` (the ``k`` whose release is predicted to be the least
    noisy, within ``tolerance``, see :mod:`dpmic_dask.release.choose_k`) or
    ``"quantile"`` (a ``quantile`` of rows per unit). With a release described,
    ``predicted_ci95`` is that release's ``ci95`` at ``k`` and ``candidates`` the
    prediction for every candidate (:meth:`table`); all post-processing of the one
    released histogram."""

    k: int
    quantile: float | None
    epsilon: float
    noise_scale: float
    privacy_unit: str
    charge_id: str
    rule: str = "quantile"
    tolerance: float | None = None
    predicted_ci95: float | None = None
    candidates: tuple = ()

    def table(self) -> pd.DataFrame:
        """The candidates: ``k``, rows kept, share dropped, ``n0`` and ``ci95``
        (predicted), ``chosen`` marking this ``k``."""
        frame = pd.DataFrame([dataclasses.asdict(c) for c in self.candidates],
                             columns=["k", "kept", "dropped", "n0", "ci95"])
        frame["chosen"] = frame["k"] == self.k
        return frame

    def __repr__(self) -> str:
        said = f"{self.quantile:g} quantile" if self.rule == "quantile" else (
            f"least error within {self.tolerance:g}x")
        ci = "" if self.predicted_ci95 is None else f", predicted ci95 +/-{self.predicted_ci95:.3g}"
        return (f"ContributionBound(k={self.k}, {said}{ci}; per {self.privacy_unit}, "
                f"epsilon {self.epsilon:g}, charge {self.charge_id})")


def check_max_rows(k) -> int:
    """``max_rows_per_unit``: an integer from 1 to 2**20, or what
    :func:`~dpmic_dask.contribution_bound` returned (its released ``k``)."""
    if isinstance(k, ContributionBound):
        k = k.k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 2**20:
        raise InvalidParameterError("max_rows_per_unit must be an integer from 1 to 2**20")
    return int(k)


def unit_arguments(schema, names, privacy_unit, max_rows_per_unit,
                   role: str = "have bounds released"):
    """``(unit columns, k)`` for a release per unit, else ``None``: refuses (before
    anything is read) ``k`` without a unit or a unit without ``k``, a unit column
    that is missing or mixes types by its dtype, and one among ``names`` (the
    columns that cannot ``role``)."""
    if privacy_unit is None:
        if max_rows_per_unit is not None:
            raise InvalidParameterError("max_rows_per_unit needs privacy_unit (the column "
                                        "that identifies a unit)")
        return None
    unit = check_unit_columns(privacy_unit)
    if max_rows_per_unit is None:
        raise InvalidParameterError("privacy_unit needs max_rows_per_unit, the most rows of "
                                    "one unit that are used (see "
                                    "dpmic_dask.contribution_bound to choose it privately)")
    k = check_max_rows(max_rows_per_unit)
    absent = [u for u in unit if u not in schema]
    if absent:
        raise InvalidParameterError(f"privacy_unit column(s) {absent} are not in the frame")
    check_unit_dtypes(schema, unit)
    clash = sorted(set(unit) & set(names))
    if clash:
        raise InvalidParameterError(f"the privacy unit column(s) {clash} cannot {role}")
    return unit, k


def unit_label(unit: tuple[str, ...]) -> str:
    """How a unit is named in statements and ledgers: ``customer_id`` or ``a+b``."""
    return "+".join(unit)


def unit_statement(unit: tuple[str, ...] | None, k: int | None) -> str:
    """``per customer_id, at most 8 rows each`` (or the row-level default)."""
    if unit is None:
        return "per row (the default privacy unit: one row is one individual)"
    return f"per {unit_label(unit)}, at most {counted(k, 'row')} each"


def rows_and_missing(frame: pd.DataFrame, *, columns, raw=()) -> tuple[int, np.ndarray]:
    """A partition's row count and, per column, whether it has a missing value
    (the ``raw`` columns, read as they are, by their nulls: they are not numbers)."""
    missing = np.zeros(len(columns), dtype=bool)
    for i, name in enumerate(columns):
        if name in raw:
            missing[i] = bool(frame[name].isna().to_numpy().any())
        else:
            missing[i] = bool(np.isnan(column_values(frame, name)).any())
    return len(frame), missing


def add_rows_and_missing(a, b):
    """Two partitions' :func:`rows_and_missing` together."""
    return a[0] + b[0], a[1] | b[1]


def bound_refusing_missing(frame, unit, k: int, columns, *, missing, split_every: int,
                           raw=(), hint: str = FILL_HINT):
    """The frame bounded to ``k`` rows per unit (:func:`bound_and_check`), persisted,
    with missing values in the ``missing`` columns (axis numbers; the ``raw`` ones
    as they are; ``None``: none checked) of the whole table refused: every
    partition's rows before any is dropped, checked in the pass that finds the
    units' priorities, not a read of the table of its own (10^7 rows on 2
    workers: that read was a third of the per-unit release). Before any charge,
    as the caller charges after it. Checked on the bounded rows only, the refusal
    would depend on which rows the fresh key keeps: the same call would refuse or
    go through at random, and a caller retrying until it passes would condition
    the key on the data. A failure inside the check is reported as
    :func:`~dpmic_dask.backends.base.guarded` reports it (columns and type only)."""
    check = None
    if missing is not None:
        missing = list(missing)
        check = partial(guarded, missing, partial(rows_and_missing, columns=missing,
                                                  raw=tuple(raw)))
    bounded, checked = bound_and_check(frame, unit, k, columns, check=check,
                                       combine=add_rows_and_missing, split_every=split_every)
    bounded, found = backend_for(bounded).persist_with(bounded, checked)
    if missing is not None and found[1].any():
        del bounded  # a refusal's traceback holds none of the kept rows
        refuse_missing(missing, found[1], hint)
    return bounded


class BoundedFrame:
    """A bounded frame seen by the row-level release code with ``n0`` rows: every
    row count it reports is the public ``n0``, never the exact one."""

    def __init__(self, frame, n0: int):
        self.frame = frame
        self.n0 = int(n0)


@register(BoundedFrame)
class BoundedBackend(Backend):
    """Delegates to the inner frame's backend; row counts are ``n0``."""

    @staticmethod
    def _inner(frame: BoundedFrame):
        return backend_for(frame.frame)

    def schema(self, frame):
        return self._inner(frame).schema(frame.frame)

    def row_count(self, frame, columns) -> int:
        return frame.n0

    def count(self, frame, spec, *, split_every, progress, rows=None, task_memory=2**28):
        agg = self._inner(frame).count(frame.frame, spec, split_every=split_every,
                                       progress=progress, rows=frame.n0,
                                       task_memory=task_memory)
        return dataclasses.replace(agg, rows=frame.n0)

    def counts_marginals(self, frame) -> bool:
        return self._inner(frame).counts_marginals(frame.frame)

    def evaluate(self, frame, spec, fn, *, pairs_per_block, split_every, progress, rows=None,
                 task_memory=2**28, marginals=()):
        evaluation = self._inner(frame).evaluate(
            frame.frame, spec, fn, pairs_per_block=pairs_per_block, split_every=split_every,
            progress=progress, rows=frame.n0, task_memory=task_memory, marginals=marginals)
        return dataclasses.replace(evaluation, rows=frame.n0)

    def reduce(self, frame, columns, fn, combine, *, split_every, progress):
        return self._inner(frame).reduce(frame.frame, columns, fn, combine,
                                         split_every=split_every, progress=progress)

    def tree_sum(self, frame, fn, add, *, split_every, progress=False, columns=()):
        return self._inner(frame).tree_sum(frame.frame, fn, add, split_every=split_every,
                                           progress=progress, columns=columns)

    def map_counts(self, counts, fn):
        return np.array([fn(c) for c in counts], dtype=np.float64)
