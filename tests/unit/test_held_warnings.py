"""A batch run's warnings in step with its charge: before it shown at once, after it
held until the charge commits, dropped when the charge is rolled back."""

import warnings

import pytest

from dpmic_dask.batch.journal import HeldWarnings
from dpmic_dask.errors import BoundsWarning


class Run:
    charged = False


@pytest.mark.parametrize("committed", [True, False])
def test_warnings_after_the_charge_wait_for_its_commit_or_go_with_its_rollback(committed):
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
        if not committed:
            held.drop()
        held.flush()
    assert shown == (["before", "after noise"] if committed else ["before"])
