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
import sys
import threading
import time
import weakref
from typing import Any

import numpy
from numpy.lib.array_utils import normalize_axis_tuple

from .. import _bounds, _config, _fperr, _hooks, _masks, _ops, _report, _scalar_reads
from .._array import DeviceArray, tracked
from .._errors import FALLBACK_FAULTS, DeviceMemoryError, KernelBuildError
from ..kernels import ufuncs as _table
from ..kernels.ir import Graph, GraphBuilder, Node, cast_graph, evaluate
from .registry import Pending, ScalarArg, _get_ident, _pending, discard, pending_count  # noqa: F401  (the core's names)

_local = _report._local

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


#: The C graph walk (npgpu/_speedups.c) when in use (chosen by _native.use_native, through use_walk)
_walk_native: Any = None


def use_walk(walk: Any) -> None:
    """Walk graphs with ``walk`` (the C twin of _GraphState._walk), or in Python (None)."""
    global _walk_native
    _walk_native = walk

#: Graphs built so far, by recording signature: a loop that records the same expression over
#: new arrays reuses the graph instead of building it again (most of materializing's CPU cost).
_GRAPHS: dict[tuple[Any, ...], Graph] = {}
_GRAPHS_MAX = 512
#: Orders the eviction and the insertion: ``next(iter(_GRAPHS))`` is two calls, between which
#: another thread's insertion failed the iterator ("dictionary changed size during iteration", once
#: in CI's thread test, after the suite had filled the table).
_GRAPHS_LOCK = threading.Lock()


def _keep_graph(key: tuple[Any, ...], graph: Graph) -> None:
    """Keep ``graph`` under ``key``, evicting the oldest graph when the table is full."""
    with _GRAPHS_LOCK:
        if len(_GRAPHS) >= _GRAPHS_MAX:
            _GRAPHS.pop(next(iter(_GRAPHS)), None)  # oldest first
        _GRAPHS[key] = graph


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
        self.key: tuple[Any, ...] = ()  # the signature and the stored dtype (graph() fills it)

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
        self.key = key
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
            _keep_graph(key, graph)
        return graph


def _launch_stats(state: _GraphState, nbytes: int, started: float) -> None:
    # each op folded into the kernel avoided writing and re-reading one temporary
    ops = len(state.pendings)
    _report.record_launch(ops, 2 * max(ops - 1, 0) * nbytes, time.perf_counter() - started)
    _count_sites(state.pendings)


#: A materialization holds the lock its array's identity picks, so a pending array is computed
#: once while other threads that need it wait (64: threads rarely wait on each other's arrays).
_LOCKS = tuple(threading.RLock() for _ in range(64))


def _lock_of(array: Any) -> Any:
    return _LOCKS[(id(array) >> 4) & 63]


def materialize(array: Any, out: Any = None, walked: tuple[Any, _GraphState, Graph] | None = None) -> None:
    """Compute a pending array with one kernel (into ``out``'s native when given).

    A kernel the device can't build is computed by NumPy instead and uploaded (counted, with the
    compiler's message). A result the device can't hold raises DeviceMemoryError and leaves the
    array pending, its graph intact (the dispatcher then falls back for the call that needed it).
    ``walked``: (the array's Pending, the walk of its graph, the graph for ``out``'s dtype), from
    ``write_into``, used while the array still holds that Pending."""
    if array._pending is None:
        if out is not None:
            _copy_computed(array, out)
        return
    with _lock_of(array):
        pending = array._pending
        if pending is None:  # another thread computed it while this one waited
            if out is not None:
                _copy_computed(array, out)
            return
        started = time.perf_counter()
        backend = array._backend
        if walked is not None and walked[0] is pending:
            state, graph = walked[1], walked[2]
        else:
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
        if tracked:  # (residency: what the kernel saved or cost against NumPy's passes)
            _hooks.core.charge_kernel(backend, len(state.pendings), result.nbytes, time.perf_counter() - started,
                                      array if out is None else None, state.inputs)
    if launch is not None:
        _fperr.launched(backend, launch)


def _copy_computed(array: Any, out: Any) -> None:
    """``array``, computed already, copied into ``out``: where a write road asked for an array's
    kernel to run into the written view (``a[1:-1] = b[2:] + b[:-2]``), another thread's write may
    have run the graph first (it reads memory that write changes): the value still lands. Without
    this the statement's write was lost (tests/test_threads.py)."""
    data = array._device_data
    backend = array._backend
    if data is out or backend.same_view(data, out):
        return
    backend.run_fused(cast_graph(data.dtype, out.dtype), [data], [], out.shape, out=out)


