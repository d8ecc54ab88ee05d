"""The exit codes of ``dpmic``: one table (``Exit``), pinned here, and the same
table in ``dpmic --help`` and docs/batch.md. Tests elsewhere compare exit codes
with ``Exit`` members; this file is what fails if a member's number changes."""

import re
import signal
from pathlib import Path

import pytest

from dpmic_dask.batch.clibase import Exit, exit_code
from dpmic_dask.batch.interrupts import Interrupted
from dpmic_dask.batch.joboutput import DeliveryError
from dpmic_dask.errors import (
    BudgetExceededError,
    DPMICError,
    InvalidParameterError,
    LedgerError,
    ReleaseIncompleteError,
    RunClaimedError,
    UnavailableError,
    UnitMismatchError,
)
from tests.cli import invoke

ROOT = Path(__file__).resolve().parents[2]

#: What schedulers were told; changing a number breaks their retry rules.
PINNED = {"OK": 0, "UNEXPECTED": 1, "INVALID": 2, "BUDGET": 3, "LEDGER": 4, "UNAVAILABLE": 5,
          "RUN_CLAIMED": 6, "OUTPUT": 7, "INTERRUPTED": 130, "TERMINATED": 143}


def test_the_exit_codes_are_pinned():
    assert {code.name: int(code) for code in Exit} == PINNED


def test_signals_end_with_their_exit_codes():
    assert Interrupted(signal.SIGINT).exit_code == Exit.INTERRUPTED == 130
    assert Interrupted(signal.SIGTERM).exit_code == Exit.TERMINATED == 143


@pytest.mark.parametrize("error, code", [
    (DeliveryError("x"), 7), (BudgetExceededError("x"), 3), (UnitMismatchError("x"), 2),
    (LedgerError("x"), 4), (UnavailableError("x"), 5), (RunClaimedError("x"), 6),
    (ReleaseIncompleteError("x"), 6), (InvalidParameterError("x"), 2), (DPMICError("x"), 2),
    (ValueError("x"), 1),
])
def test_each_error_has_its_exit_code(error, code):
    assert exit_code(error) == code


def test_help_lists_every_exit_code():
    shown = invoke("--help")
    assert shown.exit_code == 0 and shown.stderr == ""
    text = " ".join(shown.stdout.split())
    listed = text.split("Exit codes:", 1)[1]
    for code in Exit:
        assert re.search(rf"(^|[ ,(]){int(code)} ", listed), code


def test_docs_batch_has_the_table():
    text = (ROOT / "docs" / "batch.md").read_text()
    rows = re.findall(r"^\| (\d+) \| `(\w+)` \|", text, flags=re.MULTILINE)
    assert {name: int(number) for number, name in rows} == PINNED
