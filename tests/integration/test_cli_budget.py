import json
import os
import subprocess
import sys

from click.testing import CliRunner

from dpmic_dask.batch.cli import Exit, main
from dpmic_dask.privacy.accounting import PrivacyCost
from dpmic_dask.privacy.ledger import SQLLedger


def invoke(*args):
    return CliRunner().invoke(main, list(args))


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
    assert "spent:     0.75 epsilon in 2 release(s)" in show.output
    assert "remaining: 1.25 epsilon" in show.output
    hist = invoke("budget", "history", "--ledger", url, "--dataset", "sales", "--json")
    rows = [json.loads(line) for line in hist.output.splitlines()]
    assert [r["job"] for r in rows] == ["daily export", "ad hoc"]
    assert rows[0]["mechanism"] == "micr-lap" and rows[0]["columns"] == ["age", "income"]
    assert [r["amount"] for r in rows] == ["0.5", "0.25"]
    text = invoke("budget", "history", "--ledger", url, "--dataset", "sales")
    assert "daily export" in text.output and text.exit_code == 0


def test_budget_errors_have_exit_codes(tmp_path):
    missing = f"sqlite:///{tmp_path / 'none.db'}"
    r = invoke("budget", "show", "--ledger", missing, "--dataset", "x")
    assert r.exit_code == Exit.LEDGER and "does not exist" in r.output
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
