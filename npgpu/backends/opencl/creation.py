"""Creation: full, zeros, ones, their ``*_like``, fill, and NumPy's patterns (arange, linspace, eye)."""

from __future__ import annotations

from typing import Any

import numpy

from ...kernels import ir
from ..base import Backend
from .array import CLArray, _part
from .memory import _like
from .routing import implements

#: keyword arguments of the ``*_like`` functions
_LIKE = ("dtype", "order", "subok", "shape")


class Creation(Backend):
    """Arrays made from a shape and a value, or from a pattern NumPy computes."""

    @implements(numpy.full, kwargs=("dtype", "order"), complex_values=True)
    def full(self, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C",
             like: CLArray | None = None) -> CLArray:
        dtype = numpy.asarray(fill_value).dtype if dtype is None else numpy.dtype(dtype)
        out = self.empty_ordered(shape, dtype, order, like)
        self.fill(out, fill_value)
        return out

    @implements(numpy.zeros, kwargs=("dtype", "order"), complex_values=True)
    def zeros(self, shape: Any, dtype: Any = float, order: str = "C", like: CLArray | None = None) -> CLArray:
        out = self.empty_ordered(shape, dtype, order, like)
        if out.size:
            self._cl.enqueue_fill_buffer(self.queue, out.data, numpy.uint8(0), 0, out.data.size)
        return out

    @implements(numpy.ones, kwargs=("dtype", "order"), complex_values=True)
    def ones(self, shape: Any, dtype: Any = float, order: str = "C") -> CLArray:
        return self.full(shape, 1, dtype, order)

    @implements(numpy.empty_like, kwargs=_LIKE, complex_values=True)
    def empty_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        return self.empty_ordered(*_like(a, dtype, order, shape))

    @implements(numpy.zeros_like, kwargs=_LIKE, complex_values=True)
    def zeros_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        return self.zeros(*_like(a, dtype, order, shape))

    @implements(numpy.ones_like, kwargs=_LIKE, complex_values=True)
    def ones_like(self, a: CLArray, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None):
        new_shape, new_dtype, new_order, like = _like(a, dtype, order, shape)
        return self.full(new_shape, 1, new_dtype, new_order, like)

    @implements(numpy.full_like, kwargs=_LIKE, complex_values=True)
    def full_like(
        self, a: CLArray, fill_value: Any, dtype: Any = None, order: str = "K", subok: bool = True, shape: Any = None
    ) -> CLArray:
        new_shape, new_dtype, new_order, like = _like(a, dtype, order, shape)
        return self.full(new_shape, fill_value, new_dtype, new_order, like)

    @implements(numpy.ndarray.fill, kwargs=(), complex_values=True)
    def fill(self, a: CLArray, value: Any) -> None:
        """``a[...] = value`` for a scalar (NumPy's conversion rules for the value)."""
        if isinstance(value, CLArray):  # a 0-d (or broadcastable) device value: copied, as NumPy assigns it
            self.copy_into(a, value)
            return
        probe = numpy.empty((), a.dtype)
        probe[()] = value  # NumPy's own assignment: its errors (OverflowError for -1 into uint32), even for no elements
        if a.size == 0:
            return
        if a.dtype.kind == "c":
            v = probe[()]
            self.fill(_part(a, 0), v.real)
            self.fill(_part(a, 1), v.imag)
            return
        v = probe
        b = ir.GraphBuilder()
        key = ("fill", a.dtype)
        graph = self._graphs.get(key)
        if graph is None:
            graph = self._graphs[key] = b.build([b.scalar(a.dtype)])
        self.run_elementwise(graph, [], [a], [numpy.asarray(v)[()]])

    def _host_pattern(self, host: numpy.ndarray) -> CLArray:
        # values NumPy computes on the host (arange/linspace/eye are cheap to describe,
        # and computing them with NumPy guarantees NumPy's exact rounding)
        return self.from_host(host)

    @implements(numpy.arange, kwargs=("dtype",))
    def arange(self, *args: Any, dtype: Any = None) -> CLArray:
        return self._host_pattern(numpy.arange(*args, dtype=dtype))

    @implements(numpy.linspace, kwargs=("num", "endpoint", "retstep", "dtype", "axis"))
    def linspace(
        self,
        start: Any,
        stop: Any,
        num: int = 50,
        endpoint: bool = True,
        retstep: bool = False,
        dtype: Any = None,
        axis: int = 0,
    ) -> Any:
        res = numpy.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
        if retstep:
            return self._host_pattern(res[0]), res[1]
        return self._host_pattern(res)

    @implements(numpy.eye, kwargs=("M", "k", "dtype", "order"))
    def eye(self, N: int, M: int | None = None, k: int = 0, dtype: Any = float, order: str = "C") -> CLArray:  # noqa: N803
        return self._host_pattern(numpy.eye(N, M, k, dtype=dtype))

    @implements(numpy.identity, kwargs=("dtype",))
    def identity(self, n: int, dtype: Any = float) -> CLArray:
        return self._host_pattern(numpy.identity(n, dtype=dtype))
