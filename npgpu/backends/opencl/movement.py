"""Data movement and views: reshape, transpose, views NumPy computes the layout of, conversions,
copies, concatenate/stack, split.
"""

from __future__ import annotations

import builtins
import inspect
import operator
from collections.abc import Callable
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple
from numpy.lib.stride_tricks import as_strided

from ..._errors import NeedsNumpyError
from ...kernels import order as _order
from ..base import Backend, axes_in_memory_order
from .array import CLArray, _is_f_contiguous, _native_or_device, _norm_axes, _part
from .routing import VIEW_FUNCTIONS, implements

_NO_BYTES = numpy.dtype([])  # items of zero bytes: NumPy works out shapes on them without memory


def _along(a: CLArray, axis: int, start: int, stop: int) -> CLArray:
    """The view ``a[..., start:stop, ...]`` on ``axis`` (0 <= start <= stop <= a.shape[axis])."""
    shape = a.shape[:axis] + (stop - start,) + a.shape[axis + 1:]
    return a.view(shape, a.strides, a.offset + start * a.strides[axis])


def _numpy_keywords(func: Callable[..., Any]) -> frozenset[str]:
    """A view function's keywords: NumPy's own (NumPy checks them), less ``subok``."""
    return frozenset(inspect.signature(func).parameters) - {"subok"}


def _concat_result(
    arrays: list[CLArray], axis: int, dtype: Any, casting: str
) -> tuple[tuple[int, ...], numpy.dtype]:
    """numpy.concatenate's result shape and dtype (and its errors), without allocating.

    NumPy checks the stand-ins: each array's shape with the joined axis emptied (zero bytes).
    """
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    nd = arrays[0].ndim
    if nd == 0 or any(a.ndim != nd for a in arrays):
        numpy.concatenate([numpy.empty((0,) * a.ndim, a.dtype) for a in arrays], axis=axis)
    ax = _norm_axes(axis, nd)[0]
    stand_ins = [numpy.empty(a.shape[:ax] + (0,) + a.shape[ax + 1 :], a.dtype) for a in arrays]
    probe = numpy.concatenate(stand_ins, axis=ax, dtype=dtype, casting=casting)
    shape = probe.shape[:ax] + (sum(a.shape[ax] for a in arrays),) + probe.shape[ax + 1 :]
    return shape, probe.dtype


