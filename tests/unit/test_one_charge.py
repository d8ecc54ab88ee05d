"""One function in the package charges a budget, from one place.

Every release -- pairs, private bounds and categories alone, the contribution
bound, one pair in memory, causal discovery -- reaches the ledger through the
executor (``release/executor.py``), which calls ``charge_budget`` once; only
``charge_budget`` (``release/charge.py``) and the batch run's ledger view
(``privacy/ledgerrun.py``) call a ledger's ``charge``. A second charging site
anywhere else fails here, whatever it is named after."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dpmic_dask"

#: module (relative to the package) -> how many calls of each name it may make
ALLOWED = {
    "charge_budget": {"release/executor.py": 1},
    "charge": {"release/charge.py": 1, "privacy/ledgerrun.py": 1},
}


def calls(tree: ast.AST) -> list[str]:
    """The names of every function or method called in ``tree`` (``f(...)`` and
    ``obj.f(...)``: ``f``)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                names.append(func.id)
            elif isinstance(func, ast.Attribute):
                names.append(func.attr)
    return names


def charging_sites() -> dict[str, dict[str, int]]:
    """Name -> module -> how many calls of it the module makes."""
    sites: dict[str, dict[str, int]] = {name: {} for name in ALLOWED}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        for name in calls(ast.parse(path.read_text())):
            if name in sites:
                sites[name][module] = sites[name].get(module, 0) + 1
    return sites


def test_only_the_executor_charges_a_budget():
    assert charging_sites() == ALLOWED


def test_the_check_sees_a_charge_in_any_form():
    tree = ast.parse("def f(ledger, x):\n    x = charge_budget(1, ledger, None)\n"
                     "    ledger.charge('d', 1)\n    return m.charge_budget(x)\n")
    assert calls(tree).count("charge_budget") == 2 and calls(tree).count("charge") == 1


def test_a_staged_release_refuses_before_its_bill_and_never_after():
    import warnings

    import pytest

    import dpmic_dask as dm
    from dpmic_dask.errors import InvalidDataError, NoiseWarning, ReleaseIncompleteError
    from dpmic_dask.privacy.accounting import PrivacyCost
    from dpmic_dask.release.charge import Bill
    from dpmic_dask.release.executor import run_charged

    ledger = dm.InMemoryLedger(uncapped=True)

    def refused():
        raise InvalidDataError("refused")
        yield  # a staged release

    with pytest.raises(InvalidDataError):
        run_charged(refused(), ledger=ledger)
    assert ledger.charges() == []

    def failed_after():
        yield Bill(PrivacyCost(1.0), "test", "test-mech", ("a",))
        raise InvalidDataError("the data changed")

    with pytest.raises(ReleaseIncompleteError, match="the budget was charged"):
        run_charged(failed_after(), ledger=ledger)
    assert len(ledger.charges()) == 1

    def warned_after():
        charge = yield Bill(PrivacyCost(1.0), "test", "test-mech")
        warnings.warn("noisy", NoiseWarning, stacklevel=1)
        return charge.charge_id

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning after the charge is shown, not raised
        charge_id = run_charged(warned_after(), ledger=ledger)
    assert [c.charge_id for c in ledger.charges()][-1] == charge_id
    assert [c.description for c in ledger.charges()] == ["test", "test"]
