"""The fusion recorder: elementwise ufunc calls on device arrays become pending arrays.

Nothing runs while recording; materialize.py computes a pending array when its value is needed.
The C extension (npgpu/_speedups.c) mirrors record_binary and record_unary; these are the reference.
"""

from __future__ import annotations

from typing import Any

import numpy

from .. import _fperr, _native, _ops, _report
from .._array import RECORDED_SCALARS, DeviceArray
from ..kernels import ufuncs as _table
from .materialize import materialize
from .registry import Pending, ScalarArg, _forget, _get_ident, _Ref, _refs

#: Graphs larger than this many ufunc nodes are materialized before growing further.
MAX_NODES = 64

_new_array = DeviceArray.__new__
_local = _report._local

def can_fuse(backend: Any, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...],
             operands: tuple[numpy.dtype, ...] = ()) -> bool:
    """Whether ``ufunc`` with ``loop`` over arrays of ``operands`` dtypes can be recorded for ``backend``."""
    if ufunc.nout != 1 or not backend.supports_fusion:
        return False
    if ufunc is numpy.power and loop[1].kind == "i":  # NumPy raises for negative integer exponents:
        return False  # the eager path checks them at the call, where the error belongs
    key = (backend, ufunc, loop, operands)
    known = _FUSIBLE.get(key)
    if known is None:
        dtypes = loop + operands
        known = (all(_table.is_supported_dtype(dt) for dt in dtypes) and _table.supports_loop(ufunc, loop)
                 and backend.supports_dtypes(dtypes))
        if len(_FUSIBLE) >= _FUSIBLE_MAX:
            _FUSIBLE.clear()
        if not _ops.made_at_run_time(ufunc):
            _FUSIBLE[key] = known
    return known


#: can_fuse's answers by (backend, ufunc, loop, operand dtypes): facts of the one table and of the
#: backend's dtypes, which don't change, asked at every in-place call (13 us a call on this
#: machine's kind, uncached); threads may both compute one, with the same answer
_FUSIBLE: dict[tuple[Any, ...], bool] = {}
_FUSIBLE_MAX = 4096


def record(ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], inputs: tuple[Any, ...], backend: Any,
           shape: tuple[int, ...], frame: Any = None, register: bool = True, immediate: bool = True) -> Any:
    """A pending device array for ``ufunc(*inputs)``; nothing runs yet, unless NumPy's errstate
    here wants this call's floating-point errors at once (``immediate``: the caller
    materializes the array itself right away). ``register=False``: the caller materializes it
    at once (into ``out``), so no other thread may see it and run it first."""
    operands: Any = inputs  # a list once a scalar is wrapped
    nodes = 1
    first = second = None  # pending operands already counted (ufuncs here take at most 3 inputs)
    i = 0
    for x in inputs:
        if type(x) is DeviceArray:
            pending = x._pending
            if pending is not None and x is not first and x is not second:
                if first is None:
                    first = x
                else:
                    second = x
                if pending.consumers:
                    # Used by a second graph (a loop reusing a lazy value): compute it once, here,
                    # rather than again inside every graph that reads it.
                    materialize(x)
                else:
                    pending.consumers = 1
                    nodes += pending.nodes
        else:
            if operands is inputs:
                operands = list(inputs)
            # a Python scalar is weak: it enters as the loop's dtype (NEP 50)
            operands[i] = ScalarArg(x if isinstance(x, numpy.generic) else loop[i].type(x))
        i += 1
    if nodes > MAX_NODES:
        for x in operands:
            if type(x) is DeviceArray and x._pending is not None:
                materialize(x)
        nodes = 1
    errstate = _fperr.current()
    array = _new_pending(Pending(ufunc, loop, operands if operands is inputs else tuple(operands), shape, nodes, frame,
                                 errstate), backend, register)
    if immediate and errstate.immediate and errstate.immediate & _table.error_categories(ufunc, loop):
        # raise/call/print/log asked for this call's errors: they come now, inside the user's errstate
        materialize(array)
    return array


