"""Private selection of the strongest pairs versus an all-pairs release, side by side.

Protocol (seeds fixed, printed in the header):

* 100 columns on the unit square's axes: 10 planted pairs ``(c000, c001), (c002,
  c003), ...`` drawn from noisy functional relationships of ``relationships.py``
  (the first 10 distinct functions whose MICr lies in [0.3, 0.9], tried in a
  fixed order), the other 80 columns independent uniform; bounds (0, 1).
* For each ``n`` (10**5 and 10**6): a Parquet table, a ``LocalCluster`` of 2
  workers x 1 thread. One end-to-end ``top_pairs(10, eps=1, delta=1e-6)`` and one
  with ``screen_B=40`` are timed; the exact MICr of every pair (at the release's
  ``B, c`` and at ``B = 40``) is computed once, non-privately, for the
  repetitions.
* 20 repetitions of each mechanism on those exact scores, through the
  package's own objects (``plan_selection``, the selection's ``select``, the
  release mechanism's ``calibrate``/``randomise``; secure OpenDP noise, so runs
  differ): top-10 precision (planted pairs among the 10 chosen), the median
  absolute error of the released values against the exact ones, and for
  ``pairs_above(0.25, max_pairs=20)`` the recall of the planted pairs and the
  number of unplanted pairs reported. The all-pairs contender spends the same
  ``(eps, delta)`` on ``pairwise`` (Gaussian over 4,950 pairs) and ranks the
  released values.
* Calibration: Gaussian sigma per value at ``(eps, delta) = (1, 1e-6)`` for 45
  and 4,950 pairs, from the classic zCDP conversion and from the one in use.

Targets (the private-selection issue): n = 10**5 top-10 precision >= 0.9
(median); n = 10**6 precision 1.0 and median absolute error <= 0.005.

Run: ``python benchmarks/selection.py [--sizes 100000,1000000] [--reps 20]``.
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
from relationships import FUNCTIONS, Relationship  # noqa: E402
from workers import peak_rss_bytes  # noqa: E402

COLUMNS = [f"c{k:03d}" for k in range(100)]
PLANTED = [(COLUMNS[2 * i], COLUMNS[2 * i + 1]) for i in range(10)]
ROWS_PER_FILE = 250_000
TRY_LEVELS = (0.6, 0.8, 0.4, 0.9, 0.5, 0.7, 0.3)
EPS, DELTA, K, THRESHOLD, MAX_PAIRS, SCREEN_B = 1.0, 1e-6, 10, 0.25, 20, 40


def choose_relationships():
    """The first 10 distinct functions (in a fixed order) with MICr in [0.3, 0.9] on
    a 50,000-point sample at B = 100, c = 5 (benchmark design, not a release)."""
    import dpmic_dask as dm

    chosen = []
    for r2 in TRY_LEVELS:
        for name in FUNCTIONS:
            if len(chosen) == 10 or name in {r.name for r in chosen}:
                continue
            rel = Relationship(name, r2)
            x, y = rel.sample(50_000, np.random.default_rng([7, int(name[1:])]))
            value = dm.micr(x, y, x_bounds=(0, 1), y_bounds=(0, 1), B=100, c=5)
            if 0.3 <= value <= 0.9:
                chosen.append(rel)
    return chosen


def write_table(root: Path, n: int, relationships) -> Path:
    target = root / f"selection-{n}"
    if (target / "_done").exists():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for part, start in enumerate(range(0, n, ROWS_PER_FILE)):
        size = min(ROWS_PER_FILE, n - start)
        gen = np.random.default_rng([n, part])  # benchmark data, not noise
        data = {name: gen.random(size) for name in COLUMNS}
        for rel, (a, b) in zip(relationships, PLANTED):
            data[a], data[b] = rel.sample(size, gen)
        pd.DataFrame(data).to_parquet(target / f"part-{part:04d}.parquet", index=False)
    (target / "_done").touch()
    return target


def repetitions(exact, screen, n, B, c, reps):
    """Precision, error, recall and false positives over ``reps`` noise draws."""
    from dpmic_dask.privacy.mechanisms import build_mechanism
    from dpmic_dask.privacy.selection import plan_selection
    from dpmic_dask.stats.statistics import get_statistic

    micr = get_statistic("micr")
    pairs = list(exact.index)
    planted = {pairs.index(p) for p in PLANTED}
    scores = exact.to_numpy()
    sens = micr.sensitivity(n, B)
    out: dict[str, list] = {k: [] for k in (
        "topk_gauss", "topk_pure", "screened", "allpairs", "err_gauss", "err_pure",
        "recall", "false_pos", "found")}
    for _ in range(reps):
        for key, delta, values in (("topk_gauss", DELTA, scores), ("topk_pure", 0.0, scores),
                                   ("screened", DELTA, screen.to_numpy())):
            plan = plan_selection("top-k", eps=EPS, delta=delta, share=0.5, statistic=micr,
                                  k=K)
            chosen = plan.selection.select(len(pairs), values, sens)
            out[key].append(len(planted & set(chosen)) / K)
            if key != "screened":
                release = plan.release
                noisy = release.randomise(scores[list(chosen)],
                                          release.calibrate(n=n, pairs=len(chosen), B=B, c=c))
                err = np.abs(noisy - scores[list(chosen)])
                out["err_gauss" if delta else "err_pure"].append(float(np.median(err)))
        mech = build_mechanism("auto", eps=EPS, delta=DELTA, pairs=len(pairs))
        noisy = mech.randomise(scores, mech.calibrate(n=n, pairs=len(pairs), B=B, c=c))
        top = np.argsort(-noisy, kind="stable")[:K]
        out["allpairs"].append(len(planted & set(top.tolist())) / K)
        plan = plan_selection("above", eps=EPS, delta=DELTA, share=0.5, statistic=micr,
                              threshold=THRESHOLD, max_pairs=MAX_PAIRS)
        found = set(plan.selection.select(len(pairs), scores, sens))
        above = {p for p in planted if scores[p] > THRESHOLD}
        out["recall"].append(len(found & above) / max(1, len(above)))
        out["false_pos"].append(len(found - planted))
        out["found"].append(len(found))
    return out


def measure(path: Path, n: int, reps: int) -> dict:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    import dpmic_dask as dm

    bounds = {name: (0.0, 1.0) for name in COLUMNS}
    ledger = dm.InMemoryLedger(uncapped=True)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="4GiB",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        ddf = dd.read_parquet(str(path))
        ddf[COLUMNS[:2]].head(2000, compute=True).dpmic.pairwise(
            1.0, bounds={k: bounds[k] for k in COLUMNS[:2]})  # warm-up
        start = time.perf_counter()
        full = ddf.dpmic.top_pairs(K, EPS, delta=DELTA, bounds=bounds, ledger=ledger,
                                   progress=False)
        t_full = time.perf_counter() - start
        start = time.perf_counter()
        screened = ddf.dpmic.top_pairs(K, EPS, delta=DELTA, bounds=bounds, ledger=ledger,
                                       screen_B=SCREEN_B, progress=False)
        t_screen = time.perf_counter() - start
        peak = max(client.run(peak_rss_bytes).values()) / 2**20
        B, c = full.B, full.c
        exact = ddf.dpmic.pairwise_nonprivate(bounds=bounds, B=B, c=c, progress=False)
        screen = ddf.dpmic.pairwise_nonprivate(bounds=bounds, B=SCREEN_B, c=c, progress=False)
    index = pd.MultiIndex.from_arrays([exact.x, exact.y])
    exact_s = pd.Series(exact.micr.to_numpy(), index=index)
    screen_s = pd.Series(screen.micr.to_numpy(), index=index)
    reps_out = repetitions(exact_s, screen_s, n, B, c, reps)
    return {"n": n, "B": B, "c": c, "t_full": t_full, "t_screen": t_screen, "peak": peak,
            "e2e_precision": len(set(full.pairs) & set(PLANTED)) / K,
            "e2e_screen_precision": len(set(screened.pairs) & set(PLANTED)) / K,
            "planted": [float(exact_s[p]) for p in PLANTED], **reps_out}


def calibration_lines() -> list[str]:
    import math

    from dpmic_dask.privacy.conversion import rho_from_eps_delta
    from dpmic_dask.privacy.mechanisms import build_mechanism

    lines = []
    for pairs in (45, 4950):
        mech = build_mechanism("micr-gauss", eps=EPS, delta=DELTA, pairs=pairs)
        sigma = mech.calibrate(n=10**6, pairs=pairs, B=200, c=5).noise_scale
        log_term = -math.log(DELTA)
        classic = (math.sqrt(log_term + EPS) - math.sqrt(log_term)) ** 2
        now = rho_from_eps_delta(EPS, DELTA)
        lines.append(f"  {pairs:>5} pairs, n = 1e6: sigma {sigma:.5f} (rho {now:.5g}); with the "
                     f"classic rho {classic:.5g}: sigma {sigma * math.sqrt(now / classic):.5f} "
                     f"({math.sqrt(classic / now):.3f}x)")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/dpmic-bench"))
    parser.add_argument("--layouts", default=DEFAULT_LAYOUTS,
                        help="the table rewritten in these numbers of files, the release "
                             "timed on each (benchmarks/layouts.py)")
    args = parser.parse_args()
    relationships = choose_relationships()
    print("planted: " + ", ".join(f"{a}-{b} {r.label}" for r, (a, b) in
                                  zip(relationships, PLANTED)))
    print(f"eps = {EPS}, delta = {DELTA} (top-k Gaussian, all pairs); pure top-k at delta = 0; "
          f"select_share = 0.5; {args.reps} repetitions; secure noise")
    checks = []
    for n in (int(v) for v in args.sizes.split(",")):
        r = measure(write_table(args.data_dir, n, relationships), n, args.reps)
        med = {k: float(np.median(v)) for k, v in r.items() if isinstance(v, list)}
        print(f"\nn = {n:,} (B = {r['B']}, c = {r['c']}); exact MICr of the planted pairs: "
              + " ".join(f"{v:.2f}" for v in r["planted"]))
        print(f"  end to end: top_pairs {r['t_full']:.1f} s (precision {r['e2e_precision']:.1f}),"
              f" screened at B = {SCREEN_B} {r['t_screen']:.1f} s (precision "
              f"{r['e2e_screen_precision']:.1f}); peak worker {r['peak']:.0f} MiB")
        print(f"  top-10 precision, median of {args.reps}: top_pairs zCDP {med['topk_gauss']:.2f}, "
              f"pure {med['topk_pure']:.2f}, screened at B = {SCREEN_B} {med['screened']:.2f}; "
              f"all-pairs release ranked {med['allpairs']:.2f}")
        print(f"  median |released - exact| of the chosen: zCDP {med['err_gauss']:.4f}, pure "
              f"{med['err_pure']:.4f}")
        print(f"  pairs_above({THRESHOLD}, max_pairs={MAX_PAIRS}): recall {med['recall']:.2f}, "
              f"unplanted reported {med['false_pos']:.0f} (median), found {med['found']:.0f}")
        if n == 10**5:
            checks.append(("n=1e5 top-10 precision >= 0.9", med["topk_gauss"],
                           med["topk_gauss"] >= 0.9))
            checks.append(("n=1e5 all-pairs ranked precision (lower)", med["allpairs"],
                           med["allpairs"] < med["topk_gauss"]))
        if n == 10**6:
            checks.append(("n=1e6 top-10 precision == 1.0", med["topk_gauss"],
                           med["topk_gauss"] == 1.0))
            checks.append(("n=1e6 median abs error <= 0.005", med["err_gauss"],
                           med["err_gauss"] <= 0.005))
        if n == int(args.sizes.split(",")[0]):
            bounds = {name: (0.0, 1.0) for name in COLUMNS}
            print(f"  own layout: {-(-n // ROWS_PER_FILE)} files")
            for line in time_layouts(
                    write_table(args.data_dir, n, relationships), file_counts(args.layouts),
                    lambda ddf: ddf.dpmic.top_pairs(K, EPS, delta=DELTA, bounds=bounds,
                                                    progress=False),
                    own_seconds=r["t_full"],
                    cluster=dict(n_workers=2, threads_per_worker=1, processes=True,
                                 memory_limit="4GiB", dashboard_address=None)):
                print("  " + line, flush=True)
    print("\ncalibration (micr-gauss at eps = 1, delta = 1e-6):")
    for line in calibration_lines():
        print(line)
    print()
    for name, value, ok in checks:
        print(f"{name:<44} {value:8.4f}  {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
