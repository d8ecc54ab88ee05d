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


@pytest.mark.parametrize("end", ["commit", "rollback", "failed commit"])
def test_log_lines_after_the_charge_wait_for_its_commit_or_go_with_its_rollback(end, caplog):
    """The package's log lines (``-v``) after the charge read noise (the noisy row
    count of a release per unit, how many pairs a selection kept): held like
    warnings, shown once the charge commits, never when it is rolled back."""
    import logging

    log = logging.getLogger("dpmic_dask")
    child = logging.getLogger("dpmic_dask.release.stages")  # a module's own logger
    run = Run()
    held = HeldWarnings(run)
    with caplog.at_level(logging.INFO, logger="dpmic_dask"):
        with held:
            log.info("validated")
            run.charged = True
            log.info("counted 10720 rows")
            child.info("selected 2 of 10 pairs")
        assert [r.getMessage() for r in caplog.records] == ["validated"]
        run.charged = False
        run.committed = end == "commit"
        if end == "rollback":
            held.drop()
        held.flush()
        log.info("after the run")  # the filter is gone with the run
    want = (["validated"] + (["counted 10720 rows", "selected 2 of 10 pairs"]
                             if end == "commit" else []) + ["after the run"])
    assert [r.getMessage() for r in caplog.records] == want


def test_a_held_log_line_carries_the_time_it_is_said(caplog):
    """A line held until the commit is printed after the commit's own lines: it
    is stamped with the time it goes out, so a log's times never run backwards."""
    import logging
    import time

    log = logging.getLogger("dpmic_dask")
    run = Run()
    held = HeldWarnings(run)
    with caplog.at_level(logging.INFO, logger="dpmic_dask"):
        with held:
            run.charged = True
            log.info("selected 2 of 10 pairs")
        time.sleep(0.05)
        run.charged, run.committed = False, True
        log.info("charged")
        held.flush()
    charged, selected = caplog.records
    assert selected.getMessage() == "selected 2 of 10 pairs"
    assert selected.created >= charged.created
    assert selected.msecs == pytest.approx((selected.created % 1) * 1000.0)