def _host_result(array: Any, backend: Any, graph: Graph, state: _GraphState) -> numpy.ndarray:
    """Pending ``array``'s value computed by NumPy from host copies of its graph's inputs."""
    inputs = [backend.to_host(native) for native in state.inputs]
    value = evaluate(graph, inputs, state.scalars)[0]
    return numpy.array(numpy.broadcast_to(value, array._pending.shape), graph.out_dtypes[0], copy=True)


def _run_on_host(array: Any, backend: Any, graph: Graph, state: _GraphState, out: Any, reason: str) -> Any:
    """The graph in NumPy, its result put on the device (into ``out``): a counted fallback."""
    _report.notify(_config.current(), array._pending.ufunc, reason)
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
        _report.notify(_config.current(), pending.ufunc, reason)
        state = _GraphState()
        graph = state.graph(array, pending.dtype)
        host = _host_result(array, array._backend, graph, state)
    for p in state.pendings:
        _report.record(p.ufunc, "fallback", reason=reason)
    return host


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


class Known(dict):  # type: ignore[type-arg]  (ids to answers: dict[int, bool])
    """Answers found for arrays, by id, and those arrays kept alive in ``held``: an id names one
    object only while it lives. (A graph's inner arrays, computed by another thread meanwhile, drop
    their operands; a new array of any thread could then take a dropped one's id and its answer:
    a false one let a graph that reads the written memory run after the write.)"""

    __slots__ = ("held", "inner")

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Any] = []
        self.inner = False  # (write_plan: whether a pending array under the root reads the memory)


def _reads_shared(root: Any, test: Any, known: Known) -> bool:
    """``_reads`` with each array's answer remembered in ``known`` (which keeps the arrays alive):
    the pending arrays of one statement are operands of one another (``a + b + c`` keeps ``a + b``
    pending inside ``(a + b) + c``), and walking each graph again made every write quadratic in the
    statement's length. An answer can only turn False once operands are computed
    (their new buffers are fresh memory), so a remembered True at most runs a graph early."""
    found = known.get(id(root))
    if found is not None:
        return found
    stack = [(root, False)]
    while stack:
        x, expanded = stack.pop()
        key = id(x)
        if key in known:
            continue
        pending = x._pending
        if pending is None:
            known[key] = bool(test(x._device_data))
            known.held.append(x)
            continue
        operands = [o for o in pending.operands if not isinstance(o, ScalarArg)]
        if expanded:
            known[key] = any(known.get(id(o), True) for o in operands)
            known.held.append(x)
        else:
            stack.append((x, True))
            stack.extend((o, False) for o in operands if id(o) not in known)
    return known[id(root)]


def write_plan(array: Any, backend: Any, native: Any) -> tuple[bool, Known]:
    """For pending ``array`` about to be computed into ``native``: (whether its graph reads memory
    overlapping ``native`` other than as the very same view, whether each array of its graph
    reads ``native``'s memory, by id, for ``before_write``'s ``known``), from one walk of the graph
    (a stencil statement's pendings are all in it: before_write then walks none of them again).
    (Recursive: a graph is at most recorder.MAX_NODES deep. Each array's pending is read once:
    another thread may compute it meanwhile.)"""
    known = Known()
    held = known.held
    shares, same = backend.shares_memory, backend.same_view
    overlapping = False

    def visit(x: Any, pending: Any, visit: Any) -> bool:  # (itself as an argument: a closure over
        # itself is a cycle, which would keep the graph's arrays alive, pending, until a collection)
        nonlocal overlapping
        hit = False
        for o in pending.operands:
            if type(o) is ScalarArg:
                continue
            key = id(o)
            found = known.get(key)
            if found is None:
                inner = o._pending
                if inner is None:
                    data = o._device_data
                    held.append(o)
                    if data is native:  # (the very view: kept views make one object of a[1:] each time)
                        found = known[key] = True
                    else:
                        found = known[key] = bool(shares(data, native))
                        if found and not overlapping and not same(data, native):
                            overlapping = True
                else:
                    found = visit(o, inner, visit)
                    if found:
                        known.inner = True
            hit = hit or found
        known[id(x)] = hit
        held.append(x)
        return hit

    pending = array._pending
    if pending is not None:
        visit(array, pending, visit)
    return overlapping, known


