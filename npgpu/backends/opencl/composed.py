"""Functions NumPy composes of ufuncs and reductions, composed here of this backend's: isclose and
allclose, average, nanvar/nanstd, nanargmax/nanargmin, nancumsum/nancumprod, and angle, iscomplex,
isreal of real arrays (complex ones are computed in NumPy).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

from ... import _fperr
from ...kernels import ir
from ..base import Backend
from .array import CLArray, _native_or_device, _norm_axes
from .routing import implements

_PLAIN = (bool, int, float)


def _close_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Device arrays or Python numbers to compare, tolerances that are Python numbers."""
    operands = args[:2]
    tolerances = [*args[2:4], kwargs.get("rtol", 0.0), kwargs.get("atol", 0.0)]
    return (len(operands) == 2 and any(map(_native_or_device, operands))
            and all(_native_or_device(x) or type(x) in (int, float) for x in operands)
            and all(type(t) in _PLAIN for t in tolerances))


def _average_accepted(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    weights = args[2] if len(args) > 2 else kwargs.get("weights")
    axis = args[1] if len(args) > 1 else kwargs.get("axis")
    return (weights is None or _native_or_device(weights)) and (axis is None or isinstance(axis, (int, tuple)))


class _Chain:
    """A graph of ufunc calls on arrays and Python numbers, NumPy's loop resolved at each step
    (Python numbers are weak, NEP 50): one elementwise kernel for an expression."""

    def __init__(self) -> None:
        self.builder = ir.GraphBuilder()
        self.arrays: list[CLArray] = []
        self.scalars: list[Any] = []

    def operand(self, x: Any) -> Any:
        """An array input node, or the number itself (typed when a loop takes it)."""
        if isinstance(x, CLArray):
            self.arrays.append(x)
            return self.builder.input(x.dtype)
        return x

    def __call__(self, ufunc: numpy.ufunc, *operands: Any) -> ir.Node:
        kinds = tuple(o.dtype if isinstance(o, ir.Node) else type(o) for o in operands)
        loop = tuple(ufunc.resolve_dtypes((*kinds, None)))
        nodes = []
        for o, dtype in zip(operands, loop, strict=False):
            if not isinstance(o, ir.Node):
                self.scalars.append(o)
                o = self.builder.scalar(dtype)
            nodes.append(o)
        return self.builder.apply(ufunc, loop, *nodes)[0]


class Composed(Backend):
    """isclose, allclose, average, the NaN-skipping statistics NumPy builds from others, angle."""

    @implements(numpy.isclose, kwargs=("rtol", "atol", "equal_nan"), accepts=_close_accepted)
    def isclose(self, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Any:
        """NumPy's isclose: |a - b| <= atol + rtol |b| where b is finite, or a == b (b compared as a
        float); NaN to NaN with ``equal_nan``. One kernel; invalid values (inf - inf) are not
        reported, as NumPy's."""
        if isinstance(b, CLArray):
            float_type = numpy.result_type(b.dtype, 1.0)
            if b.dtype != float_type:
                b = self.copy(b, float_type)
        elif type(b) is int:
            b = float(b)
        chain = _Chain()
        x, y = chain.operand(a), chain.operand(b)
        difference = chain(numpy.absolute, chain(numpy.subtract, x, y))
        if isinstance(b, CLArray):
            bound = chain(numpy.add, chain.operand(atol), chain(numpy.multiply, chain.operand(rtol),
                                                                 chain(numpy.absolute, y)))
            near = chain(numpy.logical_and, chain(numpy.less_equal, difference, bound), chain(numpy.isfinite, y))
        else:  # (NumPy's bound of a Python number is Python's arithmetic: a weak scalar, NEP 50)
            near = chain(numpy.less_equal, difference, atol + rtol * abs(b)) if math.isfinite(abs(b)) else None
        same = chain(numpy.equal, x, y)
        result = same if near is None else chain(numpy.logical_or, near, same)
        if equal_nan:
            result = chain(numpy.logical_or, result, chain(numpy.logical_and, chain(numpy.isnan, x),
                                                           chain(numpy.isnan, y)))
        graph = chain.builder.build([result])
        out = self.empty(numpy.broadcast_shapes(*(arr.shape for arr in chain.arrays)), numpy.bool_)
        self.run_elementwise(graph, chain.arrays, [out], chain.scalars)
        return out

    @implements(numpy.allclose, kwargs=("rtol", "atol", "equal_nan"), accepts=_close_accepted)
    def allclose(self, a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        """NumPy's allclose (a Python bool): every element isclose."""
        return bool(self.to_host(self.reduction("all", self.isclose(a, b, rtol, atol, equal_nan))))

    @implements(numpy.average, kwargs=("axis", "weights", "returned", "keepdims"), accepts=_average_accepted)
    def average(self, a: CLArray, axis: Any = None, weights: CLArray | None = None, returned: bool = False,
                keepdims: bool = False) -> Any:
        """NumPy's average: the mean, or sum(a * w) / sum(w) in NumPy's result dtype (float64 for
        integer data), with its errors for weights that don't fit or sum to zero."""
        if weights is None:
            average = self.mean(a, axis=axis, keepdims=keepdims)
            if not returned:
                return average
            return average, average.dtype.type(a.size / average.size)
        kind = a.dtype.kind
        dtype = numpy.result_type(a.dtype, weights.dtype, *(("f8",) if kind in "biu" else ()))
        if a.shape != weights.shape:
            if axis is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            given = normalize_axis_tuple(axis, a.ndim, argname="axis")  # (in the order given)
            if weights.shape != tuple(a.shape[ax] for ax in given):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            # (weights along ``axes`` in a's order of them, broadcast against the rest)
            weights = self.transpose(weights, tuple(numpy.argsort(given).tolist()))
            weights = self.reshape(weights, tuple(n if d in given else 1 for d, n in enumerate(a.shape)))
        axes = _norm_axes(axis, a.ndim)
        total = self.reduction("sum", weights, axis=axes, dtype=dtype, keepdims=keepdims)
        if bool(self.to_host(self.reduction("any", self.ufunc_call(numpy.equal, (total, 0.0))))):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        weighted = self.sum_of_products(a, weights, a.shape, axes, dtype)
        if keepdims:
            weighted = self.reshape(weighted, tuple(1 if d in axes else n for d, n in enumerate(a.shape)))
        average = self.ufunc_call(numpy.true_divide, (weighted, total))
        if not returned:
            return average
        if total.shape != average.shape:
            total = self.copy(self.numpy_view(numpy.broadcast_to, total, average.shape))
        return average, total

    def _nan_moments(self, a: CLArray, axis: Any, dtype: Any, ddof: int, keepdims: bool) -> CLArray:
        """NumPy's nanvar: the variance of the non-NaN values of each slice, with its warning
        (and NaN) where the degrees of freedom are not positive."""
        call = self.ufunc_call
        axes = _norm_axes(axis, a.ndim)
        missing = call(numpy.isnan, (a,))
        values = self.where(missing, a.dtype.type(0), a)
        count = self.reduction("sum", call(numpy.logical_not, (missing,)), axis=axes, dtype=numpy.intp,
                               keepdims=True)
        total = self.reduction("sum", values, axis=axes, dtype=dtype, keepdims=True)
        mean = self._cast_to(call(numpy.true_divide, (total, count)), total.dtype)
        # (the deviations and their squares report their errors as NumPy's nanvar does: "... in subtract",
        # "... in multiply"; the sums theirs, "... in reduce")
        errstate = _fperr.current()
        deviation = self.where(missing, total.dtype.type(0), call(numpy.subtract, (values, mean), errstate=errstate))
        squares = call(numpy.multiply, (deviation, deviation), errstate=errstate)
        variance = self.reduction("sum", squares, axis=axes, dtype=dtype, keepdims=keepdims)
        freedom = call(numpy.subtract, (count if keepdims else self.reshape(count, variance.shape), ddof))
        variance = self._cast_to(call(numpy.true_divide, (variance, freedom)), variance.dtype)
        bad = call(numpy.less_equal, (freedom, 0))
        if bool(self.to_host(self.reduction("any", bad))):
            warnings.warn("Degrees of freedom <= 0 for slice.", RuntimeWarning, stacklevel=4)
            variance = self.where(bad, variance.dtype.type(numpy.nan), variance)
        return variance

    def _cast_to(self, x: CLArray, dtype: numpy.dtype) -> CLArray:
        return x if x.dtype == dtype else self.copy(x, dtype)

    @implements(numpy.nanvar, kwargs=("axis", "dtype", "ddof", "keepdims"))
    def nanvar(self, a: CLArray, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        if a.dtype.kind != "f":
            return self.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
        return self._nan_moments(a, axis, dtype, ddof, keepdims)

    @implements(numpy.nanstd, kwargs=("axis", "dtype", "ddof", "keepdims"))
    def nanstd(self, a: CLArray, axis: Any = None, dtype: Any = None, ddof: int = 0, keepdims: bool = False) -> Any:
        if a.dtype.kind != "f":
            return self.var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, _sqrt=True)
        variance = self._nan_moments(a, axis, dtype, ddof, keepdims)
        return self.ufunc_call(numpy.sqrt, (variance,), out=variance)

    def _nan_arg(self, kind: str, a: CLArray, axis: Any, keepdims: bool) -> Any:
        """nanargmax/nanargmin: NaN as the value that never wins; an all-NaN slice is NumPy's ValueError."""
        if a.dtype.kind == "f" and a.size:
            missing = self.ufunc_call(numpy.isnan, (a,))
            if bool(self.to_host(self.reduction("any", self.reduction("all", missing, axis=axis)))):
                raise ValueError("All-NaN slice encountered")
            a = self.where(missing, a.dtype.type(-numpy.inf if kind == "argmax" else numpy.inf), a)
        return self.argreduce(kind, a, axis=axis, keepdims=keepdims)

    @implements(numpy.nanargmax, kwargs=("axis", "keepdims"))
    def nanargmax(self, a: CLArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._nan_arg("argmax", a, axis, keepdims)

    @implements(numpy.nanargmin, kwargs=("axis", "keepdims"))
    def nanargmin(self, a: CLArray, axis: Any = None, keepdims: bool = False) -> Any:
        return self._nan_arg("argmin", a, axis, keepdims)

    @implements(numpy.nancumsum, kwargs=("axis", "dtype"))
    def nancumsum(self, a: CLArray, axis: Any = None, dtype: Any = None) -> CLArray:
        """NumPy's nancumsum: cumsum with NaN counted as 0."""
        return self.cumulative("cumsum", self._nan_as(a, 0), axis=axis, dtype=dtype)

    @implements(numpy.nancumprod, kwargs=("axis", "dtype"))
    def nancumprod(self, a: CLArray, axis: Any = None, dtype: Any = None) -> CLArray:
        return self.cumulative("cumprod", self._nan_as(a, 1), axis=axis, dtype=dtype)

    def _nan_as(self, a: CLArray, value: int) -> CLArray:
        return self.where(self.ufunc_call(numpy.isnan, (a,)), a.dtype.type(value), a) if a.dtype.kind == "f" else a
