"""Local model (issue #27): estimator checks, design choice, MIC error against the
central model, throughput.

Sections
--------
(1) per protocol (GRR, OLH, OUE): the joint-frequency estimates are unbiased
    (largest |mean - truth| in standard errors over repeats) and the variance the
    server states (normal approximation) matches the empirical one; and, for one
    column, our estimates and pure-ldp's on the same design (same eps, domain and
    hash size) have the same variance (pure-ldp is optional: ``pip install
    'dpmic_dask[bench]'``; the row is skipped with the reason if it is missing).
(1b) report design: the variance of a joint cell when each person reports one of
    ``P`` pairs at the full eps (ours) against every column at ``eps / d`` with the
    product estimator (Carette 2022, eq. 35), measured on the same table.
(2) MIC error for n in {1e5, 1e6, 1e7} and eps in {1, 2, 4, 8} on a planted table
    of 4 columns (6 pairs: two strong, one moderate, three independent), against
    the exact MICr of the same data, next to the central release at the same eps
    (``df.dpmic.pairwise(eps, ...)``: eps in total for all pairs, as one person's
    eps covers all pairs in the local model). Also per bins setting (the default's
    choice) and the coverage of ci95.
(3) throughput: randomize and aggregate, rows per second per core.
(4) coverage of ci95 (issue #34): one pair ``y = sin(6x) + N(0, sigma^2)`` at four
    dependence strengths (independent, sigma = 0.8, 0.3, 0.1) x eps in {0.5, 1, 2,
    4, 8}, ``--runs`` runs per cell (default 200) of ``n = --rows`` people (default
    2 10^4); the share of runs whose estimate lies within ``ci95`` of the exact MICr
    of the same data on the design's grid, for the interval the server gives now
    and for the older one (``1.96 sd(MIC*) + |bias|``, from the same bootstrap).
    Default bins, capped at 8 per axis (``--max-bins``) to keep the run short.

Run: ``python benchmarks/local_dp.py [--quick]`` (sections 1-3 about 10 minutes on
2 cores, section 4 about 6 more with ``--procs 2``; ``--quick`` is a smoke run).
Output: ``benchmarks/results-local-dp.txt``.
Randomness: the package's secure source everywhere except section (1), which uses
the seeded NOT private stream (``seeded_noise``) so its numbers are reproducible.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import pandas as pd

os.environ.setdefault("DPMIC_DASK_ALLOW_SEEDED_NOISE", "1")

import dpmic_dask as dm  # noqa: E402
from dpmic_dask import ldp  # noqa: E402
from dpmic_dask.errors import PrivacyLeakWarning  # noqa: E402
from dpmic_dask.ldp.bits import ByteSource  # noqa: E402
from dpmic_dask.ldp.client import default_bins  # noqa: E402
from dpmic_dask.ldp.estimate import mic_of_joint  # noqa: E402
from dpmic_dask.ldp.protocols import make_protocol  # noqa: E402
from dpmic_dask.privacy.accounting import InMemoryLedger  # noqa: E402
from dpmic_dask.privacy.mechanisms import default_parameters  # noqa: E402
from dpmic_dask.stats.counting import bins as equal_width_bins  # noqa: E402
from dpmic_dask.stats.grids import master_grid_family  # noqa: E402
from dpmic_dask.testing import seeded_noise  # noqa: E402

warnings.simplefilter("ignore", PrivacyLeakWarning)

BOUNDS = {"x": (0.0, 1.0), "y": (-1.5, 1.5), "z": (0.0, 1.0), "w": (-0.3, 1.3)}


def planted(n: int, seed: int) -> pd.DataFrame:
    gen = np.random.default_rng(seed)  # data, not noise
    x = gen.uniform(0, 1, n)
    return pd.DataFrame({
        "x": x,
        "y": np.sin(6 * x) + gen.normal(0, 0.2, n),
        "z": gen.uniform(0, 1, n),
        "w": x ** 2 + gen.normal(0, 0.1, n),
    })


# ----------------------------------------------------------------- section 1


def section1(quick: bool) -> list[str]:
    out = ["(1) joint-frequency estimator per protocol: 6 x 6 grid (k = 36), n = 5000 rows,",
           "    planted uneven frequencies (8 cells empty); seeded stream; R repeats",
           f"{'protocol':>8} {'eps':>4} {'g':>3} {'R':>5} {'max |bias|/se':>13} "
           f"{'var ratio min..max':>20} {'pass':>5}"]
    k, n = 36, 5000
    weights = np.arange(k) % 7 + 0.0
    weights[[3, 9, 14, 20, 22, 27, 31, 35]] = 0
    counts = np.floor(weights / weights.sum() * n).astype(int)
    values = np.repeat(np.arange(k), counts)
    n = values.size
    truth = np.bincount(values, minlength=k) / n
    repeats = 300 if quick else 2000
    with seeded_noise(11, not_private=True):
        from dpmic_dask.ldp.bits import active_source

        for name, eps in [("grr", 1.0), ("olh", 1.0), ("oue", 1.0), ("grr", 4.0),
                          ("olh", 4.0), ("oue", 4.0)]:
            proto = make_protocol(name, eps, k)
            src = active_source()
            zeros = np.zeros(n, dtype=np.int64)
            est = np.array([proto.estimate(proto.supports(proto.encode(values, src), zeros, 1)[0],
                                           n) for _ in range(repeats)])
            var = np.diag(proto.frequency_covariance(truth, n))
            se = np.sqrt(var / repeats)
            bias = float(np.max(np.abs(est.mean(0) - truth) / se))
            ratio = est.var(0, ddof=1) / var
            ok = bias <= 3.5 and np.all(np.abs(ratio - 1) <= 0.15)
            out.append(f"{name:>8} {eps:>4g} {proto.g:>3} {repeats:>5} {bias:>13.2f} "
                       f"{ratio.min():>9.3f}..{ratio.max():<9.3f} {'yes' if ok else 'NO':>5}")
    out.append("    (|bias|/se: largest over 36 cells, ~3.2 expected from chance alone; "
               "var ratio = empirical / stated)")
    out += section1_pure_ldp(quick)
    return out


def section1_pure_ldp(quick: bool) -> list[str]:
    out = ["", "(1) one column, same design as pure-ldp (DE = GRR, LH with the same g = OLH):",
           "    variance of the frequency estimates over repeats, averaged over the domain"]
    try:
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    except ImportError as exc:
        out.append(f"    skipped: pure-ldp is not installed ({exc}); "
                   "pip install 'dpmic_dask[bench]'")
        return out
    import xxhash
    from pure_ldp.frequency_oracles.local_hashing import lh_client, lh_server

    class _Shim:  # pure-ldp 1.2 hashes str; xxhash >= 3 takes bytes only
        @staticmethod
        def xxh32(data, seed=0):
            return xxhash.xxh32(data.encode() if isinstance(data, str) else data, seed=seed)

    lh_client.xxhash = lh_server.xxhash = _Shim
    out.append("    (pure-ldp 1.2's LH hashes str, which xxhash >= 3 refuses: its hash input is "
               "encoded to bytes here)")
    d, n = 16, 2000
    repeats = 60 if quick else 300
    values = np.arange(n) % d
    values[: n // 4] = 0  # one heavy value
    truth = np.bincount(values, minlength=d) / n
    out.append(f"{'design':>14} {'eps':>4} {'ours var':>10} {'pure-ldp var':>13} "
               f"{'stated':>10} {'ratio':>6}")
    for eps in (1.0, 2.0):
        for name in ("grr", "olh"):
            proto = make_protocol(name, eps, d)
            src = ByteSource()
            zeros = np.zeros(n, dtype=np.int64)
            ours = np.array([proto.estimate(proto.supports(proto.encode(values, src), zeros, 1)[0],
                                            n) for _ in range(repeats)])
            theirs = []
            for _ in range(repeats):
                if name == "grr":
                    client, server = DEClient(eps, d), DEServer(eps, d)
                else:
                    client = LHClient(eps, d, g=proto.g)
                    server = LHServer(eps, d, g=proto.g)
                for v in values:
                    server.aggregate(client.privatise(int(v) + 1))
                theirs.append([server.estimate(v + 1, suppress_warnings=True) / n
                               for v in range(d)])
            theirs = np.array(theirs)
            stated = np.diag(proto.frequency_covariance(truth, n)).mean()
            a, b = ours.var(0, ddof=1).mean(), theirs.var(0, ddof=1).mean()
            label = "GRR/DE" if name == "grr" else f"OLH/LH g={proto.g}"
            out.append(f"{label:>14} {eps:>4g} {a:>10.3e} {b:>13.3e} {stated:>10.3e} "
                       f"{a / b:>6.3f}")
    out.append("    (pure-ldp draws with Python's random module: a reference, not a private "
               "client)")
    return out


def section1b(quick: bool) -> list[str]:
    """Joint cell variance: one pair per person at eps vs every column at eps / d."""
    out = ["", "(1b) report design: variance of the joint-cell estimates (mean over cells),",
           "     4 x 4 grid per pair, n = 20000, d columns; measured with the secure source"]
    m, n = 4, 20000
    repeats = 60 if quick else 200
    gen = np.random.default_rng(2)  # data only
    a = gen.integers(0, m, n)
    b = (a + gen.integers(0, 2, n)) % m
    truth = np.bincount(a * m + b, minlength=m * m) / n
    out.append(f"{'eps':>4} {'d':>2} {'one pair of P (ours)':>21} {'all columns at eps/d':>21} "
               f"{'ratio':>7}")
    for eps in (1.0, 2.0, 4.0):
        for d in (2, 4):
            pairs = d * (d - 1) // 2
            # ours: the pair's reports are a random 1/P of the people, full eps
            proto = make_protocol("auto", eps, m * m)
            src = ByteSource()
            ours = []
            for _ in range(repeats):
                keep = src.below(pairs, n) == 0
                cells = (a * m + b)[keep]
                s = proto.supports(proto.encode(cells, src), np.zeros(cells.size, np.int64), 1)
                ours.append(proto.estimate(s[0], cells.size))
            # product: each column by GRR at eps / d; joint by the product estimator
            col = make_protocol("grr", eps / d, m)
            p, q = col.p, col.q
            prod = []
            for _ in range(repeats):
                ra = col.encode(a, src)["y"].astype(np.int64)
                rb = col.encode(b, src)["y"].astype(np.int64)
                ca = np.bincount(ra, minlength=m) / n
                cb = np.bincount(rb, minlength=m) / n
                cab = np.bincount(ra * m + rb, minlength=m * m).reshape(m, m) / n
                joint = (cab - p * (ca[:, None] + cb[None, :]) + p * p) / (q - p) ** 2
                prod.append(joint.ravel())
            v1 = np.array(ours).var(0, ddof=1).mean()
            v2 = np.array(prod).var(0, ddof=1).mean()
            out.append(f"{eps:>4g} {d:>2} {v1:>21.3e} {v2:>21.3e} {v2 / v1:>7.1f}")
    out.append(f"     (truth has {int((truth > 0).sum())} non-empty cells of {m * m}; ratio = "
               "product variance / ours)")
    return out


# ----------------------------------------------------------------- section 2


def coarse_target(df, a, b, m, family) -> float:
    i = equal_width_bins(df[a].to_numpy(), BOUNDS[a], m)
    j = equal_width_bins(df[b].to_numpy(), BOUNDS[b], m)
    return mic_of_joint(np.bincount(i * m + j, minlength=m * m) / len(df), m, family)


def section2(quick: bool) -> list[str]:
    sizes = [(10**5, 5), (10**6, 2), (10**7, 1)] if not quick else [(10**5, 1)]
    epsilons = (1.0, 2.0, 4.0, 8.0) if not quick else (1.0, 4.0)
    out = ["", "(2) MIC error, planted table (4 columns, 6 pairs), secure randomness.",
           "    exact = non-private MICr of the raw data at the central release's (B, c);",
           "    local = ldp.randomize + ldp.pairwise (default design, 200 bootstrap replicates);",
           "    central = df.dpmic.pairwise(eps) (eps in total over the 6 pairs, default B, c);",
           "    errors: mean |value - exact| over pairs and repeats; 'grid' is the local",
           "    estimate's error against the exact MICr of the same data on its own public grid;",
           "    cover = share of (pair, repeat) with |local - grid target| <= ci95.",
           f"{'n':>9} {'eps':>4} {'reps':>4} {'bins':>4} {'proto':>5} {'local err':>9} "
           f"{'grid err':>8} {'cover':>5} {'indep max':>9} {'central err':>11} "
           f"{'central B':>9} {'sec local':>9}"]
    for n, reps in sizes:
        for eps in epsilons:
            err_l, err_g, cover, indep, err_c = [], [], [], [], []
            t_local = 0.0
            b_used = None
            for rep in range(reps):
                df = planted(n, 100 + rep)
                ledger = InMemoryLedger(uncapped=True)
                central = df.dpmic.pairwise(eps, bounds=BOUNDS, ledger=ledger)
                ct = central.to_pandas()
                b_used = (int(ct["B"].iloc[0]), int(ct["c"].iloc[0]))
                exact = {}
                for _, row in ct.iterrows():
                    exact[(row.x, row.y)] = dm.micr(df[row.x], df[row.y],
                                                    x_bounds=BOUNDS[row.x],
                                                    y_bounds=BOUNDS[row.y], B=b_used[0],
                                                    c=b_used[1])
                    err_c.append(abs(row.mic - exact[(row.x, row.y)]))
                t0 = time.perf_counter()
                reports = ldp.randomize(df, eps, bounds=BOUNDS)
                result = ldp.pairwise(reports)
                t_local += time.perf_counter() - t0
                design = reports.attrs["dpmic_ldp"]
                family = master_grid_family(design["B"], design["c"])
                for _, row in result.to_pandas().iterrows():
                    key = (row.x, row.y) if (row.x, row.y) in exact else (row.y, row.x)
                    target = coarse_target(df, row.x, row.y, design["bins"], family)
                    err_l.append(abs(row.mic - exact[key]))
                    err_g.append(abs(row.mic - target))
                    cover.append(abs(row.mic - target) <= row.ci95)
                    if "z" in (row.x, row.y):
                        indep.append(row.mic)
            proto = design["protocol"]["name"]
            out.append(f"{n:>9.0e} {eps:>4g} {reps:>4} {design['bins']:>4} {proto:>5} "
                       f"{np.mean(err_l):>9.3f} {np.mean(err_g):>8.3f} {np.mean(cover):>5.2f} "
                       f"{np.max(indep):>9.3f} {np.mean(err_c):>11.3f} {b_used[0]:>9} "
                       f"{t_local / reps:>9.1f}")
    return out


def section2_bins(quick: bool) -> list[str]:
    out = ["", "(2b) choice of the default bins per axis: mean |local - exact MICr| (central",
           "     release's B, c) over the 6 pairs, n = 1e5 and 1e6, 2 repeats each",
           f"{'n':>9} {'eps':>4} " + " ".join(f"{'bins=' + str(b):>8}" for b in (3, 4, 6, 8, 12))]
    for n in ((10**5,) if quick else (10**5, 10**6)):
        for eps in (1.0, 2.0, 4.0, 8.0):
            errs = []
            for m in (3, 4, 6, 8, 12):
                e = []
                for rep in range(1 if quick else 2):
                    df = planted(n, 200 + rep)
                    Bf, cf = default_parameters("micr-lap", n, eps / 6)
                    B, c = int(Bf), int(cf)
                    res = ldp.pairwise(ldp.randomize(df, eps, bounds=BOUNDS, bins=m),
                                       replicates=100)
                    for _, row in res.to_pandas().iterrows():
                        exact = dm.micr(df[row.x], df[row.y], x_bounds=BOUNDS[row.x],
                                        y_bounds=BOUNDS[row.y], B=B, c=c)
                        e.append(abs(row.mic - exact))
                errs.append(np.mean(e))
            out.append(f"{n:>9.0e} {eps:>4g} " + " ".join(f"{v:>8.3f}" for v in errs))
    return out


# ----------------------------------------------------------------- section 3


def section3(quick: bool) -> list[str]:
    n = 10**6 if not quick else 2 * 10**5
    df = planted(n, 1)
    ldp.pairwise(ldp.randomize(df.head(1000), 1.0, bounds=BOUNDS))  # warm-up: imports, JIT
    out = ["", f"(3) throughput, n = {n:.0e} rows, 4 columns (6 pairs), one process (one core):",
           f"{'eps':>4} {'proto':>5} {'randomize rows/s':>17} {'aggregate rows/s':>17} "
           f"{'estimate s (6 pairs, 200 boot)':>31}"]
    for eps, protocol in [(1.0, "auto"), (2.0, "auto"), (4.0, "auto"), (8.0, "auto"),
                          (1.0, "oue")]:
        t0 = time.perf_counter()
        reports = ldp.randomize(df, eps, bounds=BOUNDS, protocol=protocol)
        t1 = time.perf_counter()
        design = reports.attrs["dpmic_ldp"]
        from dpmic_dask.ldp.server import count_reports

        count_reports(reports, design)
        t2 = time.perf_counter()
        ldp.pairwise(reports)
        t3 = time.perf_counter()
        out.append(f"{eps:>4g} {design['protocol']['name']:>5} {n / (t1 - t0):>17,.0f} "
                   f"{n / (t2 - t1):>17,.0f} {t3 - t2 - (t2 - t1):>31.2f}")
    return out


# ----------------------------------------------------------------- section 4

COVER_EPS = (0.5, 1.0, 2.0, 4.0, 8.0)
#: noise sd of y = sin(6x) + noise; None: y independent of x
COVER_SIGMAS = (None, 0.8, 0.3, 0.1)


def _cover_cell(args) -> dict:
    eps, sigma, runs, rows, max_bins, cell = args
    bounds = {"x": BOUNDS["x"], "y": BOUNDS["y"]}
    hits_new = hits_old = 0
    target_sum = err_sum = wid_new = wid_old = 0.0
    t0 = time.perf_counter()
    bins = min(max_bins, default_bins(eps, rows, 1))
    for run in range(runs):
        gen = np.random.default_rng([cell, run])  # data, not noise
        x = gen.uniform(0, 1, rows)
        y = np.sin(6 * x) + gen.normal(0, 0.3 if sigma is None else sigma, rows)
        if sigma is None:
            y = gen.permutation(y)
        df = pd.DataFrame({"x": x, "y": y})
        reports = ldp.randomize(df, eps, bounds=bounds, bins=bins)
        est = ldp.pairwise(reports).estimates[0]
        design = reports.attrs["dpmic_ldp"]
        family = master_grid_family(design["B"], design["c"])
        target = coarse_target(df, "x", "y", design["bins"], family)
        old = 1.96 * est.boot_sd + abs(est.bias)
        hits_new += abs(est.mic - target) <= est.ci95
        hits_old += abs(est.mic - target) <= old
        target_sum += target
        err_sum += est.mic - target
        wid_new += est.ci95
        wid_old += old
    return {"eps": eps, "sigma": sigma, "runs": runs, "bins": bins,
            "proto": design["protocol"]["name"], "target": target_sum / runs,
            "err": err_sum / runs, "old": hits_old / runs, "new": hits_new / runs,
            "w_old": wid_old / runs, "w_new": wid_new / runs,
            "sec": (time.perf_counter() - t0) / runs}


def section4(quick: bool, runs: int = 200, rows: int = 20_000, max_bins: int = 8,
             procs: int = 1) -> list[str]:
    runs = 20 if quick else runs
    cells = [(eps, sigma, runs, rows, max_bins, 1000 * i + j)
             for i, eps in enumerate(COVER_EPS) for j, sigma in enumerate(COVER_SIGMAS)]
    if procs > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(procs) as pool:
            res = list(pool.map(_cover_cell, cells))
    else:
        res = [_cover_cell(c) for c in cells]
    out = ["", f"(4) ci95 coverage: one pair y = sin(6x) + N(0, sigma^2) (indep: y permuted), "
           f"n = {rows:.0e},", f"    {runs} runs per cell, secure randomness, default bins "
           f"capped at {max_bins}, 200 bootstrap replicates;",
           "    target = exact MICr of the run's data on the design's grid; cover = share of "
           "runs with", "    |mic - target| <= half-width; old = 1.96 sd(MIC*) + |bias| "
           "(same bootstrap draws); new = the server's ci95",
           f"{'eps':>4} {'sigma':>5} {'bins':>4} {'proto':>5} {'runs':>4} {'target':>6} "
           f"{'mean err':>8} {'cover old':>9} {'cover new':>9} {'width old':>9} "
           f"{'width new':>9} {'s/run':>6}"]
    for r in res:
        sig = "indep" if r["sigma"] is None else f"{r['sigma']:g}"
        out.append(f"{r['eps']:>4g} {sig:>5} {r['bins']:>4} {r['proto']:>5} {r['runs']:>4} "
                   f"{r['target']:>6.3f} {r['err']:>+8.3f} {r['old']:>9.3f} {r['new']:>9.3f} "
                   f"{r['w_old']:>9.3f} {r['w_new']:>9.3f} {r['sec']:>6.2f}")
    low = min(res, key=lambda r: r["new"])
    out.append(f"    lowest coverage: new {low['new']:.3f} (eps {low['eps']:g}); old "
               f"{min(r['old'] for r in res):.3f}; widths are mean half-widths")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="1,1b,2,2b,3,4")
    parser.add_argument("--runs", type=int, default=200, help="section 4: runs per cell")
    parser.add_argument("--rows", type=int, default=20_000, help="section 4: people per run")
    parser.add_argument("--max-bins", type=int, default=8, help="section 4: bins cap")
    parser.add_argument("--procs", type=int, default=1, help="section 4: processes")
    args = parser.parse_args()
    import functools

    cover = functools.partial(section4, runs=args.runs, rows=args.rows,
                              max_bins=args.max_bins, procs=args.procs)
    parts = args.only.split(",")
    lines = [f"# benchmarks/local_dp.py{' --quick (smoke run)' if args.quick else ''}; "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
             f"{os.cpu_count()} cores visible; load average at start "
             f"{os.getloadavg()[0]:.1f} (a shared machine: throughput scales down with it)", ""]
    for name, fn in [("3", section3), ("1", section1), ("1b", section1b), ("2b", section2_bins),
                     ("2", section2), ("4", cover)]:
        if name in parts:
            start = time.perf_counter()
            lines += fn(args.quick)
            lines.append(f"    [section {name}: {time.perf_counter() - start:.0f} s]")
            print("\n".join(lines), flush=True)
            lines = []


if __name__ == "__main__":
    main()