class Movement(Backend):
    """Reshapes, views, conversions and copies, concatenation and splits."""

    # -- layout and data movement --------------------------------------------
    @implements(numpy.reshape, kwargs=("shape", "order", "newshape", "copy"), complex_values=True)
    def reshape(self, a: CLArray, shape: Any, order: str = "C", copy: bool | None = None) -> CLArray:
        """A view when NumPy would give one, else a copy (``order`` 'C', 'F' or 'A': 'F' for an array
        that is Fortran-contiguous only; ``copy``: NumPy's)."""
        if order == "A":
            order = "F" if _is_f_contiguous(a) and not a.c_contiguous else "C"
        if order not in ("C", "F"):
            raise NotImplementedError(f"opencl backend: reshape with order {order!r}")  # (supports_function: no)
        # the new shape, with NumPy's errors and -1 resolved, from zero-byte items (no allocation)
        new_shape = numpy.reshape(numpy.empty(a.shape, _NO_BYTES), shape).shape
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        view = None
        try:
            view = None if copy else numpy.reshape(dummy, new_shape, order=order, copy=False)
        except ValueError:
            if copy is False:
                raise
        if view is not None:
            return a.view(view.shape, view.strides, a.offset)
        # a copy laid out in the reading order, which NumPy's reshape of it views
        contiguous = self._copy_ordered(a, a.dtype, order)
        view = numpy.reshape(as_strided(numpy.zeros(1, a.dtype), a.shape, contiguous.strides, writeable=False),
                             new_shape, order=order, copy=False)
        return CLArray(self, contiguous.data, view.shape, a.dtype, view.strides, contiguous.offset)

    @implements(numpy.ravel, kwargs=("order",), complex_values=True)
    def ravel(self, a: CLArray, order: str = "C") -> CLArray:
        fortran = _is_f_contiguous(a)
        if order in ("A", "K") and (a.c_contiguous or fortran):
            order = "F" if fortran and not a.c_contiguous else "C"
        elif order == "A":
            order = "C"
        elif order == "K":  # a view where the axes, by their strides, are contiguous in memory
            axes = axes_in_memory_order(a.shape, a.strides)  # (the upload's rule: npgpu/backends/base.py)
            if axes is not None:
                a = a.view(tuple(a.shape[i] for i in axes), tuple(a.strides[i] for i in axes), a.offset)
            if not a.c_contiguous:  # (NumPy's copy walks its iterator's order: reversed and zero strides)
                raise NeedsNumpyError("ravel(order='K') of an array in no memory order: NumPy's copy")
            order, fortran = "C", False
        # (NumPy's ravel views only an array contiguous in its order: a[:, ::2] reshapes to a view,
        # ravels to a copy; a.ravel('F') of a Fortran-ordered array is a view)
        contiguous = a.c_contiguous if order == "C" else fortran
        return self.reshape(a, (a.size,), order=order, copy=None if contiguous else True)

    @implements(numpy.transpose, kwargs=("axes",), complex_values=True)
    def transpose(self, a: CLArray, axes: Any = None) -> CLArray:
        if axes is None:
            return a.T
        axes = tuple(_norm_axes(ax, a.ndim)[0] for ax in axes)
        if sorted(axes) != list(range(a.ndim)):
            raise ValueError("axes don't match array")
        return a.view(tuple(a.shape[i] for i in axes), tuple(a.strides[i] for i in axes), a.offset)

    @implements(numpy.astype, kwargs=("dtype", "copy"), complex_values=True)  # (the array API's function)
    @implements(numpy.ndarray.astype, kwargs=("dtype", "order", "casting", "copy"), complex_values=True)
    def astype(self, a: CLArray, dtype: Any, order: str = "K", casting: str = "unsafe", copy: bool = True) -> CLArray:
        dtype = numpy.dtype(dtype)
        if not numpy.can_cast(a.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {dtype!r} according to the rule {casting!r}")
        if dtype == a.dtype and not copy:
            return a
        return self._copy_ordered(a, dtype, order)

    @implements(numpy.copy, kwargs=("order", "subok"), complex_values=True)
    @implements(numpy.ndarray.copy, kwargs=("order",), complex_values=True)
    def array_copy(self, a: CLArray, order: str = "K", subok: bool = True) -> CLArray:
        return self._copy_ordered(a, a.dtype, order)

    def _copy_ordered(self, a: CLArray, dtype: numpy.dtype, order: str) -> CLArray:
        out = self.empty_ordered(a.shape, dtype, order, like=a)
        self.copy_into(out, a)
        return out

    @implements(numpy.ascontiguousarray, kwargs=("dtype",), complex_values=True)
    def ascontiguousarray(self, a: CLArray, dtype: Any = None) -> CLArray:
        dtype = a.dtype if dtype is None else numpy.dtype(dtype)
        if a.c_contiguous and dtype == a.dtype:
            return a
        return self.copy(a, dtype)

    @implements(numpy.roll, kwargs=("shift", "axis"), complex_values=True)
    def roll(self, a: CLArray, shift: Any, axis: Any = None) -> CLArray:
        """NumPy's roll: each axis's two pieces copied into place in a new array (no host trip),
        laid out as NumPy's ``empty_like(a)`` is (a's order of axes in memory)."""
        if axis is None:
            return self.reshape(self.roll(self.ravel(a), shift, 0), a.shape)
        # (NumPy's reading of shift and axis: broadcast together, shifts summed per axis, int(shift))
        pairs = numpy.broadcast(shift, normalize_axis_tuple(axis, a.ndim, allow_duplicate=True))
        if pairs.ndim > 1:
            raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
        moves = dict.fromkeys(range(a.ndim), 0)
        for sh, ax in pairs:
            moves[ax] += int(sh)
        result = a
        for ax, total in moves.items():
            n = a.shape[ax]
            k = total % n if n else 0
            if not k:
                continue
            rolled = self.empty_ordered(a.shape, a.dtype, "K", like=a)
            self.copy_into(_along(rolled, ax, k, n), _along(result, ax, 0, n - k))
            self.copy_into(_along(rolled, ax, 0, k), _along(result, ax, n - k, n))
            result = rolled
        return self._copy_ordered(a, a.dtype, "K") if result is a else result

    @implements(numpy.diff, kwargs=("n", "axis"))
    def diff(self, a: CLArray, n: int = 1, axis: int = -1) -> CLArray:
        return self.numpy_diff(a, n, axis)

    @implements(numpy.tril, kwargs=("k",))
    def tril(self, m: CLArray, k: int = 0) -> CLArray:
        """NumPy's tril: where(tri(rows, cols, k), m, 0), the mask made on the device."""
        return self.where(self._tri_mask(m, operator.index(k)), m, m.dtype.type(0))

    @implements(numpy.triu, kwargs=("k",))
    def triu(self, m: CLArray, k: int = 0) -> CLArray:
        """NumPy's triu: where(tri(rows, cols, k - 1), 0, m)."""
        return self.where(self._tri_mask(m, operator.index(k) - 1), m.dtype.type(0), m)

    def _tri_mask(self, m: CLArray, k: int) -> CLArray:
        """tri(N, M, k, dtype=bool) of m's last two axes (a 1-d m is N = M = its length, as NumPy's
        tril of a 1-d array broadcasts it): j - i <= k, from two device iotas."""
        rows, cols = m.shape[-2:] if m.ndim >= 2 else (m.shape[-1], m.shape[-1])
        i = self.reshape(self.arange(rows, dtype=numpy.int64), (rows, 1))
        j = self.reshape(self.arange(cols, dtype=numpy.int64), (1, cols))
        return self.ufunc_call(numpy.less_equal, (self.ufunc_call(numpy.subtract, (j, i)), k))

    @implements(numpy.vstack, kwargs=("dtype", "casting"), complex_values=True)
    def vstack(self, tup: Any, dtype: Any = None, casting: str = "same_kind") -> CLArray:
        return self.concatenate([self._at_least(a, 2) for a in tup], axis=0, dtype=dtype, casting=casting)

    @implements(numpy.hstack, kwargs=("dtype", "casting"), complex_values=True)
    def hstack(self, tup: Any, dtype: Any = None, casting: str = "same_kind") -> CLArray:
        arrays = [self._at_least(a, 1) for a in tup]
        axis = 0 if arrays and arrays[0].ndim == 1 else 1
        return self.concatenate(arrays, axis=axis, dtype=dtype, casting=casting)

    @implements(numpy.dstack, kwargs=(), complex_values=True)
    def dstack(self, tup: Any) -> CLArray:
        return self.concatenate([self._at_least(a, 3) for a in tup], axis=2)

    @implements(numpy.column_stack, kwargs=(), complex_values=True)
    def column_stack(self, tup: Any) -> CLArray:
        arrays = [self.reshape(a, (a.size, 1)) if a.ndim < 2 else a for a in tup]
        return self.concatenate(arrays, axis=1)

    def _at_least(self, a: CLArray, ndim: int) -> CLArray:
        """numpy.atleast_1d/2d/3d of ``a``, a view ((n,) -> (1, n) -> (1, n, 1)): NumPy's shape,
        worked out on zero-byte stand-ins."""
        if a.ndim >= ndim:
            return a
        shape = (numpy.atleast_1d, numpy.atleast_2d, numpy.atleast_3d)[ndim - 1](numpy.empty(a.shape, _NO_BYTES)).shape
        return self.reshape(a, shape)

    @implements(numpy.rot90, kwargs=("k", "axes"), complex_values=True)
    def rot90(self, m: CLArray, k: int = 1, axes: Any = (0, 1)) -> CLArray:
        """NumPy's rot90: flips and a transpose, all views (as NumPy's), with its errors."""
        axes = tuple(axes)
        if len(axes) != 2:
            raise ValueError("len(axes) must be 2.")
        if axes[0] == axes[1] or abs(axes[0] - axes[1]) == m.ndim:
            raise ValueError("Axes must be different.")
        if axes[0] >= m.ndim or axes[0] < -m.ndim or axes[1] >= m.ndim or axes[1] < -m.ndim:
            raise ValueError(f"Axes={axes} out of range for array of ndim={m.ndim}.")
        k = operator.index(k) % 4
        if k == 0:
            return m.view(m.shape, m.strides, m.offset)
        if k == 2:
            return self.numpy_view(numpy.flip, self.numpy_view(numpy.flip, m, axes[0]), axes[1])
        order = list(range(m.ndim))
        order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
        if k == 1:
            return self.transpose(self.numpy_view(numpy.flip, m, axes[1]), order)
        return self.numpy_view(numpy.flip, self.transpose(m, order), axes[1])

    @implements(numpy.append, kwargs=("axis",), complex_values=True,
                accepts=lambda args, kwargs: len(args) > 1 and _native_or_device(args[1]))
    def append(self, arr: CLArray, values: CLArray, axis: Any = None) -> CLArray:
        """NumPy's append: a concatenate (of the two flattened arrays when ``axis`` is None)."""
        if axis is None:
            if arr.ndim != 1:
                arr = self.ravel(arr)
            values = self.ravel(values)
            axis = arr.ndim - 1
        return self.concatenate([arr, values], axis=axis)

    @implements(numpy.concatenate, kwargs=("axis", "out", "dtype", "casting"), complex_values=True)
    def concatenate(
        self, arrays: Any, axis: Any = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind"
    ) -> CLArray:
        arrays = list(arrays)
        if out is not None and dtype is not None:
            raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both were provided.")
        if axis is None:
            arrays = [self.ravel(a) for a in arrays]
            axis = 0
        # (out= is checked as dtype=out.dtype: NumPy's casting rule and TypeError)
        shape, rdtype = _concat_result(arrays, axis, out.dtype if out is not None else dtype, casting)
        ax = _norm_axes(axis, arrays[0].ndim)[0]
        if out is not None and out.shape != shape:
            raise ValueError(f"Output array is the wrong shape: {out.shape} instead of {shape}")
        if out is None:  # (in the memory order NumPy gives it: concatenate([a.T, a.T]) is F-ordered)
            result = self.empty_in_order(shape, rdtype, _order.join_axes([(a.shape, a.strides) for a in arrays]))
        else:
            result = out
        pos = 0
        for a in arrays:
            n = a.shape[ax]
            dst = result.view(a.shape, result.strides, result.offset + pos * result.strides[ax])
            self.copy_into(dst, a)
            pos += n
        return result

    @implements(numpy.stack, kwargs=("axis", "out", "dtype", "casting"), complex_values=True)
    def stack(
        self, arrays: Any, axis: int = 0, out: Any = None, dtype: Any = None, casting: str = "same_kind"
    ) -> CLArray:
        arrays = list(arrays)
        if not arrays:
            raise ValueError("need at least one array to stack")
        if any(a.shape != arrays[0].shape for a in arrays):
            raise ValueError("all input arrays must have the same shape")
        ax = _norm_axes(axis, arrays[0].ndim + 1)[0]
        expanded = [
            a.view(a.shape[:ax] + (1,) + a.shape[ax:], a.strides[:ax] + (0,) + a.strides[ax:], a.offset) for a in arrays
        ]
        return self.concatenate(expanded, axis=ax, out=out, dtype=dtype, casting=casting)

    @implements(numpy.array_split, kwargs=("indices_or_sections", "axis"), complex_values=True)
    def array_split(self, a: CLArray, indices_or_sections: Any, axis: int = 0) -> list[CLArray]:
        """Views, as NumPy's (it slices): NumPy splits a zero-byte stand-in, the offsets are kept."""
        return self._split(numpy.array_split, a, indices_or_sections, axis)

    @implements(numpy.split, kwargs=("indices_or_sections", "axis"), complex_values=True)
    def split(self, a: CLArray, indices_or_sections: Any, axis: int = 0) -> list[CLArray]:
        return self._split(numpy.split, a, indices_or_sections, axis)

    def numpy_view(self, how: Callable[..., Any], a: CLArray, *args: Any, **kwargs: Any) -> Any:
        """The view NumPy's ``how`` makes of ``a`` (swapaxes, moveaxis, squeeze, flip, ...: metadata
        only), with NumPy's errors: computed on a zero-byte stand-in with ``a``'s layout."""
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        base = dummy.__array_interface__["data"][0]

        def back(v: numpy.ndarray | numpy.generic) -> CLArray:
            if not isinstance(v, numpy.ndarray):  # (a 0-d array's one element, as flip's ``m[()]`` gives it)
                assert a.ndim == 0, f"{how.__name__} gave a scalar of a {a.ndim}-d array"
                return a.view((), (), a.offset)  # (the dispatcher reads it back as NumPy's scalar)
            return a.view(v.shape, v.strides, a.offset + v.__array_interface__["data"][0] - base)

        result = how(dummy, *args, **kwargs)
        return type(result)(back(v) for v in result) if isinstance(result, (tuple, list)) else back(result)

    @implements(numpy.broadcast_arrays, kwargs=_numpy_keywords(numpy.broadcast_arrays), complex_values=True)
    def broadcast_arrays(self, *arrays: CLArray, subok: bool = False) -> tuple[CLArray, ...]:
        # (a number among them is NumPy's 0-d array of it: broadcast_arrays(0, a))
        arrays = tuple(a if isinstance(a, CLArray) else self.from_host(numpy.asarray(a)) for a in arrays)
        shape = numpy.broadcast_shapes(*(a.shape for a in arrays))
        return tuple(self.numpy_view(numpy.broadcast_to, a, shape) for a in arrays)

    def _split(self, how: Callable[..., Any], a: CLArray, indices_or_sections: Any, axis: int) -> list[CLArray]:
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        base = dummy.__array_interface__["data"][0]
        views = how(dummy, indices_or_sections, axis=axis)
        return [a.view(v.shape, v.strides, a.offset + v.__array_interface__["data"][0] - base) for v in views]

    @implements(numpy.ndarray.view, kwargs=("dtype", "type"), complex_values=True)
    def array_view(self, a: CLArray, dtype: Any = None, type: Any = None) -> CLArray:  # noqa: A002  (NumPy's)
        """``a.view(dtype)``: the same memory read as another dtype, as NumPy allows it (the last
        axis contiguous when the item size changes)."""
        if type is not None or (isinstance(dtype, builtins.type) and issubclass(dtype, numpy.ndarray)):
            raise TypeError("opencl backend: views as ndarray subclasses are NumPy's")  # (supports_function said no)
        new = a.dtype if dtype is None else numpy.dtype(dtype)
        if new.itemsize == a.itemsize:
            return CLArray(self, a.data, a.shape, new, a.strides, a.offset, a.base or a)
        if a.ndim == 0:
            raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
        if a.shape[-1] != 1 and a.strides[-1] != a.itemsize:
            raise ValueError("To change to a dtype of a different size, the last axis must be contiguous")
        total = a.shape[-1] * a.itemsize
        if total % new.itemsize:
            raise ValueError("When changing to a larger dtype, its size must be a divisor of the total size in bytes "
                             "of the last axis of the array.")
        shape = (*a.shape[:-1], total // new.itemsize)
        return CLArray(self, a.data, shape, new, (*a.strides[:-1], new.itemsize), a.offset, a.base or a)

    @implements(numpy.real, kwargs=(), complex_values=True)
    def real(self, a: CLArray) -> CLArray:
        """The real part: a view of a complex array's memory (writes reach it), else the array."""
        return _part(a, 0) if a.dtype.kind == "c" else a.view(a.shape, a.strides, a.offset)

    @implements(numpy.imag, kwargs=(), complex_values=True)
    def imag(self, a: CLArray) -> CLArray:
        return _part(a, 1)


def _numpy_view(func: Callable[..., Any]) -> Callable[..., Any]:
    def impl(self: Movement, a: CLArray, *args: Any, **kwargs: Any) -> Any:
        return self.numpy_view(func, a, *args, **kwargs)

    return impl


for _func in VIEW_FUNCTIONS:
    implements(_func, kwargs=_numpy_keywords(_func), complex_values=True)(_numpy_view(_func))
