"""Test-only helpers. Nothing here belongs in a real release.

:func:`seeded_noise` makes noise reproducible. It refuses to run unless the
environment variable ``DPMIC_DASK_ALLOW_SEEDED_NOISE`` is ``"1"`` *and* the
caller passes ``not_private=True``; it always emits a :class:`PrivacyLeakWarning`,
and every release made inside it is marked ``seeded=True`` and says NOT PRIVATE
in its report.
"""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager

from dpmic_dask.errors import InvalidParameterError, PrivacyLeakWarning
from dpmic_dask.privacy.noise import _ACTIVE, _seeded_sampler

ENV_FLAG = "DPMIC_DASK_ALLOW_SEEDED_NOISE"


@contextmanager
def seeded_noise(seed: int, *, not_private: bool = False):
    """Within the block, draw noise from a deterministic stream keyed by ``seed``."""
    if not_private is not True:
        raise InvalidParameterError("seeded_noise requires not_private=True")
    if os.environ.get(ENV_FLAG) != "1":
        raise InvalidParameterError(
            f"seeded noise is for tests only: set {ENV_FLAG}=1 in the test environment"
        )
    warnings.warn(
        "seeded noise is reproducible and therefore NOT differentially private",
        PrivacyLeakWarning,
        stacklevel=3,
    )
    token = _ACTIVE.set(_seeded_sampler(seed))
    try:
        yield
    finally:
        _ACTIVE.reset(token)
