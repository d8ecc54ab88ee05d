import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpmic_dask.stats import counting, streaming
from dpmic_dask.stats.counting import grid_block, pair_counts
from dpmic_dask.stats.grids import master_grid_family


@pytest.mark.parametrize("B,c", [(4, 1), (12, 2), (40, 5), (150, 5)])
def test_every_grid_read_off_the_refinement_equals_direct_binning(B, c):
    family = master_grid_family(B, c)
    rng = np.random.default_rng(B + c)
    x = rng.normal(size=4000)
    y = x ** 3 + rng.normal(size=4000)
    xb, yb = (-2.5, 2.5), (-6.0, 6.0)
    counts = pair_counts(x, y, xb, yb, family)
    for g, grid in enumerate(family.grids):
        np.testing.assert_array_equal(grid_block(counts, family, g),
                                      direct_grid_counts(x, y, xb, yb, grid))



def test_the_read_off_checks_cover_both_increment_kernels():
    """The families above include one whose joint refinement is its fixed
    refinement (the increment adds the joint index) and one where it is finer
    (the increment maps it to a fixed cell first)."""
    def mapped(B, c):
        joint = master_grid_family(B, c).joint
        return not np.array_equal(joint.to_fixed, np.arange(joint.cells))

    assert [mapped(40, 5), mapped(150, 5)] == [True, False]

def direct_grid_counts(x, y, xb, yb, grid) -> np.ndarray:
    fixed, other = (x, y) if grid.orientation == "x" else (y, x)
    fb, ob = (xb, yb) if grid.orientation == "x" else (yb, xb)
    cols = counting.bins(fixed, fb, grid.fixed_bins)
    rows = counting.bins(other, ob, grid.master_rows)
    direct = np.zeros((grid.master_rows, grid.fixed_bins), np.int64)
    np.add.at(direct, (rows, cols), 1)
    return direct


@pytest.mark.parametrize("B,c", [(12, 2), (40, 5), (150, 5)])
def test_values_on_every_boundary_count_like_direct_binning(B, c):
    """Each value is binned once into the joint refinement of both axes; values on,
    and just below, every boundary of either refinement (and the bounds, and
    beyond them) land in the same cell of every grid as direct binning puts them."""
    family = master_grid_family(B, c)
    edges = np.concatenate([family.fixed_boundaries, family.row_boundaries])
    x = np.concatenate([edges / 2.0**32, (edges - 1) / 2.0**32, [0.0, 1.0, -0.5, 2.0]])
    y = np.random.default_rng(B * c).permutation(x)  # test data only
    counts = pair_counts(x, y, (0.0, 1.0), (0.0, 1.0), family)
    for g, grid in enumerate(family.grids):
        np.testing.assert_array_equal(grid_block(counts, family, g),
                                      direct_grid_counts(x, y, (0.0, 1.0), (0.0, 1.0), grid))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), pieces=st.integers(1, 7))
def test_counts_of_any_split_sum_to_counts_of_whole(seed, pieces):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 600))
    x = rng.normal(size=n)
    y = rng.normal(size=n) + x
    family = master_grid_family(int(rng.integers(4, 50)), int(rng.integers(1, 5)))
    cuts = np.sort(rng.integers(0, n + 1, size=pieces - 1))
    parts = [
        pair_counts(a, b, (-2, 2), (-3, 3), family)
        for a, b in zip(np.split(x, cuts), np.split(y, cuts))
    ]
    whole = pair_counts(x, y, (-2, 2), (-3, 3), family)
    np.testing.assert_array_equal(np.sum(parts, axis=0), whole)
    for grid in family.grids:
        assert whole[grid.offset:grid.offset + grid.n_cells].sum() == n


def test_partition_partials_are_int32_and_sums_widen_to_int64():
    import pandas as pd

    from dpmic_dask.stats.counting import combine_partials, partition_counts
    from dpmic_dask.stats.countspec import CountSpec

    family = master_grid_family(8, 1)
    spec = CountSpec(("a", "b"), ((0.0, 1.0), (0.0, 1.0)), None, family)
    frame = pd.DataFrame({"a": np.zeros(10), "b": np.zeros(10)})
    part = partition_counts(frame, spec)
    assert part.counts.dtype == np.int32
    # all rows land in one cell; summing partials near the int32 limit must not wrap
    big = type(part)(np.full_like(part.counts, 2**31 - 1), 2**31 - 1, part.missing)
    total = combine_partials([big, big, part])
    assert total.counts.dtype == np.int64
    assert total.counts.max() == 2 * (2**31 - 1) + 10


@pytest.mark.parametrize("B,c,extra", [(4, 1, ()), (12, 2, ()), (57, 3, ()), (200, 5, ()),
                                       (200, 5, (70,)), (40, 5, (10, 20))])
