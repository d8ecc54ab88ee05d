"""The error surface behind the default B and c (``dpmic_dask.stats.defaults``).

For each mechanism, ``n`` and ``eps``, evaluates every ``(B, c)`` of a grid on the
21 relationships at the paper's nine noise levels (189 distributions; ``--levels``
picks fewer) and prints the weighted mean
absolute error of the released value against the MIC* proxy (a 10**6-point
non-private MICr, B = 400, c = 5), with the paper's weighting (each distribution
weighted by the gap between its neighbours' MIC* values, Appendix E.2.3). The
default's cell is marked ``*`` and the best cell ``<``.

``--pairs P --delta D`` sizes each value's noise as one of ``P`` values of a
release of ``(eps, D)`` (``--mechanism micr-gauss`` for the Gaussian mechanism of
wide releases), so the surface is that of one pair of a wide table.

Run: ``python benchmarks/tune_defaults.py [--n 1000,5000,100000] [--eps 0.1,1]
[--reps 5] [--B 20,40,80,150,200,300] [--c 1,2,5] [--levels 0.1,...,0.9]
[--mechanism micr-gauss --pairs 11175 --delta 1e-7]``.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accuracy import proxy_mic  # noqa: E402
from relationships import PAPER_LEVELS, all_relationships  # noqa: E402


def interval_weights(values: np.ndarray) -> np.ndarray:
    """Paper's weights: the length of each value's Voronoi interval in [0, 1]."""
    order = np.argsort(values)
    v = values[order]
    mids = (v[1:] + v[:-1]) / 2
    edges = np.concatenate(([0.0], mids, [1.0]))
    w = np.empty_like(values)
    w[order] = np.diff(edges)
    return w


def errors_for(task):
    from dpmic_dask.privacy.mechanisms import noisy_counts, noisy_values, plan_noise
    from dpmic_dask.stats.characteristic import micr_from_counts
    from dpmic_dask.stats.counting import pair_counts
    from dpmic_dask.stats.grids import master_grid_family

    rel, mech, ns, epss, Bs, cs, reps, seed, pairs, delta = task
    proxy = proxy_mic(rel, seed)
    out = {}
    for n in ns:
        samples = [rel.sample(n, np.random.default_rng([seed, n, r])) for r in range(reps)]
        for B in Bs:
            for c in cs:
                family = master_grid_family(B, c)
                counts = [pair_counts(x, y, rel.x_bounds, rel.y_bounds, family) for x, y in samples]
                exact = np.array([micr_from_counts(k, family) for k in counts])
                for eps in epss:
                    plan = plan_noise(mechanism=mech, n=n, eps=eps, delta=delta, pairs=pairs,
                                      B=B, c=c)
                    if mech == "micr-geom":
                        released = np.array([micr_from_counts(noisy_counts(k, plan), family)
                                             for k in counts])
                    else:
                        released = noisy_values(exact, plan)
                    out[(n, eps, B, c)] = float(np.mean(np.abs(released - proxy)))
    return proxy, out


def main() -> None:
    from dpmic_dask.privacy.mechanisms import default_parameters

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mechanism", default="micr-lap", choices=["micr-lap", "micr-gauss", "micr-geom"])
    parser.add_argument("--pairs", type=int, default=1,
                        help="values the release publishes (noise per value of P)")
    parser.add_argument("--delta", type=float, default=0.0)
    parser.add_argument("--n", default="1000,5000,100000")
    parser.add_argument("--eps", default="0.1,1")
    parser.add_argument("--B", default="20,40,80,150,200,300")
    parser.add_argument("--c", default="1,2,5")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--levels", default=",".join(f"{v:g}" for v in PAPER_LEVELS),
                        help="R2 noise levels (default: the paper's 0.1, ..., 0.9)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    ns = [int(v) for v in args.n.split(",")]
    epss = [float(v) for v in args.eps.split(",")]
    Bs = [int(v) for v in args.B.split(",")]
    cs = [int(v) for v in args.c.split(",")]
    levels = tuple(float(v) for v in args.levels.split(","))
    rels = all_relationships(levels)
    tasks = [(r, args.mechanism, ns, epss, Bs, cs, args.reps, args.seed, args.pairs, args.delta)
             for r in rels]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(errors_for, tasks))
    weights = interval_weights(np.array([p for p, _ in results]))
    print(f"{args.mechanism}: weighted mean |released - MIC* proxy| over {len(rels)} "
          f"distributions (R2 levels {args.levels}), {args.reps} reps ('*' default, '<' best)"
          + (f"; each value one of {args.pairs} (delta {args.delta:g})" if args.pairs > 1 else ""))
    for n in ns:
        for eps in epss:
            surface = {(B, c): float(sum(w * r[(n, eps, B, c)] for w, (_, r) in zip(weights, results)))
                       for B in Bs for c in cs}
            best = min(surface, key=surface.get)
            dB, dc = default_parameters(args.mechanism, n, eps)
            print(f"\nn={n} eps={eps:g}  default (B={dB}, c={dc})")
            print("    B " + "".join(f"{'c=' + str(c):>10}" for c in cs))
            for B in Bs:
                cells = []
                for c in cs:
                    mark = "<" if (B, c) == best else ("*" if (B, c) == (dB, dc) else " ")
                    cells.append(f"{surface[(B, c)]:>9.4f}{mark}")
                print(f"{B:>5} " + "".join(cells))


if __name__ == "__main__":
    main()
