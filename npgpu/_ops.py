"""Facts about NumPy's functions, one table per kind of fact; every other module reads them.

Each fact lives here once: which functions are reductions (and how each is computed), which
make arrays from nothing (and how big the request is), which write into their first argument,
which only read metadata, which return 0-d arrays rather than scalars. A new NumPy function
that belongs to one of these kinds is one entry here (docs/ARCHITECTURE.md has the recipes).
This module imports only NumPy: everything in npgpu may read it.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy

# -- plain host values ------------------------------------------------------------------------

#: Argument types that are plain host values, never array operands (the small-call check skips
#: them; the C wrappers scan them in this order, the commonest first). ``type``: dtype=numpy.float32.
HOST_SCALARS: tuple[type, ...] = (float, int, bool, type(None), str, complex, numpy.float64, numpy.float32,
                                  numpy.int64, numpy.int32, numpy.bool_, numpy.complex128, type)

# -- reductions ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reduction:
    """A NumPy function that is one ufunc reduction.

    ``ufunc``: the reduction's ufunc (also the fused map-reduce kernel's operation, by name);
    ``small_call``: whether, for an exact ndarray and at most a ``plain_axis``, NumPy's function
    is ``ufunc.reduce(a, axis, small_dtype)`` (fromnumeric's _wrapreduction), which the
    namespace's short road (and the one-pass rule's, for host data above the thresholds) then
    calls directly; ``divides``: the result is divided by the count (mean)."""

    ufunc: numpy.ufunc
    small_call: bool = True
    small_dtype: type | None = None
    divides: bool = False

    @property
    def fused_op(self) -> str:
        """The map-reduce operation of a fused reduction (npgpu/kernels/codegen.map_reduce)."""
        return self.ufunc.__name__


def plain_axis(axis: Any) -> bool:
    """An axis a short road passes to ``ufunc.reduce`` as NumPy's function would: None, an int,
    or a tuple of ints (resnet's per-pixel sums over ``axis=(1, 2, 3)``). The C twin:
    _speedups.c's plain_axis."""
    kind = type(axis)
    if kind is int or axis is None:
        return True
    if kind is not tuple:
        return False
    for v in axis:  # (a loop, not all(): this runs at every call of a loop's reductions)
        if type(v) is not int:
            return False
    return True


#: NumPy function -> how it reduces (the namespace's short road and fused map-reduce kernels).
REDUCTIONS: dict[Callable[..., Any], Reduction] = {
    numpy.sum: Reduction(numpy.add), numpy.prod: Reduction(numpy.multiply),
    numpy.max: Reduction(numpy.maximum), numpy.amax: Reduction(numpy.maximum),
    numpy.min: Reduction(numpy.minimum), numpy.amin: Reduction(numpy.minimum),
    numpy.any: Reduction(numpy.logical_or, small_dtype=bool),
    numpy.all: Reduction(numpy.logical_and, small_dtype=bool),
    numpy.mean: Reduction(numpy.add, small_call=False, divides=True),
}
#: ufunc -> the NumPy function that is its reduction (add -> sum, maximum -> max): how a backend runs
#: ``ufunc.reduce``; read off REDUCTIONS (the first function of each ufunc that does not divide).
UFUNC_REDUCTIONS: dict[numpy.ufunc, Callable[..., Any]] = {
    r.ufunc: f for f, r in reversed(REDUCTIONS.items()) if not r.divides}

# -- creation from nothing ----------------------------------------------------------------------

#: How the C wrappers (npgpu/_speedups.c, enum SIZE_*) read a creation call's element count off
#: its common forms; 0: they don't, the general road decides.
QUICK_NONE, QUICK_SHAPE_FIRST, QUICK_ARANGE, QUICK_SQUARE, QUICK_NUM_THIRD = 0, 1, 2, 3, 4


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, default: Any = None) -> Any:
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def _shape_size(shape: Any) -> int:
    if shape is None:
        return 1
    if isinstance(shape, (int, numpy.integer)):
        return max(int(shape), 0)
    return math.prod(max(operator.index(s), 0) for s in shape)


