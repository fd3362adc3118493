"""CLArray (a strided view of an OpenCL buffer, NumPy's layout) and the layout arithmetic on it."""

from __future__ import annotations

import math
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

from ...kernels import ufuncs as _table
from ..base import Backend

_PY_SCALARS = (bool, int, float, complex)

class CLArray:
    """A strided view of an OpenCL buffer: NumPy's layout (byte strides, byte offset).

    Views share ``data``; ``base`` keeps the array whose buffer this views (None for owners).
    """

    __slots__ = ("data", "shape", "dtype", "strides", "offset", "base", "backend", "__weakref__")

    def __init__(
        self,
        backend: Backend,
        data: Any,
        shape: tuple[int, ...],
        dtype: numpy.dtype,
        strides: tuple[int, ...] | None = None,
        offset: int = 0,
        base: CLArray | None = None,
    ):
        self.backend = backend
        self.data = data
        self.shape = tuple(int(s) for s in shape)
        self.dtype = numpy.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else _c_strides(self.shape, self.dtype.itemsize)
        self.offset = int(offset)
        self.base = base

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def c_contiguous(self) -> bool:
        return _is_c_contiguous(self.shape, self.strides, self.dtype.itemsize)

    @property
    def T(self) -> CLArray:  # noqa: N802 - NumPy's name
        return self.view(self.shape[::-1], self.strides[::-1], self.offset)

    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], offset: int) -> CLArray:
        return CLArray(self.backend, self.data, shape, self.dtype, strides, offset, self.base or self)

    def get(self) -> numpy.ndarray:
        return self.backend.to_host(self)

    def __repr__(self) -> str:
        return f"CLArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, offset={self.offset})"





def _is_f_contiguous(a: CLArray) -> bool:
    return _is_c_contiguous(a.shape[::-1], a.strides[::-1], a.dtype.itemsize)


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides = []
    acc = itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _is_c_contiguous(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> bool:
    if 0 in shape:  # (NumPy's flags: an empty array is contiguous whatever its strides)
        return True
    acc = itemsize
    for n, s in zip(reversed(shape), reversed(strides), strict=True):
        if n == 0:
            return True
        if n != 1 and s != acc:
            return False
        acc *= n
    return True


def _span(a: CLArray) -> tuple[int, int]:
    """Lowest and one-past-highest byte touched by the view (relative to the buffer)."""
    lo = hi = a.offset
    for n, s in zip(a.shape, a.strides, strict=True):
        if n == 0:
            return a.offset, a.offset
        if s < 0:
            lo += (n - 1) * s
        else:
            hi += (n - 1) * s
    return lo, hi + a.itemsize


def _collapse(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop extent-1 dims and merge dims that are contiguous for every operand."""
    keep = [d for d in range(len(shape)) if shape[d] != 1]
    shp = [shape[d] for d in keep]
    sts = [[s[d] for d in keep] for s in strides]
    d = len(shp) - 1
    while d > 0:
        if all(st[d - 1] == st[d] * shp[d] for st in sts):
            shp[d - 1] *= shp[d]
            for st in sts:
                st[d - 1] = st[d]
            del shp[d]
            for st in sts:
                del st[d]
        d -= 1
    return tuple(shp), [tuple(st) for st in sts]


def _broadcast_strides(a: CLArray, shape: tuple[int, ...]) -> tuple[int, ...]:
    pad = len(shape) - a.ndim
    out = [0] * pad
    for n, s in zip(a.shape, a.strides, strict=True):
        out.append(0 if n == 1 else s)
    return tuple(out)


def _weak_type(x: Any) -> Any:
    """What NumPy's dtype resolution takes for an operand (Python scalars stay weak)."""
    if isinstance(x, CLArray):
        return x.dtype
    if type(x) is bool:  # (a Python bool is NumPy's bool, not a weak scalar)
        return numpy.dtype(bool)
    if type(x) in _PY_SCALARS:  # NEP 50: only Python scalars are weak (numpy.float64 subclasses float)
        return type(x)
    return numpy.asarray(x).dtype



def _storable(dt: numpy.dtype) -> bool:
    """Dtypes that can live on the device: the kernels' (complex64/128 and float16 too)."""
    return _table.is_kernel_dtype(dt)


def _part(a: CLArray, k: int) -> CLArray:
    """The real (k=0) or imaginary (k=1) part of a complex array, as a float view."""
    half = a.itemsize // 2
    return CLArray(a.backend, a.data, a.shape, numpy.dtype(f"f{half}"), a.strides, a.offset + k * half, a.base or a)


def _pairs(a: CLArray) -> CLArray:
    """A complex array as its (real, imag) float pairs: shape + (2,)."""
    half = a.itemsize // 2
    return CLArray(
        a.backend, a.data, a.shape + (2,), numpy.dtype(f"f{half}"), a.strides + (half,), a.offset, a.base or a
    )


def _native_or_device(x: Any) -> bool:
    """An array on the device (a native, or an npgpu device array not yet unwrapped)."""
    # (by type: a device array's __class__ says numpy.ndarray, so isinstance would call it a host array)
    return hasattr(x, "dtype") and hasattr(x, "shape") and not issubclass(type(x), (numpy.generic, numpy.ndarray))


def _array_operand(x: Any) -> bool:
    """An array operand: on the device, or a host array the core uploads before the call."""
    return hasattr(x, "dtype") and hasattr(x, "shape") and not issubclass(type(x), numpy.generic)



def _norm_axes(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` as sorted non-negative axes, with NumPy's errors (normalize_axis_tuple's)."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))
