"""NumPy's order of additions in ``add.reduce`` (sum, mean, nansum, ...), so that a device's float sums
give NumPy's bits.

NumPy (2.4, checked against it by tests/test_reduce_order.py) iterates a reduction with the axes
sorted by the input's absolute strides (innermost smallest, ties in C order, negative strides kept
in index order) and adds:

- where the innermost axis is kept: element by element, each output's values in that order (a
  sequential fold);
- where the innermost axes are reduced: each run of them that is contiguous in memory is one call
  of its pairwise sum (``pairwise_sum`` in loops_utils.h: blocks of at most 128 values (64 complex)
  summed with 8 lanes (4 complex), halves split at a multiple of 8), and those calls are folded in
  order;
- a reduction over every axis of an array whose axes don't merge into one run goes through
  NumPy's buffers: pairwise sums over chunks of whole inner blocks of at most 8192 values, folded
  (an innermost run longer than that: one pairwise sum per run).

The sum starts from NumPy's identity (+0.0: the sum of a single -0.0 is 0.0). Multiplication is
a plain fold in the same order. What this module can't place (a reduced run whose innermost
stride isn't the item size in a buffered reduction, casting reductions) is computed from a
contiguous copy in the sorted order: the same additions whenever NumPy's buffer holds each output's
values, a few ulp otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy

from . import ir

#: NumPy's default buffer size (numpy.getbufsize()), which chunks buffered reductions
BUFFER = 8192


@dataclass(frozen=True)
class SumOrder:
    """How NumPy adds one reduction: the reduced axes, outermost first, iterated as one flat index
    whose consecutive ``chunk`` values are summed pairwise, chunk after chunk (``chunk`` 1: a
    plain fold; the product of the reduced extents: one pairwise sum)."""

    axes: tuple[int, ...]
    chunk: int


def sorted_axes(shape: tuple[int, ...], strides: tuple[int, ...]) -> list[int]:
    """The axes of extent > 1 from innermost to outermost as NumPy's iterator orders them."""
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    return sorted(reversed(dims), key=lambda d: abs(strides[d]))  # (a stable sort from C order)


