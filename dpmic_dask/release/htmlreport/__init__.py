"""Self-contained HTML pages of released results: ``result.to_html(path)``.

One file per page, with its styles, script and pictures (inline SVG) inside it;
nothing is loaded from a network (the page's own Content-Security-Policy
forbids it), so it works offline and as a mail attachment. A page shows only
fields of the released result (post-processing): :mod:`.views` (pairs) and :mod:`.pages` (the
rest) turn a result into the page's parts, :mod:`.svg` draws the heatmap and the graph, and
:mod:`.render` fills the Jinja2 template.
"""

from dpmic_dask.release.htmlreport.pages import (
    bounds_view,
    categories_view,
    causal_view,
    rows_view,
)
from dpmic_dask.release.htmlreport.render import render_page, write_page, write_whole
from dpmic_dask.release.htmlreport.views import local_view, pairwise_view

__all__ = ["bounds_view", "categories_view", "causal_view", "local_view", "pairwise_view",
           "render_page", "rows_view", "write_page", "write_whole"]
