"""THE decision point: every npgpu call (namespace function, __array_ufunc__, __array_function__
and device-array method) ends here and is sent to the device, to NumPy, or to the fallback.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy

from . import (
    _callsite,
    _config,
    _masks,
    _operands,
    _ops,
    _placement,
    _report,
    _residency,
    _scalar_reads,
    _transfer,
)
from ._array import _SCALAR_VALUES, MOVED, DeviceArray, ResidentArray, _host_of, tracked
from ._errors import FALLBACK_FAULTS, DeviceMemoryError
from ._fallback import fallback, place_result, run_on_host
from ._report import notify
from ._transfer import (
    download_scalar,
    holds_device_array,
    scan,
    to_native_tree,
    upload,
    upload_bytes,
    upload_operand,
    view_of,
    wrap,
)
from .backends.base import Backend as _Backend
from .backends.base import overlap_stand_ins
from .kernels import ir as _ir
from .kernels.ufuncs import is_supported_dtype as _kernel_dtype
from .lazy import materialize as _lazy
from .lazy import recorder as _recorder

_SCALARS = (int, float, complex, bool, numpy.generic)
MUTATES_FIRST = _ops.MUTATES_FIRST
_code_kind = _callsite.CODE_KIND


def _proxy_tree(obj: Any) -> Any:
    if isinstance(obj, DeviceArray):
        return obj._host_proxy()
    if isinstance(obj, (list, tuple)) and _transfer.has_arrays(obj):
        return type(obj)(_proxy_tree(item) for item in obj)
    return obj


def _memory_overlap(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``shares_memory`` / ``may_share_memory`` of two device arrays: NumPy's answer (and its
    TooHardError for ``max_work``) for host stand-ins laid out as their memory is."""
    a, b = args[0], args[1]
    if isinstance(a, DeviceArray) and isinstance(b, DeviceArray):
        backend = a._backend
        if b._backend is not backend:
            return False
        native_a, native_b = a._native, b._native
        if not backend.may_share_memory(native_a, native_b):
            # (False, or NumPy's error for bad arguments)
            return func(numpy.empty(0), numpy.empty(0), *args[2:], **kwargs)
        return func(*overlap_stand_ins(backend, native_a, native_b), *args[2:], **kwargs)
    if isinstance(a, DeviceArray) or isinstance(b, DeviceArray):
        return False  # device and host memory never overlap
    return func(*args, **kwargs)


#: NumPy scalar types every backend takes as operands (their dtypes are checked no further)
_PLAIN_SCALARS = frozenset({numpy.float64, numpy.float32, numpy.int64, numpy.int32, numpy.bool_, numpy.intp})


def _dtypes(devices: list[DeviceArray], hosts: list[numpy.ndarray]) -> tuple[numpy.dtype, ...]:
    return tuple(a.dtype for a in devices) + tuple(a.dtype for a in hosts)


# -- functions -------------------------------------------------------------------------------

