"""Creation: full, zeros, ones, their ``*_like``, fill, and NumPy's patterns (arange, linspace, eye)."""

from __future__ import annotations

from typing import Any

import numpy

from ...kernels import ir
from ..base import Backend
from .array import CLArray, _is_c_contiguous, _is_f_contiguous, _native_or_device, _part
from .memory import _like
from .routing import implements

#: keyword arguments of the ``*_like`` functions
_LIKE = ("dtype", "order", "subok", "shape")
_NO_BYTES = numpy.dtype([])


def _device_data(obj: Any) -> bool:
    """A device array, or (nested) lists and tuples of device arrays of one shape (CuPy stacks them)."""
    if _native_or_device(obj):
        return True
    if not isinstance(obj, (list, tuple)) or not obj or not all(map(_device_data, obj)):
        return False
    shapes = {_nested_shape(x) for x in obj}
    return len(shapes) == 1


def _nested_shape(obj: Any) -> tuple[int, ...]:
    return tuple(obj.shape) if _native_or_device(obj) else (len(obj), *_nested_shape(obj[0]))


def _first_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    value = args[0] if args else kwargs.get("object", kwargs.get("a"))
    if not _device_data(value):
        return False
    dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
    # (complex values converted to real: NumPy's, with its ComplexWarning)
    return dtype is None or numpy.dtype(dtype).kind == "c" or not _holds_complex(value)


def _holds_complex(obj: Any) -> bool:
    return obj.dtype.kind == "c" if _native_or_device(obj) else any(map(_holds_complex, obj))


def _scalar_range(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """logspace of scalar start, stop and base (array ones are NumPy's)."""
    values = [*args[:2], kwargs.get("start"), kwargs.get("stop"),
              args[4] if len(args) > 4 else kwargs.get("base", 10.0)]
    return all(v is None or isinstance(v, (int, float, numpy.integer, numpy.floating)) for v in values)


class Creation(Backend):
    """Arrays made from a shape and a value, or from a pattern NumPy computes."""

    @implements(numpy.full, kwargs=("dtype", "order"), complex_values=True)
    def full(self, shape: Any, fill_value: Any, dtype: Any = None, order: str = "C",
             like: CLArray | None = None) -> CLArray:
        dtype = numpy.asarray(fill_value).dtype if dtype is None else numpy.dtype(dtype)
        out = self.empty_ordered(shape, dtype, order, like)
        if not isinstance(fill_value, CLArray):
            # NumPy's full converts the value as an array cast (copyto, casting="unsafe": 300.75 into
            # int8 is 44), not as fill's scalar assignment (an OverflowError): NumPy's own full of one
            fill_value = numpy.full((), fill_value, dtype)[()]
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

    @implements(numpy.array, kwargs=("dtype", "copy", "order", "subok", "ndmin"), complex_values=True,
                accepts=_first_accepted)
    def array(self, object: Any, dtype: Any = None, copy: bool | None = True, order: str = "K",  # noqa: A002
              subok: bool = False, ndmin: int = 0) -> CLArray:
        """NumPy's array of device data: a copy unless ``copy`` allows none; lists of device arrays stacked."""
        return self._as_array(object, dtype, copy, order, ndmin)

    @implements(numpy.asarray, numpy.asanyarray, kwargs=("dtype", "order", "copy"), complex_values=True,
                accepts=_first_accepted)
    def asarray(self, a: Any, dtype: Any = None, order: str | None = None, copy: bool | None = None) -> CLArray:
        return self._as_array(a, dtype, copy, order, 0)

    def _as_array(self, obj: Any, dtype: Any, copy: bool | None, order: str | None, ndmin: int) -> CLArray:
        fresh = isinstance(obj, (list, tuple))
        arr = self._stacked(obj) if fresh else obj
        dt = arr.dtype if dtype is None else numpy.dtype(dtype)
        order = "K" if order is None else order.upper()
        if order not in ("C", "F", "A", "K"):
            raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
        contiguous = {"C": _is_c_contiguous(arr.shape, arr.strides, arr.itemsize), "F": _is_f_contiguous(arr)}
        needed = dt != arr.dtype or not contiguous.get(order, True)
        if copy is False and (needed or fresh):
            raise ValueError("Unable to avoid copy while creating an array as requested.")
        if needed or (copy and not fresh):
            result = self.empty_ordered(arr.shape, dt, order, like=arr)
            self.copy_into(result, arr)
        else:
            result = arr if fresh else arr.view(arr.shape, arr.strides, arr.offset)
        if result.ndim < ndmin:
            extra = ndmin - result.ndim
            result = result.view((1,) * extra + result.shape, (0,) * extra + result.strides, result.offset)
        return result

    def _stacked(self, items: Any) -> CLArray:
        """Nested lists of device arrays as one array (NumPy's dtype of them all)."""
        parts = [self._stacked(x) if isinstance(x, (list, tuple)) else x for x in items]
        return self.stack(parts, axis=0)

    @implements(numpy.logspace, kwargs=("num", "endpoint", "base", "dtype", "axis"), accepts=_scalar_range)
    def logspace(self, start: Any, stop: Any, num: int = 50, endpoint: bool = True, base: Any = 10.0,
                 dtype: Any = None, axis: int = 0) -> CLArray:
        return self._host_pattern(numpy.logspace(start, stop, num, endpoint, base, dtype, axis))

    @implements(numpy.tri, kwargs=("M", "k", "dtype"))
    def tri(self, N: int, M: int | None = None, k: int = 0, dtype: Any = float) -> CLArray:  # noqa: N803
        """NumPy's tri: ones at and below the k-th diagonal (j - i <= k), made on the device."""
        shape = numpy.tri(N, M, k, dtype=_NO_BYTES).shape  # (NumPy's errors and shape)
        mask = self._tri_mask(numpy.empty(shape, _NO_BYTES), int(k))  # (NumPy truncates a float k)
        return mask if numpy.dtype(dtype) == numpy.bool_ else self.copy(mask, dtype)

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
        host = numpy.eye(N, M, k, dtype=dtype, order=order)
        if order == "F" and host.ndim == 2 and not host.flags.c_contiguous:  # (its transpose's buffer)
            return self.transpose(self._host_pattern(host.T))
        return self._host_pattern(host)

    @implements(numpy.identity, kwargs=("dtype",))
    def identity(self, n: int, dtype: Any = float) -> CLArray:
        return self._host_pattern(numpy.identity(n, dtype=dtype))
