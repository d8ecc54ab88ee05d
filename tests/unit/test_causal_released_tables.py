"""Table tests on released tables (``test="chisq"``): the joint tables and their
sensitivity, checked exhaustively; every test's table read off its joint table;
the noise-aware chi-square; one charge; the exact decisions at a huge budget."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpmic_dask.causal import causal_graph, causal_graph_exact
from dpmic_dask.causal.citests import g_pvalue_causallearn, pearson_statistic
from dpmic_dask.causal.noisychisq import NoisyChisqMargins, can_see, noisy_chisq
from dpmic_dask.causal.tablerelease import (
    LevelRelease,
    TableBudget,
    canonical,
    joint_sets,
    most_tables,
)
from dpmic_dask.causal.tables import ColumnCoding, LevelTables, TableKey, count_partition
from dpmic_dask.errors import InvalidParameterError
from dpmic_dask.privacy.accounting import Budget, InMemoryLedger
from dpmic_dask.privacy.conversion import rho_from_eps_delta


def codings_of(names, levels=2):
    return tuple(ColumnCoding(c, levels + 1, categories=tuple(range(levels))) for c in names)


def joint_counts(frame, codings, sets):
    layout = LevelTables(codings, tuple(canonical(s) for s in sets))
    return layout, count_partition(frame, layout).counts


@pytest.mark.parametrize("level", [0, 1, 2])
def test_the_level_vector_moves_by_2T_in_l1_and_sqrt_2T_in_l2_exhaustively(level):
    """Every dataset of 2 rows on 4 columns of 2 categories (and a value outside
    them, the "other" bin) and every replace-one neighbour: the vector of all
    joint tables of the level's column sets moves by at most 2 T (L1) and
    sqrt(2 T) (L2), T the number of sets, and both are attained."""
    names = list("abcd")
    codings = codings_of(names)
    sets = tuple(itertools.combinations(range(4), level + 2))
    values = list(itertools.product((0, 1, 7), repeat=4))  # 7: the "other" bin
    worst_l1 = worst_l2 = 0.0
    layout = LevelTables(codings, tuple(canonical(s) for s in sets))
    counts = {}
    for rows in itertools.product(range(len(values)), repeat=2):
        frame = pd.DataFrame([values[r] for r in rows], columns=names)
        counts[rows] = count_partition(frame, layout).counts.astype(float)
    for (keep, _), before in counts.items():
        for new in range(len(values)):
            diff = counts[(keep, new)] - before
            worst_l1 = max(worst_l1, np.abs(diff).sum())
            worst_l2 = max(worst_l2, math.sqrt((diff ** 2).sum()))
    t = len(sets)
    assert worst_l1 == 2 * t and worst_l2 == pytest.approx(math.sqrt(2 * t))
    assert most_tables(4, level) == t


def test_each_test_reads_its_table_off_the_joint_table():
    rng = np.random.default_rng(0)
    names = list("abcde")
    frame = pd.DataFrame(rng.integers(0, 4, (600, 5)), columns=names)  # 3: "other"
    codings = codings_of(names, levels=3)
    keys = tuple(TableKey(x, y, cond) for x, y in itertools.combinations(range(5), 2)
                 for cond in itertools.combinations([c for c in range(5) if c not in (x, y)], 2))
    sets = joint_sets(keys)
    assert len(sets) == math.comb(5, 4) < len(keys)
    layout, counts = joint_counts(frame, codings, sets)
    released = LevelRelease(sets, layout, counts, 0.0, 0.0)
    direct = LevelTables(codings, keys)
    exact = count_partition(frame, direct).counts
    for t, key in enumerate(keys):
        assert np.array_equal(released.table(key), direct.table(exact, t)), key
    joint = released.joint((0, 1, 2, 3))
    assert joint.shape == (4, 4, 4, 4) and joint.sum() == 600


def test_noisy_chisq_without_noise_is_pearson_on_the_rows_and_columns_that_occur():
    rng = np.random.default_rng(1)
    table = rng.integers(5, 50, (3, 4, 3)).astype(np.int64)
    table[1, 2, :] = 0  # an empty row in one stratum
    table[2, :, :] = 0  # an empty stratum
    stat, df, reach = noisy_chisq(table, 0.0)
    kept = [table[0], np.delete(table[1], 2, axis=0)]
    assert stat == pytest.approx(sum(pearson_statistic(k[None, None])[0] for k in kept))
    assert df == (4 - 1) * (3 - 1) + (3 - 1) * (3 - 1)
    assert reach == pytest.approx(table.sum())  # without noise: every row counted
    assert g_pvalue_causallearn(table, "chisq") == pytest.approx(stats.chi2.sf(stat, df))
    # noise in the weights: a smaller statistic and reach, the same rows seen
    noisy, same, less = noisy_chisq(table, 25.0)
    assert noisy < stat and same == df and less < reach
    # noise larger than the counts: nothing is seen, no degrees of freedom
    assert noisy_chisq(table, 1e6) == (0.0, 0, 0.0)


def test_a_test_blind_to_a_small_dependence_separates_nothing():
    """can_see: power at least 1/2 against Cohen's w = 0.1; with df = 4 at alpha
    0.05 that takes a reach of about 750 rows. An independent 2 x 2 table of 1000
    rows separates its pair exactly; under noise that hides a small dependence it
    separates nothing (the edge would stay)."""
    assert not can_see(0, 1e9, 0.05)
    assert not can_see(4, 500.0, 0.05) and can_see(4, 1000.0, 0.05)
    layout = LevelTables(codings_of(["x", "y"]), (TableKey(0, 1, ()),))
    counts = np.zeros((3, 3), dtype=np.int64)  # the last row and column: "other"
    counts[:2, :2] = 250
    key = layout.keys[0]
    exact = NoisyChisqMargins(layout, counts.ravel(), 0.0, 0.05)
    assert exact.margin[key] == pytest.approx(0.05 - 1.0)  # p = 1: independent
    blind = NoisyChisqMargins(layout, counts.ravel(), 40.0 ** 2, 0.05)
    assert blind.margin[key] == pytest.approx(0.05)


def test_the_noise_scale_per_level_from_public_quantities():
    pure = TableBudget.plan(1.0, 0.0, (0.5, 0.25, 0.25))
    assert pure.scale(0, 10) == pytest.approx(2 * 10 / 0.5)
    assert pure.scale(2, 40) == pytest.approx(2 * 40 / 0.25)
    gauss = TableBudget.plan(1.0, 1e-6, (1 / 3, 1 / 3, 1 / 3))
    rho = rho_from_eps_delta(1.0, 1e-6) / 3
    assert gauss.scale(1, 30) == pytest.approx(math.sqrt(2 * 30) / math.sqrt(2 * rho))
    with pytest.raises(InvalidParameterError, match="too large to sample"):
        TableBudget.plan(1e-15, 0.0, (1.0,)).check(40)


def chain(n, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 3, n))
    c = np.where(rng.random(n) < 0.7, b, rng.integers(0, 3, n))
    d = rng.integers(0, 3, n)
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


CATEGORIES = {c: [0, 1, 2] for c in "abcd"}


def test_categorical_columns_default_to_released_tables_charged_once():
    frame = chain(20_000)
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0))
    g = causal_graph(frame, 1.0, categories=CATEGORIES, ledger=ledger, dataset="d")
    report = g.report()
    assert report.test == "chisq" and len(ledger.charges("d")) == 1
    assert float(ledger.spent("d")) == pytest.approx(1.0)
    # the chain's edges always; a - c is separated given b except when its test
    # (level alpha = 0.05) errs: kept in 9 of 200 releases when measured; d, which
    # is independent, keeps an edge about once in 2,000 releases, two never seen
    assert {frozenset("ab"), frozenset("bc")} <= g.skeleton
    assert len(g.skeleton - {frozenset("ab"), frozenset("bc"), frozenset("ac")}) <= 1
    assert "each level releases the joint tables" in str(report)
    first = g.released_tables[0]
    assert set(first) == {tuple(p) for p in itertools.combinations("abcd", 2)}
    assert first[("a", "b")].shape == (4, 4)
    assert len(g.released_tables) == len(report.levels)
    # every level paid is listed, the ones the search did not reach as not run
    assert len(report.parts) == report.max_condition_size + 1
    assert all("not run" in name for name, _, _ in report.parts[len(report.levels):])


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_a_huge_budget_gives_the_exact_chisq_graph(delta):
    frame = chain(5000, seed=3)
    exact = causal_graph_exact(frame, categories=CATEGORIES, test="chisq")
    private = causal_graph(frame, 1e12, delta=delta, categories=CATEGORIES)
    assert np.array_equal(private.graph, exact.graph)
    assert private.separating_sets == exact.separating_sets


def test_a_level_that_sees_nothing_ends_the_search_and_the_report_says_so():
    """Pure DP at a small eps on a small table: no level-0 test can see a small
    dependence through the noise, so no later level is counted (its tables would
    only be noisier); every edge stays, and the report says why."""
    frame = chain(3000)
    g = causal_graph(frame, 0.05, categories=CATEGORIES, max_condition_size=2)
    report = g.report()
    assert len(report.levels) == 1 and len(g.released_tables) == 1
    assert "levels 1-2 not run" in str(report)
    assert len(g.skeleton) == 6  # nothing could be separated
    assert report.levels[0].blind == 6 and "6 tests blind" in str(report)


def test_a_level_needing_too_many_counts_ends_the_search(monkeypatch):
    import dpmic_dask.causal.tablerelease as tablerelease

    monkeypatch.setattr(tablerelease, "MAX_RELEASED_CELLS", 50)  # level 0: 6 x 16 counts
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(10.0))
    with pytest.raises(InvalidParameterError, match="nothing was (read or )?charged"):
        causal_graph(chain(20_000), 5.0, categories=CATEGORIES, ledger=ledger, dataset="d")
    assert ledger.charges("d") == []
    monkeypatch.setattr(tablerelease, "MAX_RELEASED_CELLS", 100)  # level 1: 64 per table
    frame = chain(20_000)
    frame["d"] = np.where(np.random.default_rng(1).random(20_000) < 0.7, frame["c"], frame["d"])
    g = causal_graph(frame, 5.0, delta=1e-6, categories=CATEGORIES)  # a - b - c - d
    assert len(g.report().levels) == 1
    assert "levels 1-2 not run: level 1's tables would need" in str(g.report())
    assert len(g.released_tables) == 1


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_a_missing_category_is_refused_before_the_charge(missing):
    from dpmic_dask.errors import MissingValuesError

    frame = chain(500).astype(object)
    frame.iloc[3, 1] = missing
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(1.0))
    with pytest.raises(MissingValuesError):
        causal_graph(frame, 1.0, categories=CATEGORIES, ledger=ledger, dataset="d")
    assert ledger.charges("d") == []


def test_a_noisy_pure_release_warns_before_the_charge_and_names_delta(monkeypatch):
    """Many categorical columns under pure DP: the notice, before the charge,
    says that ``delta > 0`` narrows the noise; a zCDP release as noisy says only
    the other remedies (it is already zCDP)."""
    import warnings

    from dpmic_dask.errors import NoiseWarning
    from dpmic_dask.release import executor

    record: dict = {}
    at_charge: list[int] = []
    real_charge = executor.charge_budget

    def spy_charge(*args, **kwargs):
        at_charge.append(len(record["seen"]))
        return real_charge(*args, **kwargs)

    monkeypatch.setattr(executor, "charge_budget", spy_charge)
    gen = np.random.default_rng(3)
    frame = pd.DataFrame({f"c{i}": gen.integers(0, 3, 2000) for i in range(12)})
    categories = {c: [0, 1, 2] for c in frame.columns}
    for delta, names_delta in ((0.0, True), (1e-6, False)):
        ledger = InMemoryLedger()
        ledger.set_budget("d", Budget(1.0, 1e-5))
        at_charge.clear()
        with warnings.catch_warnings(record=True) as seen:
            record["seen"] = seen
            warnings.simplefilter("always")
            causal_graph(frame, 0.01, delta=delta, categories=categories, ledger=ledger,
                         dataset="d")
        notices = [i for i, w in enumerate(seen) if issubclass(w.category, NoiseWarning)
                   and "released tables are noisy" in str(w.message)]
        assert len(notices) == 1, (delta, [str(w.message) for w in seen])
        assert ("delta > 0" in str(seen[notices[0]].message)) is names_delta
        assert len(ledger.charges("d")) == 1
        assert at_charge and notices[0] < at_charge[0]  # warned before the one charge


def test_a_noisy_release_per_unit_warns_after_the_charge_on_its_released_count():
    """Per unit the row count is private: no notice before the charge; the same
    notice after it, read off the released count (post-processing), and only for a
    noisy release."""
    import warnings

    from dpmic_dask.errors import NoiseWarning

    gen = np.random.default_rng(4)
    frame = pd.DataFrame({f"c{i}": gen.integers(0, 3, 4000) for i in range(8)})
    frame["who"] = np.arange(len(frame)) // 2
    categories = {c: [0, 1, 2] for c in frame.columns if c != "who"}
    for eps, noisy in ((0.05, True), (1e4, False)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            g = causal_graph(frame, eps, categories=categories, privacy_unit="who",
                             max_rows_per_unit=2, ledger=InMemoryLedger(uncapped=True))
        assert g.report().unit == "who"
        notices = [w for w in seen if issubclass(w.category, NoiseWarning)
                   and "released tables are noisy" in str(w.message)]
        assert len(notices) == int(noisy), (eps, [str(w.message) for w in seen])


def test_the_report_says_the_smallest_dependence_the_noise_lets_a_test_see():
    """From public quantities: larger with less eps, at the exact test's value
    without noise, and 'none' when the noise hides every row of the tables."""
    from dpmic_dask.causal.noisychisq import smallest_visible_effect

    frame = chain(20_000)
    seen = []
    for eps in (0.3, 3.0):
        g = causal_graph(frame, eps, delta=1e-6, categories=CATEGORIES)
        report = g.report()
        assert report.noise_scale == report.parts[0][2]
        seen.append(report.smallest_visible)
        assert f"Cohen's w = {report.smallest_visible:.3g}" in str(report)
    assert seen[0] > seen[1] > 0
    codings = codings_of("abc", levels=3)
    exact = smallest_visible_effect(codings, 20_000, 0.0, 0.05)
    assert exact == pytest.approx(math.sqrt((stats.chi2.ppf(0.95, 4) - 4) / 20_000))
    assert seen[1] > exact
    assert smallest_visible_effect(codings, 20_000, 1e12, 0.05) == math.inf
    # binary flags listed as one category ([1], the rest "other"): a 2 x 2 table, not
    # 1 x 1 (df 0: "none: the noise hides every dependence" while edges were found)
    one = codings_of("ab", levels=1)
    assert smallest_visible_effect(one, 20_000, 0.0, 0.05) == pytest.approx(
        smallest_visible_effect(codings_of("ab", levels=2), 20_000, 0.0, 0.05))


@pytest.mark.parametrize("delta", [0.0, 1e-6])
def test_the_parts_add_up_to_the_charge_when_the_search_ends_early(delta):
    """Independent columns: level 0 removes every edge and PC stops on its own. The
    levels it never ran were paid before the noise all the same; the report lists
    every level's part (those not run, as such), so the parts add up to the charge
    (it listed level 0's third alone)."""
    gen = np.random.default_rng(0)  # test data only
    n = 20000
    frame = pd.DataFrame({c: gen.choice(["a", "b", "c"], n) for c in "pqrs"})
    ledger = InMemoryLedger()
    ledger.set_budget("d", Budget(10.0, delta))
    # alpha 1e-3: a false edge in about 1 test in 1,000, so level 2 (three connected
    # false edges) is never reached
    graph = causal_graph(frame, 1.0, delta=delta, categories={c: ["a", "b", "c"] for c in "pqrs"},
                         max_condition_size=2, alpha=1e-3, ledger=ledger, dataset="d")
    report = graph.report()
    ran = len(report.levels)
    assert ran < 3
    names = [name for name, _, _ in report.parts]
    assert len(names) == 3 and all("not run" in name for name in names[ran:])
    assert not any("not run" in name for name in names[:ran])
    key = "rho" if delta else "epsilon"
    amounts = [float(amount.split(key + " ")[1]) for _, amount, _ in report.parts]
    (charge,) = ledger.charges("d")
    spent = charge.cost.rho if delta else charge.cost.epsilon
    assert sum(amounts) == pytest.approx(spent, rel=1e-3)
    assert "level 2 tables (not run" in str(report)


def test_a_constant_column_separates_where_the_noise_hides_no_row():
    """A column with one category has no degree of freedom in any table. Without
    noise that reads as independent (causal-learn's chi-square, and
    ``causal_graph_exact``); released tables whose noise could hide rows keep its
    edges (a blind test is no evidence), but at an eps so large the noise hides no
    row the released tables are the exact ones, and its edges stayed there too,
    with a warning that blamed the noise. Now they go, and the note says why."""
    import warnings

    from dpmic_dask.errors import NoiseWarning

    gen = np.random.default_rng(0)  # test data only
    n = 5000
    c = gen.normal(size=n)
    frame = pd.DataFrame({"cat": np.where(c > 0, "hi", "lo"),
                          "c3": np.where(c > 0.7, "x", np.where(c > -0.7, "y", "z")),
                          "one": "only"})
    cats = {"cat": ["hi", "lo"], "c3": ["x", "y", "z"], "one": ["only"]}
    exact = causal_graph_exact(frame, categories=cats, test="chisq")
    assert exact.skeleton == {frozenset({"cat", "c3"})}
    for eps, separated in ((1e6, True), (0.05, False)):
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            g = causal_graph(frame, eps, categories=cats, test="chisq",
                             ledger=InMemoryLedger(uncapped=True))
        note = [str(w.message) for w in said
                if issubclass(w.category, NoiseWarning) and "'one'" in str(w.message)]
        assert g.report().flat[-1] == "one" and len(note) == 1
        assert ("their edges go" in note[0]) is separated
        assert ("their edges go" in str(g.report())) is separated
        touching = {e for e in g.skeleton if "one" in e}
        assert (not touching) if separated else touching
    assert g.skeleton >= exact.skeleton


def test_too_many_table_counts_are_refused_before_anything_is_read():
    """The released tables' size depends on the columns and their lists alone, but
    it was checked after level 0's pass over the data (10 s and 1.4 GiB at 400
    columns); refused now before any partition is read."""
    import dask.dataframe as dd

    from dpmic_dask.errors import InvalidParameterError

    names = [f"c{k}" for k in range(100)]
    levels = [str(v) for v in range(50)]
    meta = pd.DataFrame({name: pd.Series(dtype=object) for name in names})

    def unreadable(_):
        raise RuntimeError("a partition was read")

    frame = dd.from_map(unreadable, [0, 1], meta=meta, enforce_metadata=False)
    ledger = InMemoryLedger(uncapped=True)
    with pytest.raises(InvalidParameterError, match="nothing was read or charged"):
        causal_graph(frame, 1.0, delta=1e-6, categories=dict.fromkeys(names, levels),
                     test="chisq", max_condition_size=0, ledger=ledger)
    assert ledger.charges() == []
