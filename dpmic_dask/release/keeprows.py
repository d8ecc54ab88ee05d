"""Which rows of each privacy unit a release keeps: at most ``k``, those with the
smallest keyed hash of their own content under a fresh key
(:func:`bound_contributions`), computed without moving the kept rows (each
partition filtered where it is, against per-unit thresholds found from the
units' smallest priorities), or by a shuffle on the unit
(:func:`bound_contributions_shuffled`, the same rule). :mod:`dpmic_dask.release.bounding`
holds the checks around it and the bounded frame a release then sees.
"""

from __future__ import annotations

import secrets

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for
from dpmic_dask.errors import InvalidDataError
from dpmic_dask.release.rowhash import content_order, row_priority

#: The hidden column holding each row's keyed priority while bounding.
PRIORITY = "__dpmic_priority__"

def new_key() -> tuple[int, int]:
    """A fresh secret key for one release (128 bits from the OS CSPRNG)."""
    return secrets.randbits(64), secrets.randbits(64)


def keep_smallest(frame: pd.DataFrame, unit, k: int, content) -> pd.DataFrame:
    """The ``k`` rows of each unit with the smallest ``(priority, content)`` (a
    frame that already has the priority column and no row without a unit); rows
    of equal priority in content order (:func:`content_order`)."""
    if frame.empty:
        return frame
    order = frame.sort_values(PRIORITY, kind="stable")
    priority = order[PRIORITY].to_numpy()
    equal = priority[1:] == priority[:-1]
    tied = np.flatnonzero(np.concatenate([[False], equal]) | np.concatenate([equal, [False]]))
    if tied.size:  # runs of equal priority keep their place, each in content order
        at = np.arange(len(order))
        at[tied] = tied[content_order(order.iloc[tied], (PRIORITY, *content))]
        order = order.iloc[at]
    rank = order.groupby(list(unit), sort=False, dropna=True).cumcount().to_numpy()
    return order[rank < k]


def _tag_and_keep(frame: pd.DataFrame, unit, k: int, content, key) -> pd.DataFrame:
    # A row whose unit is missing belongs to no known unit: it is dropped (a per-row
    # rule). Kept as one shared unit, one person's rows could push out another's,
    # k rows changed twice over (docs/privacy.md, section 12).
    frame = frame[list(content)].dropna(subset=list(unit)).copy()
    frame[PRIORITY] = row_priority(frame, content, key)
    return keep_smallest(frame, unit, k, content)


def bound_contributions_shuffled(frame, unit, k: int, columns,
                                 key: tuple[int, int] | None = None):
    """:func:`bound_contributions` by shuffling the kept rows themselves (every
    column): every partition keeps its ``k`` smallest per unit, a shuffle on the
    unit brings each unit's rows together, the ``k`` smallest again. The same rows
    as :func:`bound_contributions` for the same key; for tables of more units than
    every worker should hold a threshold of (:func:`bound_contributions` sends each
    worker one table of about 40 bytes a unit: 400 MB at 10^7 units)."""
    unit = tuple(unit)
    columns = tuple(c for c in columns if c not in unit)
    content = (*unit, *columns)
    key = new_key() if key is None else key
    backend = backend_for(frame)
    meta = backend.empty(frame)[list(content)].assign(**{PRIORITY: np.uint64(0)}).iloc[:0]
    local = backend.map_partitions(frame, _tag_and_keep, unit, k, content, key, meta=meta)
    if backend.npartitions(local) == 1:  # one partition holds every unit's rows
        return local[list(columns)]
    bounded = backend.map_partitions(backend.shuffle_by(local, unit), keep_smallest, unit, k,
                                     content, meta=meta)
    return bounded[list(columns)]


def bound_contributions(frame, unit, k: int, columns, key: tuple[int, int] | None = None):
    """See :func:`bound_and_check` (this is it without a check)."""
    return bound_and_check(frame, unit, k, columns, key=key)[0]


