"""A job's page shows its dataset's ledger history: the step chart of the budget
left after each charge, the table of the last charges, and what ``dpmic report``
rebuilds from the ledger the page recorded (or says when it cannot)."""

import html
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest

from dpmic_dask.batch.pageledger import history_at, recorded, redacted
from dpmic_dask.batch.runpage import rebuild, rows_page_path
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.costs import PrivacyCost
from dpmic_dask.privacy.ledgerrows import ChargeRecord
from dpmic_dask.release.htmlreport import render_page, rows_view
from dpmic_dask.release.htmlreport.ledgerview import cost_words, ledger_view
from tests.cli import invoke
from tests.htmlpages import check_page, ledger_with_charges, pairwise_result, run_file

SVG = "{http://www.w3.org/2000/svg}"

#: A zCDP budget (eps 2, delta 1e-6) and four charges at known times: amounts in rho.
BUDGET = Budget(2.0, 1e-6)
HISTORY = [
    ChargeRecord("c1", "2026-11-20T03:00:00.000+00:00", Decimal("0.01"),
                 PrivacyCost(0.5, 1e-7, 0.01), "pairwise (first)", "micr-gauss", ("a",),
                 "r1", "nightly"),
    ChargeRecord("c2", "2026-11-21T03:00:00.000+00:00", Decimal("0.045"), PrivacyCost(0.3),
                 "bounds", "bounds", ("a",), "r2", "nightly"),
    ChargeRecord("c3", "2026-11-21T09:30:00.000+00:00", Decimal("0.02"),
                 PrivacyCost(0.5, 1e-7, 0.02, 1e-8), "categories", "categories", ("b",),
                 "r3", "weekly"),
    ChargeRecord("c4", "2026-11-23T03:00:00.000+00:00", Decimal("0.005"),
                 PrivacyCost(0.2, 1e-7, 0.005), "pairwise (later)", "micr-gauss", ("a",),
                 "r4", "nightly"),
]


def page_with(section) -> str:
    view = rows_view(pairwise_result(tau=False).to_pandas())
    view["ledger"] = section
    text = render_page(view)
    check_page(text)
    return text


def chart_of(text: str) -> ET.Element:
    """The chart's SVG, parsed as XML (it must be well-formed on its own)."""
    found = re.search(r'<figure id="ledger-chart">\s*(<svg.*?</svg>)', text, re.S)
    assert found, "no chart on the page"
    return ET.fromstring(found.group(1).replace('role="img"', 'role="img" '
                                                'xmlns="http://www.w3.org/2000/svg"', 1))


def test_the_chart_has_one_mark_per_charge_in_time_order_and_the_right_budget_left():
    section = ledger_view("sales", BUDGET, HISTORY[:3], charge_id="c3", source="sqlite:///l.db")
    text = page_with(section)
    svg = chart_of(text)
    marks = [g for g in svg.iter(f"{SVG}g") if "charge" in g.get("class", "").split()]
    assert len(marks) == 3
    xs = [float(g.find(f"{SVG}circle").get("cx")) for g in marks]
    assert xs == sorted(xs) and len(set(xs)) == 3  # later charges further right
    # the gaps follow the times: 24 h, then 6.5 h
    assert (xs[1] - xs[0]) / (xs[2] - xs[1]) == pytest.approx(24 / 6.5, rel=1e-3)
    cap_after = BUDGET.cap_after(Decimal("1e-8"))  # c3's bad-event delta lowers the cap
    assert float(marks[-1].get("data-left")) == pytest.approx(
        float(cap_after - Decimal("0.075")), rel=1e-12)
    assert float(marks[0].get("data-left")) == pytest.approx(float(BUDGET.cap) - 0.01)
    lefts = [float(g.get("data-left")) for g in marks]
    ys = [float(g.find(f"{SVG}circle").get("cy")) for g in marks]
    assert lefts == sorted(lefts, reverse=True) and ys == sorted(ys)  # down the page as it falls
    assert "mine" in marks[-1].get("class") and "mine" not in marks[0].get("class")
    shown = html.unescape(text)
    # zCDP costs in their own words; the pure one in epsilon, charged in rho
    assert "rho 0.01 (zCDP; epsilon 0.5, delta 1e-07)" in shown
    assert "rho 0.02 (zCDP; epsilon 0.5, delta 1e-07) and a bad-event delta 1e-08" in shown
    assert "epsilon 0.3" in shown and "0.045 rho" in shown
    titles = [g.find(f"{SVG}title").text for g in marks]
    assert titles[0].startswith("2026-11-20 03:00:00 UTC: rho 0.01 (zCDP")
    assert titles[-1].endswith("(this run)")
    assert f"{float(cap_after - Decimal('0.075')):.6g} rho left" in titles[-1]
    assert shown.count('data-text="r') == 3  # the table: one row per charge
    assert "r3 / weekly" in shown and "pairwise (first)" in shown