def _shape_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return _shape_size(_arg(args, kwargs, 0, "shape"))


def _arange_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    start, stop, step = _arg(args, kwargs, 0, "start", 0), _arg(args, kwargs, 1, "stop"), _arg(args, kwargs, 2, "step")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if not all(isinstance(v, (int, float, numpy.integer, numpy.floating)) for v in (start, stop, step)) or not step:
        return 0
    return max(0, math.ceil((stop - start) / step))


def _num_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return operator.index(_arg(args, kwargs, 2, "num", 50))


def _eye_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    n = _arg(args, kwargs, 0, "N")
    m = _arg(args, kwargs, 1, "M")
    return operator.index(n) * operator.index(n if m is None else m)


def _identity_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return operator.index(_arg(args, kwargs, 0, "n")) ** 2


@dataclass(frozen=True)
class Creation:
    """A function that makes an array from nothing: ``elements(args, kwargs)`` is the number of
    elements a call asks for (TypeError for arguments NumPy will judge); ``quick``: how the
    small-call check reads the common forms (QUICK_*). Its dtype argument's position is in
    DTYPE_POSITION."""

    elements: Callable[[tuple[Any, ...], dict[str, Any]], int]
    quick: int = QUICK_NONE


#: Creation function -> its size rule.
#: Creations of an array like another (the residency of what they make is tracked like a creation's)
LIKE_CREATIONS = frozenset({numpy.zeros_like, numpy.ones_like, numpy.empty_like, numpy.full_like})

CREATIONS: dict[Callable[..., Any], Creation] = {
    numpy.zeros: Creation(_shape_elements, QUICK_SHAPE_FIRST),
    numpy.ones: Creation(_shape_elements, QUICK_SHAPE_FIRST),
    numpy.empty: Creation(_shape_elements, QUICK_SHAPE_FIRST),
    numpy.full: Creation(_shape_elements, QUICK_SHAPE_FIRST),
    numpy.arange: Creation(_arange_elements, QUICK_ARANGE),
    numpy.linspace: Creation(_num_elements, QUICK_NUM_THIRD),
    numpy.logspace: Creation(_num_elements, QUICK_NUM_THIRD),
    numpy.eye: Creation(_eye_elements, QUICK_SQUARE),
    numpy.identity: Creation(_identity_elements, QUICK_SQUARE),
    numpy.tri: Creation(_eye_elements),
}

#: Functions that make index grids from a shape (``indices((n, m))``): NumPy builds them and their
#: arrays are placed as arrays made from nothing are (npgpu.mgrid and npgpu.ogrid are the
#: index-expression faces of the same rule: _dispatch.place_grid)
GRIDS = frozenset({numpy.indices})

#: NumPy functions (and ndarray methods) -> positional index of their dtype argument (counting the
#: array for methods and *_like)
DTYPE_POSITION: dict[Any, int] = {
    numpy.empty: 1, numpy.zeros: 1, numpy.ones: 1, numpy.full: 2, numpy.empty_like: 1, numpy.zeros_like: 1,
    numpy.ones_like: 1, numpy.full_like: 2, numpy.arange: 3, numpy.linspace: 5, numpy.logspace: 5, numpy.eye: 3,
    numpy.identity: 1, numpy.tri: 3, numpy.ndarray.astype: 1, numpy.astype: 1, numpy.ascontiguousarray: 1, numpy.sum: 2,
    numpy.prod: 2, numpy.nansum: 2, numpy.nanprod: 2, numpy.mean: 2, numpy.var: 2, numpy.std: 2, numpy.nanmean: 2,
    numpy.cumsum: 2, numpy.cumprod: 2, numpy.nancumsum: 2, numpy.nancumprod: 2, numpy.trace: 4,
}

# -- arrays from host data ----------------------------------------------------------------------

