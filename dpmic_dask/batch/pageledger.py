"""The ledger history on a pairwise run's page (``_pages/run-<run id>--<job>.html``):
read from the run's ledger when ``dpmic run`` or ``dpmic deliver`` writes the page,
and again when ``dpmic report`` rebuilds it, from the ledger URL the page
recorded (its password left out) or the one given with ``--ledger``.

A ledger that cannot be read never fails a delivery or a rebuild: the section
then says why the history is not available. The section is built by
:mod:`dpmic_dask.release.htmlreport.ledgerview`.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from dpmic_dask.errors import DPMICError
from dpmic_dask.privacy.accounting import ledger_from_url
from dpmic_dask.release.htmlreport.ledgerview import ledger_unavailable, ledger_view

#: What a page records of where its history came from (``<meta name=... content=...>``).
_META = re.compile(r'<meta name="dpmic-(?P<key>ledger|dataset)" content="(?P<value>[^"]*)"')


#: Query parameters of a database URL that hold a secret (libpq's ``password``
#: and ``sslpassword``; any name holding one of these words).
_SECRET_PARAMETERS = ("pass", "secret", "token")


def public_query(query: str) -> str:
    """A URL's query string without the parameters that hold a secret."""
    return "&".join(pair for pair in query.split("&") if pair and not any(
        word in unquote(pair.split("=", 1)[0]).lower() for word in _SECRET_PARAMETERS))


def redacted(url: str) -> str:
    """``url`` without its password (a page, a message or the journal never holds
    one): the one before ``@`` and any query parameter that holds a secret
    (``?password=``); a PostgreSQL ledger is then reached with the password from
    ``PGPASSWORD`` or ``~/.pgpass``. A URL that does not parse is withheld."""
    base, asked, rest = url.partition("?")
    if asked:  # the query, cut by hand: urlunsplit would rewrite "sqlite:////x.db"
        query, hashed, fragment = rest.partition("#")
        kept = public_query(query)
        url = base + (f"?{kept}" if kept else "") + hashed + fragment
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "(a URL that does not parse, withheld)"
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}@{host}" + (f":{port}" if port is not None else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def recorded(page: Path) -> dict:
    """The ledger URL and dataset an earlier page recorded (``{}`` when none)."""
    try:
        text = page.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    return {m.group("key"): html.unescape(m.group("value")) for m in _META.finditer(text)}


def history_section(ledger, dataset: str, *, source: str | None, charge_id=None,
                    run_id=None, job=None) -> dict:
    """The history section of ``dataset`` in ``ledger`` (an open ledger), or why
    it is not available."""
    try:
        budget = ledger.budget_for(dataset) if hasattr(ledger, "budget_for") else None
        records = ledger.history(dataset)
    except DPMICError as exc:
        return ledger_unavailable(f"the ledger could not be read ({exc})", dataset, source)
    return ledger_view(dataset, budget, records, charge_id=charge_id, run_id=run_id, job=job,
                       source=source)


def history_at(url: str | None, dataset: str | None, **run) -> dict:
    """The history section from the ledger at ``url`` (``None``: not recorded)."""
    if not dataset:
        return ledger_unavailable("the run's files do not name its dataset", None,
                                  redacted(url) if url else None)
    if not url:
        return ledger_unavailable(
            "the run's files do not record its ledger ('dpmic report --ledger URL' reads "
            "one)", dataset)
    source = redacted(url)
    try:
        ledger = ledger_from_url(url)
    except DPMICError as exc:
        return ledger_unavailable(f"the ledger could not be opened ({exc})", dataset, source)
    return history_section(ledger, dataset, source=source, **run)


__all__ = ["history_at", "history_section", "recorded", "redacted"]
