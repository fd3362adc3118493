"""The NumPy functions this backend runs: a registry filled by ``implements`` next to each
implementation, and the rules deciding whether a call runs here (``supports_function``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy

from ...kernels import ufuncs as _table
from ..base import Backend, dtype_argument
from .array import _array_operand, _native_or_device, _storable, _weak_type

#: NumPy function -> its implementation here, called ``impl(backend, *args, **kwargs)``; filled by
#: ``implements`` next to each implementation (the modules of this package)
FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}
#: keyword arguments each function accepts here (anything else -> NumPy)
ALLOWED_KWARGS: dict[Callable[..., Any], frozenset[str]] = {}
#: what complex arrays can do here: be made, copied, converted to and viewed (compute goes to NumPy)
COMPLEX_FUNCTIONS: set[Callable[..., Any]] = set()
#: function -> a predicate of (args, kwargs): the calls its implementation here takes (others: NumPy)
ACCEPTS: dict[Callable[..., Any], Callable[[tuple[Any, ...], dict[str, Any]], bool]] = {}


def implements(*funcs: Callable[..., Any], kwargs: Iterable[str] | None = None,
               complex_values: bool = False,
               accepts: Callable[[tuple[Any, ...], dict[str, Any]], bool] | None = None,
               ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as this backend's implementation of each of ``funcs``.

    ``kwargs``: the keywords it accepts (default: its parameters after the backend's);
    ``complex_values``: whether it also moves complex arrays (which are stored, not computed on);
    ``accepts``: which calls it takes, from their arguments (the others run in NumPy).
    """
    def register(impl: Callable[..., Any]) -> Callable[..., Any]:
        code = impl.__code__
        accepted = frozenset(code.co_varnames[1:code.co_argcount]) if kwargs is None else frozenset(kwargs)
        for func in funcs:
            FUNCTIONS[func] = impl
            ALLOWED_KWARGS[func] = accepted
            if complex_values:
                COMPLEX_FUNCTIONS.add(func)
            if accepts is not None:
                ACCEPTS[func] = accepts
        return impl

    return register


#: NumPy functions that only make a view (new shape and strides over the same memory)
VIEW_FUNCTIONS = (numpy.swapaxes, numpy.moveaxis, numpy.rollaxis, numpy.squeeze, numpy.expand_dims,
                  numpy.broadcast_to, numpy.atleast_1d, numpy.atleast_2d, numpy.atleast_3d, numpy.flip,
                  numpy.fliplr, numpy.flipud, numpy.diagonal)
_MATMUL_FUNCS = frozenset({numpy.matmul, numpy.dot, numpy.tensordot})


_BASIC_KEY_TYPES = (int, slice, type(None), type(Ellipsis), numpy.integer)


def _is_basic_key(key: Any) -> bool:
    parts = key if isinstance(key, tuple) else (key,)
    return all(isinstance(p, _BASIC_KEY_TYPES) and not isinstance(p, bool) for p in parts)