#: Where host data enters: NumPy builds the array, placement decides whether it moves (the
#: result is placed by its size, uploaded from the upload threshold).
CONSTRUCTORS = frozenset({numpy.asarray, numpy.array, numpy.asanyarray, numpy.ascontiguousarray,
                          numpy.asfortranarray, numpy.load, numpy.loadtxt, numpy.genfromtxt, numpy.fromfile,
                          numpy.fromiter})
#: The constructors from data in memory (the namespace's short road; files take the general one).
IN_MEMORY_CONSTRUCTORS = frozenset({numpy.asarray, numpy.array, numpy.asanyarray, numpy.ascontiguousarray,
                                    numpy.asfortranarray})

#: Functions taking the array API's ``device=`` (NumPy's take only "cpu"): npgpu's dispatcher
#: places their result on the named device (a backend's name, ``x.device``) or on the host
#: ("cpu"); the namespace wrappers send every call naming ``device=`` to it.
DEVICE_KEYWORD = frozenset({numpy.arange, numpy.asarray, numpy.asanyarray, numpy.empty, numpy.empty_like,
                            numpy.eye, numpy.full, numpy.full_like, numpy.linspace, numpy.ones, numpy.ones_like,
                            numpy.zeros, numpy.zeros_like})

# -- writes ---------------------------------------------------------------------------------------

#: Functions (and ndarray methods) that write into their first argument -> NumPy's message when it
#: is read-only.
MUTATES_FIRST: dict[Any, str] = {
    numpy.copyto: "assignment destination is read-only", numpy.put: "put: output array is read-only",
    numpy.place: "assignment destination is read-only", numpy.putmask: "assignment destination is read-only",
    numpy.fill_diagonal: "assignment destination is read-only",
    numpy.put_along_axis: "assignment destination is read-only",
    numpy.ndarray.__setitem__: "assignment destination is read-only",
    numpy.ndarray.fill: "assignment destination is read-only", numpy.ndarray.sort: "sort array is read-only",
    numpy.ndarray.setfield: "assignment destination is read-only",
}

#: Functions that write their result into their first argument and return it when their ``copy``
#: argument (at this position) is false (npgpu computes a copy, then writes it into the argument)
IN_PLACE_UNLESS_COPY: dict[Any, int] = {numpy.nan_to_num: 1}

# -- metadata and memory --------------------------------------------------------------------------

#: Functions that only read shape and dtype: answered from zero-cost host proxies, no transfer.
METADATA = frozenset({numpy.shape, numpy.ndim, numpy.size, numpy.iscomplexobj, numpy.isrealobj, numpy.result_type,
                      numpy.min_scalar_type, numpy.can_cast, numpy.common_type, numpy.broadcast_shapes})
#: Functions that ask whether two arrays' memory overlaps (the backend answers for device arrays).
MEMORY = frozenset({numpy.shares_memory, numpy.may_share_memory})

#: Functions whose work is the host's by nature (writing files, making text): NumPy runs them on
#: host copies of device arrays, counted as host work, never as a fallback (a fallback is what a
#: device backend could not do).
HOST_IO = frozenset({numpy.save, numpy.savez, numpy.savez_compressed, numpy.savetxt, numpy.array2string,
                     numpy.array_repr, numpy.array_str})

# -- results --------------------------------------------------------------------------------------

#: Functions whose 0-d results NumPy returns as 0-d arrays rather than scalars.
#: (tests/test_scalars.py checks each entry against NumPy itself)
ARRAY_RESULT_0D = frozenset({numpy.asarray, numpy.array, numpy.asanyarray, numpy.ascontiguousarray, numpy.copy,
                             numpy.ndarray.copy, numpy.reshape, numpy.ndarray.astype, numpy.astype, numpy.ndarray.view,
                             numpy.zeros, numpy.ones, numpy.empty, numpy.full, numpy.zeros_like, numpy.ones_like,
                             numpy.empty_like, numpy.full_like, numpy.squeeze, numpy.transpose, numpy.real,
                             numpy.imag, numpy.where, numpy.roll, numpy.pad, numpy.broadcast_to,
                             numpy.broadcast_arrays, numpy.tensordot, numpy.unique, numpy.fft.fftn, numpy.fft.ifftn,
                             numpy.atleast_1d, numpy.atleast_2d, numpy.atleast_3d, numpy.expand_dims,
                             numpy.moveaxis, numpy.asfortranarray, numpy.copyto, numpy.tile})
