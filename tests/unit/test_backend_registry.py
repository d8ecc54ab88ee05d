"""A backend is one module: its frame type and its accessor come with it.

Registered after the package was imported, a backend's frames get ``.dpmic`` at
once and every release of theirs is counted by that backend."""

import numpy as np
import pandas as pd

import dpmic_dask as dm
from dpmic_dask.backends import backend_for, register
from dpmic_dask.backends.pandas import PandasBackend


class AuditedFrame(pd.DataFrame):
    """A frame type of its own (a pandas subclass, so pandas does the work)."""

    @property
    def _constructor(self):
        return AuditedFrame


@register(AuditedFrame)
class AuditedBackend(PandasBackend):
    """Counts through pandas, recording every count it makes."""

    counted: list = []
    installed: list = []

    def install_accessor(self, frame_type, name, accessor):
        self.installed.append((frame_type, name))
        super().install_accessor(frame_type, name, accessor)

    def count(self, frame, spec, **kwargs):
        self.counted.append(spec.columns)
        return super().count(frame, spec, **kwargs)

    def evaluate(self, frame, spec, fn, **kwargs):
        self.counted.append(spec.columns)
        return super().evaluate(frame, spec, fn, **kwargs)


def test_a_backend_registered_late_gets_the_accessor_and_counts_its_frames():
    assert (AuditedFrame, "dpmic") in AuditedBackend.installed
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 3_000)
    frame = AuditedFrame({"x": x, "y": x ** 2 + rng.uniform(0, 0.05, x.size)})
    assert isinstance(backend_for(frame), AuditedBackend)
    result = frame.dpmic.pairwise(1.0, bounds={"x": (0, 1), "y": (0, 1.1)},
                                  ledger=dm.InMemoryLedger(uncapped=True))
    assert AuditedBackend.counted and set(AuditedBackend.counted[-1]) == {"x", "y"}
    assert result.values[0] > 0.5
    assert not isinstance(backend_for(pd.DataFrame(frame)), AuditedBackend)


def test_a_frame_type_without_an_extension_mechanism_gets_a_property():
    from dpmic_dask.backends.base import Backend
    from dpmic_dask.release.accessor import DPMICAccessor

    class Columns:
        """A frame type of no library: only the backend knows it."""

    @register(Columns)
    class ColumnsBackend(Backend):
        schema = row_count = count = reduce = evaluate = None  # type: ignore[assignment]

    table = Columns()
    assert isinstance(table.dpmic, DPMICAccessor) and table.dpmic._frame is table
    assert Columns.dpmic is DPMICAccessor
