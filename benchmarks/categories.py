"""Categorical columns: private against non-private MIC, planted and independent pairs.

A generated customer table (strings, a pandas ``category``, integer codes and
floats) with planted category -> amount, category -> fee and category ->
category relationships and independent pairs, released once through
``pairwise`` at ``eps = 1`` with public category lists and once with private
categories (candidates that include a value that never occurs). Each pair's
released MIC is printed beside the exact (non-private) statistic at the same
grid, computed from the same codes; the release's time is compared with an
all-float table of the same shape.

    python benchmarks/categories.py [--rows 100000] [--partitions 4]
"""

from __future__ import annotations

import argparse
import time

import dask.dataframe as dd
import numpy as np
import pandas as pd

import dpmic_dask  # noqa: F401  (registers the accessor)
from dpmic_dask.privacy.accounting import InMemoryLedger
from dpmic_dask.stats.categories import CategoryAxis
from dpmic_dask.stats.characteristic import micr_from_counts
from dpmic_dask.stats.counting import pair_counts
from dpmic_dask.stats.grids import master_grid_family
from dpmic_dask.stats.statistics.categorical import CategoricalMIC

REGIONS = ["north", "south", "east", "west", "centre", "coast", "hills", "islands"]
PLANS = ["basic", "plus", "pro"]
CHANNELS = ["web", "app", "phone", "shop"]
PLANTED = {("region", "amount"), ("plan", "fee"), ("region", "plan")}
#: Pairs related only through the planted ones (region -> plan -> fee, ...).
INDIRECT = {("region", "fee"), ("plan", "amount"), ("amount", "fee")}


def table(rows: int, seed: int = 0) -> pd.DataFrame:
    gen = np.random.default_rng(seed)  # benchmark data only
    region = gen.choice(REGIONS, rows)
    level = {r: 20.0 + 10.0 * k for k, r in enumerate(REGIONS)}
    amount = np.array([level[r] for r in region]) + gen.normal(0, 4, rows)
    # plan depends on region (a category -> category relationship)
    rich = np.isin(region, REGIONS[4:])
    plan = np.where(rich, gen.choice(PLANS, rows, p=[0.1, 0.3, 0.6]),
                    gen.choice(PLANS, rows, p=[0.6, 0.3, 0.1]))
    fee = np.array([{"basic": 10.0, "plus": 25.0, "pro": 60.0}[p] for p in plan])
    fee = fee + gen.gamma(2.0, 3.0, rows)
    return pd.DataFrame({
        "region": pd.Series(region, dtype="string[pyarrow]"),
        "plan": pd.Series(plan).astype("category"),
        "channel": pd.Series(gen.choice(CHANNELS, rows), dtype=object),
        "segment": gen.integers(0, 6, rows),
        "amount": amount,
        "fee": fee,
        "noise": gen.uniform(0, 1, rows),
    })


CATEGORIES = {"region": REGIONS, "plan": PLANS, "channel": CHANNELS,
              "segment": [0, 1, 2, 3, 4, 5]}
BOUNDS = {"amount": (0.0, 120.0), "fee": (0.0, 120.0), "noise": (0.0, 1.0)}


def exact_values(frame: pd.DataFrame, pairs, B: int, c: int) -> list[float]:
    """The non-private statistic of each pair at ``(B, c)``, from the true lists."""
    family = master_grid_family(B, c)
    axes = {name: CategoryAxis(name, tuple(v)) for name, v in CATEGORIES.items()}
    out = []
    for x, y in pairs:
        ax, ay = axes.get(x), axes.get(y)
        vx = ax.encode(frame[x]) if ax else frame[x].to_numpy(np.float64)
        vy = ay.encode(frame[y]) if ay else frame[y].to_numpy(np.float64)
        counts = pair_counts(vx, vy, ax.bounds if ax else BOUNDS[x],
                             ay.bounds if ay else BOUNDS[y], family)
        if ax is None and ay is None:
            out.append(micr_from_counts(counts, family))
        else:
            out.append(CategoricalMIC(ax, ay).value(counts, family))
    return out


