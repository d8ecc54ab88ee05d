"""A batch run's warnings in step with its charge: before it shown at once, after it
held until the charge commits, dropped when the charge is rolled back."""

import warnings

import pytest

from dpmic_dask.batch.journal import HeldWarnings
from dpmic_dask.errors import BoundsWarning


class Run:
    charged = False
    committed = False


@pytest.mark.parametrize("end", ["commit", "rollback", "failed commit"])
def test_warnings_after_the_charge_wait_for_its_commit_or_go_with_its_rollback(end):
    """Shown once the charge commits; dropped when it is rolled back, or when its
    commit fails (nothing was charged) even if the caller flushes."""
    shown = []
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = lambda message, *rest: shown.append(str(message))
        run = Run()
        held = HeldWarnings(run)
        with held:
            warnings.warn("before", BoundsWarning, stacklevel=1)
            run.charged = True
            warnings.warn("after noise", BoundsWarning, stacklevel=1)
        assert shown == ["before"]  # held while the charge is open
        run.charged = False
        run.committed = end == "commit"
        if end == "rollback":
            held.drop()
        held.flush()
    assert shown == (["before", "after noise"] if end == "commit" else ["before"])
