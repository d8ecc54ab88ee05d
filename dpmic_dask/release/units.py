"""Privacy per unit: contribution bounding, a private row count, then the release.

With ``privacy_unit="customer_id"`` and ``max_rows_per_unit=k`` neighbouring
tables differ by **adding or removing every row of one unit**. A release then
runs ``[contribution bounding] -> [row count] -> [private bounds] -> [selection]
-> values``:

1. *Bounding* (:func:`bound_contributions`): at most ``k`` rows per unit survive,
   the ``k`` whose keyed hash of their own content is smallest, with a fresh
   secret key per release. Which rows of a unit survive depends on that unit's
   rows and the key only, so after bounding the two neighbours still differ by
   the rows of one unit, now at most ``k`` of them. On Dask: each partition first
   keeps its own ``k`` smallest per unit, a shuffle on the unit brings a unit's
   survivors together, and each output partition keeps the ``k`` smallest again
   (a unit with a million rows sends at most ``k`` per input partition).
2. *Row count* (:mod:`dpmic_dask.release.rowcount`): the bounded row count is
   private; a noisy count (sensitivity ``k``) with a small share of the budget
   gives a public lower bound ``n0``.
3. *The release*, run by the row-level code on the bounded frame, which it sees
   with ``n0`` rows: every statistic is tapered, ``min(1, rows / n0) * M``, with
   sensitivity ``k * tapered_step(n0)`` valid at every size
   (:mod:`dpmic_dask.stats.group_sensitivity`), so the whole release is pure
   ``eps``-DP per unit (zCDP with ``delta > 0``) whatever the bound's luck.

Everything that can refuse runs before the one charge: the plan is checked at
the smallest ``n0`` it can be given (``floor``, found before anything is read) and
at a very large one; the pass before the charge reads and converts every column
of the bounded frame.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import secrets
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from dpmic_dask.backends import backend_for, register
from dpmic_dask.backends.base import Backend
from dpmic_dask.checks import MIN_ROWS
from dpmic_dask.errors import DPMICError, InvalidParameterError, LedgerError, MissingValuesError
from dpmic_dask.privacy.accounting import PrivacyCost, privacy_statement
from dpmic_dask.privacy.costs import PURE_DP, ZCDP, measure_for
from dpmic_dask.privacy.mechanisms.base import Mechanism
from dpmic_dask.privacy.selection import check_share
from dpmic_dask.release.rowcount import (
    DEFAULT_BETA,
    DEFAULT_COUNT_SHARE,
    RowCountPlan,
    plan_row_count,
    run_row_count,
)
from dpmic_dask.stats.counting import column_values
from dpmic_dask.stats.group_sensitivity import UnitStatistic, check_unit_statistic

#: The hidden column holding each row's keyed priority while bounding.
PRIORITY = "__dpmic_priority__"
#: A very large public row count at which the plan is also checked (grid defaults
#: grow with ``n`` up to a compute cap).
LARGE_N = 2**40

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


# ------------------------------------------------------------------- parameters


def check_unit_columns(unit) -> tuple[str, ...]:
    """``"customer_id"`` or a list of column names -> a tuple of names."""
    names = (unit,) if isinstance(unit, str) else unit
    try:
        names = tuple(names)
    except TypeError:
        names = ()
    if not names or not all(isinstance(n, str) and n for n in names) or len(set(names)) != len(
            names):
        raise InvalidParameterError(
            "privacy_unit must name one column or a list of distinct columns")
    return names


def check_max_rows(k) -> int:
    """``max_rows_per_unit``: an integer from 1 to 2**20."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= 2**20:
        raise InvalidParameterError("max_rows_per_unit must be an integer from 1 to 2**20")
    return int(k)


def unit_label(unit: tuple[str, ...]) -> str:
    """How a unit is named in statements and ledgers: ``customer_id`` or ``a+b``."""
    return "+".join(unit)


def unit_statement(unit: tuple[str, ...] | None, k: int | None) -> str:
    """``per customer_id, at most 8 rows each`` (or the row-level default)."""
    if unit is None:
        return "per row (the default privacy unit: one row is one individual)"
    return f"per {unit_label(unit)}, at most {k} rows each"


