"""Fixtures of the integration tests."""

import numpy as np
import pytest

from dpmic_dask.release import boundsteps


@pytest.fixture
def check_spy(monkeypatch):
    """The check of public bounds' exact histograms as its step holds them when the
    noise is drawn (``hists``, one row per checked column, ``columns``), and how
    many partitions its own pass read (``passes``)."""
    found = {"passes": 0}
    after, own = boundsteps.CheckStep.after, boundsteps.check_partition

    def spy_after(self, run, charge):
        found["hists"] = np.array(self.hists)
        found["columns"] = self.plan.columns
        return after(self, run, charge)

    def spy_own(*args, **kwargs):
        found["passes"] += 1
        return own(*args, **kwargs)

    monkeypatch.setattr(boundsteps.CheckStep, "after", spy_after)
    monkeypatch.setattr(boundsteps, "check_partition", spy_own)
    return found
