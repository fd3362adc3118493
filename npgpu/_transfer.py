"""Moving operands between host and device: scan arguments for arrays, upload, download, wrap.

Every transfer is timed and counted in the report; downloads are where the host waits for the
device, so floating-point warnings of the work before them are delivered there (_fperr). A
transfer first waits for the device work queued before it (a download needs its kernels' results;
an in-order queue runs a copy after them anyway): that wait is booked as device time, apart from
the time moving the bytes. From SPLIT_BYTES on a transfer waits for the device first (a sync) and
the two are timed apart; a smaller one's time is the device's round trip, all of it booked as
waiting (a sync costs about as much as the copy: 40-80 us on PoCL). An upload needs nothing the
device computes, so it waits only from UPLOAD_SPLIT_BYTES on (where the copy's own time is worth
timing apart): below that the kernels queued before it keep running while it copies (resnet's
147 kB weights, uploaded for each of 8 748 pixels, waited for the previous pixel's kernels).
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any

import numpy

from . import _fperr, _ops, _report
from ._array import DeviceArray
from ._errors import DeviceMemoryError
from .backends.base import axes_in_memory_order
from .lazy import materialize as _lazy


def has_arrays(seq: list[Any] | tuple[Any, ...]) -> bool:
    # Only sequences of arrays (or of sequences) are walked: a long list of numbers is data, not
    # operands. A short tuple may be an index key whose arrays come after a slice, an Ellipsis,
    # None or a number (a[:, rows], a[..., rows, cols]): it is walked when it holds an array.
    if not seq:
        return False
    if isinstance(seq[0], (DeviceArray, numpy.ndarray, list, tuple)):
        return True
    return type(seq) is tuple and len(seq) <= _KEY_ITEMS and any(isinstance(x, numpy.ndarray) for x in seq)


#: the most items an index key may have (NumPy's dimension limit, with room for None and Ellipsis)
_KEY_ITEMS = 2 * 64 + 1


def scan(obj: Any, devices: list[DeviceArray], hosts: list[numpy.ndarray]) -> None:
    """Collect the device arrays and host arrays among (nested list/tuple) arguments."""
    if isinstance(obj, DeviceArray):
        devices.append(obj)
    elif isinstance(obj, numpy.ndarray):
        hosts.append(obj)
    elif isinstance(obj, (list, tuple)) and has_arrays(obj):
        for item in obj:
            scan(item, devices, hosts)


def to_native_tree(obj: Any, backend: Any, func: Any) -> Any:
    """Device arrays -> their natives; host arrays -> uploaded natives (counted)."""
    if isinstance(obj, DeviceArray):
        if obj._backend is backend:
            return obj._native
        return upload(to_host(obj, func), backend, func)
    if isinstance(obj, numpy.ndarray):
        return upload(obj, backend, func)
    if isinstance(obj, (list, tuple)) and has_arrays(obj):
        return type(obj)(to_native_tree(item, backend, func) for item in obj)
    return obj


SPLIT_BYTES = 1 << 16
UPLOAD_SPLIT_BYTES = 4 << 20


def _record(direction: str, nbytes: int, start: float, moving: float, func: Any, split: int = SPLIT_BYTES) -> None:
    """Book a transfer that began at ``start`` and began moving bytes at ``moving``."""
    end = time.perf_counter()
    if nbytes < split:
        _report.record_transfer(direction, nbytes, 0.0, func, end - start)
    else:
        _report.record_transfer(direction, nbytes, end - moving, func, moving - start)


def upload(array: numpy.ndarray, backend: Any, func: Any = None) -> Any:
    """A device copy of a host array; an array whose axes are permuted (Fortran order, a
    transpose) keeps that layout, as ``np.asarray`` keeps it, and a broadcast view (a zero
    stride along an axis longer than one: ``broadcast_to(row, shape)``) moves its distinct
    elements only and is broadcast again on the device (its size is not its memory: 2**33
    elements of one zero were uploaded whole)."""
    if array.size > 1 and 0 in array.strides:
        spread = tuple(n > 1 and s == 0 for n, s in zip(array.shape, array.strides, strict=True))
        if any(spread):
            compact = array[tuple(slice(0, 1) if b else slice(None) for b in spread)]
            native = upload(compact, backend, func)
            return backend.call_function(numpy.broadcast_to, (native, array.shape), {})
    start = time.perf_counter()
    if array.nbytes >= UPLOAD_SPLIT_BYTES:
        backend.sync()  # (the queued work: device time, not the upload's)
    moving = time.perf_counter()
    native = backend.from_host_in_layout(array)
    _record("to_device", array.nbytes, start, moving, func, UPLOAD_SPLIT_BYTES)
    return native


#: host operands at most this large may have their device copy kept for reuse (REUSE_*)
REUSE_MAX_BYTES = 1 << 20
#: the device memory the kept copies may hold in all, and how many there may be
REUSE_TOTAL_BYTES = 64 << 20
REUSE_ENTRIES = 256
#: copies kept per layout (a loop over several same-shaped host operands)
REUSE_PER_LAYOUT = 4
_reused: collections.OrderedDict[tuple[Any, ...], list[tuple[bytes, Any]]] = collections.OrderedDict()
_reused_bytes = [0]
_reuse_lock = threading.Lock()


def _reuse_key(array: numpy.ndarray, backend: Any) -> tuple[Any, ...] | None:
    """Where a device copy of ``array`` is worth keeping, the key its copies are kept under; else
    None. Worth it where reading the host array's bytes to compare them (about one NumPy
    operation on it, by the measured costs) costs less than uploading them again."""
    costs = backend.costs
    nbytes = array.nbytes
    if (costs is None or nbytes > REUSE_MAX_BYTES or array.dtype.kind not in "biufc"
            or costs.host_op_s(nbytes) >= costs.upload_time_s(nbytes)):
        return None
    return (backend, array.shape, array.strides, array.dtype)  # (the backend itself: an id could be reused)


def reusable(array: numpy.ndarray, backend: Any) -> bool:
    """Whether a kept device copy of host memory laid out like ``array`` exists (its bytes not
    compared: an estimate, for charging what a call moves)."""
    key = _reuse_key(array, backend) if _reused else None
    return key is not None and key in _reused


def upload_bytes(hosts: list[numpy.ndarray], backend: Any) -> int:
    """The bytes uploading ``hosts`` as a call's inputs moves, kept copies not counted (an estimate)."""
    return sum(h.nbytes for h in hosts if not reusable(h, backend))


