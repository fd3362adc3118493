"""Backends whose native arrays come from an array module with NumPy's API: CuPy, and NumPy
standing in for it (npgpu/backends/emulated.py). The routing table: NumPy function -> the module's.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_index

from ... import _bounds, _fperr, _ops
from ...kernels import ir
from ...kernels import order as _order
from ...kernels import ufuncs as _table
from ..base import Backend, clip_ufunc, dtype_argument, elements_overlap, native_numeric
from .compositions import _PUT_KEY_LIMIT, PRODUCT_GUFUNCS, Compositions, numeric_sequence

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

#: NumPy functions that return views of their first operand (nothing computed), whose refusals
#: of bad arguments CuPy raises as other exceptions: its swapaxes and rollaxis raise ValueError
#: "Axis out of range" where NumPy's AxisError is an IndexError too (an H100's fuzz, 2026-12-07).
#: Where CuPy refuses a call of one, NumPy's error for the same shapes is raised.
_VIEWS_NUMPY_REFUSES = frozenset({
    numpy.swapaxes, numpy.rollaxis, numpy.moveaxis, numpy.expand_dims, numpy.squeeze, numpy.transpose, numpy.flip,
    numpy.fliplr, numpy.flipud, numpy.diagonal, numpy.broadcast_to,
})  # (not reshape nor ravel: of a zero-stride stand-in NumPy's may copy, as large as the array)

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
# ufunc methods routed per ufunc: reduce/accumulate go through CuPy's reduction functions (reduce:
# the function of _ops.UFUNC_REDUCTIONS, add -> sum; accumulate: these).
_UFUNC_ACCUMULATE = {"add": "cumsum", "multiply": "cumprod"}
_TYPED_REDUCTIONS = frozenset({"sum", "prod", "cumsum", "cumprod"})  # (the ones that take dtype=)
_EINSUM_KWARGS = frozenset({"optimize"})  # (CuPy's einsum takes no out= nor casting=)
_UFUNC_CALL_KWARGS = frozenset({"out", "dtype", "casting"})
_REDUCE_KWARGS = frozenset({"axis", "dtype", "out", "keepdims"})


def _resolve(module: Any, dotted: str) -> Any:
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _parameters(func: Callable[..., Any]) -> list[inspect.Parameter] | None:
    """``func``'s parameters, or None when its signature can't be read (Cython builtins)."""
    try:
        return list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        return None


def _keyword_names(func: Callable[..., Any]) -> frozenset[str] | None:
    """The keywords ``func`` accepts, or None when its signature can't be read or takes any."""
    params = _parameters(func)
    if params is None or any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def _positional_limit(func: Callable[..., Any]) -> int | None:
    """How many arguments ``func`` takes by position, or None when its signature can't be read or
    takes any number."""
    params = _parameters(func)
    if params is None or any(p.kind is p.VAR_POSITIONAL for p in params):
        return None
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


#: NumPy functions whose definitions Compositions writes over the module's primitives (CuPy's
#: answer otherwise): NumPy function name -> (method, the keywords it takes)
_COMPOSED: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("take", "take", ("a", "indices", "axis", "out", "mode")), ("put", "put", ("a", "ind", "v", "mode")),
    ("take_along_axis", "take_along_axis", ("arr", "indices", "axis")),
    ("array", "array", ("dtype", "copy", "order", "subok", "ndmin")),
    ("asarray", "asarray", ("a", "dtype", "order", "copy")), ("asanyarray", "asarray", ("a", "dtype", "order", "copy")),
    ("tri", "tri", ("N", "M", "k", "dtype")), ("convolve", "convolve", ("a", "v", "mode")),
    ("correlate", "correlate", ("a", "v", "mode")),
    ("nanmean", "nanmean", ("a", "axis", "dtype", "out", "keepdims")),
    ("average", "average", ("a", "axis", "weights", "returned", "keepdims")),
    ("broadcast_arrays", "broadcast_arrays", ("subok",)),
    ("interp", "interp", ("x", "xp", "fp", "left", "right", "period")),
    ("nanvar", "nanvar", ("a", "axis", "dtype", "out", "ddof", "keepdims")),
    ("nanstd", "nanstd", ("a", "axis", "dtype", "out", "ddof", "keepdims")),
    ("nanargmax", "nanargmax", ("a", "axis", "out", "keepdims")),
    ("nanargmin", "nanargmin", ("a", "axis", "out", "keepdims")), ("angle", "angle", ("z", "deg")),
    ("linspace", "linspace", ("start", "stop", "num", "endpoint", "retstep", "dtype", "axis")),
    ("logspace", "logspace", ("start", "stop", "num", "endpoint", "base", "dtype", "axis")),
    ("arange", "arange", ("start", "stop", "step", "dtype")),
)


#: NumPy functions that convert their array operands into the dtype they are asked for (or into
#: their destination's) before computing, and which operands those are. CuPy converts them in its
#: own kernels, whose float -> integer conversions saturate (300.0 into int8 is 127; NumPy's 44);
#: ArrayModuleBackend._converted converts them first as NumPy does. "first": the first argument;
#: "nan0"/"nan1": the first, its NaNs replaced by 0 or 1 first (NumPy's nansum and nanprod);
#: "sequence": each array of the first argument (under ``casting``); "copyto": the source, into the
#: destination's dtype; "fill"/"fill_like": full's fill value.
_CONVERTS_OPERANDS: dict[Callable[..., Any], str] = {
    numpy.sum: "first", numpy.prod: "first", numpy.cumsum: "first", numpy.cumprod: "first", numpy.mean: "first",
    numpy.trace: "first", numpy.ascontiguousarray: "first",
    numpy.nansum: "nan0", numpy.nancumsum: "nan0", numpy.nanprod: "nan1", numpy.nancumprod: "nan1",
    numpy.concatenate: "sequence", numpy.stack: "sequence", numpy.hstack: "sequence", numpy.vstack: "sequence",
    numpy.dstack: "sequence", numpy.copyto: "copyto", numpy.full: "fill",
    numpy.full_like: "fill_like",
}
#: Those of them whose conversion NumPy's error message names "reduce" (the others': "cast").
_CONVERTS_IN_REDUCE = frozenset({numpy.sum, numpy.prod, numpy.mean, numpy.trace, numpy.nansum, numpy.nanprod})
#: Accumulations whose errors are found after CuPy's scan (ArrayModuleBackend._accumulate_errors)
_ACCUMULATIONS = frozenset({numpy.cumsum, numpy.cumprod, numpy.nancumsum, numpy.nancumprod})
#: The variances: computed in NumPy's steps where errors are asked for (Compositions._moments)
_MOMENTS = frozenset({numpy.var, numpy.std, numpy.nanvar, numpy.nanstd})


