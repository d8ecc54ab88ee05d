"""The local randomizer: every row becomes one eps-LDP report.

Report design (public, decided before any data is seen, and shipped with the
reports in ``reports.attrs["dpmic_ldp"]``):

- every column is binned on its public bounds into ``bins`` equal-width bins
  (the package's exact fixed-point rule, SPEC section 2; values outside the bounds
  are clamped), so a pair's joint cell is one of ``k = bins**2`` values;
- each person draws ONE of the ``P`` pairs uniformly, with the secure source, and
  reports only that pair's joint cell through a pure protocol at the full ``eps``
  (GRR on small domains, else OLH; OUE on request). The drawn pair does not depend
  on the data, so it costs nothing; the protocol's ratio bound is the whole row's.

Why one pair per person and not every pair, or every column at ``eps / d``: the
benchmark (``benchmarks/results-local-dp.txt``) measures the alternatives; splitting
the budget multiplies the variance by a factor exponential in the split, sampling
divides the reports by ``P`` (linear).
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa

from dpmic_dask.checks import check_bounds, check_max_cells, finite_real
from dpmic_dask.errors import InvalidDataError, InvalidParameterError, MissingValuesError
from dpmic_dask.ldp.bits import ByteSource, active_source
from dpmic_dask.ldp.protocols import Protocol, make_protocol
from dpmic_dask.stats.counting import bins as equal_width_bins
from dpmic_dask.stats.limits import check_micr_grid
from dpmic_dask.testing import seeded_noise

ATTR = "dpmic_ldp"
DESIGN_VERSION = 1
#: candidate bins per axis for the default, and the largest noise-to-mass ratio
#: allowed (chosen from benchmarks/results-local-dp.txt, section 2b)
BIN_CHOICES = (3, 4, 6, 8, 12)
NOISE_TO_MASS = 0.25
#: largest joint domain a report can encode
MAX_CELLS = 1024


def default_bins(eps: float, rows: int, n_pairs: int) -> int:
    """Bins per axis from public quantities only: the largest of :data:`BIN_CHOICES`
    whose noise per joint cell, ``sqrt(Var / (rows / P))``, is at most
    :data:`NOISE_TO_MASS` times the mean cell mass ``1 / bins**2``. Finer grids lose
    less to coarsening but drown in noise sooner; the benchmark's minimum error
    over ``bins`` sits at that ratio."""
    per_pair = max(1.0, rows / max(1, n_pairs))
    best = BIN_CHOICES[0]
    for m in BIN_CHOICES:
        noise = math.sqrt(make_protocol("auto", eps, m * m).variance_factor() / per_pair)
        if noise * m * m <= NOISE_TO_MASS:
            best = m
    return best


#: The per-person budgets a design accepts. Report probabilities are multiples of
#: 2**-32: above about eps = 22 a report already gives the true cell but with
#: probability 2**-32, so larger budgets change nothing (and from about 709
#: ``e**eps`` overflows); below 1e-6 the reports carry no usable signal at any
#: practical number of people (the estimator's variance grows like 1 / eps**2).
EPS_RANGE = (1e-6, 100.0)


def make_design(eps, *, bounds, rows, columns=None, bins=None, B=None, c=2, protocol="auto",
                pairs=None) -> dict:
    """The public report design (a JSON-able dict); nothing in it depends on data.

    ``rows`` is the (public) number of people expected to report; it only sets the
    default ``bins``. Devices that each randomize their own row share one design
    made here and pass it to :func:`randomize` as ``design=``.
    """
    eps = finite_real(eps, "eps", "a finite number > 0")
    if not EPS_RANGE[0] <= eps <= EPS_RANGE[1]:
        raise InvalidParameterError(
            f"eps must be a number in [{EPS_RANGE[0]:g}, {EPS_RANGE[1]:g}] for local reports")
    if not isinstance(bounds, dict) or not bounds:
        raise InvalidParameterError("bounds must be a dict {column: (lo, hi)} of public bounds")
    names = list(bounds) if columns is None else list(columns)
    if not all(isinstance(name, str) for name in names):  # the design is JSON: names are text
        raise InvalidParameterError("the design's column names must be text (rename the "
                                    "frame's columns, e.g. df.columns.astype(str))")
    if len(names) < 2 or len(set(names)) != len(names):
        raise InvalidParameterError("the design needs at least two distinct columns")
    checked = {}
    for name in names:
        if name not in bounds:
            raise InvalidParameterError(f"no public bounds for column {name!r}")
        checked[str(name)] = list(check_bounds(bounds[name], f"bounds[{name!r}]"))
    if isinstance(rows, bool) or not isinstance(rows, numbers.Integral) or rows < 1:
        raise InvalidParameterError("rows must be a positive integer (people expected)")
    if pairs is None:
        chosen = [[a, b] for i, a in enumerate(names) for b in names[i + 1:]]
    else:
        chosen = []
        for pair in pairs:
            a, b = (str(v) for v in pair)
            if a == b or a not in checked or b not in checked:
                raise InvalidParameterError("pairs must join two different design columns")
            chosen.append([a, b])
        if not chosen:
            raise InvalidParameterError("pairs must not be empty")
    m_raw = default_bins(eps, int(rows), len(chosen)) if bins is None else bins
    if isinstance(m_raw, bool) or not isinstance(m_raw, numbers.Integral):
        raise InvalidParameterError("bins must be an integer in [2, 32]")
    m = int(m_raw)
    if not 2 <= m <= 32:
        raise InvalidParameterError("bins must be an integer in [2, 32]")
    if m * m > MAX_CELLS:
        raise InvalidParameterError(f"bins**2 must be at most {MAX_CELLS}")
    grid_b = check_max_cells(m * m if B is None else B)
    if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 1:
        raise InvalidParameterError("c must be an integer >= 1")
    check_micr_grid(grid_b, int(c), len(chosen))  # what the server's MICr will need
    proto = make_protocol(protocol, eps, m * m)
    return {
        "version": DESIGN_VERSION,
        "model": "local",
        "epsilon": eps,
        "columns": list(checked),
        "bounds": checked,
        "bins": m,
        "B": grid_b,
        "c": int(c),
        "pairs": chosen,
        "protocol": proto.to_dict(),
        "seeded": False,
    }


def check_design(design) -> dict:
    """A design from outside (a device's copy, a file's metadata), checked to be one
    :func:`make_design` makes: the same checks (finite bounds with ``lo < hi``,
    ``eps`` in range, the grid, the pairs) and the protocol it would choose, so a
    damaged or edited design (a NaN bound bins every value at one end; an ``eps``
    past the range) is refused, never read. One line, no value from the design."""
    if not isinstance(design, dict):
        raise InvalidParameterError("a report design must be a dict (see make_design)")
    try:
        remade = make_design(design["epsilon"], bounds=design["bounds"], rows=1,
                             columns=design["columns"], bins=design["bins"], B=design["B"],
                             c=design["c"], protocol=design["protocol"]["name"],
                             pairs=design["pairs"])
    except InvalidParameterError as exc:  # its own line: a parameter, never a value
        raise InvalidParameterError(f"the report design is refused: {exc}") from None
    except (KeyError, TypeError, ValueError, OverflowError, ZeroDivisionError) as exc:
        raise InvalidParameterError(
            f"the report design is not one make_design makes ({type(exc).__name__})") from None
    same = {key: remade[key] for key in remade if key != "seeded"}
    given = {key: design.get(key) for key in same}
    if json.loads(json.dumps(given)) != json.loads(json.dumps(same)):
        raise InvalidParameterError(
            "the report design differs from the one make_design makes with its own "
            "parameters (an edited or damaged design): refused")
    return dict(design)


#: Each report's design fingerprint (:func:`design_fingerprint`): reports made
#: under another design (a folder holding two runs' files) are refused, not read
#: under the wrong one.
DESIGN_COLUMN = "design"

#: The design's own fields (what :func:`make_design` makes; not ``seeded``/``rows``).
_DESIGN_FIELDS = ("version", "model", "epsilon", "columns", "bounds", "bins", "B", "c",
                  "pairs", "protocol")


def design_fingerprint(design: dict) -> int:
    """32 bits of SHA-256 of the design's own fields, as canonical JSON (public:
    the design is). Seeded (NOT PRIVATE) test reports carry another fingerprint,
    so that they are never read as a private design's (a private design's is as
    it always was)."""
    fields = {key: design.get(key) for key in _DESIGN_FIELDS}
    if design.get("seeded"):
        fields["seeded"] = True
    text = json.dumps(fields, sort_keys=True)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")


def design_protocol(design: dict) -> Protocol:
    """The protocol a design names, checked to be eps-LDP as stated."""
    proto = Protocol.from_dict(design["protocol"])
    if abs(proto.eps - float(design["epsilon"])) > 0 or proto.k != design["bins"] ** 2:
        raise InvalidParameterError("the report design's protocol does not match its eps/grid")
    return proto


def _arrow_time(dtype) -> bool:
    """Whether ``dtype`` is a pyarrow time, date, timestamp or duration."""
    held = getattr(dtype, "pyarrow_dtype", None)
    return held is not None and (pa.types.is_temporal(held))


def _holds_text(column: pd.Series) -> bool:
    """Whether an ``object`` column holds text (numbers as text would be parsed)."""
    return pd.api.types.is_object_dtype(column.dtype) and any(
        isinstance(v, (str, bytes)) for v in column.to_numpy())


def _column(frame: pd.DataFrame, name: str, fill) -> np.ndarray:
    if name not in frame.columns:
        raise InvalidDataError(f"the frame has no column {name!r}")
    dtype = frame[name].dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_string_dtype(dtype) and \
            not pd.api.types.is_object_dtype(dtype) or _holds_text(frame[name]):
        # codes or parsed text would be binned as ordered numbers, times as nanoseconds
        raise InvalidDataError(
            f"column {name!r} holds categories or text ({dtype}): the local model takes "
            "numbers only; convert it on the device to a number in a public unit")
    if pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype) \
            or isinstance(dtype, pd.PeriodDtype) or _arrow_time(dtype):
        raise InvalidDataError(
            f"column {name!r} holds times ({dtype}): the local model takes numbers only; "
            "convert it on the device to a number in a public unit (e.g. days since a "
            "public date) and give its bounds in that unit")
    if pd.api.types.is_complex_dtype(dtype):  # a cast would keep the real part only
        raise InvalidDataError(f"column {name!r} holds complex numbers ({dtype}): the local "
                               "model takes real numbers only")
    try:
        with warnings.catch_warnings():
            # an object column of complex values: refused below, never cast
            warnings.simplefilter("error", np.exceptions.ComplexWarning)
            values = frame[name].to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError, OverflowError, np.exceptions.ComplexWarning):
        raise InvalidDataError(f"column {name!r} holds values that are not real numbers "
                               "a float64 can hold") from None
    grown = np.flatnonzero(np.isinf(values))
    if grown.size:  # an infinity the cast made (Decimal 1e400, a long double), not one given
        given = frame[name].iloc[grown].to_numpy(dtype=object)
        if not all(v == np.inf or v == -np.inf for v in given):
            raise InvalidDataError(f"column {name!r} holds values that are not real numbers "
                                   "a float64 can hold")
    if np.isnan(values).any():
        if fill is None or name not in fill:
            raise MissingValuesError(
                f"column {name!r} has missing values; pass fill={{column: value}} "
                "(a public value) or drop them on the device")
        values = np.where(np.isnan(values), finite_real(fill[name], f"fill[{name!r}]"), values)
    return values


def randomize_with(frame: pd.DataFrame, design: dict, source: ByteSource, *,
                   fill=None) -> pd.DataFrame:
    """Reports of ``frame``'s rows under ``design`` with randomness from ``source``."""
    proto = design_protocol(design)
    m = design["bins"]
    for name, value in (fill or {}).items():  # whether or not this frame needs it
        if name in design["bounds"]:
            lo, hi = design["bounds"][name]
            if not lo <= finite_real(value, f"fill[{name!r}]") <= hi:
                raise InvalidParameterError(
                    f"fill[{name!r}] must lie inside bounds[{name!r}] (a fill outside "
                    "would be clamped, not reported as given)")
    binned = {name: equal_width_bins(_column(frame, name, fill), tuple(design["bounds"][name]),
                                     m) for name in design["columns"]}
    n = len(frame)
    n_pairs = len(design["pairs"])
    pair = (source.below(n_pairs, n) if n_pairs > 1 else np.zeros(n, dtype=np.int64))
    cell = np.zeros(n, dtype=np.int64)
    for j, (a, b) in enumerate(design["pairs"]):
        sel = pair == j
        cell[sel] = binned[a][sel] * m + binned[b][sel]
    fields = proto.encode(cell, source)
    design = dict(design, seeded=not source.secure, rows=n)
    out = pd.DataFrame({"pair": pair.astype(np.int16 if n_pairs < 2**15 else np.int32),
                        **fields,
                        DESIGN_COLUMN: np.full(n, design_fingerprint(design), dtype=np.uint32)})
    out.attrs[ATTR] = design
    return out


