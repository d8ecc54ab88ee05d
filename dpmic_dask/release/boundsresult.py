"""The result of a private bounds release (:class:`BoundsRelease`): the released
bounds of each column, how they were found, and how they compare with the public
domain. Numbers only; nothing here can draw noise again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.release.boundsspec import DEFAULT_SETTINGS
from dpmic_dask.release.htmlreport import bounds_view, write_page
from dpmic_dask.stats.kinds import format_bounds, format_value

#: A public domain whose released bounds use less than this share of it is
#: reported as far wider than the data.
WIDE_DOMAIN = 0.25
#: An end bin of a public domain's 1,024 (where every value beyond that end is
#: counted) holding at least this share of the first pass's noisy total -- and
#: more than the noise alone puts in any bin (``noise_threshold``) -- is said:
#: the column may run past its domain (``BoundsRelease.piled``). A smooth
#: column's end bin holds about 1/1,024 of it.
PILED_DOMAIN = 0.1
#: A refining pass whose largest bin holds at least ``ONE_BIN_SHARE`` of its noisy
#: total (the total at least ``ONE_BIN_SCALES`` noise scales), with released bounds
#: at most ``ONE_BIN_WIDTH`` of its bins wide, reads as a column about constant
#: (``BoundsRelease.one_bin``): its bounds are about that bin.
ONE_BIN_SHARE = 0.9
ONE_BIN_SCALES = 200
ONE_BIN_WIDTH = 16


#: What :meth:`BoundsRelease.note` may say of a column, by the field that flags it.
NOTE_FLAGS = (("unresolved", "unresolved, fallback bounds"),
              ("unseen", "may leave out a tail"),
              ("piled", "rows piled at an end of the domain"),
              ("infinite", "infinite values clamped"),
              ("one_bin", "about constant"),
              ("clamped_fills", "fill outside them, clamped"))
#: The longest note a column's bounds can have (every flag): an output table's
#: text column is probed with it before the charge.
LONGEST_NOTE = "private: " + "; ".join(words for _, words in NOTE_FLAGS)


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
    #: Columns whose bounds cannot vouch for their coverage: one bin beyond them
    #: holding up to this many rows (more than 3% of ``rows``, or three times the
    #: tail ``coverage`` leaves out) is not seen at this budget, so they may leave
    #: out a larger tail than ``coverage`` allows (``docs/privacy.md``); each with
    #: a warning and a line in the report.
    unseen: dict = field(default_factory=dict)
    #: Columns whose histogram's outermost bins (``-inf`` and ``+inf``, with any
    #: value past about ``3e307``) stood out of the noise: their noisy row count.
    #: No bound is read there; those values are clamped to the bounds (each with a
    #: warning and a line in the report).
    infinite: dict = field(default_factory=dict)
    #: Columns with a public ``domain`` whose first pass put at least
    #: :data:`PILED_DOMAIN` of its noisy total in an end bin of the domain, where
    #: every value beyond that end is counted (and, in the release, clamped): the
    #: side (``"lower"`` or ``"upper"``) and the share, each with a warning and a
    #: line in the report.
    piled: dict = field(default_factory=dict)
    #: In a release with ``nulls="fill"``: columns whose public fill value (an axis
    #: number) lies outside their released bounds, so every filled row is clamped
    #: to a bound (a warning and a line in the report).
    clamped_fills: dict = field(default_factory=dict)
    #: Columns whose refining pass put most of its noisy total in one of its bins
    #: and whose released bounds are about that bin (:data:`ONE_BIN_SHARE`,
    #: :data:`ONE_BIN_WIDTH`): the share. The column is about constant; its pairs'
    #: MIC is near 0 (a warning and a line in the report).
    one_bin: dict = field(default_factory=dict)

    def one_bin_note(self) -> str:
        """The report's sentence about :attr:`one_bin` columns, or ``""``."""
        said = self._each(self.one_bin, lambda c, share: f"{min(share, 1.0):.0%} in "
                                                          f"{self.formatted(c)}")
        return "" if not said else (
            f"About constant: the refining pass of the private bounds puts most rows of "
            f"{list(self.one_bin)} in one of its bins ({said}): most of such a column's "
            "values are one value, which caps what its pairs' MIC can show (about 0 for a "
            "constant column).")

    @staticmethod
    def _each(found: dict, words) -> str:
        """``"column words, column words"`` for each column of ``found``."""
        return ", ".join(f"{c} {words(c, v)}" for c, v in found.items())

    def fill_note(self) -> str:
        """The report's sentence about :attr:`clamped_fills`, or ``""``."""
        if not self.clamped_fills:
            return ""
        said = self._each(self.clamped_fills, lambda c, v: f"{format_value(self.kinds.get(c), v)} "
                                                           f"outside {self.formatted(c)}")
        return (f"Fill values outside their released bounds, so every filled row is clamped "
                f"to the nearer bound: {said}. Give a fill inside the column's range, or "
                "bounds or a domain that hold it.")

    def wide_columns(self) -> list:
        """Columns whose released bounds use less than :data:`WIDE_DOMAIN` of their
        public domain (not unresolved, and not piled at an end of it: there the
        domain is too narrow, not too wide)."""
        return [c for c, u in self.domain_use.items()
                if u < WIDE_DOMAIN and c not in self.unresolved and c not in self.piled]

    def piled_note(self) -> str:
        """The report's sentence about :attr:`piled` columns, or ``""``."""
        if not self.piled:
            return ""
        said = []
        for column, (side, share) in self.piled.items():
            lo, hi = self.formatted_domain(column)
            said.append(f"{column} {min(share, 1.0):.0%} at its {side} end "
                        f"{lo if side == 'lower' else hi}")
        return ("Rows piled at an end of a public domain (every value beyond the end is "
                "counted there, and clamped to it in the release): " + ", ".join(said)
                + ". If a column runs past its domain, the bounds stop at the domain's end and "
                "its pairs' MIC is lower than bounds that hold it would give: widen the "
                "domain.")

    def formatted_domain(self, column) -> tuple:
        """The public domain of ``column`` in its kind (dates, times, numbers)."""
        domain = self.domain[column] if isinstance(self.domain, dict) else self.domain
        assert domain is not None  # only columns with a domain pile at its end
        kind = self.kinds.get(column)
        return format_value(kind, domain[0]), format_value(kind, domain[1])

    def infinite_note(self) -> str:
        """The report's sentence about :attr:`infinite` columns, or ``""``."""
        if not self.infinite:
            return ""
        said = ", ".join(f"{c} about {v:,.0f}" for c, v in self.infinite.items())
        return (f"Infinite values (or beyond +-3e307), clamped to the bounds: {said} rows "
                "(noisy counts); the bounds are read off the finite values.")

    def tail_note(self) -> str:
        """The report's sentence about :attr:`unseen` columns, or ``""``."""
        if not self.unseen:
            return ""
        most = max(self.unseen.values())
        share = f" ({most / self.rows:.0%} of the rows)" if self.rows else ""
        return (f"Bounds that may leave out more of their values than their coverage "
                f"allows: {list(self.unseen)} (at this budget one bin beyond them holding up "
                f"to about {most:,.0f} rows{share} is not seen; spend more on the bounds or "
                "give public ones).")

    def formatted(self, column) -> str:
        """``[lo, hi]`` of ``column`` in the column's own kind."""
        return format_bounds(self.kinds.get(column), self.bounds[column])

    def settings(self, column) -> str:
        """``column``'s settings that are not the defaults, in words (``" (coverage
        0.95, public domain [0, 1e+06])"``), or ``""``."""
        default = DEFAULT_SETTINGS["coverage"]
        coverage = (self.coverage.get(column, default) if isinstance(self.coverage, dict)
                    else self.coverage)
        said = [f"coverage {coverage:g}"] if coverage != default else []
        domain = self.domain.get(column) if isinstance(self.domain, dict) else self.domain
        if domain is not None:
            said.append(f"public domain {format_bounds(self.kinds.get(column), domain)}")
        return f" ({', '.join(said)})" if said else ""

    def pinned(self, column) -> tuple:
        """``column``'s bounds as public bounds in its own kind: numbers, or full-
        precision ISO texts for times and durations."""
        kind = self.kinds.get(column)
        if kind is not None and getattr(kind, "date", False):
            kind = dataclasses.replace(kind, date=False)  # not whole days: the same grid
        out = []
        for number in self.bounds[column]:
            value = kind.format(number) if kind is not None else float(number)
            out.append(float(value) if isinstance(value, (int, float)) else
                       value.isoformat() if hasattr(value, "isoformat") else str(value))
        return tuple(out)

    def note(self, column) -> str:
        """``column``'s bounds in a word or a few, for a row of output: ``"private"``,
        or ``"private: "`` and what is wrong with them (unresolved, a tail that may
        be left out, rows piled at an end of the domain, clamped values or fill)."""
        said = [words for field_name, words in NOTE_FLAGS
                if column in getattr(self, field_name)]
        return "private" + (": " + "; ".join(said) if said else "")

    def pinnable(self) -> list:
        """The columns whose bounds are worth pinning as public: not unresolved,
        not :attr:`unseen` (bounds that may cut a tail are not worth keeping), not
        :attr:`piled` (they stop at the domain's end, which may be too narrow), and
        given back in a form their kind accepts as a public bound (a time past
        year 9999, or a duration past +-1e11 s, has none)."""
        out = []
        for name in self.bounds:
            if name in self.unresolved or name in self.unseen or name in self.piled \
                    or name in self.one_bin:  # about constant: no range worth keeping
                continue
            kind = self.kinds.get(name)
            try:
                if kind is not None:
                    for value in self.pinned(name):
                        kind.bound(value, f"bounds[{name!r}]")
            except InvalidParameterError:
                continue
            out.append(name)
        return out

    def pin(self) -> str:
        """Job-file lines that pin these bounds as public for the next run (which
        then stops paying for them), for the :meth:`pinnable` columns."""
        def toml(v) -> str:
            return repr(v) if isinstance(v, float) else f'"{v}"'

        return "\n".join(f"columns.{name}.bounds = [{toml(lo)}, {toml(hi)}]"
                          for name in self.pinnable() for lo, hi in [self.pinned(name)])

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
            if name in self.unseen:
                how += " (may leave out a tail)"
            lines.append(f"  {name}: {self.formatted(name)}{how}")
        if self.domain is None:
            grid = "signed half-octave grid"
        elif isinstance(self.domain, dict):
            grid = ("1024 equal bins of the public domain of "
                    + ", ".join(f"{c} {format_bounds(self.kinds.get(c), d)}"
                                for c, d in self.domain.items())
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
        wide = {c: self.domain_use[c] for c in self.wide_columns()}
        if wide:
            lines.append("Public domains far wider than the data (the released bounds use "
                         + ", ".join(f"{c} {u:.1%}" for c, u in wide.items())
                         + " of them): bounds that wide waste the grid; use the released "
                         "bounds or tighter public ones.")
        if self.unseen:
            lines.append(self.tail_note())
        if self.infinite:
            lines.append(self.infinite_note())
        if self.piled:
            lines.append(self.piled_note())
        if self.one_bin:
            lines.append(self.one_bin_note())
        if self.unresolved:
            lines.append(f"Unresolved: no bin stood out of the noise for "
                         f"{list(self.unresolved)}; fallback bounds used: choose bounds for "
                         "them yourself, or spend more on them.")
        pinned = self.pinnable()
        beyond = [c for c in self.bounds if c not in pinned and c not in self.unresolved
                  and c not in self.unseen and c not in self.piled and c not in self.one_bin]
        if beyond:
            lines.append(f"Not pinnable: the bounds of {beyond} are beyond any public bound "
                         "their kind accepts (a time past year 9999, a duration past "
                         "+-1e11 s): a value far out, such as a sentinel, may have set them.")
        if pinned:
            lines.append("To reuse them as public bounds (and stop paying for them), pin them: "
                         "bounds={" + ", ".join(f"{c!r}: {self.pinned(c)!r}" for c in pinned)
                         + "}, or in a job file columns.<name>.bounds = [lo, hi].")
        return "\n".join(lines)

    def to_html(self, path):
        """Write one self-contained HTML page of these bounds to ``path`` (the
        privacy statement and a table of the bounds); returns the path."""
        return write_page(bounds_view(self), path)