#: Functions whose results NumPy makes read-only (views that repeat elements).
READ_ONLY_RESULTS = frozenset({numpy.broadcast_to, numpy.diagonal})

# -- ufuncs ---------------------------------------------------------------------------------------

#: Comparisons: with a Python int outside the array's dtype NumPy compares exactly (on the host).
COMPARISONS = frozenset({numpy.less, numpy.less_equal, numpy.greater, numpy.greater_equal, numpy.equal,
                         numpy.not_equal})
#: Compute-heavy ufuncs the namespace wraps (the others are NumPy's own objects): the upload of
#: large host operands pays for a matmul, and NumPy's own cost hides the wrapper's.
HEAVY_UFUNCS = tuple(getattr(numpy, name) for name in ("matmul", "vecdot", "matvec", "vecmat") if hasattr(numpy, name))


def _not_inexact(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """nanmean, nanvar and nanstd (``a, axis, dtype, out, ...``) of inexact data refuse a dtype or an
    ``out`` that is not inexact (NumPy's TypeError "If a is inexact, then dtype must be inexact")."""
    a = args[0] if args else kwargs.get("a")
    if getattr(getattr(a, "dtype", None), "kind", None) not in ("f", "c"):
        return False  # (NumPy's nanmean of integers is their mean: no such check)
    dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
    out = args[3] if len(args) > 3 else kwargs.get("out")
    try:
        if dtype is not None and numpy.dtype(dtype).kind not in ("f", "c"):
            return True
    except TypeError:
        return True  # (NumPy judges it)
    return out is not None and getattr(getattr(out, "dtype", None), "kind", None) not in ("f", "c")


#: NumPy's own checks of a function's arguments that a device's version of it does not make:
#: function -> whether NumPy refuses these arguments. Such a call runs in NumPy (counted as a
#: fallback), whose error is the answer; where the check errs, NumPy's result is.
NUMPY_REFUSES: dict[Any, Callable[[tuple[Any, ...], dict[str, Any]], bool]] = {
    numpy.nanmean: _not_inexact, numpy.nanvar: _not_inexact, numpy.nanstd: _not_inexact,
}


def written_scalar(value: Any, dtype: numpy.dtype, advanced: bool = False) -> Any:
    """A scalar converted as NumPy converts one written into an array of ``dtype``: a Python number
    by Python's rules (OverflowError for 300 into uint8, ValueError for NaN into an int); through an
    advanced index (a mask, an index array), a NumPy scalar as a 0-d array, by an unsafe cast
    (``np.int64(300)`` into int8 wraps; a NaN warns "invalid value encountered in cast")."""
    cell = numpy.empty((), dtype)
    if advanced and isinstance(value, numpy.generic):
        cell[...] = numpy.asarray(value)
    else:
        cell[()] = value
    return cell[()]


def made_at_run_time(ufunc: numpy.ufunc) -> bool:
    """Whether ``ufunc`` is one a program makes as it runs (``frompyfunc``, ``vectorize``: object
    loops only), which caches and the report must not keep alive: a loop that vectorizes a bound
    method at every step would fill them (and hold each method's object) without end."""
    return ufunc.ntypes == 1 and ufunc.types[0][0] == "O"


#: NumPy functions whose results are named tuples (``svd(a).U``, ``unique_counts(a).counts``), each
#: with a call of it on a tiny array that gives NumPy's type (asked once, at first need): a
#: device's function may answer a plain tuple (CuPy's svd, eigh, qr, slogdet)
_NAMED_RESULT_SAMPLES: dict[Any, Callable[[], Any]] = {
    numpy.linalg.svd: lambda: numpy.linalg.svd(numpy.eye(1)),
    numpy.linalg.eig: lambda: numpy.linalg.eig(numpy.eye(1)),
    numpy.linalg.eigh: lambda: numpy.linalg.eigh(numpy.eye(1)),
    numpy.linalg.qr: lambda: numpy.linalg.qr(numpy.eye(1)),
    numpy.linalg.slogdet: lambda: numpy.linalg.slogdet(numpy.eye(1)),
    **{getattr(numpy, name): (lambda name=name: getattr(numpy, name)(numpy.zeros(1)))
       for name in ("unique_all", "unique_counts", "unique_inverse") if hasattr(numpy, name)},
}
_named_results: dict[Any, type] = {}


def named_result(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> Any:
    """``result`` as NumPy's named tuple where ``func`` returns one and the device gave a plain
    tuple of as many items; else ``result`` itself. (qr's mode="raw" is a plain tuple in NumPy.)"""
    if type(result) is not tuple or func not in _NAMED_RESULT_SAMPLES:
        return result
    if func is numpy.linalg.qr and (args[1] if len(args) > 1 else kwargs.get("mode")) == "raw":
        return result
    kind = _named_results.get(func)
    if kind is None:
        kind = _named_results[func] = type(_NAMED_RESULT_SAMPLES[func]())
    fields = getattr(kind, "_fields", None)
    return kind(*result) if fields is not None and len(fields) == len(result) else result


def pad_pairs(pad_width: Any, ndim: int) -> list[tuple[int, int]]:
    """``pad``'s widths as NumPy reads them: (before, after) per axis, from an int, pairs, or a
    dict of axis -> width (NumPy 2.3); NumPy's TypeError for widths that are not integers and its
    ValueError for negative ones."""
    if isinstance(pad_width, dict):
        pairs = [(0, 0)] * ndim
        for axis, width in pad_width.items():
            pairs[axis] = (width, width) if isinstance(width, int) else tuple(width)
        pad_width = pairs
    widths = numpy.asarray(pad_width)
    if widths.dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    if widths.size and widths.min() < 0:
        raise ValueError("index can't contain negative values")
    if widths.size == 1 or (widths.size == 2 and widths.shape != (2, 1)):  # (one width, or one pair, for all)
        widths = widths.ravel()
    return [(int(b), int(a)) for b, a in numpy.broadcast_to(widths, (ndim, 2)).tolist()]


def dtype_argument(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The dtype a call asks for, positional or keyword: a numpy.dtype, None when not given, False
    when it is not one a backend should interpret (NumPy judges it)."""
    position = DTYPE_POSITION.get(func)
    value = args[position] if position is not None and len(args) > position else kwargs.get("dtype")
    if value is None:
        return None
    try:
        return numpy.dtype(value)
    except TypeError:
        return False


def creation_request(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[int, Any]:
    """(bytes, dtype argument or None) that a creation function call asks for (counted at 8 bytes
    an element); (-1, None) if unknown."""
    try:
        n = CREATIONS[func].elements(args, kwargs)
    except TypeError:
        return -1, None  # an argument NumPy will reject or interpret itself: leave it to NumPy
    position = DTYPE_POSITION.get(func)
    dtype = _arg(args, kwargs, position, "dtype") if position is not None else kwargs.get("dtype")
    return n * 8, dtype


# -- functions whose result outgrows their operands ---------------------------------------------

def _product_elements(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    return int(numpy.size(args[0])) * int(numpy.size(args[1])) if len(args) >= 2 else -1


#: function -> the number of elements its result has (from its arguments), for functions whose
#: result can be far larger than their operands: ``outer(u, v)`` of two 80 kB vectors is 800 MB.
#: Placement weighs such a call by its result, as host data of that size (npgpu/_dispatch.py).
EXPANDING: dict[Callable[..., Any], Callable[[tuple[Any, ...], dict[str, Any]], int]] = {
    numpy.outer: _product_elements,
    numpy.kron: _product_elements,
}


def result_request(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
    """Bytes of an expanding function's result (counted at 8 bytes an element); -1 if unknown."""
    try:
        return EXPANDING[func](args, kwargs) * 8
    except (TypeError, ValueError):
        return -1
