"""Lazy elementwise recording: ufunc calls on device arrays build a graph, run as one kernel.

A pending device array knows its shape and dtype; its value is computed (materialized) when
something needs it: a non-elementwise consumer, host conversion, a write into an array the
graph reads, a graph-size limit, or ``npgpu.sync()``.

Threads. Recording needs no lock: a graph grows only from the arrays its thread hands it (so it
mixes two threads' work only where they share arrays), and each recording step is one C call or
a few Python statements whose shared effects are single dict operations. A pending array is
materialized once: under one of a few locks chosen by its identity, then looked at again (another
thread may have computed it meanwhile), and it goes from pending to computed by two adjacent slot
stores with no call between them, which neither a thread switch nor a KeyboardInterrupt splits.
Every pending array is registered with the thread that recorded it: ``npgpu.sync()`` runs the
calling thread's graphs (another thread's half-recorded expression is its own business), while a
write runs every thread's graphs that read the memory it is about to change.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

from .. import _config, _fperr, _native, _report
from .._array import DeviceArray
from .._errors import FALLBACK_FAULTS, DeviceMemoryError, KernelBuildError
from . import ufuncs as _table
from .ir import Graph, GraphBuilder, Node, evaluate

#: Graphs larger than this many ufunc nodes are materialized before growing further.
MAX_NODES = 64

#: numpy function name -> (map-reduce op, whether the result is divided by the count)
REDUCTIONS = {"sum": ("add", False), "prod": ("multiply", False), "mean": ("add", True),
              "max": ("maximum", False), "min": ("minimum", False), "amax": ("maximum", False),
              "amin": ("minimum", False), "any": ("logical_or", False), "all": ("logical_and", False)}


class ScalarArg:
    """A scalar operand: a NumPy scalar of the dtype it enters the graph with (a kernel argument)."""

    __slots__ = ("value",)

    def __init__(self, value: numpy.generic) -> None:
        self.value = value


class Pending:
    """A recorded ufunc call whose operands are device arrays (pending or not) and scalars.

    ``errstate``: NumPy's errstate where the call was made (``_fperr.ErrState``), which its
    floating-point errors follow whenever the graph runs."""

    __slots__ = ("ufunc", "loop", "operands", "shape", "dtype", "nodes", "consumers", "code", "lasti", "errstate")

    def __init__(self, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...], operands: tuple[Any, ...],
                 shape: tuple[int, ...], nodes: int, frame: Any, errstate: _fperr.ErrState) -> None:
        self.ufunc = ufunc
        self.errstate = errstate
        self.loop = loop
        self.operands = operands
        self.shape = shape
        self.dtype = loop[ufunc.nin]
        self.nodes = nodes
        self.consumers = 0  # graphs recorded on top of this one
        # the user's call site, counted in the report once the call has run (after its launch)
        if frame is None:
            self.code = None
            self.lasti = 0
        else:
            self.code = frame.f_code
            self.lasti = frame.f_lasti


class _Ref(weakref.ref):  # type: ignore[type-arg]
    __slots__ = ("key", "owner")  # id of the array; threading.get_ident() of the thread that recorded it


_get_ident = threading.get_ident


class _PendingArrays:
    """Every pending array alive (by identity: arrays are unhashable), so writes and sync()
    can find the graphs that must run first; an array that dies unused is simply forgotten.
    Threads add and remove entries at once: each change is one dict operation, and readers take
    a snapshot first."""

    def __init__(self) -> None:
        self._refs: dict[int, _Ref] = {}
        self._forget = self._dropped  # one bound callback for every reference

    def _dropped(self, ref: _Ref) -> None:
        self._refs.pop(ref.key, None)

    def add(self, array: Any) -> None:
        ref = _Ref(array, self._forget)
        ref.key = key = id(array)
        ref.owner = _get_ident()
        self._refs[key] = ref

    def discard(self, array: Any) -> None:
        self._refs.pop(id(array), None)

    def __len__(self) -> int:
        return len(self._refs)

    def __bool__(self) -> bool:
        return bool(self._refs)

    def alive(self, owner: int | None = None) -> list[Any]:
        """The pending arrays still alive (recorded by thread ``owner`` when given), as a list: the
        registry changes while it is used. (list() copies the values in one step; iterating the
        dict itself let another thread's recording break the loop: "dictionary changed size".)"""
        refs = list(self._refs.values())
        if owner is not None:
            refs = [ref for ref in refs if ref.owner == owner]
        return [array for array in [ref() for ref in refs] if array is not None]

    def __iter__(self) -> Any:
        return iter(self.alive())


_pending = _PendingArrays()
_refs, _forget = _pending._refs, _pending._forget
_new_array = DeviceArray.__new__
_local = _report._local


def can_fuse(backend: Any, ufunc: numpy.ufunc, loop: tuple[numpy.dtype, ...],
             operands: tuple[numpy.dtype, ...] = ()) -> bool:
    """Whether ``ufunc`` with ``loop`` over arrays of ``operands`` dtypes can be recorded for ``backend``."""
    if ufunc.nout != 1 or not getattr(backend, "supports_fusion", False):
        return False
    if ufunc is numpy.power and loop[1].kind == "i":  # NumPy raises for negative integer exponents:
        return False  # the eager path checks them at the call, where the error belongs
    dtypes = loop + operands
    return (all(_table.is_supported_dtype(dt) for dt in dtypes) and _table.supports_loop(ufunc, loop)
            and backend.supports_dtypes(dtypes))


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
    if register:
        ref = _Ref(array, _forget)  # _pending.add(array), inlined
        ref.key = key = id(array)
        ref.owner = _get_ident()
        _refs[key] = ref
    return array


def record_binary(ufunc: numpy.ufunc, x: Any, y: Any, reflected: bool, frame: Any, loops: dict[Any, Any]) -> Any:
    """``record`` for the commonest call, in one function: ``ufunc(x, y)`` (``ufunc(y, x)`` when
    ``reflected``) with ``x`` a device array and ``y`` a device array of the same shape and
    backend or a Python float, its loop already resolved and fusible (in ``loops``, the
    dispatcher's cache). None when any of that isn't so: the general path then decides."""
    errstate = _fperr.current()
    if errstate.immediate:
        return None  # (record materializes such a call at once)
    backend = x._backend
    xp = x._pending
    xs = xp or x._device_data  # (a Pending is always true)
    scalar = type(y) is float
    if scalar:
        yp = None
        key = (ufunc, backend, float, xs.dtype) if reflected else (ufunc, backend, xs.dtype, float)
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
    if scalar:
        y = ScalarArg(loop[0 if reflected else 1].type(y))  # weak: it enters as the loop's dtype (NEP 50)
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


def _count_sites(pendings: list[Pending]) -> None:
    """Count ran calls where the user made them (_report.count, inlined); after the launch, so
    this CPU work overlaps the kernel."""
    try:
        table = _local.table
    except AttributeError:
        table = _report.thread_table()
    for p in pendings:
        code = p.code
        if code is None:
            _report.record(p.ufunc, "device")
            continue
        key = (id(p.ufunc), id(code), p.lasti, "device")
        n = table.get(key)
        if n is None:
            _report.first_count(table, key, p.ufunc, code)
        else:
            table[key] = n + 1


#: Graphs built so far, by recording signature: a loop that records the same expression over
#: new arrays reuses the graph instead of building it again (most of materializing's CPU cost).
_GRAPHS: dict[tuple[Any, ...], Graph] = {}
_GRAPHS_MAX = 512


class _GraphState:
    """Turns a tree of pending arrays into an IR graph plus its launch operands.

    The walk writes a flat signature: one entry per leaf (its dtype; a leaf read twice is one
    entry), per scalar (its dtype) and per ufunc call (ufunc, loop, operand positions, errstate).
    Equal signatures give equal graphs, so the graph is built once per signature.
    """

    def __init__(self) -> None:
        self.inputs: list[Any] = []
        self.scalars: list[numpy.generic] = []
        self.signature: list[Any] = []
        self._seen: dict[int, int] = {}  # id of a leaf's native or of a pending array -> position
        self.pendings: list[Pending] = []  # the recorded calls the graph runs

    def _walk(self, root: Any) -> None:
        """Fill the signature, inputs, scalars and pendings from the tree under ``root``."""
        # (locals and closure cells, not attributes: this visits every node of every launch)
        signature, seen = self.signature, self._seen
        add, add_input, add_scalar, add_pending = (signature.append, self.inputs.append, self.scalars.append,
                                                   self.pendings.append)

        def walk(x: Any, pending: Any, walk: Any) -> int:  # (itself as an argument: a closure over itself is a cycle)
            """Position of pending ``x``'s call (``pending``: its recorded call, read once: another thread
            may compute ``x`` meanwhile); its scalars and leaves are handled inline."""
            refs = []
            for o in pending.operands:
                if type(o) is ScalarArg:
                    value = o.value
                    add_scalar(value)
                    add(("scalar", value.dtype))
                    refs.append(len(signature) - 1)
                    continue
                inner = o._pending
                if inner is None:  # a leaf, by its native (two views of one native are one input)
                    data = o._device_data
                    key = id(data)
                    position = seen.get(key)
                    if position is None:
                        add_input(data)
                        add(("input", data.dtype))
                        position = seen[key] = len(signature) - 1
                else:
                    position = seen.get(id(o))
                    if position is None:
                        position = walk(o, inner, walk)
                refs.append(position)
            add((pending.ufunc, pending.loop, tuple(refs), pending.errstate))
            add_pending(pending)
            position = seen[id(x)] = len(signature) - 1
            return position

        walk(root, root._pending, walk)

    def graph(self, array: Any, out_dtype: numpy.dtype) -> Graph:
        """The graph computing pending ``array`` stored as ``out_dtype``; fills inputs and scalars."""
        if _walk_native is not None:
            key, self.inputs, self.scalars, self.pendings = _walk_native(array, out_dtype)
        else:
            self._walk(array)
            key = (*self.signature, out_dtype)
        graph = _GRAPHS.get(key)
        if graph is None:
            builder = GraphBuilder()
            nodes: list[Node] = []
            calls: dict[Node, int] = {}  # node -> position of the (first) recorded call computing it
            for entry in key[:-1]:
                if entry[0] == "input":
                    nodes.append(builder.input(entry[1]))
                elif entry[0] == "scalar":
                    nodes.append(builder.scalar(entry[1]))
                else:
                    ufunc, loop, refs, errstate = entry
                    check = errstate.check & _table.error_categories(ufunc, loop)
                    nodes.append(builder.apply_recorded(ufunc, loop, [nodes[i] for i in refs], check))
                    calls.setdefault(nodes[-1], len(calls))
            root = len(calls) - 1
            graph = builder.build([nodes[-1]], [out_dtype], store_check=key[-2][3].check)
            if graph.error_nodes:  # (a narrowing store reports for the root call)
                object.__setattr__(graph, "error_sources", tuple(calls.get(n, root) for n in graph.error_nodes))
            if len(_GRAPHS) >= _GRAPHS_MAX:
                _GRAPHS.pop(next(iter(_GRAPHS)), None)  # oldest first (another thread may have taken it)
            _GRAPHS[key] = graph
        return graph


def _launch_stats(state: _GraphState, nbytes: int, started: float) -> None:
    # each op folded into the kernel avoided writing and re-reading one temporary
    ops = len(state.pendings)
    _report.record_kernel("kernels_launched", 1, ops_fused=ops, temporary_bytes_avoided=2 * max(ops - 1, 0) * nbytes,
                          fused_seconds=time.perf_counter() - started)
    _count_sites(state.pendings)


#: A materialization holds the lock its array's identity picks, so a pending array is computed
#: once while other threads that need it wait (64: threads rarely wait on each other's arrays).
_LOCKS = tuple(threading.RLock() for _ in range(64))


def _lock_of(array: Any) -> Any:
    return _LOCKS[(id(array) >> 4) & 63]


def materialize(array: Any, out: Any = None) -> None:
    """Compute a pending array with one kernel (into ``out``'s native when given).

    A kernel the device can't build is computed by NumPy instead and uploaded (counted, with the
    compiler's message). A result the device can't hold raises DeviceMemoryError and leaves the
    array pending, its graph intact (the dispatcher then falls back for the call that needed it)."""
    if array._pending is None:
        return
    with _lock_of(array):
        pending = array._pending
        if pending is None:  # another thread computed it while this one waited
            return
        started = time.perf_counter()
        backend = array._backend
        state = _GraphState()
        graph = state.graph(array, pending.dtype if out is None else out.dtype)
        launch = _fperr.fused_launch(graph, state.pendings) if graph.error_nodes else None
        try:
            if launch is None:
                result = backend.run_fused(graph, state.inputs, state.scalars, pending.shape, out)
            else:
                result = backend.run_fused(graph, state.inputs, state.scalars, pending.shape, out, launch)
        except KernelBuildError as exc:
            result = _run_on_host(array, backend, graph, state, out, exc.reason)
            started = launch = None
        # (two adjacent stores: no thread switch or signal comes between them)
        array._device_data = result
        array._pending = None
    _pending.discard(array)
    if started is not None:
        _launch_stats(state, result.nbytes, started)
    if launch is not None:
        _fperr.launched(backend, launch)


def _host_result(array: Any, backend: Any, graph: Graph, state: _GraphState) -> numpy.ndarray:
    """Pending ``array``'s value computed by NumPy from host copies of its graph's inputs."""
    inputs = [backend.to_host(native) for native in state.inputs]
    value = evaluate(graph, inputs, state.scalars)[0]
    return numpy.array(numpy.broadcast_to(value, array._pending.shape), graph.out_dtypes[0], copy=True)


def _run_on_host(array: Any, backend: Any, graph: Graph, state: _GraphState, out: Any, reason: str) -> Any:
    """The graph in NumPy, its result put on the device (into ``out``): a counted fallback."""
    notify_fallback(_config.current(), array._pending.ufunc, reason)
    host = _host_result(array, backend, graph, state)
    for p in state.pendings:
        _report.record(p.ufunc, "fallback", reason=reason)
    if out is None:
        return backend.from_host(host)
    backend.write(out, host)
    return out


def host_value(array: Any) -> numpy.ndarray:
    """A pending array's value computed by NumPy on the host, the array left pending: for a result
    the device can't hold (DeviceMemoryError), when the host needs the value. Counted as fallbacks
    with the reason "device memory"."""
    with _lock_of(array):
        pending = array._pending
        if pending is None:
            return array._backend.to_host(array._device_data)
        nbytes = math.prod(pending.shape) * pending.dtype.itemsize
        reason = f"device memory: the {nbytes}-byte result did not fit on the device"
        notify_fallback(_config.current(), pending.ufunc, reason)
        state = _GraphState()
        graph = state.graph(array, pending.dtype)
        host = _host_result(array, array._backend, graph, state)
    for p in state.pendings:
        _report.record(p.ufunc, "fallback", reason=reason)
    return host


#: _fallback.notify (set when that module loads; it imports this one): tells the user of a fallback
#: as ``on_fallback`` asks, raising FallbackError before any work when it says "raise".
notify_fallback: Any = None


def _reads(array: Any, test: Any) -> bool:
    """Whether ``test(native)`` holds for any materialized array the graph of ``array`` reads."""
    stack = [array]
    while stack:
        x = stack.pop()
        pending = x._pending
        if pending is None:
            if test(x._device_data):
                return True
            continue
        stack.extend(o for o in pending.operands if not isinstance(o, ScalarArg))
    return False


def reads_buffer(array: Any, backend: Any, native: Any) -> bool:
    """Whether pending ``array``'s graph reads memory that ``native`` may share."""
    return _reads(array, lambda data: backend.shares_memory(data, native))


def reads_overlapping(array: Any, backend: Any, native: Any) -> bool:
    """Whether the graph reads memory overlapping ``native`` other than as the very same view."""
    return _reads(array, lambda data: backend.shares_memory(data, native) and not backend.same_view(data, native))


def discard(array: Any) -> None:
    """Forget a recorded array that will never be computed."""
    _pending.discard(array)


def _run_outermost(select: Any, owner: int | None = None, too_large: set[int] | None = None) -> None:
    """Materialize the pending arrays ``select`` picks (among thread ``owner``'s, when given),
    outermost graphs first. With ``too_large`` (a set), an array the device can't hold stays
    pending (its id added to the set) instead of raising DeviceMemoryError.

    An array that is only an operand of other pending arrays is computed inside their kernel;
    once those ran it is freed, or, if the user still holds it, it becomes outermost itself.
    """
    while True:
        chosen = [array for array in _pending.alive(owner) if select(array)
                  and (too_large is None or id(array) not in too_large)]
        if not chosen:
            return
        inner = {id(o) for array in chosen for o in _operands(array)
                 if type(o) is DeviceArray and o._pending is not None}
        outermost = [array for array in chosen if id(array) not in inner]
        del chosen  # keep no reference to inner arrays: unreferenced ones must be freed
        for array in outermost:
            _materialize_or_keep(array, too_large)
        del outermost


def before_write(backend: Any, native: Any, skip: Any = None) -> None:
    """Run every pending graph that reads ``native``'s memory: a write is about to change it."""
    _run_outermost(lambda array: array is not skip and array._pending is not None and array._backend is backend
                   and reads_buffer(array, backend, native))


def _operands(array: Any) -> tuple[Any, ...]:
    pending = array._pending  # (read once, see _is_root)
    return () if pending is None else pending.operands


def _is_root(array: Any) -> bool:
    # (one read of _pending: another thread may compute the array between two; and a local of a
    # function, which dies with it, unlike a comprehension's walrus target, which held the graph)
    pending = array._pending
    return pending is not None and not pending.consumers


def flush_all(owner: int | None = None) -> None:
    """Materialize every pending array recorded by thread ``owner`` (every thread's when None).

    ``npgpu.sync()`` passes its own thread: another thread's graphs are that thread's to run (it
    may be half-way through an expression, and their errors are its own)."""
    # First the arrays no graph has read (the usual case: one result per expression), without
    # working out which are inner; then whatever those kernels left pending.
    # An array too large for the device stays pending: NumPy computes it if the host needs it.
    too_large: set[int] = set()
    roots = [array for array in _pending.alive(owner) if _is_root(array)]
    for array in roots:
        _materialize_or_keep(array, too_large)
    del roots
    _run_outermost(lambda array: array._pending is not None, owner, too_large)


def _materialize_or_keep(array: Any, too_large: set[int] | None) -> None:
    if too_large is None:
        materialize(array)
        return
    try:
        materialize(array)
    except DeviceMemoryError:
        too_large.add(id(array))


def flush_thread() -> None:
    """Materialize the pending arrays this thread recorded (``npgpu.sync()``)."""
    flush_all(_get_ident())


def pending_count() -> int:
    return len(_pending)


def _divide(backend: Any, total: Any, count: int, result_dtype: numpy.dtype) -> Any:
    """mean = sum / count, with the loop NumPy's mean uses (a weak Python int divisor)."""
    loop = tuple(numpy.true_divide.resolve_dtypes((total.dtype, int, None)))
    b = GraphBuilder()
    quotient = b.apply(numpy.true_divide, loop, b.input(total.dtype), b.scalar(loop[1]))[0]
    graph = b.build([quotient], [result_dtype])
    return backend.run_fused(graph, [total], [loop[1].type(count)], tuple(total.shape))


def reduce(func_name: str, array: Any, axis: Any, keepdims: bool) -> Any:
    """A reduction of a pending graph as one map-reduce kernel; None when the backend can't."""
    backend = array._backend
    if not hasattr(backend, "reduce_fused"):
        return None
    op, divide = REDUCTIONS[func_name]
    pending = array._pending
    if pending is None:  # another thread computed it since the dispatcher looked: the plain path reduces it
        return None
    ndim = len(pending.shape)
    if axis is None:
        axes = tuple(range(ndim))
    elif ndim == 0 and type(axis) is int and axis in (0, -1) and not divide:
        axes = ()  # (NumPy's ufunc reductions take these of a 0-d array; its mean does not)
    else:
        axes = tuple(sorted(normalize_axis_tuple(axis, ndim)))
    probe = numpy.zeros(1, pending.dtype)
    result_dtype = getattr(numpy, func_name)(probe).dtype
    acc_dtype = numpy.dtype(numpy.float64) if divide and pending.dtype.kind in "biu" else result_dtype
    if not backend.supports_dtypes((acc_dtype,)) or (divide and acc_dtype.kind not in "fc"):
        return None
    state = _GraphState()
    count = int(numpy.prod([pending.shape[a] for a in axes])) if axes else 1
    if count == 0:
        return None  # NumPy's error, warning or identity (+0.0, where kernels start from -0.0) comes eagerly
    started = time.perf_counter()
    with _lock_of(array):  # (the walk needs the array still pending)
        if array._pending is None:
            return None
        graph = state.graph(array, acc_dtype)
    errstate = _fperr.current()  # (the reduction runs now: the state here is the user's)
    reduce_check = errstate.check & (_table.OVER | _table.INVALID) if op in ("add", "multiply") and \
        acc_dtype.kind == "f" else 0
    launch = None
    try:
        if graph.error_nodes or reduce_check:
            launch = _fperr.fused_launch(graph, state.pendings)
            if reduce_check:
                launch = launch.extended("reduce", errstate)
            native = backend.reduce_fused(graph, state.inputs, state.scalars, pending.shape, op, axes, launch,
                                          reduce_check)
        else:
            native = backend.reduce_fused(graph, state.inputs, state.scalars, pending.shape, op, axes)
        if native is not None and launch is not None:
            _fperr.launched(backend, launch)
        if native is not None and divide:
            native = _divide(backend, native, count, result_dtype)
    except FALLBACK_FAULTS:  # the plain path materializes, then reduces (or falls back, counted)
        return None
    if native is None:
        return None
    if keepdims:
        kept = tuple(1 if d in axes else n for d, n in enumerate(pending.shape))
        native = backend.call_function(numpy.reshape, (native, kept), {})
    _report.record(getattr(numpy, func_name), "device")
    _launch_stats(state, 0, started)
    return native


# The C versions of record_binary, record_unary and the graph walk (npgpu/_speedups.c), which
# the hot paths use when the extension is built; the Python functions above are the reference.
_walk_native: Any = None
fast_record_binary: Any = record_binary
fast_record_unary: Any = record_unary


def use_native(native: bool) -> None:
    """Record (and walk graphs) with the C functions, or with the Python ones."""
    global _walk_native, fast_record_binary, fast_record_unary
    speedups = _native.speedups if native else None
    if speedups is not None and (_fperr._EXTOBJ is None or not hasattr(speedups, "configure_errstate")):
        speedups = None  # (a NumPy without the errstate context variable, or an extension built before it)
    if speedups is None:
        _walk_native, fast_record_binary, fast_record_unary = None, record_binary, record_unary
    else:
        speedups.configure_fusion(DeviceArray, Pending, ScalarArg, _Ref, _forget, _refs, globals(), materialize)
        speedups.configure_errstate(_fperr._EXTOBJ, _fperr.CACHE, _fperr._WARNINGS)
        _walk_native, fast_record_binary, fast_record_unary = (speedups.walk, speedups.record_binary,
                                                               speedups.record_unary)
    from .. import _array

    if _array._record_binary is not None:  # (set by _dispatch at import, from these)
        _array._record_binary, _array._record_unary = fast_record_binary, fast_record_unary
    _array.use_native_methods(speedups)


use_native(True)
