"""Host execution of work the device backend can't do: operands to host, NumPy runs, results back.

Every fallback is counted in the report and honours ``on_fallback`` (ignore, warn, raise, log).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from typing import Any

import numpy

from . import _config, _placement, _report
from ._array import DeviceArray
from ._errors import DeviceMemoryError, FallbackError, FallbackWarning
from .lazy import materialize as _lazy

logger = logging.getLogger("npgpu")


def to_host_tree(obj: Any, copies: dict[int, tuple[DeviceArray, numpy.ndarray]] | None = None) -> Any:
    """Device arrays (also inside lists/tuples/dicts) -> host copies; remembers which is which.

    A device array that appears twice (``np.square(a, out=a)``) gets one host copy, as it is one
    array in NumPy: the result written into it is what goes back."""
    from ._dispatch import _has_arrays, to_host

    if isinstance(obj, DeviceArray):
        if copies is not None:
            for device, host in copies.values():  # one host copy per device array: `a += 1` is add(a, 1, out=a)
                if device is obj:
                    return host
        host = to_host(obj)
        if copies is not None:
            copies[id(host)] = (obj, host)
        return host
    if isinstance(obj, (list, tuple)) and (_has_arrays(obj) or holds_device_array(obj) is not None):
        return type(obj)(to_host_tree(item, copies) for item in obj)
    if isinstance(obj, dict):
        return {k: to_host_tree(v, copies) for k, v in obj.items()}
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


def _restore(result: Any, copies: dict[int, tuple[DeviceArray, numpy.ndarray]]) -> Any:
    """A result that *is* the host copy of a device operand (out=, in-place) -> that device array."""
    if isinstance(result, numpy.ndarray) and id(result) in copies:
        return copies[id(result)][0]
    if isinstance(result, tuple):
        return tuple(_restore(r, copies) for r in result)
    return result


def run_on_host(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                mutated: list[DeviceArray], *, record: str | None) -> Any:
    """Run ``call`` in NumPy on host copies of any device operands, writing back what it mutates."""
    if record is not None:
        _report.record(key, record)
    copies: dict[int, tuple[DeviceArray, numpy.ndarray]] = {}
    host_args = tuple(to_host_tree(a, copies) for a in args)
    host_kwargs = to_host_tree(kwargs, copies)
    result = call(*host_args, **host_kwargs)
    if mutated and _lazy.pending_count():
        for device in mutated:
            _lazy.before_write(device._backend, device._native)
    for device in mutated:
        for dev, host in copies.values():
            if dev is device:
                device._backend.write(device._native, host)
                break
    return _restore(result, copies)


def notify(state: _config.State, key: Any, reason: str) -> None:
    """Tell the user about a fallback as ``on_fallback`` asks."""
    name = getattr(key, "__name__", repr(key))
    message = f"npgpu: {name} ran in NumPy on the host: {reason}"
    if state.on_fallback == "raise":
        raise FallbackError(message)
    if state.on_fallback == "warn":
        warnings.warn(message, FallbackWarning, stacklevel=5)
    elif state.on_fallback == "log":
        logger.warning(message)


def fallback(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             mutated: list[DeviceArray], state: _config.State, *, reason: str) -> Any:
    """The backend can't do this call: run it in NumPy; a large result goes back to the device."""
    notify(state, key, reason)
    _report.record(key, "fallback", reason=reason)
    result = run_on_host(key, call, args, kwargs, mutated, record=None)
    out = kwargs.get("out")
    given = {id(o) for o in (out if isinstance(out, tuple) else (out,)) if o is not None}
    return _place_result(result, state, args, given)


def _place_result(result: Any, state: _config.State, args: tuple[Any, ...], given: set[int] | None = None) -> Any:
    """A host result where it belongs: large results of device inputs go back to the device,
    except arrays the caller handed in (``out=``), which NumPy returns as they are."""
    from ._dispatch import scan, upload

    if isinstance(result, DeviceArray) or (given and id(result) in given):
        return result
    # (exactly ndarray: a subclass the host computed, a masked array or a matrix, stays with NumPy)
    if type(result) is numpy.ndarray and result.dtype.kind in "biufc":
        devices: list[DeviceArray] = []
        for value in args:
            scan(value, devices, [])
        if devices and result.nbytes >= _placement.upload_threshold_bytes(state):
            backend = devices[0]._backend
            if backend.supports_dtypes((result.dtype,)):
                try:
                    return DeviceArray(upload(result, backend), backend, readonly=not result.flags.writeable)
                except DeviceMemoryError:  # [device faults] too large for the device: it stays on the host
                    return result
    if isinstance(result, (tuple, list)):
        return type(result)(_place_result(r, state, args, given) for r in result)
    return result


_lazy.notify_fallback = notify  # (lazy.py, below this module, counts the fallbacks of fused work)