#: The short road and write plans. A statement that writes an expression into device memory
#: (``a[1:] -= expr``, ``b[1:-1] = expr``) asked every time whether the expression's graph reads that
#: memory (write_plan's walk of the graph's arrays) and which other pending graphs must run before it
#: changes (before_write's walk of the registry), and materialize walked the graph again: about half
#: such a statement's CPU cost (15 of 31 us on this project's 2-core machine, kernel stubbed).
#: Whether the graph reads the memory, and how, follows from the write's own walk (its leaves'
#: natives and the calls over them): one overlap test per leaf (``_leaf_reads``). Where no leaf
#: overlaps the destination but as the very same view and no call below the root reads it, none of
#: the graph's pending arrays reads the destination, so when every pending array registered is one
#: of the graph's (the registry's count says so), no other graph needs to run first either: the
#: graph runs into the destination from that walk (``write_into``'s short road: deriche's column
#: sweeps, whose destination is a new view each iteration). A loop writing the same destination
#: keeps that answer by (graph, id of the destination): a weak reference to the destination, and
#: for each leaf in the walk's order a weak reference to its native and whether it reads the
#: destination. While those are the same objects (a kept view is the same object each time;
#: natives never change their memory or layout), the answer is the same, without the overlap
#: tests; a leaf that is another native (cavity_flow's ``pn = p.copy()`` each iteration) keeps it
#: where it read nothing and still reads nothing (one overlap test). A plan is made at the second
#: write of a graph into a target; the first keeps only a mark.
_PLANS: dict[tuple[Graph, int], tuple[Any, list[Any], tuple[bool, ...]]] = {}
#: First writes of a graph into a target, by the same key: a weak reference to the target (kept
#: apart from the plans, so a sweep over hundreds of new views evicts no plan)
_MARKS: dict[tuple[Graph, int], Any] = {}
_PLANS_MAX = 256
_PLANS_LOCK = threading.Lock()  # (orders the eviction, as _GRAPHS_LOCK does)


def _plan_holds(plan: tuple[Any, list[Any], tuple[bool, ...]], native: Any, inputs: list[Any], backend: Any) -> bool:
    """Whether ``plan`` answers for a write into ``native`` of its graph over leaf natives ``inputs``
    (a leaf that is another native than the plan's, reading nothing of ``native`` where the plan's
    read nothing, replaces it: the next iteration finds it by identity)."""
    if plan[0]() is not native:
        return False
    refs, reads = plan[1], plan[2]
    if len(refs) != len(inputs):
        return False
    for i, data in enumerate(inputs):
        if refs[i]() is not data:
            if reads[i] or backend.shares_memory(data, native):
                return False
            refs[i] = weakref.ref(data)  # (a thread racing here stores a native as good)
    return True


def _leaf_reads(state: _GraphState, native: Any, backend: Any) -> tuple[bool, ...] | None:
    """From ``state``'s walk alone (its leaves and the calls over them: one consistent look at
    arrays another thread may be computing): for each leaf, whether it reads ``native``'s memory;
    None where a leaf overlaps ``native`` other than as the very same view, or a call below the root
    reads it (that call's array, if held elsewhere, must run before the write). One overlap test
    per leaf: what ``write_plan``'s walk would find, without walking the graph's arrays."""
    inputs = state.inputs
    reads = tuple(data is native or bool(backend.shares_memory(data, native)) for data in inputs)
    if any(hit and data is not native and not backend.same_view(data, native) for hit, data in zip(reads, inputs)):
        return None
    if any(reads):
        entries = state.key[:-1]
        found: list[bool] = []  # per signature entry: whether what it computes reads ``native``
        leaf = 0
        for entry in entries:
            if type(entry[0]) is str:  # ("input", dtype) in the walk's order of inputs, or ("scalar", dtype)
                found.append(entry[0] == "input" and reads[leaf])
                leaf += entry[0] == "input"
            else:  # (ufunc, loop, positions of its operands, errstate): the root is the last
                found.append(any(found[i] for i in entry[2]))
        if any(found[i] for i, entry in enumerate(entries[:-1]) if type(entry[0]) is not str):
            return None
    return reads


