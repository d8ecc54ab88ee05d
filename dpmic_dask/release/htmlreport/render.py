"""The page itself: the Jinja2 template filled with a view (:mod:`.views`), and
the file it is written to (atomically: a hidden temporary name, then a rename)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import jinja2

from dpmic_dask.release.htmlreport.compact import compact

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("dpmic_dask.release.htmlreport", "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
)


def render_page(view: dict) -> str:
    """The HTML text of one page (one self-contained document; a large table or
    heatmap as data its script draws, :mod:`.compact`)."""
    return _ENV.get_template("page.html.j2").render(**compact(view))


def write_page(view: dict, path) -> Path:
    """Write the page of ``view`` to ``path`` (replaced whole, never half-written);
    returns the path."""
    return write_whole(Path(path), render_page(view))


def write_whole(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path``, replaced whole, never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


__all__ = ["render_page", "write_page", "write_whole"]
