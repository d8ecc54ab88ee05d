"""Counting kernels: histogram increments (a pair's two orientations in one pass)
and the read-off of every master grid from one orientation's refinement
histogram.

The histograms count in bytes, with a log of the cells that wrap past 255
(:data:`WRAP`), which the read-off adds back. The read-off never materialises
the 2-D prefix sums of the whole refinement histogram (``Rr x Rf`` cells, 3.9 MB
of int32 prefix sums at ``B = 200, c = 5``, more than a core's L2 cache). It
walks the histogram's rows once, keeping the column sums of the rows walked so
far (``Rf`` entries, in L1; one vectorised add per cell). When a row is a row
cut of some master-row size ``m``, it sums those column sums up to each fixed
cut that the grids with ``m`` master rows need (a median of 45 of the 3,045
cuts per row at ``B = 200``, so a row costs short vectorised reductions, not
``Rf`` dependent adds) and copies the 2-D
prefix sums at those cuts into a small store (``m + 1`` rows per size; about
70 k entries in all at ``B = 200``). Each grid's counts are then four look-ups
in the store per cell. The same pass sets the histogram back to zero, so the
next pair needs no separate clearing pass. The arithmetic is that of the plain
2-D prefix sums (the same integer sums, in another order), so counts are
identical.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: A row whose cuts are on average fewer than this many columns apart gets its
#: prefix sums by one running sum over all columns instead of a reduction per
#: segment (short reductions cost more than the adds they save).
DENSE_SEGMENT = 16


#: The refinement histograms count in bytes (a fourth of int32's cache and memory
#: traffic: 3.2 against 3.5-3.9 ns per pair and row at ``B = 200``, 5 x 10**6
#: rows): a cell whose count passes a multiple of :data:`WRAP` wraps to zero and
#: its flat index is logged, once per wrap; the read-off adds :data:`WRAP` for
#: each entry.
WRAP = 256


def wrap_capacity(rows: int) -> int:
    """Entries of a wrap log that holds every wrap of one pair's two orientations
    over ``rows`` rows: a cell wraps once per :data:`WRAP` of its increments, so
    an orientation logs at most ``rows // WRAP`` wraps."""
    return 2 * (rows // WRAP) + 2


@njit(nogil=True, cache=True, inline="always")
def _bump(flat, p):
    """Add one to byte cell ``flat[p]``; whether it wrapped to zero. In bytes: an
    int64 sum compared with 256 took 12% longer."""
    v = np.uint8(flat[p] + np.uint8(1))
    flat[p] = v
    return v == 0


@njit(nogil=True, cache=True)
def add_pair(a_index, b_index, row_offsets, to_fixed, flat_x, flat_y, wraps, ends):
    """One pair's increments of both orientations, in one pass over its rows:
    ``flat_x[row_offsets[b] + fixed(a)] += 1`` (``b``'s row cell by ``a``'s fixed
    cell) and ``flat_y[row_offsets[a] + fixed(b)] += 1`` (the mirror image), two
    row-major ``Rr x Rf`` refinement histograms of bytes, flat. ``fixed(j)`` is
    ``to_fixed[j]`` where the family's joint refinement is finer than its fixed
    one, and ``j`` itself where ``to_fixed`` is ``None`` (the identity, as at the
    default ``B`` and ``c`` from a few thousand rows on): numba compiles each case
    on its own (an identity look-up took 40% longer).

    ``a_index``, ``b_index``: the two columns' joint refinement indices (uint16
    or int32 [n]); ``row_offsets``: int64 look-up ``to_row[j] * Rf`` (one entry
    per joint cell, 24 KB at ``B = 200``: it stays in a core's L1 or L2). A
    column's cells are never materialised: a task holds its binned input and
    nothing per value besides. Both orientations in one pass read each index
    once (7% less time than a pass each, in one process at ``B = 200``).

    ``flat_x`` and ``flat_y`` are uint8: a cell that wraps to zero (:data:`WRAP`,
    :func:`_bump`) logs its flat index in ``wraps`` (int64,
    :func:`wrap_capacity` of the pair's rows in all calls): orientation x's from
    the front, ``ends[0]`` of them, y's from the back, ``ends[1]``; ``ends`` is
    carried from call to call (chunks of one pair).
    """
    kx = ends[0]
    ky = ends[1]
    top = wraps.shape[0]
    for i in range(a_index.shape[0]):
        ja = a_index[i]
        jb = b_index[i]
        if to_fixed is None:
            fa = np.int64(ja)
            fb = np.int64(jb)
        else:
            fa = to_fixed[ja]
            fb = to_fixed[jb]
        p = row_offsets[jb] + fa
        if _bump(flat_x, p):
            wraps[kx] = p
            kx += 1
        q = row_offsets[ja] + fb
        if _bump(flat_y, q):
            ky += 1
            wraps[top - ky] = q
    ends[0] = kx
    ends[1] = ky


@njit(nogil=True, cache=True)
def read_off_orientation(hist, wraps, prefix, colsum, store, row_cut_ptr, row_cuts,
                         row_task_ptr, task_dest, task_start, task_length, store_cuts,
                         store_zero,
                         grid_offsets, grid_rows, grid_fixed, grid_base, grid_width,
                         grid_cut_start, grid_cuts, out):
    """Read the master grids of one orientation off its refinement histogram and
    set the histogram to zero.

    Parameters
    ----------
    hist : uint8, int32 or int64 [Rr, Rf]
        The refinement histogram (zero on return).
    wraps : int64[W], increasing
        Flat indices of ``hist`` cells, each adding :data:`WRAP` to its cell's
        count (the wrap log of a byte histogram, sorted; empty for wider counts).
    prefix : [Rf + 1], the dtype of the counts (int32 or int64)
        Scratch: one row of 2-D prefix sums (only at the cuts its row reads).
    colsum : [Rf], the dtype of the counts
        Scratch: the column sums of the histogram rows walked so far.
    store : [S], the dtype of the counts
        Scratch: the prefix sums at the row and fixed cuts the grids read.
    row_cut_ptr : int64[Rr + 1]
        The fixed cuts read after histogram row ``r`` are
        ``row_cuts[row_cut_ptr[r] : row_cut_ptr[r + 1]]``.
    row_cuts : int64[...]
        Each row's fixed cuts, increasing (the union of its copies' cuts).
    row_task_ptr : int64[Rr + 1]
        Copies done after histogram row ``r`` (prefix row ``r + 1``) are
        ``row_task_ptr[r] .. row_task_ptr[r + 1] - 1``.
    task_dest, task_start, task_length : int64[T]
        A copy writes ``prefix[store_cuts[task_start + q]]`` to
        ``store[task_dest + q]`` for ``q < task_length``.
    store_cuts : int64[...]
    store_zero : int64[Z]
        Store entries of prefix row 0 (set to zero).
    grid_offsets, grid_rows, grid_fixed : int64[G]
        Each grid's offset in ``out``, master rows and fixed bins.
    grid_base, grid_width : int64[G]
        Where the grid's master-row size keeps its store rows and their width.
    grid_cut_start, grid_cuts : int64
        Grid ``g``'s ``grid_fixed[g] + 1`` fixed cuts as columns of its store rows.
    out : the dtype of the counts [n_cells]
        Filled with each grid's row-major counts at its offset.
    """
    n_r, n_f = hist.shape
    for z in range(store_zero.shape[0]):
        store[store_zero[z]] = 0
    for f in range(n_f):
        colsum[f] = 0
    prefix[0] = 0
    w = 0
    for r in range(n_r):
        row = hist[r]
        for f in range(n_f):  # vectorised: one add per column, no carried sum
            colsum[f] += row[f]
        row[:] = 0
        end = (r + 1) * n_f
        while w < wraps.shape[0] and wraps[w] < end:
            colsum[wraps[w] - r * n_f] += WRAP
            w += 1
        # The prefix sums at the cuts this row reads: sums of column sums between
        # consecutive cuts (vectorised reductions, not one carried add per column).
        first = row_cut_ptr[r]
        last = row_cut_ptr[r + 1]
        run = prefix[0]  # zero of the histogram's dtype (prefix[0] is never changed)
        if (last - first) * DENSE_SEGMENT > n_f:
            # Many cuts (short segments): one running sum over every column.
            for f in range(n_f):
                run += colsum[f]
                prefix[f + 1] = run
        else:
            f = 0
            for i in range(first, last):
                cut = row_cuts[i]
                part = prefix[0]
                for j in range(f, cut):
                    part += colsum[j]
                run += part
                prefix[cut] = run
                f = cut
        for t in range(row_task_ptr[r], row_task_ptr[r + 1]):
            dest = task_dest[t]
            start = task_start[t]
            for q in range(task_length[t]):
                store[dest + q] = prefix[store_cuts[start + q]]
    for g in range(grid_offsets.shape[0]):
        pos = grid_offsets[g]
        width = grid_width[g]
        lo = grid_base[g]
        cs = grid_cut_start[g]
        n_fixed = grid_fixed[g]
        for _ in range(grid_rows[g]):
            hi = lo + width
            c0 = grid_cuts[cs]
            below0 = store[lo + c0]
            above0 = store[hi + c0]
            for j in range(n_fixed):
                c1 = grid_cuts[cs + j + 1]
                below1 = store[lo + c1]
                above1 = store[hi + c1]
                out[pos] = above1 - below1 - above0 + below0
                below0 = below1
                above0 = above1
                pos += 1
            lo = hi
