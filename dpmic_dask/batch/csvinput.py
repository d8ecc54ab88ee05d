"""CSV inputs of a batch job: the types declared for their columns where the
first block cannot tell them (:func:`csv_dtypes`), and files whose header names
a column twice (:func:`duplicated_header`)."""

from __future__ import annotations

import csv

import fsspec


def csv_dtypes(job, inferred) -> dict:
    """Declared types for a job's CSV columns that the first block shows as
    integers (``inferred``: column -> dtype), so that an empty cell in a later
    file is a null, not a clash of int64 and float64: a column with public bounds
    of numbers (and no other kind) as float64, as the release reads it anyway;
    every other integer column -- categories, a privacy unit's ids, epoch ticks --
    as ``Int64``, exact (ids beyond 2**53 stay apart); a column the job lists
    integer categories for as ``Int64`` too when the first block reads it as
    floats (an empty cell there). Text and booleans are read as the file holds
    them."""
    out = {}
    for name, dtype in inferred.items():
        if _integer_list(job.bounds.get(name)) and getattr(dtype, "kind", "") == "f":
            out[name] = "Int64"  # integer codes whose first block has an empty cell
            continue
        if getattr(dtype, "kind", "") not in "iu" or isinstance(dtype, str):
            continue
        bounds = job.bounds.get(name)
        kind = job.kinds.get(name, {}).get("kind")
        numbers = kind in (None, "number") and isinstance(bounds, (list, tuple)) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds)
        out[name] = "float64" if numbers else "Int64"
    return out


def _integer_list(spec) -> bool:
    """Whether a job's column spec is a category list (public, or private
    candidates) of integers only."""
    if not isinstance(spec, dict):
        return False
    listed = spec.get("categories")
    if isinstance(listed, dict):
        listed = listed.get("private")
    return isinstance(listed, (list, tuple)) and bool(listed) and all(
        isinstance(v, int) and not isinstance(v, bool) for v in listed)


def duplicated_header(paths, named=()) -> str | None:
    """What is wrong with CSV files whose header names a column twice (else
    ``None``): the reader would rename the second one (``a.1``) and a job naming
    ``a`` would silently read the first. Only the first line is read. A name is
    quoted only where it repeats one of the job's own column names (``named``): a
    file without a header has a row of data there."""
    try:
        files = fsspec.open_files(paths, mode="rt", compression="infer", newline="")
    except Exception:  # noqa: BLE001 - the reader below reports an unopenable input
        return None
    for opened in files:
        try:
            with opened as handle:
                header = next(csv.reader(handle), [])
        except Exception:  # noqa: BLE001 - the reader below reports an unreadable file
            continue
        seen: set[str] = set()
        for name in header:  # empty names are read as distinct "Unnamed: i" columns
            if name and name in seen:
                which = (f"names column {name!r}" if name in named else
                         "names one column (not one of the job's)")
                return (f"the CSV input {opened.path!r} {which} more than once in its "
                        "header (its first line: a file needs one): rename or drop one "
                        "(nothing was charged)")
            seen.add(name)
    return None
