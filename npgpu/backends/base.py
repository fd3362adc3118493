"""The contract every npgpu backend fulfils.

The dispatcher (npgpu/_dispatch.py) decides *where* a call runs; a backend only
answers "can you run this, with these dtypes?" (a predicate, asked before
anything is launched) and then runs it on its own native arrays.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, ClassVar

import numpy
from numpy.lib.array_utils import normalize_axis_index

from .. import _fperr
from .._ops import DTYPE_POSITION, dtype_argument  # noqa: F401  (the backends' names for them)
from ..kernels import ir as _ir
from ..kernels import order as _order
from ..kernels import ufuncs as _table
from .costs import Costs
from .costs import measure as measure_costs
from .costs import thresholds as thresholds_from_costs


def native_numeric(dtype: Any) -> bool:
    """A bool, integer, float or complex dtype in native byte order (a Python scalar type, which
    the core passes for weak scalars, counts as one)."""
    if isinstance(dtype, type):
        return True
    return dtype.kind in "biufc" and dtype.isnative


#: how much of NumPy's overlap solver ``elements_overlap`` spends before it answers "they may"
_OVERLAP_WORK = 1000
#: where ``elements_overlap`` puts its stand-ins' first byte: their addresses are only compared
_STAND_IN_BASE = 1 << 40


def clip_ufunc(dtype: numpy.dtype, low: Any, high: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """The ufunc NumPy's clip of an array of ``dtype`` between ``low`` and ``high`` comes to, and its
    bounds: ``clip`` (NumPy's clip loop), ``maximum`` or ``minimum`` where one bound is None, or
    None where neither bounds anything. NumPy drops Python-int bounds beyond an integer dtype
    (NEP 50: no error)."""
    if dtype.kind in "iu":
        info = numpy.iinfo(dtype)
        low = None if type(low) is int and low <= info.min else low
        high = None if type(high) is int and high >= info.max else high
    if low is None and high is None:
        return None
    if low is None:
        return numpy.minimum, (high,)
    if high is None:
        return numpy.maximum, (low,)
    return numpy._core.umath.clip, (low, high)


def elements_overlap(offset_a: int, shape_a: tuple[int, ...], strides_a: tuple[int, ...], itemsize_a: int,
                     offset_b: int, shape_b: tuple[int, ...], strides_b: tuple[int, ...], itemsize_b: int) -> bool:
    """Whether two views of one allocation (byte offsets of their first elements, shapes, strides
    in bytes, item sizes) share a byte, for views whose bounds overlap: deriche's columns
    ``y[:, j]`` and ``y[:, j - 1]`` interleave, but write and read no common element, and a kernel
    can compute the one from the other in place, as NumPy does. Exact where NumPy's solver answers
    within ``_OVERLAP_WORK`` (at once for views of equal strides); True where it can't say."""
    # Unit dimensions select nothing: dropped, two one-dimensional views are solved here (a loop's
    # columns: 1-D already, taken without building the lists)
    if len(shape_a) == 1 and len(shape_b) == 1:
        dims_a, dims_b = ((shape_a[0], strides_a[0]),), ((shape_b[0], strides_b[0]),)
    else:
        dims_a = tuple((n, s) for n, s in zip(shape_a, strides_a, strict=True) if n != 1)
        dims_b = tuple((n, s) for n, s in zip(shape_b, strides_b, strict=True) if n != 1)
    if len(dims_a) == 1 and len(dims_b) == 1 and dims_a[0][1] == dims_b[0][1] and itemsize_a == itemsize_b:
        (n, stride), (m, _) = dims_a[0], dims_b[0]
        if abs(stride) >= itemsize_a:  # (elements of one view don't overlap each other)
            # element i of a and k of b share a byte iff |(i - k) * stride - d| < itemsize: i - k is
            # d / stride rounded down or up
            d = offset_b - offset_a
            q = d // stride
            return ((abs(q * stride - d) < itemsize_a and -(m - 1) <= q <= n - 1)
                    or (abs((q + 1) * stride - d) < itemsize_a and -(m - 1) <= q + 1 <= n - 1))
    stand_ins = _stand_ins((offset_a, shape_a, strides_a, itemsize_a), (offset_b, shape_b, strides_b, itemsize_b))
    try:
        return bool(numpy.shares_memory(*stand_ins, max_work=_OVERLAP_WORK))
    except numpy.exceptions.TooHardError:
        return True


def overlap_stand_ins(backend: Any, a: Any, b: Any) -> tuple[numpy.ndarray, numpy.ndarray]:
    """Host arrays laid out as natives ``a`` and ``b`` of ``backend`` are, relative to each other,
    whose memory nothing may read or write: for NumPy's own ``shares_memory`` and
    ``may_share_memory`` to answer for them (its answers, its TooHardError)."""
    return _stand_ins(*((backend.address(x), x.shape, x.strides, x.dtype.itemsize) for x in (a, b)))


def _stand_ins(*layouts: tuple[int, tuple[int, ...], tuple[int, ...], int]) -> tuple[numpy.ndarray, ...]:
    low = min(layout[0] for layout in layouts)
    return tuple(numpy.asarray(_StandIn(_STAND_IN_BASE + offset - low, shape, strides, itemsize))
                 for offset, shape, strides, itemsize in layouts)


class _StandIn:
    """Bytes at ``address`` laid out as a view is, for NumPy's overlap solver: it compares
    addresses only, and nothing reads or writes the memory an address names."""

    __slots__ = ("__array_interface__",)

    def __init__(self, address: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> None:
        self.__array_interface__ = {"version": 3, "shape": tuple(shape), "strides": tuple(strides),
                                    "typestr": f"|V{itemsize}", "data": (address, True)}


def axes_in_memory_order(shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple[int, ...] | None:
    """The axes from the largest stride to the smallest, or None when that is already their order."""
    if len(shape) < 2:
        return None
    moving = [abs(s) for n, s in zip(shape, strides) if n > 1]  # (axes of length 1 have no order)
    if all(moving[i] >= moving[i + 1] for i in range(len(moving) - 1)):
        return None
    return tuple(sorted(range(len(shape)), key=lambda axis: -abs(strides[axis]) if shape[axis] > 1 else 0))



class Backend:
    """Base class of the device backends.

    Native arrays are the backend's own array objects (``cupy.ndarray``, the
    OpenCL backend's strided buffer view, ...).  They must expose ``shape``,
    ``dtype``, ``strides`` (bytes, NumPy's convention), ``ndim``, ``size`` and
    ``nbytes``.  The dispatcher hands a backend natives, Python scalars, NumPy
    scalars, ``None``, and lists/tuples of those; never a host ``ndarray`` and
    never an ``npgpu`` device array.  For ufuncs, ``out`` (when given) is always a tuple
    with one entry per output, as in NEP 13, and the core has already resolved the loop
    dtypes with ``ufunc.resolve_dtypes`` (raising NumPy's error when there is no loop),
    checked broadcasting and ``casting``, and checked that Python ints fit their loop dtype.
    """

    #: Name used by ``npgpu.enable(backend=...)``.
    name: ClassVar[str] = "base"
    #: True when arrays live in the host's own memory (the numpy backend).
    is_host: ClassVar[bool] = False
    #: Whether an instance made before ``os.fork()`` still works in the child: not where it holds a
    #: device context, whose threads and queues stay in the parent (PoCL's calls then hang, CUDA's fail).
    survives_fork: ClassVar[bool] = True
    #: Whether native arrays export themselves through DLPack (``__dlpack__``); where they don't,
    #: a device array exports a host copy (kDLCPU), as DLPack's ``copy=None`` allows.
    dlpack_native: ClassVar[bool] = True
    #: Whether native arrays are in CUDA memory with ``__cuda_array_interface__`` (CuPy's).
    cuda_memory: ClassVar[bool] = False
    #: Arrays made from nothing (zeros, arange, random) go to the device from this size (bytes).
    default_threshold_bytes: ClassVar[int] = 1 << 20
    #: Work on host inputs smaller than this (bytes) stays in NumPy: the upload would not pay.
    upload_threshold_bytes: ClassVar[int] = 16 << 20

    #: Whether the placement thresholds come from this device's measured costs (``calibrate``);
    #: the class figures above are then the ceilings the measured ones never exceed.
    calibrated: ClassVar[bool] = False
    #: The measured costs (backends/costs.py) once ``calibrate`` ran, else None.
    costs: Costs | None = None

    def calibrate(self) -> None:
        """Measure this device's costs and set the placement thresholds from them (a few ms, once,
        when the backend is first made: ``enable``)."""
        self.costs = measure_costs(self)
        self.default_threshold_bytes, self.upload_threshold_bytes = thresholds_from_costs(
            self.costs, self.default_threshold_bytes, self.upload_threshold_bytes)

    #: Whether the backend's device is a GPU (``auto`` picks an OpenCL backend only then).
    @classmethod
    def has_gpu(cls) -> bool:
        return False

    #: NumPy function -> implementation taking natives; filled by subclasses.
    functions: ClassVar[dict[Callable[..., Any], Callable[..., Any]]] = {}

    # -- availability -------------------------------------------------------
    @classmethod
    def unavailable_reason(cls, **options: Any) -> str | None:
        """None when this backend can run here, else a sentence saying why not."""
        return None

    def describe(self) -> dict[str, Any]:
        """Device facts for ``npgpu info`` (name, memory, fp64, ...)."""
        return {"backend": self.name}

    # -- memory -------------------------------------------------------------
    def is_native(self, obj: Any) -> bool:
        raise NotImplementedError

    def from_host(self, array: numpy.ndarray) -> Any:
        """Copy a host array to the device; returns a native array."""
        raise NotImplementedError

    def from_host_in_layout(self, array: numpy.ndarray) -> Any:
        """``from_host`` keeping the layout of a host array whose axes are permuted (Fortran order,
        a transpose), as ``np.asarray`` keeps it: its axes in memory order are copied, then put back."""
        order = None if array.flags.c_contiguous else axes_in_memory_order(array.shape, array.strides)
        if order is not None and array.transpose(order).flags.c_contiguous:
            native = self.from_host(array.transpose(order))
            return self.call_function(numpy.transpose, (native, tuple(numpy.argsort(order))), {})
        return self.from_host(array)

    def to_host(self, native: Any) -> numpy.ndarray:
        """Copy a native array to a new host ``ndarray`` (same shape and dtype)."""
        raise NotImplementedError

    def sync(self) -> None:
        """Block until all queued device work has finished."""

    def host_view(self, native: Any) -> numpy.ndarray | None:
        """A native array's own memory as an ndarray the host can read in place, once the device's
        work on it has finished (devices that compute in host memory), or None: a copy is needed.
        For host work on device operands only; what the user gets is always a copy."""
        return None

    def may_share_memory(self, a: Any, b: Any) -> bool:
        """Whether two natives' memory bounds overlap (NumPy's ``may_share_memory``)."""
        raise NotImplementedError

    def shares_memory(self, a: Any, b: Any) -> bool:
        """Whether two natives share an element (NumPy's exact ``shares_memory``): what a write
        must know of what it reads (deriche's interleaved columns share none)."""
        raise NotImplementedError

    def address(self, native: Any) -> int:
        """The byte address (or offset into an aligned allocation) of a native's first element."""
        return int(getattr(native, "offset", 0))

    def view_offset(self, native: Any, root: Any) -> int | None:
        """The byte offset of ``native``'s first element in the memory of ``root`` (an array that
        owns its memory) when ``native`` views that memory, else None."""
        if getattr(native, "data", None) is not getattr(root, "data", 0):
            return None
        return self.address(native) - self.address(root)

    def same_view(self, a: Any, b: Any) -> bool:
        """Whether two natives are the very same view (same memory, offset, shape and strides)."""
        return (getattr(a, "data", None) is getattr(b, "data", 0) and getattr(a, "offset", 0) == getattr(b, "offset", 0)
                and a.shape == b.shape and a.strides == b.strides)

    def write(self, native: Any, host: numpy.ndarray) -> None:
        """Overwrite ``native`` (possibly a strided view) in place with ``host``'s values."""
        self.call_function(numpy.ndarray.__setitem__, (native, Ellipsis, self.from_host(host)), {})

    def fill_view(self, view: Any, value: Any) -> None:
        """Write NumPy scalar ``value`` (of ``view``'s dtype) into every element of ``view``, a
        basic view of device memory (``a[i, j] = 1.5``)."""
        self.call_function(numpy.ndarray.__setitem__, (view, Ellipsis, value), {})

    def basic_view(self, native: Any, key: Any) -> Any:
        """``native[key]`` for a key of ints, slices of ints, None and Ellipsis: a view (0-d for an
        all-int key), NumPy's IndexError out of range. The loop bodies' short road for views."""
        return self.call_function(numpy.ndarray.__getitem__, (native, key), {})

    #: whether element reads in a loop may fetch ahead along their step (npgpu/_scalar_reads.py;
    #: needs ``strided_view`` and ``address``)
    reads_ahead: bool = False

    def strided_view(self, native: Any, shape: tuple[int, ...], strides: tuple[int, ...]) -> Any:
        """A view of ``native``'s memory from its first element with ``shape`` and byte ``strides``
        (the caller has checked every element lies inside ``native``'s own extent:
        ``sliding_window_view``'s windows), or None where the backend can't make one."""
        return None

    #: whether selections by one boolean mask may gather its true positions, found once
    #: (``mask_positions`` and ``take_positions``: npgpu/_masks.py)
    keeps_mask_positions: bool = False

    def mask_positions(self, mask: Any) -> Any:
        """The flat (C-order) positions of ``mask``'s true elements, a native integer array."""
        raise NotImplementedError

    def take_positions(self, native: Any, positions: Any, ndim: int) -> Any:
        """``native[mask]`` for a mask over ``native``'s first ``ndim`` dimensions whose true
        positions are ``positions`` (``mask_positions``'): a new C-ordered array."""
        raise NotImplementedError

    def value_bounds(self, native: Any) -> tuple[int, int] | None:
        """(lowest, highest) element of an integer native, in one read back; None when it is empty
        (npgpu/_bounds.py: what an index array gathered from it may hold)."""
        raise NotImplementedError

    def put_positions(self, native: Any, positions: Any, ndim: int, value: Any) -> None:
        """``native[mask] = value`` for a C-contiguous ``native``, a mask as in ``take_positions``
        and a value of ``native``'s dtype (a NumPy scalar, or a native array broadcasting to the
        selection's shape, sharing no memory with ``native``)."""
        raise NotImplementedError

    # -- NumPy's compositions of ufuncs, run through this backend's own ufuncs (its kernels give
    # NumPy's rounding steps and floating-point reports) ------------------------------------------
    def numpy_diff(self, a: Any, n: int = 1, axis: int = -1) -> Any:
        """NumPy's diff: ``a[1:] - a[:-1]`` along ``axis`` (``!=`` for bool), ``n`` times, with its
        floating-point errors reported as subtract's."""
        n = operator.index(n)
        if n == 0:
            return a
        if n < 0:
            raise ValueError(f"order must be non-negative but got {n!r}")
        if a.ndim == 0:
            raise ValueError("diff requires input that is at least one dimensional")
        before = (slice(None),) * normalize_axis_index(axis, a.ndim)
        op = numpy.not_equal if a.dtype == numpy.bool_ else numpy.subtract
        for _ in range(n):
            a = self.apply_ufunc(op, self.basic_view(a, (*before, slice(1, None))),
                                 self.basic_view(a, (*before, slice(None, -1))))
        return a

    def numpy_round(self, a: Any, decimals: int, out: Any = None) -> Any:
        """NumPy's round of a float array (PyArray_Round): rint for decimals 0, else times
        10**decimals, rint and divided back (divided, rint, multiplied for negative decimals), each
        step in the array's dtype."""
        call = self.apply_ufunc
        if decimals == 0:
            return call(numpy.rint, a, out=out)
        first, second = (numpy.multiply, numpy.true_divide) if decimals > 0 else (numpy.true_divide, numpy.multiply)
        factor = 10.0 ** abs(decimals)  # (a Python float: NEP 50 keeps float32 arithmetic float32)
        return call(second, call(numpy.rint, call(first, a, factor)), factor, out=out)

    def apply_ufunc(self, ufunc: numpy.ufunc, *inputs: Any, out: Any = None) -> Any:
        """``ufunc(*inputs, out=out)`` through ``call_ufunc`` (for the compositions above)."""
        return self.call_ufunc(ufunc, "__call__", inputs, {} if out is None else {"out": (out,)})

    def prefers_host(self, func: Any) -> bool:
        """True for work this device does slower than NumPy (placement then keeps it on the host)."""
        return False

    def empty(self, shape: tuple[int, ...], dtype: Any) -> Any:
        """A new uninitialized native array (the output of a fused kernel)."""
        raise NotImplementedError

    # -- fusion (npgpu/lazy/) ---------------------------------------
    # A backend fuses when it launches IR graphs: it implements ``run_elementwise`` (then the
    # ``run_fused`` below uses it) or overrides ``run_fused`` and ``supports_fusion`` itself.

    @property
    def supports_fusion(self) -> bool:
        """Whether elementwise calls on this backend's arrays are recorded and fused."""
        return type(self).run_elementwise is not Backend.run_elementwise

    def run_elementwise(self, graph: Any, inputs: list[Any], outputs: list[Any], scalars: list[Any],
                        where: Any = None, errors: Any = None) -> None:
        """Run IR ``graph`` over ``inputs`` broadcast to ``outputs[0].shape`` into ``outputs``
        (``errors``: what the graph's floating-point error flags report, npgpu/_fperr.Launch)."""
        raise NotImplementedError

    def run_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...],
                  out: Any = None, errors: Any = None) -> Any:
        """Run an IR graph with one output over ``inputs`` broadcast to ``shape``; returns the output.
        ``errors``: what the graph's floating-point error flags report (npgpu/_fperr.Launch)."""
        if out is None:
            out = self.empty_result(shape, graph.out_dtypes[0], inputs)
        self.run_elementwise(graph, inputs, [out], scalars, None, errors)
        return out

    def cast_into(self, out: Any, a: Any, dtype: Any = None, label: str = "cast") -> Any:
        """``out[...] = a`` (broadcast; ``out`` None: a new array of ``dtype`` laid out as
        ``run_fused`` lays out ``a``'s), converted as NumPy's unsafe cast converts (the code
        generator's cast kernel: the host's C conversions), reporting the cast's floating-point
        errors where NumPy's errstate here asks for them, as NumPy's "... encountered in cast"
        (``label``: the name NumPy's message gives, "add" where a ufunc's loop casts into its
        out=): a narrowing float cast's overflow, a float into an integer's invalid value
        (kernels/ufuncs.cast_error_table). Returns ``out``."""
        src, dst = a.dtype, numpy.dtype(dtype) if out is None else out.dtype
        shape = a.shape if out is None else out.shape
        state = _fperr.current() if src != dst else None
        check = state.check & _table.cast_error_categories(src, dst) if state is not None else 0
        graph = _ir.cast_graph(src, dst, check)
        if not check:
            return self.run_fused(graph, [a], [], shape, out=out)
        launch = _fperr.call_launch(graph, state) if label == "cast" else _fperr.call_launch(None, state, (label,))
        out = self.run_fused(graph, [a], [], shape, out=out, errors=launch)
        _fperr.launched(self, launch)
        return out

    def report_accumulate(self, ufunc: numpy.ufunc, values: Any, result: Any, axis: int) -> None:
        """NumPy's errors of an accumulation already computed (cumsum's, cumprod's: "overflow" or
        "invalid value encountered in accumulate"), found after it: step k of NumPy's sequential
        loop is ``result[k-1] ufunc values[k]``, so one elementwise kernel applies the ufunc's
        conditions (kernels/ufuncs, UfuncFacts.errors: an infinity of finite operands, a NaN of
        non-NaN ones) to those pairs along ``axis``. ``values``: what was accumulated, in the
        result's dtype."""
        dtype = result.dtype
        if dtype.kind != "f" or values.dtype != dtype or result.ndim == 0 or result.shape[axis] < 2:
            return
        loop = (dtype,) * 3
        state = _fperr.current()
        check = state.check & _table.error_categories(ufunc, loop)
        if not check:
            return
        lead = (slice(None),) * axis
        steps = [self.basic_view(result, (*lead, slice(None, -1))), self.basic_view(values, (*lead, slice(1, None)))]
        graph = _accumulate_step(ufunc, dtype, check)
        launch = _fperr.call_launch(None, state, ("accumulate",))
        self.run_fused(graph, steps, [], steps[0].shape, errors=launch)
        _fperr.launched(self, launch)

    def empty_result(self, shape: tuple[int, ...], dtype: numpy.dtype, inputs: list[Any]) -> Any:
        """A new native for an elementwise result of ``shape`` from natives ``inputs``, laid out in
        the memory order NumPy gives it (kernels/order.result_axes: ``a.T * 2`` is F-ordered, as
        ``a.T`` is, which strides, flags and ``ravel(order="K")`` show); C order where the inputs
        are all C-contiguous, or don't say (natives without a ``c_contiguous`` attribute, as
        CuPy's: its backend allocates its own results)."""
        if len(shape) > 1 and not all(getattr(x, "c_contiguous", True) for x in inputs):
            return self.empty_in_order(shape, dtype, _order.result_axes(shape, [(x.shape, x.strides) for x in inputs]))
        return self.empty(shape, dtype)

    def empty_in_order(self, shape: tuple[int, ...], dtype: numpy.dtype, axes: list[int] | None) -> Any:
        """A new native of ``shape`` whose axes lie in memory in the order ``axes`` (outermost
        first; None: C order)."""
        if axes is None:
            return self.empty(shape, dtype)
        itemsize = numpy.dtype(dtype).itemsize
        strides = [0] * len(shape)
        for axis in reversed(axes):
            strides[axis] = itemsize
            itemsize *= shape[axis]
        buffer = self.empty(tuple(shape[axis] for axis in axes), dtype)
        return self.strided_view(buffer, tuple(shape), tuple(strides))

    @property
    def supports_map_reduce(self) -> bool:
        """Whether this backend reduces IR graphs in one kernel (it implements ``map_reduce``)."""
        return type(self).map_reduce is not Backend.map_reduce

    def map_reduce(self, graph: Any, inputs: list[Any], scalars: list[Any], op: str, axes: tuple[int, ...],
                   acc_dtype: numpy.dtype, initial: Any, shape: tuple[int, ...], errors: Any = None,
                   reduce_check: int = 0, numpy_order: bool = True) -> tuple[Any, Any]:
        """Reduce IR ``graph``'s output over ``axes`` with ``op`` (codegen.map_reduce's operations),
        accumulating in ``acc_dtype`` from ``initial`` (None: the identity): (result, arg index or None).
        ``numpy_order``: float sums add in NumPy's order (kernels/order.py), where the backend can."""
        raise NotImplementedError

    def reduce_fused(self, graph: Any, inputs: list[Any], scalars: list[Any], shape: tuple[int, ...], op: str,
                     axes: tuple[int, ...], errors: Any = None, reduce_check: int = 0) -> Any:
        """Reduce an IR graph's output over ``axes`` with ``op`` in one kernel; None when not possible.
        ``reduce_check``: the error categories the reduction itself reports (codegen.map_reduce)."""
        if not self.supports_map_reduce:
            return None
        acc = graph.out_dtypes[0]
        result, _ = self.map_reduce(graph, inputs, scalars, op, axes, acc, None, shape, errors,  # (None: the identity)
                                    reduce_check)
        return result

    # -- floating-point error flags (npgpu/_fperr.py) ----------------------------------------
    # Backends whose kernels flag errors give the flags a byte buffer; the core reads it when the
    # host waits for the device anyway.

    def error_buffer(self, nbytes: int) -> Any:
        """A zeroed device buffer of ``nbytes`` flag bytes."""
        raise NotImplementedError

    def read_errors(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """The first ``nbytes`` of a flag buffer, on the host (waits for the device)."""
        raise NotImplementedError

    def read_errors_later(self, buffer: Any, nbytes: int) -> numpy.ndarray:
        """``read_errors`` queued before a download: the host array fills in when the device gets there."""
        return self.read_errors(buffer, nbytes)

    def clear_errors(self, buffer: Any, nbytes: int) -> None:
        """Zero the first ``nbytes`` of a flag buffer."""
        raise NotImplementedError

    # -- compute ------------------------------------------------------------
    def supports_dtypes(self, dtypes: tuple[numpy.dtype, ...]) -> bool:
        """False when a dtype can't live on this device at all (e.g. float64 without fp64, or a
        byte order other than the device's: '>f8' stays with NumPy)."""
        return all(native_numeric(dt) for dt in dtypes)

    def converts(self, source: numpy.dtype, target: numpy.dtype) -> bool:
        """Whether this device converts an operand of ``source`` into a ufunc loop's ``target`` as
        NumPy does (the dispatcher asks for each array operand the loop converts)."""
        return True

    def supports_ufunc(
        self, ufunc: numpy.ufunc, method: str, dtypes: tuple[numpy.dtype, ...], kwargs: dict[str, Any]
    ) -> bool:
        """Can ``getattr(ufunc, method)`` run here with operand/loop dtypes ``dtypes``?"""
        raise NotImplementedError

    def call_ufunc(self, ufunc: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any],
                   loop: tuple[numpy.dtype, ...] | None = None) -> Any:
        """``getattr(ufunc, method)(*inputs, **kwargs)`` here. For ``__call__`` the core passes the
        ``loop`` it resolved (NumPy's ``resolve_dtypes``; see the class docstring): a backend uses it
        rather than resolving again. None where the caller has none (the backend resolves)."""
        raise NotImplementedError

    def supports_function(
        self, func: Callable[..., Any], dtypes: tuple[numpy.dtype, ...], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> bool:
        """Can ``func`` (a NumPy function, or an ``ndarray`` method) run here?"""
        return func in self.functions and self.supports_dtypes(dtypes)

    def call_function(self, func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return self.functions[func](*args, **kwargs)

    # -- random numbers: NumPy's streams computed on the device (backends/random_kernels.py) --------
    @property
    def random_streams(self) -> frozenset[str]:
        """NumPy bit generators (``state["bit_generator"]``: "PCG64", "MT19937") whose ``random()``
        doubles ``random_doubles`` computes on this device, bit for bit."""
        return frozenset()

    def random_doubles(self, state: dict[str, Any], shape: tuple[int, ...]) -> tuple[Any, dict[str, Any]]:
        """NumPy's ``Generator(bit_generator).random(shape)`` for a bit generator in ``state``:
        (a native float64 array of ``shape``, the bit generator's state after the draw)."""
        raise NotImplementedError

    # -- random numbers: the device's own streams (npgpu/_random.py, "device" random mode) -------
    @property
    def has_random_stream(self) -> bool:
        """Whether the device has random streams of its own (it implements ``random_call``)."""
        return type(self).random_call is not Backend.random_call

    def supports_random(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``numpy.random.<name>(*args, **kwargs)`` (the legacy global functions) runs here."""
        return False

    def random_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``numpy.random.<name>(*args, **kwargs)`` drawn from the device's own stream: a native."""
        raise NotImplementedError

    def random_seed(self, seed: Any) -> None:
        """Seed the device's own legacy stream (``numpy.random.seed``); nothing to do without one."""

    def supports_generator(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether ``Generator.<name>(*args, **kwargs)`` runs on a device generator."""
        return False

    def random_generator(self, seed: Any) -> Any:
        """A device generator seeded with ``seed`` (whose methods return natives)."""
        raise NotImplementedError


@functools.cache
def _accumulate_step(ufunc: numpy.ufunc, dtype: numpy.dtype, check: int) -> Any:
    """The one-node graph of an accumulation's step (Backend.report_accumulate), built once."""
    loop = (dtype,) * 3
    return _ir.ufunc_graph(ufunc, loop, ("array", "array"), loop[:2], loop[2:], check)
