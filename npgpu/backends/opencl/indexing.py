"""Indexing: basic keys (views), boolean masks (gather and scatter of rows)."""

from __future__ import annotations

import math
from typing import Any

import numpy
from numpy.lib.stride_tricks import as_strided

from ... import _ops
from ...kernels import codegen
from ..base import Backend
from .array import CLArray
from .routing import implements


def _all_int_key(key: Any, ndim: int) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return len(parts) == ndim and all(isinstance(p, (int, numpy.integer)) and not isinstance(p, bool) for p in parts)


# gather/scatter of whole rows, in units of 1, 2, 4 or 8 bytes: out[i] = src[idx[i]] (scatter:
# dst[idx[i]] = vals[i]); offsets and the row length in units
_UNITS = {8: "ulong", 4: "uint", 2: "ushort", 1: "uchar"}
_GATHER_SRC = """
__kernel void npg_gather(__global {unit}* a, long a_off, __global const {unit}* b, long b_off,
                         __global const long* idx, long row, long n, int scatter) {{
  long i = get_global_id(0);
  if (i >= n) return;
  long r = i / row, c = i % row;
  if (scatter) a[a_off + idx[r] * row + c] = b[b_off + i];
  else a[a_off + i] = b[b_off + idx[r] * row + c];
}}
"""


def _gather_source(unit: int) -> codegen.KernelSource:
    return codegen.KernelSource(_GATHER_SRC.format(unit=_UNITS[unit]), "npg_gather", "opencl", (), False)


#: the largest assignment of a scalar a CPU device's memory takes in place rather than by a kernel
_HOST_FILL_ELEMENTS = 64