def function(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Run NumPy function (or ndarray method) ``func`` where it belongs."""
    if func in _ops.IN_MEMORY_CONSTRUCTORS and args and type(args[0]) is DeviceArray:
        return _same_array(args[0], _function(func, args, kwargs))
    return _function(func, args, kwargs)


def _operands_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[DeviceArray], list[numpy.ndarray]]:
    """The device arrays and host arrays among a call's arguments."""
    devices: list[DeviceArray] = []
    hosts: list[numpy.ndarray] = []
    for value in args:
        scan(value, devices, hosts)
    for value in kwargs.values():
        scan(value, devices, hosts)
    return devices, hosts


def _as_one_array(items: Any) -> Any:
    """A list of arrays NumPy takes as one array (``np.sum([a, b])``): NumPy's asarray of it, as
    npgpu's asarray makes it (device arrays stacked on their device)."""
    return function(numpy.asarray, (items,), {})


def _raise_numpys_out_error(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """NumPy's ValueError for a call whose device function refused its ``out`` (a reduction's of
    the wrong shape: ``nanmax(a, out=zeros(2))``), asked of NumPy on stand-ins: device operands as
    one element seen through zero strides, outputs as new host arrays of their shapes. Returns
    where NumPy takes the call."""
    def stand_in(x: Any, output: bool = False) -> Any:
        if type(x) is tuple:
            return tuple(stand_in(item, output) for item in x)
        if type(x) is not DeviceArray:
            return x
        if output:
            return numpy.empty(x.shape, x.dtype)
        return numpy.lib.stride_tricks.as_strided(numpy.zeros(1, x.dtype), x.shape, (0,) * x.ndim)

    try:
        func(*map(stand_in, args), **{k: stand_in(v, k == "out") for k, v in kwargs.items()})
    except ValueError as numpys:
        raise numpys from None


def _same_array(array: DeviceArray, result: Any) -> Any:
    """``array`` itself where ``asarray(array)`` (``array(copy=None)``, ``ascontiguousarray``, ...)
    gave the very same view of its memory: NumPy returns its argument when it neither copies nor
    reshapes (``asarray(a) is a``), and code tests that. (Read-only arrays too: the view made for
    one came back writable.)"""
    if (type(result) is DeviceArray and result is not array and result._backend is array._backend
            and result._pending is None and array._pending is None
            and array._backend.same_view(result._device_data, array._device_data)):
        return array
    return result


def _function(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if func in _REDUCTIONS and args:
        first = type(args[0])
        if first is DeviceArray:
            reduced = _reduce_array(func, args, kwargs)
            if reduced is not NotImplemented:
                return reduced
        elif first is numpy.ndarray and len(args) == 1:
            reduced = _host_reduction(func, args[0], kwargs)
            if reduced is not NotImplemented:
                return reduced
    if func in _VIEWING and args and type(args[0]) is DeviceArray and "like" not in kwargs:
        viewed = _VIEWING[func](*args, **kwargs)
        if viewed is not NotImplemented:
            return viewed
    if MOVED[0]:  # arrays residency moved to the host are host data (npgpu/_residency.py)
        hosted, kwargs_hosted = _host_of(args), _host_of(kwargs)
        if func in _ops.IN_MEMORY_CONSTRUCTORS and hosted is not args and "device" not in kwargs:
            # NumPy's answer on host data, and the same array where NumPy's is the same array
            # (``asarray(a) is a``: writes through it must reach ``a``)
            result = func(*hosted, **kwargs_hosted)
            _report.record(func, "host")
            return args[0] if type(args[0]) is ResidentArray and result is hosted[0] else result
        args, kwargs = hosted, kwargs_hosted
    if func is numpy.copyto and _copy_in_numpys_order(args, kwargs):
        return None
    if func is numpy.place and _place_in_numpys_order(args, kwargs):
        return None
    if func in _ops.IN_PLACE_UNLESS_COPY and args and isinstance(args[0], DeviceArray):
        position = _ops.IN_PLACE_UNLESS_COPY[func]
        copy = args[position] if len(args) > position else kwargs.get("copy", True)
        if not copy:  # (NumPy writes into the array and returns it: a copy's values written back)
            if args[0]._readonly:
                raise ValueError("assignment destination is read-only")
            if len(args) > position:
                result = function(func, (*args[:position], True, *args[position + 1:]), kwargs)
            else:
                result = function(func, args, {**kwargs, "copy": True})
            args[0][...] = result
            return args[0]
    if "device" in kwargs and func in _ops.DEVICE_KEYWORD:
        return _on_named_device(func, args, kwargs)
    if func in _ops.METADATA:
        return func(*(_proxy_tree(a) for a in args), **kwargs)
    if func in _ops.MEMORY:
        return _memory_overlap(func, args, kwargs)
    state = _config.current()
    position = _out_position(func)
    if position is not None and len(args) == position + 1:  # out given positionally: np.outer(a, b, out)
        if "out" in kwargs:
            raise TypeError(f"{getattr(func, '__name__', func)}() got multiple values for argument 'out'")
        args, kwargs = args[:position] + args[position + 1:], {**kwargs, "out": args[position]}
    devices, hosts = _operands_of(args, kwargs)
    mutated = _mutated(func, args, kwargs)
    hidden = None if devices else next((d for v in (*args, *kwargs.values()) if type(v) in (list, tuple)
                                         for d in (holds_device_array(v),) if d is not None), None)
    if hidden is not None:
        # device arrays behind numbers in a list (np.block([1.0, d])): NumPy runs it on host copies,
        # and a large result goes back to their device
        return place_result(run_on_host(func, func, args, kwargs, mutated, record="host"), state, (hidden,))
    backend = devices[0]._backend if devices else state.backend
    if backend is None or backend.is_host or not state.enabled or _subclassed(hosts):
        return run_on_host(func, func, args, kwargs, mutated, record="host" if devices or state.enabled else None)
    if func in _ops.HOST_IO:  # files and text: host work by nature, not a fallback
        return run_on_host(func, func, args, kwargs, mutated, record="host")
    if devices:  # lists and tuples that are array data become arrays, placed like any host operand
        converted = _operands.function_arguments(func, args, kwargs, _as_one_array)
        if converted is None:  # (NumPy decides what the data means: its result goes where results go)
            return place_result(run_on_host(func, func, args, kwargs, mutated, record="host"), state, args)
        if converted[0] is not args or converted[1] is not kwargs:
            args, kwargs = converted
            devices, hosts = _operands_of(args, kwargs)
            if not devices:  # (a device array given as a shape was the only one: placed afresh)
                return function(func, args, kwargs)
        if _host_out(kwargs):  # NumPy writes into it; a device call would write into an uploaded copy
            return fallback(func, func, args, kwargs, mutated, state, reason="out= is a host array")
    if not devices and func in _ops.CONSTRUCTORS:
        return _construct(func, args, kwargs, backend, state)
    if not devices and func in _ops.GRIDS:
        return place_grid(func, func(*args, **kwargs), state)
    if backend.prefers_host(func):
        return _on_host_by_choice(func, func, args, kwargs, mutated, state, bool(devices),
                                  _rule(backend, _placement.FASTER_ON_HOST, devices, hosts))
    origin = rule = None
    if not devices:
        if func in _ops.REDUCTIONS and hosts and _one_pass_stays(backend, hosts):
            _report.record(func, "host", **_rule(backend, _placement.ONE_PASS_ON_HOST, devices, hosts))
            return func(*args, **kwargs)
        offload = _offload_host_call(func, args, kwargs, hosts, backend, state)
        made = func in _ops.CREATIONS and not hosts
        if made and func in backend.functions and (offload or state.routes_creations):
            origin = _residency.origin(state, func, _ops.creation_request(func, args, kwargs)[0])
            if _residency.learned(state, origin):
                _report.record(func, "host", rule=_placement.LEARNED_ON_HOST)
                return func(*args, **kwargs)
            if not offload and _residency.learned_on_device(state, origin):
                offload, rule = True, _placement.LEARNED_ON_DEVICE
        if not offload:
            if made:
                _report.record(func, "host", **_made_rule(backend, _placement.MADE_IN_NUMPY, func, args, kwargs))
            else:
                _report.record(func, "host", **_rule(backend, _placement.BELOW_THRESHOLD, devices, hosts))
            return func(*args, **kwargs)
        if made and rule is None:
            rule = _placement.MADE_ON_DEVICE
        if not made and hosts:  # (host data the call moves: an entry, as asarray is)
            origin = _host_origin(state, func, hosts)
            if _residency.learned(state, origin):
                _report.record(func, "host", rule=_placement.LEARNED_ON_HOST)
                return func(*args, **kwargs)
    if func in _ops.LIKE_CREATIONS and args and type(args[0]) in (DeviceArray, numpy.ndarray):
        prototype = args[0]  # (on the device, or host data large enough to have moved there)
        origin = _residency.origin(state, func, prototype.shape, prototype.dtype.str, kwargs.get("dtype"),
                                   kwargs.get("shape"))
        if _residency.learned(state, origin):
            _report.record(func, "host", rule=_placement.LEARNED_ON_HOST)
            if type(prototype) is DeviceArray:  # (NumPy's result for a C-ordered prototype of that shape)
                args = (numpy.empty(prototype.shape, prototype.dtype), *args[1:])
            return func(*args, **kwargs)
    if devices and _lazy.pending_count() and func in _ops.REDUCTIONS:
        reduced = _reduce_pending(func, args, kwargs, backend)
        if reduced is not None:
            if tracked and type(reduced) is not DeviceArray:  # (a NumPy scalar: read back)
                _residency.charge_moves(devices, 0)
            return reduced
    if not devices:  # host data the device takes: its lists and tuples of array data too (np.where(big > 0, [1, 2], 0))
        if any(type(v) is list or type(v) is tuple for v in (*args, *kwargs.values())):
            converted = _operands.function_arguments(func, args, kwargs, _as_one_array)
            if converted is None:
                _report.record(func, "host")
                return func(*args, **kwargs)
            args, kwargs = converted
            devices, hosts = _operands_of(args, kwargs)
        if _host_out(kwargs):  # (the device would write into an uploaded copy of it)
            _report.record(func, "host")
            return func(*args, **kwargs)
    _before_writes(mutated)
    # (NumPy scalars among the arguments are operands too: where(c, longdouble(0), longdouble(1)))
    dtypes = _dtypes(devices, hosts) + tuple(v.dtype for v in (*args, *kwargs.values())
                                             if isinstance(v, numpy.generic) and type(v) not in _PLAIN_SCALARS)
    refused = func in _ops.NUMPY_REFUSES and _ops.NUMPY_REFUSES[func](args, kwargs)
    if refused or not backend.supports_function(func, dtypes, args, kwargs):
        if not devices:  # nothing forced the device: plain host work, not a fallback
            _report.record(func, "host")
            return func(*args, **kwargs)
        reason = "NumPy refuses these arguments" if refused else _reason(func, dtypes, kwargs, backend, args)
        return fallback(func, func, args, kwargs, mutated, state, reason=reason)
    if hosts and tracked:
        _residency.charge_moves(devices, sum(h.nbytes for h in hosts))
    try:
        nargs = tuple(to_native_tree(a, backend, func) for a in args)
        nkwargs = {k: to_native_tree(v, backend, func) for k, v in kwargs.items()}
        result = backend.call_function(func, nargs, nkwargs)
    except FALLBACK_FAULTS as fault:  # [device faults] no device memory, or a kernel that won't build
        if mutated:  # (part of the write may have happened: no second try on the host)
            raise
        return fallback(func, func, args, kwargs, mutated, state, reason=fault.reason)
    except ValueError:
        if kwargs.get("out") is not None:  # (an out= NumPy refuses: NumPy's error says why, as NumPy words it)
            _raise_numpys_out_error(func, args, kwargs)
        raise
    if rule is None:
        rule = _placement.DEVICE_OPERANDS if devices else _placement.ABOVE_THRESHOLD
    if rule in _MADE_RULES:
        _report.record(func, "device", **_made_rule(backend, rule, func, args, kwargs))
    else:
        _report.record(func, "device", **_rule(backend, rule, devices, hosts))
    out = kwargs.get("out")
    if isinstance(out, DeviceArray):
        return out
    if func is numpy.ndarray.__getitem__:
        return wrap(result, backend, func, not _keeps_dimensions(args[1]), devices)
    wrapped = _ops.named_result(func, args, kwargs, wrap(result, backend, func, True, devices))
    if origin is not None:
        _residency.track(wrapped, state, origin)
    elif tracked and devices and isinstance(wrapped, numpy.generic):
        _residency.charge_moves(devices, 0)  # (a scalar read back: its round trip)
    return wrapped


_BASIC_INDEX_TYPES = frozenset({int, type(None), type(Ellipsis)})
_GETITEM = numpy.ndarray.__getitem__
#: (backend, dtype) -> whether the backend indexes arrays of that dtype (supports_function's answer)
_INDEXES: dict[tuple[Any, numpy.dtype], bool] = {}


def basic_getitem(array: DeviceArray, key: Any, frame: Any) -> Any:
    """``array[key]`` for a key of ints, slices of ints, None and Ellipsis on a computed device
    array: the backend's view at once, without the general path's scan of the arguments (nothing
    in such a key can be host data or a write); for a boolean device mask, its selection
    (``_mask_getitem``); NotImplemented for anything else."""
    state = _config.current()
    backend = array._backend
    if not state.enabled or backend.is_host:
        return NotImplemented
    if type(key) is DeviceArray:
        return _mask_getitem(array, key, backend, frame)
    if not _basic_key(key):
        return NotImplemented
    native = array._device_data
    dtype = native.dtype
    ok = _INDEXES.get((backend, dtype))
    if ok is None:
        ok = _INDEXES[(backend, dtype)] = backend.supports_function(_GETITEM, (dtype,), (native, 0), {})
    if not ok:
        return NotImplemented
    result = _view(array, native, key, backend)
    _report.count(_GETITEM, "device", frame)
    # wrap(result, backend, _GETITEM, not keeps, [array]), inlined (every view of a loop body):
    # (_keeps_dimensions for a basic key, whose items compare with Ellipsis safely: `in`, no generator)
    if not result.ndim and not (key is Ellipsis or (type(key) is tuple and Ellipsis in key)):
        if frame is None:
            return download_scalar(result, backend, _GETITEM)
        owner = array if array._base is None else array._base  # (the memory's owner: its native's extent)
        return _scalar_reads.read(result, owner._device_data, backend, (id(frame.f_code), frame.f_lasti),
                                  functools.partial(download_scalar, backend=backend, func=_GETITEM))
    root = getattr(result, "base", None)
    if root is not None:
        view = view_of(result, root, backend, array, False)
        if view is not None:
            return view
    return DeviceArray(result, backend)


#: (backend, dtype) -> whether the backend selects elements of arrays of that dtype by a boolean mask
_MASKS: dict[tuple[Any, numpy.dtype], bool] = {}


def _mask_getitem(array: DeviceArray, mask: DeviceArray, backend: Any, frame: Any) -> Any:
    """``array[mask]`` for a boolean device mask of the same backend whose shape is the array's
    leading shape: the backend's selection at once, without the general path's scan of the
    arguments (mandelbrot2 makes nine a step). NotImplemented for any other mask (the general path
    gives NumPy's errors) and where the device fails (it falls back there, counted)."""
    if (mask._backend is not backend or mask.dtype.kind != "b" or not mask.ndim
            or mask.shape != array.shape[:mask.ndim]):
        return NotImplemented
    native = array._device_data
    ok = _MASKS.get((backend, array.dtype))
    if ok is None:
        ok = _MASKS[(backend, array.dtype)] = (not backend.prefers_host(_GETITEM) and backend.supports_function(
            _GETITEM, (array.dtype, mask.dtype), (array, mask), {}))
    if not ok:
        return NotImplemented
    try:
        if mask._pending is not None:
            mask._native  # noqa: B018  (computed: its positions are of its values)
        result = _masks.select(array, mask, backend)
        if result is None:
            result = backend.call_function(_GETITEM, (native, mask._native), {})
    except FALLBACK_FAULTS:  # [device faults] the general path falls back, counted
        return NotImplemented
    _report.count(_GETITEM, "device", frame)
    return wrap(result, backend, _GETITEM, True, [array])


#: Views an array keeps (``_view``); past this many, it forgets the oldest (``a[i]`` over every row)
_VIEWS_MAX = 16
#: Slices are hashable from Python 3.12; before, a key's slices are spelled as tuples for the dict
_HASHABLE_SLICES = sys.version_info >= (3, 12)


def _view(array: DeviceArray, native: Any, key: Any, backend: Any) -> Any:
    """``backend.basic_view(native, key)`` for a basic ``key`` of ``array`` (whose native is
    ``native``), kept on the array: a loop body makes the same views every iteration (fdtd_2d's
    ``hz[:-1, :-1]``), and a CuPy view cost 4-6 us of the H200's CPU each. A native is never
    changed in place (setting an array's shape gives it a new one), so a kept view stays what
    ``native[key]`` gives while the array holds that native; it forgets them when it takes another."""
    spelled = key if _HASHABLE_SLICES else _spelled(key)
    views = array._views
    if views is None or views[0] is not native:
        views = array._views = (native, {})
    kept = views[1]
    found = kept.get(spelled)
    if found is None:
        found = backend.basic_view(native, key)
        if len(kept) >= _VIEWS_MAX:
            try:  # (the oldest: a column sweep's next statement reads the last few again)
                del kept[next(iter(kept))]
            except (RuntimeError, StopIteration, KeyError):  # (another thread changed it meanwhile)
                kept.clear()
        kept[spelled] = found
    return found


def _spelled(key: Any) -> Any:
    """A basic key with its slices spelled as tuples led by ``slice`` (no basic key holds that
    type): hashable before Python 3.12, and equal only where the keys are."""
    if type(key) is tuple:
        return tuple((slice, k.start, k.stop, k.step) if type(k) is slice else k for k in key)
    return (slice, key.start, key.stop, key.step) if type(key) is slice else key


def _basic_key(key: Any) -> bool:
    for k in key if type(key) is tuple else (key,):
        t = type(k)
        if t is slice:  # (no generator: this runs for every index of a loop body)
            start, stop, step = k.start, k.stop, k.step
            if ((start is not None and type(start) is not int) or (stop is not None and type(stop) is not int)
                    or (step is not None and type(step) is not int)):
                return False
        elif t not in _BASIC_INDEX_TYPES:
            return False
    return True


def basic_setitem(array: DeviceArray, key: Any, value: Any, frame: Any, temporary: bool) -> Any:
    """``array[key] = value`` for a basic key and a scalar (``_fill_basic``), for index arrays or
    a mask on the device, or a basic key and any other device value (``_indexed_setitem``), or a
    device array of the same backend in two cases
    the general path would spend a kernel on: ``value`` is the very view ``array[key]`` (what
    ``a[1:] -= x`` writes back after its in-place kernel: nothing to do), or ``value`` is a pending
    expression of the view's dtype and shape that only this statement holds, reading no memory that
    overlaps the view but as the same view (its kernel then writes into the view directly).
    NotImplemented otherwise (and for a read-only ``array``: the general path raises)."""
    state = _config.current()
    backend = array._backend
    if not state.enabled or backend.is_host:
        return NotImplemented
    if type(key) is DeviceArray or (type(key) is tuple and key and all(type(k) is DeviceArray for k in key)):
        if type(key) is DeviceArray and type(value) is DeviceArray and value._backend is backend and \
                value._pending is None and key._backend is backend:
            native, mask = array._device_data, key._native
            found = _sequential_mask_write(native, mask, value._device_data, backend)
            if found is not None:  # (NumPy's values, put into a host copy written back: one fallback)
                host = backend.to_host(native)
                host[backend.to_host(mask)] = found
                _lazy.before_write(backend, native)  # (recorded work reading this memory runs on the old values)
                backend.write(native, host)
                _report.record(_SETITEM, "fallback", reason=_SEQUENTIAL_COPY)
                return None
        return _indexed_setitem(array, key, value, backend, frame)
    if not _basic_key(key):
        return NotImplemented
    if type(value) is not DeviceArray:
        return _fill_basic(array, key, value, backend, frame)
    if value._backend is not backend:
        return NotImplemented
    view = _view(array, array._device_data, key, backend)
    if not backend.is_native(view):
        return NotImplemented
    if value._pending is None:
        data = value._device_data
        if data is not view and not backend.same_view(view, data):
            if backend.supports_fusion and _stored_by_kernel(value.dtype, view.dtype):
                return _copy_basic(view, value, backend, frame)
            _check_broadcast(value.shape, view.shape)
            return _indexed_setitem(array, key, value, backend, frame)  # (a copy into the view)
    elif not (temporary and value.dtype == view.dtype and value.shape == view.shape and state.fusion):
        if value.dtype != view.dtype and backend.supports_fusion and _stored_by_kernel(value.dtype, view.dtype):
            # (NumPy's temporary in its own dtype, then the assignment's cast, whose overflow NumPy
            # names "cast": an expression's kernel storing narrower would name its last ufunc)
            value._native  # noqa: B018
            return _copy_basic(view, value, backend, frame)
        return _indexed_setitem(array, key, value, backend, frame)
    elif not _lazy.write_into(value, backend, view, registered=True):
        return _indexed_setitem(array, key, value, backend, frame)
    _report.count(numpy.ndarray.__setitem__, "device", frame)
    return None


_SETITEM = numpy.ndarray.__setitem__


def _check_broadcast(value_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """NumPy's error where a value of ``value_shape`` does not broadcast into a view of ``shape``
    (leading unit dimensions of the value are dropped, as NumPy's assignment drops them)."""
    extra = max(len(value_shape) - len(shape), 0)
    if any(n != 1 for n in value_shape[:extra]) or any(
            s != d and s != 1 for s, d in zip(reversed(value_shape), reversed(shape))):
        _raise_broadcast_error(value_shape, shape)


def _raise_broadcast_error(value_shape: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """NumPy's own error for a write of a value of ``value_shape`` into a view of ``shape`` that it
    does not broadcast into (its assignment of zero-strided stand-ins: nothing allocated)."""
    stand_in = numpy.zeros(1, dtype=bool)
    target = numpy.lib.stride_tricks.as_strided(stand_in, shape, (0,) * len(shape), writeable=True)
    target[...] = numpy.lib.stride_tricks.as_strided(stand_in, value_shape, (0,) * len(value_shape))
    raise AssertionError(f"NumPy wrote shape {value_shape} into {shape}")  # (the caller checked it can't)


def _stored_by_kernel(src: numpy.dtype, dst: numpy.dtype) -> bool:
    """Whether a write of ``src`` values into memory of dtype ``dst`` is the code generator's
    store: both dtypes its kernels take (bool, integers, float32, float64; complex and float16
    take the general path). Its casts are NumPy's, the conversions of the host's C (300.0 into int8
    is 44, where CuPy's own copy saturates to 127), and a narrowing float store reports overflow as
    NumPy's "overflow encountered in cast"."""
    return _kernel_dtype(src) and _kernel_dtype(dst)


def _copy_basic(view: Any, value: DeviceArray, backend: Any, frame: Any) -> Any:
    """``array[basic key] = value`` for a computed device value (correlation's ``corr[i, i + 1:M] =
    row``; resnet's float64 pixel sums written into its float32 output): one kernel of the code
    generator into the view, casting as NumPy's assignment does (``_stored_by_kernel``), without
    the general write's checks of index arrays and bounds (a basic key has none). A value whose
    shape NumPy would not broadcast into the view raises NumPy's error. A value sharing memory
    with the view is copied first, as NumPy reads all of it before it writes (``a[1:] = a[:-1]``)."""
    source = value._device_data
    _check_broadcast(source.shape, view.shape)
    extra = source.ndim - view.ndim
    if extra > 0:  # (NumPy drops leading unit dimensions of the value)
        source = backend.basic_view(source, (0,) * extra)
    _lazy.before_write(backend, view)  # (recorded work reading this memory runs on the old values)
    if backend.shares_memory(view, source):
        host = _sequential_copy(view, source, backend)
        if host is not None:
            backend.write(view, host)
            _report.record(_SETITEM, "fallback", reason=_SEQUENTIAL_COPY)
            return None
        source = backend.run_fused(_ir.cast_graph(source.dtype, source.dtype), [source], [], source.shape)
    backend.cast_into(view, source)
    _report.count(_SETITEM, "device", frame)
    return None


_SEQUENTIAL_COPY = ("NumPy writes element by element, without a copy of the value, where the value overlaps "
                    "the destination (one-dimensional views of unequal strides, a boolean mask's write): "
                    "the values are found on the host")


def _sequential_values(dst: numpy.ndarray, src: numpy.ndarray, values: numpy.ndarray,
                       runs: numpy.ndarray | None = None) -> numpy.ndarray:
    """What an element-by-element copy writes: step ``i`` reads the element at byte address
    ``src[i]`` and writes it at ``dst[i]`` (unique addresses); ``values[i]``: what ``src[i]``
    held before the copy. A step that reads an element an earlier step wrote gets that step's
    value, down the chain of earlier writes. ``runs``: a nondecreasing number per step; steps of
    one number are one memmove (each reads before any of them writes), where NumPy's loop moves a
    contiguous run of elements at once."""
    n = len(dst)
    steps = numpy.arange(n)
    runs = steps if runs is None else runs
    order = numpy.argsort(dst, kind="stable")
    sorted_dst = dst[order]
    found = numpy.minimum(numpy.searchsorted(sorted_dst, src), n - 1)
    writer = order[found]
    parent = numpy.where((sorted_dst[found] == src) & (runs[writer] < runs), writer, steps)
    while True:
        further = parent[parent]
        if numpy.array_equal(further, parent):
            return values[parent]
        parent = further


def _sequential_copy(view: Any, source: Any, backend: Any, where: numpy.ndarray | None = None) -> numpy.ndarray | None:
    """NumPy's values for ``view[...] = source``, one-dimensional views of one dtype overlapping in
    memory, whose strides point the same way but differ (``a[2:7] = a[::2]``); None where NumPy's
    answer is that of a copy of the source taken first. NumPy takes no copy there: its loop
    writes element by element, backwards where the source starts below the destination and
    reaches it, so an element read after its memory was written gets the new value. (It copies
    first for more dimensions and for opposite directions; equal strides and a broadcast source
    give the copy's answer either way.) ``where``: a boolean host array of the view's shape; the
    steps it leaves out read and write nothing (``copyto``'s ``where=``)."""
    if view.ndim != 1 or source.ndim != 1 or source.dtype != view.dtype:
        return None
    n = view.shape[0]
    sd, ss = view.strides[0], source.strides[0]
    if n < 2 or source.shape[0] != n or sd * ss <= 0 or sd == ss:
        return None
    d0, s0 = backend.address(view), backend.address(source)
    steps = numpy.arange(n)
    if sd < 0:  # (NumPy's iteration turns the destination's stride positive, reversing both)
        steps = steps[::-1]
        d0, s0, sd, ss = d0 + (n - 1) * sd, s0 + (n - 1) * ss, -sd, -ss
    if s0 < d0 < s0 + n * ss:  # (the source starts below the destination and reaches it: backwards)
        steps = steps[::-1]
    if where is not None:
        steps = steps[where[steps]]
        if not len(steps):
            return None
    dst, src = backend.address(view) + steps * view.strides[0], backend.address(source) + steps * source.strides[0]
    values = backend.to_host(source)
    result = values.copy() if where is None else backend.to_host(view)
    result[steps] = _sequential_values(dst, src, values[steps])
    return result


def _copy_in_numpys_order(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``copyto(dst, src)`` of two device views of one dtype and shape whose memory overlaps where
    NumPy copies element by element (``_sequential_copy``: ``copyto(a[2:7], a[::2])``), with a
    ``where=`` mask or without: NumPy's values written, a counted fallback; False for anything else
    (the usual road)."""
    if len(args) != 2 or not set(kwargs) <= {"casting", "where"}:
        return False
    dst, src = args
    if type(dst) is not DeviceArray or type(src) is not DeviceArray or dst._backend is not src._backend or \
            dst._pending is not None or src._pending is not None or dst._readonly or dst.shape != src.shape:
        return False
    backend = dst._backend
    view, source = dst._device_data, src._device_data
    if backend.is_host or not _config.current().enabled or not backend.shares_memory(view, source):
        return False
    where = kwargs.get("where", True)
    mask = None
    if where is not True:  # (NumPy's masked copy goes element by element the same way)
        host = where.__array__() if type(where) is DeviceArray else numpy.asarray(where)
        if host.dtype != numpy.bool_ or host.ndim > view.ndim:
            return False
        try:
            mask = numpy.broadcast_to(host, view.shape)
        except ValueError:
            return False  # (NumPy's error, from the usual road)
    host = _sequential_copy(view, source, backend, mask)
    if host is None:
        return False
    _lazy.before_write(backend, view)  # (recorded work reading this memory runs on the old values)
    backend.write(view, host)
    _report.record(numpy.copyto, "fallback", reason=_SEQUENTIAL_COPY)
    return True


def _place_in_numpys_order(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """``place(arr, mask, vals)`` where ``vals`` is ``arr``'s own memory: NumPy takes no copy of
    C-contiguous ``vals`` of ``arr``'s dtype and writes the true positions of a C-contiguous
    ``arr`` one element at a time, cycling through ``vals``, so an element of ``vals`` read after
    its memory was written reads the new value (``place(a, m, a)``). The values are found on the
    host and ``arr`` written back whole, one counted fallback; False anywhere else (the usual
    road)."""
    if len(args) != 3 or kwargs:
        return False
    arr, mask, vals = args
    if type(arr) is not DeviceArray or type(vals) is not DeviceArray or vals._backend is not arr._backend or \
            arr._pending is not None or vals._pending is not None or arr.dtype != vals.dtype or not vals.size:
        return False
    backend = arr._backend
    native, source = arr._device_data, vals._device_data
    if backend.is_host or not (arr.flags.c_contiguous and vals.flags.c_contiguous) or \
            not backend.shares_memory(native, source):
        return False
    host_mask = mask.__array__() if type(mask) is DeviceArray else numpy.asarray(mask)
    if host_mask.size != native.size:
        return False  # (NumPy's error, from the usual road)
    positions = numpy.flatnonzero(host_mask.astype(bool, copy=False))
    if not len(positions):
        return False
    itemsize = native.dtype.itemsize
    steps = numpy.arange(len(positions))
    cycled = steps % source.size
    values = backend.to_host(source).reshape(-1)[cycled]
    found = _sequential_values(backend.address(native) + positions * itemsize,
                               backend.address(source) + cycled * itemsize, values)
    if arr._readonly:
        return False  # (NumPy's error, from the usual road)
    host = backend.to_host(native)
    host.reshape(-1)[positions] = found
    _lazy.before_write(backend, native)  # (recorded work reading this memory runs on the old values)
    backend.write(native, host)
    _report.record(numpy.place, "fallback", reason=_SEQUENTIAL_COPY)
    return True


def _sequential_mask_write(native: Any, mask: Any, value: Any, backend: Any) -> numpy.ndarray | None:
    """NumPy's values for ``native[mask] = value`` where ``mask`` is a boolean array of the
    target's dimensions and ``value`` a one-dimensional array of its dtype overlapping it in
    memory: NumPy copies no temporary there and writes the true positions in C order, element by
    element (``a[m] = a[1:5]`` reads ``a[4]`` after writing it where ``m[4]``); None where its
    answer is a copy's (another key, dtype or value shape; a value it broadcasts) or the
    backend's write gives its error (a count that differs)."""
    if (mask.dtype != numpy.bool_ or mask.shape != native.shape or value.ndim != 1 or value.dtype != native.dtype
            or value.shape[0] < 2 or not backend.shares_memory(value, native)):
        return None
    positions = numpy.flatnonzero(backend.to_host(mask))
    if len(positions) != value.shape[0]:
        return None
    offsets = numpy.zeros(len(positions), numpy.int64)
    for index, stride in zip(numpy.unravel_index(positions, native.shape), native.strides):
        offsets += index * stride
    # (NumPy moves each run of true positions adjacent in memory at once, a memmove where the
    # value's elements are adjacent too; element by element otherwise)
    itemsize = native.dtype.itemsize
    joined = (numpy.diff(offsets) == itemsize) & (numpy.diff(positions) == 1) & (value.strides[0] == itemsize)
    runs = numpy.concatenate(([0], numpy.cumsum(~joined)))
    steps = numpy.arange(len(positions))
    return _sequential_values(backend.address(native) + offsets, backend.address(value) + steps * value.strides[0],
                              backend.to_host(value), runs)


def _indexed_setitem(array: DeviceArray, key: Any, value: Any, backend: Any, frame: Any) -> Any:
    """``array[rows, cols] = value`` with index arrays (or a mask) on the same device and a scalar
    or device value, or ``array[basic key] = device value``: the backend's write at once, without
    the general path's scan of the arguments (mandelbrot2's ``N_[Xi[I], Yi[I]] = i + 1``, two a
    step; correlation's ``corr[i + 1:M, i] = corr[i, i + 1:M] = row``). The same write the general
    path makes, asked of the backend the same way (whether it writes these depends on the key and
    the target's layout on OpenCL: asked each time): recorded work reading the array runs first;
    the backend reports NumPy's errors."""
    keys = key if type(key) is tuple else (key,)
    if type(value) is DeviceArray and value._backend is not backend:
        return NotImplemented
    arrays = [k for k in keys if type(k) is DeviceArray]
    if any(k._backend is not backend for k in arrays):
        return NotImplemented
    dtypes = (array.dtype, *(k.dtype for k in arrays), *((value.dtype,) if type(value) is DeviceArray else ()))
    if backend.prefers_host(_SETITEM) or not backend.supports_function(_SETITEM, dtypes, (array, key, value), {}):
        return NotImplemented
    native = array._device_data
    if type(key) is DeviceArray and _assign_by_positions(array, native, key, value, backend):
        _report.count(_SETITEM, "device", frame)
        return None
    if arrays:
        nkey = tuple(k._native for k in keys) if type(key) is tuple else key._native
    else:
        nkey = key
    nvalue = value._native if type(value) is DeviceArray else value
    _lazy.before_write(backend, native)  # (recorded work reading this memory runs on the old values)
    backend.call_function(_SETITEM, (native, nkey, nvalue), {})
    _report.count(_SETITEM, "device", frame)
    return None


def _assign_by_positions(array: DeviceArray, native: Any, mask: DeviceArray, value: Any, backend: Any) -> bool:
    """``array[mask] = value`` as a scatter into the mask's kept true positions (npgpu/_masks.py):
    for a boolean mask over the array's leading dimensions and a scalar (NumPy's conversion to
    the array's dtype, and its errors) or a device array of the array's dtype that broadcasts to
    the selection and shares no memory with the array. False where the usual write decides (and
    gives NumPy's errors)."""
    if mask.dtype.kind != "b" or not mask.ndim or mask.shape != array.shape[:mask.ndim]:
        return False
    if type(value) is DeviceArray:
        if value.dtype != array.dtype:
            return False
    elif type(value) not in _SCALAR_VALUES and not isinstance(value, numpy.generic):
        return False
    if mask._pending is not None:
        mask._native  # noqa: B018  (computed: its positions are of its values)
    found = _masks.assign(native, mask, backend)
    if found is None:
        return False
    positions, shape = found
    if type(value) is DeviceArray:
        nvalue = value._native
        try:
            if numpy.broadcast_shapes(value.shape, shape) != shape or backend.shares_memory(nvalue, native):
                return False
        except ValueError:  # (NumPy's own message comes from the usual write)
            return False
    else:
        nvalue = _ops.written_scalar(value, array.dtype, advanced=True)  # (NumPy's conversion, its errors)
    _lazy.before_write(backend, native)  # (recorded work reading this memory runs on the old values)
    backend.put_positions(native, positions, mask.ndim, nvalue)
    return True


def _fill_basic(array: DeviceArray, key: Any, value: Any, backend: Any, frame: Any) -> Any:
    """``array[key] = scalar`` for a basic key: the view, then NumPy's conversion of the value
    (its errors: OverflowError for 300 into uint8, ValueError for NaN into an int; a bad index
    is reported first, as NumPy does), then a fill of the view with the converted value."""
    view = _view(array, array._device_data, key, backend)
    if not backend.is_native(view):
        return NotImplemented
    converted = _ops.written_scalar(value, view.dtype)
    _lazy.before_write(backend, view)  # (recorded work reading this memory runs on the old values)
    backend.fill_view(view, converted)
    _report.count(numpy.ndarray.__setitem__, "device", frame)
    return None


def _keeps_dimensions(key: Any) -> bool:
    """Whether an index gives a 0-d array rather than a scalar when it selects one element
    (NumPy: an Ellipsis in the key keeps an array, ``a[0, ...]``; ``a[0]`` and ``a[()]`` don't)."""
    return key is Ellipsis or (type(key) is tuple and any(k is Ellipsis for k in key))




_REDUCTIONS = _ops.REDUCTIONS

#: NumPy's require: requirement names -> the flag each asks for ("E": an ndarray, which a device array is)
_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C", "F": "F", "F_CONTIGUOUS": "F", "FORTRAN": "F",
                 "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W", "O": "O", "OWNDATA": "O", "E": "E",
                 "ENSUREARRAY": "E"}


def _require(a: DeviceArray, dtype: Any = None, requirements: Any = None) -> Any:
    """``numpy.require`` of a device array: the array itself (an array sharing its memory) where it
    meets the requirements, as NumPy returns ``a``; a copy only where one is needed. (A fallback
    gave a copy always, and writes through the result were lost.)"""
    if not requirements:
        return function(numpy.asanyarray, (a,), {"dtype": dtype})
    flags = {_REQUIREMENTS[str(name).upper()] for name in requirements}  # (NumPy's KeyError for others)
    flags.discard("E")
    if {"C", "F"} <= flags:
        raise ValueError('Cannot specify both "C" and "F" order')
    order = "C" if "C" in flags else "F" if "F" in flags else "A"
    flags -= {"C", "F"}
    array = function(numpy.array, (a,), {"dtype": dtype, "order": order, "copy": None})
    if any(not array.flags[flag] for flag in flags):
        return array.copy(order)
    return array


def _unstack(x: DeviceArray, *, axis: int = 0) -> tuple[Any, ...]:
    """``numpy.unstack`` of a device array: views of its slices along ``axis``, as NumPy's (a
    fallback gave copies, and writes through them were lost)."""
    moved = function(numpy.moveaxis, (x, axis, 0), {})
    return tuple(moved[i] for i in range(moved.shape[0]))


def _diag(v: DeviceArray, k: int = 0) -> Any:
    """``numpy.diag`` of a 2-d device array: its diagonal, NumPy's read-only view (a copy showed
    none of the later writes to ``v``: OpenCL's); other arrays take the general path."""
    if v.ndim != 2:
        return NotImplemented
    return function(numpy.diagonal, (v, k), {})


def _sliding_window_view(x: DeviceArray, window_shape: Any, axis: Any = None, *, subok: bool = False,
                         writeable: bool = False) -> Any:
    """``sliding_window_view`` of a device array: a view of its memory, as NumPy's (a fallback
    gave a writable host copy, blind to later writes to ``x``). NumPy's own function lays it out
    (and raises its errors) on a zero-byte stand-in with ``x``'s layout; the backend makes the
    strided view. NotImplemented where it can't (the general path falls back, counted)."""
    backend = x._backend
    stand_in = numpy.lib.stride_tricks.as_strided(numpy.zeros(1, x.dtype), x.shape, x.strides)
    layout = numpy.lib.stride_tricks.sliding_window_view(stand_in, window_shape, axis, subok=subok,
                                                          writeable=writeable)
    if layout.__array_interface__["data"][0] != stand_in.__array_interface__["data"][0]:
        return NotImplemented  # (NumPy's windows start at the first element: not expected)
    native = x._native
    view = backend.strided_view(native, layout.shape, layout.strides)
    if view is None:
        return NotImplemented
    _report.count(numpy.lib.stride_tricks.sliding_window_view, "device", sys._getframe(1))
    owner = x if x._base is None else x._base
    return DeviceArray(view, backend, owner, x._readonly or not layout.flags.writeable)


#: NumPy functions whose results view their argument, composed here of npgpu's own calls (views);
#: NotImplemented from one: the general path takes the call
def _matrix_transpose(x: DeviceArray) -> Any:
    """``numpy.matrix_transpose`` of a device array: the view ``x.mT`` is (a fallback's copy showed
    none of the later writes to ``x``); fewer than two axes take the general path (NumPy's error)."""
    if x.ndim < 2:
        return NotImplemented
    return function(numpy.swapaxes, (x, -1, -2), {})


_VIEWING: dict[Any, Callable[..., Any]] = {numpy.require: _require, numpy.unstack: _unstack, numpy.diag: _diag,
                                           numpy.lib.stride_tricks.sliding_window_view: _sliding_window_view,
                                           numpy.matrix_transpose: _matrix_transpose}
_REDUCE_KEYWORDS = frozenset({"axis", "keepdims"})
#: (function, backend, dtype, keywords given, axis a tuple) -> whether the backend reduces such an array itself
_REDUCES: dict[tuple[Any, ...], bool] = {}


def _reduce_array(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``a.sum()``, ``np.max(a, axis=0)``: a reduction of one non-empty device array, with at most
    an ``axis`` (an int or a tuple of ints: resnet's ``axis=(1, 2, 3)``) and ``keepdims``,
    straight to the backend (or to the fused map-reduce kernel of a pending one), without the
    general path's scan of the arguments and its placement rule (a device operand keeps the work
    on the device: nothing to decide). NotImplemented for anything else, and where the device
    fails (the general path then falls back, counted)."""
    array = args[0]
    n = len(args)
    if n > 2 or (n == 2 and kwargs) or array.size == 0:
        return NotImplemented
    axis = args[1] if n == 2 else kwargs.get("axis")
    if not _ops.plain_axis(axis) or (kwargs and not _REDUCE_KEYWORDS.issuperset(kwargs)) or \
            type(kwargs.get("keepdims", False)) is not bool:
        return NotImplemented
    state = _config.current()
    backend = array._backend
    if not state.enabled or backend.is_host or backend is not state.backend:
        return NotImplemented
    reduced = _reduce_pending(func, args, kwargs, backend) if array._pending is not None else None
    if reduced is None:  # (computed, or a graph the map-reduce kernel doesn't take: computed first)
        key = (func, backend, array.dtype, tuple(kwargs), type(axis) is tuple)
        ok = _REDUCES.get(key)
        if ok is None:
            ok = _REDUCES[key] = not backend.prefers_host(func) and backend.supports_function(
                func, (array.dtype,), args, kwargs)
        if not ok:
            return NotImplemented
        try:
            result = backend.call_function(func, (array._native, *args[1:]), kwargs)
        except FALLBACK_FAULTS:  # [device faults] the general path falls back, counted
            return NotImplemented
        _report.count(func, "device", sys._getframe(1))
        reduced = wrap(result, backend, func)
        if tracked:  # (the array read whole)
            _residency.charge_kernel(backend, 1, array.nbytes)
    if tracked and type(reduced) is not DeviceArray:  # (a NumPy scalar: read back)
        _residency.charge_moves([array], 0)
    return reduced


def _reduce_pending(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], backend: Any) -> Any:
    """``sum(a*b)``, ``mean((x-y)**2)``, ``max(abs(d))``: one map-reduce kernel over the graph."""
    if not args or type(args[0]) is not DeviceArray or args[0]._pending is None or len(args) > 2:
        return None
    if not _config.current().fusion or not set(kwargs) <= {"axis", "keepdims"}:
        return None
    axis = args[1] if len(args) == 2 else kwargs.get("axis")
    if axis is not None and not isinstance(axis, (int, tuple)):
        return None
    native = _lazy.reduce(func, args[0], axis, bool(kwargs.get("keepdims", False)))
    return None if native is None else wrap(native, backend, func)


def _on_named_device(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The array API's ``device=``: "cpu" gives NumPy's host array; a device backend's name (what
    ``x.device`` says) gives an array on that device whatever its size; anything else is NumPy's
    to refuse (its ValueError)."""
    device = kwargs["device"]
    rest = {k: v for k, v in kwargs.items() if k != "device"}
    if device is None:
        return function(func, args, rest)
    if isinstance(device, str) and device == "cpu":
        _report.record(func, "host")
        return func(*_transfer.to_host_tree(args), **_transfer.to_host_tree(rest), device="cpu")
    backend = _config.device_backend(device)
    if backend is None:
        return func(*_transfer.to_host_tree(args), **_transfer.to_host_tree(kwargs))  # NumPy's error
    with _config.placing_all_on(backend):
        return function(func, args, rest)


def _rule(backend: Any, rule: str, devices: list[DeviceArray], hosts: list[numpy.ndarray]) -> dict[str, Any]:
    """The report's arguments for a call placed by ``rule`` (_report.record's ``rule``, ``other_s``)."""
    device_bytes = sum(d.nbytes for d in devices)
    host_bytes = sum(h.nbytes for h in hosts)
    return {"rule": rule, "other_s": _placement.other_choice_s(backend, rule, device_bytes, host_bytes)}


_MADE_RULES = frozenset({_placement.MADE_ON_DEVICE, _placement.LEARNED_ON_DEVICE})


def _made_rule(backend: Any, rule: str, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The report's arguments for an array made from nothing placed by ``rule`` (its other choice
    from the bytes the call asks for)."""
    nbytes, _ = _ops.creation_request(func, args, kwargs)
    return {"rule": rule, "other_s": _placement.made_other_choice_s(backend, rule, nbytes)}


def _on_host_by_choice(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                       mutated: list[DeviceArray], state: _config.State, had_devices: bool,
                       rule: dict[str, Any] | None = None) -> Any:
    """Work the device does slower than NumPy (matmul on a CPU OpenCL device): a placement choice,
    counted as host work; a large result of device inputs goes back to the device."""
    result = run_on_host(key, call, args, kwargs, mutated, record="host", rule=rule)
    return place_result(result, state, args) if had_devices else result


def on_host(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy call from a third-party library on device arrays: it runs in NumPy and gets host
    arrays back, as it would without npgpu (counted as host work, not a fallback)."""
    mutated = _mutated(key, args, kwargs)
    out = kwargs.get("out")
    if isinstance(out, tuple):
        mutated += [o for o in out if isinstance(o, DeviceArray) and all(o is not m for m in mutated)]
    return run_on_host(key, call, args, kwargs, mutated, record="host")


def _construct(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], backend: Any, state: _config.State) -> Any:
    if args and not isinstance(args[0], numpy.ndarray) and backend.is_native(args[0]):
        # The backend's own array (a cupy.ndarray, say): adopt it, as cupy.asarray would.
        native = backend.call_function(func, args, kwargs) if func in backend.functions else args[0]
        _report.record(func, "device")
        return DeviceArray(native, backend)
    return place_constructed(func, func(*args, **kwargs), backend, state)


def place_constructed(func: Any, host: Any, backend: Any, state: _config.State, limit: int | None = None) -> Any:
    """A constructor's NumPy result where it belongs: uploaded when it is large enough to pay
    (``limit``: from the upload threshold, host data's; an array made from nothing, a grid's,
    from the creation threshold)."""
    if limit is None:
        limit = _placement.upload_threshold_bytes(state)
    if (type(host) is numpy.ndarray and host.nbytes >= limit
            and backend.supports_dtypes((host.dtype,))):
        origin = _residency.origin(state, func, host.shape, host.dtype.str)
        if _residency.learned(state, origin):
            _report.record(func, "host", rule=_placement.LEARNED_ON_HOST)
            return host
        try:
            native = upload(host, backend, func)
        except DeviceMemoryError as fault:  # [device faults] it stays in host memory, counted
            notify(state, func, fault.reason)
            _report.record(func, "fallback", reason=fault.reason)
            return host
        _report.record(func, "device")
        # np.asarray(read_only_array) is that array in NumPy: its device copy is read-only too
        array = DeviceArray(native, backend, readonly=not host.flags.writeable)
        _residency.track(array, state, origin)
        return array
    _report.record(func, "host")
    return host


def place_grid(name: Any, grid: Any, state: _config.State) -> Any:
    """``mgrid[...]``/``ogrid[...]``/``indices(shape)`` (``name``: "mgrid", "ogrid" or the
    function, as the report names it): NumPy's grid, an array or a tuple of them, placed
    as arrays made from nothing are (``Xi, Yi = mgrid[0:n, 0:n]`` of a large ``n`` indexes device
    arrays: made in NumPy, every use would download or upload it)."""
    backend = state.backend
    if backend is None or backend.is_host:
        return grid
    limit = _placement.threshold_bytes(state)
    if type(grid) is tuple:
        return tuple(place_constructed(name, g, backend, state, limit) for g in grid)
    return place_constructed(name, grid, backend, state, limit)


#: keyword options of a reduction that can hold no array (``axis=(1, 2, 3)``, ``dtype``, ``keepdims``)
_PLAIN_OPTIONS = frozenset({"axis", "dtype", "keepdims"})
_PLAIN_TYPES = frozenset({int, bool, type(None), str, numpy.dtype})  # (and types: ``dtype=numpy.float32``)


def _host_reduction(func: Any, host: numpy.ndarray, kwargs: dict[str, Any]) -> Any:
    """``np.sum(host, axis=...)`` of one host array with plain options, where the one-pass rule
    keeps it in NumPy (``_one_pass_stays``): NumPy's answer, recorded as the general path records
    it, without that path's scans of the arguments. resnet's 3136 per-pixel sums of a 2.4 MB host
    product paid them every time: 8 us a call here, 5% of the kernel. With at most an axis, the
    ufunc reduction NumPy's function ends in is called directly (``Reduction.small_call``), as the
    namespace's small road does: 6 us over NumPy's call became about 2. NotImplemented for
    anything else (the general path decides)."""
    for key, value in kwargs.items():
        if key not in _PLAIN_OPTIONS:
            return NotImplemented
        kind = type(value)
        if kind is tuple:
            for v in value:  # (a loop, not any(): this runs at every call)
                if type(v) is not int:
                    return NotImplemented
        elif kind not in _PLAIN_TYPES and not isinstance(value, type):
            return NotImplemented
    state = _config.current()
    backend = state.backend
    if backend is None or backend.is_host or not state.enabled or backend.prefers_host(func):
        return NotImplemented
    other_s = _one_pass_other_s(backend, host.nbytes)
    if other_s is NotImplemented:
        return NotImplemented
    _report.record(func, "host", rule=_placement.ONE_PASS_ON_HOST, other_s=other_s)
    reduction = _REDUCTIONS[func]
    if reduction.small_call:
        if not kwargs:
            return reduction.ufunc.reduce(host, None, reduction.small_dtype)
        if len(kwargs) == 1 and "axis" in kwargs and _ops.plain_axis(kwargs["axis"]):
            return reduction.ufunc.reduce(host, kwargs["axis"], reduction.small_dtype)
    return func(host, **kwargs)


#: (id of a backend's costs, bytes) -> (those costs, the other choice's seconds, or NotImplemented where
#: the one-pass rule moves the bytes): ``_host_reduction`` asks it at every call of a loop (resnet: 3136
#: per-pixel sums a call, of three sizes)
_ONE_PASS: dict[tuple[int, int], tuple[Any, Any]] = {}


def _one_pass_other_s(backend: Any, nbytes: int) -> Any:
    """For a one-array host reduction of ``nbytes``: NotImplemented where the one-pass rule would
    not keep it in NumPy, else what the other choice would cost (the report's estimate)."""
    costs = backend.costs
    key = (id(costs), nbytes)
    found = _ONE_PASS.get(key)
    if found is not None and found[0] is costs:
        return found[1]
    stays = costs is not None and _one_pass_bytes_stay(costs, nbytes)
    other_s = _placement.other_choice_s(backend, _placement.ONE_PASS_ON_HOST, 0, nbytes) if stays else NotImplemented
    if len(_ONE_PASS) >= 256:
        _ONE_PASS.clear()  # (one C call; a loop's few sizes come back at once)
    _ONE_PASS[key] = (costs, other_s)
    return other_s


def _one_pass_stays(backend: Any, hosts: list[numpy.ndarray]) -> bool:
    """Whether a reduction of host data stays in NumPy: it reads its operands once, and the copy a
    device call would make of them is dropped after it, so the upload has to pay by itself, which
    it does only where moving the bytes and reducing them on the device beats NumPy's one pass
    (never on the H200's link or on PoCL, by their measured costs). Without measured costs the
    thresholds decide, as before. (resnet's per-pixel sums of a 1.2 MB host product were uploaded.)"""
    costs = backend.costs
    return costs is not None and _one_pass_bytes_stay(costs, sum(h.nbytes for h in hosts))


def _one_pass_bytes_stay(costs: Any, nbytes: int) -> bool:
    return costs.upload_time_s(nbytes) + costs.device_op_s(nbytes) >= costs.host_op_s(nbytes)


def _offload_host_call(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], hosts: list[numpy.ndarray],
                       backend: Any, state: _config.State) -> bool:
    if func in backend.functions and func in _ops.CREATIONS:
        nbytes, _ = _ops.creation_request(func, args, kwargs)
        return nbytes >= _placement.threshold_bytes(state) and nbytes >= 0
    if func in backend.functions and func in _ops.EXPANDING and hosts:
        # (a large result of small operands: made on the device where host data of its size would
        # move there, so only the operands move; on PoCL gemver's 72 MB products then stay in
        # NumPy with the host matrix they are added to, as before)
        nbytes = _ops.result_request(func, args, kwargs)
        if nbytes >= 0 and nbytes >= _placement.upload_threshold_bytes(state):
            return True
    limit = _placement.upload_threshold_bytes(state)
    return bool(hosts) and func in backend.functions and sum(a.nbytes for a in hosts) >= limit


def _mutated(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[DeviceArray]:
    """The device arrays a call writes into; NumPy's ValueError if one is read-only."""
    mutated: list[DeviceArray] = []
    if func in MUTATES_FIRST and args and isinstance(args[0], DeviceArray):
        mutated.append(args[0])
        if args[0]._readonly:
            raise ValueError(MUTATES_FIRST[func])
    out = kwargs.get("out")
    for o in out if isinstance(out, tuple) else (out,):
        if isinstance(o, DeviceArray):
            mutated.append(o)
            if o._readonly:
                raise ValueError("output array is read-only")
    return mutated


def _subclassed(hosts: list[numpy.ndarray]) -> bool:
    """Whether a host operand is an ndarray subclass with semantics of its own (a masked array,
    a matrix, a user's subclass): NumPy runs the call, so the result keeps its class and its
    meaning. A memmap is only where the data lives, and moves like any host array."""
    for h in hosts:
        t = type(h)
        if t is not numpy.ndarray and t is not numpy.memmap:
            return True
    return False


_OUT_POSITIONS: dict[Any, int | None] = {}


def _out_position(func: Any) -> int | None:
    """Where ``func``'s ``out`` parameter stands among its positional parameters (a call whose
    last positional argument is out= can give it as the keyword instead)."""
    try:
        return _OUT_POSITIONS[func]
    except KeyError:
        pass
    position = None
    try:
        params = list(inspect.signature(func).parameters.values())
    except (TypeError, ValueError):
        params = []
    for i, p in enumerate(params):
        if p.kind is p.VAR_POSITIONAL:
            break
        if p.name == "out" and p.kind is p.POSITIONAL_OR_KEYWORD:
            position = i
            break
    _OUT_POSITIONS[func] = position
    return position


def _host_out(kwargs: dict[str, Any]) -> bool:
    out = kwargs.get("out")
    return out is not None and any(type(o) is numpy.ndarray for o in (out if isinstance(out, tuple) else (out,)))


def _asked_dtype(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> numpy.dtype | None:
    """The dtype a call asks for (``astype(str)``, ``zeros(n, dtype=...)``), if any and valid."""
    position = _ops.DTYPE_POSITION.get(func)
    asked = kwargs.get("dtype", args[position] if position is not None and len(args) > position else None)
    if asked is None:
        return None
    try:
        return numpy.dtype(asked)
    except TypeError:
        return None


def _reason(func: Any, dtypes: tuple[numpy.dtype, ...], kwargs: dict[str, Any], backend: Any,
            args: tuple[Any, ...] = ()) -> str:
    name = getattr(func, "__name__", repr(func))
    if func not in backend.functions:
        return f"{backend.name} has no {name}"
    if not backend.supports_dtypes(dtypes):
        bad = sorted({str(d) for d in dtypes if not backend.supports_dtypes((d,))})
        return f"{backend.name} does not support dtype {', '.join(bad)}"
    asked = _asked_dtype(func, args, kwargs)
    if asked is not None and not backend.supports_dtypes((asked,)):
        return f"{backend.name} does not support dtype {asked} (asked for)"
    if kwargs:
        return f"{backend.name} {name} does not support these arguments: {', '.join(sorted(kwargs))}"
    return f"{backend.name} does not support {name} with these arguments"


# -- ufuncs ----------------------------------------------------------------------------------

def _operand_dtype(x: Any) -> Any:
    if isinstance(x, (DeviceArray, numpy.ndarray, numpy.generic)):
        return x.dtype
    if isinstance(x, bool):
        return numpy.dtype(bool)
    if isinstance(x, (int, float, complex)):
        return type(x)  # NEP 50: Python scalars are weak
    return numpy.asarray(x).dtype


_COMPARISONS = _ops.COMPARISONS


class _WidenedComparison(Exception):
    """A comparison with a Python int outside the array's dtype: NumPy compares exactly, on the host."""


def _check_python_ints(uf: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...]) -> None:
    for x, dt in zip(inputs, loop):
        if type(x) is int and dt.kind in "iu":
            info = numpy.iinfo(dt)
            if not info.min <= x <= info.max:
                if uf in _COMPARISONS:
                    raise _WidenedComparison
                raise OverflowError(f"Python integer {x} out of bounds for {dt}")
        elif type(x) is int and dt.kind == "b" and not -(1 << 63) <= x < 1 << 63:  # (NumPy goes through a C long)
            raise OverflowError("Python int too large to convert to C long")


# (ufunc, operand dtypes or weak scalar types, backend) -> (loop dtypes, backend supports it)
_LOOPS: dict[tuple[Any, ...], tuple[tuple[numpy.dtype, ...], bool]] = {}
_WEAK = frozenset({int, float, complex, bool})
_BOOL = numpy.dtype(bool)  # a Python bool is NumPy's bool, not a weak scalar


def _operand_keys(inputs: tuple[Any, ...], hosts: list[numpy.ndarray] | None = None
                  ) -> tuple[Any, list[Any], Any, bool, bool] | None:
    """(backend, dtypes or weak scalar types, the first device operand's shape, whether every device
    operand has that shape, whether a Python int is among them) of device arrays of one backend
    and Python/NumPy scalars; None for anything else (or no device array). With ``hosts``, NumPy
    arrays (not subclasses) are taken too, keyed by their dtype and listed there."""
    backend = None
    key: list[Any] = []
    shape = None
    same_shape = True
    python_int = False
    for x in inputs:
        t = type(x)
        if t is DeviceArray:
            if backend is None:
                backend = x._backend
            elif x._backend is not backend:
                return None
            operand = x._pending or x._device_data  # (a Pending is always true)
            key.append(operand.dtype)
            if shape is None:
                shape = operand.shape
            elif operand.shape != shape:
                same_shape = False
        elif t in _WEAK:
            if t is int:
                python_int = True
            key.append(_BOOL if t is bool else t)
        elif isinstance(x, numpy.generic):
            key.append(x.dtype)
        elif t is numpy.ndarray and hosts is not None:
            hosts.append(x)
            key.append(x.dtype)
        else:
            return None
    if backend is None:
        return None
    return backend, key, shape, same_shape, python_int


def _fast_call(uf: numpy.ufunc, inputs: tuple[Any, ...], fusion: bool, frame: Any) -> Any:
    """The common case, kept short: device arrays and Python/NumPy scalars, no keywords.

    Records the call for fusion when it can; returns NotImplemented when the general path
    must decide.
    """
    described = _operand_keys(inputs)
    if described is None:
        return NotImplemented
    backend, key, shape, same_shape, python_int = described
    if uf.signature is not None:
        return _fast_gufunc(uf, inputs, backend, key, frame)
    cache_key = (uf, backend, *key)
    cached = _LOOPS.get(cache_key)
    if cached is None:
        if uf.signature is not None or len(key) != uf.nin:  # a gufunc, or outputs among the inputs
            cached = (None, False, False)
        else:
            loop = tuple(uf.resolve_dtypes((*key, *(None,) * uf.nout)))
            operands = tuple(k for k in key if isinstance(k, numpy.dtype))
            supported = backend.supports_dtypes(operands) and backend.supports_ufunc(uf, "__call__", loop, {})
            # (integer powers are checked for negative exponents before they run: not recorded by the C path)
            fusible = _recorder.can_fuse(backend, uf, loop, operands) and not _integer_power(uf, loop)
            cached = (loop, bool(supported), fusible)
        if not _ops.made_at_run_time(uf):
            _LOOPS[cache_key] = cached
    loop, supported, fusible = cached
    if not (supported or (fusion and fusible)):
        return NotImplemented
    if python_int:  # (not `int in key`: a dtype compares equal to int, slowly)
        try:
            _check_python_ints(uf, inputs, loop)
        except _WidenedComparison:
            return NotImplemented
    if not same_shape:
        shape = _broadcast_check(inputs)
    if uf is numpy.power and _integer_power(uf, loop):
        _check_integer_exponents(inputs, shape)
    if fusion and fusible and shape:  # (a 0-d result is NumPy's scalar: computed at once, not recorded)
        return _recorder.record(uf, loop, inputs, backend, shape, frame)
    if not supported:
        return NotImplemented
    try:
        natives = tuple(x._native if type(x) is DeviceArray else x for x in inputs)
        result = backend.call_ufunc(uf, "__call__", natives, {}, loop)
    except FALLBACK_FAULTS as fault:  # [device faults]
        return fallback(uf, uf, inputs, {}, [], _config.current(), reason=fault.reason)
    _count_device(uf, frame)
    return wrap(result, backend, uf)


def _raise_numpys_gufunc_error(uf: numpy.ufunc, inputs: tuple[Any, ...]) -> None:
    """The device refused a gufunc's operands (CuPy's matmul: "Axis dimension mismatch" for core
    dimensions that differ, a TypeError for a scalar): raise NumPy's error for the same shapes and
    dtypes; return where NumPy takes them (the device's error then stands). NumPy is asked on
    stand-ins that hold no data (one element each, broadcast), first with every size above 1
    renamed to a small one (equal sizes stay equal: NumPy's checks compare sizes with each other
    and with 0 and 1), so that where NumPy finds nothing wrong it computes a small product, not
    the program's; where it refuses those, it refuses the real shapes before computing anything."""
    arrays = [x if isinstance(x, (DeviceArray, numpy.ndarray)) or numpy.ndim(x) == 0 else numpy.asarray(x)
              for x in inputs]
    sizes = sorted({n for x in arrays if hasattr(x, "shape") for n in x.shape if n > 1})
    small = {n: 2 + i for i, n in enumerate(sizes)}

    def stand_ins(shape_of: Any) -> list[Any]:
        return [numpy.broadcast_to(numpy.zeros((), x.dtype), shape_of(x.shape)) if hasattr(x, "shape") else x
                for x in arrays]

    with numpy.errstate(all="ignore"):
        try:
            uf(*stand_ins(lambda shape: tuple(small.get(n, n) for n in shape)))
            return
        except (TypeError, ValueError):
            pass
        try:
            uf(*stand_ins(tuple))
        except (TypeError, ValueError) as error:
            raise error from None


def _count_device(uf: numpy.ufunc, frame: Any) -> None:
    """Count a fast call on the device at the user's ``frame`` (found by the report where unknown)."""
    if frame is None:
        _report.record(uf, "device")
    else:
        _report.count(uf, "device", frame)


#: (gufunc, backend, operand dtypes) -> its loop where the backend runs it on device arrays, else None
_GUFUNC_LOOPS: dict[tuple[Any, ...], tuple[numpy.dtype, ...] | None] = {}


def _fast_gufunc(uf: numpy.ufunc, inputs: tuple[Any, ...], backend: Any, key: list[Any], frame: Any) -> Any:
    """``a @ b`` (a gufunc) of device arrays of one backend, no keywords: the backend's call at
    once, its loop kept per dtypes (correlation's ``data[:, i] @ data[:, i + 1:M]``, 3199 a call).
    NotImplemented for a scalar or 0-d operand, where the backend declines or prefers NumPy
    (matmul on a CPU OpenCL device), and where NumPy finds no loop: the general path decides
    and raises NumPy's errors; where the backend refuses the core dimensions in its own words,
    NumPy's error for them is raised (``_raise_numpys_gufunc_error``)."""
    if len(inputs) != uf.nin or any(type(x) is not DeviceArray or not x.ndim for x in inputs):
        return NotImplemented
    cache_key = (uf, backend, *key)
    loop = _GUFUNC_LOOPS.get(cache_key, False)
    if loop is False:
        try:
            loop = tuple(uf.resolve_dtypes((*key, *(None,) * uf.nout)))
        except (TypeError, ValueError):  # (no loop: the general path raises NumPy's error)
            loop = None
        if loop is not None and (backend.prefers_host(uf) or not backend.supports_dtypes(tuple(key))
                                 or not backend.supports_ufunc(uf, "__call__", loop, {})):
            loop = None
        _GUFUNC_LOOPS[cache_key] = loop
    if loop is None:
        return NotImplemented
    try:
        result = backend.call_ufunc(uf, "__call__", tuple(x._native for x in inputs), {}, loop)
    except FALLBACK_FAULTS:  # [device faults] the general path falls back, counted
        return NotImplemented
    except (TypeError, ValueError):
        _raise_numpys_gufunc_error(uf, inputs)
        raise
    if tracked:  # (its operands read whole: correlation's 50 MB a product, where the device wins)
        _residency.charge_kernel(backend, 1, sum(x.nbytes for x in inputs) + result.nbytes)
    _count_device(uf, frame)
    return wrap(result, backend, uf)


#: (ufunc, backend, output dtype, operand dtypes or weak scalar types) -> the loop dtypes of
#: ``ufunc(..., out=a)`` when it can be recorded and run straight into ``a``, else None
_INTO: dict[tuple[Any, ...], tuple[numpy.dtype, ...] | None] = {}


def inplace(uf: numpy.ufunc, target: DeviceArray, other: Any, frame: Any, temporary: bool) -> bool:
    """``target <op>= other`` (DeviceArray's in-place operators, from user code at ``frame``):
    ``_fast_into`` where fusion is on, with ``other`` known to be the statement's own value where
    ``temporary``; False to let NumPy's call and ``__array_ufunc__`` decide."""
    state = _config._state.get() or _config._default
    if not state.fusion or state.backend is None:
        return False
    return _fast_into(uf, (target, other), target, frame, other if temporary else None)


def _fast_into(uf: numpy.ufunc, inputs: tuple[Any, ...], target: Any, frame: Any, temporary: Any = None) -> bool:
    """``a += b`` and ``ufunc(x, y, out=a)`` of device arrays and scalars into device array
    ``a``, kept short: what ``_fuse_into_out`` does after the general path's checks, with the
    checks that depend only on dtypes kept per dtypes. False to let the general path decide
    (and raise NumPy's errors)."""
    if type(target) is not DeviceArray or target._readonly:
        return False
    described = _operand_keys(inputs)
    backend = target._backend
    if described is None or described[0] is not backend:
        return False
    _, operands, first, same_shape, python_int = described
    shape = target.shape
    broadcast = not same_shape or first != shape
    out_dtype = target.dtype
    cache_key = (uf, backend, out_dtype, *operands)
    try:
        loop = _INTO[cache_key]
    except KeyError:
        loop = _INTO[cache_key] = _into_loop(uf, backend, operands, out_dtype)
    if loop is None:
        return not python_int and _eager_into(uf, inputs, target, frame, backend, cache_key, broadcast)
    if python_int:
        try:
            _check_python_ints(uf, inputs, loop)
        except (_WidenedComparison, OverflowError):
            return False
    if broadcast:
        try:
            if numpy.broadcast_shapes(_broadcast_check(inputs), shape) != shape:
                return False
        except ValueError:
            return False
    return _run_into(uf, loop, inputs, backend, target, frame, temporary)


#: _INTO's keys -> the loop of a call the backend runs into the output but does not record (complex
#: products, mandelbrot2's ``multiply(Z, Z, Z)``), else None
_EAGER_INTO: dict[tuple[Any, ...], tuple[numpy.dtype, ...] | None] = {}


def _eager_into(uf: numpy.ufunc, inputs: tuple[Any, ...], target: DeviceArray, frame: Any, backend: Any,
                cache_key: tuple[Any, ...], broadcast: bool) -> bool:
    """``uf(*inputs, out=target)`` of device arrays and scalars that the backend runs but does not
    record, kept short: the general path's device call once its checks have passed for these
    dtypes (60-180 us of the H200's CPU a call through it). False where the general path must
    decide (it raises NumPy's errors, and falls back where the device fails)."""
    loop = _EAGER_INTO.get(cache_key, False)
    if loop is False:
        loop = _EAGER_INTO[cache_key] = _eager_into_loop(uf, backend, list(cache_key[3:]), cache_key[2])
    if loop is None:
        return False
    if broadcast:
        try:
            if numpy.broadcast_shapes(_broadcast_check(inputs), target.shape) != target.shape:
                return False
        except ValueError:
            return False
    try:
        natives = tuple(x._native if type(x) is DeviceArray else x for x in inputs)  # (pending ones run first)
        destination = target._native
        _lazy.before_write(backend, destination)
        result = backend.call_ufunc(uf, "__call__", natives, {"out": (destination,)}, loop)
    except FALLBACK_FAULTS:  # [device faults] (an elementwise kernel fails before it writes): the general path
        return False
    if tracked:
        _residency.charge_kernel(backend, 1, _nbytes(result))
    _count_device(uf, frame)
    return True


def _eager_into_loop(uf: numpy.ufunc, backend: Any, key: list[Any], out_dtype: numpy.dtype
                     ) -> tuple[numpy.dtype, ...] | None:
    """The loop of ``uf(*operands, out=<out_dtype array>)`` if ``_eager_into`` may run it."""
    if uf.signature is not None or uf.nout != 1 or backend.is_host or backend.prefers_host(uf):
        return None
    try:
        loop = tuple(uf.resolve_dtypes((*key, out_dtype), casting="same_kind"))
    except (TypeError, ValueError):
        return None
    operands = tuple(k for k in key if isinstance(k, numpy.dtype)) + (out_dtype,)
    if _integer_power(uf, loop) or not (backend.supports_dtypes(operands)
                                        and backend.supports_ufunc(uf, "__call__", loop, {"out": None})):
        return None
    return loop


def _into_loop(uf: numpy.ufunc, backend: Any, key: list[Any], out_dtype: numpy.dtype) -> tuple[numpy.dtype, ...] | None:
    """The loop of ``uf(*operands, out=<out_dtype array>)`` if the short road may take it."""
    if uf.signature is not None or backend.is_host or backend.prefers_host(uf):
        return None
    try:
        loop = tuple(uf.resolve_dtypes((*key, out_dtype), casting="same_kind"))
    except (TypeError, ValueError):  # (no loop, or a cast NumPy refuses: the general path raises)
        return None
    # (can_fuse checks the backend's dtypes of the loop and the operands, and leaves integer
    # powers to the eager path, which checks their exponents)
    operands = tuple(k for k in key if isinstance(k, numpy.dtype)) + (out_dtype,)
    return loop if _recorder.can_fuse(backend, uf, loop, operands) else None


def _integer_power(uf: numpy.ufunc, loop: tuple[numpy.dtype, ...]) -> bool:
    return uf is numpy.power and loop[0].kind in "iu" and loop[1].kind == "i"


def _check_integer_exponents(inputs: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    """NumPy's ValueError for an integer power with a negative exponent (the device would wrap),
    raised as NumPy's loop does: only where there are elements to compute (``shape``, the broadcast
    result's: an empty one raises nothing)."""
    exponent = inputs[1]
    if 0 in shape:
        return
    if type(exponent) is DeviceArray or type(exponent) is numpy.ndarray:
        negative = exponent.size and function(numpy.min, (exponent,), {}) < 0
    else:
        negative = isinstance(exponent, (int, numpy.integer)) and exponent < 0
    if negative:
        raise ValueError("Integers to negative integer powers are not allowed.")


#: operand shapes -> their broadcast shape (numpy.broadcast_shapes took 3-5 us of a loop body's call)
_BROADCASTS: dict[tuple[tuple[int, ...], ...], tuple[int, ...]] = {}
_BROADCASTS_MAX = 1024


def _broadcast_check(inputs: tuple[Any, ...]) -> tuple[int, ...]:
    shapes = tuple(x.shape if isinstance(x, (DeviceArray, numpy.ndarray)) else numpy.shape(x) for x in inputs)
    shape = _BROADCASTS.get(shapes)
    if shape is not None:
        return shape
    try:
        shape = numpy.broadcast_shapes(*shapes)
    except ValueError:
        # (NumPy's spelling: (4,6) (5,) and a trailing space)
        listed = "".join(f"({','.join(map(str, s))}{',' if len(s) == 1 else ''}) " for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {listed}") from None
    if len(_BROADCASTS) >= _BROADCASTS_MAX:
        _BROADCASTS.clear()
    _BROADCASTS[shapes] = shape
    return shape


def ufunc(uf: numpy.ufunc, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any], frame: Any = None) -> Any:
    """Run ``getattr(uf, method)(*inputs, **kwargs)`` where it belongs (``frame``: the user's, if known)."""
    state = _config._state.get() or _config._default
    if MOVED[0]:  # arrays residency moved to the host are host data (npgpu/_residency.py)
        inputs, kwargs = _host_of(inputs), _host_of(kwargs)
    if frame is not None and _code_kind.get(id(frame.f_code)) != _callsite.USER:  # the report counts the user's line
        frame = _callsite.user_frame(frame)[0]
    if (method == "__call__" and not kwargs and state.backend is not None and len(inputs) == uf.nin
            and uf.signature is None):
        result = _fast_call(uf, inputs, state.fusion, frame)
        if result is not NotImplemented:
            return result
        if state.fusion and state.enabled:
            result = _fast_host_operands(uf, inputs, frame)
            if result is not NotImplemented:
                return result
    if (method == "__call__" and len(kwargs) == 1 and state.fusion and state.backend is not None
            and len(inputs) == uf.nin):
        out = kwargs.get("out")
        if type(out) is tuple and len(out) == 1 and _fast_into(uf, inputs, out[0], frame):  # a += b
            return out[0]
    if (method == "__call__" and not kwargs and state.fusion and state.backend is not None
            and len(inputs) == uf.nin + 1 and uf.nout == 1 and type(inputs[-1]) is DeviceArray
            and _fast_into(uf, inputs[:-1], inputs[-1], frame)):  # numpy.add(z, c, z): the output given positionally
        return inputs[-1]
    call = uf if method == "__call__" else getattr(uf, method)
    if method == "__call__" and "where" in kwargs and "out" not in kwargs and len(inputs) <= uf.nin:
        # NumPy drops out=None before calling __array_ufunc__, so whether the caller gave it is unknown:
        # the host calls below get it, and never warn "'where' used without 'out'" (see the README)
        kwargs = {**kwargs, "out": None}
    if method == "__call__" and len(inputs) > uf.nin:  # outputs given positionally
        if "out" in kwargs:
            raise TypeError("cannot specify 'out' as both a positional and keyword argument")
        if any(o is Ellipsis for o in inputs[uf.nin:]):
            raise TypeError("out=... is only allowed as a keyword argument.")
        kwargs = {**kwargs, "out": inputs[uf.nin:]}
        inputs = inputs[: uf.nin]
    out = kwargs.get("out")
    if out is Ellipsis:  # NumPy's out=...: new arrays, never scalars
        return _zero_d_arrays(ufunc(uf, method, inputs, {k: v for k, v in kwargs.items() if k != "out"}, frame))
    if isinstance(out, tuple) and any(o is Ellipsis for o in out):
        raise TypeError("must use `...` as `out=...` and not per-operand/in a tuple")
    for o in out if isinstance(out, tuple) else (out,):
        if o is not None and not isinstance(o, numpy.ndarray):  # (a device array's __class__ says ndarray)
            raise TypeError("return arrays must be of ArrayType")
    if out is not None and not isinstance(out, tuple):
        kwargs = {**kwargs, "out": (out,)}
        out = kwargs["out"]
    if out is not None and all(o is None for o in out):
        kwargs = {k: v for k, v in kwargs.items() if k != "out"}
        out = None
    devices: list[DeviceArray] = []
    hosts: list[numpy.ndarray] = []
    for value in inputs:
        scan(value, devices, hosts)
    if devices or (out is not None and any(type(o) is DeviceArray for o in out)):
        # every input of a ufunc is an array (at's and reduceat's second is an index): lists and tuples are
        # array data, uploaded like host arrays
        converted = (_operands.ufunc_inputs(inputs) if method not in ("at", "reduceat")
                     else _operands.at_inputs(inputs))
        if converted is not inputs:
            inputs = converted
            hosts = []
            for value in inputs:
                scan(value, [], hosts)
        if "where" in kwargs and _operands.is_data(kwargs["where"]):
            # (a list is converted to bool as NumPy does: [0, 1] is a mask; an int *array* is refused)
            kwargs = {**kwargs, "where": numpy.asarray(kwargs["where"], dtype=bool)}
            scan(kwargs["where"], [], hosts)
    out_devices: list[DeviceArray] = []
    out_hosts: list[numpy.ndarray] = []
    for value in out or ():
        scan(value, out_devices, out_hosts)
    mutated = list(out_devices)
    if any(o._readonly for o in out_devices):
        raise ValueError("output array is read-only")
    if method == "at" and inputs and isinstance(inputs[0], DeviceArray):
        mutated.append(inputs[0])
    backend = (devices or out_devices)[0]._backend if (devices or out_devices) else state.backend
    if backend is None or backend.is_host or not state.enabled or _subclassed(hosts) or _subclassed(out_hosts):
        record = "host" if devices or out_devices or state.enabled else None
        return run_on_host(uf, call, inputs, kwargs, mutated, record=record)
    if not devices and not out_devices:
        limit = _placement.upload_threshold_bytes(state)
        if sum(a.nbytes for a in hosts) < limit or not hosts:
            _report.record(uf, "host", **_rule(backend, _placement.BELOW_THRESHOLD, devices, hosts))
            return call(*inputs, **kwargs)
    if out_hosts:
        if tracked:
            _residency.charge_moves(devices, sum(d.nbytes for d in devices))
        return fallback(uf, call, inputs, kwargs, mutated, state, reason="out= is a host array")
    if backend.prefers_host(uf):
        return _on_host_by_choice(uf, call, inputs, kwargs, mutated, state, bool(devices or out_devices),
                                  _rule(backend, _placement.FASTER_ON_HOST, devices, hosts))
    loop: tuple[numpy.dtype, ...] = ()
    if method == "__call__":
        try:
            loop = _resolve_call(uf, inputs, kwargs)
        except _WidenedComparison:
            return fallback(uf, call, inputs, kwargs, mutated, state,
                            reason="comparison with a Python int outside the array's dtype")
        if _integer_power(uf, loop):
            _check_integer_exponents(inputs, _broadcast_check(inputs))
        dtypes = loop
    else:
        dtypes = _dtypes(devices, hosts)
        if method in ("reduce", "accumulate") and out is not None and out[0] is not None and \
                kwargs.get("dtype") is None and inputs and isinstance(inputs[0], numpy.ndarray):
            into = _reduction_loop_into(uf, inputs[0].dtype, out[0].dtype)
            if into is not None and _narrowing_reduction(uf, into, out[0].dtype):
                return fallback(uf, call, inputs, kwargs, mutated, state,
                                reason=f"out= narrower than the {into} it {method}s in (NumPy's answer "
                                       "depends on where its buffers convert)")
            kwargs = {**kwargs, "dtype": into}
    options = {k: v for k, v in kwargs.items() if k != "out"}
    operand_dtypes = _dtypes(devices, hosts) + tuple(o.dtype for o in out_devices)
    unconverted = None if not loop or type(backend).converts is _Backend.converts else next(
        ((x.dtype, want) for x, want in zip(inputs, loop) if isinstance(x, (DeviceArray, numpy.ndarray))
         and x.dtype != want and not backend.converts(x.dtype, want)), None)
    if unconverted is not None:
        return fallback(uf, call, inputs, kwargs, mutated, state,
                        reason=f"{backend.name} leaves converting {unconverted[0]} into {unconverted[1]} to NumPy")
    if not (backend.supports_dtypes(operand_dtypes) and backend.supports_ufunc(uf, method, dtypes, kwargs)):
        if not devices and not out_devices:
            _report.record(uf, "host")
            return call(*inputs, **kwargs)
        return fallback(uf, call, inputs, kwargs, mutated, state,
                        reason=_ufunc_reason(uf, method, dtypes, options, backend))
    if hosts and tracked:
        _residency.charge_moves(devices + out_devices, upload_bytes(hosts, backend))
    if out is None and not options and hosts and devices and state.fusion and method == "__call__":
        recorded = _record_with_host_operands(uf, inputs, loop, operand_dtypes, backend, frame)
        if recorded is not NotImplemented:
            return recorded
    try:
        if out is not None and state.fusion and _fuse_into_out(uf, method, inputs, options, out, loop, backend, frame):
            return out[0]
        _before_writes(mutated)
        reads = method in _READ_ONLY_INPUTS  # (its inputs only read: a kept device copy may serve)
        ninputs = tuple(upload_operand(x, backend, uf) if reads and type(x) is numpy.ndarray
                        else to_native_tree(x, backend, uf) for x in inputs)
        options = {k: to_native_tree(v, backend, uf) for k, v in options.items()}
        if out is not None:
            options["out"] = tuple(None if o is None else o._native for o in out)
        result = backend.call_ufunc(uf, method, ninputs, options, loop or None)
    except FALLBACK_FAULTS as fault:  # [device faults] (an elementwise kernel fails before it writes)
        return fallback(uf, call, inputs, kwargs, mutated, state, reason=fault.reason)
    except (TypeError, ValueError):
        if uf.signature is not None and method == "__call__" and not options:
            _raise_numpys_gufunc_error(uf, inputs)
        raise
    if tracked and method == "__call__":  # (a gufunc reads its operands whole: their bytes count too)
        _residency.charge_kernel(backend, 1, _nbytes(result) + (0 if uf.signature is None else
                                                                sum(_nbytes(x) for x in ninputs)))
    _report.record(uf, "device", **_rule(backend, _placement.DEVICE_OPERANDS if devices or out_devices else
                                         _placement.ABOVE_THRESHOLD, devices + out_devices, hosts))
    if out is not None:
        if len(out) == 1:
            return out[0]
        # (an output given as None is NumPy's to allocate: divmod(a, b, out=(None, r)) returns a new quotient)
        return tuple(o if o is not None else wrap(r, backend, uf) for o, r in zip(out, result))
    return wrap(result, backend, uf)


def _reduction_loop_into(uf: numpy.ufunc, dtype: numpy.dtype, out_dtype: numpy.dtype) -> numpy.dtype | None:
    """The type NumPy's ``uf.reduce(a, out=o)`` (or accumulate) computes in, asked of NumPy: its loop
    resolved with ``out``'s type (``add.reduce(int16s, out=int16)`` adds in int16, not in the int64
    a sum promotes to; float32s into an int64 ``out`` add in float64); None where NumPy refuses."""
    try:
        return uf.resolve_dtypes((out_dtype, dtype, None), casting="unsafe", reduction=True)[0]
    except (TypeError, ValueError):
        return None


def _narrowing_reduction(uf: numpy.ufunc, loop: numpy.dtype, out_dtype: numpy.dtype) -> bool:
    """Whether a reduction in ``loop`` into an ``out`` of ``out_dtype`` gives NumPy's answer only as
    NumPy computes it: its first element and its running value pass through ``out``'s type (at each
    of its buffers), so a maximum of int16s into int8 starts from the first one wrapped, and a float
    sum rounds. Integer sums and products wrap alike either way."""
    if numpy.can_cast(loop, out_dtype, "safe"):
        return False
    return not (uf in (numpy.add, numpy.multiply) and loop.kind in "iu" and out_dtype.kind in "iu")


def _host_origin(state: _config.State, func: Any, hosts: list[numpy.ndarray]) -> Any:
    """The residency origin of a device array a function computed from host data it moved (the
    call's line and its caller's, the function and the host operands' shapes and dtypes): such a
    call is an entry, as ``asarray`` is. Where the array's work, or work computed from it, runs
    faster in NumPy (resnet's ``np.std(x, axis=0, keepdims=True)`` of a host ``x``, from which
    every pixel's input was computed on the device), the call runs in NumPy from then on in this
    ``enable()``. (A ufunc of host data alone is NumPy's own call: npgpu never sees it.)"""
    return _residency.origin(state, func, tuple((h.shape, h.dtype.str) for h in hosts))


def _nbytes(result: Any) -> int:
    """The bytes of a backend call's result (its arrays' for a tuple of them)."""
    if isinstance(result, tuple):
        return sum(getattr(r, "nbytes", 0) for r in result)
    return getattr(result, "nbytes", 0)


#: ufunc methods that only read their inputs (``at`` writes its first)
_READ_ONLY_INPUTS = frozenset(("__call__", "reduce", "accumulate", "outer", "reduceat"))


def _fast_host_operands(uf: numpy.ufunc, inputs: tuple[Any, ...], frame: Any) -> Any:
    """``device_array + host_array`` (mlp's ``x @ w1 + b1``, its bias a small host array: 100-150
    us of the H200's CPU a call through the general path), kept short: what the general path does
    for it once its checks have passed for these dtypes (``_fast_call``'s cache says the call
    records): the host operands' bytes charged to the device arrays' ledgers, the host operands
    uploaded (a kept copy where one holds the same bytes) and the call recorded. NotImplemented
    for anything else and wherever the general path must decide (it raises NumPy's errors)."""
    hosts: list[numpy.ndarray] = []
    described = _operand_keys(inputs, hosts)
    if described is None or not hosts:
        return NotImplemented
    backend, key = described[0], described[1]
    cached = _LOOPS.get((uf, backend, *key))  # (filled by the general path's first such call)
    if cached is None or not cached[2] or backend.prefers_host(uf):
        return NotImplemented
    loop = cached[0]
    shape = _broadcast_check(inputs)  # (NumPy's error before anything moves)
    if tracked:
        _residency.charge_moves([x for x in inputs if type(x) is DeviceArray], upload_bytes(hosts, backend))
    # (what _fast_call checks again for a call it records: Python ints against the loop, integer
    # powers' exponents, a 0-d result; else the call is recorded at once, its loop and shape known)
    plain = not described[4] and shape and not (uf is numpy.power and _integer_power(uf, loop))
    return _record_with_host_operands(uf, inputs, loop, (), backend, frame, checked=True,
                                      shape=shape if plain else None)


def _record_with_host_operands(uf: numpy.ufunc, inputs: tuple[Any, ...], loop: tuple[numpy.dtype, ...],
                               operand_dtypes: tuple[numpy.dtype, ...], backend: Any, frame: Any,
                               checked: bool = False, shape: tuple[int, ...] | None = None) -> Any:
    """``device_array * host_array``: the host operand moves to the device (as it would for the
    eager kernel), and the call is recorded like any other, so it fuses with what follows (resnet's
    ``sum(x[..., None] * w, axis=...)`` is then one map-reduce kernel); NotImplemented when it
    can't be recorded (``checked``: the caller knows it can; ``shape``: the broadcast shape, given
    where the caller has made every check _fast_call makes before it records)."""
    if not checked and not _recorder.can_fuse(backend, uf, loop, operand_dtypes) or \
            not all(type(x) in (DeviceArray, numpy.ndarray) or type(x) in _WEAK or isinstance(x, numpy.generic)
                    for x in inputs):
        return NotImplemented
    try:
        moved = tuple(DeviceArray(upload_operand(x, backend, uf), backend) if type(x) is numpy.ndarray else x
                      for x in inputs)
    except FALLBACK_FAULTS:  # [device faults] the general path decides (and counts) what runs where
        return NotImplemented
    if shape is not None:
        return _recorder.record(uf, loop, moved, backend, shape, frame)
    return _fast_call(uf, moved, True, frame)


def _zero_d_arrays(result: Any) -> Any:
    """A ufunc's result as arrays: NumPy scalars become 0-d arrays (``out=...``)."""
    if isinstance(result, tuple):
        return tuple(_zero_d_arrays(r) for r in result)
    return numpy.asarray(result) if isinstance(result, numpy.generic) else result


def _before_writes(mutated: list[DeviceArray]) -> None:
    """Pending graphs that read memory about to be written run first (they must see old values)."""
    for array in mutated:
        _lazy.before_write(array._backend, array._native)


def _fuse_into_out(uf: numpy.ufunc, method: str, inputs: tuple[Any, ...], options: dict[str, Any],
                   out: tuple[Any, ...], loop: tuple[numpy.dtype, ...], backend: Any, frame: Any) -> bool:
    """``a += expr`` and ``ufunc(..., out=a)``: record the call and run the graph straight into ``a``.

    Only when every input lies on this backend's device and none overlaps ``a`` other than
    as exactly the same view (an elementwise kernel reads each element before writing it).
    """
    if method != "__call__" or options or len(out) != 1 or type(out[0]) is not DeviceArray:
        return False
    target = out[0]
    operands = tuple(x.dtype for x in inputs if type(x) is DeviceArray)
    if target._backend is not backend or not _recorder.can_fuse(backend, uf, loop, operands + (target.dtype,)):
        return False
    if loop[uf.nin] != target.dtype and not numpy.can_cast(loop[uf.nin], target.dtype, "same_kind"):
        return False
    if not all(type(x) is DeviceArray and x._backend is backend or type(x) in _WEAK or isinstance(x, numpy.generic)
               for x in inputs):
        return False
    shape = _broadcast_check(inputs)
    if tuple(shape) != target.shape and numpy.broadcast_shapes(shape, target.shape) != target.shape:
        return False
    return _run_into(uf, loop, inputs, backend, target, frame)


def _run_into(uf: numpy.ufunc, loop: tuple[numpy.dtype, ...], inputs: tuple[Any, ...], backend: Any,
              target: Any, frame: Any, temporary: Any = None) -> bool:
    """Record ``uf(*inputs)`` and run its graph into ``target``; False where the graph reads
    memory overlapping ``target`` other than as the very same view. ``frame``: the user's, where
    the report counts the call."""
    destination = target._native
    array = _recorder.record(uf, loop, inputs, backend, target.shape, frame,
                             register=False, immediate=False)  # (no other thread runs it)
    if not _lazy.write_into(array, backend, destination, registered=False, temporary=temporary):
        _lazy.discard(array)
        return False
    return True


def _resolve_call(uf: numpy.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[numpy.dtype, ...]:
    """NumPy's loop dtypes for this call; raises NumPy's errors for no loop, casting and shapes."""
    out = kwargs.get("out") or (None,) * uf.nout
    signature = kwargs.get("signature")
    if signature is None and kwargs.get("dtype") is not None:
        signature = (None,) * uf.nin + (numpy.dtype(kwargs["dtype"]),) * uf.nout
    operands = tuple(_operand_dtype(x) for x in inputs) + tuple(None if o is None else o.dtype for o in out)
    options = {"casting": kwargs.get("casting", "same_kind")}
    if signature is not None:
        options["signature"] = signature
    loop = uf.resolve_dtypes(operands, **options)
    _check_python_ints(uf, inputs, loop)
    if uf.signature is None:
        shape = _broadcast_check(inputs)
        for o in out:
            if o is not None and numpy.broadcast_shapes(shape, o.shape) != o.shape:
                raise ValueError(
                    f"non-broadcastable output operand with shape {o.shape} doesn't match the broadcast shape {shape}"
                )
    return tuple(loop)


def _ufunc_reason(uf: numpy.ufunc, method: str, dtypes: tuple[Any, ...], options: dict[str, Any], backend: Any) -> str:
    label = uf.__name__ if method == "__call__" else f"{uf.__name__}.{method}"
    if not backend.supports_dtypes(tuple(d for d in dtypes if isinstance(d, numpy.dtype))):
        return f"{backend.name} does not support {label} on dtypes {', '.join(str(d) for d in dtypes)}"
    if options:
        return f"{backend.name} {label} does not support these arguments: {', '.join(sorted(options))}"
    return f"{backend.name} has no {label} loop for {', '.join(str(d) for d in dtypes)}"


__all__ = ["function", "on_host", "place_constructed", "ufunc"]


def report(reset: bool = False) -> _report.Report:
    """What ran where since the last reset: per function, per call site, bytes moved, fusion, and
    the placement rule in force (``npgpu.report()``)."""
    snapshot = _report.report(reset)
    snapshot.placement = _placement.describe(_config.current())
    return snapshot
