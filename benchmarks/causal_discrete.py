"""Private causal discovery on discrete networks against causal-learn's PC.

Data: categorical samples on the sachs (11 nodes, 17 edges), child (20 nodes, 25
edges) and alarm (37 nodes, 46 edges) DAGs of ``causal.py`` (``--networks`` picks
some). Every variable takes ``--levels`` values (default 3); each row of each
conditional probability table is drawn once from a Dirichlet(1, ..., 1) with a
fixed seed (benchmark data, not noise). The categories ``0 .. levels - 1`` are
public. For every network, n and eps the script prints skeleton F1, precision,
recall and the SHD of the CPDAG against the CPDAG of the TRUE DAG, for

* causal-learn's non-private PC (``stable=True``, same alpha and depth) with
  ``gsq`` and with ``chisq``, when causal-learn is installed;
* our non-private PC (``causal_graph_exact``, ``test="chisq"``: the same
  skeleton as causal-learn's ``chisq``);
* ``causal_graph`` (private) with its default for categorical columns
  (``test="chisq"``: one release of noisy joint tables per level), pure DP
  (delta = 0) and zCDP (delta = 1e-6), mean of ``--repeats`` runs (default 3);
  with ``--with-g`` also the per-test private G-test (the former default),

and whether the targets at eps 1, n = 1e5 (F1 >= 0.9 x the better of
causal-learn's two tests, and >= 0.85) are met by the zCDP releases they are
set for (the level's tables as one vector release under zCDP; pure DP is
printed beside them as reached: its noise grows with the number of tables):

    python benchmarks/causal_discrete.py
    python benchmarks/causal_discrete.py --networks alarm --sizes 1e5 --eps 1
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from causal import (NETWORKS, causal_learn, parse, print_targets, row, scores,  # noqa: E402, I001  (beside this script)
                    topological, true_cpdag)

from dpmic_dask.causal import causal_graph, causal_graph_exact  # noqa: E402


def discrete(names, edges, n: int, seed: int, levels: int = 3) -> pd.DataFrame:
    """Categorical data on the DAG: each variable drawn from its conditional
    probability table given its parents, rows of the tables Dirichlet(1, ...)."""
    order, parents = topological(names, edges)
    gen = np.random.default_rng(seed)
    data: dict[str, np.ndarray] = {}
    for v in order:
        configs = levels ** len(parents[v])
        table = gen.dirichlet(np.ones(levels), size=configs)
        index = np.zeros(n, dtype=np.int64)
        for p in parents[v]:
            index = index * levels + data[p]
        cumulative = np.cumsum(table[index], axis=1)
        data[v] = np.minimum((gen.random(n)[:, None] > cumulative).sum(axis=1), levels - 1)
    return pd.DataFrame({v: data[v] for v in names})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--depth", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--levels", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    parser.add_argument("--sizes", nargs="+", default=["1e4", "1e5"])
    parser.add_argument("--networks", nargs="+", default=list(NETWORKS), choices=list(NETWORKS))
    parser.add_argument("--with-g", action="store_true",
                        help="also the per-test private G-test (test='g')")
    args = parser.parse_args()
    alpha, depth = args.alpha, args.depth
    warnings.simplefilter("ignore")  # noise warnings at small eps: the table says it
    summary = []
    for name in args.networks:
        text, nodes, arcs = NETWORKS[name]
        names, edges = parse(text, nodes, arcs)
        truth = true_cpdag(names, edges)
        categories = {c: list(range(args.levels)) for c in names}
        for n in (int(float(x)) for x in args.sizes):
            frame = discrete(names, edges, n, args.seed, args.levels)
            print(f"{name} ({nodes} nodes, {arcs} edges), {args.levels} levels, n = {n}, "
                  f"alpha {alpha}, max_condition_size {depth}")
            reference = math.nan
            for test in ("gsq", "chisq"):
                start = time.perf_counter()
                cl = causal_learn(frame, 0, alpha, depth, test=test, discrete=True)
                if cl is not None:
                    reference = np.nanmax([reference, scores(cl, truth)[2]])
                    print(row(f"causal-learn PC {test}", cl, truth,
                              time.perf_counter() - start))
            start = time.perf_counter()
            g = causal_graph_exact(frame, categories=categories, alpha=alpha,
                                   max_condition_size=depth, test="chisq")
            print(row("ours exact, chisq", g.graph, truth, time.perf_counter() - start,
                      g.report().tests, g.report().passes))
            for test in ("chisq", "g") if args.with_g else ("chisq",):
                for delta in (0.0, 1e-6):
                    for eps in args.eps:
                        measured = []
                        start = time.perf_counter()
                        for _ in range(args.repeats):
                            g = causal_graph(frame, eps, delta=delta, categories=categories,
                                             alpha=alpha, max_condition_size=depth, test=test)
                            measured.append(scores(g.graph, truth))
                        seconds = (time.perf_counter() - start) / args.repeats
                        mean = np.mean(measured, axis=0)
                        label = f"private {test}, eps {eps:g}, delta {delta:g}"
                        print(f"  {label:<30} F1 {mean[2]:5.3f}  prec {mean[0]:5.3f}  "
                              f"rec {mean[1]:5.3f}  SHD {mean[3]:5.1f}  {seconds:6.1f} s  "
                              f"(mean of {args.repeats}; F1 "
                              f"{' '.join(f'{m[2]:.2f}' for m in measured)})", flush=True)
                        summary.append((name, n, test, delta, eps, mean[2], reference))
            print()
    print_targets("causal-learn's better test",
                  [(name, test, n, delta, eps, f1, ref)
                   for name, n, test, delta, eps, f1, ref in summary])


if __name__ == "__main__":
    main()
