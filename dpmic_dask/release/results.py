"""Result objects of private releases. They hold numbers only; nothing here can
draw noise again."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from dpmic_dask.privacy.costs import PrivacyCost

#: A release whose values' ``ci95`` exceeds this warns (:class:`~dpmic_dask.errors.NoiseWarning`)
#: before the charge, from public quantities, and after, with how many values are
#: within their noise.
NOISY_CI95 = 0.25
#: A public domain whose released bounds use less than this share of it is
#: reported as far wider than the data.
WIDE_DOMAIN = 0.25


def output_name(statistic: str) -> str:
    """The column a released statistic is written under: the statistic's label
    (``tau`` -> ``tau_a``: the binned Kendall tau is a tau-a)."""
    from dpmic_dask.stats.statistics.registry import get_statistic

    return get_statistic(statistic).label


def _notice(message: str, category) -> None:
    """Warn as the filters say (an ignored notice stays ignored), except that a
    warnings-as-errors filter only shows it: it must never refuse a release."""
    try:
        warnings.warn(message, category, stacklevel=4)
    except category:
        with warnings.catch_warnings():
            warnings.simplefilter("always", category)
            warnings.warn(message, category, stacklevel=4)


def warn_noise_before(ci95: float) -> None:
    """Before the charge: the noise of a planned release (public: ``N``, the grid,
    the budget), when its ``ci95`` exceeds :data:`NOISY_CI95`."""
    if ci95 == ci95 and ci95 > NOISY_CI95:
        from dpmic_dask.errors import NoiseWarning

        # never raised: the same plan check also runs inside a prepaid part, after
        # the charge, where nothing may refuse
        _notice(f"this release's noise is large: 95% of it lies within +/-{ci95:.3g} "
                f"per value (above {NOISY_CI95}); values inside it are flagged "
                "within_noise. More rows, a larger eps or fewer pairs narrow it",
                NoiseWarning)


def warn_noise_after(values, ci95: float) -> None:
    """After the release: how many released values lie inside their own ``ci95`` of 0
    (post-processing of released values), when ``ci95`` exceeds :data:`NOISY_CI95`."""
    if ci95 == ci95 and ci95 > NOISY_CI95:
        from dpmic_dask.errors import NoiseWarning

        inside = int(np.sum(np.abs(np.asarray(values, dtype=float)) <= ci95))
        # after the charge nothing may refuse: never raised
        _notice(f"{inside} of {len(values)} released values are within their noise "
                f"(|value| <= ci95 = {ci95:.3g}): read them as indistinguishable from 0",
                NoiseWarning)


#: Above this many columns the heatmap drops per-cell text and orders the columns
#: so that related ones sit together.
TEXT_LIMIT = 25


def spectral_order(matrix: np.ndarray) -> np.ndarray:
    """Column order that places strongly related columns next to each other: the
    Fiedler vector of the graph whose weights are the released values (NaN as 0)."""
    weights = np.nan_to_num(np.asarray(matrix, dtype=float), nan=0.0)
    weights = (weights + weights.T) / 2.0
    np.fill_diagonal(weights, 0.0)
    laplacian = np.diag(weights.sum(axis=1)) - weights
    _, vectors = np.linalg.eigh(laplacian)
    fiedler = vectors[:, 1] if vectors.shape[1] > 1 else vectors[:, 0]
    return np.argsort(fiedler, kind="stable")


@dataclass(frozen=True)
class PrivacyReport:
    """How a release was produced and what it guarantees (shared by every result).

    Attributes
    ----------
    mechanism : str
        Public name of the release (``micr-lap``, ``micr-gauss``, ``mice-lap``,
        ``micr-geom``); ``statistic`` the statistic released (``micr``, ``mice``).
    epsilon, delta : float
        Total privacy cost of the whole release (``delta = 0`` for pure DP);
        ``rho`` the zCDP cost of Gaussian releases, else ``None``.
    noise_scale : float
        Laplace scale ``b`` or Gaussian ``sigma`` per value; for ``micr-geom`` the
        per-cell geometric scale on counts.
    ci95 : float
        Half-width of the central 95% interval of the noise alone (``b ln 20`` or
        ``1.96 sigma``); NaN for ``micr-geom``. It says how far noise alone moves a
        value, not how far the statistic is from the population's.
    sensitivity : float
        Replace-one sensitivity of one value, to which the noise was calibrated.
    n, B, c : the (public) number of rows and the grid parameters.
    charge_id : str
        The ledger charge paid before the noise was drawn.
    seeded : bool
        True only inside the test helper ``seeded_noise``: such values are NOT private.
    statement : str
        The privacy guarantee in words.
    released, candidates : int
        How many values were published, out of how many pairs considered.
    selection : str
        How the published pairs were chosen ("all pairs", "top 10 by MICr, ...").
    parts : str
        For releases that select pairs first: how the total was split between
        the selection and the release of the chosen values ("" otherwise).
    release_cost : PrivacyCost or None
        The release part's cost when pairs were selected first (what the values
        themselves cost); ``None`` when the whole budget went to the values.
    """

    mechanism: str
    statistic: str
    epsilon: float
    delta: float
    rho: float | None
    noise_scale: float
    ci95: float
    sensitivity: float
    n: int
    B: float
    c: int
    charge_id: str
    seeded: bool
    statement: str
    released: int = 1
    candidates: int = 1
    selection: str = "all pairs"
    parts: str = ""
    release_cost: PrivacyCost | None = None
    #: The privacy unit (``None``: one row, the default), at most how many rows of
    #: each unit were used, and (per unit) the released row count and its lower
    #: confidence bound ``n0`` that the noise was calibrated to.
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None
    rows_lower_bound: int | None = None
    rows_noisy: int | None = None

    def unit_line(self) -> str:
        """The privacy unit in words (the row-level default stated as such)."""
        if self.privacy_unit is None:
            return ("Privacy unit: one row (the default; a person with several rows is "
                    "protected only per row).")
        return (f"Privacy unit: per {self.privacy_unit}, at most {self.max_rows_per_unit} "
                f"rows each (noisy row count {self.rows_noisy}, noise calibrated to its "
                f"lower bound n0 = {self.rows_lower_bound}).")

    def budget_line(self) -> str:
        if self.parts:
            total = (f"epsilon = {self.epsilon:g}" if self.rho is None else
                     f"epsilon = {self.epsilon:g}, delta = {self.delta:g} (rho = "
                     f"{self.rho:.4g} zCDP)")
            return f"Budget: {total} in total; {self.parts}."
        per = "pair" if self.released != 1 else "value"
        if self.rho is None:
            return (f"Budget: epsilon = {self.epsilon:g} in total, "
                    f"{self.epsilon / self.released:.4g} per {per}.")
        return (f"Budget: epsilon = {self.epsilon:g}, delta = {self.delta:g} in total, "
                f"accounted as rho = {self.rho:.4g} zCDP ({self.rho / self.released:.4g} "
                f"per {per}).")

    def noise_line(self) -> str:
        if self.ci95 == self.ci95:  # not NaN
            large = (f" That is above {NOISY_CI95}: values inside it are flagged "
                     "within_noise (indistinguishable from 0)." if self.ci95 > NOISY_CI95 else "")
            return (f"Noise: scale {self.noise_scale:.4g} per value; 95% of the noise alone "
                    f"lies within +/-{self.ci95:.4g}. This interval does not include the "
                    f"statistic's own estimation error.{large}")
        return (f"Noise: two-sided geometric noise of scale {self.noise_scale:.4g} on every "
                "master-grid count.")

    def lines(self) -> list[str]:
        """Budget, noise, guarantee and charge, one line each."""
        return [self.budget_line(), self.noise_line(), self.statement, self.unit_line(),
                f"Ledger charge: {self.charge_id}."]


class _ReportFields:
    """Read the privacy report's fields from the result (``result.epsilon``, ...)."""

    privacy: PrivacyReport

    def __getattr__(self, name):
        if name != "privacy" and name in PrivacyReport.__dataclass_fields__:
            return getattr(self.privacy, name)
        raise AttributeError(name)


