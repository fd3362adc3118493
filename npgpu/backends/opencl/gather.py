"""Index arrays: take, put, take_along_axis, repeat, nonzero/argwhere/flatnonzero, fill_diagonal,
copyto. Positions are worked out on the host from the index values (NumPy's own checks, on
zero-byte stand-ins, give its errors); the elements move on the device by the row gather of
indexing.py.
"""

from __future__ import annotations

from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_index

from ...kernels import ufuncs as _table
from ..base import Backend
from .array import CLArray, _native_or_device
from .routing import implements

_NO_BYTES = numpy.dtype([])  # zero-byte items: NumPy checks shapes, indices and errors on them for free


def _stand_in(a: CLArray) -> numpy.ndarray:
    return numpy.empty(a.shape, _NO_BYTES)


def _normalized(indices: Any, n: int, mode: str) -> numpy.ndarray:
    """Positions in [0, n) of ``indices`` under take's ``mode`` (NumPy's errors checked before)."""
    indices = numpy.asarray(indices).astype(numpy.int64, copy=False)
    if mode == "wrap":
        return indices % n if n else indices
    if mode == "clip":
        return numpy.clip(indices, 0, max(n - 1, 0))
    return numpy.where(indices < 0, indices + n, indices)


def _index_values(self: Backend, indices: Any) -> Any:
    """Index values on the host (they decide which elements move): a device array's, downloaded,
    or the host values as given (NumPy converts them itself: ``[]`` is an empty index list)."""
    return self.to_host(indices) if isinstance(indices, CLArray) else indices