def upload_operand(array: numpy.ndarray, backend: Any, func: Any = None) -> Any:
    """A device copy of a host array a call only reads (a ufunc's input): small host operands
    that keep feeding device work (resnet's weights, a view of them taken at each of 9 408
    pixels) are uploaded once. The device copy of the same bytes in the same layout is kept,
    and used again while the host memory holds exactly those bytes (compared bit for bit, each
    time: the program may have changed them through NumPy). The copy is never handed to the
    program, so nothing writes it."""
    key = _reuse_key(array, backend)
    if key is None:
        return upload(array, backend, func)
    data = array.tobytes()
    with _reuse_lock:
        found = next((native for held, native in _reused.get(key, ()) if held == data), None)
        if found is not None:
            _reused.move_to_end(key)
    if found is not None:
        _report.record_kernel("reused_uploads", 1, reused_upload_bytes=array.nbytes)
        return found
    native = upload(array, backend, func)
    if array.tobytes() != data:  # (another thread wrote it meanwhile: that copy is not kept)
        return native
    with _reuse_lock:
        kept = _reused.setdefault(key, [])
        kept.insert(0, (data, native))
        dropped = kept[REUSE_PER_LAYOUT:]
        del kept[REUSE_PER_LAYOUT:]
        _reused_bytes[0] += len(data) - sum(len(held) for held, _ in dropped)
        while _reused and (_reused_bytes[0] > REUSE_TOTAL_BYTES or len(_reused) > REUSE_ENTRIES):
            _, dropped = _reused.popitem(last=False)
            _reused_bytes[0] -= sum(len(held) for held, _ in dropped)
    return native


def forget_reused() -> None:
    """Drop the kept device copies of host operands (their device memory is freed)."""
    with _reuse_lock:
        _reused.clear()
        _reused_bytes[0] = 0


def to_host(array: DeviceArray, func: Any = None, moved: list[float] | None = None) -> numpy.ndarray:
    """A host copy of a device array with the same memory order of its axes (NumPy's order='K'),
    so ``np.asarray(a.T)`` and a fallback's ``ravel(x, 'A')`` see the layout NumPy would.
    ``moved``: gets the seconds the copy took after its wait for the device (the whole time
    below SPLIT_BYTES, where there is no separate wait)."""
    start = time.perf_counter()
    backend = array._backend
    moving = start
    try:
        native = array._native  # (computing a pending array can find the device too small)
        _fperr.prefetch(backend)
        if native.nbytes >= SPLIT_BYTES:
            backend.sync()  # its kernels (and the work queued before them) finish: device time
        moving = time.perf_counter()
        order = axes_in_memory_order(native.shape, native.strides)
        if order is None:
            host = backend.to_host(native)
        else:  # download the axes in memory order (a C-order copy of that view), then put them back
            view = backend.call_function(numpy.transpose, (native, order), {})
            host = backend.to_host(view).transpose(tuple(numpy.argsort(order)))
    except DeviceMemoryError:  # [device faults] a fused result too large for the device: NumPy computes it
        if array._pending is None:
            raise
        host = _lazy.host_value(array)
        start = moving = time.perf_counter()  # (NumPy computed it: host time, neither moving nor waiting)
    _record("to_host", host.nbytes, start, moving, func)
    if moved is not None:
        moved.append(time.perf_counter() - moving)
    _fperr.deliver(backend)  # the host waited for the device: floating-point warnings come now
    return host


