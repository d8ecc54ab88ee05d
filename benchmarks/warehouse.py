"""A warehouse table as it is exported: numbers of many dtypes, booleans, times, a
duration, categories, nulls -- released at eps = 1 in total with private
categories, private bounds and nulls="drop".

The generated customer table (``--rows``, default 10**6) has 13 ordered columns of
every non-categorical kind (categorical columns are added by
``benchmarks/categories.py``'s table; see ``CATEGORICAL`` below for where they
go) and planted relationships:

* ``signup`` (datetime64, naive = UTC) -> ``churned`` (bool): recent customers churn;
* ``last_seen`` (datetime64, tz-aware, 2024) -> ``seasonal`` (float32): a yearly wave;
* ``visits`` (int32, a long tail) -> ``balance`` (Float64 with 10% nulls);
* ``signup`` -> ``tenure`` (timedelta64): tenure is the time since signup;

and independent columns: ``customer_id`` (int64 identifiers in a narrow high range),
``score`` (uint8, 5 levels), ``premium`` (boolean), ``amount`` (int64[pyarrow]),
``birthday`` (date32[pyarrow]), ``rating`` (float64).

It first chooses the categories privately with ``dpmic_dask.private_categories``
(eps 0.05, delta 1e-8: ``region`` from the values that occur, ``plan`` from
public candidates), then releases every pair once with ``pairwise(eps=0.95,
bounds="private", nulls="drop", min_rows=..., categories=<the chosen lists>)``
(``min_rows`` from the public null rate bound of the table's documentation: 85%
of the rows): (1, 1e-8)-DP together. It prints the chosen lists against the
true ones and, per planted pair and
for the independent pairs, the private MIC beside the exact (non-private) MIC
at the true (generating) bounds and categories and the same grid; the time of
the pairwise release against an
all-float64 table of the same shape and nulls (the same axis values); and the
peak resident memory of the busiest worker. Targets (issue 24): planted pairs
within 0.03 of the non-private value; independent pairs within the noise (all
of them together at 95%: ``ci95 ln(20 k) / ln(20)`` for ``k`` pairs of Laplace
noise); the chosen categories equal the true ones; time <= 1.5x the all-float
table.

    python benchmarks/warehouse.py [--rows 1000000] [--partitions 16] [--workers 2]
                                   [--repeats 2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from layouts import DEFAULT_LAYOUTS, file_counts, time_layouts  # noqa: E402
from workers import peak_rss_bytes  # noqa: E402

START = pd.Timestamp("2023-01-01")
END = pd.Timestamp("2025-01-01")
SEEN = (pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2025-01-01", tz="UTC"))

#: The true (generating) bounds of each column, in its own kind: what a non-private
#: analysis with perfect knowledge would use.
TRUE_BOUNDS = {
    "customer_id": (9_000_000_000, 9_010_000_000),
    "signup": (START, END),
    "churned": (False, True),
    "last_seen": SEEN,
    "seasonal": (-1.5, 1.5),
    "visits": (0, 80),
    "balance": (0, 2000),
    "tenure": (pd.Timedelta(0), END - START),
    "score": (1, 5),
    "premium": (False, True),
    "amount": (0, 500),
    "birthday": (pd.Timestamp("1950-01-01"), pd.Timestamp("2005-01-01")),
    "rating": (0.0, 1.0),
}
#: Categorical columns and their public lists (docs/statistics.md, "A categorical
#: axis"): ``region`` (pyarrow strings; 2% of rows hold a region not on the list,
#: counted as "other") sets the scale of ``amount``; ``plan`` (a pandas
#: ``category``) is independent. Their pairs come after the ordered columns.
CATEGORICAL: dict = {"region": ["north", "south", "east", "west", "centre", "coast"],
                     "plan": ["basic", "plus", "pro"]}
REGION_SCALE = {"north": 0.5, "south": 0.8, "east": 1.0, "west": 1.4, "centre": 2.0,
                "coast": 3.0, "islands": 1.0}
#: What the private choice is asked: region from the values that occur (the true
#: list is every region in the table, "islands" included), plan from candidates.
CHOOSE = {"region": "private", "plan": ["basic", "plus", "pro", "legacy"]}
TRUE_CATEGORIES = {"region": sorted([*CATEGORICAL["region"], "islands"]),
                   "plan": ["basic", "plus", "pro"]}
CATEGORIES_EPS, DELTA = 0.05, 1e-8
PLANTED = [("signup", "churned"), ("last_seen", "seasonal"), ("visits", "balance"),
           ("signup", "tenure"), ("amount", "region")]
INDEPENDENT = [("customer_id", "rating"), ("score", "amount"), ("premium", "birthday"),
               ("amount", "rating"), ("rating", "region"), ("visits", "plan"),
               ("region", "plan")]


def customers(rows: int, seed: int) -> pd.DataFrame:
    """One partition of the customer table (benchmark data, not noise)."""
    gen = np.random.default_rng(seed)
    span = (END - START).total_seconds()
    offset = gen.uniform(0, span, rows)
    signup = START + pd.to_timedelta(offset, unit="s")
    recent = offset / span
    churned = gen.uniform(size=rows) < 0.05 + 0.8 * recent ** 3
    seen = gen.uniform(0, 366 * 86400, rows)
    last_seen = SEEN[0] + pd.to_timedelta(seen, unit="s")
    seasonal = (np.sin(2 * np.pi * seen / (366 * 86400) * 2) + 0.15 * gen.normal(size=rows))
    visits = np.minimum(gen.geometric(0.08, rows) - 1, 80).astype(np.int32)
    balance = 20.0 * visits + 60 * gen.normal(size=rows) + 200
    balance = pd.array(np.where(gen.uniform(size=rows) < 0.10, np.nan, balance), dtype="Float64")
    tenure = (END - signup) + pd.to_timedelta(gen.uniform(0, 3 * 86400, rows), unit="s")
    birthday = (pd.Timestamp("1950-01-01")
                + pd.to_timedelta(gen.integers(0, 55 * 365, rows), unit="D"))
    region = gen.choice(list(REGION_SCALE), rows, p=[0.2, 0.2, 0.2, 0.15, 0.13, 0.1, 0.02])
    scale = np.array([REGION_SCALE[r] for r in region])
    return pd.DataFrame({
        "customer_id": 9_000_000_000 + gen.integers(0, 10_000_000, rows),
        "signup": signup,
        "churned": churned,
        "last_seen": last_seen,
        "seasonal": seasonal.astype(np.float32),
        "visits": visits,
        "balance": balance,
        "tenure": pd.Series(tenure),
        "score": gen.integers(1, 6, rows).astype(np.uint8),
        "premium": pd.array(gen.uniform(size=rows) < 0.3, dtype="boolean"),
        "amount": pd.array(np.round(gen.gamma(2.0, 60.0 * scale, rows)).astype(np.int64),
                           dtype="int64[pyarrow]"),
        "birthday": pd.Series(birthday.date, dtype="date32[pyarrow]"),
        "rating": gen.uniform(0, 1, rows),
        "region": pd.Series(region, dtype="string[pyarrow]"),
        "plan": pd.Series(gen.choice(CATEGORICAL["plan"], rows)).astype(
            pd.CategoricalDtype(CATEGORICAL["plan"])),
    })


def as_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table as float64 axis values (the all-float comparison)."""
    from dpmic_dask.stats.categories import CategoryAxis
    from dpmic_dask.stats.kinds import column_kind

    return pd.DataFrame({c: CategoryAxis(c, tuple(CATEGORICAL[c])).encode(frame[c])
                         if c in CATEGORICAL else column_kind(c, frame[c].dtype).axis(frame[c])
                         for c in frame.columns})


