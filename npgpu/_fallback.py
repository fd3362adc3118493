"""Host execution of work the device backend can't do: operands to host, NumPy runs, results back.

Every fallback is counted in the report and honours ``on_fallback`` (ignore, warn, raise, log).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy

from . import _config, _placement, _report
from ._array import DeviceArray
from ._errors import DeviceMemoryError
from ._report import notify
from ._transfer import same_sequence, scan, to_host_tree, upload
from .lazy import materialize as _lazy


def _restore(result: Any, copies: dict[int, tuple[DeviceArray, numpy.ndarray]]) -> Any:
    """A result that *is* the host copy of a device operand (out=, in-place) -> that device array."""
    if isinstance(result, numpy.ndarray) and id(result) in copies:
        return copies[id(result)][0]
    if isinstance(result, tuple):
        return same_sequence(result, [_restore(r, copies) for r in result])
    return result


def run_on_host(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
                mutated: list[DeviceArray], *, record: str | None, rule: dict[str, Any] | None = None) -> Any:
    """Run ``call`` in NumPy on host copies of any device operands, writing back what it mutates
    (``rule``: the placement rule's report arguments, _dispatch._rule)."""
    if record is not None:
        _report.record(key, record, **(rule or {}))
    copies: dict[int, tuple[DeviceArray, numpy.ndarray]] = {}
    # operands NumPy only reads may be the device's memory itself (host_operand); what it
    # writes (out=, in-place) is a copy written back below, after the pending work that reads it
    devices: list[DeviceArray] = []
    for value in (*args, *kwargs.values()):
        scan(value, devices, [])
    written = {id(d) for d in mutated}
    outs = kwargs.get("out")
    written |= {id(o) for o in (outs if isinstance(outs, tuple) else (outs,)) if isinstance(o, DeviceArray)}
    read_only = frozenset(id(d) for d in devices if id(d) not in written)
    host_args = tuple(to_host_tree(a, copies, read_only) for a in args)
    host_kwargs = to_host_tree(kwargs, copies, read_only)
    result = call(*host_args, **host_kwargs)
    if read_only:  # a result that is (a view of) device memory becomes a host array of its own
        result = _unaliased(result, [h for d, h in copies.values() if id(d) in read_only])
    for device in mutated:
        _lazy.before_write(device._backend, device._native)
    for device in mutated:
        for dev, host in copies.values():
            if dev is device:
                device._backend.write(device._native, host)
                break
    return _restore(result, copies)


def _unaliased(result: Any, memory: list[numpy.ndarray]) -> Any:
    """``result`` with every array that may share memory with ``memory`` copied (NumPy returns views:
    ``np.transpose``, ``np.reshape``, an operand as it is)."""
    if isinstance(result, numpy.ndarray):
        return result.copy(order="K") if any(numpy.may_share_memory(result, m) for m in memory) else result
    if isinstance(result, (tuple, list)):
        return same_sequence(result, [_unaliased(r, memory) for r in result])
    return result


def fallback(key: Any, call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
             mutated: list[DeviceArray], state: _config.State, *, reason: str) -> Any:
    """The backend can't do this call: run it in NumPy; a large result goes back to the device."""
    notify(state, key, reason)
    _report.record(key, "fallback", reason=reason)
    result = run_on_host(key, call, args, kwargs, mutated, record=None)
    out = kwargs.get("out")
    given = {id(o) for o in (out if isinstance(out, tuple) else (out,)) if o is not None}
    return place_result(result, state, args, given)


def place_result(result: Any, state: _config.State, args: tuple[Any, ...], given: set[int] | None = None) -> Any:
    """A host result where it belongs: large results of device inputs go back to the device,
    except arrays the caller handed in (``out=``), which NumPy returns as they are."""
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
        return same_sequence(result, [place_result(r, state, args, given) for r in result])
    return result