def _new_pending(pending: Pending, backend: Any, register: bool = True) -> Any:
    """A device array whose value is ``pending``, registered so writes and sync() find it."""
    array = _new_array(DeviceArray)  # DeviceArray.pending(), inlined: this is the hot path
    array._device_data = None
    array._pending = pending
    array._backend = backend
    array._base = None
    array._readonly = False
    array._views = None
    if register:
        ref = _Ref(array, _forget)  # _pending.add(array), inlined
        ref.owner = _get_ident()
        _refs.add(ref)
    return array


def record_binary(ufunc: numpy.ufunc, x: Any, y: Any, reflected: bool, frame: Any, loops: dict[Any, Any]) -> Any:
    """``record`` for the commonest call, in one function: ``ufunc(x, y)`` (``ufunc(y, x)`` when
    ``reflected``) with ``x`` a device array and ``y`` a device array of the same shape and
    backend, a Python float or a NumPy scalar of RECORDED_SCALARS, its loop already resolved and
    fusible (in ``loops``, the dispatcher's cache). None when any of that isn't so: the general
    path then decides."""
    errstate = _fperr.current()
    if errstate.immediate:
        return None  # (record materializes such a call at once)
    backend = x._backend
    xp = x._pending
    xs = xp or x._device_data  # (a Pending is always true)
    ty = type(y)
    scalar = ty is float or ty in RECORDED_SCALARS
    if scalar:
        yp = None
        yk = float if ty is float else y.dtype  # (the dispatcher's key: a NumPy scalar by its dtype)
        key = (ufunc, backend, yk, xs.dtype) if reflected else (ufunc, backend, xs.dtype, yk)
    else:
        if type(y) is not DeviceArray or y._backend is not backend:
            return None
        yp = y._pending
        ys = yp or y._device_data
        if ys.shape != xs.shape:
            return None
        key = (ufunc, backend, xs.dtype, ys.dtype)
    if not xs.shape:
        return None  # a 0-d result is NumPy's scalar: the general path computes it at once
    cached = loops.get(key)
    if cached is None or not cached[2]:
        return None
    loop = cached[0]
    nodes = 1 + (xp.nodes if xp is not None else 0) + (yp.nodes if yp is not None and y is not x else 0)
    if nodes > MAX_NODES:
        return None
    if xp is not None:
        if xp.consumers:  # read by a second graph: computed once, here (see record)
            materialize(x)
            nodes -= xp.nodes
        else:
            xp.consumers = 1
    if scalar:  # a Python float is weak: it enters as the loop's dtype (NEP 50); a NumPy scalar as itself
        y = ScalarArg(loop[0 if reflected else 1].type(y) if ty is float else y)
    elif yp is not None and y is not x:
        if yp.consumers:
            materialize(y)
            nodes -= yp.nodes
        else:
            yp.consumers = 1
    return _new_pending(Pending(ufunc, loop, (y, x) if reflected else (x, y), xs.shape, nodes, frame, errstate),
                        backend)


def record_unary(ufunc: numpy.ufunc, x: Any, frame: Any, loops: dict[Any, Any]) -> Any:
    """``record_binary``'s counterpart for ``ufunc(x)``."""
    errstate = _fperr.current()
    if errstate.immediate:
        return None
    backend = x._backend
    xp = x._pending
    xs = xp or x._device_data
    cached = loops.get((ufunc, backend, xs.dtype))
    if cached is None or not cached[2] or not xs.shape:
        return None  # (not fusible, or a 0-d result: NumPy's scalar, computed at once)
    nodes = 1
    if xp is not None:
        nodes += xp.nodes
        if nodes > MAX_NODES:
            return None
        if xp.consumers:
            materialize(x)
            nodes = 1
        else:
            xp.consumers = 1
    return _new_pending(Pending(ufunc, cached[0], (x,), xs.shape, nodes, frame, errstate), backend)


# The C versions of record_binary, record_unary and the graph walk (npgpu/_speedups.c) are what
# the hot paths use when the extension is built; npgpu/_native.py switches between the two.
use_native = _native.use_native