def _keep_plan(state: _GraphState, graph: Graph, native: Any, backend: Any,
               reads: tuple[bool, ...] | None = None) -> None:
    """Keep the plan of a write of ``graph`` into ``native`` whose leaves read it as ``reads``
    (``_leaf_reads``'s answer, found here where not given). At the first write of this graph into
    ``native`` only a mark is kept (``_MARKS``): a loop that writes a new view each iteration
    (deriche's and adi's columns) would otherwise fill the table with plans never used."""
    key = (graph, id(native))
    mark = _MARKS.get(key)
    if mark is None or mark() is not native:
        try:
            mark = weakref.ref(native)
        except TypeError:  # (a backend whose arrays take no weak reference: no plan)
            return
        if len(_MARKS) >= _PLANS_MAX:
            # marks of targets gone first (a finished loop's); where the live ones still fill the
            # table, all in one step (marks are cheap to make again: a plan comes one write later)
            with _PLANS_LOCK:  # (one thread prunes; the snapshot: other threads add marks meanwhile)
                for old, ref in list(_MARKS.items()):
                    if ref() is None:
                        _MARKS.pop(old, None)
                if len(_MARKS) >= _PLANS_MAX:
                    _MARKS.clear()
        _MARKS[key] = mark
        return
    if reads is None and (reads := _leaf_reads(state, native, backend)) is None:
        return
    plan = (mark, [weakref.ref(data) for data in state.inputs], reads)
    with _PLANS_LOCK:
        if len(_PLANS) >= _PLANS_MAX:
            _PLANS.pop(next(iter(_PLANS)), None)  # oldest first
        _PLANS[key] = plan


def write_into(array: Any, backend: Any, native: Any, registered: bool, temporary: Any = None) -> bool:
    """Compute pending ``array`` into ``native`` (the write of a statement: ``a[1:] -= expr``,
    ``b[1:-1] = expr``), every other pending graph that reads ``native``'s memory run first; False,
    with nothing run, where the graph reads memory overlapping ``native`` other than as the very
    same view (the caller takes another road). ``registered``: whether ``array`` is in the registry
    (the in-place road records its root unregistered); ``temporary``: before_write's. A write whose
    graph is all the pending work and reads the destination at most as the very same view skips
    both walks (the short road, planned or not: ``_PLANS``)."""
    pending = array._pending
    holds = False
    if pending is not None:
        state = _GraphState()
        graph = state.graph(array, native.dtype)
        plan = _PLANS.get((graph, id(native)))
        holds = plan is not None and _plan_holds(plan, native, state.inputs, backend)
        alone = len(_pending) == len(state.pendings) - (not registered)
        reads = None
        if not holds and alone:
            reads = _leaf_reads(state, native, backend)
            if reads is not None:
                _keep_plan(state, graph, native, backend, reads)
        elif not holds:
            # (other work pending: the long road's walk tests the leaves; _keep_plan tests them
            # again only where it makes a plan, at a second write)
            _keep_plan(state, graph, native, backend)
        if alone and (holds or reads is not None):
            _forget_written(backend, native)
            materialize(array, out=native, walked=(pending, state, graph))
            return True
        del state  # (before_write may run graphs: materialize walks again)
    overlapping, known = write_plan(array, backend, native)
    if overlapping:
        return False
    before_write(backend, native, skip=array, known=known, temporary=temporary)
    materialize(array, out=native)
    return True


def _forget_written(backend: Any, native: Any) -> None:
    """What every write into ``native`` drops besides pending graphs: kept mask positions in that
    memory (npgpu/_masks.py), its known value bounds (npgpu/_bounds.py), its scalar reads."""
    _masks.written(backend, native)
    _bounds.written(backend, native)
    _scalar_reads.written(backend, native)


def before_write(backend: Any, native: Any, skip: Any = None, known: Known | None = None,
                 temporary: Any = None) -> None:
    """Run every pending graph that reads ``native``'s memory: a write is about to change it.
    ``known``: answers already found for some arrays (``write_plan``'s). Every road that writes
    device memory calls this first, with or without recorded work: the kept positions of masks in
    that memory are dropped too (npgpu/_masks.py), and the value bounds known for it (npgpu/_bounds.py)."""
    _forget_written(backend, native)
    if not _pending:
        return
    if known is None:
        known = Known()
    # (the pending arrays inside skip's graph that nothing else holds run inside its kernel,
    # before it writes each element: they need no kernel of their own)
    own = _statement_temporaries(skip, known) if known.inner and skip is not None else _NONE
    if temporary is not None:  # (an operand of skip's that only the statement holds: the caller knows)
        own = own | {id(temporary)}

    def test(data: Any) -> bool:
        return backend.shares_memory(data, native)

    _run_outermost(lambda array: array is not skip and id(array) not in own and array._pending is not None
                   and array._backend is backend and _reads_shared(array, test, known))


_NONE: frozenset[int] = frozenset()