@dataclass(frozen=True)
class Release(_ReportFields):
    """One differentially private value and how it was produced.

    ``value`` is the released estimate, clamped to ``[0, 1]``; everything else
    (``mechanism``, ``epsilon``, ``ci95``, ...) is in ``privacy`` and readable on
    the release itself.
    """

    value: float
    privacy: PrivacyReport

    def report(self) -> str:
        """Plain-text account of what was released and what it guarantees."""
        p = self.privacy
        lines = [f"MIC estimate: {self.value:.4f} ({p.mechanism}, n={p.n}, B={p.B:g}, c={p.c})"]
        lines += p.lines()
        if p.seeded:
            lines.insert(0, "NOT PRIVATE: this value used seeded test noise.")
        return "\n".join(lines)


@dataclass(frozen=True)
class BoundsRelease:
    """Bounds estimated with differential privacy: plain numbers to keep and reuse as
    public bounds (``bounds[column] = (lo, hi)``), and how they were made.

    ``epsilon`` was spent in total (``epsilon_per_column`` on each column's two
    noisy histograms: ``first_pass_share`` of it on the first pass, discrete
    Laplace of scale ``noise_scale`` counts, the rest on the refining pass, scale
    ``refine_noise_scale``); ``coverage`` is the share of values the bounds aim to
    contain (a dict by column when columns differ); ``domain`` the public domain
    grids by column (``None``: the half-octave grid for all); ``refined`` lists the
    columns whose bounds come from the refining pass; ``unresolved`` the columns
    where no bin stood out of the noise (their bounds are the fallback, with a
    :class:`~dpmic_dask.errors.BoundsWarning`).
    """

    bounds: dict
    epsilon: float
    epsilon_per_column: float
    coverage: float | dict
    noise_scale: float
    rows: int
    domain: dict | tuple | None
    unresolved: tuple
    charge_id: str
    seeded: bool = False
    refined: tuple = ()
    refine_noise_scale: float | None = None
    first_pass_share: float | None = None
    #: Columns with a public ``domain``: the share of its width the released bounds
    #: use (post-processing of released values); below :data:`WIDE_DOMAIN` the
    #: domain is far wider than the data.
    domain_use: dict = field(default_factory=dict)
    #: Each column's kind (:mod:`dpmic_dask.stats.kinds`), for printing its bounds
    #: in that kind (dates, times); ``bounds`` themselves are axis numbers.
    kinds: dict = field(default_factory=dict)
    #: Privacy per unit (``docs/privacy.md`` section 12): the unit and ``k``; then
    #: ``rows`` is not the exact row count (``None``, or inside a release the
    #: private lower bound ``n0``).
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None

    def formatted(self, column) -> str:
        """``[lo, hi]`` of ``column`` in the column's own kind."""
        from dpmic_dask.stats.kinds import format_bounds

        return format_bounds(self.kinds.get(column), self.bounds[column])

    def pinned(self, column) -> tuple:
        """``column``'s bounds as public bounds in its own kind: numbers, or full-
        precision ISO texts for times and durations."""
        kind = self.kinds.get(column)
        out = []
        for number in self.bounds[column]:
            value = kind.format(number) if kind is not None else float(number)
            out.append(float(value) if isinstance(value, (int, float)) else
                       value.isoformat() if hasattr(value, "isoformat") else str(value))
        return tuple(out)

    def pin(self) -> str:
        """Job-file lines that pin these bounds as public for the next run (which
        then stops paying for them); unresolved columns are left out."""
        def toml(v) -> str:
            return repr(v) if isinstance(v, float) else f'"{v}"'

        return "\n".join(f"columns.{name}.bounds = [{toml(lo)}, {toml(hi)}]"
                         for name in self.bounds if name not in self.unresolved
                         for lo, hi in [self.pinned(name)])

    def report(self) -> str:
        lines = ["NOT PRIVATE: seeded test noise."] if self.seeded else []
        aim = (f"{self.coverage:.3g}" if not isinstance(self.coverage, dict) else
               ", ".join(f"{c} {v:.3g}" for c, v in self.coverage.items()))
        if self.privacy_unit is not None:
            lines.append(f"Privacy unit: per {self.privacy_unit}, at most "
                         f"{self.max_rows_per_unit} rows each (neighbouring tables differ by "
                         f"all rows of one {self.privacy_unit}).")
        n = ("n not released" if self.rows is None else f"n = {self.rows} rows"
             + (" (a private lower bound)" if self.privacy_unit is not None else ""))
        lines.append(f"Private bounds of {len(self.bounds)} column(s), {n}, "
                     f"aiming to contain {aim} of each column's values:")
        for name in self.bounds:
            how = (" (unresolved: fallback)" if name in self.unresolved else
                   " (refined)" if name in self.refined else "")
            lines.append(f"  {name}: {self.formatted(name)}{how}")
        if self.domain is None:
            grid = "signed half-octave grid"
        elif isinstance(self.domain, dict):
            grid = ("1024 equal bins of the public domain of " + ", ".join(self.domain)
                    + (", else the signed half-octave grid"
                       if len(self.domain) < len(self.bounds) else ""))
        else:
            grid = f"1024 equal bins of {self.domain}"
        passes = ""
        if self.refine_noise_scale is not None and self.first_pass_share is not None:
            passes = (f"; {self.first_pass_share:g} of it on the first pass, the rest on a "
                      f"refining pass of 1024 equal bins inside the first bounds, noise scale "
                      f"{self.refine_noise_scale:.4g} counts, used for "
                      f"{list(self.refined) if self.refined else 'no column'}")
        lines.append(f"Budget: epsilon = {self.epsilon:g} ({self.epsilon_per_column:.4g} per "
                     f"column; noisy histograms on a {grid}, noise scale "
                     f"{self.noise_scale:.4g} counts{passes}). Ledger charge: "
                     f"{self.charge_id}.")
        wide = {c: u for c, u in self.domain_use.items()
                if u < WIDE_DOMAIN and c not in self.unresolved}
        if wide:
            lines.append("Public domains far wider than the data (the released bounds use "
                         + ", ".join(f"{c} {u:.1%}" for c, u in wide.items())
                         + " of them): bounds that wide waste the grid; use the released "
                         "bounds or tighter public ones.")
        if self.unresolved:
            lines.append(f"Unresolved: no bin stood out of the noise for "
                         f"{list(self.unresolved)}; fallback bounds used: choose bounds for "
                         "them yourself, or spend more on them.")
        pinned = [c for c in self.bounds if c not in self.unresolved]
        if pinned:
            lines.append("To reuse them as public bounds (and stop paying for them), pin them: "
                         "bounds={" + ", ".join(f"{c!r}: {self.pinned(c)!r}" for c in pinned)
                         + "}, or in a job file columns.<name>.bounds = [lo, hi].")
        return "\n".join(lines)


