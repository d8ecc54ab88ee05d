"""A warehouse table as it is exported: numbers of many dtypes, booleans, times, a
duration, categories, nulls, several rows per customer -- released per row and per
customer, each in ONE release (one charge of eps = 1, delta = 1e-8) that chooses
the categories privately, finds private bounds and drops nulls.

The generated table (``--rows``, default 10**6) holds customers with 1 to
``MAX_ROWS_PER_CUSTOMER`` = 8 rows each (uniform: 4.5 on average, so about 222,000
customers at the default size; the rows are shuffled, so one customer's rows lie
in several files). Columns of the customer (the same on each of its rows):
``customer_id`` (int64 identifiers in a narrow high range, one per customer),
``signup`` (datetime64, naive = UTC), ``churned`` (bool), ``tenure``
(timedelta64), ``premium`` (boolean), ``birthday`` (date32[pyarrow]),
``region`` (pyarrow strings) and ``plan`` (a pandas ``category``). Columns of the
row (each row its own draw): ``last_seen`` (datetime64, tz-aware, 2024),
``seasonal`` (float32), ``visits`` (int32, a long tail), ``balance`` (Float64 with
10% nulls), ``score`` (uint8, 5 levels), ``amount`` (int64[pyarrow]) and
``rating`` (float64). Planted relationships, each either inside the customer level
or inside the row level (or a row value scaled by its customer's region), so they
are as clear per customer as per row:

* ``signup`` -> ``churned`` (customer): recent customers churn;
* ``last_seen`` -> ``seasonal`` (row): a yearly wave;
* ``visits`` -> ``balance`` (row);
* ``signup`` -> ``tenure`` (customer): tenure is the time since signup;
* ``region`` -> ``amount`` (the customer's region sets the scale of the row's amount);

every other pair is independent. ``region``: 2% of the customers live on the
"islands", which are not on the public list; ``plan`` is chosen among public
candidates (one of which, "legacy", nobody holds).

Two releases of every pair, each one call of ``pairwise(1.0, delta=1e-8,
bounds="private", nulls="drop", categories={"region": "private", "plan":
{"private": [...]}}, ...)`` (the categories' and the bounds' shares are the
plan's own; ``plan.explain()`` of the per-customer plan is printed):

* **per row**: all 15 columns (105 pairs), ``min_rows`` from the public null rate
  bound of the table's documentation (85% of the rows);
* **per customer**: ``privacy_unit="customer_id", max_rows_per_unit=8`` (k = 8,
  every customer's rows kept), the 14 other columns (91 pairs; a unit column is
  never released); per unit ``nulls="drop"`` needs no ``min_rows``.

Printed for each: the chosen categories against the true ones; per planted pair
and for the independent pairs, the private MIC beside the exact (non-private)
MICr of the whole table (nulls dropped) at the release's *released* bounds and
categories and its grid (``B``, ``c``): the same bounded data per row. Per
customer the bounded table (at most k rows of each customer) is not observable
from outside; here k = 8 keeps every row, so the whole table at the released
bounds is that data as well. The time of each release against a row-level
release of the all-float64 table of the same shape (the same columns, axis values
and nulls, categories as numbers), and the peak resident memory of the busiest
worker during each kind of release. Targets: planted pairs within 0.03 of the
exact value per row (issue 24), within 0.05 per customer (issue 33); independent
pairs within the noise (all of them together at 95%: Bonferroni on the noise's
two-sided tail); the chosen categories equal the true ones; time <= 1.5x the
all-float table per row, <= 3x per customer.

    python benchmarks/warehouse.py [--rows 1000000] [--partitions 16] [--workers 2]
                                   [--repeats 2] [--layouts 10,7]

``--layouts`` times both releases again on the table rewritten in other numbers of
files (``benchmarks/layouts.py``; ``--layouts ""`` skips them).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from layouts import DEFAULT_LAYOUTS, file_counts, time_layouts  # noqa: E402
from workers import peak_rss_bytes, reset_peak_rss  # noqa: E402

START = pd.Timestamp("2023-01-01")
END = pd.Timestamp("2025-01-01")
SEEN = (pd.Timestamp("2024-01-01", tz="UTC"), pd.Timestamp("2025-01-01", tz="UTC"))

#: The true (generating) bounds of each column, in its own kind.
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
#: axis"), for the all-float table's codes; their pairs come after the ordered
#: columns.
CATEGORICAL: dict = {"region": ["north", "south", "east", "west", "centre", "coast"],
                     "plan": ["basic", "plus", "pro"]}
REGION_SCALE = {"north": 0.5, "south": 0.8, "east": 1.0, "west": 1.4, "centre": 2.0,
                "coast": 3.0, "islands": 1.0}
#: What the private choice is asked: region from the values that occur (the true
#: list is every region in the table, "islands" included), plan from candidates.
CHOOSE = {"region": "private", "plan": {"private": ["basic", "plus", "pro", "legacy"]}}
TRUE_CATEGORIES = {"region": sorted([*CATEGORICAL["region"], "islands"]),
                   "plan": ["basic", "plus", "pro"]}
EPS, DELTA = 1.0, 1e-8
UNIT, MAX_ROWS_PER_CUSTOMER = "customer_id", 8
K = MAX_ROWS_PER_CUSTOMER  # max_rows_per_unit: every customer's rows are kept
COLUMNS = list(TRUE_BOUNDS) + list(CATEGORICAL)
UNIT_COLUMNS = [c for c in COLUMNS if c != UNIT]
PLANTED = [("signup", "churned"), ("last_seen", "seasonal"), ("visits", "balance"),
           ("signup", "tenure"), ("amount", "region")]
INDEPENDENT = [("customer_id", "rating"), ("score", "amount"), ("premium", "birthday"),
               ("amount", "rating"), ("rating", "region"), ("visits", "plan"),
               ("region", "plan")]
TARGETS = {"per row": (0.03, 1.5), "per customer": (0.05, 3.0)}


def warehouse(rows: int, seed: int = 0) -> pd.DataFrame:
    """The whole table, rows shuffled (benchmark data, not noise): customers with 1
    to MAX_ROWS_PER_CUSTOMER rows each."""
    gen = np.random.default_rng(seed)
    per = gen.integers(1, MAX_ROWS_PER_CUSTOMER + 1, rows)  # more customers than needed
    per = per[: np.searchsorted(np.cumsum(per), rows) + 1]
    per[-1] -= per.sum() - rows
    customers = per.size
    # the customer level
    span = (END - START).total_seconds()
    offset = gen.uniform(0, span, customers)
    signup = START + pd.to_timedelta(offset, unit="s")
    churned = gen.uniform(size=customers) < 0.05 + 0.8 * (offset / span) ** 3
    tenure = (END - signup) + pd.to_timedelta(gen.uniform(0, 3 * 86400, customers), unit="s")
    birthday = (pd.Timestamp("1950-01-01")
                + pd.to_timedelta(gen.integers(0, 55 * 365, customers), unit="D"))
    region = gen.choice(list(REGION_SCALE), customers,
                        p=[0.2, 0.2, 0.2, 0.15, 0.13, 0.1, 0.02])
    level = pd.DataFrame({
        "customer_id": 9_000_000_000 + gen.choice(10_000_000, customers, replace=False),
        "signup": signup,
        "churned": churned,
        "tenure": pd.Series(tenure),
        "premium": pd.array(gen.uniform(size=customers) < 0.3, dtype="boolean"),
        "birthday": pd.Series(birthday.date, dtype="date32[pyarrow]"),
        "region": pd.Series(region, dtype="string[pyarrow]"),
        "plan": pd.Series(gen.choice(CATEGORICAL["plan"], customers)).astype(
            pd.CategoricalDtype(CATEGORICAL["plan"])),
    }).take(np.repeat(np.arange(customers), per)).reset_index(drop=True)
    # the row level
    seen = gen.uniform(0, 366 * 86400, rows)
    seasonal = np.sin(2 * np.pi * seen / (366 * 86400) * 2) + 0.15 * gen.normal(size=rows)
    visits = np.minimum(gen.geometric(0.08, rows) - 1, 80).astype(np.int32)
    balance = 20.0 * visits + 60 * gen.normal(size=rows) + 200
    scale = level["region"].map(REGION_SCALE).to_numpy(dtype=float)
    table = level.assign(
        last_seen=SEEN[0] + pd.to_timedelta(seen, unit="s"),
        seasonal=seasonal.astype(np.float32),
        visits=visits,
        balance=pd.array(np.where(gen.uniform(size=rows) < 0.10, np.nan, balance),
                         dtype="Float64"),
        score=gen.integers(1, 6, rows).astype(np.uint8),
        amount=pd.array(np.round(gen.gamma(2.0, 60.0 * scale, rows)).astype(np.int64),
                        dtype="int64[pyarrow]"),
        rating=gen.uniform(0, 1, rows),
    )[COLUMNS]
    return table.take(gen.permutation(rows)).reset_index(drop=True)


def as_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """The same table as float64 axis values (the all-float comparison)."""
    from dpmic_dask.stats.categories import CategoryAxis
    from dpmic_dask.stats.kinds import column_kind

    return pd.DataFrame({c: CategoryAxis(c, tuple(CATEGORICAL[c])).encode(frame[c])
                         if c in CATEGORICAL else column_kind(c, frame[c].dtype).axis(frame[c])
                         for c in frame.columns})


def write_tables(root: Path, rows: int, partitions: int) -> tuple[Path, Path]:
    # "-unit": the tables with several rows per customer (older cached tables lack them)
    mixed, floats = root / f"warehouse-unit-{rows}", root / f"warehouse-unit-float-{rows}"
    if not (mixed / "_done").exists():
        for path in (mixed, floats):
            path.mkdir(parents=True, exist_ok=True)
        table = warehouse(rows)
        cuts = np.linspace(0, rows, partitions + 1).astype(int)
        for k, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
            part = table.iloc[lo:hi].reset_index(drop=True)
            part.to_parquet(mixed / f"part-{k:04d}.parquet", index=False)
            as_floats(part).to_parquet(floats / f"part-{k:04d}.parquet", index=False)
        (mixed / "_done").touch()
    return mixed, floats


def options(kind: str, rows: int) -> dict:
    """``pairwise``'s arguments of one release: ``"per row"``, ``"per customer"``, or
    their all-float comparisons (``"float " + kind``: row level, the same columns,
    categories as numbers)."""
    out = dict(bounds="private", delta=DELTA, nulls="drop",
               columns=UNIT_COLUMNS if kind.endswith("per customer") else COLUMNS)
    if kind == "per customer":
        out.update(privacy_unit=UNIT, max_rows_per_unit=K)
    else:  # public: the documented null rate is below 15%
        out.update(min_rows=int(0.85 * rows))
    if not kind.startswith("float"):
        out.update(categories=CHOOSE)
    return out


def release(ddf, kind: str, rows: int):
    start = time.perf_counter()
    result = ddf.dpmic.pairwise(EPS, progress=False, **options(kind, rows))
    return result, time.perf_counter() - start


def family_bound(result, pairs: int) -> float:
    """The half-width that holds the noise of ``pairs`` values together at 95%
    (Bonferroni on the two-sided tail): ``ci95 ln(20 k) / ln(20)`` for Laplace noise,
    ``ci95 z(1 - 0.025 / k) / z(0.975)`` for Gaussian."""
    mechanism = result.privacy.mechanism
    if mechanism.endswith("lap"):
        return result.ci95 * np.log(20 * pairs) / np.log(20)
    assert mechanism.endswith("gauss"), f"no family bound for {mechanism}"
    z = NormalDist().inv_cdf
    return result.ci95 * z(1 - 0.025 / pairs) / z(0.975)


def nonprivate_bounds(result) -> dict:
    """The release's private bounds as public bounds (in each column's own kind)."""
    return {c: result.private_bounds.pinned(c) for c in result.private_bounds.bounds}


def accuracy(kind: str, result, exact, checks: list) -> None:
    """Print the chosen categories, the bounds and each planted and independent pair
    against the exact value; add the checks."""
    chosen = result.private_categories
    private = dict(zip(result.pairs, result.values))
    independent = [p for p in INDEPENDENT if p in private]
    family = family_bound(result, len(independent))
    print(f"\n== {kind}: {len(result.columns)} columns, {len(result.pairs)} pairs, "
          f"{result.privacy.mechanism}, B = {result.B}, c = {result.c}, noise ci95 "
          f"+/-{result.ci95:.4f}; n = {result.privacy.n:,}"
          + (" (n0, the private lower bound of the bounded rows)"
             if kind == "per customer" else " (min_rows)"))
    if kind == "per customer":
        print(result.privacy.unit_line())
    for column, kept in chosen.items():
        print(f"private categories: {column} {list(kept)}")
    print("private bounds:", "; ".join(f"{c} {result.private_bounds.formatted(c)}"
                                       for c in result.private_bounds.bounds))
    target = TARGETS[kind][0]
    checks.extend((f"{kind}: chosen {c} == true categories", float(list(chosen[c]) == v),
                   list(chosen[c]) == v) for c, v in TRUE_CATEGORIES.items())
    print(f"{'pair':28s} {'private':>8s} {'exact':>8s} {'diff':>8s}   (exact: the whole "
          "table at the released bounds and categories, this release's B and c)")
    for group, pairs in (("planted", PLANTED), ("independent", independent)):
        for pair in pairs:
            diff = private[pair] - exact[pair]
            print(f"{group[:4]} {pair[0] + ' ~ ' + pair[1]:23s} {private[pair]:8.3f} "
                  f"{exact[pair]:8.3f} {diff:+8.3f}")
            if group == "planted":
                checks.append((f"{kind}: planted {pair}: |private - exact| <= {target}",
                               abs(diff), abs(diff) <= target))
            else:
                checks.append((f"{kind}: independent {pair}: private within the noise "
                               f"(+{family:.4f}, 95% over all {len(independent)})",
                               private[pair], private[pair] <= exact[pair] + family))


def main() -> None:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpmic_dask  # noqa: F401  (registers .dpmic)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2,
                        help="releases of each kind, alternating; the fastest counts")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpmic-bench"))
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                        help="the table rewritten in these numbers of files, both "
                             "releases timed on each (benchmarks/layouts.py)")
    args = parser.parse_args()
    # the per-customer release shuffles: distributed logs each shuffle's start and end
    logging.getLogger("distributed.shuffle").setLevel(logging.ERROR)
    mixed_path, float_path = write_tables(args.data_dir, args.rows, args.partitions)
    cluster_options = dict(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit="4GiB", dashboard_address=None)
    kinds = ("per row", "per customer")
    with LocalCluster(**cluster_options) as cluster, Client(cluster) as client:
        mixed = dd.read_parquet(str(mixed_path))
        floats = dd.read_parquet(str(float_path))
        print("dtypes:", ", ".join(f"{c} {t}" for c, t in mixed.dtypes.items()), flush=True)
        sizes = mixed.groupby(UNIT).size().compute()
        print(f"{args.rows:,} rows, {sizes.size:,} customers: "
              + ", ".join(f"{n} rows {count:,}"
                          for n, count in sizes.value_counts().sort_index().items()),
              flush=True)
        print("\nThe per-customer plan (plan.explain()):")
        mixed.dpmic.plan(EPS, **options("per customer", args.rows)).explain()
        print(flush=True)
        # warm up (imports, numba) on a slice
        head = dd.from_pandas(mixed.head(20_000, npartitions=-1), npartitions=2)
        for kind in kinds:
            release(head, kind, 20_000)
        # each release kind twice, alternating with its all-float comparison (the
        # cluster warms up on the first runs); the fastest of each counts
        seconds = {k: float("inf") for k in ("float per row", *kinds, "float per customer")}
        peaks = dict.fromkeys(seconds, 0.0)
        results = {}
        for _ in range(args.repeats):
            for kind in seconds:
                client.run(reset_peak_rss)
                result, took = release(floats if kind.startswith("float") else mixed, kind,
                                       args.rows)
                seconds[kind] = min(seconds[kind], took)
                peaks[kind] = max(peaks[kind],
                                  max(client.run(peak_rss_bytes).values()) / 2**20)
                results[kind] = result
                print(f"  {kind}: {took:.1f} s", flush=True)
        exact = {}
        for kind in kinds:
            result = results[kind]
            exact[kind] = mixed.dpmic.pairwise_nonprivate(
                bounds=nonprivate_bounds(result), B=result.B, c=result.c,
                columns=list(result.columns), nulls="drop",
                categories={c: list(v) for c, v in result.private_categories.items()},
                progress=False).set_index(["x", "y"]).micr
    checks: list = []
    for kind in kinds:
        accuracy(kind, results[kind], exact[kind], checks)
    print()
    for kind in kinds:
        ratio = seconds[kind] / seconds["float " + kind]
        limit = TARGETS[kind][1]
        shape = f"{len(results[kind].columns)} columns"
        print(f"time {kind}: {seconds[kind]:.1f} s, all-float row-level release of the same "
              f"shape ({shape}) {seconds['float ' + kind]:.1f} s: ratio {ratio:.2f} "
              f"(target <= {limit}); peak worker memory {peaks[kind]:.0f} MiB "
              f"(all-float {peaks['float ' + kind]:.0f} MiB)")
        checks.append((f"time {kind} / all-float <= {limit}", ratio, ratio <= limit))
    print(f"own layout: {args.partitions} files")
    counts = file_counts(args.layouts)
    for kind in kinds:
        for line in time_layouts(mixed_path, counts,
                                 lambda ddf, kind=kind: release(ddf, kind, args.rows),
                                 own_seconds=seconds[kind], cluster=cluster_options):
            print(f"{kind}: {line}")
    print()
    for name, value, ok in checks:
        print(f"{'met ' if ok else 'MISS'} {name}: {value:.3f}")


if __name__ == "__main__":
    main()
