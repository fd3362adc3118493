"""The emulated backend: CuPy's routing (cupy/array_module.py) with NumPy arrays as 'device' memory,
so the core's device path runs on machines without a GPU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy

from .. import _errors, _fperr
from ..kernels import ir
from . import random_kernels
from .cupy.array_module import ArrayModuleBackend


def _into(out: Any, result: Any) -> Any:
    """``result``, written into ``out`` where one is given (a stand-in's ``out=``)."""
    if out is None:
        return result
    out[...] = result
    return out


class _CupyLikeNumpy:
    """NumPy as the emulated backend's array module, answering as CuPy's own functions do where
    those were measured to differ from NumPy's on CUDA (an H100, 2026-12-07), so that the CuPy
    path's corrections of them run, and are tested, here: CuPy lays the results of sort,
    cumsum, cumprod and round of integers out in C order and argsort's along a moved axis, and
    its kernels flush float32 subnormals (count_nonzero counts 1e-40 as zero). From an H100's run of
    2026-12-07 too: swapaxes and rollaxis refuse an axis out of range with a ValueError (NumPy's is
    an AxisError), and clip converts its Python-int bounds into an integer array's dtype (an
    OverflowError beyond it, where NumPy drops such a bound). From CuPy's source: nanmean, nanvar and
    nanstd give a slice without numbers (or degrees of freedom) its NaN silently, and average
    takes only 1-d weights along one axis when their shape differs from the data's. Everything else is NumPy's (the
    backend's own hooks imitate the rest: 0-d uploads, fills and scatters)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(numpy, name)

    @staticmethod
    def sort(a: Any, axis: Any = -1, kind: Any = None, **kwargs: Any) -> Any:  # (CuPy's take kind too)
        return numpy.ascontiguousarray(numpy.sort(a, axis, kind, **kwargs))

    @staticmethod
    def argsort(a: Any, axis: Any = -1, kind: Any = None, **kwargs: Any) -> Any:
        result = numpy.argsort(a, axis, kind, **kwargs)
        if axis is None or result.ndim < 2:
            return result
        return numpy.moveaxis(numpy.ascontiguousarray(numpy.moveaxis(result, axis, -1)), -1, axis)

    @staticmethod
    def cumsum(a: Any, *args: Any, **kwargs: Any) -> Any:
        return numpy.ascontiguousarray(numpy.cumsum(a, *args, **kwargs))

    @staticmethod
    def cumprod(a: Any, *args: Any, **kwargs: Any) -> Any:
        return numpy.ascontiguousarray(numpy.cumprod(a, *args, **kwargs))

    @staticmethod
    def around(a: Any, decimals: int = 0, out: Any = None) -> Any:
        result = numpy.around(a, decimals, out)
        return result if out is not None or a.dtype.kind not in "iu" else numpy.ascontiguousarray(result)

    @staticmethod
    def swapaxes(a: Any, axis1: int, axis2: int) -> Any:
        if not (-a.ndim <= axis1 < a.ndim and -a.ndim <= axis2 < a.ndim):
            raise ValueError("Axis out of range")
        return numpy.swapaxes(a, axis1, axis2)

    @staticmethod
    def rollaxis(a: Any, axis: int, start: int = 0) -> Any:
        if not (-a.ndim <= axis < a.ndim and -a.ndim <= start <= a.ndim):
            raise ValueError("Axis out of range")
        return numpy.rollaxis(a, axis, start)

    @staticmethod
    def clip(a: Any, a_min: Any, a_max: Any, out: Any = None) -> Any:  # (CuPy's signature)
        if getattr(a, "dtype", numpy.dtype(float)).kind in "iu":
            for bound in (a_min, a_max):
                if type(bound) is int:
                    numpy.asarray(bound, a.dtype)  # (NumPy's OverflowError out of the dtype's range)
        return numpy.clip(a, a_min, a_max, out=out)

    @staticmethod
    def nanmean(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False) -> Any:
        # (CuPy's: NumPy's value, but a slice without numbers gives its NaN without a warning)
        if a.dtype.kind not in "fc":
            return numpy.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims)
        total = numpy.nansum(a, axis=axis, dtype=dtype, keepdims=keepdims)
        count = numpy.sum(~numpy.isnan(a), axis=axis, keepdims=keepdims)
        with numpy.errstate(invalid="ignore", divide="ignore"):
            result = numpy.asarray(total / count).astype(total.dtype)
        return _into(out, result)

    @staticmethod
    def nanvar(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
               keepdims: bool = False) -> Any:
        # (CuPy's: NumPy's steps and values, but a slice without degrees of freedom is divided by
        # max(count - ddof, 0) without a warning)
        if a.dtype.kind not in "fc":
            return numpy.var(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims)
        mask = numpy.isnan(a)
        arr = numpy.where(mask, a.dtype.type(0), a)
        count = numpy.sum(~mask, axis=axis, dtype=numpy.intp, keepdims=True)
        with numpy.errstate(invalid="ignore", divide="ignore"):
            mean = numpy.asarray(numpy.sum(arr, axis=axis, dtype=dtype, keepdims=True))  # (0-d data: a scalar)
            mean = numpy.true_divide(mean, count, out=mean, casting="unsafe")
            numpy.subtract(arr, mean, out=arr, casting="unsafe")
            numpy.copyto(arr, 0, where=mask)
            squares = (numpy.multiply(arr, arr.conj(), out=arr).real if arr.dtype.kind == "c"
                       else numpy.multiply(arr, arr, out=arr))
            var = numpy.sum(squares, axis=axis, dtype=dtype, keepdims=keepdims)
            freedom = numpy.maximum((count if keepdims else count.reshape(numpy.shape(var))) - ddof, 0)
            var = numpy.asarray(numpy.true_divide(var, freedom)).astype(var.dtype)
        return _into(out, var)

    @staticmethod
    def nanstd(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0,
               keepdims: bool = False) -> Any:
        return _into(out, numpy.sqrt(_CupyLikeNumpy.nanvar(a, axis, dtype, None, ddof, keepdims)))

    @staticmethod
    def average(a: Any, axis: Any = None, weights: Any = None, returned: bool = False, *,
                keepdims: bool = False) -> Any:
        # (CuPy's: weights of another shape than a's must be 1-d, along one axis)
        if weights is not None and numpy.shape(weights) != numpy.shape(a) and (
                numpy.ndim(weights) != 1 or not isinstance(axis, int)):
            raise TypeError("1D weights expected when shapes of a and weights differ.")
        return numpy.average(a, axis, weights, returned, keepdims=keepdims)

    @staticmethod
    def count_nonzero(a: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(a, "dtype", None) == numpy.float32:
            a = numpy.where(numpy.abs(a) < numpy.finfo(numpy.float32).tiny, numpy.float32(0), a)
        return numpy.count_nonzero(a, *args, **kwargs)


class EmulatedBackend(ArrayModuleBackend):
    """CuPy's routing with NumPy arrays as 'device' memory: tests the device path without a GPU."""

    name = "emulated"
    xp = _CupyLikeNumpy()

    @staticmethod
    def _pointer(a: Any) -> int:
        return a.__array_interface__["data"][0]

    #: Bytes one "device" array may take (None: no limit). Tests lower it to stand for a device
    #: too small for an array: allocations past it raise DeviceMemoryError, as CuPy's would.
    max_alloc_bytes: int | None = None

    def _room(self, nbytes: int) -> None:
        if self.max_alloc_bytes is not None and nbytes > self.max_alloc_bytes:
            raise _errors.DeviceMemoryError("emulated device", nbytes, per_array=self.max_alloc_bytes)

    def _held(self, result: Any) -> Any:
        """``result``, once it fits (the emulation computes first, then checks its room)."""
        for r in result if isinstance(result, tuple) else (result,):
            if isinstance(r, numpy.ndarray):
                self._room(r.nbytes)
        return result

    def run_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...],
                  out: Any = None, errors: Any = None) -> Any:
        _check_operands(graph, inputs, out)
        if out is None:
            self._room(math.prod(shape) * graph.out_dtypes[0].itemsize)
        # Interprets the IR with NumPy ufuncs on the exact loops: checks the recording, not a kernel.
        # NumPy's own floating-point flags of each checked node are the "kernel's" error flags.
        flags = self._error_flags(graph, errors)
        value = _evaluate(graph, inputs, scalars, flags)[0]
        if out is None:
            return numpy.array(numpy.broadcast_to(value, shape), copy=True)
        with numpy.errstate(all="ignore"):  # (a narrowing store was checked as a node)
            out[...] = value
        return out

    def reduce_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...], op: str,
                     axes: tuple[int, ...], errors: Any = None, reduce_check: int = 0) -> Any:
        _check_operands(graph, inputs, None)
        flags = self._error_flags(graph, errors, reduce_check)
        value = numpy.broadcast_to(_evaluate(graph, inputs, scalars, flags)[0], shape)
        slot = None if flags is None else flags[1] + _fperr.SLOT_BYTES * len(graph.error_nodes)
        with _raised(reduce_check, flags[0] if flags else None, slot):
            return numpy.asarray(getattr(numpy, op).reduce(value, axis=axes))

    # -- floating-point error flags: host memory standing in for the device's -----------------
    @staticmethod
    def error_buffer(nbytes: int) -> numpy.ndarray:
        return numpy.zeros(nbytes, numpy.uint8)

    @staticmethod
    def read_errors(buffer: numpy.ndarray, nbytes: int) -> numpy.ndarray:
        return buffer[:nbytes].copy()

    read_errors_later = read_errors

    @staticmethod
    def clear_errors(buffer: numpy.ndarray, nbytes: int) -> None:
        buffer[:nbytes] = 0

    def _error_flags(self, graph: Any, errors: Any, reduce_check: int = 0) -> tuple[numpy.ndarray, int] | None:
        if not (graph.error_nodes or reduce_check):
            return None
        if errors is None:
            errors = _fperr.call_launch(graph, _fperr.current(), ("reduce",) if reduce_check else ())
        return _fperr.reserve(self, errors)

    default_threshold_bytes = 0  # everything goes to the "device": this backend exists to test that path

    def __init__(self) -> None:
        super().__init__()
        self._random_state = numpy.random.RandomState()

    def _random_source(self) -> Any:
        return self._random_state  # not NumPy's global generator: device streams are separate

    def describe(self) -> dict[str, Any]:
        return {"backend": self.name, "device": "host memory standing in for a device (tests only)"}

    # NumPy's streams "on the device": NumPy draws them from the state handed over, as the
    # kernels would, so the core's bookkeeping around random_doubles runs as on a GPU.
    random_streams = frozenset({"PCG64", "MT19937"})  # type: ignore[assignment]

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        return random_kernels.numpy_doubles(state, shape)

    @staticmethod
    def _as_device_result(result: Any) -> Any:
        # CuPy returns 0-d arrays where NumPy returns scalars; so does the emulation.
        if isinstance(result, numpy.generic):
            return numpy.asarray(result)
        if isinstance(result, tuple):
            return tuple(EmulatedBackend._as_device_result(r) for r in result)
        return result

    def call_function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self._held(self._as_device_result(super().call_function(func, args, kwargs)))

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        if method == "__call__":
            own = self._own_ufunc(ufunc, inputs, kwargs, loop=loop)
            if own is not None:
                return own
        return self._held(self._as_device_result(super().call_ufunc(ufunc, method, inputs, kwargs, loop)))

    def mask_positions(self, mask: Any) -> Any:
        return self._held(super().mask_positions(mask))

    def take_positions(self, native: Any, positions: Any, ndim: int) -> Any:
        return self._held(super().take_positions(native, positions, ndim))

    @staticmethod
    def _scatter(a: Any, key: Any, value: Any) -> None:
        # (as CuPy's scatter may: the first of a repeated position's values wins, not NumPy's last)
        index = key[0] if type(key) is tuple and len(key) == 1 else key
        if isinstance(index, numpy.ndarray) and index.dtype.kind in "iu" and index.ndim == 1 and \
                numpy.ndim(value) == a.ndim and numpy.shape(value)[0] == index.size > 1:
            a[index[::-1]] = numpy.asarray(value)[::-1]
            return
        a[key] = value

    @staticmethod
    def _fill(native: Any, value: Any) -> None:
        # (as CuPy's ndarray.fill: a zero into C-contiguous memory is a memset, so -0.0 lands as +0.0)
        if native.flags.c_contiguous and (type(value) in (float, complex) or isinstance(value, numpy.inexact)) \
                and value == 0:
            value = native.dtype.type(0)
        native.fill(value)

    def _upload(self, array: numpy.ndarray) -> numpy.ndarray:
        self._room(array.nbytes)
        if array.ndim == 0 and array == 0:  # (as cupy.asarray of a 0-d array: a fill, whose zero is a memset)
            return numpy.zeros((), array.dtype)
        return numpy.array(array, copy=True, order="K")  # (the host array's memory order, as cupy.asarray)

    def to_host(self, native: numpy.ndarray) -> numpy.ndarray:
        return numpy.array(native, copy=True)



