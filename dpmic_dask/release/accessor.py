"""The ``.dpmic`` accessor on pandas and Dask DataFrames (registered on import).

A thin facade: it stores the frame, builds one release plan from the arguments
(:func:`dpmic_dask.release.unitplan.plan_unit_release`; public as :meth:`plan`)
and runs it (:func:`dpmic_dask.release.executor.run_release`). Its ``__init__``
never raises.
"""

from __future__ import annotations

import warnings

import pandas as pd

from dpmic_dask.backends import backend_for, install_accessor
from dpmic_dask.errors import InvalidParameterError, UnavailableError, user_stacklevel
from dpmic_dask.privacy.mechanisms.registry import (
    check_statistics,
    deprecated_spellings,
    deprecation_message,
)
from dpmic_dask.release.axisframe import axis_frame
from dpmic_dask.release.charge import check_ledger
from dpmic_dask.release.nonprivate import run_pairwise_nonprivate
from dpmic_dask.release.provided import provided
from dpmic_dask.release.public_plan import Plan
from dpmic_dask.release.unitplan import plan_unit_release
from dpmic_dask.stats.categories import category_kinds
from dpmic_dask.stats.kinds import axis_arguments

#: The arguments every private release method passes on to the plan as given.
_RELEASE_ARGUMENTS = ("bounds", "columns", "delta", "B", "c", "nulls", "fill", "split_every",
                      "label", "task_memory", "statistics", "bounds_share", "coverage",
                      "privacy_unit", "max_rows_per_unit", "domain", "kinds", "min_rows",
                      "categories", "refine", "bounds_check")


def _release_arguments(values: dict) -> dict:
    """The shared release arguments out of a method's ``locals()``."""
    return {name: values[name] for name in _RELEASE_ARGUMENTS}


