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
from urllib.parse import unquote

from dpmic_dask.errors import DPMICError
from dpmic_dask.privacy.accounting import ledger_from_url
from dpmic_dask.release.htmlreport.ledgerview import ledger_unavailable, ledger_view

#: What a page records of where its history came from (``<meta name=... content=...>``).
_META = re.compile(r'<meta name="dpmic-(?P<key>ledger|dataset)" content="(?P<value>[^"]*)"')


#: Query parameters of a database URL that a page, a message or the journal may
#: show (libpq's and SQLite's harmless ones); every other parameter is left out,
#: since its value may be a secret (``password``, ``sslpassword``, ``PWD``,
#: ``odbc_connect``, a token ...).
HARMLESS_PARAMETERS = frozenset({
    "sslmode", "sslrootcert", "sslcert", "sslcrl", "connect_timeout", "application_name",
    "target_session_attrs", "host", "hostaddr", "port", "dbname", "user", "keepalives",
    "keepalives_idle", "keepalives_interval", "keepalives_count", "tcp_user_timeout",
    "gssencmode", "channel_binding", "client_encoding", "mode", "uri", "cache", "immutable",
    "nolock", "timeout", "charset", "driver", "check_same_thread"})
_WITHHELD = "(a URL that does not parse, withheld)"


def harmless(name: str) -> bool:
    """Whether a URL's query parameter ``name`` may be shown (:data:`HARMLESS_PARAMETERS`)."""
    return unquote(name).lower() in HARMLESS_PARAMETERS


def public_query(query: str) -> str:
    """A URL's query string with only its :func:`harmless` parameters."""
    return "&".join(pair for pair in query.split("&")
                    if pair and harmless(pair.split("=", 1)[0]))


def redacted(url: str) -> str:
    """``url`` without its password (a page, a message or the journal never holds
    one): the user's password before ``@``, every query parameter that is not
    :func:`harmless` (``?password=``), and any fragment (``#``); a PostgreSQL
    ledger is then reached with the password from ``PGPASSWORD`` or
    ``~/.pgpass``. A URL whose user part holds a ``/``, ``?``, ``#`` or a second
    ``@`` (an unencoded password) is withheld whole."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return _WITHHELD
    user = ""
    if "@" in rest:
        userinfo, _, rest = rest.rpartition("@")
        if any(c in userinfo for c in "@/?#"):
            return _WITHHELD
        user = userinfo.split(":", 1)[0] + "@"
    rest = rest.split("#", 1)[0]
    where, asked, query = rest.partition("?")
    kept = public_query(query) if asked else ""
    return f"{scheme}://{user}{where}" + (f"?{kept}" if kept else "")


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
