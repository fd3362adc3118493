"""Arrays built from others by layout: tile, pad, meshgrid, hsplit/vsplit/dsplit, diag/diagflat,
fftshift/ifftshift. Views and copies of views where NumPy's result allows; where positions come
from an index map (pad's edge, reflect, symmetric and wrap), NumPy pads the map on the host.
"""

from __future__ import annotations

from typing import Any

import numpy
from numpy.lib import _arraypad_impl

from ... import _ops
from ..base import Backend
from .array import CLArray, _is_f_contiguous, _native_or_device
from .routing import implements

_NO_BYTES = numpy.dtype([])
#: pad modes whose values are elements of the array at positions NumPy's pad of an index map gives
_INDEX_MODES = frozenset({"edge", "reflect", "symmetric", "wrap"})


def _sections_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Split points given as host values (an array of them is NumPy's to read)."""
    sections = args[1] if len(args) > 1 else kwargs.get("indices_or_sections")
    return isinstance(sections, (int, numpy.integer, list, tuple))


def _pad_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    mode = args[2] if len(args) > 2 else kwargs.get("mode", "constant")
    if not isinstance(mode, str) or (mode != "constant" and mode not in _INDEX_MODES):
        return False  # (the statistics modes, linear_ramp, empty and callables are NumPy's)
    if kwargs.get("reflect_type", "even") != "even":
        return False  # (odd reflection computes values: NumPy's)
    values = kwargs.get("constant_values", 0)
    return not _native_or_device(values) and numpy.asarray(values).dtype.kind in "biuf"


def _runs(sources: numpy.ndarray, before: int, n: int) -> list[tuple[int, int, int]]:
    """The pad areas of ``sources`` (padded position -> source position) as runs (first, count,
    step) whose sources advance by step -1, 0 or 1: one copy each."""
    runs: list[tuple[int, int, int]] = []
    for lo, hi in ((0, before), (before + n, sources.size)):
        p = lo
        while p < hi:
            step = int(sources[p + 1] - sources[p]) if p + 1 < hi else 1
            if step not in (-1, 0, 1):
                step = 1
            q = p + 1
            while q < hi and sources[q] - sources[q - 1] == step:
                q += 1
            runs.append((p, q - p, step))
            p = q
    return runs


class Shaping(Backend):
    """tile, pad, meshgrid, the h/v/d splits, diag and diagflat, fftshift and ifftshift."""

    @implements(numpy.tile, kwargs=("reps",), complex_values=True)
    def tile(self, A: CLArray, reps: Any) -> CLArray:  # noqa: N803  (NumPy's name)
        """NumPy's tile: one copy of a broadcast view (reps axes of stride 0 interleaved with A's)."""
        shape = numpy.tile(numpy.empty(A.shape, _NO_BYTES), reps).shape  # (NumPy's shape and errors)
        if 0 in shape:  # (NumPy's tile of no elements takes any reps, negative ones included)
            return self.empty(shape, A.dtype)
        counts = (reps,) if isinstance(reps, (int, numpy.integer)) else tuple(reps)
        d = max(len(counts), A.ndim)
        counts = (1,) * (d - len(counts)) + tuple(int(c) for c in counts)
        a = A.view((1,) * (d - A.ndim) + A.shape, (0,) * (d - A.ndim) + A.strides, A.offset)
        view_shape, view_strides = [], []
        for c, n, s in zip(counts, a.shape, a.strides, strict=True):
            view_shape += [c, n]
            view_strides += [0, s]
        tiled = self.copy(a.view(tuple(view_shape), tuple(view_strides), a.offset))
        return self.reshape(tiled, shape)

    @implements(numpy.pad, kwargs=("mode", "constant_values", "reflect_type"), complex_values=True,
                accepts=_pad_accepted)
    def pad(self, array: CLArray, pad_width: Any, mode: str = "constant", **kwargs: Any) -> CLArray:
        """NumPy's pad in the constant, edge, reflect (even), symmetric and wrap modes."""
        numpy.pad(numpy.zeros((1,) * array.ndim, array.dtype), 0, mode=mode, **kwargs)  # (mode/keyword errors)
        pairs = _ops.pad_pairs(pad_width, array.ndim)
        shape = tuple(n + before + after for n, (before, after) in zip(array.shape, pairs, strict=True))
        if _is_f_contiguous(array) and not array.c_contiguous:  # (NumPy pads a Fortran-ordered array into one)
            result = self.empty(shape[::-1], array.dtype).T
        else:
            result = self.empty(shape, array.dtype)

        def along(axis: int, start: int, count: int, step: int = 1) -> CLArray:
            """Positions start, start + step, ... (count of them) of ``axis`` of the result, whole otherwise."""
            strides = result.strides[:axis] + (step * result.strides[axis],) + result.strides[axis + 1:]
            return result.view(shape[:axis] + (count,) + shape[axis + 1:], strides,
                               result.offset + start * result.strides[axis])

        centre = result.view(array.shape, result.strides,
                             result.offset + sum(b * s for (b, _), s in zip(pairs, result.strides, strict=True)))
        self.copy_into(centre, array)
        values = _arraypad_impl._as_pairs(kwargs.get("constant_values", 0), array.ndim)
        # axis by axis, as NumPy's pad: each axis's pad areas span the other axes whole (the corners
        # come from the areas of the axes before)
        for axis, (before, after) in enumerate(pairs):
            n = array.shape[axis]
            if mode == "constant":
                for start, count, value in ((0, before, values[axis][0]), (before + n, after, values[axis][1])):
                    if count:
                        self.fill(along(axis, start, count), value)
                continue
            if not (before or after):
                continue
            # the source of each padded position, as NumPy's pad of the positions gives it, copied in runs
            sources = numpy.pad(numpy.arange(n), (before, after), mode=mode, **kwargs) + before
            for first, count, step in _runs(sources, before, n):
                self.copy_into(along(axis, first, count), along(axis, int(sources[first]), count, step))
        return result

    @implements(numpy.meshgrid, kwargs=("copy", "sparse", "indexing"), complex_values=True,
                accepts=lambda args, kwargs: all(map(_native_or_device, args)))
    def meshgrid(self, *xi: CLArray, copy: bool = True, sparse: bool = False, indexing: str = "xy") -> Any:
        """NumPy's meshgrid: each input as a column along its own axis, broadcast (and copied)."""
        if indexing not in ("xy", "ij"):
            raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
        ndim = len(xi)
        shapes = [(1,) * i + (-1,) + (1,) * (ndim - i - 1) for i in range(ndim)]
        if indexing == "xy" and ndim > 1:
            shapes[0], shapes[1] = (1, -1) + (1,) * (ndim - 2), (-1, 1) + (1,) * (ndim - 2)
        output: Any = [self.reshape(x, s) for x, s in zip(xi, shapes, strict=True)]
        if not sparse:
            output = self.broadcast_arrays(*output)
        if copy:
            output = [self.copy(x) for x in output]
        # (NumPy's container, which changed between releases: 2.4 gives a list when sparse without
        # copies, 2.5 a tuple; its own meshgrid of one-element arrays says which)
        container = type(numpy.meshgrid(*(numpy.zeros(1),) * ndim, copy=copy, sparse=sparse, indexing=indexing))
        return container(output)

    @implements(numpy.diag, kwargs=("k",), complex_values=True)
    def diag(self, v: CLArray, k: int = 0) -> CLArray:
        """NumPy's diag: a 1-d ``v`` on the k-th diagonal of a square of zeros; a 2-d ``v``'s k-th
        diagonal, a view (the dispatcher takes that case as ``diagonal``: NumPy's read-only view)."""
        if v.ndim == 2:
            return self.numpy_view(numpy.diagonal, v, k)
        if v.ndim != 1:
            raise ValueError("Input must be 1- or 2-d.")
        k = int(k)
        n = v.shape[0] + abs(k)
        result = self.zeros((n, n), v.dtype)
        self.copy_into(self.numpy_view(numpy.diagonal, result, k), v)
        return result

    @implements(numpy.diagflat, kwargs=("k",), complex_values=True)
    def diagflat(self, v: CLArray, k: int = 0) -> CLArray:
        return self.diag(self.ravel(v), k)

    @implements(numpy.fft.fftshift, kwargs=("axes",), complex_values=True)
    def fftshift(self, x: CLArray, axes: Any = None) -> CLArray:
        """NumPy's fftshift: a roll by half of each axis (the zero frequency to the centre)."""
        return self._half_roll(x, axes, 1)

    @implements(numpy.fft.ifftshift, kwargs=("axes",), complex_values=True)
    def ifftshift(self, x: CLArray, axes: Any = None) -> CLArray:
        return self._half_roll(x, axes, -1)

    def _half_roll(self, x: CLArray, axes: Any, sign: int) -> CLArray:
        if axes is None:
            axes = tuple(range(x.ndim))
        if isinstance(axes, (int, numpy.integer)):
            return self.roll(x, sign * (x.shape[axes] // 2), axes)
        return self.roll(x, [sign * (x.shape[ax] // 2) for ax in axes], tuple(axes))


def _split_view(func: Any) -> Any:
    def impl(self: Shaping, ary: CLArray, indices_or_sections: Any) -> list[CLArray]:
        return list(self.numpy_view(func, ary, indices_or_sections))

    impl.__doc__ = f"NumPy's {func.__name__}: views, computed on a stand-in with the array's layout."
    return impl


for _func in (numpy.hsplit, numpy.vsplit, numpy.dsplit):
    implements(_func, kwargs=("indices_or_sections",), complex_values=True, accepts=_sections_accepted)(
        _split_view(_func))