def test_read_off_equals_plain_prefix_sums(B, c, extra):
    """The row-at-a-time read-off (column sums kept, prefix sums formed at the
    cuts each row reads, by segment sums or one running sum) gives the counts of
    plain 2-D prefix sums over the whole refinement histogram, and leaves its
    input at zero."""
    from dpmic_dask.stats.grids import count_layout
    from dpmic_dask.stats.kernels.binning import read_off_grids
    from dpmic_dask.stats.kernels.readoff import read_off_orientation

    family = count_layout(B, c, extra)
    rng = np.random.default_rng(B * 10 + c)
    shape = (2,) + family.refinement_shape
    for density in (0.001, 0.1, 1.0):
        hist = np.where(rng.random(shape) < density, rng.integers(0, 1000, shape), 0)
        plain = np.empty(family.n_cells, np.int64)
        scratch = np.empty((shape[1] + 1, shape[2] + 1), np.int64)
        read_off_grids(hist, scratch, *family.kernel_layout, plain)
        np.testing.assert_array_equal(counting.master_counts(hist, family), plain)
        layout = streaming.read_off_layout(family)
        work = hist.astype(np.int32)
        out = np.zeros(family.n_cells, np.int32)
        prefix = np.empty(shape[2] + 1, np.int32)
        colsum = np.empty(shape[2], np.int32)
        store = np.empty(layout.store_size, np.int32)
        for o in range(2):
            read_off_orientation(work[o], np.zeros(0, np.int64), prefix, colsum, store,
                                 *layout.orientations[o], out)
        np.testing.assert_array_equal(out, plain)
        assert not work.any()


def test_block_counts_equal_pair_by_pair_counts():
    """A task counting many pairs over several chunks (shared histogram, cells
    computed once per column) gives each pair's counts alone."""
    from dpmic_dask.stats.counting import count_chunks
    from dpmic_dask.stats.countspec import CountSpec

    family = master_grid_family(40, 3)
    rng = np.random.default_rng(7)
    cols = [rng.normal(size=3000) for _ in range(5)]
    cols[1] = cols[0] ** 2 + 0.1 * rng.normal(size=3000)
    cols[2][:1500] = 0.25  # a heavy cell
    spec = CountSpec(tuple("abcde"), ((-2.0, 2.0),) * 5, None, family)
    chunks = [[col[s] for col in cols] for s in (slice(0, 1000), slice(1000, 2900),
                                                 slice(2900, 3000))]
    whole = count_chunks(chunks, spec)
    for p, (a, b) in enumerate(spec.pairs):
        alone = pair_counts(cols[a], cols[b], (-2.0, 2.0), (-2.0, 2.0), family)
        np.testing.assert_array_equal(whole.counts[p], alone)


def test_spec_tokens_tell_layouts_and_pairs_apart():
    """Dask caches by token: specs that count differently never share one."""
    from dask.base import tokenize

    from dpmic_dask.stats.countspec import CountSpec
    from dpmic_dask.stats.grids import count_layout

    def spec(family, pairs=None, bounds=(0.0, 1.0)):
        return CountSpec(("a", "b", "c"), (bounds,) * 3, None, family, pairs)

    base = spec(master_grid_family(40, 5))
    assert tokenize(base) == tokenize(spec(master_grid_family(40, 5)))
    others = [spec(count_layout(40, 5, (10,))), spec(master_grid_family(40, 4)),
              spec(master_grid_family(40, 5), ((0, 1),)), spec(master_grid_family(40, 5),
                                                               bounds=(0.0, 2.0))]
    assert len({tokenize(s) for s in [base] + others}) == 1 + len(others)


