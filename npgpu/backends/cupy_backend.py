"""CUDA GPUs through CuPy: the routing table (NumPy function -> CuPy function) and pinned transfers.

The only module that imports cupy. ``EmulatedBackend`` runs the same routing with NumPy
standing in for CuPy, so the device path of the core is exercised on machines without a GPU.
"""

from __future__ import annotations

import atexit
import functools
import inspect
import math
import os
import threading
import weakref
from collections.abc import Callable
from time import monotonic
from typing import Any, NoReturn

import numpy

from .. import _errors, _fperr
from ..kernels import ir
from ..kernels import ufuncs as _table
from .base import Backend, dtype_argument, native_numeric

# NumPy functions CuPy implements with NumPy's semantics, by dotted name under numpy.
# Checked against numpy.testing.overrides in tests/test_registry.py; a name missing from the
# installed CuPy is simply not routed (it falls back, counted).
ROUTED_FUNCTIONS: tuple[str, ...] = tuple(
    """
    sum prod mean std var min max amin amax argmin argmax ptp
    nansum nanprod nanmean nanstd nanvar nanmin nanmax nanargmin nanargmax
    cumsum cumprod nancumsum nancumprod any all count_nonzero median nanmedian
    percentile quantile average diff cross dot vdot inner outer tensordot einsum kron trace
    clip round around where nonzero flatnonzero argwhere sort argsort lexsort partition argpartition
    searchsorted unique bincount histogram digitize convolve correlate interp real imag angle
    isclose allclose array_equal nan_to_num isreal iscomplex
    reshape ravel transpose swapaxes moveaxis rollaxis squeeze expand_dims atleast_1d atleast_2d atleast_3d
    broadcast_to broadcast_arrays concatenate stack vstack hstack dstack column_stack split array_split
    hsplit vsplit dsplit tile repeat flip fliplr flipud roll rot90 pad take take_along_axis put copyto
    tril triu diag diagonal diagflat fill_diagonal meshgrid append
    zeros_like ones_like empty_like full_like copy asarray ascontiguousarray asanyarray array
    zeros ones empty full arange linspace logspace eye identity tri
    linalg.norm linalg.det linalg.inv linalg.solve linalg.eigh linalg.eigvalsh linalg.svd linalg.qr
    linalg.cholesky linalg.pinv linalg.lstsq linalg.matrix_power linalg.slogdet linalg.matrix_rank
    fft.fft fft.ifft fft.fft2 fft.ifft2 fft.fftn fft.ifftn fft.rfft fft.irfft fft.rfft2 fft.irfft2
    fft.rfftn fft.irfftn fft.hfft fft.ihfft fft.fftshift fft.ifftshift
    """.split()
)

# Functions NumPy answers with a Python bool (``array_equal(a, b) is True``); CuPy with a 0-d array.
_PYTHON_BOOL_RESULTS = frozenset({"array_equal", "array_equiv", "allclose"})


def _as_python_bool(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def answered(*args: Any, **kwargs: Any) -> bool:
        return bool(func(*args, **kwargs))

    return answered


# ndarray methods with no NumPy function of their own, keyed by the ndarray method object.
ROUTED_METHODS: tuple[str, ...] = ("astype", "fill", "view", "__getitem__", "__setitem__", "sort")

# Functions that make arrays from nothing but a shape (placement decides by output size).
CREATION_FUNCTIONS: tuple[str, ...] = ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye",
                                       "identity", "tri")

# Keyword arguments CuPy's functions don't take; a call passing one (not as its default) falls back.
_UNSUPPORTED_KWARGS = frozenset({"where", "initial", "like", "subok", "equal_nan_policy"})
# ufunc methods routed per ufunc: reduce/accumulate go through CuPy's reduction functions.
_UFUNC_REDUCE = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min", "logical_and": "all",
                 "logical_or": "any"}
_UFUNC_ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}
_UFUNC_CALL_KWARGS = frozenset({"out", "dtype", "casting"})
_REDUCE_KWARGS = frozenset({"axis", "dtype", "out", "keepdims"})