def _statement_temporaries(root: Any, known: Known) -> frozenset[int]:
    """Ids of the pending arrays under ``root``'s graph that only that graph holds: a statement's
    intermediate arrays (``h[:-1, :-1] = 0.7 * (h[:-1, :-1] - c + c)`` makes two). A write
    computing ``root`` into memory they read need not run them first: its kernel reads each
    element before it writes it, and nothing can read them afterwards. An array anything else
    holds (the program: ``e = h - c``; another recorded graph; another thread walking the
    registry) has more references than the graph's operand tuples give it, and runs before the
    write as any other. ``known`` is write_plan's: every array of the graph, in ``known.held``."""
    slots: dict[int, int] = {}  # id of an array -> references to it from the graph's operand tuples
    tuples: set[int] = set()
    stack = [root]
    o = None
    while stack:
        pending = stack.pop()._pending  # (read once: another thread may compute the array meanwhile)
        if pending is None or id(pending.operands) in tuples:
            continue
        tuples.add(id(pending.operands))
        for o in pending.operands:
            if type(o) is not ScalarArg:
                slots[id(o)] = slots.get(id(o), 0) + 1
                if o._pending is not None:
                    stack.append(o)
    del stack, o
    return _held_only_by(known.held, slots, root)


def _held_only_by(held: list[Any], slots: dict[int, int], root: Any) -> frozenset[int]:
    """Ids of the pending arrays in ``held`` (each once) whose references are ``held``'s, this
    loop's and ``slots``' alone. What a reference count includes beyond those (the call's own
    argument, which some Python versions do not count) is measured on a probe held alike."""
    probe = object()
    held.append(probe)
    base = -1
    for x in held:
        if x is probe:
            base = sys.getrefcount(x) - 1  # (less the name ``probe``)
    found = set()
    for x in held:
        n = slots.get(id(x))
        if n is not None and x is not root and x._pending is not None and sys.getrefcount(x) - n == base:
            found.add(id(x))
    held.pop()
    return frozenset(found)


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



def _divide(backend: Any, total: Any, count: int, result_dtype: numpy.dtype) -> Any:
    """mean = sum / count, with the loop NumPy's mean uses (a weak Python int divisor)."""
    loop = tuple(numpy.true_divide.resolve_dtypes((total.dtype, int, None)))
    b = GraphBuilder()
    quotient = b.apply(numpy.true_divide, loop, b.input(total.dtype), b.scalar(loop[1]))[0]
    graph = b.build([quotient], [result_dtype])
    return backend.run_fused(graph, [total], [loop[1].type(count)], tuple(total.shape))


#: (axis, ndim) -> the sorted axes a reduction's ``axis`` names (loops reduce with the same axes)
_AXES: dict[tuple[Any, int], tuple[int, ...]] = {}
#: (reduction, dtype) -> the dtype of its result (NumPy's, found once on a one-element array)
_RESULT_DTYPES: dict[tuple[Any, numpy.dtype], numpy.dtype] = {}


def reduce(func: Any, array: Any, axis: Any, keepdims: bool) -> Any:
    """A reduction of a pending graph as one map-reduce kernel; None when the backend can't."""
    backend = array._backend
    reduction = _ops.REDUCTIONS[func]
    op, divide = reduction.fused_op, reduction.divides
    pending = array._pending
    if pending is None:  # another thread computed it since the dispatcher looked: the plain path reduces it
        return None
    ndim = len(pending.shape)
    if axis is None:
        axes = tuple(range(ndim))
    elif ndim == 0 and type(axis) is int and axis in (0, -1) and not divide:
        axes = ()  # (NumPy's ufunc reductions take these of a 0-d array; its mean does not)
    else:
        plain = type(axis) is int or all(type(a) is int for a in axis)
        axes = _AXES.get((axis, ndim)) if plain else None
        if axes is None:  # (NumPy's errors for an axis out of range, repeated or not an integer)
            axes = tuple(sorted(normalize_axis_tuple(axis, ndim)))
            if plain and len(_AXES) < 256:
                _AXES[axis, ndim] = axes
    result_dtype = _RESULT_DTYPES.get((func, pending.dtype))
    if result_dtype is None:
        result_dtype = _RESULT_DTYPES[func, pending.dtype] = func(numpy.zeros(1, pending.dtype)).dtype
    acc_dtype = numpy.dtype(numpy.float64) if divide and pending.dtype.kind in "biu" else result_dtype
    if not backend.supports_dtypes((acc_dtype,)) or (divide and acc_dtype.kind not in "fc"):
        return None
    state = _GraphState()
    count = math.prod([pending.shape[a] for a in axes])
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
    _report.record(func, "device")
    _launch_stats(state, 0, started)
    if tracked:  # (residency: NumPy makes each recorded call's pass over the whole shape, then the reduction's)
        _hooks.core.charge_kernel(backend, len(state.pendings) + 1, math.prod(pending.shape) * pending.dtype.itemsize,
                                  time.perf_counter() - started)
    return native