def _target_dtype(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The dtype a call asks for (None: not given; False: not a dtype this side should interpret)."""
    value = dtype_argument(func, args, kwargs)
    if value is None and func in (numpy.full, numpy.full_like) and len(args) > 1:
        return numpy.asarray(args[1]).dtype if not _native_or_device(args[1]) else None
    return value


#: functions whose first argument is a sequence of arrays
_SEQUENCE_FIRST = frozenset({numpy.concatenate, numpy.stack, numpy.vstack, numpy.hstack, numpy.dstack,
                             numpy.column_stack})
_NEEDS_FLOAT = frozenset({numpy.nanmax, numpy.nanmin, numpy.nanmean})
#: functions of complex values that float16 arrays don't run here: reductions, complex parts
_NOT_HALF = frozenset({numpy.sum, numpy.nansum, numpy.mean, numpy.angle, numpy.conjugate, numpy.iscomplex,
                       numpy.isreal, numpy.imag})


def supports_function(
    self: Backend,
    func: Callable[..., Any],
    dtypes: tuple[numpy.dtype, ...],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> bool:
    if func not in FUNCTIONS or not self.supports_dtypes(dtypes):
        return False
    if set(kwargs) - ALLOWED_KWARGS[func]:
        return False
    if func in ACCEPTS and not ACCEPTS[func](args, kwargs):
        return False
    target = _target_dtype(func, args, kwargs)
    if target is False or (target is not None and not self.supports_dtypes((target,))):
        return False  # a dtype argument NumPy must judge, or one this device can't hold (datetime64, ...)
    if func in (numpy.arange, numpy.linspace) and not all(
        isinstance(v, (int, float, numpy.integer, numpy.floating)) for v in args[:2]
    ):
        return False
    dts = [numpy.dtype(d) for d in dtypes if not isinstance(d, type)]
    if any(map(_table.is_half, dts)) or (target is not None and _table.is_half(target)):
        # float16 arrays are made, moved and converted here as complex ones are; their ufuncs are
        # the kernels' (supports_ufunc); other functions of them run in NumPy (reductions: README)
        if func not in COMPLEX_FUNCTIONS or func in _NOT_HALF:
            return False
        if target is not None and func is not numpy.ndarray.view and any(
                not _table.has_cast(d, target) for d in dts):
            return False  # (a view reads the same bytes as another type: nothing is converted)
        if func in (numpy.ndarray.__setitem__, numpy.ndarray.fill) and args and _native_or_device(args[0]) and any(
                not _table.has_cast(d, args[0].dtype) for d in dts):
            return False
        dts = [d for d in dts if not _table.is_half(d)]
    if any(d.kind == "c" for d in dts) or (target is not None and target.kind == "c"):
        # complex values live on the device but are only moved there, not computed on
        if func not in COMPLEX_FUNCTIONS:
            return False
        if (func is numpy.ndarray.astype or func is numpy.astype) and target.kind != "c":
            return False
        if func in (numpy.ndarray.__setitem__, numpy.ndarray.fill) and args[0].dtype.kind != "c":
            return False
        if func in (numpy.concatenate, numpy.stack) and target is not None and target.kind != "c":
            return False
        dtypes = ()
    elif func is numpy.imag:
        return False  # the imaginary part of a real array: NumPy's read-only zeros
    if func in _SEQUENCE_FIRST:
        arrays = args[0] if args else kwargs.get("arrays", kwargs.get("tup"))
        if not isinstance(arrays, (list, tuple)) or not all(map(_array_operand, arrays)):
            return False  # an array as the sequence (NumPy splits it into rows), or numbers among the arrays
    elif func in VIEW_FUNCTIONS and not (args and _native_or_device(args[0])):
        return False  # a list of arrays where the array goes: NumPy makes the array first
    if func in (numpy.split, numpy.array_split):
        sections = args[1] if len(args) > 1 else kwargs.get("indices_or_sections")
        if not isinstance(sections, (int, numpy.integer, list, tuple)):
            return False  # split points are host values; an array of them is NumPy's to read
    for key in ("out", "where"):
        v = kwargs.get(key)
        if v is not None and v is not True and not _native_or_device(v):
            return False
    if "initial" in kwargs and kwargs["initial"] is not None and not isinstance(kwargs["initial"], (int, float, bool)):
        return False
    dts = [numpy.dtype(d) for d in dtypes if not isinstance(d, type)]
    if any(not (_table.is_supported_dtype(d) or _table.is_half(d)) for d in dts):
        return False
    if target is not None and not dtypes and target.kind != "c" and not _table.is_kernel_dtype(target):
        return False
    if func in _MATMUL_FUNCS:
        return bool(dts) and all(d.kind == "f" for d in dts)
    if func in _NEEDS_FLOAT and not all(d.kind == "f" for d in dts):
        return False
    if func in (numpy.mean, numpy.var, numpy.std, numpy.nanmean):
        a = args[0] if args else None
        if a is None or getattr(a, "size", 0) == 0 or kwargs.get("where", True) is not True:
            return False
        if kwargs.get("ddof", 0) >= a.size:
            return False
    if func in (numpy.ndarray.__getitem__, numpy.ndarray.__setitem__):
        key = args[1] if len(args) > 1 else None
        if not (_is_basic_key(key) or (_array_operand(key) and key.dtype == numpy.bool_)):
            return False
        if func is numpy.ndarray.__setitem__ and len(args) > 2:
            v = args[2]
            if not (isinstance(v, (int, float, bool, numpy.generic)) or _array_operand(v)):
                return False
            if _native_or_device(key) and not args[0].flags.c_contiguous:  # (a mask into a strided view: NumPy)
                return False
    if func is numpy.where and len(args) != 3:
        return False
    if func in (numpy.reshape, numpy.ravel):
        position = 1 if func is numpy.ravel else 2
        order = args[position] if len(args) > position else kwargs.get("order", "C")
        if order not in (("C", "F", "A") if func is numpy.reshape else ("C", "F", "A", "K")):
            return False
    if func in (numpy.cumsum, numpy.cumprod) and kwargs.get("out") is not None:
        return False
    if func is numpy.ndarray.view:
        wanted = [*args[1:], kwargs.get("dtype"), kwargs.get("type")]
        if any(isinstance(w, type) and issubclass(w, numpy.ndarray) for w in wanted):
            return False  # a view as an ndarray subclass: NumPy's (the subclass lives on the host)
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if dtype is not None and not _storable(numpy.dtype(dtype)):
            return False
    if func is numpy.clip:
        if "min" in kwargs or "max" in kwargs:
            return False
        if (len(args) > 1 or "a_min" in kwargs) != (len(args) > 2 or "a_max" in kwargs):
            return False  # one of a_min and a_max given: NumPy's TypeError (the other is missing)
        bounds = [args[i] if len(args) > i else kwargs.get(("a_min", "a_max")[i - 1]) for i in (1, 2)]
        try:
            loop = numpy._core.umath.clip.resolve_dtypes(
                (args[0].dtype, *(args[0].dtype if b is None else b.dtype if hasattr(b, "dtype") else _weak_type(b)
                                  for b in bounds), None))
        except (TypeError, ValueError):
            return False
        if not _table.supports_loop(numpy._core.umath.clip, tuple(loop)):
            return False  # complex or float16 bounds: NumPy's
    return True


def call_function(self: Backend, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return FUNCTIONS[func](self, *args, **kwargs)