def report(title, result, frame, elapsed):
    privacy = result.privacy
    exact = exact_values(frame, result.pairs, privacy.B, privacy.c)
    print(f"\n{title}: {elapsed:.1f} s, B = {privacy.B}, c = {privacy.c}, "
          f"noise scale {privacy.noise_scale:.2g}, ci95 {privacy.ci95:.3f}")
    if result.private_categories:
        print(f"  released categories: {result.private_categories}")
    print(f"  {'pair':<20} {'kind':<12} {'private':>8} {'exact':>8} {'diff':>8}")
    worst_planted = worst_independent = 0.0
    for (x, y), value, truth in zip(result.pairs, result.values, exact):
        planted = (x, y) in PLANTED or (y, x) in PLANTED
        indirect = (x, y) in INDIRECT or (y, x) in INDIRECT
        kinds = "+".join("cat" if n in CATEGORIES else "num" for n in (x, y))
        diff = value - truth
        if planted:
            worst_planted = max(worst_planted, abs(diff))
        elif not indirect:
            worst_independent = max(worst_independent, abs(value))
        note = "  planted" if planted else "  indirect" if indirect else ""
        print(f"  {x + '-' + y:<20} {kinds:<12} {value:8.3f} {truth:8.3f} {diff:+8.3f}{note}")
    print(f"  planted pairs: largest |private - exact| = {worst_planted:.3f} (target 0.03); "
          f"independent pairs: largest private value {worst_independent:.3f} "
          f"(noise ci95 {privacy.ci95:.3f})")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--eps", type=float, default=1.0)
    args = parser.parse_args()
    frame = table(args.rows)
    ddf = dd.from_pandas(frame, npartitions=args.partitions)
    print(f"{args.rows} rows, {frame.shape[1]} columns ({len(CATEGORIES)} categorical), "
          f"{args.partitions} partitions, eps = {args.eps}")

    start = time.perf_counter()
    public = ddf.dpmic.pairwise(eps=args.eps, bounds=BOUNDS, categories=CATEGORIES,
                                ledger=InMemoryLedger(uncapped=True))
    report("public category lists", public, frame, time.perf_counter() - start)

    candidates = {name: {"private": list(v) + ["unseen"]} if name != "segment"
                  else {"private": list(v) + [99]} for name, v in CATEGORIES.items()}
    start = time.perf_counter()
    private = ddf.dpmic.pairwise(eps=args.eps, bounds=BOUNDS, categories=candidates,
                                 ledger=InMemoryLedger(uncapped=True))
    report("private categories (10% of eps)", private, frame, time.perf_counter() - start)

    floats = dd.from_pandas(pd.DataFrame(
        {name: np.random.default_rng(1).uniform(0, 1, args.rows) for name in frame.columns}),
        npartitions=args.partitions)

    def run_floats():
        floats.dpmic.pairwise(eps=args.eps, bounds=dict.fromkeys(frame.columns, (0.0, 1.0)),
                              B=public.privacy.B, c=public.privacy.c,
                              ledger=InMemoryLedger(uncapped=True))

    def run_mixed():
        ddf.dpmic.pairwise(eps=args.eps, bounds=BOUNDS, categories=CATEGORIES,
                           B=public.privacy.B, c=public.privacy.c,
                           ledger=InMemoryLedger(uncapped=True))

    def best_of(run, times=3):
        spent = []
        for _ in range(times):
            start = time.perf_counter()
            run()
            spent.append(time.perf_counter() - start)
        return min(spent)

    base, mixed = best_of(run_floats), best_of(run_mixed)  # both warm (compiled, cached)
    print(f"\ntime (best of 3, warm): mixed table {mixed:.2f} s, all-float table of the same "
          f"shape {base:.2f} s ({mixed / base:.2f}x; target <= 1.5x)")


if __name__ == "__main__":
    main()