class ArrayModuleBackend(Compositions, Backend):
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
        if keywords.get(numpy.clip) is not None:  # (NumPy 2's names of its bounds: _own_clip takes them)
            keywords[numpy.clip] = keywords[numpy.clip] | {"min", "max"}
        # (the array API's astype(x, dtype, copy=): the method's conversion; a copy=False of the
        # same dtype is the array itself, which a fallback's host round trip would copy)
        functions[numpy.astype], keywords[numpy.astype] = self._method_astype, frozenset({"copy"})
        # NumPy's own compositions of ufuncs, run through this backend's ufuncs (NumPy's rounding
        # steps and floating-point reports, which CuPy's versions of these functions don't give)
        for np_func, own, names in ((numpy.diff, self.numpy_diff, ("n", "axis")),
                                    (numpy.round, self._round, ("decimals", "out")),
                                    (numpy.around, self._round, ("decimals", "out")),
                                    (numpy.outer, self._outer, ("out",))):
            if np_func in functions:
                functions[np_func], keywords[np_func] = own, frozenset(names)
        for name, method, names in _COMPOSED:  # (Compositions: NumPy's answers where CuPy's differ)
            np_func = getattr(numpy, name)
            if np_func in functions:
                functions[np_func], keywords[np_func] = getattr(self, method), frozenset(names)
        if numpy.pad in functions:
            functions[numpy.pad] = self.pad  # (its mode's keywords: pad's **kwargs, checked as CuPy's)
        self.functions = functions
        self._keywords = keywords
        # (a call giving more arguments by position than the function here takes, NumPy's order=
        # of sort say, which CuPy's lacks: NumPy's, counted, not CuPy's TypeError)
        self._positional_limits = {f: _positional_limit(g) for f, g in functions.items()}
        self.creation = frozenset(getattr(numpy, n) for n in CREATION_FUNCTIONS if getattr(numpy, n) in functions)
        self._eager_graphs: dict[Any, Any] = {}  # (_own_ufunc's one-node graphs)
        #: (ufunc, loop, operand kinds, their dtypes or weak scalar types) -> (operand dtypes, error categories) of
        #: an eager call the one-node kernel runs, or False (dict reads and setdefault are atomic)
        self._eager_plans: dict[tuple[Any, ...], Any] = {}

    # -- memory -------------------------------------------------------------
    def is_native(self, obj: Any) -> bool:
        return issubclass(type(obj), self.xp.ndarray)  # (by type: a device array's __class__ says ndarray)

    def may_share_memory(self, a: Any, b: Any) -> bool:
        return bool(self.xp.may_share_memory(a, b))

    def shares_memory(self, a: Any, b: Any) -> bool:
        if not self.xp.may_share_memory(a, b):
            return False
        return elements_overlap(self._pointer(a), a.shape, a.strides, a.dtype.itemsize,
                                self._pointer(b), b.shape, b.strides, b.dtype.itemsize)

    def same_view(self, a: Any, b: Any) -> bool:
        return (self._pointer(a) == self._pointer(b) and a.shape == b.shape and a.strides == b.strides
                and a.dtype == b.dtype)

    @staticmethod
    def _pointer(a: Any) -> int:
        return a.data.ptr

    def address(self, native: Any) -> int:
        return self._pointer(native)

    def view_offset(self, native: Any, root: Any) -> int | None:
        if native.size == 0 or not self.xp.may_share_memory(native, root):
            return None
        return self._pointer(native) - self._pointer(root)

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
        if method == "__call__" and ufunc in PRODUCT_GUFUNCS:  # (Compositions.product_gufunc)
            return set(kwargs) <= {"out"} and all(isinstance(d, numpy.dtype) and d.kind in "biufc" for d in dtypes)
        name = ufunc.__name__
        xp_ufunc = getattr(self.xp, name, None)
        if xp_ufunc is None:
            return False
        if method == "__call__":
            if not _UFUNC_CALL_KWARGS.issuperset(kwargs):
                return False
            return self._has_loop(xp_ufunc, ufunc, dtypes)
        if method == "reduce":
            return ufunc in _ops.UFUNC_REDUCTIONS and _REDUCE_KWARGS.issuperset(kwargs)
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

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        xp = self.xp
        name = ufunc.__name__
        if method == "__call__":
            if ufunc is numpy.power and len(inputs) == 2:
                self._check_int_power(*inputs)
            if ufunc in PRODUCT_GUFUNCS:
                return self.product_gufunc(ufunc, inputs, loop, kwargs.get("out"))
            if ufunc in (numpy.frexp, numpy.modf) and not kwargs and self.is_native(inputs[0]) and \
                    inputs[0].dtype == numpy.float32:  # (CuPy's float32 kernels flush subnormals)
                return (self.frexp_float32 if ufunc is numpy.frexp else self.modf_float32)(inputs[0])
            if loop is not None and kwargs.get("casting") == "unsafe":  # (NumPy's loop converts its inputs)
                inputs = tuple(self._converted(x, dt) for x, dt in zip(inputs, loop[:ufunc.nin]))
            out = kwargs.get("out")
            if out is not None and kwargs.get("casting") == "unsafe":
                targets = out if isinstance(out, tuple) else (out,)
                if any(self.is_native(t) and t.dtype.kind in "iu" for t in targets):
                    # (NumPy's loop computes floats, then converts them into integer out= as it casts)
                    rest = {k: v for k, v in kwargs.items() if k not in ("out", "casting")}
                    results = getattr(xp, name)(*inputs, **rest)
                    results = results if isinstance(results, tuple) else (results,)
                    written = []
                    for t, r in zip(targets, results):
                        if t is not None and self._converts_floats(r, t.dtype):
                            self.cast_into(t, r, label=name)  # (NumPy's message names the ufunc)
                        elif t is not None:
                            t[...] = r
                        written.append(r if t is None else t)
                    return written[0] if ufunc.nout == 1 else tuple(written)
            return getattr(xp, name)(*inputs, **kwargs)
        if method in ("reduce", "accumulate"):
            kwargs = dict(kwargs)
            kwargs.setdefault("axis", 0)
            dtype = kwargs.get("dtype")
            function = _ops.UFUNC_REDUCTIONS[ufunc].__name__ if method == "reduce" else _UFUNC_ACCUMULATE[name]
            typed = function in _TYPED_REDUCTIONS
            if dtype is not None and (not typed or self._converts_floats(inputs[0], dtype)):
                # (NumPy's reduce converts first; its message names the reduce. CuPy's max, min, all
                # and any take no dtype: the conversion is the loop's)
                inputs = (self.cast_into(None, inputs[0], dtype, label="reduce"), *inputs[1:])
                if not typed:
                    del kwargs["dtype"]
            out = kwargs.pop("out", None)  # (a tuple, NEP 13's form; CuPy's reductions take one array)
            target = out[0] if isinstance(out, tuple) else out
            if method == "accumulate" and self.is_native(inputs[0]) and inputs[0].dtype.kind == "f":
                with numpy.errstate(all="ignore"):  # (the emulated backend's NumPy stand-in reports by itself)
                    result = getattr(xp, function)(inputs[0], **kwargs)
                self._accumulate_errors(getattr(numpy, function), (inputs[0], kwargs["axis"]), {}, result)
            else:
                result = getattr(xp, function)(inputs[0], **kwargs)
            if target is None:
                return result
            if target.shape != result.shape:  # NumPy never broadcasts a reduction's result into out=
                raise ValueError(f"output parameter for reduction operation {name} has the wrong number of "
                                 f"dimensions: shape {target.shape}, result shape {result.shape}")
            if result.dtype != target.dtype:  # (NumPy's loop type, cast into out= as NumPy's loop casts)
                self.cast_into(target, result if self.is_native(result) else self.xp.asarray(result), label=name)
            else:
                target[...] = result  # (through a temporary: out= may be the input, as in accumulate(a, out=a))
            return target
        if method == "outer":
            a, b = inputs
            return getattr(xp, name)(a.reshape(a.shape + (1,) * b.ndim), b)
        raise AssertionError(f"unrouted ufunc method {method}")  # supports_ufunc said no

    def _eager_graph(self, key: Any, build: Callable[[], Any]) -> Any:
        """The one-node graph of an eager call or cast, built once (a few hundred at most: ufuncs x
        loops x operand kinds x checks; dict reads and setdefault are atomic, so threads share it)."""
        graph = self._eager_graphs.get(key)
        return graph if graph is not None else self._eager_graphs.setdefault(key, build())

    def _own_ufunc(self, ufunc: numpy.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   report: bool = True, loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        """An eager call of a real-valued ufunc run by npgpu's own one-node kernel (the fused
        kernels' code: NumPy's formulas for special values, its error conditions checked inline,
        float32 subnormals kept), or None where CuPy's ufunc runs it. ``report=False``: its
        floating-point errors are not checked (the caller checks them).

        CuPy's own ufuncs differ from NumPy's at special values (floor_divide(inf, 1.0) is inf
        there, NumPy's nan; remainder(0.0, inf) nan, NumPy's 0.0) and flush float32 subnormals."""
        if ufunc.nout != 1 or ufunc.signature is not None or not set(kwargs) <= {"out", "casting"}:
            return None  # (a gufunc, matmul's: the code generator has none)
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
        if loop is None or len(loop) != ufunc.nin + 1:  # (the core's loop: NumPy's, already checked)
            try:
                loop = tuple(ufunc.resolve_dtypes((*types, None)))
            except (TypeError, ValueError):
                return None
        # (what depends only on dtypes, kept per signature: whether the kernel runs these, and the
        # error categories its loop can raise)
        operand_kinds = tuple(kinds)
        signature = (ufunc, loop, operand_kinds, *types)
        plan = self._eager_plans.get(signature)
        if plan is None:
            plan = self._eager_plans.setdefault(signature, _eager_plan(ufunc, loop, kinds, types))
        if plan is False:
            return None
        operand_dtypes, categories = plan
        shape = numpy.broadcast_shapes(*(x.shape for x, k in zip(inputs, kinds) if k == "array"))
        out = kwargs.get("out")
        target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
        stored = loop[-1]
        if target is not None:
            if not (self.is_native(target) and target.shape == shape):
                return None
            stored = target.dtype  # (an out= of another dtype: the kernel stores into it as NumPy's loop casts)
            if stored != loop[-1] and not (_table.is_supported_dtype(stored) and stored.kind in "biuf" and
                                           numpy.can_cast(loop[-1], stored, kwargs.get("casting", "same_kind"))):
                return None
        scalars = []
        for x, kind, dt in zip(inputs, kinds, loop):
            if kind == "scalar":
                if type(x) is int and dt.kind in "iu" and not _int_bounds(dt)[0] <= x <= _int_bounds(dt)[1]:
                    return None  # (an out-of-range Python int: NumPy's OverflowError or widened comparison)
                scalars.append(dt.type(x))
        if ufunc is numpy.power and loop[0].kind in "iu":
            self._check_int_power(*inputs)
        state = _fperr.current()
        if stored != loop[-1]:
            categories |= _table.cast_error_categories(loop[-1], stored)
        check = state.check & categories if report else 0
        key = (ufunc, loop, operand_kinds, operand_dtypes, stored, check)
        graph = self._eager_graph(key, lambda: ir.ufunc_graph(ufunc, loop, operand_kinds, operand_dtypes, (stored,),
                                                              check))
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
        if func in (numpy.array, numpy.asarray, numpy.asanyarray) and args and isinstance(args[0], (list, tuple)) \
                and not numeric_sequence(args[0]):
            return False  # (a sequence of other objects: NumPy's)
        if func in (numpy.round, numpy.around) and dtypes and dtypes[0].kind == "b":
            return False  # (NumPy rounds bools through float16: a float16 result, or its casting error)
        if func is numpy.einsum and not _EINSUM_KWARGS.issuperset(kwargs):
            return False  # (dtype=: NumPy's conversions, which a view result skips; casting=, out=: not CuPy's)
        if func is numpy.tri and not all(hasattr(type(n), "__index__") for n in (*args[:2], kwargs.get("N"),
                                                                                kwargs.get("M")) if n is not None):
            return False  # a non-integer N or M (NumPy 2.5 deprecates them): NumPy's
        limit = self._positional_limits.get(func)
        if limit is not None and len(args) > limit:
            return False
        accepted = self._keywords[func]
        if accepted is not None:
            return accepted.issuperset(kwargs)
        return _UNSUPPORTED_KWARGS.isdisjoint(kwargs)

    def call_function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        how = _CONVERTS_OPERANDS.get(func)
        if how is not None:
            args, kwargs = self._operands_converted(how, func, args, kwargs)
            if how in ("fill", "fill_like", "copyto"):
                return self._with_negative_zeros(func, how, args, kwargs)
            if how == "sequence" and "out" not in kwargs:
                return self._joined_in_order(func, args, kwargs)
        elif func is numpy.roll and args and self.is_native(args[0]) and args[0].ndim > 1 \
                and (kwargs.get("axis", args[2] if len(args) > 2 else None) is not None):
            # (NumPy writes roll's pieces into empty_like(a), in a's order of axes; CuPy's take is C-ordered)
            return self._laid_out_like(super().call_function(func, args, kwargs), args[0])
        elif func is numpy.clip and (clipped := self._own_clip(args, kwargs)) is not None:
            return clipped
        elif func is numpy.isclose and (close := self._isclose_of_number(args, kwargs)) is not None:
            return close
        elif func in _MOMENTS and (moment := self._moments(func, args, kwargs)) is not None:
            return moment
        elif func is numpy.clip and kwargs.get("casting") == "unsafe":
            out = kwargs.get("out")
            if self.is_native(out) and self._converts_floats(args[0], out.dtype):
                rest = {k: v for k, v in kwargs.items() if k not in ("out", "casting")}
                out[...] = self._converted(super().call_function(func, args, rest), out.dtype)
                return out
        if func in _ACCUMULATIONS and args and self.is_native(args[0]):
            return self._accumulated(func, args, kwargs)
        if func in (numpy.sort, numpy.argsort) and args and self.is_native(args[0]) and args[0].ndim > 1:
            # (NumPy's sort copies its operand in its own layout; its argsort's indices are C-ordered:
            # CuPy's are laid out as its moved axis left them)
            result = super().call_function(func, args, kwargs)
            if not self.is_native(result) or kwargs.get("axis", args[1] if len(args) > 1 else -1) is None:
                return result
            if func is numpy.argsort:
                return result if result.flags.c_contiguous else self.xp.ascontiguousarray(result)
            return self._laid_out_like(result, args[0])
        if func is numpy.count_nonzero and args and self.is_native(args[0]) and args[0].dtype.kind == "f":
            # (CuPy's kernels flush float32 subnormals: 1e-40 counted as zero; NumPy's test is != 0)
            nonzero = self.apply_ufunc(numpy.not_equal, args[0], 0)
            return super().call_function(func, (nonzero, *args[1:]), kwargs)
        if func in _VIEWS_NUMPY_REFUSES:
            try:
                return super().call_function(func, args, kwargs)
            except (ValueError, IndexError, TypeError):
                self._raise_numpys_refusal(func, args, kwargs)
                raise
        return super().call_function(func, args, kwargs)

    def _raise_numpys_refusal(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """NumPy's own error for a call of view function ``func`` that CuPy refused, where NumPy
        refuses it too: asked on stand-ins of the natives' shapes and dtypes that hold one element
        (zero strides: a view function allocates nothing). Returns where NumPy takes the call."""
        def stand_in(x: Any) -> Any:
            if not self.is_native(x):
                return x
            return numpy.lib.stride_tricks.as_strided(numpy.zeros(1, x.dtype), x.shape, (0,) * x.ndim)

        try:
            func(*map(stand_in, args), **{k: stand_in(v) for k, v in kwargs.items()})
        except (ValueError, IndexError, TypeError) as numpys:
            raise numpys from None

    def _accumulated(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """cumsum, cumprod and their NaN-skipping forms: CuPy's scan, its result laid out as NumPy's
        accumulate lays it (as its operand is: CuPy's is C-ordered), and NumPy's errors of it."""
        a = args[0]
        checked = a.dtype.kind == "f" and bool(_fperr.current().check)
        if checked:
            with numpy.errstate(all="ignore"):  # (the emulated backend's NumPy stand-in reports by itself)
                result = super().call_function(func, args, kwargs)
            self._accumulate_errors(func, args, kwargs, result)
        else:
            result = super().call_function(func, args, kwargs)
        given = dict(zip(("a", "axis", "dtype", "out"), args)) | kwargs
        if given.get("axis") is None or given.get("out") is not None or a.ndim < 2 or not self.is_native(result):
            return result
        return self._laid_out_like(result, a)

    def _accumulate_errors(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                           result: Any) -> None:
        """NumPy's errors of cumsum, cumprod and their NaN-skipping forms (CuPy's report none):
        Backend.report_accumulate over what they accumulated."""
        if not self.is_native(result):
            return
        given = dict(zip(("a", "axis", "dtype", "out"), args)) | kwargs
        a, axis = args[0], given.get("axis")
        values = a.ravel() if axis is None else a
        if func in (numpy.nancumsum, numpy.nancumprod):
            values = self.xp.where(self.xp.isnan(values), values.dtype.type(func is numpy.nancumprod), values)
        if values.dtype != result.dtype:
            values = self._method_astype(values, result.dtype)
        ufunc = numpy.add if func in (numpy.cumsum, numpy.nancumsum) else numpy.multiply
        self.report_accumulate(ufunc, values, result, 0 if axis is None else normalize_axis_index(axis, a.ndim))

    def from_host(self, array: numpy.ndarray) -> Any:
        """A native copy of host ``array``. A 0-d array goes up as one element's bytes: CuPy's
        asarray of a 0-d array fills a new one with it, and its fill writes a zero as a memset, so
        -0.0 arrived as +0.0 (every write of a negative zero uploads such a cell; found by the fuzz
        on an H100, the cause read in CuPy's _array_default)."""
        if array.ndim == 0:
            return self._upload(array.reshape(1)).reshape(())
        return self._upload(array)

    def _upload(self, array: numpy.ndarray) -> Any:
        """A native copy of host ``array`` (the array module's own upload)."""
        raise NotImplementedError

    def _joined_in_order(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """concatenate, stack, vstack or hstack laid out in the memory order NumPy gives it
        (kernels/order.join_axes: ``concatenate([a.T, a.T])`` is F-ordered); CuPy's are C-ordered,
        so a result NumPy lays out otherwise is copied into that order (dstack and column_stack,
        rarer, keep CuPy's)."""
        result = super().call_function(func, args, kwargs)
        arrays = args[0] if args else None
        if result.ndim < 2 or not isinstance(arrays, (list, tuple)) or not all(self.is_native(x) for x in arrays):
            return result
        if func is numpy.concatenate:
            if kwargs.get("axis", args[1] if len(args) > 1 else 0) is None:
                return result
            operands = [(x.shape, x.strides) for x in arrays]
        elif func is numpy.stack:
            axis = kwargs.get("axis", args[1] if len(args) > 1 else 0)
            axis = axis + result.ndim if axis < 0 else axis
            operands = [((*x.shape[:axis], 1, *x.shape[axis:]), (*x.strides[:axis], 0, *x.strides[axis:]))
                        for x in arrays]
        elif func in (numpy.vstack, numpy.hstack):
            operands = [(x.shape, x.strides) for x in arrays if x.ndim == result.ndim]
            if len(operands) != len(arrays):
                return result  # (1-d rows of vstack: each is C-ordered, and so is the result)
        else:
            return result
        axes = _order.join_axes(operands) if operands else None
        if axes is None:
            return result
        laid = self.xp.empty(tuple(result.shape[d] for d in axes), result.dtype).transpose(numpy.argsort(axes).tolist())
        return self._copied_into(result, laid)

    def _laid_out_like(self, result: Any, like: Any) -> Any:
        """``result`` laid out as NumPy's ``empty_like(like)`` (``like``'s order of axes in memory)."""
        return self._copied_into(result, self.xp.empty_like(like, dtype=result.dtype))

    @staticmethod
    def _copied_into(result: Any, laid: Any) -> Any:
        """``result``, or its values in ``laid`` where that new array's strides differ."""
        if laid.strides == result.strides:
            return result  # (NumPy's own layout already: the emulated backend's)
        laid[...] = result
        return laid

    def _own_clip(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """NumPy's clip of a real array by the code generator's one-node kernel of NumPy's clip loop
        (NaN kept, the upper bound where the bounds cross, float32 subnormals compared as such);
        of another array by CuPy's clip, its bounds as NumPy resolves them (``min=``/``max=``,
        NumPy 2's names, given to CuPy as its a_min and a_max). None where the call has other
        keywords (the general road). CuPy's kernel returns the upper bound for NaN where the
        bounds cross, and flushes subnormals."""
        names = ("a", "a_min", "a_max", "out")
        if not args or len(args) > len(names) or not set(kwargs) <= {"a_min", "a_max", "out", "min", "max"} \
                or any(name in kwargs for name in names[:len(args)]):
            return None
        given = dict(zip(names, args)) | kwargs
        if "a_min" in given or "a_max" in given:
            if not ("a_min" in given and "a_max" in given) or "min" in given or "max" in given:
                # (one of a_min and a_max alone, or with min/max: NumPy's TypeError or ValueError,
                # which its clip raises from the names given before it reads a value)
                numpy.clip(numpy.zeros(()), **{name: 0 for name in given if name not in ("a", "out")})
                return None
            low, high = given["a_min"], given["a_max"]
        else:  # (none, or NumPy 2's min= and max=: a missing one is no bound)
            low, high = given.get("min"), given.get("max")
        a, out = given["a"], given.get("out")
        if not self.is_native(a):
            return None
        if a.dtype.kind not in "biuf":  # (complex: CuPy's clip, by the bounds resolved)
            return super().call_function(numpy.clip, (a, low, high), {} if out is None else {"out": out})
        plan = clip_ufunc(a.dtype, low, high)
        if plan is None:  # (no bound, or Python ints beyond the dtype dropped: NumPy's positive(a))
            return self.apply_ufunc(numpy.positive, a, out=out)
        own = self._own_ufunc(plan[0], (a, *plan[1]), {} if out is None else {"out": out})
        if own is not None:
            return own
        if plan[0] is numpy._core.umath.clip:  # (bounds the kernel does not take: arrays of the host)
            return super().call_function(numpy.clip, (a, low, high), {} if out is None else {"out": out})
        return self.apply_ufunc(plan[0], a, *plan[1], out=out)  # (CuPy's maximum or minimum)

    def _isclose_of_number(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """NumPy's isclose of a real float array and a Python number: its bound ``atol + rtol *
        abs(b)`` computed in Python and compared with the array's differences as a weak scalar
        (NEP 50: in float32 for float32 data), through the code generator's one-node kernels;
        invalid values ignored, as NumPy's. None where CuPy's isclose runs it (its kernel computes
        the bound in float64: 1 - 2**-52 is close to a float32 1.0 there, not in NumPy)."""
        names = ("a", "b", "rtol", "atol", "equal_nan")
        given = dict(zip(names, args)) | kwargs
        if len(args) > len(names) or not set(given) <= set(names) or not {"a", "b"} <= set(given):
            return None
        a, b = given["a"], given["b"]
        rtol, atol, equal_nan = given.get("rtol", 1e-05), given.get("atol", 1e-08), given.get("equal_nan", False)
        if not (self.is_native(a) and a.dtype.kind == "f" and type(b) in (int, float)
                and type(rtol) in (int, float) and type(atol) in (int, float) and type(equal_nan) is bool):
            return None
        y = float(b)
        call = self.apply_ufunc
        with numpy.errstate(invalid="ignore"):
            result = call(numpy.equal, a, y)
            if math.isfinite(y):
                near = call(numpy.less_equal, call(numpy.absolute, call(numpy.subtract, a, y)), atol + rtol * abs(y))
                result = call(numpy.logical_or, near, result)
            if equal_nan and math.isnan(y):
                result = call(numpy.logical_or, result, call(numpy.isnan, a))
        return result

    def _converts_floats(self, x: Any, dtype: Any) -> bool:
        """Whether converting native ``x`` into ``dtype`` is a float -> integer conversion, which
        CuPy's kernels saturate and NumPy's wrap (as the host's C conversion does)."""
        if not self.is_native(x) or x.dtype.kind != "f":
            return False
        dtype = numpy.dtype(dtype)
        return dtype.kind in "iu" and _table.is_supported_dtype(x.dtype) and _table.is_supported_dtype(dtype)

    def _converted(self, x: Any, dtype: Any) -> Any:
        """Native ``x`` in ``dtype`` where CuPy would convert it otherwise than NumPy (npgpu's cast
        kernel); anything else unchanged (converted where it is used)."""
        return self._method_astype(x, dtype) if self._converts_floats(x, dtype) else x

    def _operands_converted(self, how: str, func: Callable[..., Any], args: tuple[Any, ...],
                            kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """``args`` and ``kwargs`` of ``func`` with the operands it converts (_CONVERTS_OPERANDS'
        ``how``) converted as NumPy converts them; unchanged where nothing converts floats to integers."""
        xp = self.xp
        if how in ("first", "nan0", "nan1"):
            dtype = dtype_argument(func, args, kwargs)
            if not dtype or not args or not self._converts_floats(args[0], dtype):
                return args, kwargs
            a = args[0]
            if how != "first":
                a = xp.where(xp.isnan(a), xp.asarray(0 if how == "nan0" else 1, a.dtype), a)
            label = "reduce" if func in _CONVERTS_IN_REDUCE else "cast"
            return (self.cast_into(None, a, dtype, label=label), *args[1:]), kwargs
        if how == "sequence":
            dtype = kwargs.get("dtype")
            if not args or not isinstance(args[0], (list, tuple)):
                return args, kwargs
            if dtype is None:  # (floats widened or narrowed to the joined dtype: CuPy's kernels flush subnormals)
                if not args[0] or not all(self.is_native(x) for x in args[0]):
                    return args, kwargs
                dtype = numpy.result_type(*(x.dtype for x in args[0]))
                if not any(x.dtype.kind == "f" and x.dtype != dtype for x in args[0]):
                    return args, kwargs
                return ([self._method_astype(x, dtype) if x.dtype.kind == "f" and x.dtype != dtype else x
                         for x in args[0]], *args[1:]), kwargs
            dtype = numpy.dtype(dtype)
            casting = kwargs.get("casting", "same_kind")
            converted = [self._method_astype(x, dtype) if self._converts_floats(x, dtype) and
                         numpy.can_cast(x.dtype, dtype, casting) else x for x in args[0]]
            return (converted, *args[1:]), kwargs
        if how == "copyto":
            dst = args[0] if args else kwargs.get("dst")
            position = 1 if len(args) > 1 else None
            src = args[1] if position else kwargs.get("src")
            casting = args[2] if len(args) > 2 else kwargs.get("casting", "same_kind")
            if not self.is_native(dst) or not numpy.can_cast(getattr(src, "dtype", numpy.float64), dst.dtype, casting):
                return args, kwargs
            where = args[3] if len(args) > 3 else kwargs.get("where", True)
            if self.is_native(where) and self.is_native(src) and self._converts_floats(src, dst.dtype):
                # (NumPy converts only the elements it writes: a NaN where= leaves out raises nothing)
                src = xp.where(where, src, xp.zeros((), src.dtype))
            src = self._value_converted(src, dst.dtype)
        else:  # fill, fill_like: full(shape, fill_value, dtype), full_like(a, fill_value, dtype)
            dtype = dtype_argument(func, args, kwargs)
            if how == "fill_like" and dtype is None and args:
                dtype = getattr(args[0], "dtype", None)
            position = 1 if len(args) > 1 else None
            src = args[1] if position else kwargs.get("fill_value")
            if dtype is None and src is not None and not self.is_native(src):
                dtype = numpy.asarray(src).dtype  # (full's dtype: the value's)
            if not dtype or src is None:
                return args, kwargs
            src = self._value_converted(src, dtype)
        if position:
            return (*args[:position], src, *args[position + 1:]), kwargs
        return args, {**kwargs, "src" if how == "copyto" else "fill_value": src}

    def _value_converted(self, value: Any, dtype: Any) -> Any:
        """A value written into memory of ``dtype``: a native as NumPy converts it (npgpu's cast
        kernel), a host scalar as NumPy's full converts it (an array cast, with its errors and
        warnings)."""
        dtype = numpy.dtype(dtype)
        if self.is_native(value):
            return self._converted(value, dtype)
        if numpy.ndim(value) == 0 and dtype.kind in "biufc":
            # NumPy's conversion of a value full() or copyto() writes (an array cast: 300.75 into int8
            # is 44), from NumPy's own full of one element
            return numpy.full((), value, dtype)[()]
        return value

    def _with_negative_zeros(self, func: Callable[..., Any], how: str, args: tuple[Any, ...],
                             kwargs: dict[str, Any]) -> Any:
        """full, full_like or copyto, then a negative zero written by npgpu (CuPy's fill writes
        +0.0): the whole result, or copyto's destination where no ``where=`` selects."""
        result = super().call_function(func, args, kwargs)
        if how == "copyto":
            dst = args[0] if args else kwargs.get("dst")
            value = args[1] if len(args) > 1 else kwargs.get("src")
            if len(args) > 3 or kwargs.get("where", True) is not True or not self.is_native(dst):
                return result
            target = dst
        else:
            value = args[1] if len(args) > 1 else kwargs.get("fill_value")
            target = result
        zero = self._negative_zero(value, target.dtype) if self.is_native(target) else None
        if zero is not None:
            self._write_value(target, zero)
        return result

    def _negative_zero(self, value: Any, dtype: numpy.dtype) -> numpy.ndarray | None:
        """``value`` (a host scalar) in ``dtype`` as a 0-d host array where it is a float zero with
        its sign set, else None. CuPy's fill writes a zero as a memset (its ``value == 0`` test), so
        -0.0 became +0.0 in full, fill and scalar writes: npgpu writes those itself."""
        if dtype.kind not in "fc" or not (type(value) in (float, complex) or isinstance(value, numpy.inexact)) or \
                value != 0 or not (dtype.kind == "c" or _table.is_supported_dtype(dtype)):
            return None  # (most values, at once: a float zero is the rare case)
        cell = numpy.full((), value, dtype)
        signed = numpy.signbit(cell.real) or numpy.signbit(cell.imag) if dtype.kind == "c" else numpy.signbit(cell)
        return cell if cell == 0 and signed else None

    def _write_value(self, target: Any, cell: numpy.ndarray) -> None:
        """Every element of native ``target`` set to the 0-d host ``cell`` of its dtype, bits as
        they are (the code generator's copy kernel, the cell broadcast into the target)."""
        dt = target.dtype
        if not target.size:
            return
        if dt.kind == "c":  # (CuPy's elementwise copy of the uploaded cell: a kernel, not a fill's memset)
            target[...] = self.from_host(cell)
            return
        graph = self._eager_graph(("astype", dt, dt), lambda: ir.cast_graph(dt, dt))
        self.run_fused(graph, [self.from_host(cell)], [], target.shape, out=target)

    # -- NumPy's compositions of ufuncs ------------------------------------------------------
    def _round(self, a: Any, decimals: int = 0, out: Any = None) -> Any:
        """NumPy's round of floats (Backend.numpy_round) and of integers; other dtypes and
        arguments: CuPy's. NumPy rounds an integer array to ``decimals`` >= 0 as a copy laid out as
        ``a`` is (CuPy's is C-ordered), and to negative ``decimals`` through float64, as
        ``rint(a / 10**-decimals) * 10**-decimals`` converted back by a cast ("invalid value
        encountered in cast" beyond the type; CuPy's integer arithmetic gives other values there,
        and wraps int16's -32768 otherwise)."""
        if a.dtype.kind in "iu" and type(decimals) is int and out is None:
            if decimals >= 0:
                return a.copy(order="K")
            scale = float(10.0 ** -decimals)
            call = self.apply_ufunc
            values = call(numpy.multiply, call(numpy.rint, call(numpy.true_divide, a, scale)), scale)
            fortran = a.flags.f_contiguous and not a.flags.c_contiguous
            return self.cast_into(self.xp.empty(a.shape, a.dtype, order="F" if fortran else "C"), values)
        if a.dtype.kind != "f" or type(decimals) is not int:
            return self.xp.around(a, decimals, out=out)
        return self.numpy_round(a, decimals, out)

    def _outer(self, a: Any, b: Any, out: Any = None) -> Any:
        """NumPy's outer: ``ravel(a)[:, None] * ravel(b)[None, :]`` (scalars and lists too)."""
        a, b = (x if self.is_native(x) else self.xp.asarray(x) for x in (a, b))
        return self.apply_ufunc(numpy.multiply, a.ravel()[:, None], b.ravel()[None, :], out=out)

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
        if a.dtype == numpy.float16 and target.kind in "biu" and _table.is_supported_dtype(target):
            # (a half converts to an integer as its float does, exactly: the float32 cast kernel,
            # NumPy's values and its "invalid value encountered in cast"; CuPy's saturates, reports none)
            a = a.astype(numpy.float32, order=order if order in ("C", "F", "A", "K") else "K")
            order = "K"
        if a.dtype.kind == "f" and target.kind in "biuf" and target != a.dtype and \
                _table.is_supported_dtype(a.dtype) and _table.is_supported_dtype(target):
            # CuPy's float -> integer casts saturate (300.0 -> int8 127); NumPy's wrap as the host's
            # C conversion does; and CuPy's kernels flush float32 subnormals (1e-40 as float32 is 0,
            # as bool False). The cast kernel of npgpu's code generator follows NumPy's: order "K"
            # lays its result out as ``a`` is (run_fused), "F" is the cast of the transpose
            # transposed back, "C" (and "A" of an array not F-contiguous) a C-ordered result.
            # Its errors are NumPy's "... encountered in cast" (cast_into).
            fortran = order == "F" or (order == "A" and a.flags.f_contiguous and not a.flags.c_contiguous)
            if fortran:
                return self.cast_into(self.xp.empty(a.T.shape, target), a.T).T
            out = self.xp.empty(a.shape, target) if order in ("C", "A") and a.ndim > 1 else None
            return self.cast_into(out, a, target)
        return a.astype(dtype, order=order, copy=copy)

    def _method_fill(self, a: Any, value: Any) -> None:
        if not self.is_native(value):  # (NumPy's conversion of the value, and its errors: 300.0 into int8)
            probe = numpy.empty((), a.dtype)
            probe.fill(value)
            zero = self._negative_zero(probe[()], a.dtype)
            if zero is not None:
                self._write_value(a, zero)
                return
            value = probe[()]
        self._fill(a, value)

    @staticmethod
    def _fill(native: Any, value: Any) -> None:
        """``native``'s fill by the array module (CuPy's writes a zero into C-contiguous memory as
        a memset: +0.0 whatever the zero's sign, which _negative_zero's callers write themselves)."""
        native.fill(value)

    @staticmethod
    def _method_view(a: Any, *args: Any, **kwargs: Any) -> Any:
        return a.view(*args, **kwargs)

    def fill_view(self, view: Any, value: Any) -> None:
        zero = self._negative_zero(value, view.dtype)
        if zero is not None:
            self._write_value(view, zero)
        else:
            self._fill(view, value)

    def basic_view(self, native: Any, key: Any) -> Any:
        view = native[key]  # (a basic key: nothing for _check_index_bounds to catch)
        if not self.is_native(view):  # (NumPy standing in: an all-int key gives a scalar, not the 0-d view)
            view = native[(*(key if type(key) is tuple else (key,)), Ellipsis)]
        return view

    reads_ahead = True

    def strided_view(self, native: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        return self.xp.lib.stride_tricks.as_strided(native, shape, strides)

    keeps_mask_positions = True

    def mask_positions(self, mask: Any) -> Any:
        return self.xp.flatnonzero(mask)

    def take_positions(self, native: Any, positions: Any, ndim: int) -> Any:
        rows = math.prod(native.shape[:ndim])  # (not -1: a zero-size trailing shape leaves it unknown)
        result = native.reshape((rows, *native.shape[ndim:]))[positions]
        _bounds.gathered(self, native, result)
        return result

    def put_positions(self, native: Any, positions: Any, ndim: int, value: Any) -> None:
        rows = math.prod(native.shape[:ndim])
        zero = self._negative_zero(value, native.dtype)
        if zero is not None:  # (written as an array of the values: no scalar's fill)
            value = self.xp.empty((positions.size, *native.shape[ndim:]), native.dtype)
            self._write_value(value, zero)
        native.reshape((rows, *native.shape[ndim:]))[positions] = value  # (a view: C-contiguous)

    def _method_getitem(self, a: Any, key: Any) -> Any:
        self._check_index_bounds(a, key)
        result = a[key]
        _bounds.gathered(self, a, result)  # (an integer result in memory of its own holds some of a's values)
        return result

    def value_bounds(self, native: Any) -> tuple[int, int] | None:
        """(lowest, highest) element of an integer native, in one read back; None when it is empty."""
        if not native.size:
            return None
        low, high = self._read(native.min(), native.max())
        return int(low), int(high)

    def _method_setitem(self, a: Any, key: Any, value: Any) -> None:
        if type(value) in (int, float, complex, bool):
            converted = numpy.empty((), a.dtype)
            try:  # NumPy's conversion and its errors (OverflowError for 300 into uint8, which CuPy wraps)
                converted[()] = value
            except (OverflowError, ValueError, TypeError):
                # NumPy reports a bad basic index or mask before a bad value, the bounds of index arrays after
                items = key if isinstance(key, tuple) else (key,)
                arrays = any(isinstance(k, list) or (isinstance(k, self.xp.ndarray) and k.dtype.kind in "iu")
                             for k in items)
                if not arrays or sum(k is not None and k is not Ellipsis for k in items) > a.ndim:
                    a[key]  # noqa: B018  (for its IndexError only)
                raise
            zero = self._negative_zero(value, a.dtype)
            if zero is not None:  # (written as an array of the values: no scalar's fill)
                self._check_index_bounds(a, key)
                value = a[key]
                if not self.is_native(value):  # (NumPy standing in: one element selected)
                    value = numpy.asarray(value).copy()
                self._write_value(value, zero)
            else:  # (the value NumPy converted, written: its conversion's warnings were reported once, above)
                value = converted[()]
        elif a.dtype.kind in "iu" and getattr(value, "dtype", a.dtype).kind == "f":
            # (CuPy's float -> integer conversions saturate, 300.0 into int8 is 127; NumPy's wrap, 44)
            if isinstance(value, numpy.generic):  # (as NumPy's index assignment casts it: an array's cast)
                value = numpy.asarray(value).astype(a.dtype)[()]
            elif self.is_native(value):
                self._check_index_bounds(a, key)  # (once: NumPy's index errors, then its shape error, then the cast's)
                self._check_value_shape(a, key, value)
                self._scatter_last(a, key, self._method_astype(value, a.dtype))
                return
        self._check_index_bounds(a, key)
        self._scatter_last(a, key, value)

    def _scatter_last(self, a: Any, key: Any, value: Any) -> None:
        """``a[key] = value`` (its bounds already checked), a repeated position's last value written (_last_writes)."""
        last = self._last_writes(a, key, value)
        if last is not None:
            key, value = last
        self._scatter(a, key, value)

    @staticmethod
    def _scatter(a: Any, key: Any, value: Any) -> None:
        """``a[key] = value`` by the array module (CuPy's scatter writes a repeated position's
        values in any order)."""
        a[key] = value

    def _last_writes(self, a: Any, key: Any, value: Any) -> tuple[Any, Any] | None:
        """``a[index] = values`` where the index repeats a position and the values differ along it:
        the positions once each, with the values NumPy's loop writes last there (it writes in index
        order; CuPy's scatter in any, so another of the values could win). None where nothing
        repeats that matters (one index, a value the same for every index)."""
        index = key[0] if type(key) is tuple and len(key) == 1 else key
        if not (self.is_native(index) and index.dtype.kind in "iu" and index.ndim == 1 and index.size > 1):
            return None
        n, k = a.shape[0] if a.ndim else 0, index.size
        shape = numpy.shape(value)
        if len(shape) != a.ndim or shape[0] != k or n * k >= _PUT_KEY_LIMIT:
            return None  # (a value broadcast along the index: every write of a position is the same)
        xp = self.xp
        positions = index.astype(numpy.int64)
        positions = xp.where(positions < 0, positions + n, positions)
        keys = xp.sort(positions * k + xp.arange(k))  # (unique keys: position-major, then index order)
        positions, order = keys // k, keys % k
        last = xp.concatenate((positions[1:] != positions[:-1], xp.ones(1, bool)))
        values = value if self.is_native(value) else self.from_host(numpy.asarray(value, a.dtype))
        return positions[last], xp.broadcast_to(values, (k, *a.shape[1:]))[order[last]]

    def _check_value_shape(self, a: Any, key: Any, value: Any) -> None:
        """NumPy's ValueError where ``value`` does not broadcast into ``a[key]``, from NumPy's own
        write into zero-strided stand-ins (index arrays as zeros of their shapes); nothing where a
        boolean array's selection would need its values read."""
        host = []
        for k in key if isinstance(key, tuple) else (key,):
            if self.is_native(k):
                if k.dtype.kind == "b":
                    return
                k = numpy.zeros(k.shape, numpy.intp)
            host.append(k)
        strided = numpy.lib.stride_tricks.as_strided
        target = strided(numpy.zeros(1, a.dtype), a.shape, (0,) * a.ndim, writeable=True)
        try:  # (a ValueError is NumPy's shape mismatch: it reaches the caller)
            target[tuple(host)] = strided(numpy.zeros(1, value.dtype), value.shape, (0,) * value.ndim)
        except (IndexError, TypeError):
            return  # (an index NumPy rejects for itself: the write below reports it)

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
            except ValueError as error:
                if "mismatch" not in str(error):  # (a broadcast too large to index: NumPy's ValueError)
                    raise ValueError("iterator is too large") from None
                listed = " ".join(str(shape).replace(" ", "") for shape in shapes)
                raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                                 f"{listed} ") from None
        indexed = []  # (axis, its size, the integer index array on it)
        axis = 0
        for position, k in enumerate(items):
            if k is None:
                continue
            if k is Ellipsis:  # (the items after it take the last axes)
                after = [c for c in items[position + 1:] if c is not None and c is not Ellipsis]
                axis = a.ndim - sum(getattr(c, "ndim", 1) if _is_bool_index(c) else 1 for c in after)
                continue
            if _is_bool_index(k):
                axis += getattr(k, "ndim", 1)
                continue
            if isinstance(k, list) or (isinstance(k, self.xp.ndarray) and k.dtype.kind in "iu"):
                index = numpy.asarray(k) if isinstance(k, list) else k
                if index.size and axis < a.ndim and index.dtype.kind in "iu":
                    indexed.append((axis, a.shape[axis], index))
            axis += 1
        masks = [k for k in items if _is_bool_index(k) and getattr(k, "ndim", 0)]
        if indexed and (masks or any(0 in shape for shape in shapes)):
            # (index arrays that broadcast to nothing select no element: NumPy checks none of them)
            counts = [(int(self._read(self.xp.count_nonzero(k))[0]) if self.is_native(k) else
                       int(numpy.count_nonzero(k)),) for k in masks]
            try:
                if 0 in numpy.broadcast_shapes(*shapes, *counts):
                    return
            except ValueError:
                pass
        if indexed:  # (index arrays gathered from memory of known bounds need no check: npgpu/_bounds.py)
            indexed = [entry for entry in indexed
                       if not (self.is_native(entry[2]) and _bounds.within(self, entry[2], entry[1]))]
        if indexed and self._outside(indexed):
            for axis, size, index in indexed:  # (NumPy names the first index outside, array by array)
                self._check_bounds(index, size, axis)

    def _outside(self, indexed: list[tuple[int, int, Any]]) -> bool:
        """Whether an index array of ``indexed`` has an element outside its axis: one read back for
        all of a key's index arrays (a write ``N[rows, cols] = v`` made four, a min and a max each,
        before), its values found only where there is one."""
        flags = []
        for _, size, index in indexed:
            if not self.is_native(index):  # (a list index, checked on the host: no read back)
                if _outside_on_host(index, size):
                    return True
                continue
            flags.append(self._outside_flag(index, size))
        if not flags:
            return False
        found = flags[0]
        for flag in flags[1:]:
            found = found | flag
        return bool(found)

    def _outside_flag(self, index: Any, size: int) -> Any:
        """A 0-d device bool: whether an element of integer ``index`` lies outside an axis of ``size``."""
        outside = index >= size
        if index.dtype.kind == "i":
            outside |= index < -size
        return outside.any()

    @staticmethod
    def _method_sort(a: Any, axis: int = -1, kind: Any = None, order: Any = None) -> None:
        a.sort(axis=axis)



def _outside_on_host(index: numpy.ndarray, size: int) -> bool:
    return bool((index >= size).any() or (index.dtype.kind == "i" and (index < -size).any()))


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



def _eager_plan(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], kinds: list[str], types: list[Any]) -> Any:
    """What ``_own_ufunc`` checks of a signature once: (the operands' dtypes as the kernel reads
    them, the error categories of the loop), or False where the one-node kernel does not run it."""
    if not all(dt.kind in "biuf" and _table.is_supported_dtype(dt) for dt in loop) or \
            not _table.supports_loop(ufunc, loop):
        return False
    # (an array operand enters as its own dtype and is cast in the kernel, as NumPy's loop casts it)
    operand_dtypes = tuple(t if kind == "array" else dt for t, kind, dt in zip(types, kinds, loop))
    if not all(dt.kind in "biuf" and _table.is_supported_dtype(dt) for dt in operand_dtypes):
        return False
    categories = _table.error_categories(ufunc, loop)
    for dt, want in zip(operand_dtypes, loop):  # (an operand's conversion into its loop's dtype: invalid values)
        categories |= _table.cast_error_categories(dt, want)
    return operand_dtypes, categories


@functools.cache
def _int_bounds(dtype: numpy.dtype) -> tuple[int, int]:
    info = numpy.iinfo(dtype)
    return int(info.min), int(info.max)


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