class Indexing(Backend):
    """a[key] and a[key] = value: basic keys as views, boolean masks by gather and scatter."""

    @implements(numpy.ndarray.__getitem__, kwargs=(), complex_values=True)
    def getitem(self, a: CLArray, key: Any) -> Any:
        if isinstance(key, CLArray) and key.dtype == numpy.bool_:
            return self._mask_get(a, key)
        # an all-integer key gives a 0-d view: the core turns it into NumPy's scalar
        return self._view(a, key)

    def basic_view(self, native: CLArray, key: Any) -> CLArray:
        return self._view(native, key)

    reads_ahead = True

    def strided_view(self, native: CLArray, shape: tuple[int, ...], strides: tuple[int, ...]) -> CLArray:
        return native.view(tuple(shape), tuple(strides), native.offset)

    @implements(numpy.ndarray.__setitem__, kwargs=(), complex_values=True)
    def setitem(self, a: CLArray, key: Any, value: Any) -> None:
        if isinstance(key, CLArray) and key.dtype == numpy.bool_:
            self._mask_set(a, key, value)
            return
        dst = self.getitem(a, key) if not _all_int_key(key, a.ndim) else self._view(a, key)
        if isinstance(value, CLArray):
            while value.ndim > dst.ndim and value.shape[0] == 1:  # NumPy drops leading ones of the value
                value = value.view(value.shape[1:], value.strides[1:], value.offset)
            if numpy.broadcast_shapes(value.shape, dst.shape) != dst.shape:
                raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {dst.shape}")
            self.copy_into(dst, value)
        else:
            # a CPU device's memory is host memory: a few elements are NumPy's assignment in place,
            # no kernel (PoCL: 20-40 us instead of 130-230 for a launch)
            view = self.host_view(dst) if self.host_backed and 0 < dst.size <= _HOST_FILL_ELEMENTS else None
            if view is not None:
                view[...] = value
            else:
                self.fill(dst, value)

    def _view(self, a: CLArray, key: Any) -> CLArray:
        if type(key) is tuple and len(key) == len(a.shape) and all(type(k) is int for k in key):
            # one element, a[i, j] (element loops: 8 us a read through the stand-in, 1 here)
            offset = a.offset
            for axis, (k, n, stride) in enumerate(zip(key, a.shape, a.strides, strict=True)):
                if not -n <= k < n:
                    raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
                offset += (k + n if k < 0 else k) * stride
            return a.view((), (), offset)
        dummy = as_strided(numpy.zeros(1, a.dtype), a.shape, a.strides, writeable=False)
        parts = key if isinstance(key, tuple) else (key,)
        # a trailing Ellipsis keeps an all-integer key a 0-d view rather than a scalar
        view = dummy[parts if any(p is Ellipsis for p in parts) else parts + (Ellipsis,)]
        delta = view.__array_interface__["data"][0] - dummy.__array_interface__["data"][0]
        return a.view(view.shape, view.strides, a.offset + delta)

    def _mask_positions(self, a: CLArray, mask: CLArray) -> numpy.ndarray:
        if mask.shape != a.shape[: mask.ndim]:  # NumPy's IndexError, from a zero-byte stand-in
            numpy.broadcast_to(numpy.zeros((), bool), a.shape)[numpy.zeros(mask.shape, bool)]
        # compaction on the host: the mask is 1 byte/element, and on PoCL host memory is the device's
        return numpy.flatnonzero(self.to_host(mask))

    def _mask_get(self, a: CLArray, mask: CLArray) -> CLArray:
        pos = self._mask_positions(a, mask)
        rest = a.shape[mask.ndim :]
        src = a if a.c_contiguous else self.copy(a)
        flat = self.reshape(src, (math.prod(mask.shape),) + rest)
        out = self.empty((len(pos),) + rest, a.dtype)
        if len(pos):
            self._gather(out, flat, pos)
        return out

    def _gather(self, out: CLArray, flat: CLArray, pos: numpy.ndarray) -> None:
        self._move_rows(out, flat, pos, math.prod(flat.shape[1:]) * flat.itemsize, scatter=False)

    def _move_rows(self, first: CLArray, second: CLArray, pos: numpy.ndarray, row: int, scatter: bool) -> None:
        """Row i of ``first`` <- row pos[i] of ``second`` (gather), or row pos[i] of ``first`` <- row i
        of ``second`` (scatter); rows of ``row`` bytes, one kernel for both directions."""
        idx = self.from_host(pos.astype(numpy.int64))
        # (the widest unit dividing the row and both offsets: a float64 row moves 8 bytes per work-item)
        unit = next(u for u in _UNITS if row % u == 0 and first.offset % u == 0 and second.offset % u == 0)
        kernel = self._build(("gather", unit), lambda: _gather_source(unit))
        n = len(pos) * (row // unit)
        args = [first.data, numpy.int64(first.offset // unit), second.data, numpy.int64(second.offset // unit),
                idx.data, numpy.int64(row // unit), numpy.int64(n), numpy.int32(1 if scatter else 0)]
        self._launch(kernel, n, args)

    def _mask_set(self, a: CLArray, mask: CLArray, value: Any) -> None:
        if not a.c_contiguous:  # into a contiguous copy, then back into the view
            staged = self.copy(a)
            self._mask_set(staged, mask, value)
            self.copy_into(a, staged)
            return
        pos = self._mask_positions(a, mask)
        rest = a.shape[mask.ndim :]
        flat = self.reshape(a, (math.prod(mask.shape),) + rest)
        vals = self.empty((len(pos),) + rest, a.dtype)
        if isinstance(value, CLArray):
            if numpy.broadcast_shapes(value.shape, vals.shape) != vals.shape:
                raise ValueError(
                    f"NumPy boolean array indexing assignment cannot assign {value.shape} input "
                    f"values to the {len(pos)} output values where the mask is true"
                )
            self.copy_into(vals, value)
        else:  # (NumPy converts a NumPy scalar written through a mask as an array: unsafe, warning)
            self.fill(vals, _ops.written_scalar(value, a.dtype, advanced=True))
        if len(pos):
            self._move_rows(flat, vals, pos, math.prod(rest) * a.itemsize, scatter=True)