# ------------------------------------------------------------------- bounding


def new_key() -> tuple[int, int]:
    """A fresh secret key for one release (128 bits from the OS CSPRNG)."""
    return secrets.randbits(64), secrets.randbits(64)


def _mix(x: np.ndarray) -> np.ndarray:
    """A 64-bit finaliser (bijective): spreads a hash over all bits."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * _M1
        x = x ^ (x >> np.uint64(27))
        x = x * _M2
        return x ^ (x >> np.uint64(31))


def row_priority(frame: pd.DataFrame, content, key: tuple[int, int]) -> np.ndarray:
    """Each row's keyed priority: a hash of the row's own ``content`` columns (the
    unit's and the released ones), keyed by ``key``. A function of the row and the
    key only; identical rows get the same priority (and are interchangeable)."""
    h = pd.util.hash_pandas_object(frame[list(content)], index=False).to_numpy(np.uint64)
    with np.errstate(over="ignore"):
        return _mix(_mix(h ^ np.uint64(key[0])) + np.uint64(key[1]))


def keep_smallest(frame: pd.DataFrame, unit, k: int, content) -> pd.DataFrame:
    """The ``k`` rows of each unit with the smallest ``(priority, content)`` (a
    frame that already has the priority column and no row without a unit)."""
    if frame.empty:
        return frame
    order = frame.sort_values([PRIORITY, *content], kind="stable", na_position="last")
    rank = order.groupby(list(unit), sort=False, dropna=True).cumcount().to_numpy()
    return order[rank < k]


def _tag_and_keep(frame: pd.DataFrame, unit, k: int, content, key) -> pd.DataFrame:
    # A row whose unit is missing belongs to no known unit: it is dropped (a per-row
    # rule). Kept as one shared unit, one person's rows could push out another's,
    # k rows changed twice over (docs/privacy.md, section 12).
    frame = frame[list(content)].dropna(subset=list(unit)).copy()
    frame[PRIORITY] = row_priority(frame, content, key)
    return keep_smallest(frame, unit, k, content)


def bound_contributions(frame, unit, k: int, columns, key: tuple[int, int] | None = None):
    """At most ``k`` rows per unit of ``frame`` (pandas or Dask): the unit's rows with
    the smallest keyed hash of their content. Returns a frame of ``columns`` only
    (the unit columns are never passed on). ``key``: fresh when ``None``."""
    unit = tuple(unit)
    columns = tuple(c for c in columns if c not in unit)
    content = (*unit, *columns)
    key = new_key() if key is None else key
    if isinstance(frame, pd.DataFrame):
        return _tag_and_keep(frame, unit, k, content, key)[list(columns)]
    import dask.dataframe as dd

    if not isinstance(frame, dd.DataFrame):
        raise InvalidParameterError("privacy_unit needs a pandas or Dask DataFrame")
    meta = frame._meta[list(content)].assign(**{PRIORITY: np.uint64(0)}).iloc[:0]
    local = frame.map_partitions(_tag_and_keep, unit, k, content, key, meta=meta)
    shuffled = local.shuffle(on=list(unit)) if local.npartitions > 1 else local
    bounded = shuffled.map_partitions(keep_smallest, unit, k, content, meta=meta)
    return bounded[list(columns)]


# ------------------------------------------------------------------- the frame seen by a release


class BoundedFrame:
    """A bounded frame seen by the row-level release code with ``n0`` rows: every
    row count it reports is the public ``n0``, never the exact one."""

    def __init__(self, frame, n0: int):
        self.frame = frame
        self.n0 = int(n0)


@register(BoundedFrame)
class BoundedBackend(Backend):
    """Delegates to the inner frame's backend; row counts are ``n0``."""

    @staticmethod
    def _inner(frame: BoundedFrame):
        return backend_for(frame.frame)

    def schema(self, frame):
        return self._inner(frame).schema(frame.frame)

    def row_count(self, frame, columns) -> int:
        return frame.n0

    def count(self, frame, spec, *, split_every, progress, rows=None, task_memory=2**28):
        agg = self._inner(frame).count(frame.frame, spec, split_every=split_every,
                                       progress=progress, rows=frame.n0,
                                       task_memory=task_memory)
        return dataclasses.replace(agg, rows=frame.n0)

    def evaluate(self, frame, spec, fn, *, pairs_per_block, split_every, progress, rows=None,
                 task_memory=2**28):
        evaluation = self._inner(frame).evaluate(
            frame.frame, spec, fn, pairs_per_block=pairs_per_block, split_every=split_every,
            progress=progress, rows=frame.n0, task_memory=task_memory)
        return dataclasses.replace(evaluation, rows=frame.n0)

    def reduce(self, frame, columns, fn, combine, *, split_every, progress):
        return self._inner(frame).reduce(frame.frame, columns, fn, combine,
                                         split_every=split_every, progress=progress)

    def map_counts(self, counts, fn):
        return np.array([fn(c) for c in counts], dtype=np.float64)


# ------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class UnitsPlan:
    """The per-unit part of a release plan: the unit, ``k``, the row count's plan,
    the release's prepaid ``part``, the ``total`` charged once, and ``floor``: the
    smallest ``n0`` at which every check of the release passes (found before
    anything is read; the bound is never released below it)."""

    unit: tuple[str, ...]
    k: int
    rowcount: RowCountPlan
    part: PrivacyCost
    total: PrivacyCost
    floor: int

    @property
    def statement(self) -> str:
        return unit_statement(self.unit, self.k)

    def parts(self, inner: str) -> str:
        return f"{self.rowcount.describe()}; release: {inner} with {self.part.describe()}"


def _mechanisms(obj, seen=None):
    """Every :class:`Mechanism` reachable from a plan (requests, selections)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, Mechanism):
        yield obj
        return
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            yield from _mechanisms(getattr(obj, f.name), seen)
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from _mechanisms(item, seen)
    elif hasattr(obj, "__dict__") and type(obj).__module__.startswith("dpmic_dask.privacy"):
        for value in vars(obj).values():
            yield from _mechanisms(value, seen)


def per_unit(plan, k: int, n0: int):
    """A copy of a row-level release plan whose every statistic is released per
    unit: tapered below ``n0``, sensitivity ``k * tapered_step(n0)``."""
    plan = copy.deepcopy(plan)
    for mech in _mechanisms(plan):
        base = mech.statistic
        while isinstance(base, UnitStatistic):
            base = base.base
        mech.statistic = UnitStatistic(base, k, n0)
    return plan


def check_inner(plan, n: int) -> None:
    """Every data-independent check of the inner release at ``n`` rows."""
    from dpmic_dask.release.stages import check_plan, check_selected_plan

    if plan.selection is None:
        check_plan(plan.request, n)
    else:
        check_selected_plan(plan.request, plan.selection, n)


def _passes(plan, k: int, n: int) -> bool:
    try:
        with warnings.catch_warnings():  # a search, not a release: no noise warnings
            warnings.simplefilter("ignore")
            check_inner(per_unit(plan, k, n), n)
    except DPMICError:
        return False
    return True


def find_floor(plan, k: int) -> int:
    """The smallest ``n0 >= MIN_ROWS`` at which the inner plan passes every check
    (noise scales shrink as ``n0`` grows, so passing is monotone in ``n0``).
    Refuses (nothing read) a plan that does not pass even at a very large ``n0``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_inner(per_unit(plan, k, LARGE_N), LARGE_N)  # raises the plan's own error
    if _passes(plan, k, MIN_ROWS):
        return MIN_ROWS
    lo, hi = MIN_ROWS, LARGE_N  # fails at lo, passes at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _passes(plan, k, mid):
            hi = mid
        else:
            lo = mid
    return hi


def plan_units(schema, inner_planner, eps, *, delta, unit, k, count_share=None,
               beta=DEFAULT_BETA, columns_used=()):
    """Split ``(eps, delta)`` into the row count's share and the release's part,
    plan the inner release with ``inner_planner(release_eps, mechanism_override)``
    and find the floor. Nothing is read."""
    from dpmic_dask.privacy.accounting import PrepaidLedger

    unit = check_unit_columns(unit)
    k = check_max_rows(k)
    missing = [u for u in unit if u not in schema]
    if missing:
        raise InvalidParameterError(f"privacy_unit column(s) {missing} are not in the frame")
    share = check_share(DEFAULT_COUNT_SHARE if count_share is None else count_share,
                        "count_share")
    measure = measure_for(delta)
    total = measure.total(eps, delta)
    (count_part,) = measure.split(total, (share,))
    rowcount = plan_row_count(count_part, sensitivity=k, beta=beta)
    part = measure.rest(total, count_part.amount())
    if measure is PURE_DP:
        release_eps, forced = part.epsilon, None
    else:
        release_eps, forced = ZCDP.within(part.amount(), delta), "micr-gauss"
    inner = inner_planner(release_eps, forced)
    used = set(inner.request.columns)
    if inner.bounds is not None:
        used |= set(inner.bounds.bounds.columns)
    clash = sorted(used & set(unit))
    if clash:
        raise InvalidParameterError(
            f"the privacy unit column(s) {clash} cannot be released or be part of a pair")
    for mech in _mechanisms(inner):
        if mech.acts_on != "values":
            raise InvalidParameterError(
                f"mechanism {mech.label!r} adds noise to counts; with privacy_unit use "
                "micr-lap or micr-gauss")
        try:
            check_unit_statistic(mech.statistic.name)
        except ValueError:
            raise InvalidParameterError(
                f"statistic {mech.statistic.name!r} cannot be released per unit") from None
    if inner.bounds is not None:
        # the bounds step reads the bounded frame: each histogram's L1 sensitivity is k
        # under add/remove of one unit (docs/privacy.md, section 12); refused now if a
        # scale k / eps_pass cannot be sampled
        inner = dataclasses.replace(inner, bounds=dataclasses.replace(
            inner.bounds, bounds=inner.bounds.bounds.per_unit(unit_label(unit), k)))
    if not PrepaidLedger(None, part)._fits(inner.cost):  # type: ignore[arg-type]
        raise InvalidParameterError("the release does not fit its share")  # pragma: no cover
    floor = find_floor(inner, k)
    rowcount = dataclasses.replace(rowcount, floor=floor)
    units = UnitsPlan(unit, k, rowcount, part, total, floor)
    return inner, units


def plan_unit_release(schema, eps, *, privacy_unit=None, max_rows_per_unit=None, delta=0.0,
                      mechanism="auto", count_share=None, beta=DEFAULT_BETA, **release):
    """Plan a release (:func:`dpmic_dask.release.plan.plan_release`), per unit when
    ``privacy_unit`` is given: bounding to ``max_rows_per_unit`` rows per unit and a
    private row count (``count_share`` of the budget, default 5%) in front of it.
    Without ``privacy_unit`` this is exactly the row-level plan. Nothing is read."""
    from dpmic_dask.release.plan import plan_release

    if privacy_unit is None:
        if max_rows_per_unit is not None or count_share is not None:
            raise InvalidParameterError(
                "max_rows_per_unit and count_share need privacy_unit (the column that "
                "identifies a unit)")
        return plan_release(schema, eps, delta=delta, mechanism=mechanism, **release)
    if max_rows_per_unit is None:
        raise InvalidParameterError(
            "privacy_unit needs max_rows_per_unit, the most rows of one unit that are used "
            "(see dpmic_dask.contribution_bound to choose it privately)")
    if release.get("nulls") == "drop":
        raise InvalidParameterError('nulls="drop" is not yet available with privacy_unit')
    if measure_for(delta) is ZCDP and mechanism not in ("auto", "micr-gauss"):
        raise InvalidParameterError("with privacy_unit and delta > 0 the release is "
                                    "micr-gauss (mechanism='auto' or 'micr-gauss')")

    def planner(release_eps, forced):
        return plan_release(schema, release_eps, delta=delta, mechanism=forced or mechanism,
                            **release)

    inner, units = plan_units(schema, planner, eps, delta=delta, unit=privacy_unit,
                              k=max_rows_per_unit, count_share=count_share, beta=beta)
    return dataclasses.replace(inner, units=units)


# ------------------------------------------------------------------- the ledger's unit


def check_ledger_unit(ledger, dataset, unit: tuple[str, ...] | None) -> None:
    """Refuse, before anything is read, a release whose privacy unit is not the one
    the dataset's budget is for (a ledger without budgets accepts any unit)."""
    from dpmic_dask.release.charge import DEFAULT_DATASET, _ledger

    ledger = _ledger(ledger)
    budget_for = getattr(ledger, "budget_for", None)
    if not callable(budget_for):
        return
    budget = budget_for(dataset or DEFAULT_DATASET)
    if budget is None:
        return
    stored = getattr(budget, "privacy_unit", None)
    asked = None if unit is None else unit_label(unit)
    if stored != asked:
        have = "one row" if stored is None else repr(stored)
        want = "one row" if asked is None else repr(asked)
        raise LedgerError(
            f"dataset {dataset or DEFAULT_DATASET!r} has a budget per {have}; this release "
            f"asks for privacy per {want}. One dataset's budget is for one privacy unit; "
            "nothing was charged and no data was read")


# ------------------------------------------------------------------- running


def _rows_and_missing(frame: pd.DataFrame, *, columns):
    missing = np.zeros(len(columns), dtype=bool)
    for i, name in enumerate(columns):
        missing[i] = bool(np.isnan(column_values(frame, name)).any())
    return len(frame), missing


def _add(a, b):
    return a[0] + b[0], a[1] | b[1]


def run_units(frame, plan, *, ledger=None, dataset=None, progress=None):
    """Run a per-unit release plan (``plan.units`` set): precheck and the ledger's
    unit before anything is read; bounding; one pass before the charge (the exact
    bounded row count, every column read and converted, missing values refused);
    the one charge; the noisy count and ``n0``; the release on the bounded frame
    from the prepaid part."""
    from dpmic_dask.privacy.accounting import PrepaidLedger
    from dpmic_dask.release.charge import after_charge, charge_budget, precheck_budget
    from dpmic_dask.release.plan import run_release

    units = plan.units
    inner = dataclasses.replace(plan, units=None)
    kinds, drop = getattr(plan, "kinds", None), getattr(plan, "drop", None)
    if kinds or drop:  # column kinds are converted on the bounded columns
        inner = dataclasses.replace(inner, kinds=None, drop=None)
    request = inner.request
    precheck_budget(ledger, dataset, units.total, privacy_unit=units.unit)
    read = tuple(request.columns)
    if inner.bounds is not None:
        read = tuple(dict.fromkeys((*read, *inner.bounds.bounds.columns)))
    # one bounded frame (one key) for every step: the bounds' passes and the values
    # read the same rows of each unit
    bounded = bound_contributions(frame, units.unit, units.k, read)
    if hasattr(bounded, "persist"):
        # the bounded rows (at most k per unit) stay where they were computed for the
        # pass before the charge and the release's own pass: one shuffle, not two
        bounded = bounded.persist()
    if kinds:
        from dpmic_dask.stats.kinds import axis_frame

        bounded = axis_frame(bounded, kinds, drop=None)
    backend = backend_for(bounded)
    if inner.bounds is not None:  # the bounds' first pass is the pass before the charge
        from dpmic_dask.release.private_bounds import first_pass

        counts, rows = first_pass(bounded, inner.bounds, progress=progress, min_rows=False)
        missing = np.zeros(len(read), dtype=bool)  # refused by first_pass
    else:
        rows, missing = backend.reduce(bounded, read, partial(_rows_and_missing, columns=read),
                                       _add, split_every=request.split_every,
                                       progress=progress)
    if request.fill is None and np.asarray(missing).any():
        names = [c for c, m in zip(read, missing) if m]
        raise MissingValuesError(
            f"column(s) {names} contain missing values; pass nulls='fill' with public "
            "fill values (nothing was charged)")
    inner_label = (request.mechanism.label if inner.selection is None
                   else f"{inner.selection.selection.description} and the chosen values")
    if inner.bounds is not None:
        inner_label = inner.bounds.parts()
    parts = units.parts(inner_label)
    steps = "bounds-hist+" if inner.bounds is not None else ""
    charge = charge_budget(
        units.total, ledger, dataset,
        description=f"{request.label or 'pairwise'} ({units.statement}; {parts})",
        mechanism=f"unit-bound+count+{steps}{request.mechanism.label}",
        columns=request.columns)
    count = run_row_count(units.rowcount, int(rows))
    n0 = max(units.floor, count.n_low)
    released = per_unit(inner, units.k, n0)
    prepaid = PrepaidLedger(charge, units.part)
    with after_charge(charge), warnings.catch_warnings():
        # warnings about the noise at n0 are shown, never raised: nothing after the
        # charge may refuse, even under a warnings-as-errors filter
        warnings.simplefilter("default")
        if released.bounds is None:
            result = run_release(BoundedFrame(bounded, n0), released, ledger=prepaid,
                                 dataset=dataset, progress=progress)
        else:
            from dpmic_dask.release.private_bounds import bounds_then_values

            result, found = bounds_then_values(
                bounded, BoundedFrame(bounded, n0), released.bounds, counts, n0, charge,
                prepaid, dataset=dataset, progress=progress)
            if kinds:
                found = dataclasses.replace(
                    found, kinds={c: kd for c, kd in kinds.items() if kd})
            result = dataclasses.replace(result, private_bounds=found)
    statement = unit_privacy_statement(
        privacy_statement(units.total, max(1, len(result.pairs)), detail=parts), units)
    privacy = dataclasses.replace(
        result.privacy, epsilon=units.total.epsilon, delta=units.total.delta,
        rho=units.total.rho, parts=parts, release_cost=units.part, statement=statement,
        privacy_unit=unit_label(units.unit), max_rows_per_unit=units.k,
        rows_lower_bound=n0, rows_noisy=count.noisy)
    return dataclasses.replace(result, privacy=privacy)


def unit_privacy_statement(statement: str, units: UnitsPlan) -> str:
    """The row-level statement said of the unit: neighbours differ by all rows of
    one unit (added or removed), and the information bound is about one unit."""
    who = unit_label(units.unit)
    said = statement.replace(
        "with respect to replacing any one row",
        f"with respect to adding or removing all rows of any one {who} ({units.statement})",
    ).replace("about any one row beyond what the other rows already reveal",
              f"about any one {who} beyond what the other units' rows already reveal")
    if said == statement:  # pragma: no cover - the row-level wording changed
        said = f"{statement} Neighbouring tables differ by all rows of one {who}."
    return said


def private_mic_per_unit(x, y, units, *, eps, x_bounds, y_bounds, privacy_unit="unit",
                         max_rows_per_unit=None, mechanism="auto", delta=0.0, B=None, c=None,
                         ledger=None, dataset=None):
    """:func:`dpmic_dask.private_mic` per unit: ``units[i]`` identifies the unit of
    row ``i`` (named ``privacy_unit`` in the statement and the ledger); at most
    ``max_rows_per_unit`` rows per unit are used. The same plan as ``pairwise``
    with one pair."""
    from dpmic_dask.release.plan import run_release
    from dpmic_dask.release.results import Release

    if units is None or max_rows_per_unit is None:
        raise InvalidParameterError("privacy per unit needs both units=[...] (one value per "
                                    "row) and max_rows_per_unit")
    if not isinstance(privacy_unit, str) or not privacy_unit or privacy_unit in ("x", "y"):
        raise InvalidParameterError("privacy_unit must name the unit (not 'x' or 'y')")
    xs, ys, us = np.asarray(x), np.asarray(y), np.asarray(units)
    if xs.ndim != 1 or xs.shape != ys.shape or xs.shape != us.shape:
        raise InvalidParameterError("x, y and units must be one-dimensional and of one length")
    frame = pd.DataFrame({privacy_unit: us, "x": xs, "y": ys})
    plan = plan_unit_release(frame.dtypes, eps, privacy_unit=privacy_unit,
                             max_rows_per_unit=max_rows_per_unit,
                             bounds={"x": x_bounds, "y": y_bounds}, delta=delta,
                             mechanism=mechanism, B=B, c=c)
    result = run_release(frame, plan, ledger=ledger, dataset=dataset)
    return Release(value=float(result.values[0]), privacy=result.privacy)


# ------------------------------------------------------------------- choosing k


def _unit_sizes(frame, unit):
    """Rows per unit (a pandas Series or a Dask Series)."""
    return frame.dropna(subset=list(unit)).groupby(list(unit)).size()  # no unit: dropped


def size_grid(top: int = 2**20) -> np.ndarray:
    """Candidate values of ``k``: 1..16, then about 2^(1/4) apart up to ``top``."""
    small = list(range(1, 17))
    e = 4 * 4  # 2^(16/4) = 16
    while True:
        e += 1
        v = int(math.floor(2 ** (e / 4)))
        if v > top:
            break
        if v > small[-1]:
            small.append(v)
    return np.array(small, dtype=np.int64)


def contribution_bound(frame, unit, eps, *, quantile=0.9, ledger=None, dataset=None,
                       top: int = 2**20, label=None):
    """A private ``quantile`` of the number of rows per unit: a value of
    ``max_rows_per_unit`` that keeps all rows of about that share of units.

    Pure ``eps``-DP per unit: each unit's row count falls in one bin of a fixed
    grid of candidates (:func:`size_grid`, up to ``top``; larger counts in the last
    bin); adding or removing a unit changes one bin by one, so exact discrete
    Laplace noise of scale ``1 / eps`` on every bin is ``eps``-DP. The answer is
    read off the noisy cumulative counts (post-processing). Charged once."""
    from dpmic_dask.privacy.conversion import check_epsilon
    from dpmic_dask.privacy.noise import active_sampler
    from dpmic_dask.release.charge import charge_budget, precheck_budget
    from dpmic_dask.stats.sensitivity import safe_up

    unit = check_unit_columns(unit)
    eps = check_epsilon(eps)
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) or not (
            0 < quantile < 1):
        raise InvalidParameterError("quantile must be a number in (0, 1)")
    schema = backend_for(frame).schema(frame)
    if any(u not in schema for u in unit):
        raise InvalidParameterError("privacy_unit column(s) are not in the frame")
    grid = size_grid(int(top))
    cost = PrivacyCost(eps)
    precheck_budget(ledger, dataset, cost, privacy_unit=unit)
    sizes = _unit_sizes(frame, unit)
    edges = np.append(grid, np.iinfo(np.int64).max)

    def histogram(s) -> np.ndarray:
        bins = np.searchsorted(edges, np.asarray(s, dtype=np.int64), side="right") - 1
        return np.bincount(np.clip(bins, 0, len(grid) - 1), minlength=len(grid))

    if isinstance(sizes, pd.Series):
        counts = histogram(sizes.to_numpy())
    else:
        parts = sizes.map_partitions(lambda s: pd.Series([histogram(s)]), meta=(None, object))
        counts = np.sum(list(parts.compute()), axis=0)
    scale = safe_up(1.0 / eps)
    charge = charge_budget(cost, ledger, dataset, description=label or "contribution bound",
                           mechanism="unit-size-hist", columns=unit)
    noisy = counts.astype(np.int64) + active_sampler().discrete_laplace(scale, len(grid))
    cumulative = np.cumsum(np.maximum(noisy, 0))
    total = cumulative[-1]
    where = int(np.searchsorted(cumulative, quantile * total, side="left")) if total > 0 else 0
    return ContributionBound(int(grid[min(where, len(grid) - 1)]), float(quantile), eps,
                             scale, unit_label(unit), charge.charge_id)


@dataclass(frozen=True)
class ContributionBound:
    """A released quantile of rows per unit (use it as ``max_rows_per_unit``)."""

    k: int
    quantile: float
    epsilon: float
    noise_scale: float
    privacy_unit: str
    charge_id: str


__all__ = ["BoundedFrame", "ContributionBound", "UnitsPlan", "bound_contributions",
           "check_ledger_unit", "check_max_rows", "check_unit_columns", "contribution_bound",
           "find_floor", "keep_smallest", "per_unit", "plan_unit_release", "plan_units",
           "private_mic_per_unit",
           "row_priority", "run_units", "size_grid", "unit_label", "unit_statement"]