def host_operand(array: DeviceArray, func: Any = None) -> numpy.ndarray:
    """A device array NumPy is about to read: the array's own memory where the backend computes
    in host memory (Backend.host_view: nothing moves, nothing is booked), else a host copy."""
    if array._pending is None:
        view = array._backend.host_view(array._native)
        if view is not None:
            return view
    return to_host(array, func)


def same_sequence(result: tuple[Any, ...] | list[Any], items: Any) -> Any:
    """``items`` in a sequence of ``result``'s type: a named tuple (NumPy's ``UniqueCountsResult``,
    ``SlogdetResult``, ...) stays one, with its fields."""
    kind = type(result)
    if issubclass(kind, tuple) and kind is not tuple and hasattr(kind, "_fields"):
        return kind(*items)
    return kind(items)


def wrap(result: Any, backend: Any, func: Any, scalars: bool = True, sources: list[DeviceArray] | None = None) -> Any:
    """Backend results -> device arrays; tuples/lists element by element; scalars as they are.

    A 0-d result where NumPy returns a scalar (a full reduction, ``a[i]``, a ufunc of 0-d
    operands) is read back as that NumPy scalar, so legacy code that rounds, formats, compares
    or ``isinstance``-checks it behaves as with NumPy; ``scalars=False`` keeps 0-d arrays.
    A result that views the memory of one of ``sources`` (the call's device arrays) gets NumPy's
    ``base`` and is read-only if that array is."""
    if backend.is_native(result):
        if result.ndim == 0 and scalars and func not in _ops.ARRAY_RESULT_0D:
            return download_scalar(result, backend, func)
        if sources and getattr(result, "base", None) is not None:
            return _view_of(result, backend, sources, func)
        return DeviceArray(result, backend, readonly=func in _ops.READ_ONLY_RESULTS)
    if isinstance(result, tuple):
        return same_sequence(result, [wrap(r, backend, func, scalars, sources) for r in result])
    if isinstance(result, list):
        return [wrap(r, backend, func, scalars, sources) for r in result]
    return result




def view_of(result: Any, root: Any, backend: Any, source: DeviceArray, readonly: bool) -> DeviceArray | None:
    """A device array for native view ``result`` (whose NumPy base is ``root``) of ``source``'s
    memory: its base is the device array owning that memory, and it is read-only if ``source`` is
    (or ``readonly``); None where ``result`` views other memory."""
    native = source._device_data
    if native is root or (source._base is not None and getattr(native, "base", None) is root):
        owner = source if source._base is None else source._base
        return DeviceArray(result, backend, owner, source._readonly or readonly)
    return None


def _view_of(result: Any, backend: Any, sources: list[DeviceArray], func: Any) -> DeviceArray:
    """A device array for native view ``result``: its base is the owner of the memory it views."""
    readonly = func in _ops.READ_ONLY_RESULTS
    for source in sources:
        view = view_of(result, result.base, backend, source, readonly)
        if view is not None:
            return view
    return DeviceArray(result, backend, readonly=readonly)


def download_scalar(native: Any, backend: Any, func: Any = None) -> numpy.generic:
    """The NumPy scalar a 0-d native holds: one small read, counted as a transfer."""
    start = time.perf_counter()
    _fperr.prefetch(backend)
    host = backend.to_host(native)
    _report.record_transfer("to_host", host.nbytes, 0.0, func, time.perf_counter() - start)  # (a round trip)
    _fperr.deliver(backend)
    return host[()]


def to_host_tree(obj: Any, copies: dict[int, tuple[DeviceArray, numpy.ndarray]] | None = None,
                 read_only: frozenset[int] = frozenset()) -> Any:
    """Device arrays (also inside lists/tuples/dicts) -> host copies; remembers which is which.

    A device array that appears twice (``np.square(a, out=a)``) gets one host copy, as it is one
    array in NumPy: the result written into it is what goes back. ``read_only``: ids of device
    arrays whose host arrays only get read, which may be the device memory itself (host_operand)."""
    if isinstance(obj, DeviceArray):
        if copies is not None:
            for device, host in copies.values():  # one host copy per device array: `a += 1` is add(a, 1, out=a)
                if device is obj:
                    return host
        host = host_operand(obj) if id(obj) in read_only else to_host(obj)
        if copies is not None:
            copies[id(host)] = (obj, host)
        return host
    if isinstance(obj, (list, tuple)) and (has_arrays(obj) or holds_device_array(obj) is not None):
        return type(obj)(to_host_tree(item, copies, read_only) for item in obj)
    if isinstance(obj, dict):
        return {k: to_host_tree(v, copies, read_only) for k, v in obj.items()}
    return obj


def holds_device_array(seq: list[Any] | tuple[Any, ...]) -> DeviceArray | None:
    """A device array hiding anywhere in a (nested) sequence, also behind numbers
    (``np.block([1.0, device_array])``, which the first-item rule calls data), or None."""
    for item in seq:
        t = type(item)
        if t is DeviceArray:
            return item
        if t is list or t is tuple:
            found = holds_device_array(item)
            if found is not None:
                return found
    return None