def _resolve(module: Any, dotted: str) -> Any:
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _keyword_names(func: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords ``func`` accepts, or None when its signature can't be read (Cython builtins)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


class ArrayModuleBackend(Backend):
    """A backend whose native arrays come from an array module with NumPy's API (CuPy)."""

    xp: Any = None

    def __init__(self) -> None:
        xp = self.xp
        functions: dict[Callable[..., Any], Callable[..., Any]] = {}
        keywords: dict[Callable[..., Any], frozenset[str] | None] = {}
        for dotted in ROUTED_FUNCTIONS:
            np_func, xp_func = _resolve(numpy, dotted), _resolve(xp, dotted)
            if np_func is not None and xp_func is not None:
                keywords[np_func] = _keyword_names(xp_func)
                if dotted in _PYTHON_BOOL_RESULTS:
                    xp_func = _as_python_bool(xp_func)
                functions[np_func] = xp_func
        for name in ROUTED_METHODS:
            np_method = getattr(numpy.ndarray, name)
            functions[np_method] = getattr(self, "_method_" + name.strip("_"))
            keywords[np_method] = None
        self.functions = functions
        self._keywords = keywords
        self.creation = frozenset(getattr(numpy, n) for n in CREATION_FUNCTIONS if getattr(numpy, n) in functions)
        self._eager_graphs: dict[Any, Any] = {}  # (_own_ufunc's one-node graphs)

    # -- memory -------------------------------------------------------------
    def is_native(self, obj: Any) -> bool:
        return issubclass(type(obj), self.xp.ndarray)  # (by type: a device array's __class__ says ndarray)

    def shares_memory(self, a: Any, b: Any) -> bool:
        # Bounds overlap: exact for the views legacy code makes, never a false "no".
        return bool(self.xp.may_share_memory(a, b))

    def same_view(self, a: Any, b: Any) -> bool:
        return (self._pointer(a) == self._pointer(b) and a.shape == b.shape and a.strides == b.strides
                and a.dtype == b.dtype)

    @staticmethod
    def _pointer(a: Any) -> int:
        return a.data.ptr

    def address(self, native: Any) -> int:
        return self._pointer(native)

    # -- fusion ---------------------------------------------------------------
    supports_fusion = True  # type: ignore[assignment]

    # -- compute ------------------------------------------------------------
    def supports_dtypes(self, dtypes: tuple[numpy.dtype, ...]) -> bool:
        # (CuPy has no long double: longdouble and clongdouble arrays stay NumPy's)
        return all(native_numeric(dt) and (isinstance(dt, type) or dt.char not in "gG") for dt in dtypes)

    def supports_ufunc(
        self, ufunc: numpy.ufunc, method: str, dtypes: tuple[numpy.dtype, ...], kwargs: dict[str, Any]
    ) -> bool:
        if not self.supports_dtypes(dtypes):
            return False
        name = ufunc.__name__
        xp_ufunc = getattr(self.xp, name, None)
        if xp_ufunc is None:
            return False
        if method == "__call__":
            if not _UFUNC_CALL_KWARGS.issuperset(kwargs):
                return False
            return self._has_loop(xp_ufunc, ufunc, dtypes)
        if method == "reduce":
            return name in _UFUNC_REDUCE and _REDUCE_KWARGS.issuperset(kwargs)
        if method == "accumulate":
            return name in _UFUNC_ACCUMULATE and frozenset({"axis", "dtype", "out"}).issuperset(kwargs)
        if method == "outer":
            return ufunc.nin == 2 and not kwargs and self._has_loop(xp_ufunc, ufunc, dtypes)
        return False

    def _check_int_power(self, base: Any, exponent: Any) -> None:
        """NumPy's ValueError for integers to negative integer powers (CuPy computes them)."""

        def kind(x: Any) -> str:
            return x.dtype.kind if hasattr(x, "dtype") else "b" if type(x) is bool else numpy.dtype(type(x)).kind

        if kind(base) not in "iu" or kind(exponent) != "i":
            return
        if not math.prod(numpy.broadcast_shapes(numpy.shape(base), numpy.shape(exponent))):
            return  # (NumPy raises only where it computes an element)
        negative = bool((exponent < 0).any()) if isinstance(exponent, self.xp.ndarray) else exponent < 0
        if negative:
            raise ValueError("Integers to negative integer powers are not allowed.")

    def _has_loop(self, xp_ufunc: Any, ufunc: numpy.ufunc, dtypes: tuple[numpy.dtype, ...]) -> bool:
        types = getattr(xp_ufunc, "types", None)
        if types is None:
            return True
        signature = "".join(dt.char for dt in dtypes[: ufunc.nin]) + "->" + "".join(
            dt.char for dt in dtypes[ufunc.nin:]
        )
        return signature in types

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        xp = self.xp
        name = ufunc.__name__
        if method == "__call__":
            if ufunc is numpy.power and len(inputs) == 2:
                self._check_int_power(*inputs)
            return getattr(xp, name)(*inputs, **kwargs)
        if method in ("reduce", "accumulate"):
            kwargs = dict(kwargs)
            kwargs.setdefault("axis", 0)
            out = kwargs.pop("out", None)  # (a tuple, NEP 13's form; CuPy's reductions take one array)
            target = out[0] if isinstance(out, tuple) else out
            table = _UFUNC_REDUCE if method == "reduce" else _UFUNC_ACCUMULATE
            result = getattr(xp, table[name])(inputs[0], **kwargs)
            if target is None:
                return result
            if target.shape != result.shape:  # NumPy never broadcasts a reduction's result into out=
                raise ValueError(f"output parameter for reduction operation {name} has the wrong number of "
                                 f"dimensions: shape {target.shape}, result shape {result.shape}")
            target[...] = result  # (through a temporary: out= may be the input, as in accumulate(a, out=a))
            return target
        if method == "outer":
            a, b = inputs
            return getattr(xp, name)(a.reshape(a.shape + (1,) * b.ndim), b)
        raise AssertionError(f"unrouted ufunc method {method}")  # supports_ufunc said no

    def _own_ufunc(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   report: bool = True) -> Any:
        """An eager call of a real-valued ufunc run by npgpu's own one-node kernel (the fused
        kernels' code: NumPy's formulas for special values, its error conditions checked inline,
        float32 subnormals kept), or None where CuPy's ufunc runs it. ``report=False``: its
        floating-point errors are not checked (the caller checks them).

        CuPy's own ufuncs differ from NumPy's at special values (floor_divide(inf, 1.0) is inf
        there, NumPy's nan; remainder(0.0, inf) nan, NumPy's 0.0) and flush float32 subnormals."""
        if ufunc.nout != 1 or not set(kwargs) <= {"out"}:
            return None
        kinds: list[str] = []
        types: list[Any] = []
        for x in inputs:
            if self.is_native(x):
                kinds.append("array")
                types.append(x.dtype)
            elif type(x) in (int, float, bool) or isinstance(x, numpy.generic):
                kinds.append("scalar")
                types.append(_weak(x))
            else:
                return None
        try:
            loop = tuple(ufunc.resolve_dtypes((*types, None)))
        except (TypeError, ValueError):
            return None
        if not all(dt.kind in "biuf" and _table.is_supported_dtype(dt) for dt in loop) or \
                not _table.supports_loop(ufunc, loop):
            return None
        shape = numpy.broadcast_shapes(*(x.shape for x, k in zip(inputs, kinds) if k == "array"))
        out = kwargs.get("out")
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        if target is not None and not (self.is_native(target) and target.dtype == loop[-1] and target.shape == shape):
            return None
        scalars = []
        for x, kind, dt in zip(inputs, kinds, loop):
            if kind == "scalar":
                if type(x) is int and not numpy.can_cast(numpy.min_scalar_type(x), dt) and dt.kind in "iu":
                    return None  # (an out-of-range Python int: NumPy's OverflowError or widened comparison)
                scalars.append(dt.type(x))
        if ufunc is numpy.power and loop[0].kind in "iu":
            self._check_int_power(*inputs)
        state = _fperr.current()
        check = state.check & _table.error_categories(ufunc, loop) if report else 0
        # (an array operand enters as its own dtype and is cast in the kernel, as NumPy's loop casts it)
        operand_dtypes = tuple(x.dtype if kind == "array" else dt for x, kind, dt in zip(inputs, kinds, loop))
        if not all(dt.kind in "biuf" and _table.is_supported_dtype(dt) for dt in operand_dtypes):
            return None
        key = (ufunc, loop, tuple(kinds), operand_dtypes, check)
        graph = self._eager_graphs.get(key)
        if graph is None:  # (a few hundred at most: ufuncs x loops x operand kinds x checks)
            graph = self._eager_graphs.setdefault(key, ir.ufunc_graph(ufunc, loop, tuple(kinds), operand_dtypes,
                                                                     (loop[-1],), check))
        arrays = [x for x, kind in zip(inputs, kinds) if kind == "array"]
        launch = _fperr.call_launch(graph, state) if graph.error_nodes else None
        result = self.run_fused(graph, arrays, scalars, shape, out=target, errors=launch)
        if launch is not None:
            _fperr.launched(self, launch)
        return result

    def supports_function(
        self, func: Callable[..., Any], dtypes: tuple[numpy.dtype, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        if func not in self.functions or not self.supports_dtypes(dtypes):
            return False
        target = dtype_argument(func, args, kwargs)
        if target is False or (target is not None and not self.supports_dtypes((target,))):
            return False
        if func is numpy.ndarray.view and _views_as_class(args, kwargs):
            return False  # a view as an ndarray subclass: NumPy's (the subclass lives on the host)
        accepted = self._keywords[func]
        if accepted is not None:
            return accepted.issuperset(kwargs)
        return _UNSUPPORTED_KWARGS.isdisjoint(kwargs)

    # -- random numbers (npgpu._random calls these for large draws) ---------------------------
    _RANDOM_ALIASES = {"ranf": "random_sample", "sample": "random_sample"}

    def _random_source(self) -> Any:
        return self.xp.random

    def supports_random(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        name = self._RANDOM_ALIASES.get(name, name)
        dtype = kwargs.get("dtype")
        if dtype is not None and numpy.dtype(dtype).kind not in "biuf":
            return False
        # Array-valued parameters (loc=[...], an ndarray of scales) stay with NumPy; a tuple is a size.
        values = list(args) + [v for k, v in kwargs.items() if k != "size"]
        return hasattr(self._random_source(), name) and not any(
            isinstance(v, (numpy.ndarray, list)) or type(v).__name__ == "DeviceArray" for v in values
        )

    def random_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return getattr(self._random_source(), self._RANDOM_ALIASES.get(name, name))(*args, **kwargs)

    def random_seed(self, seed: Any) -> None:
        self._random_source().seed(seed)

    def random_generator(self, seed: Any) -> Any:
        return self.xp.random.default_rng(seed)

    def supports_generator(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        return hasattr(self.xp.random.Generator, name) and not kwargs.get("out")

    # -- ndarray methods (the dispatcher passes the native array first) -------------------
    def _method_astype(self, a: Any, dtype: Any, order: str = "K", casting: str = "unsafe", subok: bool = True,
                       copy: bool = True) -> Any:
        if casting != "unsafe" and not numpy.can_cast(a.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {a.dtype!r} to {numpy.dtype(dtype)!r} "
                            f"according to the rule {casting!r}")
        target = numpy.dtype(dtype)
        if (a.dtype.kind == "f" and target.kind in "iu" and _table.is_supported_dtype(a.dtype)
                and _table.is_supported_dtype(target) and (order in "CA" and order != "A" or a.flags.c_contiguous)):
            # CuPy's float -> integer casts saturate (300.0 -> int8 127); NumPy's wrap as the host's
            # C conversion does: the cast kernel of npgpu's code generator follows NumPy's
            key = ("astype", a.dtype, target)
            graph = self._eager_graphs.get(key)
            if graph is None:
                graph = self._eager_graphs.setdefault(key, ir.cast_graph(a.dtype, target))
            return self.run_fused(graph, [a], [], a.shape)
        return a.astype(dtype, order=order, copy=copy)

    @staticmethod
    def _method_fill(a: Any, value: Any) -> None:
        a.fill(value)

    @staticmethod
    def _method_view(a: Any, *args: Any, **kwargs: Any) -> Any:
        return a.view(*args, **kwargs)

    def _method_getitem(self, a: Any, key: Any) -> Any:
        self._check_index_bounds(a, key)
        return a[key]

    def _method_setitem(self, a: Any, key: Any, value: Any) -> None:
        if type(value) in (int, float, complex, bool):
            try:  # NumPy's conversion and its errors (OverflowError for 300 into uint8, which CuPy wraps)
                numpy.empty((), a.dtype)[()] = value
            except (OverflowError, ValueError, TypeError):
                # NumPy reports a bad basic index or mask before a bad value, the bounds of index arrays after
                items = key if isinstance(key, tuple) else (key,)
                arrays = any(isinstance(k, list) or (isinstance(k, self.xp.ndarray) and k.dtype.kind in "iu")
                             for k in items)
                if not arrays or sum(k is not None and k is not Ellipsis for k in items) > a.ndim:
                    a[key]  # noqa: B018  (for its IndexError only)
                raise
        self._check_index_bounds(a, key)
        a[key] = value

    def _check_index_bounds(self, a: Any, key: Any) -> None:
        """NumPy's errors where CuPy's indexing differs: IndexError for out-of-range integer-array
        indices (CuPy wraps them around) and for index arrays that don't broadcast together (CuPy:
        ValueError); TypeError for slices with float bounds (CuPy takes them)."""
        items = key if isinstance(key, tuple) else (key,)
        for k in items:  # (NumPy reports a bad scalar index before a bad slice: a[0.0:, 0.0] is IndexError)
            if isinstance(k, (float, complex, numpy.inexact)):
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and "
                                 "integer or boolean arrays are valid indices")
        shapes = []
        for k in items:
            if isinstance(k, slice):
                for bound in (k.start, k.stop, k.step):
                    if bound is not None and not hasattr(type(bound), "__index__") and not self.is_native(bound):
                        raise TypeError("slice indices must be integers or None or have an __index__ method")
            elif isinstance(k, list) or (self.is_native(k) and k.dtype.kind in "iu"):
                shapes.append(numpy.shape(k) if isinstance(k, list) else k.shape)
        if len(shapes) > 1:
            try:
                numpy.broadcast_shapes(*shapes)
            except ValueError:
                listed = " ".join(str(shape).replace(" ", "") for shape in shapes)
                raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                                 f"{listed} ") from None
        consuming = [k for k in items if k is not None and k is not Ellipsis]
        axis = 0
        for k in items:
            if k is None:
                continue
            if k is Ellipsis:
                axis = a.ndim - sum(getattr(c, "ndim", 1) if _is_bool_index(c) else 1 for c in consuming)
                continue
            if _is_bool_index(k):
                axis += getattr(k, "ndim", 1)
                continue
            if isinstance(k, list) or (isinstance(k, self.xp.ndarray) and k.dtype.kind in "iu"):
                index = numpy.asarray(k) if isinstance(k, list) else k
                if index.size and axis < a.ndim and index.dtype.kind in "iu":
                    size = a.shape[axis]
                    low, high = int(index.min()), int(index.max())
                    if low < -size or high >= size:
                        bad = high if high >= size else low
                        raise IndexError(f"index {bad} is out of bounds for axis {axis} with size {size}")
            axis += 1

    @staticmethod
    def _method_sort(a: Any, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        a.sort(axis=axis)


class EmulatedBackend(ArrayModuleBackend):
    """CuPy's routing with NumPy arrays as 'device' memory: tests the device path without a GPU."""

    name = "emulated"
    xp = numpy

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
        from . import random_kernels

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

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "__call__":
            own = self._own_ufunc(ufunc, inputs, kwargs)
            if own is not None:
                return own
        return self._held(self._as_device_result(super().call_ufunc(ufunc, method, inputs, kwargs)))

    def from_host(self, array: numpy.ndarray) -> numpy.ndarray:
        self._room(array.nbytes)
        return numpy.array(array, copy=True, order="K")  # (the host array's memory order, as cupy.asarray)

    def to_host(self, native: numpy.ndarray) -> numpy.ndarray:
        return numpy.array(native, copy=True)


class _StagingWorkers:
    """Daemon threads that run a transfer's groups of chunks, and the wait for them, watched.

    The wait reports a worker that makes no progress for ``timeout`` seconds (a chunk not done):
    StagingTimeoutError naming the chunk, tracebacks of every thread on stderr, instead of a
    silent hang (one run on the GPU machine hung for 10 minutes at its first upload). An interrupt
    (KeyboardInterrupt) while waiting lets the workers finish first: they read or write memory
    the caller frees as the interrupt unwinds it. Memory of a transfer abandoned to a stuck worker
    is kept alive (``abandoned``), and a fresh set of threads takes the next transfers. The
    threads are daemons: a stuck one can't hold up the interpreter's exit.
    """

    #: Seconds a worker may spend on one chunk (4 MiB: about a millisecond) before it counts as stuck.
    timeout = 60.0

    def __init__(self, workers: int, name: str = "npgpu-pinned") -> None:
        self.workers = workers
        self.name = name
        self.abandoned: list[Any] = []
        self._queue: Any = None
        self._lock = threading.Lock()

    def _start(self) -> Any:
        import queue

        jobs: Any = queue.SimpleQueue()
        for i in range(self.workers):
            threading.Thread(target=self._serve, args=(jobs,), name=f"{self.name}-{i}", daemon=True).start()
        return jobs

    def shutdown(self) -> None:
        """Let the threads end once they are idle (the next transfer starts new ones)."""
        with self._lock:
            jobs, self._queue = self._queue, None
        if jobs is not None:
            for _ in range(self.workers):
                jobs.put(None)

    @staticmethod
    def _serve(jobs: Any) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            future, fn, group, progress = job
            if not future.set_running_or_notify_cancel():
                continue
            progress[1] = monotonic()  # (time spent queued behind other transfers is no sign of a stuck worker)
            try:
                future.set_result(fn(group, progress))
            except BaseException as exc:  # (handed to the waiting caller, which raises it)
                future.set_exception(exc)

    def run(self, work: Callable[[Any, list[Any]], None], groups: list[list[Any]], what: str, keep: Any) -> None:
        """``work(group, progress)`` for every group, on the workers; returns once all are done.

        ``work`` sets ``progress[0]`` to the chunk it starts on and ``progress[1]`` to
        ``time.monotonic()`` then. ``keep``: what the workers' memory belongs to (kept alive
        if a worker is abandoned). Raises a worker's error, StagingTimeoutError for a stuck one."""
        from concurrent.futures import Future

        with self._lock:
            if self._queue is None:
                self._queue = self._start()
            jobs = self._queue
        now = monotonic()
        progress = [[None, now] for _ in groups]
        futures: list[Future[None]] = []
        try:
            for group, state in zip(groups, progress, strict=True):
                future: Future[None] = Future()
                futures.append(future)
                jobs.put((future, work, group, state))
            self._wait(futures, progress, what, keep)
        except _errors.StagingTimeoutError:  # (the stuck worker is abandoned: no waiting for it)
            for future in futures:
                future.cancel()
            raise
        except BaseException:
            for future in futures:
                future.cancel()  # (groups not started yet never start)
            self._drain(futures, progress, what, keep)
            raise
        for future in futures:
            future.result()  # a worker's own error, once every worker has stopped

    def _wait(self, futures: list[Any], progress: list[list[Any]], what: str, keep: Any) -> None:
        from concurrent.futures import wait

        poll = max(0.01, min(1.0, self.timeout / 4))
        while wait(futures, timeout=poll).not_done:
            now = monotonic()
            stuck = [(i, state) for i, (future, state) in enumerate(zip(futures, progress, strict=True))
                     if future.running() and now - state[1] > self.timeout]
            if stuck:
                self._abandon(stuck, what, keep, now)

    def _drain(self, futures: list[Any], progress: list[list[Any]], what: str, keep: Any) -> None:
        """Wait for the workers already running (interrupts deferred: their memory must outlive them)."""
        while True:
            try:
                self._wait(futures, progress, what, keep)
                return
            except KeyboardInterrupt:
                continue
            except _errors.StagingTimeoutError:
                return  # (abandoned: its memory is kept alive)

    def _abandon(self, stuck: list[tuple[int, list[Any]]], what: str, keep: Any, now: float) -> None:
        import faulthandler
        import sys

        with self._lock:
            self.abandoned.append(keep)
            self._queue = None  # the next transfer starts fresh threads
        chunks = ", ".join(f"group {i} at bytes {state[0][0]}-{state[0][1]} for {now - state[1]:.0f} s"
                           if state[0] is not None else f"group {i} before its first chunk for {now - state[1]:.0f} s"
                           for i, state in stuck)
        sys.stderr.write(f"npgpu: a pinned staging worker is stuck ({what}: {chunks}); tracebacks of all threads:\n")
        sys.stderr.flush()
        try:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, OSError):  # (a stderr with no file descriptor: the process's own)
            faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        raise _errors.StagingTimeoutError(
            f"npgpu: {what} through the pinned staging threads made no progress in {self.timeout:.0f} s ({chunks}). "
            "Tracebacks of all threads went to stderr. The memory involved is kept alive and new threads take the "
            "next transfers. If this repeats, report it with the tracebacks; arrays smaller than "
            "CupyBackend.pinned_min_bytes move with one plain copy instead (raise it to avoid the staging threads).")


class _PinnedStager:
    """Moves host data through page-locked buffers, in chunks, on several threads at once.

    Pageable copies ran at 3-10 GB/s on the H200 machine while pinned ones reach ~55 GB/s; the
    host memcpy into the pinned buffer then limits, so each worker takes a contiguous run of
    chunks and double-buffers: it fills one pinned buffer while the other one's DMA runs.
    """

    #: Measured on the H200 machine (tools/measure_cupy.py grid, three runs on 2026-11-30): 4 MiB
    #: chunks on 8 workers were among the fastest every time (64 MiB: 25-34 GB/s, 256 MiB: 32-44);
    #: 16 workers or 1-2 MiB chunks were slower. The host memcpy into pinned memory on 8 threads
    #: alone ran at 30-37 GB/s there, which bounds any staged upload.
    def __init__(self, cupy: Any, chunk_bytes: int = 4 << 20, workers: int | None = None,
                 write_combined: bool = False) -> None:
        self.cupy = cupy
        self.chunk = chunk_bytes
        self.workers = workers or max(1, min(8, os.cpu_count() or 2))
        #: Upload buffers allocated write-combined: the host only writes them and the DMA reads
        #: them, so the CPU's copy streams past its caches (downloads keep cached buffers: the
        #: host reads those, and reads of write-combined memory are slow).
        self.write_combined = write_combined
        self._local = threading.local()
        self._pool = _StagingWorkers(self.workers)
        self._device = cupy.cuda.Device().id

    def _slot(self, upload: bool = False) -> tuple[list[Any], list[numpy.ndarray], Any, list[Any]]:
        name = "up" if upload and self.write_combined else "slot"
        slot = getattr(self._local, name, None)
        if slot is None:
            cp = self.cupy
            cp.cuda.Device(self._device).use()
            if name == "up":
                flags = cp.cuda.runtime.hostAllocWriteCombined
                memory = [cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(self.chunk, flags), 0) for _ in range(2)]
            else:
                memory = [cp.cuda.alloc_pinned_memory(self.chunk) for _ in range(2)]
            host = [numpy.frombuffer(m, numpy.uint8, self.chunk) for m in memory]
            slot = (memory, host, cp.cuda.Stream(non_blocking=True), [cp.cuda.Event(), cp.cuda.Event()])
            setattr(self._local, name, slot)
        return slot

    def _groups(self, nbytes: int) -> list[list[tuple[int, int]]]:
        chunks = [(start, min(start + self.chunk, nbytes)) for start in range(0, nbytes, self.chunk)]
        per = -(-len(chunks) // self.workers)
        return [chunks[i:i + per] for i in range(0, len(chunks), per)]

    def upload(self, src: numpy.ndarray, dst: Any) -> None:
        src_bytes = src.reshape(-1).view(numpy.uint8)
        base = dst.data.ptr
        memcpy = self.cupy.cuda.runtime.memcpyAsync

        def work(group: list[tuple[int, int]], progress: list[Any]) -> None:
            memory, host, stream, events = self._slot(upload=True)
            for i, (lo, hi) in enumerate(group):
                progress[0], progress[1] = (lo, hi), monotonic()
                j = i & 1
                events[j].synchronize()  # the DMA that last read buffer j has finished
                numpy.copyto(host[j][: hi - lo], src_bytes[lo:hi])
                memcpy(base + lo, memory[j].ptr, hi - lo, 1, stream.ptr)
                events[j].record(stream)
            stream.synchronize()

        self._pool.run(work, self._groups(src.nbytes), f"an upload of {src.nbytes} bytes", (src, dst))

    def download(self, src: Any, dst: numpy.ndarray) -> None:
        dst_bytes = dst.reshape(-1).view(numpy.uint8)
        base = src.data.ptr
        memcpy = self.cupy.cuda.runtime.memcpyAsync

        def work(group: list[tuple[int, int]], progress: list[Any]) -> None:
            memory, host, stream, events = self._slot()
            previous = None
            for i, (lo, hi) in enumerate(group):
                progress[0], progress[1] = (lo, hi), monotonic()
                j = i & 1
                memcpy(memory[j].ptr, base + lo, hi - lo, 2, stream.ptr)
                events[j].record(stream)
                if previous is not None:  # copy out the chunk before while this one's DMA runs
                    pj, plo, phi = previous
                    events[pj].synchronize()
                    numpy.copyto(dst_bytes[plo:phi], host[pj][: phi - plo])
                previous = (j, lo, hi)
            if previous is not None:
                pj, plo, phi = previous
                events[pj].synchronize()
                numpy.copyto(dst_bytes[plo:phi], host[pj][: phi - plo])

        self._pool.run(work, self._groups(src.nbytes), f"a download of {src.nbytes} bytes", (src, dst))


class CupyBackend(ArrayModuleBackend):
    """NVIDIA GPUs through CuPy."""

    name = "cupy"
    # Measured on an H200 machine (tools/measure_cupy.py, 2026-11-30): one elementwise op on
    # arrays already on the device costs ~45 us there against NumPy's ~120 us at 1e5 float64
    # elements, so arrays from 1 MiB are made on the device; an op on host inputs only beat
    # NumPy once the upload was amortized, between 1e6 and 1e7 elements (24-240 MB moved).
    default_threshold_bytes = 1 << 20
    upload_threshold_bytes = 32 << 20
    #: Arrays smaller than this move with one plain copy; the pinned pipeline pays above it.
    pinned_min_bytes = 4 << 20

    def __init__(self, device: int | None = None) -> None:
        import cupy

        self.xp = cupy
        if device is not None:
            cupy.cuda.Device(int(device)).use()
        super().__init__()
        self._stager: _PinnedStager | None = None
        self._kernels: dict[Any, Any] = {}
        #: Guards the kernel cache and the stager's creation (CuPy's own launches, memory pool and
        #: streams are thread-safe; every thread uses CuPy's default stream, so work of all threads
        #: on this device runs in the order it was queued).
        self._lock = threading.Lock()
        compile_errors = tuple(c for c in (getattr(cupy.cuda.compiler, "CompileException", None),
                                           getattr(getattr(cupy.cuda, "nvrtc", None), "NVRTCError", None)) if c)
        #: CuPy's errors that _raise_fault translates at this backend's boundary
        self._faults = (cupy.cuda.memory.OutOfMemoryError, cupy.cuda.runtime.CUDARuntimeError,
                        cupy.cuda.driver.CUDADriverError, *compile_errors)
        self._compile_errors = compile_errors
        if not _LIVE_CUPY:  # (registered after CuPy's own exit handlers, so it runs before them)
            atexit.register(_finish_devices)
        _LIVE_CUPY.add(self)
        self._error_hosts: dict[int, Any] = {}  # flag buffer -> (pinned memory, its host array)

    #: Compiled fused kernels kept (CuPy also caches the binaries on disk).
    kernel_cache_size = 256

    @classmethod
    def unavailable_reason(cls, device: int | None = None) -> str | None:
        import cupy

        if not cupy.cuda.is_available():
            return "CuPy is installed but finds no usable CUDA GPU (cupy.cuda.is_available() is False)"
        if device is not None and not 0 <= int(device) < cupy.cuda.runtime.getDeviceCount():
            return f"there is no CUDA device {device}"
        return None

    def describe(self) -> dict[str, Any]:
        cp = self.xp
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        free, total = dev.mem_info
        return {
            "backend": self.name,
            "device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
            "memory_bytes": total,
            "fp64": True,
            "cupy": cp.__version__,
            "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        }

    def supports_function(
        self, func: Callable[..., Any], dtypes: tuple[numpy.dtype, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        if func is numpy.einsum and (not args or not isinstance(args[0], str) or "out" in kwargs
                                     or not isinstance(kwargs.get("optimize", False), (bool, str))):
            return False  # CuPy's einsum takes no sublist subscripts, out= or explicit contraction path
        if func is numpy.clip and not _clip_bounds_without_nan(args, kwargs):
            return False  # CuPy's clip ignores NaN bounds, NumPy's propagates them
        return super().supports_function(func, dtypes, args, kwargs)

    def _stager_for_size(self, nbytes: int) -> _PinnedStager | None:
        if nbytes < self.pinned_min_bytes:
            return None
        if self._stager is None:
            with self._lock:  # (one stager: two would each start their threads)
                if self._stager is None:
                    self._stager = _PinnedStager(self.xp)
        return self._stager

    def from_host(self, array: numpy.ndarray) -> Any:
        cp = self.xp
        stager = self._stager_for_size(array.nbytes)
        if stager is None:
            return cp.asarray(array)
        src = numpy.ascontiguousarray(array)
        dst = cp.empty(src.shape, src.dtype)
        cp.cuda.get_current_stream().synchronize()
        stager.upload(src, dst)
        return dst

    #: Large downloads land in page-locked host memory from CuPy's pinned pool: one DMA at full
    #: speed and no second copy; the pool takes the memory back when the array is freed.
    pinned_destination = True
    pinned_destination_max_bytes = 1 << 30

    def to_host(self, native: Any) -> numpy.ndarray:
        if native.dtype.char in _ALIASED_CHARS:  # (CuPy's bool sums are 'q', NumPy's 'l': numpy.longlong
            native = native.view(numpy.dtype(native.dtype.str))  # is not numpy.int64 where both are 8 bytes)
        stager = self._stager_for_size(native.nbytes)
        if stager is None:
            return native.get()
        src = self.xp.ascontiguousarray(native)
        if self.pinned_destination and src.nbytes <= self.pinned_destination_max_bytes:
            memory = self.xp.cuda.alloc_pinned_memory(src.nbytes)
            dst = numpy.frombuffer(memory, src.dtype, src.size).reshape(src.shape)
            src.get(out=dst)
            return dst
        dst = numpy.empty(src.shape, src.dtype)
        self.xp.cuda.get_current_stream().synchronize()
        stager.download(src, dst)
        return dst

    def sync(self) -> None:
        self.xp.cuda.get_current_stream().synchronize()

    # -- complex products rounded as the host's NumPy rounds them -----------------------------
    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if method == "__call__" and ufunc in _COMPLEX_PRODUCTS and set(kwargs) <= {"out"}:
            out = kwargs.get("out")
            target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
            if self.is_native(inputs[0]) and (target is None or (
                    self.is_native(target) and target.dtype == inputs[0].dtype and target.shape == inputs[0].shape)):
                exact = self._complex_product(ufunc, inputs)
                if exact is not None:
                    if target is None:
                        return exact
                    target[...] = exact  # (a ** n into a: the product is computed first, then stored)
                    return target
        if method == "__call__":
            own = self._own_ufunc(ufunc, inputs, kwargs)
            if own is not None:
                return own
            if ufunc is numpy.divmod and not kwargs:
                # NumPy's divmod is its floor_divide and remainder (npy_divmod), whose own kernels give
                # NumPy's values; divmod's error conditions are then checked on those
                quotient = self._own_ufunc(numpy.floor_divide, inputs, {}, report=False)
                remainder = None if quotient is None else self._own_ufunc(numpy.remainder, inputs, {}, report=False)
                if remainder is not None:
                    self._eager_errors(ufunc, inputs, (quotient, remainder))
                    return quotient, remainder
        result = super().call_ufunc(ufunc, method, inputs, kwargs)
        if method == "__call__":
            self._eager_errors(ufunc, inputs, result)
        elif method == "reduce" and ufunc in (numpy.add, numpy.multiply) and self.is_native(inputs[0]):
            self._reduction_errors(inputs[0], result)
        return result

    # -- NumPy's overflow and invalid reports of sums and products (CuPy's reductions make none) --
    def call_function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        result = super().call_function(func, args, kwargs)
        if func in _CHECKED_REDUCTIONS and args and self.is_native(args[0]):
            self._reduction_errors(args[0], result)
        return result

    def _reduction_errors(self, values: Any, result: Any) -> None:
        """A sum, product or mean reports what NumPy's reduce reports ("overflow encountered in
        reduce", "invalid value ..."): where a result is inf though no value was inf or NaN, and NaN
        though no value was. Two small flag kernels (one pass over the values, one over the result),
        their flags read at the next sync point as a fused launch's are (npgpu/_fperr.py)."""
        if values.dtype.kind != "f" or not self.is_native(result) or result.dtype.kind != "f" or not values.size:
            return
        state = _fperr.current()
        if not state.check & (_table.OVER | _table.INVALID):
            return

        def build() -> Any:
            body = ("unsigned char* npg_err = (unsigned char*)npg_errp + npg_err_off;\n"
                    "if (npg_first == 0 ? !isfinite(x) : isinf(x)) npg_err[npg_first] = 1;\n"
                    "if (isnan(x)) npg_err[npg_first + 1] = 1;")
            return self.xp.ElementwiseKernel("uint64 npg_errp, int64 npg_err_off, int64 npg_first", "T x", body,
                                             "npg_reduction_errors", options=self.NVRTC_OPTIONS, no_return=True)

        kernel = self._kernel(("reduction_errors",), build)
        launch = _fperr.call_launch(None, state, ("reduce",), global_reduce=True)
        buffer, base = _fperr.reserve(self, launch)
        pointer = numpy.uint64(buffer.data.ptr)
        kernel(pointer, numpy.int64(base), numpy.int64(0), values)  # (x is an "output" only read)
        kernel(pointer, numpy.int64(base), numpy.int64(2), result)
        _fperr.launched(self, launch)

    def _complex_product(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...]) -> Any:
        """multiply, square, reciprocal and power of complex arrays with NumPy's own formulas and
        rounding (and float powers with a constant exponent NumPy's loop special-cases), or None.

        CuPy's complex products round differently from NumPy's by an ulp here and there, which
        iterations such as ``z = z**2 + c`` amplify (NPBench mandelbrot1 differed by 1.7e-2); its
        power goes through exp(n log z), its reciprocal through a division (1/inf is nan there)."""
        z = inputs[0]
        if ufunc is numpy.power and self.is_native(z) and z.dtype.kind == "f":
            # NumPy's loop special-cases a constant exponent (npgpu/kernels/ufuncs.py, CONSTANT_OPERAND)
            special = _CONSTANT_POWER.get(inputs[1]) if isinstance(inputs[1], (int, float, numpy.floating)) else None
            return None if special is None else self._own_ufunc(getattr(numpy, special), (z,), {})
        if not (self.is_native(z) and z.dtype.kind == "c"):
            return None
        if ufunc is numpy.power:
            n = _small_integer_exponent(inputs[1])
            if n is None:
                return None
            result = self._complex_kernel("power", z, z, n)
            if n < 0 and numpy.geterr()["invalid"] != "ignore" and bool((z == 0).any()):
                # NumPy's loop raises invalid for a zero base: the same operation on the host raises it
                # under the errstate in force (warn, raise, call or log)
                numpy.power(numpy.complex128(0), -1)
            return result
        if ufunc is numpy.reciprocal:
            return self._complex_kernel("reciprocal", z, z)
        fused = _numpy_complex_product_fuses(z.dtype)
        if fused is None:
            return None  # a host NumPy whose rounding npgpu does not know: CuPy's own product
        other = z if ufunc is numpy.square else inputs[1]
        if not (self.is_native(other) and other.dtype == z.dtype):
            return None
        return self._complex_kernel("multiply_fma" if fused else "multiply", z, other)

    def _complex_kernel(self, op: str, x: Any, y: Any, n: int = 0) -> Any:
        """One of _COMPLEX_BODIES over x (and y, broadcast together), compiled without flushing
        subnormals (see _compile): z**99 of complex64 passes through them."""
        cp = self.xp
        shape = numpy.broadcast_shapes(x.shape, y.shape)
        real = "float" if x.dtype == numpy.complex64 else "double"

        def build() -> Any:
            source = "\n".join([_COMPLEX_HELPERS.replace("R", real),
                                 f'extern "C" __global__ void npg_complex_{op}(const {real}* x, const {real}* y, '
                                 f"{real}* out, long long n, long long e) {{",
                                 "  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
                                 "  if (i >= n) return;",
                                 f"  const {real} xr = x[2 * i], xi = x[2 * i + 1], yr = y[2 * i], yi = y[2 * i + 1];",
                                 f"  {real} rr, ri;",
                                 *("  " + line for line in _COMPLEX_BODIES[op].replace("R", real).splitlines()),
                                 "  out[2 * i] = rr; out[2 * i + 1] = ri;", "}"])
            return self._compile(source, f"npg_complex_{op}")

        kernel = self._kernel(("complex", op, real), build)
        xs = cp.ascontiguousarray(cp.broadcast_to(x, shape))
        ys = xs if y is x else cp.ascontiguousarray(cp.broadcast_to(y, shape))
        out = cp.empty(shape, x.dtype)
        size = out.size
        if size:
            kernel(((size + 255) // 256,), (256,), (xs, ys, out, numpy.int64(size), numpy.int64(n)))
        return out

    # -- NumPy's PCG64 and MT19937 doubles computed on the GPU (backends/random_kernels.py) ------
    random_streams = frozenset({"PCG64", "MT19937"})  # type: ignore[assignment]

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        from . import random_kernels

        return random_kernels.cuda_doubles(self, state, shape)

    # -- fusion: generated CUDA from the shared IR, launched by CuPy's kernel machinery ----------
    _REDUCE = {"add": ("a + b", None), "multiply": ("a * b", None)}  # (identities: ufuncs.identity_literal)

    def _fused_function(self, graph: Any, reduce_check: int = 0) -> tuple[str, str, str]:
        """(preamble defining npg_fused, its argument list, its C++ parameter spec for CuPy).

        A graph that reports floating-point errors (or a reduction with ``reduce_check``) takes
        the flag buffer last: ``npg_fused(..., npg_err, npg_err_off)``, given to CuPy's kernels as
        ``uint64 npg_errp, int64 npg_err_off``. A reduction's slot (after the graph's) holds
        whole-launch flags: a reduced value was not finite / NaN (bytes 0, 1, set here), a result
        was inf / NaN (bytes 2, 3: npg_reduced in the post-map step); see _fperr.Launch."""
        from ..kernels import codegen, ufuncs

        ins = [f"in{i}" for i in range(len(graph.inputs))]
        scs = [f"s{j}" for j in range(len(graph.scalars))]
        stmts, results, helpers = codegen.emit_body(graph, "cuda", dict(enumerate(ins)), scs, names := {})
        stmts += codegen.emit_checks(graph, names, "cuda", codegen.error_flag("cuda")).inline()
        c_params = [f"{ufuncs.ctype(dt)} {n}" for n, dt in zip(ins + scs, graph.inputs + graph.scalars)]
        spec = ", ".join(f"{numpy.dtype(dt).name} {n}" for n, dt in zip(ins + scs, graph.inputs + graph.scalars))
        call = ins + scs
        extra: list[str] = []
        if graph.error_nodes or reduce_check:
            c_params += ["unsigned char* npg_err", "long long npg_err_off"]
            spec += ", uint64 npg_errp, int64 npg_err_off"
            call += ["(unsigned char*)npg_errp", "npg_err_off"]
        if reduce_check:
            slot = _fperr.SLOT_BYTES * len(graph.error_nodes)
            flag, value = codegen.error_flag("cuda"), results[0]
            stmts.append(f"if (!isfinite({value})) {{ {codegen.set_flag(flag, slot)} "
                         f"if (isnan({value})) {codegen.set_flag(flag, slot + 1)} }}")
            acc = ufuncs.ctype(graph.out_dtypes[0])
            extra = [f"__device__ {acc} npg_reduced({acc} a, unsigned char* npg_err, long long npg_err_off) {{",
                     f"  if (isinf(a)) {codegen.set_flag(flag, slot + 2)}",
                     f"  if (isnan(a)) {codegen.set_flag(flag, slot + 3)}",
                     "  return a;", "}"]
        out_type = ufuncs.ctype(graph.out_dtypes[0])
        preamble = "\n".join([ufuncs.typedefs("cuda"), *helpers.values(),
                              f"__device__ {out_type} npg_fused({', '.join(c_params)}) {{",
                              *("  " + st for st in stmts), f"  return {results[0]};", "}", *extra])
        return preamble, ", ".join(call), spec

    # -- floating-point error flags (npgpu/_fperr.py): bytes in device memory, read at sync points --
    def error_buffer(self, nbytes: int) -> Any:
        buffer = self.xp.zeros(nbytes, self.xp.uint8)
        # its page-locked host copy (read_errors_later), kept: one allocation per buffer
        memory = self.xp.cuda.alloc_pinned_memory(nbytes)
        self._error_hosts[buffer.data.ptr] = (memory, numpy.frombuffer(memory, numpy.uint8, nbytes))
        return buffer

    def read_errors(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        return buffer[:nbytes].get()  # (on the current stream: after every kernel queued there)

    def read_errors_later(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """The flags copied into page-locked host memory on the current stream, without waiting:
        every download (to_host) waits for that stream before it returns."""
        host = self._error_hosts[buffer.data.ptr][1][:nbytes]
        buffer[:nbytes].get(out=host, blocking=False)
        return host

    def clear_errors(self, buffer: Any, nbytes: int) -> None:
        buffer[:nbytes].fill(0)

    def _error_arguments(self, graph: Any, errors: Any, reduce_check: int = 0) -> tuple[Any, ...]:
        """The kernel arguments (pointer, offset) of a launch whose graph reports errors."""
        if not (graph.error_nodes or reduce_check):
            return ()
        if errors is None:
            errors = _fperr.call_launch(graph if graph.error_nodes else None, _fperr.current(),
                                        ("reduce",) if reduce_check else (), global_reduce=bool(reduce_check))
        buffer, base = _fperr.reserve(self, errors)
        return numpy.uint64(buffer.data.ptr), numpy.int64(base)

    def _eager_errors(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], result: Any) -> None:
        """CuPy's ufuncs detect no floating-point errors: where NumPy's errstate here asks for this
        ufunc's, one more kernel applies the ufunc table's conditions (npgpu/kernels/ufuncs.py,
        ERRORS) to the operands and the result, and its flags are reported as a fused kernel's."""
        from ..kernels import codegen, ir, ufuncs

        state = _fperr.current()
        if not state.check or ufunc.__name__ not in ufuncs.ERRORS:
            return
        results = result if isinstance(result, tuple) else (result,)
        if not all(self.is_native(r) for r in results) or any(r.dtype.kind not in "biuf" for r in results):
            return
        kinds = tuple("array" if self.is_native(x) else "scalar" for x in inputs)
        operand_types = tuple(x.dtype if self.is_native(x) else _weak(x) for x in inputs)
        try:
            loop = tuple(ufunc.resolve_dtypes(operand_types + (None,) * ufunc.nout))
        except (TypeError, ValueError):
            return
        if tuple(r.dtype for r in results) != loop[ufunc.nin:]:
            return  # a result stored in another dtype (out=): not checked (README)
        if not ufuncs.supports_loop(ufunc, loop):
            return  # a loop the kernel table lacks (float16): its errors are not checked (README)
        if any(self.is_native(x) and x.data.ptr == r.data.ptr for x in inputs for r in results):
            return  # written over its input (x += y, fusion off): the operand is gone (README)
        check = state.check & ufuncs.error_categories(ufunc, loop)
        if not check:
            return
        operand_dtypes = tuple(x.dtype if self.is_native(x) else loop[i] for i, x in enumerate(inputs))
        key = ("errors", ufunc, loop, kinds, operand_dtypes, check)

        def build() -> Any:
            graph = ir.ufunc_graph(ufunc, loop, kinds, operand_dtypes, loop[ufunc.nin:], check)
            apply = graph.outputs[0]
            names = {apply: "q0", **{o: f"a{i}" for i, o in enumerate(apply.operands)}}
            if ufunc.nout == 2:
                names[graph.outputs[1]] = "q1"
            lines = ["unsigned char* npg_err = (unsigned char*)npg_errp;"]
            lines += [f"const {ufuncs.ctype(loop[i])} a{i} = ({ufuncs.ctype(loop[i])})x{i};" for i in range(ufunc.nin)]
            lines += [f"const {ufuncs.ctype(dt)} q{k} = r{k};" for k, dt in enumerate(loop[ufunc.nin:])]
            lines += codegen.emit_checks(graph, names, "cuda", codegen.error_flag("cuda")).inline()
            params = ", ".join([f"{dt.name} x{i}" for i, dt in enumerate(operand_dtypes)]
                               + ["uint64 npg_errp", "int64 npg_err_off"])
            # the results are the kernel's outputs, only read: the launch covers their shape, allocates nothing
            results_spec = ", ".join(f"{dt.name} r{k}" for k, dt in enumerate(loop[ufunc.nin:]))
            kernel = self.xp.ElementwiseKernel(params, results_spec, "\n".join(lines), "npg_eager_errors",
                                               preamble=ufuncs.typedefs("cuda"), options=self.NVRTC_OPTIONS,
                                               no_return=True)
            return kernel, graph

        kernel, graph = self._kernel(key, build)
        launch = _fperr.call_launch(graph, state)
        buffer, base = _fperr.reserve(self, launch)
        operands = [x if self.is_native(x) else loop[i].type(x) for i, x in enumerate(inputs)]
        if results[0].size:
            kernel(*operands, numpy.uint64(buffer.data.ptr), numpy.int64(base), *results)
        _fperr.launched(self, launch)

    def _kernel(self, key: Any, build: Callable[[], Any]) -> Any:
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = build()  # (outside the lock: two threads may both build it; the first stored is kept)
            with self._lock:
                while len(self._kernels) >= self.kernel_cache_size:
                    self._kernels.pop(next(iter(self._kernels)))  # oldest first
                kernel = self._kernels.setdefault(key, kernel)
        return kernel

    # -- faults: CuPy's errors at this boundary, translated into npgpu's (npgpu._errors) -------------
    #: CUDA statuses after which the device (or its context) is unusable: no device, devices
    #: unavailable, ECC, illegal address, launch timeout, hardware stack error, illegal
    #: instruction, misaligned address, invalid address space, invalid PC, launch failure,
    #: context destroyed, system not ready, unknown.
    _LOST = frozenset({100, 46, 214, 700, 702, 714, 715, 716, 717, 718, 719, 709, 802, 999})

    def _raise_fault(self, exc: BaseException) -> NoReturn:
        cp = self.xp
        device = f"CUDA device {cp.cuda.Device().id}"
        status = getattr(exc, "status", None)
        if isinstance(exc, cp.cuda.memory.OutOfMemoryError) or status == 2:  # (2: cudaErrorMemoryAllocation)
            try:
                free, total = cp.cuda.Device().mem_info
            except cp.cuda.runtime.CUDARuntimeError:
                free = total = None
            raise _errors.DeviceMemoryError(device, getattr(exc, "_size", None), free=free, total=total,
                                            detail=str(exc)) from exc
        if isinstance(exc, self._compile_errors):
            raise _errors.KernelBuildError("CUDA (NVRTC)", str(exc)) from exc
        if status in self._LOST:
            raise _errors.DeviceLostError(
                f"npgpu: the {device} stopped working ({exc}). Arrays on it are lost; restart the process, or "
                "enable another backend (npgpu.enable('numpy')) to go on without it.") from exc
        raise exc

    #: Threads per block and elements per thread of the contiguous fused kernel. One element per
    #: thread (CuPy's ElementwiseKernel) left float32 E8 at 74% of copy bandwidth on the H200:
    #: too few bytes in flight. Each thread now loads UNROLL_BYTES of every input before computing.
    #: tools/probe_kernels.py on the H200 (2026-11-30): 128 threads x 16 bytes were among the
    #: fastest for E8 at 1e8 (float64 0.727 ms against 0.733 with 256 threads; float32 0.369);
    #: 16-byte vector loads gained nothing and streaming cache hints (__ldcs/__stcs) cost 10-25%.
    BLOCK = 128
    UNROLL_BYTES = 16
    #: No contraction of a*b+c into one FMA: NumPy rounds each operation (OpenCL: FP_CONTRACT OFF).
    NVRTC_OPTIONS = ("--fmad=false",)

    def run_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...],
                  out: Any = None, errors: Any = None) -> Any:
        cp = self.xp
        if out is None:
            out = cp.ndarray(shape, graph.out_dtypes[0])  # (cupy.empty, less one Python layer)
        size = out.size
        contiguous = size and out._c_contiguous  # (CuPy's flags property builds an object per call)
        if contiguous:
            for x in inputs:
                if not x._c_contiguous or x.size != size:
                    contiguous = False
                    break
        if contiguous:
            built = self._kernels.get(graph)
            if built is None:
                built = self._kernel(graph, lambda: self._contiguous_kernel(graph))
            kernel, per_block = built
            # (scalars are NumPy scalars of the graph's scalar dtypes: RawKernel passes them as such)
            kernel(((size + per_block - 1) // per_block,), (self.BLOCK,),
                   (*inputs, *scalars, out, numpy.int64(size), *self._error_arguments(graph, errors)))
            return out

        if not size:
            return out
        # Views, broadcasts and other strides: the code generator's strided kernel (as OpenCL's),
        # one thread per element of the broadcast shape, operands addressed by byte strides.
        full = shape if shape else (1,)
        ndim = len(full)
        kernel = self._kernel(("strided", graph, ndim), lambda: self._strided_kernel(graph, ndim))
        operands = [cp.broadcast_to(x, shape).reshape(full) if x.shape != full else x for x in inputs]
        target = out.reshape(full) if out.shape != full else out
        arrays = [*operands, target]
        args: list[Any] = []
        for x in arrays:
            args += [x, numpy.int64(0)]  # (the pointer is the view's first element: offset 0)
        args += [*scalars, numpy.int64(size), *(numpy.int64(d) for d in full)]
        for x in arrays:
            args += [numpy.int64(st) for st in x.strides]
        args += self._error_arguments(graph, errors)
        block = 256
        kernel(((size + block - 1) // block,), (block,), tuple(args))
        return out

    def _strided_kernel(self, graph: Any, ndim: int) -> Any:
        from ..kernels import codegen

        source = codegen.elementwise(graph, codegen.Layout(ndim, False), "cuda", name="npg_fused_strided")
        return self._compile(source.source, source.name)

    def _contiguous_kernel(self, graph: Any) -> tuple[Any, int]:
        """A RawKernel over contiguous operands of one size: thread t of block b handles elements
        b*BLOCK*unroll + t + k*BLOCK (k < unroll), all loads first, so accesses stay coalesced.

        ``out`` may be one of the inputs (``a += expr`` runs into ``a``; partly overlapping views
        were computed first by the dispatcher). Each element is then read and written by the
        same thread, read first, so the ``__restrict__`` read-only loads never see a value that
        this kernel has written."""
        from ..kernels import ufuncs

        itemsize = max(numpy.dtype(dt).itemsize for dt in (*graph.inputs, graph.out_dtypes[0]))
        unroll = max(1, self.UNROLL_BYTES // itemsize)
        preamble, _, _ = self._fused_function(graph)
        ins = [f"in{i}" for i in range(len(graph.inputs))]
        scs = [f"s{j}" for j in range(len(graph.scalars))]
        params = ([f"const {ufuncs.ctype(dt)}* __restrict__ {n}" for n, dt in zip(ins, graph.inputs)]
                  + [f"{ufuncs.ctype(dt)} {n}" for n, dt in zip(scs, graph.scalars)]
                  + [f"{ufuncs.ctype(graph.out_dtypes[0])}* __restrict__ out0", "long long n"])
        errors = ["npg_err", "npg_err_off"] if graph.error_nodes else []
        if errors:  # (the flag buffer: see _fused_function)
            params += ["unsigned char* npg_err", "long long npg_err_off"]
        loads = [f"{ufuncs.ctype(dt)} v{n}[{unroll}];" for n, dt in zip(ins, graph.inputs)]
        loaded = ", ".join([f"v{n}[k]" for n in ins] + scs + errors)
        direct = ", ".join([f"{n}[i]" for n in ins] + scs + errors)
        source = "\n".join([
            preamble,
            f'extern "C" __global__ void npg_fused_contiguous({", ".join(params)}) {{',
            f"  const long long step = {self.BLOCK};",
            f"  const long long base = (long long)blockIdx.x * (step * {unroll}) + threadIdx.x;",
            f"  if (base + step * {unroll - 1} < n) {{",
            *("    " + line for line in loads),
            f"    #pragma unroll\n    for (int k = 0; k < {unroll}; k++) {{",
            *(f"      v{n}[k] = {n}[base + k * step];" for n in ins),
            "    }",
            f"    #pragma unroll\n    for (int k = 0; k < {unroll}; k++) out0[base + k * step] = npg_fused({loaded});",
            "  } else {",
            f"    for (int k = 0; k < {unroll}; k++) {{",
            "      const long long i = base + k * step;",
            f"      if (i < n) out0[i] = npg_fused({direct});",
            "    }",
            "  }",
            "}",
        ])
        return self._compile(source, "npg_fused_contiguous"), self.BLOCK * unroll

    def _compile(self, source: str, name: str) -> Any:
        """Kernel ``name`` of CUDA ``source``, compiled by NVRTC without flushing float32 subnormals.

        CuPy compiles every kernel with ``-ftz=true`` (cupy/cuda/compiler.py; cupy#9576), where NumPy
        keeps subnormals (float32 1e-40 * 1 is 1e-40, log(1e-40) finite). npgpu's generated kernels
        are compiled here with ``-ftz=false`` instead and cached on disk (``NPGPU_CACHE_DIR``, default
        ~/.cache/npgpu), keyed by the source, the options, the GPU's architecture and the NVRTC and
        CuPy versions. Where CuPy lacks the compiler entry point, CuPy's RawKernel is used (flushing)."""
        cp = self.xp
        try:
            from cupy.cuda import compiler, function
        except ImportError:  # pragma: no cover  (a CuPy without its compiler module)
            return cp.RawKernel(source, name, options=self.NVRTC_OPTIONS)
        compile_ = getattr(compiler, "compile_using_nvrtc", None)
        if compile_ is None:
            return cp.RawKernel(source, name, options=self.NVRTC_OPTIONS)
        options = (*self.NVRTC_OPTIONS, "-ftz=false")
        binary = _cached_binary(cp, source, options)
        if binary is None:
            compiled = compile_(source, options, cache_in_memory=True)
            binary = compiled[0] if isinstance(compiled, tuple) else compiled
            _store_binary(cp, source, options, binary)
        module = function.Module()
        module.load(bytes(binary))
        return module.get_function(name)  # (the function keeps its module loaded)

    def reduce_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...], op: str,
                     axes: tuple[int, ...], errors: Any = None, reduce_check: int = 0) -> Any:
        if op not in self._REDUCE or not inputs:
            return None
        cp = self.xp
        reduce_expr, _ = self._REDUCE[op]
        # (the identity from the one table: -0.0 for a float sum, which keeps negative zeros' sign)
        identity = _table.identity_literal(op, graph.out_dtypes[0])

        def build() -> Any:
            preamble, call, spec = self._fused_function(graph, reduce_check)
            acc = graph.out_dtypes[0].name
            post = "y = npg_reduced(a, (unsigned char*)npg_errp, npg_err_off)" if reduce_check else "y = a"
            return cp.ReductionKernel(spec, f"{acc} y", f"npg_fused({call})", reduce_expr, post, identity,
                                      "npg_fused_reduce", preamble=preamble, options=self.NVRTC_OPTIONS)

        kernel = self._kernel(("reduce", graph, op, reduce_check), build)
        operands = [cp.broadcast_to(x, shape) for x in inputs]
        if reduce_check and errors is not None:
            errors.global_reduce = True  # (CuPy's reduction keeps no per-thread state: see _fused_function)
        return kernel(*operands, *scalars, *self._error_arguments(graph, errors, reduce_check), axis=axes)


#: functions whose results report NumPy's reduce errors (CupyBackend._reduction_errors)
_CHECKED_REDUCTIONS = frozenset({numpy.sum, numpy.prod, numpy.mean})
#: dtype characters naming the same type as another's that NumPy prefers: longlong/ulonglong where
#: long is 8 bytes (Linux), long/ulong where it is 4 and longlong 8 (Windows)
_ALIASED_CHARS = frozenset(c for c in "qQlLiI" if numpy.dtype(numpy.dtype(c).str).char != c)
_COMPLEX_PRODUCTS = frozenset({numpy.multiply, numpy.square, numpy.power, numpy.reciprocal})
_CONSTANT_POWER = {0.5: "sqrt", -1: "reciprocal", 2: "square", 1: "positive"}
# NumPy's complex multiply and square loops: with FMA (the SIMD loops of hosts that have it,
# x86-64-v3 and newer) the real part is fma(ar, br, -(ai*bi)) and the imaginary part
# fma(ar, bi, ai*br); without, both are plain products and sums. Device code follows the host
# (_COMPLEX_BODIES "multiply_fma" and "multiply").
_product_rounding: dict[numpy.dtype, bool | None] = {}


def _numpy_complex_product_fuses(dtype: numpy.dtype) -> bool | None:
    """Whether the host NumPy's complex multiply (and square) of ``dtype`` rounds with FMA:
    True or False when its results on probe values match one of the two formulas exactly,
    None when they match neither (then npgpu can't promise NumPy's digits)."""
    dtype = numpy.dtype(dtype)
    if dtype in _product_rounding:
        return _product_rounding[dtype]
    from fractions import Fraction

    real = numpy.empty(0, dtype).real.dtype.type
    rng = numpy.random.default_rng(12345)
    x = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)
    y = (rng.standard_normal(64) + 1j * rng.standard_normal(64)).astype(dtype)

    def fma(a: Any, b: Any, c: Any) -> Any:  # a*b + c rounded once, to ``real``
        exact = Fraction(float(a)) * Fraction(float(b)) + Fraction(float(c))
        return real(float(exact)) if real is numpy.float64 else real(numpy.float64(float(exact)))

    def product(a: numpy.ndarray, b: numpy.ndarray, fused: bool) -> tuple[numpy.ndarray, numpy.ndarray]:
        ar, ai, br, bi = a.real, a.imag, b.real, b.imag
        if not fused:
            return ar * br - ai * bi, ar * bi + ai * br
        re = numpy.array([fma(p, q, -(s * t)) for p, q, s, t in zip(ar, br, ai, bi)], real)
        im = numpy.array([fma(p, q, s * t) for p, q, s, t in zip(ar, bi, ai, br)], real)
        return re, im

    answer = None
    for fused in (True, False):
        checks = ((numpy.multiply(x, y), x, y), (numpy.square(x), x, x))
        if all(numpy.array_equal(got.real, re) and numpy.array_equal(got.imag, im)
               for got, a, b in checks for re, im in (product(a, b, fused),)):
            answer = fused
            break
    _product_rounding[dtype] = answer
    return answer


def _clip_bounds_without_nan(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether clip's bounds are known not to be NaN: no float bound, or float scalars that aren't."""
    bounds = [*args[1:3], *(kwargs.get(k) for k in ("a_min", "a_max", "min", "max"))]
    for bound in bounds:
        if bound is None or type(bound) in (int, bool):
            continue
        if type(bound) is float or isinstance(bound, numpy.floating):
            if math.isnan(bound):
                return False
            continue
        if getattr(bound, "dtype", numpy.dtype(object)).kind in "biu":
            continue
        return False  # an array of floats (may hold NaN) or anything else: NumPy's
    return True


def _views_as_class(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``ndarray.view(...)`` arguments ask for an array type (``a.view(MyArray)``)."""
    candidates = [*args[1:], kwargs.get("type"), kwargs.get("dtype")]
    return any(isinstance(c, type) and issubclass(c, numpy.ndarray) for c in candidates)


def _small_integer_exponent(x: Any) -> int | None:
    """The integer n of a scalar exponent for which NumPy's complex power multiplies (|n| < 100)."""
    if isinstance(x, (bool, numpy.bool_)):
        return int(x)  # (cast to the complex loop: True is 1+0j)
    if not isinstance(x, (int, float, complex, numpy.number)):
        return None
    value = complex(x)
    if value.imag != 0 or value.real != int(value.real) or not -100 < value.real < 100:
        return None
    return int(value.real)


# NumPy's complex formulas on (real, imaginary) pairs of type R, each operation rounded as NumPy
# rounds it (compiled with --fmad=false). Products: (ar*br - ai*bi, ar*bi + ai*br), or with FMA as
# the host's SIMD loops round them (_numpy_complex_product_fuses). Division: Smith's algorithm, as
# NumPy's. Reciprocal: NumPy's loop (1/inf is 0 there).
_COMPLEX_HELPERS = """
__device__ __forceinline__ void npg_cmul(R ar, R ai, R br, R bi, R& cr, R& ci) {
    cr = ar * br - ai * bi;
    ci = ar * bi + ai * br;
}
__device__ __forceinline__ void npg_cmul_fma(R ar, R ai, R br, R bi, R& cr, R& ci) {
    cr = fma(ar, br, -(ai * bi));
    ci = fma(ar, bi, ai * br);
}
__device__ void npg_cdiv(R ar, R ai, R br, R bi, R& cr, R& ci) {
    const R abs_br = fabs(br), abs_bi = fabs(bi);  // (fabs: -0.0 has no sign after it)
    if (abs_br >= abs_bi) {
        if (abs_br == 0 && abs_bi == 0) {
            cr = ar / abs_br;
            ci = ai / abs_bi;
            return;
        }
        const R rat = bi / br;
        const R scl = (R)1 / (br + bi * rat);
        cr = (ar + ai * rat) * scl;
        ci = (ai - ar * rat) * scl;
        return;
    }
    const R rat = br / bi;
    const R scl = (R)1 / (bi + br * rat);
    cr = (ar * rat + ai) * scl;
    ci = (ai * rat - ar) * scl;
}
"""
# NumPy's complex power for an integer exponent e, |e| < 100 (npy_cpow in numpy/_core/src/npymath):
# e = 0 gives 1; a zero base 0 for e > 0, nan+nanj (invalid) otherwise; e = 1, 2, 3 unrolled;
# other exponents by binary exponentiation (the accumulator times the running square), and for
# e < 0 one divided by that product.
_COMPLEX_BODIES = {
    "multiply": "npg_cmul(xr, xi, yr, yi, rr, ri);",
    "multiply_fma": "npg_cmul_fma(xr, xi, yr, yi, rr, ri);",
    "reciprocal": """if (fabs(xi) <= fabs(xr)) {
    const R r = xi / xr, d = xr + xi * r;
    rr = (R)1 / d;
    ri = -r / d;
} else {
    const R r = xr / xi, d = xr * r + xi;
    rr = r / d;
    ri = (R)-1 / d;
}""",
    "power": """if (e == 0) { rr = 1; ri = 0; }
else if (xr == 0 && xi == 0) {
    if (e > 0) { rr = 0; ri = 0; } else { rr = (R)nan(""); ri = (R)nan(""); }
}
else if (e == 1) { rr = xr; ri = xi; }
else if (e == 2) { npg_cmul(xr, xi, xr, xi, rr, ri); }
else if (e == 3) { R sr, si; npg_cmul(xr, xi, xr, xi, sr, si); npg_cmul(xr, xi, sr, si, rr, ri); }
else {
    const long long m = e < 0 ? -e : e;
    R ar = 1, ai = 0, pr = xr, pi = xi, tr, ti;
    long long mask = 1;
    while (true) {
        if (m & mask) { npg_cmul(ar, ai, pr, pi, tr, ti); ar = tr; ai = ti; }
        mask <<= 1;
        if (m < mask || mask <= 0) break;
        npg_cmul(pr, pi, pr, pi, tr, ti); pr = tr; pi = ti;
    }
    if (e < 0) { npg_cdiv((R)1, (R)0, ar, ai, rr, ri); } else { rr = ar; ri = ai; }
}""",
}


def _check_operands(graph: Any, inputs: list[Any], out: Any) -> None:
    """A GPU kernel reads each operand's memory as the dtype its graph declares: the emulation
    refuses what would be read as another type there (a bool array given for a float32 input)."""
    if len(inputs) != len(graph.inputs) or any(x.dtype != dt for x, dt in zip(inputs, graph.inputs)):
        raise TypeError(f"emulated kernel: operands {[x.dtype for x in inputs]} for inputs {list(graph.inputs)}")
    if out is not None and out.dtype != graph.out_dtypes[0]:
        raise TypeError(f"emulated kernel: output {out.dtype} for {graph.out_dtypes[0]}")


def _binary_path(cp: Any, source: str, options: tuple[str, ...]) -> str:
    import hashlib

    major, minor = cp.cuda.nvrtc.getVersion()
    arch = cp.cuda.Device().compute_capability
    key = "\0".join([source, *options, arch, f"{major}.{minor}", cp.__version__]).encode()
    root = os.environ.get("NPGPU_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "npgpu")
    return os.path.join(root, "cuda", hashlib.sha256(key).hexdigest() + ".bin")


def _cached_binary(cp: Any, source: str, options: tuple[str, ...]) -> bytes | None:
    try:
        with open(_binary_path(cp, source, options), "rb") as f:
            return f.read() or None
    except OSError:
        return None


def _store_binary(cp: Any, source: str, options: tuple[str, ...], binary: bytes) -> None:
    """Write a compiled kernel to the disk cache (atomically; a cache that can't be written is skipped)."""
    path = _binary_path(cp, source, options)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        temporary = f"{path}.{os.getpid()}.{threading.get_ident()}"
        with open(temporary, "wb") as f:
            f.write(bytes(binary))
        os.replace(temporary, path)
    except OSError:
        pass


def _evaluate(graph: Any, inputs: list[Any], scalars: list[Any], flags: tuple[numpy.ndarray, int] | None = None
              ) -> list[Any]:
    """Values of an IR graph's outputs computed with NumPy, node by node; with ``flags`` (a flag
    buffer and this launch's offset), the categories each error node checks are set where NumPy
    raised them, as a kernel sets them (npgpu/_fperr.py)."""
    from ..kernels.ir import walk

    values: dict[Any, Any] = {}
    slots = {node: k for k, node in enumerate(graph.error_nodes)} if flags is not None else {}
    with numpy.errstate(all="ignore"):  # a device kernel raises no floating-point warnings either
        _evaluate_nodes(walk(graph.outputs), values, inputs, scalars, slots, flags)
    return [values[o] for o in graph.outputs]


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


def _evaluate_nodes(nodes: list[Any], values: dict[Any, Any], inputs: list[Any], scalars: list[Any],
                    slots: dict[Any, int] | None = None, flags: tuple[numpy.ndarray, int] | None = None) -> None:
    from ..kernels.ir import Apply, Cast, Input, Scalar, Select

    for node in nodes:
        if isinstance(node, Input):
            values[node] = inputs[node.index]
        elif isinstance(node, Scalar):
            values[node] = scalars[node.index]
        elif isinstance(node, Cast):
            k = slots.get(node) if slots else None
            if k is None:
                values[node] = numpy.asarray(values[node.operand]).astype(node.dtype)
            else:
                with _raised(node.check, flags[0], flags[1] + _fperr.SLOT_BYTES * k):  # type: ignore[index]
                    values[node] = numpy.asarray(values[node.operand]).astype(node.dtype)
        elif isinstance(node, Apply):
            k = slots.get(node) if slots else None
            operands = [values[o] for o in node.operands]
            if k is None:
                result = node.ufunc(*operands, signature=node.loop)
            else:
                with _raised(node.check, flags[0], flags[1] + _fperr.SLOT_BYTES * k):  # type: ignore[index]
                    result = node.ufunc(*operands, signature=node.loop)
            values[node] = result[node.out_index] if node.ufunc.nout > 1 else result
        elif isinstance(node, Select):
            values[node] = numpy.where(values[node.cond], values[node.a], values[node.b])


def _weak(x: Any) -> Any:
    """A scalar operand as NumPy's dtype resolution takes it (Python scalars are weak: NEP 50)."""
    if isinstance(x, numpy.generic):
        return x.dtype
    if type(x) is bool:
        return numpy.dtype(bool)
    return type(x) if type(x) in (int, float, complex) else numpy.asarray(x).dtype


def _is_bool_index(k: Any) -> bool:
    dtype = getattr(k, "dtype", None)
    return dtype is not None and dtype.kind == "b"



def _at_boundary(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method`` of CupyBackend with CuPy's errors raised as npgpu's (memory, compiler, device lost)."""

    @functools.wraps(method)
    def translated(self: CupyBackend, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except self._faults as exc:  # (only CuPy's memory, compiler and CUDA errors)
            self._raise_fault(exc)

    return translated


for _name in ("from_host", "to_host", "sync", "run_fused", "reduce_fused", "call_function", "call_ufunc",
              "random_call"):
    setattr(CupyBackend, _name, _at_boundary(getattr(CupyBackend, _name)))

#: CuPy backends made so far: at exit, each device finishes its queued work before the interpreter
#: frees the memory (host and pinned) that it may still read or write.
_LIVE_CUPY: weakref.WeakSet[CupyBackend] = weakref.WeakSet()


def _finish_devices() -> None:
    import sys

    for backend in list(_LIVE_CUPY):
        try:
            backend.xp.cuda.runtime.deviceSynchronize()
        except backend._faults as exc:  # (the process is ending: say so, don't raise)
            sys.stderr.write(f"npgpu: the CUDA device failed while finishing its work at exit: {exc}\n")