def bound_and_check(frame, unit, k: int, columns, key: tuple[int, int] | None = None,
                    check=None, combine=None, split_every: int = 8):
    """At most ``k`` rows per unit of ``frame`` (pandas or Dask): the unit's rows with
    the smallest keyed hash of their content (ties: the smallest content). Returns a
    frame of ``columns`` only (the unit columns are never passed on). ``key``: fresh
    when ``None``.

    On Dask no kept column moves. Each partition sends its ``k + 1`` smallest
    priorities per unit, with the unit columns only, to one of a few buckets by a
    hash of the unit (:func:`smallest_priorities`); each bucket finds its units'
    thresholds (:func:`thresholds_of`); the one threshold table goes to every
    partition, which keeps its rows below their unit's threshold where they are
    (:func:`keep_below`). Only rows tied at a threshold past the ``k``-th (identical
    rows, or a 64-bit hash collision) move, through the same buckets, to be chosen
    by content (:func:`first_by_content`). The same rows as
    :func:`bound_contributions_shuffled` for the same key. The input partitions are
    read once: the cluster holds them from the first step to the filter (as a
    shuffle holds its rows), every worker one copy of the thresholds.

    Returns ``(bounded, checked)``: with ``check`` (a function of one whole
    partition, every row, before any is dropped) and ``combine`` (exact,
    associative), ``checked`` is the combined check of every partition, a task of
    the backend computed in the same pass as the priorities, so a check of the
    whole table (missing values) reads no partition again; else ``None``."""
    unit = tuple(unit)
    columns = tuple(c for c in columns if c not in unit)
    content = (*unit, *columns)
    key = new_key() if key is None else key
    backend = backend_for(frame)
    task = backend.task
    if backend.npartitions(frame) == 1:
        if check is None:
            return bound_contributions_shuffled(frame, unit, k, columns, key), None
        # the check and the bounding take the one partition from one task, so a
        # source that reads in its own task (Parquet, from_map) is read once
        parts = backend.partitions(frame)
        one = backend.from_partitions(parts, backend.empty(frame))
        return bound_contributions_shuffled(one, unit, k, columns, key), task(check, parts[0])
    parts = backend.partitions(frame)
    buckets = min(-(-len(parts) // PARTITIONS_PER_BUCKET), MAX_BUCKETS)
    types = tuple(backend.empty(frame)[list(unit)].dtypes)
    small = [task(smallest_and_check, part, unit, k, content, key, buckets, types, check,
                  nout=buckets + 1) for part in parts]
    checked = None if check is None else _combined(task, [s[buckets] for s in small],
                                                  combine, split_every)
    tables = [task(thresholds_of, [s[b] for s in small], unit, k) for b in range(buckets)]
    lookup = task(threshold_lookup, tables, unit)
    kept = [task(keep_below, part, unit, content, key, lookup, columns, buckets, types,
                 nout=buckets + 1) for part in parts]
    chosen = [task(first_by_content, [f[1 + b] for f in kept], unit, content, columns)
              for b in range(buckets)]
    meta = backend.empty(frame)[list(columns)].iloc[:0]
    return backend.from_partitions([f[0] for f in kept] + chosen, meta), checked


def smallest_and_check(frame: pd.DataFrame, unit, k: int, content, key, buckets: int, types,
                       check) -> list:
    """:func:`smallest_priorities` by bucket, then ``check(frame)`` of the whole
    partition (``None`` without a check)."""
    return [*smallest_priorities(frame, unit, k, content, key, buckets, types),
            None if check is None else check(frame)]


def _combined(task, values: list, combine, split_every: int):
    """``values`` (tasks' results) combined by ``combine`` in a tree of
    ``split_every`` where they are: one task's result."""
    step = max(2, int(split_every))
    while len(values) > 1:
        values = [task(_fold, combine, values[i:i + step]) for i in range(0, len(values), step)]
    return values[0]


def _fold(combine, values):
    out = values[0]
    for value in values[1:]:
        out = combine(out, value)
    return out


#: Input partitions per bucket of the thresholds (a bucket's task holds its
#: partitions' share of every partition's small table: the unit columns and one
#: ``uint64`` for at most ``k + 1`` rows per unit and partition).
PARTITIONS_PER_BUCKET = 4
#: At most this many buckets: each partition's small table is cut into one piece a
#: bucket, ``partitions x buckets`` pieces in the graph.
MAX_BUCKETS = 64

#: A threshold table's columns: the unit's ``k``-th smallest priority, and how
#: many of its rows at that priority are kept when more than that many tie there
#: (``-1``: all of them).
THRESHOLD = "__dpmic_threshold__"
NEED = "__dpmic_need__"


def _buckets(table: pd.DataFrame, unit, buckets: int) -> list[pd.DataFrame]:
    """``table`` split by a hash of the unit columns' values: every row of one unit
    in the same bucket, in every partition."""
    if buckets == 1:
        return [table]
    which = pd.util.hash_pandas_object(table[list(unit)], index=False).to_numpy() % np.uint64(
        buckets)
    # small integers sort stably by radix (MAX_BUCKETS fits a byte): 5x a uint64 sort
    order = np.argsort(which.astype(np.uint8 if buckets <= 256 else np.uint64), kind="stable")
    edges = np.searchsorted(which[order], np.arange(buckets + 1))
    return [table.iloc[order[edges[b]:edges[b + 1]]] for b in range(buckets)]


def _unit_codes(table: pd.DataFrame, unit) -> np.ndarray:
    """Each row's unit as a code from 0 (equal units, equal codes; in this table)."""
    codes = None
    for name in unit:
        column, values = pd.factorize(table[name])  # -1 for a missing value
        column = np.where(column < 0, len(values), column)  # missing: a code of its own
        if codes is None:  # one column: its codes already (no second hashing pass)
            codes = column
            continue
        # (code, column) pairs to one code, never colliding: codes below len + 1
        codes = pd.factorize(codes * (len(values) + 1) + column)[0]
    return np.zeros(len(table), dtype=np.int64) if codes is None else np.asarray(codes, np.int64)


def _ranks(codes: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Each row's rank in its unit by priority (0: the smallest; equal priorities
    in any order, so an unstable sort serves: half a stable one's time on 64 bits;
    every use reads a priority at a rank, or which ranks are below one, and rows
    of equal priority give the same answers in either order)."""
    order = np.argsort(priority)
    rank = np.empty(len(codes), dtype=np.int64)
    ordered = codes[order]
    rank[order] = pd.Series(ordered).groupby(ordered, sort=False).cumcount().to_numpy()
    return rank


def unit_as_schema(frame: pd.DataFrame, unit, types) -> pd.DataFrame:
    """``frame`` with its unit columns in the frame's schema types ``types`` (one
    per unit column; ``None``: as they are). Partitions read from different files can
    disagree (7 in one, 7.0 in another): a unit must be one unit in every partition,
    so each column is cast to its schema type where that loses nothing, and refused
    (naming the column and the types, never a value) where it would."""
    if types is None:
        return frame
    out = frame
    for name, dtype in zip(unit, types, strict=True):
        column = frame[name]
        if column.dtype == dtype:
            continue
        try:
            cast = column.astype(dtype)
            same = bool((cast.astype(column.dtype) == column).all())
        except (TypeError, ValueError, OverflowError):
            same = False
        if not same:
            raise InvalidDataError(
                f"the unit column {name!r} has type {column.dtype} in one partition and "
                f"{dtype} in the frame's schema, and its values do not convert: give it one "
                "type in every partition (e.g. astype before the release)")
        out = out.assign(**{name: cast})
    return out


def smallest_priorities(frame: pd.DataFrame, unit, k: int, content, key,
                        buckets: int = 1, types=None) -> list[pd.DataFrame]:
    """A partition's unit columns and priority for at least each unit's ``k + 1``
    smallest priorities (with repeats; all of a unit's rows when it has no more
    here), by bucket: the ``k + 1`` smallest of a whole unit are among its
    partitions' ones, so its ``k``-th and whether the ``k + 1``-th ties it are
    found from these alone, and no unit sends more than ``k + 1`` rows a partition."""
    frame = unit_as_schema(frame[list(content)].dropna(subset=list(unit)), unit, types)
    table = frame[list(unit)].copy()
    table[PRIORITY] = priority = row_priority(frame, content, key)
    codes = _unit_codes(table, unit)
    heavy = np.bincount(codes)[codes] > k + 1
    if heavy.any():
        rank = _ranks(codes[heavy], priority[heavy])
        keep = ~heavy
        keep[np.flatnonzero(heavy)[rank <= k]] = True
        table = table[keep]
    return _buckets(table, unit, buckets)


def thresholds_of(tables, unit, k: int) -> pd.DataFrame:
    """Each unit's threshold from all its :func:`smallest_priorities` rows, one row a
    unit: the ``k``-th smallest priority (the largest when the unit has ``k`` rows
    or fewer) and, when more than ``k`` rows are at or below it (the ``k + 1``-th
    ties it), ``NEED``: how many rows at the threshold the ``k`` smallest take
    (``k`` less the rows below it); else -1."""
    unit = list(unit)
    table = pd.concat(tables) if isinstance(tables, list) else tables
    codes = _unit_codes(table, unit)
    priority = table[PRIORITY].to_numpy()
    size = np.bincount(codes)
    at = _ranks(codes, priority) == (np.minimum(size, k) - 1)[codes]
    by_unit = np.zeros(len(size), dtype=np.uint64)
    by_unit[codes[at]] = priority[at]
    threshold = by_unit[codes]
    below = np.bincount(codes, weights=priority < threshold, minlength=len(size))
    upto = np.bincount(codes, weights=priority <= threshold, minlength=len(size))
    out = table[at][unit].copy()
    out[THRESHOLD] = priority[at]
    unit_at = codes[at]
    out[NEED] = np.where(upto[unit_at] > k, k - below[unit_at], -1).astype(np.int64)
    return out


def threshold_lookup(tables, unit) -> pd.DataFrame:
    """Every bucket's thresholds in one table indexed by the unit (what each
    partition is filtered against)."""
    unit = list(unit)
    table = pd.concat(tables) if isinstance(tables, list) else tables
    index = (pd.Index(table[unit[0]]) if len(unit) == 1
             else pd.MultiIndex.from_frame(table[unit]))
    return pd.DataFrame({THRESHOLD: table[THRESHOLD].to_numpy(),
                         NEED: table[NEED].to_numpy()}, index=index)


def keep_below(frame: pd.DataFrame, unit, content, key, lookup: pd.DataFrame, columns,
               buckets: int = 1, types=None) -> list[pd.DataFrame]:
    """A partition's rows below their unit's threshold, and at it when the unit has
    no more rows there than its ``k`` smallest take: ``columns`` of them; then, by
    bucket, the rows at a threshold that ties past the ``k``-th (each unit's
    ``NEED`` smallest by content here, with ``content`` and ``NEED``)."""
    unit = list(unit)
    frame = unit_as_schema(frame[list(content)].dropna(subset=unit), unit, types)
    priority = row_priority(frame, content, key)
    values = frame[unit[0]] if len(unit) == 1 else pd.MultiIndex.from_frame(frame[unit])
    where = lookup.index.get_indexer(values)
    if (where < 0).any():
        raise AssertionError("a unit without a threshold")
    threshold = lookup[THRESHOLD].to_numpy()[where]
    need = lookup[NEED].to_numpy()[where]
    below = (priority < threshold) | ((priority == threshold) & (need < 0))
    at = (priority == threshold) & (need >= 0)
    tied = first_by_content([frame[at].assign(**{NEED: need[at]})], unit, content)
    return [frame.loc[below, list(columns)], *_buckets(tied, unit, buckets)]


def first_by_content(tables, unit, content, columns=None) -> pd.DataFrame:
    """Rows tied at their unit's threshold: each unit's ``NEED`` smallest by content
    (as :func:`keep_smallest` orders rows of equal priority); ``columns`` of them
    when given."""
    frame = pd.concat(tables)
    if not frame.empty:
        order = frame.iloc[content_order(frame, content)]
        rank = order.groupby(list(unit), sort=False, dropna=True).cumcount().to_numpy()
        frame = order[rank < order[NEED].to_numpy()]
    return frame if columns is None else frame[list(columns)]
