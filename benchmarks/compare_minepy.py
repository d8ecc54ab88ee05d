"""Compare ``dpmic_dask.stats.mice`` with minepy's ``mic_e`` side by side.

minepy is GPL-licensed and is never a dependency of dpmic_dask. This script runs
only where it is installed by hand (version 1.2.6 builds on Python 3.11 with
numpy 2 with ``setuptools<70``, ``cython<3`` and ``mine.pyx`` re-cythonized).

Prints, for a set of continuous, rounded and discrete datasets, both values and
their absolute difference.
"""

from __future__ import annotations

import sys

import numpy as np

import dpmic_dask as dm


def datasets(seed: int):
    gen = np.random.default_rng(seed)  # test data only
    n = 300
    x = gen.normal(size=n)
    yield "normal + sine", x, np.sin(2 * x) + 0.5 * gen.normal(size=n)
    x = gen.integers(0, 5, size=n).astype(float)
    yield "5 levels, y = x mod 3", x, x % 3
    x = gen.integers(0, 2, size=n).astype(float)
    yield "binary, independent", x, gen.integers(0, 2, size=n).astype(float)
    x = gen.integers(0, 2, size=n).astype(float)
    yield "binary, 80% equal", x, np.where(gen.random(n) < 0.8, x, 1 - x)
    x = gen.integers(0, 10, size=n).astype(float)
    yield "10 levels vs continuous", x, x + gen.normal(size=n)
    x = np.round(gen.normal(size=n), 1)
    yield "rounded to 0.1", x, np.round(x ** 2 + 0.3 * gen.normal(size=n), 1)
    x = gen.random(2000)
    yield "uniform, independent", x, gen.random(2000)
    x = gen.random(2000)
    yield "parabola", x, (x - 0.5) ** 2 + 0.02 * gen.normal(size=2000)
    x = gen.integers(0, 3, size=1000).astype(float)
    yield "3 levels vs 3+4 levels", x, gen.integers(0, 4, size=1000) + x


def main() -> int:
    try:
        from minepy import MINE
    except ImportError:
        print("minepy is not installed; nothing to compare (see this file's docstring).")
        return 0
    worst = 0.0
    print(f"{'dataset':<28} {'minepy mic_e':>14} {'dpmic mice':>14} {'|diff|':>9}")
    for seed in (1, 2, 3):
        for name, x, y in datasets(seed):
            mine = MINE(alpha=0.6, c=15, est="mic_e")
            mine.compute_score(x, y)
            ours = dm.mice(x, y, alpha=0.6, c=15)
            diff = abs(ours - mine.mic())
            worst = max(worst, diff)
            print(f"{name:<28} {mine.mic():>14.10f} {ours:>14.10f} {diff:>9.1e}")
    print(f"largest difference: {worst:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