def write_tables(root: Path, rows: int, partitions: int) -> tuple[Path, Path]:
    # "-cat": the tables with categorical columns (older cached tables lack them)
    mixed, floats = root / f"warehouse-cat-{rows}", root / f"warehouse-cat-float-{rows}"
    if not (mixed / "_done").exists():
        for path in (mixed, floats):
            path.mkdir(parents=True, exist_ok=True)
        per = -(-rows // partitions)
        for k in range(partitions):
            part = customers(min(per, rows - k * per), seed=k)
            part.to_parquet(mixed / f"part-{k:04d}.parquet", index=False)
            as_floats(part).to_parquet(floats / f"part-{k:04d}.parquet", index=False)
        (mixed / "_done").touch()
    return mixed, floats


def axis_bounds(frame) -> dict:
    """The true bounds in axis numbers (for the all-float table)."""
    from dpmic_dask.stats.kinds import column_kind

    out = {}
    for name, (lo, hi) in TRUE_BOUNDS.items():
        kind = column_kind(name, frame.dtypes[name], bounds=(lo, hi))
        out[name] = (float(kind.bound(lo, name)), float(kind.bound(hi, name)))
    return out


def release(ddf, min_rows, categories=None):
    """Every pair at eps 0.95 with private bounds; the categorical columns with
    their (privately chosen) lists ``categories``, or, in the all-float table, as
    numbers."""
    start = time.perf_counter()
    result = ddf.dpmic.pairwise(1.0 - CATEGORIES_EPS, bounds="private", columns=COLUMNS,
                                nulls="drop",
                                min_rows=min_rows, progress=False, categories=categories)
    return result, time.perf_counter() - start


COLUMNS = list(TRUE_BOUNDS) + list(CATEGORICAL)


def main() -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpmic_dask  # noqa: F401  (registers .dpmic)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2,
                        help="releases of each table, alternating; the fastest counts")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpmic-bench"))
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                        help="the table rewritten in these numbers of files, the release "
                             "timed on each (benchmarks/layouts.py)")
    args = parser.parse_args()
    mixed_path, float_path = write_tables(args.data_dir, args.rows, args.partitions)
    min_rows = int(0.85 * args.rows)  # public: the documented null rate is below 15%
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      memory_limit="4GiB", dashboard_address=None) as cluster, \
            Client(cluster) as client:
        mixed = dd.read_parquet(str(mixed_path))
        floats = dd.read_parquet(str(float_path))
        print("dtypes:", ", ".join(f"{c} {t}" for c, t in mixed.dtypes.items()), flush=True)
        # warm up (imports, numba) on a slice
        head = mixed.head(5000, compute=True)
        head.dpmic.pairwise(1.0, bounds="private", columns=COLUMNS, nulls="drop",
                            min_rows=1000, categories=CATEGORICAL)
        # the categories, chosen privately once (their own small charge)
        start = time.perf_counter()
        chosen = dpmic_dask.private_categories(mixed, CATEGORIES_EPS, delta=DELTA,
                                               columns=CHOOSE)
        choose_seconds = time.perf_counter() - start
        # each table twice, alternating (the cluster warms up on the first runs);
        # the faster run of each counts
        seconds, float_seconds = float("inf"), float("inf")
        for _ in range(args.repeats):
            float_seconds = min(float_seconds, release(floats, min_rows)[1])
            result, took = release(mixed, min_rows,
                                   {c: list(v) for c, v in chosen.categories.items()})
            seconds = min(seconds, took)
        peak = max(client.run(peak_rss_bytes).values()) / 2**20
        exact = mixed.dpmic.pairwise_nonprivate(bounds=TRUE_BOUNDS, B=result.B, c=result.c,
                                                columns=COLUMNS, nulls="drop",
                                                categories=TRUE_CATEGORIES,
                                                progress=False).set_index(["x", "y"]).micr
    private = dict(zip(result.pairs, result.values))
    ci95 = result.ci95
    print(f"\n{args.rows:,} rows, {len(COLUMNS)} columns ({len(CATEGORICAL)} categorical), "
          f"{len(result.pairs)} pairs, eps = {CATEGORIES_EPS} (categories, delta {DELTA:g}) "
          f"+ {1 - CATEGORIES_EPS:g} (bounds share 0.1, then values), B = {result.B}, "
          f"c = {result.c}, noise ci95 +/-{ci95:.4f}")
    for column, kept in chosen.categories.items():
        print(f"private categories: {column} {list(kept)} ({chosen.details[column]})")
    print("private bounds:", "; ".join(f"{c} {result.private_bounds.formatted(c)}"
                                       for c in result.private_bounds.bounds))
    # "within the noise" for the independent pairs together: each value's ci95
    # holds 95% of its (Laplace) noise, so over k pairs one of them falls outside
    # with probability 1 - 0.95^k (30% for 7); the bound that holds all k at 95%
    # is b ln(20 k) = ci95 ln(20 k) / ln(20) (Bonferroni on the Laplace tail)
    assert result.privacy.mechanism == "micr-lap", "the family bound is for Laplace noise"
    family = ci95 * np.log(20 * len(INDEPENDENT)) / np.log(20)
    checks = [(f"chosen {c} == true categories", float(list(chosen.categories[c]) == v),
               list(chosen.categories[c]) == v) for c, v in TRUE_CATEGORIES.items()]
    print(f"\n{'pair':28s} {'private':>8s} {'exact':>8s} {'diff':>8s}")
    for kind, pairs in (("planted", PLANTED), ("independent", INDEPENDENT)):
        for pair in pairs:
            diff = private[pair] - exact[pair]
            print(f"{kind[:4]} {pair[0] + ' ~ ' + pair[1]:23s} {private[pair]:8.3f} "
                  f"{exact[pair]:8.3f} {diff:+8.3f}")
            if kind == "planted":
                checks.append((f"planted {pair}: |private - exact| <= 0.03", abs(diff),
                               abs(diff) <= 0.03))
            else:
                within = private[pair] <= exact[pair] + family
                checks.append((f"independent {pair}: private within the noise "
                               f"(+/-{family:.4f}, 95% over all {len(INDEPENDENT)})",
                               private[pair], within))
    ratio = seconds / float_seconds
    print(f"\ntime: mixed {seconds:.1f} s, all-float {float_seconds:.1f} s "
          f"(ratio {ratio:.2f}); choosing the categories {choose_seconds:.1f} s more; "
          f"peak worker memory {peak:.0f} MiB")
    checks.append(("time mixed / all-float <= 1.5", ratio, ratio <= 1.5))
    print(f"own layout: {args.partitions} files")
    kept = {c: list(v) for c, v in chosen.categories.items()}
    for line in time_layouts(mixed_path, file_counts(args.layouts),
                             lambda ddf: release(ddf, min_rows, kept), own_seconds=seconds,
                             cluster=dict(n_workers=args.workers, threads_per_worker=1,
                                          processes=True, memory_limit="4GiB",
                                          dashboard_address=None)):
        print(line)
    print()
    for name, value, ok in checks:
        print(f"{'met ' if ok else 'MISS'} {name}: {value:.3f}")


if __name__ == "__main__":
    main()
