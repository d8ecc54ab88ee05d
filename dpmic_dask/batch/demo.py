"""The demo table: nonlinear, linear, discrete and independent columns.

Data is generated on the workers, partition by partition, from a fixed seed per
partition; nothing is downloaded. The generator is for *data*, not for privacy
noise (noise only ever comes from :mod:`dpmic_dask.privacy.noise`).
"""

from __future__ import annotations

import dask.dataframe as dd
import numpy as np
import pandas as pd

#: Public bounds of the demo columns (known from how the data is generated).
DEMO_BOUNDS = {
    "x": (0.0, 1.0),
    "sine": (-0.2, 1.2),
    "parabola": (-0.3, 1.5),
    "cubic": (-1.0, 1.5),
    "step": (-0.2, 1.2),
    "linear": (-1.0, 3.0),
    "tier": (0.0, 3.0),
    "uniform": (0.0, 1.0),
    "normal": (-4.0, 4.0),
}


def demo_partition(index: int, rows: int, seed: int = 2026) -> pd.DataFrame:
    """One partition of the demo table (deterministic in ``(seed, index)``)."""
    gen = np.random.default_rng([seed, index])  # demo data only, never noise
    x = gen.random(rows)
    noise = lambda scale: scale * gen.normal(size=rows)  # noqa: E731
    step = np.where(x < 0.491, 0.05, np.where(x > 0.509, 0.95, 50 * (x - 0.5) + 0.5))
    tier = np.minimum(np.floor(4 * x), 3.0)
    flip = gen.random(rows) < 0.1
    tier = np.where(flip, gen.integers(0, 4, size=rows), tier).astype(np.float64)
    return pd.DataFrame({
        "x": x,
        "sine": 0.4 * np.sin(8 * np.pi * x) + 0.5 + noise(0.08),        # paper's F15
        "parabola": 4 * (x - 0.5) ** 2 + 0.1 + noise(0.1),              # F13
        "cubic": 10 * (x - 0.6) ** 3 + 2 * x ** 2 + (1.5 - 3 * x) + noise(0.1),  # F7
        "step": step + noise(0.05),                                     # F17
        "linear": 2 * x + noise(0.3),
        "tier": tier,
        "uniform": gen.random(rows),
        "normal": gen.normal(size=rows),
    })


def demo_frame(rows: int = 1_000_000, partitions: int = 8, seed: int = 2026):
    """A Dask DataFrame of ``rows`` demo rows in ``partitions`` partitions."""
    sizes = np.full(partitions, rows // partitions)
    sizes[: rows % partitions] += 1
    return dd.from_map(
        lambda item: demo_partition(item[0], int(item[1]), seed),
        list(enumerate(sizes)),
        meta=demo_partition(0, 0, seed),
    )
