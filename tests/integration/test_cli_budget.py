import json
import os
import subprocess
import sys

from dpmic_dask.batch.cli import Exit
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger
from tests.cli import invoke


def test_budget_init_show_history(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.db'}"
    r = invoke("budget", "init", "--ledger", url, "--dataset", "sales", "--eps", "2")
    assert r.exit_code == 0 and "budget 2.0 epsilon" in r.output
    again = invoke("budget", "init", "--ledger", url, "--dataset", "sales", "--epsilon", "9")
    assert again.exit_code == Exit.INVALID and "never changed" in again.output
    assert "--epsilon is deprecated; use --eps" in again.output  # the old spelling still works
    ledger = SQLLedger(url)
    ledger.charge("sales", PrivacyCost(0.5), description="daily export", mechanism="micr-lap",
                  columns=("age", "income"))
    ledger.charge("sales", PrivacyCost(0.25), description="ad hoc")
    show = invoke("budget", "show", "--ledger", url, "--dataset", "sales")
    assert show.exit_code == 0
    assert "unit:      one row " in show.output
    assert "spent:     0.75 epsilon in 2 release(s)" in show.output
    assert "remaining: 1.25 epsilon" in show.output
    hist = invoke("budget", "history", "--ledger", url, "--dataset", "sales", "--json")
    assert hist.exit_code == 0, hist.output
    rows = [json.loads(line) for line in hist.stdout.splitlines()]
    assert [r["job"] for r in rows] == ["daily export", "ad hoc"]
    assert rows[0]["mechanism"] == "micr-lap" and rows[0]["columns"] == ["age", "income"]
    assert [r["amount"] for r in rows] == ["0.5", "0.25"]
    text = invoke("budget", "history", "--ledger", url, "--dataset", "sales")
    assert "daily export" in text.output and text.exit_code == 0


def test_budget_show_gives_zcdp_budgets_to_four_digits_with_their_eps_delta(tmp_path):
    url = f"sqlite:///{tmp_path / 'l.db'}"
    made = invoke("budget", "init", "--ledger", url, "--dataset", "z", "--eps", "1",
                  "--delta", "1e-6", "--unit", "customer_id")
    assert made.exit_code == 0 and "budget 0.02436 rho (zCDP)" in made.output, made.output
    SQLLedger(url).charge("z", PrivacyCost(0.1))  # rho = 0.1 ** 2 / 2
    show = invoke("budget", "show", "--ledger", url, "--dataset", "z")
    assert show.exit_code == 0, show.output
    lines = show.output.splitlines()
    assert "unit:      customer_id (the privacy unit the budget protects; releases of " \
        "another unit are refused)" in lines
    assert "cap:       0.02436 rho (zCDP), implies (eps=1, delta=1e-06)" in lines
    assert "spent:     0.005 rho (zCDP) in 1 release(s), implies (eps=0.4299, delta=1e-06)" \
        in lines
    assert "remaining: 0.01936 rho (zCDP), implies (eps=0.8843, delta=1e-06)" in lines


def test_budget_errors_have_exit_codes(tmp_path):
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    r = invoke("budget", "show", "--ledger", missing, "--dataset", "x")
    assert r.exit_code == Exit.LEDGER and "does not exist" in r.output
    assert "a relative path" not in r.output
    # a relative URL names the file it looked for: another folder's is another budget
    r = invoke("budget", "show", "--ledger", "sqlite:///none.db", "--dataset", "x")
    assert r.exit_code == Exit.LEDGER and "a relative path:" in r.output
    assert "a new ledger is a new budget" in r.output
    r = invoke("budget", "init", "--ledger", missing, "--dataset", "x", "--epsilon", "-1")
    assert r.exit_code == Exit.INVALID and "epsilon" in r.output
    r = invoke("budget", "init", "--ledger", "ftp://x", "--dataset", "x", "--eps", "1")
    assert r.exit_code == Exit.INVALID and "sqlite:///" in r.output
    r = invoke("budget", "init", "--ledger", missing, "--dataset", "x")
    assert r.exit_code == 2 and "--eps" in r.output  # click's usage error
    nowhere = f"sqlite:///{tmp_path / 'no' / 'such' / 'folder.db'}"
    r = invoke("budget", "init", "--ledger", nowhere, "--dataset", "x", "--eps", "1")
    assert r.exit_code == Exit.LEDGER and "its folder does not exist" in r.output
    assert "read-only" not in r.output


def test_budget_as_a_real_process_with_env_ledger(tmp_path):
    env = {**os.environ, "DPMIC_LEDGER": f"sqlite:///{tmp_path / 'env.db'}",
           "PYTHONPATH": os.getcwd()}
    run = lambda *a: subprocess.run([sys.executable, "-m", "dpmic_dask", *a], env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    assert run("budget", "init", "--dataset", "d", "--eps", "1", "--delta", "1e-6").returncode == 0
    shown = run("budget", "show", "--dataset", "d")
    assert shown.returncode == 0 and "rho" in shown.stdout
    assert run("budget", "show", "--dataset", "nope").returncode == Exit.LEDGER


def test_budget_show_says_an_unending_remainder_in_six_digits_never_rounded_up(tmp_path):
    """5 - 1/3 left printed as 4.6666666666666667 epsilon; it is cut (never rounded
    up: that would show budget that is not there) to six significant digits."""
    from dpmic_dask.batch.forecast import remaining_words
    from dpmic_dask.privacy.accounting import Budget
    from dpmic_dask.privacy.costs import PrivacyCost
    from dpmic_dask.privacy.ledger import SQLLedger

    url = f"sqlite:///{tmp_path / 'l.db'}"
    ledger = SQLLedger(url)
    ledger.init("d", Budget(5.0))
    ledger.charge("d", PrivacyCost(1 / 3), description="x")
    assert remaining_words(ledger, "d") == "4.66666 epsilon"
    shown = invoke(["budget", "show", "--ledger", url, "--dataset", "d"])
    assert shown.exit_code == 0 and "remaining: 4.66666 epsilon" in shown.output