def _check_operands(graph: Any, inputs: list[Any], out: Any) -> None:
    """A GPU kernel reads each operand's memory as the dtype its graph declares: the emulation
    refuses what would be read as another type there (a bool array given for a float32 input)."""
    if len(inputs) != len(graph.inputs) or any(x.dtype != dt for x, dt in zip(inputs, graph.inputs)):
        raise TypeError(f"emulated kernel: operands {[x.dtype for x in inputs]} for inputs {list(graph.inputs)}")
    if out is not None and out.dtype != graph.out_dtypes[0]:
        raise TypeError(f"emulated kernel: output {out.dtype} for {graph.out_dtypes[0]}")



def _evaluate(graph: Any, inputs: list[Any], scalars: list[Any], flags: tuple[numpy.ndarray, int] | None = None
              ) -> list[Any]:
    """Values of an IR graph's outputs computed with NumPy, node by node (kernels/ir.evaluate); with
    ``flags`` (a flag buffer and this launch's offset), the categories each error node checks are
    set where NumPy raised them, as a kernel sets them (npgpu/_fperr.py)."""
    if flags is None:
        return ir.evaluate(graph, inputs, scalars)
    buffer, base = flags
    return ir.evaluate(graph, inputs, scalars,
                       lambda slot, check: _raised(check, buffer, base + _fperr.SLOT_BYTES * slot))


class _raised:
    """Within: NumPy's floating-point flags of the categories ``check`` set the flag bytes of
    slot ``base`` of ``buffer`` (the others ignored)."""

    def __init__(self, check: int, buffer: numpy.ndarray | None, base: int | None) -> None:
        self.check, self.buffer, self.base = check, buffer, base
        self.state: Any = None

    def _flag(self, kind: str, bits: int) -> None:
        for b, (bit, _, _) in enumerate(_fperr.CATEGORIES):
            if bits & bit & self.check:
                self.buffer[self.base + b] = 1  # type: ignore[index]

    def __enter__(self) -> None:
        if self.buffer is None or not self.check:
            self.state = numpy.errstate(all="ignore")
        else:
            modes = {key: "call" if self.check & bit else "ignore" for bit, key, _ in _fperr.CATEGORIES}
            self.state = numpy.errstate(call=self._flag, **modes)
        self.state.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.state.__exit__(*exc)