def sum_order(shape: tuple[int, ...], strides: tuple[int, ...], axes: tuple[int, ...],
              itemsize: int) -> SumOrder | None:
    """NumPy's additions for ``add.reduce`` of an array of this layout over ``axes`` (no casting),
    or None where its buffered iteration is not modelled (the caller sums a contiguous copy)."""
    reduced = set(axes)
    order = sorted_axes(shape, strides)
    outer_first = tuple(d for d in reversed(order) if d in reduced)
    total = math.prod(shape[d] for d in outer_first)
    if 0 in shape:  # (nothing is added: each result is the identity, or there is none)
        return SumOrder(outer_first, 1)
    if not order or order[0] not in reduced:
        return SumOrder(outer_first, 1)
    run = [order[0]]  # the innermost axes that merge into one strided run
    for d in order[1:]:
        if strides[d] != strides[run[-1]] * shape[run[-1]]:
            break
        run.append(d)
    reduced_run = []
    for d in run:
        if d not in reduced:
            break
        reduced_run.append(d)
    length = math.prod(shape[d] for d in reduced_run)
    if length == total:
        return SumOrder(outer_first, total)
    if len(run) == len(order):
        return SumOrder(outer_first, length)
    if abs(strides[order[0]]) != itemsize or len(outer_first) != len(order):
        return None
    block = 1  # a reduction over every axis, buffered: chunks of whole inner blocks
    for d in order:
        if block * shape[d] > BUFFER:
            break
        block *= shape[d]
    if block == 1:  # (a run longer than the buffer: one pairwise sum per run, unbuffered)
        return SumOrder(outer_first, length)
    return SumOrder(outer_first, min(total, BUFFER // block * block))


def contiguous_order(shape: tuple[int, ...], strides: tuple[int, ...], axes: tuple[int, ...]) -> SumOrder:
    """The order for a contiguous array laid out in ``strides``' sorted order: NumPy's temporary
    of a fused expression, or the copy sum_order's None asks for."""
    order = sorted_axes(shape, strides)
    fake = [0] * len(shape)
    step = 1
    for d in order:
        fake[d] = step
        step *= shape[d]
    result = sum_order(shape, tuple(fake), axes, 1)
    assert result is not None  # (a contiguous array always merges)
    return result


def fused_sum_order(graph: ir.Graph, inputs: list[Any], shape: tuple[int, ...],
                    axes: tuple[int, ...]) -> SumOrder:
    """NumPy's order of additions for a reduction of ``graph`` (one output) over its ``inputs``
    (device arrays with ``shape``, ``strides`` and ``itemsize``) broadcast to ``shape``: of the
    array itself where the graph only reads (and casts) one array of the reduced shape, else of
    the contiguous temporary NumPy would have made, laid out like the first input of that shape."""
    full = [a for a in inputs if tuple(a.shape) == shape]
    layout = tuple(full[0].strides) if full else tuple(range(len(shape), 0, -1))
    node = graph.outputs[0]
    if isinstance(node, ir.Cast):
        node = node.operand
    if isinstance(node, ir.Input) and full and inputs[node.index] is full[0]:
        plan = sum_order(shape, layout, axes, full[0].itemsize)
        if plan is not None:
            return plan
    return contiguous_order(shape, layout, axes)


def pairwise_shape(dtype: numpy.dtype) -> tuple[int, int, int]:
    """(lanes, largest block summed with lanes, smallest block that uses lanes) of NumPy's pairwise
    sum: real 8/128/8, complex 4/64/4 (its loop counts a complex value's two parts)."""
    return (4, 64, 4) if numpy.dtype(dtype).kind == "c" else (8, 128, 8)


def pairwise_split(n: int, dtype: numpy.dtype) -> int:
    """Where NumPy's pairwise sum splits a block of ``n`` values longer than its largest block."""
    if numpy.dtype(dtype).kind == "c":
        return (n - n % 8) // 2
    half = n // 2
    return half - half % 8


def result_axes(shape: tuple[int, ...], operands: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[int] | None:
    """The memory order NumPy gives an elementwise result of ``shape`` from operands of these
    (shape, byte strides): its axes, outermost first, or None where that is C order. NumPy's
    iterator keeps the operands' order (``npyiter_find_best_axis_ordering``): an insertion sort of
    the axes, innermost first, in which an axis moves inward past another only where every operand
    that varies along both has a larger stride on the other; any disagreement keeps C order. An
    operand varies along an axis where its extent there is more than 1 (``a.T * 2`` of a
    C-ordered ``a`` is F-ordered, as ``a.T`` is)."""
    nd = len(shape)
    if nd < 2:
        return None
    strides = []
    for op_shape, op_strides in operands:
        lead = nd - len(op_shape)
        strides.append([None] * lead + [s or None if n != 1 else None
                                        for n, s in zip(op_shape, op_strides, strict=True)])
    # (innermost first, as NumPy's axis data: an axis moves inward past one of a larger stride)
    order = _insertion_sort(list(range(nd))[::-1], strides, lambda s0, s1: abs(s1) > abs(s0))[::-1]
    return None if order == list(range(nd)) else order


def _insertion_sort(perm: list[int], strides: list[list[int | None]], before: Any) -> list[int]:
    """NumPy's stable insertion sort of axes over several operands (the iterator's and
    concatenate's): axis ``j0`` moves ahead of ``j1`` where the first operand that varies along
    both (a stride that is not None) says ``before(stride j0, stride j1)``, and stays where any
    such operand says otherwise; where none varies along both it looks further ahead."""
    for i0 in range(1, len(perm)):
        position, j0 = i0, perm[i0]
        for i1 in range(i0 - 1, -1, -1):
            j1 = perm[i1]
            compared, ahead = False, False
            for st in strides:
                if st[j0] is not None and st[j1] is not None:
                    if not before(st[j0], st[j1]):
                        ahead = False
                    elif not compared:
                        ahead = True
                    compared = True
            if compared:
                if not ahead:
                    break
                position = i1
        if position != i0:
            perm.insert(position, perm.pop(i0))
    return perm


def join_axes(operands: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> list[int] | None:
    """The memory order NumPy gives ``concatenate`` (and ``stack``, which concatenates expanded
    views) of operands of these (shape, byte strides), all of one number of dimensions: its axes,
    outermost first, or None where that is C order. NumPy sorts the axes by stride, outermost
    first (``PyArray_CreateMultiSortedStridePerm``): an insertion sort in which an axis moves
    outward past another where the first operand extended along both (more than 1) has a larger
    stride there, and stays where any such operand says otherwise; C order breaks ties
    (``concatenate([a.T, a.T])`` of a C-ordered ``a`` is F-ordered)."""
    nd = len(operands[0][0]) if operands else 0
    if nd < 2:
        return None
    strides = [[s if n != 1 else None for n, s in zip(shape, st, strict=True)] for shape, st in operands]
    perm = _insertion_sort(list(range(nd)), strides, lambda s0, s1: abs(s0) > abs(s1))
    return None if perm == list(range(nd)) else perm