@dataclass(frozen=True)
class Companion:
    """A further statistic released beside MIC for the same pairs (same order), with
    its own share of the budget: ``values``, the mechanism, the noise per value and
    the half-width of the noise's central 95% interval."""

    statistic: str
    mechanism: str
    values: tuple
    noise_scale: float
    ci95: float
    sensitivity: float
    cost: PrivacyCost


@dataclass(frozen=True)
class PairwiseResult(_ReportFields):
    """Private values of pairs of columns, released together once.

    All published pairs share one noise plan (``privacy``): the same mechanism,
    noise scale and interval; ``epsilon`` and ``delta`` are the total cost of the
    whole release. Report fields are readable on the result itself.
    """

    columns: tuple
    pairs: tuple
    values: tuple
    privacy: PrivacyReport
    companions: tuple = ()
    private_bounds: BoundsRelease | None = None
    #: Privately chosen categories (column -> the kept candidates, in candidate
    #: order): public from now on, to reuse as the columns' lists.
    private_categories: dict | None = None

    def companion(self, statistic: str) -> Companion:
        """The released companion statistic called ``statistic`` (e.g. ``"tau"``)."""
        from dpmic_dask.stats.statistics.registry import public_statistics

        statistic = public_statistics().get(statistic, statistic)
        for item in self.companions:
            if item.statistic == statistic:
                return item
        raise KeyError(f"this release has no {statistic!r}; pass statistics=('mic', "
                       f"'{statistic}')")

    @property
    def tau(self) -> tuple:
        """Private binned Kendall's tau-a of each pair (with ``statistics=("mic", "tau")``)."""
        return self.companion("tau").values

    @property
    def tau_a(self) -> tuple:
        """The same as :attr:`tau`, by its precise name."""
        return self.tau

    def to_pandas(self):
        """Tidy table: one row per pair.

        Columns: ``x, y, mic, ci95, noise_scale, mechanism, statistic``; ``release_epsilon``
        and ``release_delta``, the total cost of the whole release (every row repeats
        it); ``value_cost`` and ``cost_unit``, what each released value cost
        (``epsilon / P`` for pure releases, ``rho / P`` zCDP for Gaussian ones; after
        a private selection, the release part only, over the pairs released; with
        companion statistics, MIC's share); ``n, B, c``; ``within_noise``, whether the
        value lies inside its own ``ci95`` of 0 (``|mic| <= ci95``). With Kendall's tau
        (asked for as ``"tau"``): ``tau_a``, ``tau_a_ci95``, ``tau_a_noise_scale``,
        ``tau_a_within_noise`` and ``nonlinearity = mic - tau_a**2``, computed from the
        released values only (large when the pair is related but not monotonically).
        The binned tau is a tau-a: ties count in its denominator, so on columns with
        many ties (binary ones) it is smaller in size than ``scipy.stats.kendalltau``'s
        tau-b (docs/statistics.md).
        """
        import pandas as pd

        from dpmic_dask.privacy.accounting import value_cost

        p = self.privacy
        spent = p.release_cost or PrivacyCost(self.epsilon, self.delta, self.rho)
        cost, unit = value_cost(spent, max(1, len(self.pairs)))
        table = pd.DataFrame({
            "x": [a for a, _ in self.pairs],
            "y": [b for _, b in self.pairs],
            "mic": list(self.values),
            "ci95": p.ci95,
            "noise_scale": p.noise_scale,
            "mechanism": p.mechanism,
            "statistic": p.statistic,
            "release_epsilon": p.epsilon,
            "release_delta": p.delta,
            "value_cost": cost,
            "cost_unit": unit,
            "n": p.n,
            "B": p.B,
            "c": p.c,
        })
        if p.privacy_unit is not None:  # per unit: which unit, how many rows each
            table["privacy_unit"] = p.privacy_unit
            table["max_rows_per_unit"] = p.max_rows_per_unit
        # post-processing of released values: inside their own ci95 of 0
        table["within_noise"] = np.abs(table["mic"].to_numpy(dtype=float)) <= p.ci95
        for item in self.companions:
            name = output_name(item.statistic)
            table[name] = list(item.values)
            table[f"{name}_ci95"] = item.ci95
            table[f"{name}_noise_scale"] = item.noise_scale
            table[f"{name}_within_noise"] = (
                np.abs(np.asarray(item.values, dtype=float)) <= item.ci95)
        if any(item.statistic == "tau" for item in self.companions):
            # post-processing of released values: MIC beyond what a monotone trend explains
            table["nonlinearity"] = table["mic"] - table["tau_a"] ** 2
        return table

    def matrix(self, statistic: str = "mic"):
        """Symmetric DataFrame of released values (NaN on the diagonal: not released);
        ``statistic="tau"`` for the released Kendall's tau."""
        import pandas as pd

        values = self.values if statistic == "mic" else self.companion(statistic).values

        where = {name: k for k, name in enumerate(self.columns)}
        grid = np.full((len(self.columns), len(self.columns)), np.nan)
        if self.pairs:
            i = np.array([where[a] for a, _ in self.pairs])
            j = np.array([where[b] for _, b in self.pairs])
            grid[i, j] = values
            grid[j, i] = values
        return pd.DataFrame(grid, index=list(self.columns), columns=list(self.columns))

    def to_parquet(self, path) -> None:
        """Write the tidy table to a Parquet file."""
        self.to_pandas().to_parquet(path, index=False)

    def plot(self, ax=None, *, path=None, statistic: str = "mic"):
        """Heatmap of the released matrix (needs matplotlib: ``pip install dpmic_dask[plot]``).

        The noise is shown, not hidden: the title gives the 95% interval of the noise
        alone, and cells whose value lies within it (indistinguishable from no
        relationship at this budget) are hatched and their text greyed. Returns the
        matplotlib Axes; with ``path``, also saves the figure there.
        ``statistic="tau"`` draws the signed Kendall's tau (blue negative, red
        positive, on ``[-1, 1]``; within the noise means ``|tau|`` below it).
        """
        try:
            from matplotlib.figure import Figure
            from matplotlib.patches import Rectangle
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "plotting needs matplotlib: pip install 'dpmic_dask[plot]'"
            ) from exc
        signed = statistic != "mic"
        m = self.matrix(statistic)
        many = len(self.columns) > TEXT_LIMIT
        if many:  # group related columns: post-processing of released values only
            order = spectral_order(np.abs(m.to_numpy(dtype=float)))
            m = m.iloc[order, order]
        if ax is None:
            size = min(max(4.0, 0.6 * len(self.columns) + 2), 16.0)
            if path is None:  # interactive: a pyplot figure the notebook displays
                import matplotlib.pyplot as plt

                _, ax = plt.subplots(figsize=(size + 1, size))
            else:  # off-screen: no pyplot, no change to the session's backend
                ax = Figure(figsize=(size + 1, size)).subplots()
        values = m.to_numpy(dtype=float)
        image = ax.imshow(values, vmin=-1.0 if signed else 0.0, vmax=1.0,
                          cmap="RdBu_r" if signed else "viridis")
        tick_size = 8 if not many else max(2.0, 8 - len(self.columns) / 25)
        ax.set_xticks(range(len(m.columns)), list(m.columns), rotation=90 if many else 45,
                      ha="center" if many else "right", fontsize=tick_size)
        ax.set_yticks(range(len(m.index)), list(m.index), fontsize=tick_size)
        ci95 = self.companion(statistic).ci95 if signed else self.ci95
        noise = ci95 if ci95 == ci95 else None  # NaN for micr-geom
        if many:
            if noise is not None:  # one pale veil over every cell within the noise
                from matplotlib.colors import ListedColormap

                veil = np.where(np.abs(values) <= noise, 1.0, np.nan)
                ax.imshow(veil, vmin=0, vmax=1, cmap=ListedColormap(["white"]), alpha=0.65)
        else:
            for i in range(len(m.index)):
                for j in range(len(m.columns)):
                    v = m.iat[i, j]
                    if v != v:
                        continue
                    within_noise = noise is not None and abs(v) <= noise
                    if within_noise:
                        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False,
                                               hatch="///", edgecolor="0.6", linewidth=0))
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=8,
                            color="0.6" if within_noise else (
                                "black" if signed or v >= 0.6 else "white"),
                            style="italic" if within_noise else "normal")
        ax.figure.colorbar(image, ax=ax, label="private Kendall's tau" if signed
                           else "private MIC")
        mechanism = self.companion(statistic).mechanism if signed else self.mechanism
        title = f"{mechanism}, eps={self.epsilon:g} in total, n={self.n}" if signed else \
            f"{self.mechanism}, eps={self.epsilon:g}, n={self.n}"
        if noise is not None:
            marked = "paled" if many else "hatched"
            title += f"\nnoise alone: +/-{noise:.2g} (95%); {marked} cells lie within it"
        else:
            title += "\nnoise on every grid count (no interval for the value)"
        ax.set_title(title, fontsize=9)
        ax.figure.tight_layout()
        if path is not None:
            ax.figure.savefig(path, dpi=120)
        return ax

    def report(self) -> str:
        """Plain text: what was released and what it guarantees."""
        p = self.privacy
        pairs = len(self.pairs)
        lines = []
        if p.seeded:
            lines.append("NOT PRIVATE: these values used seeded test noise.")
        lines += [
            f"Released: private MIC for {pairs} pair{'s' if pairs != 1 else ''} of "
            f"{len(self.columns)} columns ({', '.join(map(str, self.columns))}), n = {p.n} rows.",
            f"Mechanism: {p.mechanism} (B = {p.B}, c = {p.c}).",
        ]
        if p.selection != "all pairs":
            lines.append(f"Selection: {p.selection} ({pairs} of {p.candidates} pairs).")
        if self.private_bounds is not None:
            used = ", ".join(f"{c} {self.private_bounds.formatted(c)}"
                             for c in self.private_bounds.bounds)
            lines.append(f"Private bounds used: {used}.")
            found = self.private_bounds
            wide = [c for c, u in found.domain_use.items()
                    if u < WIDE_DOMAIN and c not in found.unresolved]
            if wide:
                lines.append(f"The public domain of {wide} is far wider than the data (the "
                             f"released bounds use less than {WIDE_DOMAIN:.0%} of it).")
            if found.unresolved:
                lines.append(f"Unresolved bounds (fallback used): {list(found.unresolved)}.")
        if self.private_categories:
            chosen = "; ".join(f"{c}: {', '.join(map(str, kept)) or '(none)'}"
                               for c, kept in self.private_categories.items())
            lines.append(f"Categories chosen privately (public from now on; other values in "
                         f"'other'): {chosen}.")
        for item in self.companions:
            name = output_name(item.statistic)
            what = " (binned Kendall tau-a)" if name == "tau_a" else ""
            lines.append(f"Also released: {name}{what} ({item.mechanism}); noise scale "
                         f"{item.noise_scale:.4g} per value, 95% of the noise alone within "
                         f"+/-{item.ci95:.4g}.")
            undefined = sum(v != v for v in item.values)  # NaN: a categorical axis
            if undefined:
                lines.append(f"  {name} is undefined (NaN) for the {undefined} pair(s) with a "
                             "categorical column: unordered categories have no rank order.")
        lines += p.lines()
        return "\n".join(lines)
