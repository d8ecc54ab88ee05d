"""CSV inputs of a batch job: the columns read as numbers whatever their first
rows hold (:func:`csv_numbers`), and files whose header names a column twice
(:func:`duplicated_header`)."""

from __future__ import annotations

import csv

import fsspec


def csv_numbers(job) -> dict:
    """The CSV columns read as float64 whatever their first rows hold: those with
    public bounds of numbers and no other kind. Dask infers a column's type from
    the first block, so integers there and an empty cell in a later file
    ("int64 found float64") failed the run, said as a value that does not convert;
    the release reads them as doubles in any case."""
    numbers = {}
    for name, bounds in job.bounds.items():
        kind = job.kinds.get(name, {}).get("kind")
        if kind in (None, "number") and isinstance(bounds, (list, tuple)) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in bounds):
            numbers[name] = "float64"
    return numbers


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
