"""Keeping the local model's reports: Parquet files with their public design in
the files' metadata (:func:`write_reports`), read back only as checked
(:func:`read_design`: one design, no file twice, nothing else a reader would take)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dpmic_dask.errors import InvalidDataError, InvalidParameterError
from dpmic_dask.ldp.client import ATTR, design_fingerprint


def design_of(reports) -> dict:
    """The design carried by a report frame (pandas or Dask)."""
    for holder in (reports, getattr(reports, "_meta", None)):
        attrs = getattr(holder, "attrs", None)
        if attrs and ATTR in attrs:
            design = attrs[ATTR]
            return json.loads(design) if isinstance(design, (str, bytes)) else dict(design)
    raise InvalidParameterError(
        "the reports carry no design: pass design=... or read them with read_reports")


def write_reports(reports: pd.DataFrame, path, design: dict | None = None) -> None:
    """Write reports to Parquet with their design in the file's metadata."""
    design = design_of(reports) if design is None else design
    table = pa.Table.from_pandas(reports, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[ATTR.encode()] = json.dumps(design).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def read_design(path) -> dict:
    """The design stored in a reports Parquet file, or in every file of a directory
    of them (one design: files of two designs are refused, never read as one)."""
    files = _report_files(path)
    if not files:
        raise InvalidParameterError("the directory holds no Parquet file of reports")
    designs = []
    for one in files:
        raw = (pq.read_schema(one).metadata or {}).get(ATTR.encode())
        if raw is None:
            raise InvalidParameterError("a Parquet file of the reports carries no report design")
        designs.append(json.loads(raw))
    if any(design_fingerprint(d) != design_fingerprint(designs[0]) for d in designs[1:]):
        raise InvalidParameterError(
            "the directory holds reports of more than one design: read each design's "
            "files apart")
    digests: dict[str, str] = {}
    for one in files:  # a file copied twice would count every report in it twice
        with open(one, "rb") as handle:
            digest = hashlib.file_digest(handle, "sha256").hexdigest()
        if digest in digests:
            first = Path(digests[digest]).name
            raise InvalidDataError(
                f"two files of the reports hold the same bytes ({first!r} and "
                f"{Path(one).name!r}): every report in them would be counted twice; "
                "remove the copy")
        digests[digest] = one
    return designs[0]


def _report_files(path) -> list:
    """The Parquet files of ``path`` (a file, or a directory's ``*.parquet``). A
    directory holding anything else a Parquet reader would read too (a copy named
    ``a.parquet.bak``, a folder) is refused: its reports would be counted unchecked."""
    if not Path(path).is_dir():
        return [path]
    stray = sorted(f.name for f in Path(path).iterdir() if not f.name.startswith(("_", "."))
                   and (f.is_dir() or f.suffix != ".parquet"))
    if stray:
        raise InvalidDataError(
            f"the directory of reports holds {len(stray)} entr{'y' if len(stray) == 1 else 'ies'} "
            f"other than *.parquet files (first {stray[0]!r}), which a Parquet reader would "
            "read too, unchecked (a copy would count its reports twice): move them out")
    return sorted(str(f) for f in Path(path).glob("*.parquet"))


def read_reports(path) -> pd.DataFrame:
    """Read reports written by :func:`write_reports`, design in ``.attrs`` (exactly
    the files :func:`read_design` checked)."""
    design = read_design(path)
    frame = pd.concat([pd.read_parquet(f) for f in _report_files(path)], ignore_index=True)
    frame.attrs = {ATTR: design}
    return frame


__all__ = ["design_of", "read_design", "read_reports", "write_reports"]