def _accepts_index(position: int, name: str) -> Any:
    """Calls whose index argument is an integer, a device array or array data NumPy converts."""
    def accepts(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        value = args[position] if len(args) > position else kwargs.get(name)
        return value is not None and not isinstance(value, (float, complex, bool, numpy.bool_))

    return accepts


class Gather(Backend):
    """take, put, take_along_axis, repeat, nonzero and friends, fill_diagonal, copyto."""

    def _rows_first(self, a: CLArray, axis: int) -> CLArray:
        """A C-contiguous copy (or ``a`` itself) of ``a`` with ``axis`` moved first: rows to gather."""
        moved = self.numpy_view(numpy.moveaxis, a, axis, 0)
        return moved if moved.c_contiguous else self.copy(moved)

    def _gather_rows(self, rows: CLArray, positions: numpy.ndarray) -> CLArray:
        """``rows[positions]`` (a new array of shape positions.shape + rows.shape[1:])."""
        flat = positions.reshape(-1)
        out = self.empty((flat.size, *rows.shape[1:]), rows.dtype)
        if out.size:
            self._gather(out, rows, flat)
        return self.reshape(out, positions.shape + rows.shape[1:])

    def _axis_back(self, result: CLArray, index_ndim: int, axis: int) -> CLArray:
        """Gathered rows (index dims first) with the index dims moved to ``axis``, C-contiguous."""
        if axis:
            order = list(range(index_ndim, index_ndim + axis)) + list(range(index_ndim)) + list(
                range(index_ndim + axis, result.ndim))
            result = self.transpose(result, order)
        return result if result.c_contiguous else self.copy(result)

    @implements(numpy.take, kwargs=("axis", "out", "mode"), complex_values=True,
                accepts=_accepts_index(1, "indices"))
    def take(self, a: CLArray, indices: Any, axis: Any = None, out: CLArray | None = None,
             mode: str = "raise") -> CLArray:
        """NumPy's take: rows of ``a`` along ``axis`` (of the flattened ``a`` when None)."""
        values = _index_values(self, indices)
        numpy.take(_stand_in(a), values, axis=axis, mode=mode)  # (NumPy's errors: bounds, dtype, axis, mode)
        if axis is None or a.ndim == 0:  # (NumPy takes a 0-d array as 1-d)
            a, axis = self.ravel(a), 0
        axis = normalize_axis_index(axis, a.ndim)
        positions = _normalized(values, a.shape[axis], mode)
        result = self._axis_back(self._gather_rows(self._rows_first(a, axis), positions), positions.ndim, axis)
        if out is not None:
            if out.shape != result.shape:
                raise ValueError("output array does not match result of ndarray.take")
            self.copy_into(out, result)
            return out
        return result

    @implements(numpy.take_along_axis, kwargs=("axis",), complex_values=True,
                accepts=lambda args, kwargs: len(args) > 1 and _native_or_device(args[1]))
    def take_along_axis(self, arr: CLArray, indices: CLArray, axis: Any = -1) -> CLArray:
        """NumPy's take_along_axis: element positions from the broadcast index grid."""
        values = self.to_host(indices)
        numpy.take_along_axis(_stand_in(arr), values, axis=axis)  # (NumPy's errors and shapes)
        if axis is None:
            arr, axis = self.ravel(arr), 0
        axis = normalize_axis_index(axis, arr.ndim)
        src = arr if arr.c_contiguous else self.copy(arr)
        shape = numpy.broadcast_shapes(tuple(1 if d == axis else n for d, n in enumerate(arr.shape)),
                                       tuple(1 if d == axis else n for d, n in enumerate(values.shape)))
        shape = shape[:axis] + values.shape[axis:axis + 1] + shape[axis + 1:]
        strides = [s // src.itemsize for s in src.strides]
        offsets = numpy.zeros(shape, numpy.int64)
        for d, n in enumerate(shape):
            if d == axis:
                coordinate = numpy.broadcast_to(_normalized(values, arr.shape[axis], "raise"), shape)
            elif arr.shape[d] != n:  # (a length-1 axis of arr, broadcast against the indices)
                continue
            else:
                coordinate = numpy.arange(n, dtype=numpy.int64).reshape((n,) + (1,) * (len(shape) - d - 1))
            offsets = offsets + coordinate * strides[d]
        return self._gather_rows(self.reshape(src, (src.size,)), offsets)

    @implements(numpy.repeat, kwargs=("axis",), complex_values=True, accepts=_accepts_index(1, "repeats"))
    def repeat(self, a: CLArray, repeats: Any, axis: Any = None) -> CLArray:
        """NumPy's repeat: row ``i`` of ``axis`` ``repeats[i]`` times (the positions, from NumPy)."""
        counts = _index_values(self, repeats)
        numpy.repeat(_stand_in(a), counts, axis=axis)  # (NumPy's errors: negative counts, lengths)
        if axis is None or a.ndim == 0:  # (NumPy repeats a 0-d array as 1-d)
            a, axis = self.ravel(a), 0
        axis = normalize_axis_index(axis, a.ndim)
        positions = numpy.repeat(numpy.arange(a.shape[axis], dtype=numpy.int64), counts)
        return self._axis_back(self._gather_rows(self._rows_first(a, axis), positions), 1, axis)

    @implements(numpy.put, kwargs=("mode",), complex_values=True, accepts=_accepts_index(1, "ind"))
    def put(self, a: CLArray, ind: Any, v: Any, mode: str = "raise") -> None:
        """NumPy's put: ``a.flat[ind] = v`` (v repeated over ind; the last of repeated positions
        wins), its checks in NumPy's order; in raise mode the positions before a bad one are written."""
        if not a.c_contiguous:  # (into a contiguous copy, then back into the view: as NumPy, whose
            staged = self.copy(a)  # copy is discarded when the put raises, leaving the view as it was)
            self.put(staged, ind, v, mode)
            self.copy_into(a, staged)
            return
        if mode not in ("raise", "wrap", "clip"):
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
        values = _index_values(self, ind)
        # (a list becomes intp as NumPy converts it; an array must cast safely)
        indices = values if isinstance(values, numpy.ndarray) else numpy.array(values, dtype=numpy.intp)
        if not numpy.can_cast(indices.dtype, numpy.intp, "safe"):
            raise TypeError(f"Cannot cast array data from {indices.dtype!r} to {numpy.dtype(numpy.intp)!r} "
                            "according to the rule 'safe'")
        indices = indices.reshape(-1).astype(numpy.int64)
        if indices.size and a.size == 0:
            raise IndexError("cannot replace elements of an empty array")
        probe = numpy.empty((), a.dtype)
        if not isinstance(v, CLArray):
            probe[()] = v  # (NumPy's conversion errors)
        elif v.dtype != a.dtype and not _table.has_cast(v.dtype, a.dtype):
            # (a conversion the code generator has none for, int64 into float16: NumPy's, of the values)
            v = self.from_host(self.to_host(v).astype(a.dtype))
        if not indices.size or (isinstance(v, CLArray) and v.size == 0):
            return
        n = a.size
        bad = numpy.flatnonzero((indices < -n) | (indices >= n)) if mode == "raise" else ()
        count = bad[0] if len(bad) else indices.size
        if count:
            positions = _normalized(indices[:count], n, mode)
            source = (self._cycled(self.ravel(v), count) if isinstance(v, CLArray)
                      else self.full((count,), probe[()], a.dtype))
            if source.dtype != a.dtype:
                source = self.copy(source, a.dtype)
            # one writer per position, the last in index order, as NumPy's serial loop leaves it
            last = count - 1 - numpy.unique(positions[::-1], return_index=True)[1]
            chosen = self._gather_rows(source, last)
            self._move_rows(self.reshape(a, (n,)), chosen, positions[last], a.itemsize, scatter=True)
        if len(bad):
            raise IndexError(f"index {indices[bad[0]]} is out of bounds for axis 0 with size {n}")

    def _cycled(self, flat: CLArray, n: int) -> CLArray:
        """The first ``n`` values of ``flat`` repeated end to end (NumPy's put and fill_diagonal)."""
        if flat.size >= n:
            return self.numpy_view(lambda x: x[:n], flat)
        reps = -(-n // flat.size)
        tiled = self.copy(flat.view((reps, flat.size), (0, flat.strides[0]), flat.offset))
        return self.numpy_view(lambda x: x.reshape(-1)[:n], tiled)

    def _mask_of(self, a: CLArray) -> numpy.ndarray:
        """Where ``a`` is nonzero, on the host (one byte per element: NumPy compacts it)."""
        if a.dtype == numpy.bool_:
            return self.to_host(a)
        return self.to_host(self.ufunc_call(numpy.not_equal, (a, a.dtype.type(0))))

    @implements(numpy.nonzero, kwargs=())
    def nonzero(self, a: CLArray) -> tuple[CLArray, ...]:
        if a.ndim == 0:
            numpy.nonzero(numpy.zeros((), bool))  # (NumPy's ValueError for 0-d input)
        return tuple(self.from_host(p) for p in numpy.nonzero(self._mask_of(a)))

    @implements(numpy.argwhere, kwargs=())
    def argwhere(self, a: CLArray) -> CLArray:
        return self.from_host(numpy.argwhere(self._mask_of(a)))

    @implements(numpy.flatnonzero, kwargs=())
    def flatnonzero(self, a: CLArray) -> CLArray:
        return self.from_host(numpy.flatnonzero(self._mask_of(a)))

    @implements(numpy.fill_diagonal, kwargs=("wrap",), complex_values=True)
    def fill_diagonal(self, a: CLArray, val: Any, wrap: bool = False) -> None:
        """NumPy's fill_diagonal: ``a.flat[::step] = val`` over the diagonal (val repeated)."""
        if a.ndim < 2:
            raise ValueError("array must be at least 2-d")
        if a.ndim == 2:
            step = a.shape[1] + 1
            end = a.size if wrap else min(a.size, a.shape[1] * a.shape[1])
        else:
            if any(n != a.shape[0] for n in a.shape):
                raise ValueError("All dimensions of input must be of equal length")
            step = 1 + int(numpy.cumprod(a.shape[:-1]).sum())
            end = a.size
        if not a.c_contiguous:
            staged = self.copy(a)
            self.fill_diagonal(staged, val, wrap)
            self.copy_into(a, staged)
            return
        count = -(-end // step) if end > 0 else 0
        diagonal = a.view((count,), (step * a.itemsize,), a.offset)
        if not isinstance(val, CLArray) and numpy.ndim(val):  # (values given as a list: NumPy's conversion)
            val = self.from_host(numpy.asarray(val))
        if isinstance(val, CLArray):
            if val.size and count:
                self.copy_into(diagonal, self._cycled(self.ravel(val), count))
        else:
            self.fill(diagonal, val)

    @implements(numpy.copyto, kwargs=("casting", "where"), complex_values=True)
    def copyto(self, dst: CLArray, src: Any, casting: str = "same_kind", where: Any = True) -> None:
        """NumPy's copyto: ``src`` cast into ``dst`` (broadcast), where ``where`` holds."""
        # (NumPy's casting errors, and its conversion of a Python scalar, on 0-d stand-ins)
        numpy.copyto(numpy.zeros((), dst.dtype), numpy.zeros((), src.dtype) if isinstance(src, CLArray) else src,
                     casting=casting)
        src_shape = src.shape if isinstance(src, CLArray) else ()
        mask_shape = where.shape if isinstance(where, CLArray) else ()
        if numpy.broadcast_shapes(src_shape, mask_shape, dst.shape) != dst.shape:
            raise ValueError(f"could not broadcast input array from shape {src_shape} into shape {dst.shape}")
        if isinstance(where, CLArray):
            if where.dtype != numpy.bool_:
                raise TypeError(f"Cannot cast array data from {where.dtype!r} to dtype('bool') according to "
                                "the rule 'safe'")
            value = src if isinstance(src, CLArray) else dst.dtype.type(src)
            self.copy_into(dst, self.where(where, value, dst))
            return
        if not where:
            return
        if isinstance(src, CLArray):
            self.copy_into(dst, src)
        else:
            self.fill(dst, src)

