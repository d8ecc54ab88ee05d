"""Public limits on the grid family, checked before any data is read.

``B`` and ``c`` set the memory and compute of every task; absurd values used to
run for minutes and then die with ``MemoryError`` (``B = 2000`` asks for about
22 GiB of refinement histograms, ``c = 10**6`` for over 100 GiB). The estimates
here use ``B``, ``c`` and the number of pairs only -- public quantities -- and
match the real family (``tests/unit/test_limits.py`` compares them):

* refinement histograms of one task: ``3 x row cells x fixed cells x 8`` bytes
  (two orientations plus the prefix-sum scratch, in int64 at worst: an upper
  bound, the histograms themselves being bytes with a log of wrapped cells,
  :mod:`~dpmic_dask.stats.kernels.readoff`); the fixed refinement of sizes
  ``2 .. B/2`` has one cell per distinct fraction ``j / l`` (a Farey count), the
  row refinement at most ``sum(s - 1) + 1`` cells over the master-row sizes ``s``;
* master counts held by one reduction task: ``pairs x cells x (4 split_every + 8)``
  bytes (``split_every`` int32 partition partials and their int64 sum);
* OptimizeAxis per pair: ``sum over grids of R^2 (l + kmax)`` steps.

Default parameters stay far below every limit (at ``B = 200, c = 5``: 35 MiB of
histograms, 6.5 MB of held counts per pair, 5e6 steps per pair).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpmic_dask.errors import InvalidParameterError

#: Largest ``B`` and ``c`` whose cost is even estimated (far beyond any useful value).
B_ABSOLUTE_MAX = 100_000
C_ABSOLUTE_MAX = 1_000_000
#: Refinement histograms plus prefix scratch of one counting task.
MAX_HISTOGRAM_BYTES = 2 * 2**30
#: Master counts of all pairs held by one reduction task.
MAX_COUNT_BYTES = 8 * 2**30
DEFAULT_SPLIT_EVERY = 8
#: Default public memory budget for the counts one task of the engine holds: it
#: sets how many pairs are counted together (a block), never the data.
DEFAULT_TASK_MEMORY = 256 * 2**20
#: OptimizeAxis steps for one pair (about a second per 1e9 on one core).
MAX_OPTIMIZE_STEPS = 2e9


@dataclass(frozen=True)
class GridCost:
    """Estimated cost of the MICr grid family for ``(B, c)`` and ``pairs`` pairs."""

    B: int
    c: int
    pairs: int
    cells_per_pair: int
    fixed_cells: int
    row_cells: int
    histogram_bytes: int
    count_bytes: int
    optimize_steps: float


def _totient_sum(m: int) -> int:
    """``sum(phi(l) for l in 2..m)``: distinct fractions ``j / l`` in ``(0, 1)``, ``l <= m``."""
    phi = np.arange(m + 1, dtype=np.int64)
    for p in range(2, m + 1):
        if phi[p] == p:  # p is prime
            phi[p::p] -= phi[p::p] // p
    return int(phi[2:].sum())


def micr_grid_cost(B: int, c: int, pairs: int = 1,
                   split_every: int = DEFAULT_SPLIT_EVERY) -> GridCost:
    """Estimated memory and compute of the MICr family (validated ``B >= 4``, ``c >= 1``)."""
    _absolute(B, c)
    ls = np.arange(2, B // 2 + 1, dtype=np.int64)
    kmax = np.where(ls * ls <= B, ls, B // ls)
    rows = c * kmax
    cells = 2 * int((rows * ls).sum())
    fixed_cells = _totient_sum(B // 2) + 1
    row_cells = int((np.unique(rows) - 1).sum()) + 1
    steps = 2.0 * float((rows.astype(np.float64) ** 2 * (ls + kmax)).sum())
    held = pairs * held_bytes_per_pair(cells, split_every)
    return GridCost(B, c, pairs, cells, fixed_cells, row_cells, 3 * row_cells * fixed_cells * 8,
                    held, steps)


def held_bytes_per_pair(cells_per_pair: int, split_every: int = DEFAULT_SPLIT_EVERY) -> int:
    """Counts one reduction task holds per pair: ``split_every`` int32 partials and
    their int64 sum."""
    return cells_per_pair * (4 * split_every + 8)


def pairs_per_block(cells_per_pair: int, split_every: int = DEFAULT_SPLIT_EVERY,
                    task_memory: int = DEFAULT_TASK_MEMORY) -> int:
    """How many pairs one task counts together so that its counts fit ``task_memory``
    (at least one)."""
    return max(1, int(task_memory) // held_bytes_per_pair(cells_per_pair, split_every))


#: Bytes a counting task holds per value of its input: one 16-bit joint
#: refinement index (partitions are binned, and their float64 values freed,
#: before they are grouped).
BYTES_PER_INPUT_VALUE = 2


def task_spans(rows: int | None, partitions: int, columns: int,
               task_memory: int = DEFAULT_TASK_MEMORY, *, tasks: int = 1
               ) -> tuple[tuple[int, int], ...]:
    """The consecutive partitions ``[lo, hi)`` each counting task of a block bins
    together.

    Each pair's refinement histograms are read off once per task, a fixed cost
    (about as much as counting a quarter of a million rows), so tasks of a few
    small partitions are much cheaper per row. A block gets ``tasks`` tasks (its
    share of the worker threads, :func:`tasks_per_block`), more where one task's
    input (``rows / partitions`` rows of ``columns`` values per partition,
    :data:`BYTES_PER_INPUT_VALUE` each) would pass ``task_memory``, and one per
    partition when the row count is not known. The partitions are shared out
    evenly (task sizes differ by at most one partition). The spans change the
    work per task, never a count.
    """
    if partitions <= 0:
        return ()
    if not rows or columns <= 0:
        n = partitions
    else:
        per_partition = BYTES_PER_INPUT_VALUE * columns * -(-int(rows) // partitions)
        by_memory = max(1, int(task_memory) // per_partition)
        n = min(partitions, max(1, int(tasks), -(-partitions // by_memory)))
    cuts = [(k * partitions) // n for k in range(n + 1)]
    return tuple(zip(cuts[:-1], cuts[1:]))


def tasks_per_block(pairs: list[int], threads: int) -> tuple[int, ...]:
    """The worker threads shared out over blocks of ``pairs`` pairs each, as their
    numbers of counting tasks: in proportion to the pairs (the work of a task is
    its pairs times its rows), largest remainders first, at least one a block.
    All the tasks together are about one per thread, each of about the same work,
    so no worker waits on another's second task. Blocks whose share is under one
    task still get one (short ones), so very uneven blocks can have more tasks than
    threads: ``[100] + [1] * 15`` pairs on 16 threads give 13 and fifteen 1s."""
    total = sum(pairs)
    if total <= 0:
        return tuple(1 for _ in pairs)
    shares = [max(1, int(threads)) * p / total for p in pairs]
    out = [max(1, int(s)) for s in shares]
    left = max(1, int(threads)) - sum(out)
    for b in sorted(range(len(pairs)), key=lambda b: out[b] - shares[b])[:max(0, left)]:
        out[b] += 1
    return tuple(out)


def even_blocks(pairs: int, per_block: int, threads: int, most: int | None = None) -> int:
    """How many blocks of about equal size to cut ``pairs`` pairs into, when any
    pairs may share a block (:meth:`~dpmic_dask.stats.counting.SharedBinning.even`).
    Each such block receives every column, so the blocks move that many times the
    binned table: the fewest that fit ``per_block`` pairs each, or more -- up to
    twice as many, and at most ``most`` (the blocks cut by column groups, whose
    bytes :meth:`~dpmic_dask.stats.counting.SharedBinning.whole` weighed) -- where
    that number divides the threads or is a multiple of them, so that every block
    gets the same share of the threads (:func:`tasks_per_block`) and every task
    about the same work. 45 pairs at 41 a block (3 blocks by column groups) are 2
    blocks on 2, 4 or 16 threads and 3 on 3 threads, but 2 on 7 threads (shares of
    4 and 3), not 7 that would move the table 7 times. Never more blocks than pairs."""
    threads = max(1, int(threads))
    least = max(1, -(-int(pairs) // max(1, int(per_block))))
    top = 2 * least if most is None else max(least, min(2 * least, int(most)))
    for n in range(least, top + 1):
        if threads % n == 0 or n % threads == 0:
            return max(1, min(n, int(pairs)))
    return max(1, min(least, int(pairs)))


def rows_split_pays(pairs: int, cells: int, rows: int | None, columns: int, index_bytes: int,
                    blocks: int, threads: int, split_every: int = DEFAULT_SPLIT_EVERY,
                    task_memory: int = DEFAULT_TASK_MEMORY) -> bool:
    """Whether to count every pair in one block whose rows are split over the
    worker threads (each task counting the partitions read beside it, their
    partial counts then exchanged in pieces of pairs) rather than in ``blocks``
    blocks of pairs that each take every binned partition.

    Blocks of pairs move each binned partition to every block but the one that
    read it: ``rows x columns x index_bytes x (blocks - 1)`` bytes. One block
    moves its tasks' partial counts: ``(tasks - 1) x pairs x cells`` counts,
    and reads every pair's histograms off once per task instead of once per
    block. Ten columns of 10**7 rows on 2 threads: 200 MB of binned values
    against 29 MB of counts (the transfers took 0.1 s of a 1.4 s release). One
    block is chosen where the counts moved, weighed three times (for the extra
    read-off), are at most the binned bytes, and only where its partial counts
    are summed without a tree (at most ``split_every`` tasks) and fit
    ``task_memory``: the counting task's and a piece's (a part from each task and
    their int64 sum). The binned input must fit half of the threads' task
    memory: however it is partitioned, :func:`task_spans` then gives the block
    at most one counting task a thread (a partition of more than half a task's
    memory is a task of its own, and there are fewer of those than threads; one
    of less takes at least half of a task's memory with it), so the tasks
    weighed here are the tasks there will be. Public quantities only: the
    choice changes which tasks count what, never a count."""
    if rows is None or blocks < 2 or not 2 <= threads <= split_every:
        return False
    tasks = int(threads)
    if 2 * int(rows) * columns * index_bytes > tasks * int(task_memory):
        return False
    width = 4 if rows < 2**31 else 8
    partial = pairs * cells * width
    piece = -(-pairs // int(threads))  # the pairs of a piece of values: one a thread
    if partial > task_memory or piece * cells * (tasks * width + 8) > task_memory:
        return False
    return 3 * (tasks - 1) * partial <= int(rows) * columns * index_bytes * (blocks - 1)


def mice_steps(B: float, c: int) -> float:
    """Estimated OptimizeAxis steps of one MICe with ``B`` cells and clump factor ``c``."""
    qs = np.arange(2, max(int(B // 2), 2) + 1, dtype=np.float64)
    rows = c * np.floor(B / qs)
    return 2.0 * float((rows ** 2 * (qs + np.floor(B / qs))).sum())


def _absolute(B, c) -> None:
    if B > B_ABSOLUTE_MAX:
        raise InvalidParameterError(f"B = {B} is above the largest supported B "
                                    f"({B_ABSOLUTE_MAX}); defaults are at most 200")
    if c > C_ABSOLUTE_MAX:
        raise InvalidParameterError(f"c = {c} is above the largest supported c "
                                    f"({C_ABSOLUTE_MAX}); defaults are 1 to 5")


def _gib(x: float) -> str:
    return f"{x / 2**30:.3g} GiB"


def check_micr_grid(B: int, c: int, pairs: int,
                    split_every: int = DEFAULT_SPLIT_EVERY, said: str = "") -> GridCost:
    """Refuse ``(B, c, pairs)`` whose estimated cost exceeds a limit; the message
    gives the estimate and the limit (``said``: how ``B`` and ``c`` were taken)."""
    cost = micr_grid_cost(B, c, pairs, split_every)
    if cost.histogram_bytes > MAX_HISTOGRAM_BYTES:
        raise InvalidParameterError(
            f"B = {B}, c = {c}{said} needs about "
            f"{_gib(cost.histogram_bytes)} of histograms per task, above the limit of "
            f"{_gib(MAX_HISTOGRAM_BYTES)}; use a smaller B or c")
    if cost.optimize_steps > MAX_OPTIMIZE_STEPS:
        raise InvalidParameterError(
            f"B = {B}, c = {c}{said} needs about "
            f"{cost.optimize_steps:.2g} OptimizeAxis steps per pair, above the limit of "
            f"{MAX_OPTIMIZE_STEPS:.2g}; use a smaller B or c")
    if cost.count_bytes > MAX_COUNT_BYTES:
        raise InvalidParameterError(
            f"{pairs} pairs at B = {B}, c = {c} need about {_gib(cost.count_bytes)} of "
            f"counts per reduction task, above the limit of {_gib(MAX_COUNT_BYTES)}; use a "
            "smaller B or split_every, or select fewer columns (columns=...)")
    return cost


def check_mice_grid(B: float, c: int) -> None:
    """Refuse MICe parameters whose OptimizeAxis work exceeds the per-pair limit."""
    _absolute(B, c)
    steps = mice_steps(B, c)
    if steps > MAX_OPTIMIZE_STEPS:
        raise InvalidParameterError(
            f"MICe with B = {B:g}, c = {c} needs about {steps:.2g} OptimizeAxis steps, "
            f"above the limit of {MAX_OPTIMIZE_STEPS:.2g}; use a smaller B or c")


def check_grid_lower_bound(B: int | None, c: int | None, pairs: int,
                           split_every: int = DEFAULT_SPLIT_EVERY) -> None:
    """Before ``n`` is known (defaults of ``B`` and ``c`` depend on it): refuse what
    is over a limit even at the smallest values the defaults can take (``B = 4``,
    ``c = 1``), so that a refusal here is certain. The full check follows once
    the parameters are resolved."""
    if B is not None or c is not None:
        unset = [name for name, value in (("B", B), ("c", c)) if value is None]
        said = (f" ({' and '.join(unset)} not given: even at the smallest "
                f"{'value' if len(unset) == 1 else 'values'} the default can take)"
                if unset else "")
        check_micr_grid(4 if B is None else B, 1 if c is None else c, pairs, split_every,
                        said)
