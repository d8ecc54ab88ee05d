"""Deterministic test tables built partition by partition (test data only)."""

from __future__ import annotations

import os
import signal
import time

import dask
import dask.dataframe as dd
import numpy as np
import pandas as pd

BOUNDS = {"a": (0.0, 1.0), "b": (-1.5, 1.5), "c": (0.0, 1.0), "d": (-0.2, 1.2)}


def make_part(index: int, rows: int, delay: float = 0.0, die_at: int | None = None,
              marker: str | None = None) -> pd.DataFrame:
    """Partition ``index``. With ``die_at``/``marker``: the first process to build
    partition ``die_at`` writes its pid to ``marker`` and kills itself (SIGKILL)
    while holding the task; a retry elsewhere then finds the marker and goes on."""
    if delay:
        time.sleep(delay)
    if die_at is not None and index == die_at and marker and not os.path.exists(marker):
        with open(marker, "w") as handle:
            handle.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    gen = np.random.default_rng(1000 + index)
    a = gen.random(rows)
    return pd.DataFrame({
        "a": a,
        "b": np.sin(6 * a) + 0.2 * gen.normal(size=rows),
        "c": gen.random(rows),
        "d": a ** 2 + 0.05 * gen.normal(size=rows),
        "label": ["x"] * rows,
    })


def table(rows: int = 20_000, seed_index: int = 0) -> pd.DataFrame:
    return make_part(seed_index, rows)


def split_with_empties(df: pd.DataFrame, pieces: int) -> dd.DataFrame:
    """A Dask frame of ``pieces`` partitions of ``df``, with empty ones in between."""
    cuts = np.linspace(0, len(df), pieces + 1).astype(int)
    parts = []
    for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        parts.append(df.iloc[lo:hi])
        if k % 2 == 0:
            parts.append(df.iloc[0:0])
    return dd.from_delayed([dask.delayed(p) for p in parts], meta=df.iloc[0:0])


def generated(partitions: int, rows: int, delay: float = 0.0, die_at: int | None = None,
              marker: str | None = None) -> dd.DataFrame:
    """A Dask frame whose partitions are generated on the workers."""
    return dd.from_map(make_part, range(partitions), rows=rows, delay=delay, die_at=die_at,
                       marker=marker, meta=make_part(0, 0))