def randomize(df, eps=None, *, bounds=None, columns=None, B=None, bins=None, c=2,
              protocol="auto", pairs=None, fill=None, design=None) -> pd.DataFrame:
    """Randomize every row of ``df`` into one eps-LDP report (the client side).

    Parameters
    ----------
    df : pandas.DataFrame
        The rows of the people reporting (on a device: usually one row).
    eps : float > 0
        Local privacy parameter of each report: for any two rows ``r, r'`` and any
        report ``z``, ``P(z | r) <= e^eps P(z | r')``.
    bounds : dict {column: (lo, hi)}
        Public bounds; values outside are clamped.
    columns : list of column names, optional (default: the keys of ``bounds``).
    B, c : the MICr grid parameters the server uses (default ``B = bins**2``, ``c = 2``).
    bins : int, optional
        Equal-width bins per column (default from ``eps``, ``len(df)`` and the number
        of pairs: see :func:`default_bins`).
    protocol : ``"auto"`` (GRR or OLH by variance), ``"grr"``, ``"olh"`` or ``"oue"``.
    pairs : list of (column, column), optional (default: every pair).
    fill : dict {column: value}, optional
        Public replacement for missing values (else missing values are refused).
    design : dict, optional
        A design made beforehand with :func:`make_design` (then ``eps``, ``bounds``
        and the grid arguments are not given): what devices that each hold one row use.

    Returns
    -------
    pandas.DataFrame
        One report per row: ``pair`` (index into the design's pairs) and the
        protocol's fields; the public design is in ``.attrs["dpmic_ldp"]`` (write it
        along with the reports with :func:`write_reports`).
    """
    if not isinstance(df, pd.DataFrame):
        raise InvalidDataError("randomize takes a pandas DataFrame (one row per person)")
    if design is None:
        if eps is None or bounds is None:
            raise InvalidParameterError("randomize needs eps and bounds (or a design)")
        design = make_design(eps, bounds=bounds, rows=max(1, len(df)), columns=columns,
                             bins=bins, B=B, c=c, protocol=protocol, pairs=pairs)
    elif eps is not None or bounds is not None or bins is not None or B is not None \
            or columns is not None or pairs is not None or c != 2 or protocol != "auto":
        # the design fixes them all: one given beside it would be silently ignored
        raise InvalidParameterError("pass either a design or eps, bounds, columns, bins, "
                                    "B, c, protocol, pairs (the design's own), not both")
    else:
        design = check_design(design)  # its protocol too: remade and compared
    for name in design["columns"]:
        if name not in df.columns:
            raise InvalidDataError(f"the frame has no column {name!r}")
    return randomize_with(df, design, active_source(), fill=fill)


def randomize_not_private_seeded(df, eps, *, seed: int, **kwargs) -> pd.DataFrame:
    """:func:`randomize` with reproducible randomness: NOT private, tests only.

    Runs inside :func:`dpmic_dask.testing.seeded_noise` (which needs
    ``DPMIC_DASK_ALLOW_SEEDED_NOISE=1`` and warns); the reports' design says
    ``seeded = True`` and every report built from them says NOT PRIVATE.
    """
    with seeded_noise(seed, not_private=True):
        return randomize(df, eps, **kwargs)