def test_the_history_ends_at_the_runs_own_charge_and_counts_the_later_ones():
    section = ledger_view("sales", BUDGET, HISTORY, run_id="r2", job="nightly")
    assert section["total"] == 2 and section["later"] == 2 and section["found"]
    text = html.unescape(page_with(section))
    assert "pairwise (later)" not in text and "2 later charge(s) are in the ledger" in text
    assert [r["cells"][0]["text"] for r in section["rows"]] == [  # newest first
        "2026-11-21 03:00:00 UTC", "2026-11-20 03:00:00 UTC"]
    # a pure budget: epsilons add, the costs are in epsilon
    memory = InMemoryLedger()  # its charges carry no amount: taken from the budget
    memory.set_budget("d", Budget(1.0))
    memory.charge("d", PrivacyCost(0.3), description="bounds")
    pure = ledger_view("d", memory.budget_for("d"), memory.history("d"))
    assert pure["left"] == "0.7 epsilon" and pure["chart"]["marks"][0]["left"] == pytest.approx(0.7)
    assert cost_words(PrivacyCost(0.3)) == "epsilon 0.3"


def test_the_table_lists_the_last_charges_only_but_the_chart_draws_every_one():
    many = [ChargeRecord(f"c{k}", f"2026-11-{k + 1:02d}T00:00:00+00:00", Decimal("0.01"),
                         PrivacyCost(0.1), "", "", (), f"r{k}", "j") for k in range(14)]
    section = ledger_view("d", Budget(1.0), many)
    assert len(section["chart"]["marks"]) == 14 and len(section["rows"]) == 10
    assert section["rows"][0]["cells"][1]["text"] == "r13 / j"
    assert section["left"] == "0.86 epsilon"


def test_without_a_ledger_the_section_says_the_history_is_not_available(tmp_path):
    text = html.unescape(page_with(history_at(None, "sales")))
    assert "The ledger's history is not available: the run's files do not record its ledger" in text
    assert 'id="ledger-chart"' not in text
    gone = history_at(f"sqlite:///{tmp_path / 'missing.db'}", "sales")
    assert not gone["available"] and "could not be read" in gone["reason"]
    assert not (tmp_path / "missing.db").exists()  # reading never creates a ledger


def test_a_page_never_records_a_ledgers_password():
    assert redacted("postgresql://ops:s3cret@db.example:5432/ledger") == \
        "postgresql://ops@db.example:5432/ledger"
    assert redacted("sqlite:////var/lib/dpmic/ledger.db") == "sqlite:////var/lib/dpmic/ledger.db"
    section = history_at("postgresql://ops:s3cret@127.0.0.1:1/nothing", "sales")
    assert "s3cret" not in page_with(section)
    # libpq also takes a password in the query string; other parameters stay
    assert redacted("postgresql://ops@db:5432/ledger?sslmode=require&password=s3cret"
                    "&sslpassword=k3y") == "postgresql://ops@db:5432/ledger?sslmode=require"
    assert redacted("postgresql://ops@db/ledger?PassWord=s3cret") == "postgresql://ops@db/ledger"
    assert redacted("sqlite:///ledger.db?password=s3cret") == "sqlite:///ledger.db"
    assert "s3cret" not in redacted("postgresql://ops:s3cret@db:99999/ledger")  # no port
    # a password with a "#": the fragment goes too; unknown parameters go (PWD, ODBC)
    assert redacted("postgresql://ops@db/ledger?password=s3#cret") == "postgresql://ops@db/ledger"
    assert redacted("mssql+pyodbc://ops@db/out?odbc_connect=DRIVER%3Dx%3BPWD%3Ds3cret"
                    "&PWD=s3cret") == "mssql+pyodbc://ops@db/out"
    # an unencoded "?", "#" or "@" in the password: the whole URL is withheld
    for url in ("postgresql://ops:s3?cret@db/l", "postgresql://ops:s3#cret@db/l",
                "postgresql://ops:s3@cret@db/l"):
        assert "cret" not in redacted(url)
    section = history_at("postgresql://ops@127.0.0.1:1/nothing?password=s3cret", "sales")
    assert "s3cret" not in page_with(section)


def test_dpmic_report_rebuilds_the_history_from_the_ledger_the_page_recorded(tmp_path):
    url, charges = ledger_with_charges(tmp_path / "ledger.db")
    result = pairwise_result(tau=False)
    first = run_file(tmp_path / "out", result, "r1", charges[0].charge_id)
    last = run_file(tmp_path / "out", result, "r3", charges[2].charge_id)
    given = invoke(["report", str(tmp_path / "out"), "--ledger", url])
    assert given.exit_code == 0, given.output
    page, other = rows_page_path(first), rows_page_path(last)
    assert recorded(page) == {"ledger": url, "dataset": "sales"}
    one, three = html.unescape(page.read_text()), html.unescape(other.read_text())
    assert one.count('<g class="charge') == 1 and three.count('<g class="charge') == 3
    assert "2 later charge(s)" in one
    assert "rho 0.02 (zCDP; epsilon 0.5, delta 1e-07)" in three
    left = float(BUDGET.cap) - 0.01 - 0.045 - 0.02
    assert f"{left:.6g} rho" in three
    before = other.read_text()
    (again,) = rebuild(last)  # no --ledger: the one the page recorded
    assert again.read_text() == before
    (tmp_path / "ledger.db").rename(tmp_path / "moved.db")
    (page_now,) = rebuild(last)
    text = html.unescape(page_now.read_text())
    check_page(page_now.read_text())
    assert "The ledger's history is not available: the ledger could not be read" in text
    assert recorded(page_now) == {"ledger": url, "dataset": "sales"}  # still recorded
