"""Private bounds on ten column shapes, and MICr with private versus true bounds.

Protocol (fixed seeds for the data; secure OpenDP noise, so runs differ):

* Ten columns of n = 10**5 rows: uniform, normal, lognormal incomes, exponential
  durations (seconds), a Pareto tail, an integer count, an amount with 30%
  zeros, a negative-valued column, a constant, and a very large scale (around
  1e9). ``dpmic_dask.private_bounds`` with eps = 0.1 for all ten (0.01 each),
  20 runs: per column the median share of values inside the bounds and the
  median ratio of the bounds' width to the true central-99% interval.
* MICr with private bounds against MICr with the true central-99% bounds, for
  relationships of ``relationships.py`` rescaled into the shapes by monotone
  maps of both coordinates (eps = 0.1 for the pair's two columns), 20 runs
  each: the median absolute difference.

Targets (the private-bounds issue): coverage >= 0.97 and width <= 2x for the
non-degenerate columns; MICr difference <= 0.02 (median).

Run: ``python benchmarks/bounds.py [--runs 20] [--n 100000]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))

from relationships import Relationship  # noqa: E402

#: Monotone maps from [0, 1] to each shape (its quantile function, clipped).
SHAPES = {
    "uniform": lambda u: u,
    "normal": lambda u: stats.norm.ppf(np.clip(u, 1e-6, 1 - 1e-6)),
    "lognormal incomes": lambda u: np.exp(10 + stats.norm.ppf(np.clip(u, 1e-6, 1 - 1e-6))),
    "exponential durations": lambda u: -3600 * np.log1p(-np.clip(u, 0, 1 - 1e-9)),
    "pareto tail": lambda u: (1 - np.clip(u, 0, 1 - 1e-9)) ** (-1 / 1.5),
    "integer count": lambda u: stats.poisson.ppf(np.clip(u, 0, 1 - 1e-9), 3),
    "30% zeros": lambda u: np.where(u < 0.3, 0.0, -50 * np.log1p(-(u - 0.3) / 0.7 * 0.999999)),
    "negative": lambda u: -stats.gamma.ppf(np.clip(u, 1e-9, 1 - 1e-9), 2, scale=10),
    "constant": lambda u: np.full_like(u, 7.0),
    "around 1e9": lambda u: 1e9 * np.exp(0.5 * stats.norm.ppf(np.clip(u, 1e-6, 1 - 1e-6))),
}
DEGENERATE = {"constant"}
PAIRS = [("F12", "normal", "lognormal incomes"), ("F13", "exponential durations", "normal"),
         ("F5", "uniform", "30% zeros"), ("F10", "pareto tail", "around 1e9"),
         ("F7", "negative", "exponential durations")]
EPS = 0.1


def central(values):
    return np.quantile(values, [0.005, 0.995])


def main() -> None:
    import dpmic_dask as dm
    from dpmic_dask.stats.defaults import default_parameters

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--n", type=int, default=100_000)
    args = parser.parse_args()
    n = args.n
    gen = np.random.default_rng(2024)  # benchmark data, not noise
    frame = pd.DataFrame({name: f(gen.random(n)) for name, f in SHAPES.items()})
    ledger = dm.InMemoryLedger(uncapped=True)
    cover = {name: [] for name in SHAPES}
    width = {name: [] for name in SHAPES}
    for _ in range(args.runs):
        found = dm.private_bounds(frame, EPS, columns=list(SHAPES), ledger=ledger)
        for name, (lo, hi) in found.bounds.items():
            v = frame[name].to_numpy()
            cover[name].append(np.mean((v >= lo) & (v <= hi)))
            q = central(v)
            width[name].append((hi - lo) / (q[1] - q[0]) if q[1] > q[0] else np.nan)
    print(f"n = {n:,}, eps = {EPS} for all {len(SHAPES)} columns ({EPS / len(SHAPES):g} each), "
          f"{args.runs} runs; one example run's bounds:")
    checks = []
    print(f"  {'column':<22} {'bounds (last run)':>28} {'central 99%':>26} "
          f"{'coverage':>9} {'width':>7}")
    for name in SHAPES:
        lo, hi = found.bounds[name]
        q = central(frame[name].to_numpy())
        c = float(np.median(cover[name]))
        w = float("nan") if name in DEGENERATE else float(np.median(width[name]))
        print(f"  {name:<22} [{lo:>12.4g}, {hi:>12.4g}] [{q[0]:>11.4g}, {q[1]:>11.4g}] "
              f"{c:>9.4f} {w:>7.2f}")
        if name not in DEGENERATE:
            checks.append((f"{name}: coverage >= 0.97", c, c >= 0.97))
            checks.append((f"{name}: width <= 2x central 99%", w, w <= 2.0))
    print("\nMICr with private bounds vs the true central-99% bounds "
          f"(eps = {EPS} for the pair's two columns):")
    diffs_all = []
    for fname, sx, sy in PAIRS:
        rel = Relationship(fname, 0.6)
        u, v = rel.sample(n, np.random.default_rng([7, int(fname[1:])]))
        x, y = SHAPES[sx](u), SHAPES[sy](v)
        B, c = default_parameters("micr-lap", n, 1.0)
        qx, qy = central(x), central(y)
        truth = dm.micr(x, y, x_bounds=tuple(qx), y_bounds=tuple(qy), B=B, c=c)
        pair = pd.DataFrame({"x": x, "y": y})
        diffs = []
        for _ in range(args.runs):
            found = dm.private_bounds(pair, EPS, columns=["x", "y"], ledger=ledger)
            value = dm.micr(x, y, x_bounds=found.bounds["x"], y_bounds=found.bounds["y"],
                            B=B, c=c)
            diffs.append(abs(value - truth))
        diffs_all += diffs
        print(f"  {rel.label:<10} {sx} vs {sy}: MICr {truth:.3f} with true bounds; median "
              f"|difference| {np.median(diffs):.4f}")
    med = float(np.median(diffs_all))
    checks.append(("MICr difference (median over all)", med, med <= 0.02))
    print()
    for name, value, ok in checks:
        print(f"{name:<48} {value:8.4f}  {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