@pytest.mark.parametrize("pair_list", [None, ((0, 7), (2, 3), (5, 9), (1, 10), (4, 6))])
def test_column_groups_binned_once_give_each_block_its_own_chunks(pair_list):
    """Blocks read their columns from column groups binned once each: the chunks
    a block gathers equal its own columns binned directly, and so do its counts."""
    import pandas as pd

    from dpmic_dask.stats.counting import (
        bin_partition,
        count_binned_partitions,
        gather_chunks,
        shared_binning,
    )
    from dpmic_dask.stats.countspec import CountSpec

    family = master_grid_family(20, 2)
    rng = np.random.default_rng(11)
    names = tuple(f"v{k}" for k in range(11))
    frames = [pd.DataFrame({n: rng.normal(size=size) for n in names}) for size in (50, 80)]
    frames[1].loc[3, "v4"] = np.nan
    spec = CountSpec(names, ((-2.0, 2.0),) * 11, tuple(float(k) / 10 for k in range(11)),
                     family, pair_list)
    blocks = spec.blocks(4)
    assert shared_binning(spec, blocks, None, 2**30) is None  # rows unknown
    assert shared_binning(spec, blocks, 130, 11 * 130 * 2 - 1) is None  # too large
    shared = shared_binning(spec, blocks, 130, 11 * 130 * 2)
    assert shared is not None and len(blocks) > 1
    grouped = [[bin_partition(f, s) for f in frames] for s in shared.specs]
    for b, block in enumerate(blocks):
        chunks = [c for p in range(2) for c in (grouped[k][p] for k in shared.groups[b])]
        mine = gather_chunks(chunks, shared.takes[b])
        for f, got in zip(frames, mine):
            want = bin_partition(f, block.spec)
            np.testing.assert_array_equal(got.index, want.index)
            np.testing.assert_array_equal(got.missing, want.missing)
        direct = count_binned_partitions(*[bin_partition(f, block.spec) for f in frames],
                                         spec=block.spec)
        via = count_binned_partitions(*chunks, spec=block.spec, take=shared.takes[b])
        np.testing.assert_array_equal(via.counts, direct.counts)
    # blocks of even size, each taking a partition's chunks of every group
    whole = [tuple(grouped[k][p] for k in range(len(shared.specs))) for p in range(2)]
    for count in (1, 2, 3, 7):
        even, cut = shared.even(spec, count)
        sizes = [len(b.indices) for b in even]
        assert len(even) == min(count, len(spec.pairs)) and max(sizes) - min(sizes) <= 1
        assert [i for b in even for i in b.indices] == list(range(len(spec.pairs)))
        assert cut.whole()
        for b, block in enumerate(even):
            assert [(block.spec.columns[i], block.spec.columns[j])
                    for i, j in block.spec.pairs] == \
                [(spec.columns[spec.pairs[p][0]], spec.columns[spec.pairs[p][1]])
                 for p in block.indices]
            take = (*cut.takes[b], cut.groups[b])
            for f, part, got in zip(frames, whole, gather_chunks(whole, take)):
                want = bin_partition(f, block.spec)
                # views of the binned chunks, not copies
                assert all(any(np.shares_memory(column, c.index) for c in part)
                           for column in got.index)
                np.testing.assert_array_equal(got.index, want.index)
                np.testing.assert_array_equal(got.missing, want.missing)
            direct = count_binned_partitions(*[bin_partition(f, block.spec) for f in frames],
                                             spec=block.spec)
            via = count_binned_partitions(*whole, spec=block.spec, take=take)
            np.testing.assert_array_equal(via.counts, direct.counts)


def test_counting_holds_nothing_per_value_beside_its_binned_input():
    """A counting task's memory budget counts two bytes per binned value; the
    increments read the joint indices straight, so counting 4 x 10**6 binned
    values (8 MB) allocates well under a megabyte (each column's cells, made
    per task, were 24 MB more)."""
    import tracemalloc

    from dpmic_dask.stats.countspec import CountSpec

    family = master_grid_family(12, 2)
    rng = np.random.default_rng(5)
    spec = CountSpec(("a", "b", "c", "d"), ((-3.0, 3.0),) * 4, None, family)
    chunk = counting.bin_chunk([rng.normal(size=10**6) for _ in range(4)], spec)
    streamed = streaming.streamed_counts([chunk], spec)
    next(iter(streaming.streamed_counts([chunk], spec).counts))  # kernels compiled
    tracemalloc.start()
    try:
        got = [row.copy() for row in streamed.counts]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20, peak
    assert len(got) == 6 and all(row.sum() == 10**6 * len(family.grids) for row in got)


@pytest.mark.parametrize("B,c", [(40, 5), (150, 5)])
@pytest.mark.parametrize("heavy", [255, 256, 257, 512, 1799])
def test_byte_histograms_count_cells_past_255_exactly(B, c, heavy):
    """The refinement histograms count in bytes and log each wrap past 255: cells
    holding 255, 256, 257, 512 and 1,799 rows, spread over chunks that split them
    anywhere (a wrap in one chunk, the next in another), count like direct
    binning, for both increment kernels (B = 40 maps joint cells to fixed cells,
    B = 150 does not), with the rows of other cells around them."""
    from dpmic_dask.stats.counting import count_chunks
    from dpmic_dask.stats.countspec import CountSpec

    family = master_grid_family(B, c)
    rng = np.random.default_rng(heavy)
    n = heavy + 900
    x = rng.uniform(-1.0, 1.0, n)
    y = rng.uniform(-1.0, 1.0, n)
    x[:heavy], y[:heavy] = 0.3, -0.7  # one cell of both orientations holds `heavy` rows
    x[heavy:heavy + 300] = 0.3  # and a column of cells with more
    order = rng.permutation(n)  # test data only
    x, y = x[order], y[order]
    bounds = ((-1.0, 1.0), (-1.0, 1.0))
    spec = CountSpec(("x", "y"), bounds, None, family)
    cuts = np.sort(rng.choice(np.arange(1, n), size=6, replace=False))
    chunks = [[x[lo:hi], y[lo:hi]] for lo, hi in zip([0, *cuts], [*cuts, n])]
    counts = count_chunks(chunks, spec).counts[0]
    for g, grid in enumerate(family.grids):
        np.testing.assert_array_equal(grid_block(counts, family, g),
                                      direct_grid_counts(x, y, *bounds, grid))