class DPMICAccessor:
    """``frame.dpmic``: differentially private MIC for every pair of columns."""

    def __init__(self, frame):
        self._frame = frame

    def _schema(self):
        return backend_for(self._frame).schema(self._frame)

    def pairwise(self, eps, *, bounds, columns=None, delta=0.0, mechanism="auto", B=None,
                 c=None, nulls="raise", fill=None, ledger=None, dataset=None,
                 split_every=None, progress=None, label=None,
                 task_memory=None, statistics=("mic",),
                 bounds_share=None, coverage=0.99, domain=None, kinds=None, min_rows=None,
                 privacy_unit=None, max_rows_per_unit=None, categories=None, refine=True,
                 bounds_check="auto"):
        """Release the private MIC of every pair of columns, once.

        Parameters
        ----------
        eps : float > 0
            Total privacy budget, split over the ``P = C (C - 1) / 2`` pairs.
        bounds : dict {column: (lo, hi), PrivateBounds or "private"}, or PrivateBounds / "private"
            Public bounds (from domain knowledge, never from the data); values outside
            are clamped. Every selected column needs bounds, given in its own kind:
            numbers, dates and times (``("2023-01-01", "2025-01-01")``), durations;
            boolean columns named in ``columns`` need none (``(0, 1)`` by type).
            :class:`~dpmic_dask.PrivateBounds` (``"private"`` is ``PrivateBounds()``),
            for a column or for all ``columns``, estimates them with
            ``bounds_share`` of ``eps`` (default 0.1) first, one charge covering both
            steps; see :func:`dpmic_dask.private_bounds` for ``coverage``, ``domain``
            and ``refine`` (each one value or a dict by column; a PrivateBounds field
            set for a column overrides them for it, and the same setting given both
            ways with different values is refused). With
            ``delta > 0`` the release is then ``micr-gauss``.
        columns : list, optional
            Columns to use; default: every column named in ``bounds``.
        delta : float in [0, 1)
            ``> 0`` accounts the release in zCDP; ``auto`` then uses Gaussian noise.
        mechanism : {"auto", "micr-lap", "micr-gauss", "micr-geom"}
        B, c : int, optional
            Grid parameters; defaults depend on the row count and ``eps`` per pair only.
        nulls : {"raise", "fill", "drop"}
            ``"raise"`` refuses (nothing charged) if a selected column has missing
            values; ``"fill"`` replaces them by ``fill[column]``, a public value;
            ``"drop"`` drops every row with a missing value in any selected column
            (listwise) and needs ``min_rows``.
        fill : dict {column: value}, optional
        privacy_unit : str or list of str, optional
            The column(s) that identify one unit (a customer, a patient). Given with
            ``max_rows_per_unit = k``, the guarantee protects all rows of one unit:
            at most ``k`` rows per unit are kept (chosen by a keyed hash with a fresh
            secret key), a private row count takes 5% of the budget, and every
            sensitivity is for adding or removing one unit (docs/privacy.md, "Privacy
            per unit"). The unit columns are never released. Default: one row.
        max_rows_per_unit : int, optional
            ``k`` above (see :func:`dpmic_dask.contribution_bound` to choose it).
        min_rows : int, optional
            With ``nulls="drop"``: a public minimum of the rows left (chosen without
            looking at the data). Noise is calibrated to it; fewer rows left is
            refused before any charge.
        categories : dict {column: [public categories]}, optional
            Categorical columns (strings, ``category``, objects, or integers) and
            their public category lists; values outside a list fall into one
            "other" bin, and ``nulls="category"`` keeps nulls as a category of their
            own. A categorical column needs no bounds; its pairs' MIC has a
            categorical axis (docs/statistics.md) and its Kendall's tau is NaN
            (undefined for unordered categories). Categories inferred from the data
            (a ``category`` dtype's own) are never used: a string or ``category``
            column without a list is refused before anything is read.
        bounds_check : "auto", float in (0, 1), or None
            Check the public bounds privately with this share of ``eps`` (e.g.
            0.05; the rest goes to the release, one charge): a noisy 16-bin
            histogram of each numeric or time column over its bounds. Bounds far
            wider than the values (99% of rows in at most a quarter of the range,
            or every row in an edge bin) are reported with a
            :class:`~dpmic_dask.errors.BoundsWarning` and in ``report()``, with
            tighter bounds to consider; ``result.bounds_check`` holds the released
            histograms. Default ``"auto"``: at row level, a check with 2% of the
            budget where the public row count is large enough for it to speak
            (``report()`` says which); per unit, off. ``None``: off.
        kinds : dict {column: kind}, optional
            The kind of a column whose dtype does not say it, e.g. ``{"ts":
            "timestamp"}`` for strings, ``{"ts": ("timestamp", "s")}`` (or ``{"ts":
            {"kind": "timestamp", "unit": "s"}}``) for epoch numbers, which need
            their unit: a numeric column cast to a time kind without one is refused
            before anything is read or charged (:mod:`dpmic_dask.stats.kinds`: times
            are seconds since the epoch, UTC).
        ledger, dataset : where the one budget charge is recorded (a ledger object, or a
            ledger URL such as ``"sqlite:///ledger.db"``).
        split_every, task_memory, progress : optional overrides of the engine's knobs
            for this call; default (``None``): :mod:`dpmic_dask.config`, set once with
            ``dpmic_dask.config.set(task_memory=..., split_every=..., progress=...)``.
            ``split_every`` is the fan-in of the tree reduction of partition counts
            (default 8); ``task_memory`` the public memory budget in bytes (or a size
            such as ``"512 MiB"``) for the counts one task holds (default 256 MiB):
            pairs are counted in blocks that fit it, so memory does not grow with the
            number of pairs; ``progress`` shows a progress bar (default: only on an
            interactive terminal).
        label : str, optional
            A name recorded with the ledger charge (e.g. the job's name).
        statistics : ("mic",) or ("mic", "tau_a")
            ``("mic", "tau_a")`` (older spelling ``"tau"``) also releases the binned
            Kendall's tau-a of every pair (signed:
            direction and monotonicity), counted in the same pass; the budget is
            split equally between the two statistics. The result then has ``tau``
            and ``to_pandas()`` columns ``tau``, ``tau_ci95`` and ``nonlinearity``.

        Returns
        -------
        PairwiseResult
            Plain numbers: calling ``pairwise`` again is a new release, charged again.

        Examples
        --------
        >>> import numpy as np, pandas as pd, dask.dataframe as dd
        >>> import dpmic_dask
        >>> gen = np.random.default_rng(0)  # example data
        >>> age = gen.uniform(18, 90, 10_000)
        >>> df = pd.DataFrame({"age": age, "income": 1_000 * age + gen.normal(0, 5_000, 10_000)})
        >>> ddf = dd.from_pandas(df, npartitions=2)
        >>> res = ddf.dpmic.pairwise(eps=1.0, bounds={"age": (0, 100), "income": (0, 2e5)})
        >>> res.to_pandas()[["x", "y", "mechanism", "n"]]
             x       y mechanism      n
        0  age  income  micr-lap  10000
        >>> 0.0 <= res.values[0] <= 1.0
        True
        """
        return self._release(eps, ledger=ledger, dataset=dataset, progress=progress,
                             mechanism=mechanism, **_release_arguments(locals()))

    def _release(self, eps, *, ledger, dataset, progress, **arguments):
        """Plan the release from the arguments and the frame's schema, then run it."""
        check_ledger(ledger)
        return self._plan(eps, **arguments).release(ledger=ledger, dataset=dataset,
                                                    progress=progress)

    def _plan(self, eps, **arguments) -> Plan:
        statistics = arguments.get("statistics", ("mic",))
        for old in deprecated_spellings(statistics) if check_statistics(statistics) else ():
            warnings.warn(deprecation_message(old), FutureWarning, stacklevel=user_stacklevel())
        known = len(self._frame) if isinstance(self._frame, pd.DataFrame) else None
        return Plan(self._frame, plan_unit_release(self._schema(), eps, **arguments), known)

    def plan(self, eps, *, bounds, columns=None, delta=0.0, mechanism="auto", B=None, c=None,
             nulls="raise", fill=None, split_every=None, label=None,
             task_memory=None, statistics=("mic",), bounds_share=None,
             coverage=0.99, domain=None, kinds=None, min_rows=None, privacy_unit=None,
             max_rows_per_unit=None, categories=None, refine=True, bounds_check="auto",
             top_k=None, threshold=None, max_pairs=None, select_share=0.5, screen_B="auto"):
        """Plan a release without reading or charging anything.

        Takes :meth:`pairwise`'s arguments (and ``top_k``, or ``threshold`` with
        ``max_pairs``, for :meth:`top_pairs` / :meth:`pairs_above`'s private
        selection, with ``select_share`` and ``screen_B``); reads the frame's
        schema only. Returns a :class:`~dpmic_dask.release.public_plan.Plan`:
        ``plan.explain()`` prints the steps, each one's part of the budget, each
        column's kind and where its bounds and categories come from, and the noise
        each value will get; ``plan.cost`` is the one charge;
        ``plan.release(ledger=..., dataset=...)`` runs it (every call a new,
        charged release). ``pairwise(eps, ...)`` is ``plan(eps, ...).release()``.

        >>> import numpy as np, pandas as pd
        >>> import dpmic_dask
        >>> gen = np.random.default_rng(0)
        >>> df = pd.DataFrame({"age": gen.uniform(18, 90, 5_000)})
        >>> df["income"] = 1_000 * df["age"] + gen.normal(0, 5_000, 5_000)
        >>> plan = df.dpmic.plan(1.0, bounds={"age": (0, 100), "income": (0, 2e5)})
        >>> plan.cost.epsilon
        1.0
        >>> plan.steps
        ('values',)
        """
        select = None
        if top_k is not None and threshold is not None:
            raise InvalidParameterError("give top_k or threshold (with max_pairs), not both")
        if top_k is not None:
            select = {"rule": "top-k", "k": top_k, "share": select_share, "screen_B": screen_B}
        elif threshold is not None:
            select = {"rule": "above", "threshold": threshold, "max_pairs": max_pairs,
                      "share": select_share, "screen_B": screen_B}
        elif max_pairs is not None:
            raise InvalidParameterError("max_pairs goes with threshold")
        arguments = _release_arguments(locals())
        return self._plan(eps, mechanism=mechanism, **arguments,
                          **({"select": select} if select is not None else {}))

    def top_pairs(self, k, eps, *, bounds, columns=None, delta=0.0, select_share=0.5,
                  screen_B="auto", B=None, c=None, nulls="raise", fill=None, ledger=None,
                  dataset=None, split_every=None, progress=None,
                  label=None, task_memory=None, statistics=("mic",),
                  bounds_share=None, coverage=0.99, domain=None, kinds=None, min_rows=None,
                 privacy_unit=None, max_rows_per_unit=None, categories=None, refine=True,
                 bounds_check="auto"):
        """Privately choose the ``k`` most related pairs, then release their values.

        The budget does not grow with the number of pairs: the noisy top-``k``
        selection costs the same for 10 or 44,850 candidates. ``select_share`` of
        the budget chooses the pairs (OpenDP's exact noisy top-k over every pair's
        MICr, whose L-infinity sensitivity is MICr's), the rest releases the chosen
        pairs' values with fresh noise. One ledger charge covers both.

        Parameters
        ----------
        k : int >= 1
            How many pairs to choose (all pairs if there are fewer).
        eps, delta : float
            The total budget. ``delta = 0``: pure DP (exponential-noise
            selection, Laplace release). ``delta > 0``: zCDP (Gumbel selection,
            Gaussian release), rhos adding up to ``rho(eps, delta)``.
        select_share : float in (0, 1)
            Fraction of the budget (of ``eps``, or of ``rho``) spent on choosing.
        screen_B : "auto", int or None
            Score the candidates on a smaller grid, then count the chosen pairs
            again at ``B`` for the release (the MICr sensitivity does not depend on
            the grid). ``"auto"`` (default): ``B = 40`` when the release's ``B`` is
            larger (or the least ``B`` from 40 whose grids hold every category
            list) -- in ``benchmarks/selection.py`` it chose the same pairs 5-10x
            faster; ``None``: score at the release's ``B``. MICr on a coarser grid
            is lower (by up to about 0.06 for a sine at ``B = 40`` against 198):
            the report names the grid the scores came from.
        bounds, columns, B, c, nulls, fill, min_rows, kinds
            As for :meth:`pairwise`.
        ledger, dataset, split_every, progress, label, task_memory
            As for :meth:`pairwise`.
        statistics : ("mic",) or ("mic", "tau_a")
            Also release Kendall's tau of the chosen pairs (the release part split
            equally); pairs are always chosen by MICr.
        bounds_share, coverage, domain, refine : with private bounds
            (``PrivateBounds`` or ``"private"``), as for :meth:`pairwise` (the bounds
            first, then the selection and release).
        bounds_check : as for :meth:`pairwise` (the check first, then the selection
            and release).

        Returns
        -------
        PairwiseResult
            The chosen pairs in selection order (strongest first) and their private
            values; ``report()`` and ``privacy`` state the selection and both parts.
        """
        return self._release(
            eps, ledger=ledger, dataset=dataset, progress=progress,
            select={"rule": "top-k", "k": k, "share": select_share, "screen_B": screen_B},
            **_release_arguments(locals()))

    def pairs_above(self, threshold, eps, *, bounds, max_pairs, columns=None, delta=0.0,
                    select_share=0.5, screen_B="auto", B=None, c=None, nulls="raise",
                    fill=None, ledger=None, dataset=None,
                    split_every=None, progress=None, label=None,
                    task_memory=None, statistics=("mic",),
                    bounds_share=None, coverage=0.99, domain=None, kinds=None, min_rows=None,
                 privacy_unit=None, max_rows_per_unit=None, categories=None, refine=True,
                 bounds_check="auto"):
        """Privately find pairs whose MICr exceeds a public ``threshold``, then release
        their values.

        The sparse vector technique (AboveThreshold, non-monotone variant) scans the
        pairs in their public order and stops after ``max_pairs`` positive answers;
        its cost depends on ``max_pairs``, not on the number of pairs. Answers near
        the threshold are noisy both ways. ``select_share`` of the budget goes to the
        scan, the rest to the values of the pairs found (fresh noise, calibrated to
        how many were found). One ledger charge covers both, and it is the whole
        ``eps`` (and ``delta``) whatever passes: when no pair passes, nothing is
        released and the release's share is charged all the same (the charge is made
        before the outcome is known; the report and the ledger say so).

        Parameters
        ----------
        threshold : float in [0, 1]
            Public MICr threshold (choose it before looking at the data), compared
            with MICr on the screening grid (``screen_B``; ``None`` compares it
            with MICr at the release's ``B``).
        max_pairs : int >= 1
            Stop after this many pairs above the threshold.
        eps, delta, select_share, screen_B, bounds, ... : as for :meth:`top_pairs`.
        """
        return self._release(
            eps, ledger=ledger, dataset=dataset, progress=progress,
            select={"rule": "above", "threshold": threshold, "max_pairs": max_pairs,
                    "share": select_share, "screen_B": screen_B},
            **_release_arguments(locals()))

    def causal_graph(self, eps, **arguments):
        """Release a differentially private causal graph (CPDAG) of the frame, once.

        ``frame.dpmic.causal_graph(eps, bounds=..., categories=..., ...)`` is
        :func:`dpmic_dask.causal.causal_graph` on this frame: the same keyword
        arguments (``delta``, ``columns``, ``alpha``, ``max_condition_size``,
        ``bounds``, ``categories``, ``bins``, ``test``, ``select_share``,
        ``level_shares``, ``ledger``, ``dataset``, ``label``, ``split_every``,
        ``progress``), one charge of the whole budget, and a
        :class:`~dpmic_dask.causal.CausalGraph`. See ``docs/causal.md``.

        The search lives in the causal wing, which builds on this one; it provides
        the work when it is imported (``import dpmic_dask`` does that).
        """
        function = provided("causal_graph")
        if function is None:
            raise UnavailableError("causal discovery is not loaded; import dpmic_dask.causal")
        return function(self._frame, eps, **arguments)

    def pairwise_nonprivate(self, *, bounds, B, c, columns=None, nulls="raise", fill=None,
                            split_every=None, progress=None,
                            task_memory=None, kinds=None,
                            categories=None):
        """Exact, NON-PRIVATE MICr of every pair (for data that is not sensitive).

        Gives, pair by pair, exactly :func:`dpmic_dask.micr` on the same columns
        (in axis values: :mod:`dpmic_dask.stats.kinds`). ``nulls="drop"`` drops rows
        with a missing value listwise. Returns a pandas DataFrame with columns
        ``x, y, micr, n, B, c``. ``categories`` as for :meth:`pairwise` (public
        lists): those columns' pairs get the categorical statistic, exactly.
        """
        kinds, columns, nulls, axes = category_kinds(
            self._schema(), categories, bounds=bounds, columns=columns, kinds=kinds,
            nulls=nulls, fill=fill)
        axis = axis_arguments(self._schema(), bounds=bounds, columns=columns, fill=fill,
                              kinds=kinds)
        bounds, fill = axis.bounds, axis.fill
        frame = axis_frame(self._frame, axis.kinds,
                           drop=list(axis.kinds) if nulls == "drop" else None)
        nulls = "raise" if nulls == "drop" else nulls
        return run_pairwise_nonprivate(
            frame, bounds=bounds, B=B, c=c, columns=columns, nulls=nulls, fill=fill,
            split_every=split_every, progress=progress, task_memory=task_memory,
            categories=axes,
        )


install_accessor("dpmic", DPMICAccessor)  # on every backend's frame type, later ones too
