"""Residency: device arrays whose work runs faster in NumPy move to the host, and stay there.

Where an array enters (``asarray`` of host data, a creation, a ``*_like``), placement decides from
its bytes (npgpu/_placement.py). What follows decides here. Every device array made at such an
entry has a ledger, and the entry an *origin*: the user's call site and the line that called it,
with the array's shape and dtype (a creation's: its function and requested bytes); a copy taken
from a tracked array by indexing (``Z = Z[I]``) has a ledger of the same origin. Each read of an
element or a view of the array (``a[i, j]``, ``a[i, :j]``) and each write into it is charged what it costs on the device
less what NumPy would take, by the backend's costs measured at first use (backends/costs.py):

- an element read back: a round trip (``upload_s``, a small transfer and its wait) against
  NumPy's call (``host_call_s``); one served from a copy read ahead (npgpu/_scalar_reads.py,
  whose download of many elements was charged as the read that made it): the time it took;
- a view of ``n`` bytes, taken to feed one operation, and a write of ``n`` bytes: a launch and
  ``n`` bytes at the device's rate (``device_op_s``) against NumPy's call and ``n`` bytes at its
  rate. A large view credits the ledger: the device's rate wins there. A write keyed by host
  index arrays, or of a host value, uploads them: the dispatcher charges that (``charge_moves``).
  A write of device data computed from other arrays is not charged: were the array NumPy's, it
  would download the value (correlation's products, written into its result matrix);
- a copy selected by a boolean device mask (``Z[I]``): as a view of its bytes and the mask's (both
  read the mask whole), and a round trip: the host reads the mask's count back before the copy
  can be allocated;
- a device call of the array with host operands: their upload (``charge_moves``); with a host
  ``out=``: the download of the device operands; a function of it whose result is a scalar read
  back (``(A[k] * w).sum()``): that round trip.

The charges of every tracked array add up in one window (a loop's work is often spread over
several arrays: adi's four, lu's one). Once the window holds WINDOW_EVENTS charges and
MIN_WINDOW_S of wall time, it is judged: when the device's estimated excess is at least SHARE of
the wall time the window took, element and row work on tracked arrays is most of what the program
does (the estimate counts only the device's measured launches and round trips; npgpu's own CPU
time per device operation comes on top), and NumPy would do it in a fraction of the time. So
is it when the excess is at least FLOOR of the wall time and NumPy's estimated time for the work
the window charged (its views, reads, writes and kernels) is at most NUMPY_SHARE of it: what the
estimate leaves out (npgpu's CPU per operation, transfers and waits) took the rest; or when that
excess is at least OVER_NUMPY of NumPy's estimate: the device's side of the estimate, which
leaves out npgpu's CPU, already costs a quarter more than NumPy's. Every
array whose own excess is at least MOVER of that wall time (or whose excess since it was made is
at least SHARE of it: a loop's phases work on some arrays, then on others) then moves to the host, with every live
view of it (``migrate``), and its origin is learned: arrays made there later, while this
``enable()`` is in force, are NumPy's arrays from the start (placement rule LEARNED_ON_HOST), so a
loop that ran slower than NumPy on its first call runs as NumPy on the next. An array moves only
once its excess has cost AMORTIZED times its own move. A new window opens. A window whose estimate says the
device saved more than the window took (CALM) makes the next ones sample the index charges, each
one taken weighted by those it stands for.

Arrays move only while the program runs one thread (daemon threads aside: libraries' background
threads, npgpu's staging workers): another thread could be inside a call holding the array's
device memory. With more threads, origins are
learned and arrays made there later are NumPy's.

A computed array the program indexes (resnet's ``x = relu(batchnorm(padded))``, read at every
pixel) gets a ledger at its first index; it has no origin, so its move learns nothing of its own.
It learns its *sources*: the tracked arrays of an origin whose memory the kernel computing it read
(``padded``, made by ``zeros``), each at most its bytes (a small column computed from a large
matrix says nothing of the matrix's work). Arrays made there later are NumPy's, and so is what is
computed from them: resnet made ``padded`` on the device, computed ``x`` from it and moved ``x``
again in every call (0.86-0.88x NumPy from its second call, on this machine and an H100's).

A moved array is a ``ResidentArray`` (npgpu/_array.py): the same object the program holds, now a
thin front for its host array, so what the program does with it is NumPy's work (views of it are
NumPy arrays). The report counts each move (MOVED_TO_HOST) with the bytes it downloaded.
"""

from __future__ import annotations

import collections
import dis
import functools
import gc
import random
import sys
import threading
import time
import weakref
from typing import Any

import numpy

from . import _callsite, _config, _ops, _report, _scalar_reads, _transfer
from ._array import DeviceArray, ResidentArray, set_class, tracked
from .lazy import materialize as _lazy

#: charges a window holds before it is judged
WINDOW_EVENTS = 64
#: wall time a window takes at least before it is judged (seconds)
MIN_WINDOW_S = 0.01
#: the share of a window's wall time the device's estimated excess (over every tracked array) must
#: reach for arrays to move. The estimate counts the device's measured launches and round trips
#: only; npgpu's own CPU time per device operation comes on top (10-60 us on the H200's host, GPU
#: run 14), so at a fifth the element and row work is most of the window's time
SHARE = 0.2
#: a window whose estimated excess reaches only FLOOR of its wall time still moves arrays where NumPy
#: would have taken at most NUMPY_SHARE of that wall time for the work the window charged (views,
#: reads, writes and kernels, at NumPy's measured rate): then the device path's time went to what
#: the estimate leaves out (npgpu's own CPU per operation, transfers slower than the link's rate,
#: waits). On the H200 resnet's pixel loop and cavity_flow's one device array among host arrays
#: ran 3x slower than NumPy with estimated excesses of 0.08-0.17 of their windows (device run 2 of
#: the sixteenth session), NumPy's share being 0.08-0.12
FLOOR = 0.05
NUMPY_SHARE = 1 / 3
#: ... or where that excess is at least OVER_NUMPY of NumPy's estimated time for the charged work:
#: the device's estimated time for it is that share more than NumPy's, before npgpu's own CPU per
#: operation, which the estimate leaves out and only adds to the device's side. On the H100
#: (twenty-fourth session) resnet's conv2 pixel loop took 106 us a pixel on the device against
#: NumPy's 77, and its windows (emulated with the H100's costs, kernels stubbed) came to an excess
#: of 18-19% of their wall time with NumPy's estimate at 33-52% of it: more than half NumPy's
#: estimate, judged as not moving by SHARE and NUMPY_SHARE alone. (On the H100 itself, twenty-fifth
#: session, those windows came to 32-34%, above SHARE: the measured launch took 72-74 us, not 40.)
OVER_NUMPY = 0.25
#: the share of the window's wall time one array's own excess must reach for that array to move
MOVER = 0.02
#: how many times its own move an array's excess must have cost before it moves (go_fast's 3.2 GB
#: matrix, read 20 000 times element by element, is worth keeping on the device for its last add)
AMORTIZED = 2.0
#: a window whose estimated excess is at most -CALM times its wall time (the device saved, by the
#: estimate, more than the window took: a stencil's views feeding kernels over whole arrays) makes
#: the next windows sample the index charges: one in STRIDE on average, each standing for the ones
#: passed (weighted), the stride doubling with each such window up to STRIDE_MAX and back to 1 at
#: any other. A view's charge cost 1.5-2 us of CPU, a fifth of fdtd_2d's step (emulated, kernels
#: faked: 131 us a step tracked, 97 not); a window still holds WINDOW_EVENTS charges taken, so it
#: spans STRIDE times as many and a phase of element work is judged as before, later
CALM = 1.0
STRIDE_MAX = 16
#: the lengths of the runs between sampled charges: drawn uniformly from 1 to 2 * stride - 1
#: (averaging the stride) by a generator of fixed seed. A loop body's charges come in a fixed
#: order, and runs of lengths that share a factor with its period take the same charges every
#: iteration: the cycled multiples of the stride used before were all even at STRIDE_MAX, and in
#: correlation's loop, whose body charges a small view (a cost) then a large one (a credit), they
#: took only the costs, at twice their weight; a window then estimated an excess the work never
#: had and moved the array (one run of the test suite in five)
_draws = random.Random(0x5EED)
#: the last judged windows: (wall seconds, estimated excess seconds, charges, arrays moved, NumPy's
#: estimated seconds for the charged work)
history: collections.deque[tuple[float, float, int, int, float]] = collections.deque(maxlen=64)

_lock = threading.RLock()
_DEVICE_ARRAY = DeviceArray
_code_kind = _callsite.CODE_KIND
_USER = _callsite.USER


class Ledger:
    """One tracked array's charges (seconds the device took beyond NumPy's estimate)."""

    __slots__ = ("origin", "learned", "costs", "move_s", "excess", "total", "ref", "fixed_s", "per_byte_s",
                 "numpy_fixed_s", "numpy_per_byte_s", "sources")

    def __init__(self, origin: Any, learned: dict[Any, Any], costs: Any, nbytes: int) -> None:
        self.origin = origin
        self.move_s = costs.upload_time_s(nbytes)  # (what moving it to the host takes, the link's rate both ways)
        self.learned = learned
        self.costs = costs
        # (a view or write of n bytes: ``costs.device_excess_s(n)`` is fixed_s + n * per_byte_s, NumPy's
        # time for it numpy_fixed_s + n * numpy_per_byte_s; kept here, as every index of a loop body
        # charges one)
        self.fixed_s = costs.launch_s - costs.host_call_s
        self.per_byte_s = 1.0 / costs.device_bytes_per_s - 1.0 / costs.host_bytes_per_s
        self.numpy_fixed_s = costs.host_call_s
        self.numpy_per_byte_s = 1.0 / costs.host_bytes_per_s
        self.excess = 0.0  # (in the open window)
        self.total = 0.0  # (since it was made)
        self.ref: Any = None
        #: a computed array's: the ledgers of the tracked arrays it was computed from, learned with its move
        self.sources: tuple[Ledger, ...] = ()


def origin(state: Any, *what: Any) -> Any:
    """The origin of an array made now: (user code object, line, its caller's code object and
    line, *what), or None where the call does not come from user code or placement can't learn
    (no measured costs)."""
    backend = state.backend
    if backend is None or backend.costs is None:
        return None
    frame, library = _callsite.caller(sys._getframe(1))
    if frame is None or library:
        return None
    up = frame.f_back  # (and the line that called it: resnet's conv2d makes its output for three layers)
    key = (frame.f_code, frame.f_lineno, None if up is None else up.f_code, None if up is None else up.f_lineno,
           *what)
    try:
        hash(key)
    except TypeError:  # (an argument that is a list: ``zeros_like(a, dtype=[("x", "f8")])``)
        return None
    return key


def learned(state: Any, key: Any) -> bool:
    """Whether arrays made at origin ``key`` ran faster in NumPy, as learned in this ``enable()``."""
    return key is not None and key in state.learned


def learned_on_device(state: Any, key: Any) -> bool:
    """Whether a small creation at origin ``key`` is made on the device: NumPy downloaded a device
    array on its line, in this ``enable()``, to combine it with what was made there (``learn_line``)."""
    return key is not None and (_ON_DEVICE, key[0], key[1]) in state.learned


#: how ``learned`` keys a line whose small creations are made on the device: (_ON_DEVICE, code, line)
_ON_DEVICE = "made on the device"
#: the creation functions' names, as a line's code loads them (``np.linspace``, ``zeros``)
_CREATION_NAMES = frozenset(f.__name__ for f in _ops.CREATIONS)
#: the instructions through which a line's code names a creation (``np.linspace``, ``zeros``)
_LOADS = frozenset({"LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_FAST"})
#: how a code object reads and binds variables (``LOAD_FAST_CHECK``, 3.13's ``LOAD_FAST_LOAD_FAST``:
#: prefixes), for the lines that feed a line's host data (``_feeding_lines``)
_NAME_LOADS = ("LOAD_FAST", "LOAD_NAME", "LOAD_DEREF", "LOAD_GLOBAL", "LOAD_CLASSDEREF")
_NAME_STORES = ("STORE_FAST", "STORE_NAME", "STORE_DEREF", "STORE_GLOBAL")
#: how far back through assignments a line's host data is followed to the lines that made it
_FEED_DEPTH = 4


class _Flow:
    """What a code object's bytecode says, read in one pass: the variables each line reads, the
    lines that bind each variable, and the lines that call a creation."""

    __slots__ = ("reads", "binds", "creating")

    def __init__(self, code: Any) -> None:
        self.reads: dict[int, set[str]] = {}
        self.binds: dict[str, set[int]] = {}
        self.creating: set[int] = set()
        for instruction in dis.get_instructions(code):
            line = None if instruction.positions is None else instruction.positions.lineno
            if line is None:
                continue
            opname, value = instruction.opname, instruction.argval
            if opname in _LOADS and value in _CREATION_NAMES:
                self.creating.add(line)
            names = [n for n in (value if isinstance(value, tuple) else (value,)) if isinstance(n, str)]
            if opname.startswith(_NAME_LOADS):
                self.reads.setdefault(line, set()).update(names)
            elif opname.startswith(_NAME_STORES):
                for name in names:
                    self.binds.setdefault(name, set()).add(line)


#: code object -> its _Flow (dict reads and setdefault are atomic: threads share it)
_flows: dict[Any, _Flow] = {}
#: (code object, line) -> the lines of that code whose creations feed what the line reads
_feeding: dict[tuple[Any, int], tuple[int, ...]] = {}


def _flow(code: Any) -> _Flow:
    flow = _flows.get(code)
    return flow if flow is not None else _flows.setdefault(code, _Flow(code))


def _feeding_lines(code: Any, line: int) -> tuple[int, ...]:
    """The lines of ``code`` that make an array (call a creation) and feed what ``line`` reads:
    the line itself, and the lines binding the variables it reads, followed back through the
    assignments that compute them (``C = X + Y[:, None] * 1j`` back to ``X = linspace(...)``),
    ``_FEED_DEPTH`` assignments deep. Read from the bytecode once per line."""
    key = (code, line)
    found = _feeding.get(key)
    if found is None:
        flow = _flow(code)
        reads, binds = flow.reads, flow.binds
        lines: set[int] = set()
        seen = {line}
        frontier = [line]
        for _ in range(_FEED_DEPTH + 1):
            following = []
            for at in frontier:
                if at in flow.creating:
                    lines.add(at)  # (a creation's result: not followed further back)
                    if at != line:
                        continue
                for name in reads.get(at, ()):
                    for bound in binds.get(name, ()):
                        if bound not in seen:
                            seen.add(bound)
                            following.append(bound)
            frontier = following
        found = _feeding[key] = tuple(sorted(lines))
    return found


def learn_line(state: Any, frame: Any) -> None:
    """NumPy downloaded a device array at ``frame``'s line (user code) to combine it with host data
    (``linspace(a, b, n)[Xi]``: a host array indexed by a device one; mandelbrot1's ``C[I]``, of
    ``C = X + Y[:, None] * 1j`` from two small ``linspace``). Where that line, or a line whose
    variables it reads, makes an array (a creation it calls, below the creation threshold, so NumPy
    made it), its creations are made on the device from now on in this ``enable()``: the next
    call's host data is device data, combined on the device, and nothing is downloaded
    (mandelbrot2's ``X``, ``Y`` and ``C`` then stay on the device with the grid that indexes them,
    mandelbrot1's ``C`` with the mask that selects from it)."""
    code, line = frame.f_code, frame.f_lineno
    if line is None:
        return
    learned = False
    for feeding in _feeding_lines(code, line):
        key = (_ON_DEVICE, code, feeding)  # (the line, whoever calls it: its creation feeds device work)
        if key not in state.learned:
            state.learned[key] = True
            learned = True
    if learned:
        _config.route_creations()


def track(array: Any, state: Any, key: Any) -> None:
    """Open a ledger for ``array``, a device array just made at origin ``key``."""
    if key is None or type(array) is not _DEVICE_ARRAY or array._base is not None:
        return
    costs = array._backend.costs
    if costs is None:
        return
    _open(array, key, state.learned, costs)


def _open(array: Any, key: Any, learned: dict[Any, Any], costs: Any) -> Ledger:
    ledger = Ledger(key, learned, costs, array.nbytes)
    ident = id(array)
    # The callback, tracked.pop(ident, ref), is C (npgpu/_weak.py: an interrupt raised in Python
    # code there would be lost). It runs before the array's memory is freed, so no other array has
    # its id yet: the entry it removes is this array's (or none, if it was untracked first).
    ledger.ref = weakref.ref(array, functools.partial(tracked.pop, ident))
    tracked[ident] = ledger
    tracked[GATE] = None
    if key is not None and array._device_data is not None:
        if len(_by_memory) > 2 * len(tracked) + 64:  # (a copy, one C call: other threads open ledgers too)
            for stale, held in _by_memory.copy().items():
                if tracked.get(id(held.ref())) is not held:
                    _by_memory.pop(stale, None)
        _by_memory[id(array._device_data)] = ledger
    return ledger


#: A key of ``tracked`` no array has (an id is an address): set once a ledger opened, it keeps
#: ``tracked`` non-empty, and with it the charging of index work on device arrays, for the rest of
#: the process. Without it a call whose entries were all learned (made in NumPy) charged nothing,
#: and an array computed on the device from host data (resnet's batch norm of a host ``x``, read at
#: every pixel) was never judged: it stayed on the device, at 0.47x NumPy on this machine.
GATE = 0


def _root(array: Any) -> Any:
    base = array._base
    return array if base is None else base


def _user_ledger(array: Any, frame: Any) -> Ledger | None:
    """The ledger of the array that indexing of ``array`` from ``frame`` reads or writes; None
    where ``frame`` is not user code (only there does a charge judge, and maybe move arrays; never
    inside npgpu, where a call may hold device memory) or the root can have no ledger."""
    code = frame.f_code
    kind = _code_kind.get(id(code))
    if (_callsite.kind(code) if kind is None else kind) != _USER:
        return None
    base = array._base
    root = array if base is None else base
    ledger = tracked.get(id(root))
    return _ledger_of(root) if ledger is None else ledger


def _ledger_of(root: Any) -> Ledger | None:
    """The ledger of ``root``, opened now for a computed array the program indexes (resnet's
    ``x = relu(batchnorm(padded))``, read at every pixel): it may move, though nothing is learned
    (its origin is not known)."""
    ledger = tracked.get(id(root))
    if ledger is None and type(root) is _DEVICE_ARRAY and root._base is None:
        costs = root._backend.costs
        if costs is not None:
            ledger = _open(root, None, {}, costs)
            ledger.sources = _sources(root)
    return ledger


class _Computed:
    """The last new array a kernel computed while residency charges (``charge_kernel``): a weak
    reference to it, and the ledgers of the tracked arrays of an origin whose memory the kernel
    read, of at most its bytes (a small column computed from a large matrix says nothing of the
    matrix's work). A computed array is indexed right after the kernel that made it ran (its first
    index runs the kernel), so its ledger, opened there, finds them here; found when it is computed,
    as its sources may be gone by then (resnet's ``std``, dead once ``x`` is computed from it).
    ``last`` is one (reference, sources) pair, set in one store: threads computing at once never
    pair one array with another's sources."""

    last: tuple[Any, tuple[Ledger, ...]] | None = None


#: id of a tracked array's memory (its native) -> its ledger, for arrays of an origin (entries):
#: how a computed array's kernel inputs name their sources. Entries whose array died are dropped
#: when the table outgrows the tracked arrays; a hit is checked against the live array.
_by_memory: dict[int, Ledger] = {}


def _sources(root: Any) -> tuple[Ledger, ...]:
    """The sources ``charge_kernel`` found for computed array ``root``, if it is the last one."""
    last = _Computed.last
    return last[1] if last is not None and last[0]() is root else ()


def _note_computed(computed: Any, inputs: Any, nbytes: int) -> None:
    """Keep, for ``_sources``, the ledgers of the entries whose memory (by a native or its base)
    the kernel that made ``computed`` (``nbytes``) read, each of at most its bytes. (Run at every
    kernel that makes a new array once anything was tracked: a few dict lookups, about 1 us a
    kernel here on ``z = z * 0.999 + y`` with ``y`` tracked.)"""
    found: list[Ledger] = []
    get = _by_memory.get
    for n in inputs:
        key = id(n)
        ledger = get(key)
        if ledger is None:
            base = getattr(n, "base", None)
            if base is None:
                continue
            key = id(base)
            ledger = get(key)
            if ledger is None:
                continue
        array = ledger.ref()
        data = None if array is None else array._device_data
        # (the entry itself, alive and on the device still: a moved one holds a host array)
        if data is not None and id(data) == key and data.nbytes <= nbytes and ledger not in found:
            found.append(ledger)
    if found:
        _Computed.last = (weakref.ref(computed), tuple(found))
    elif _Computed.last is not None:
        _Computed.last = None


def charge_read(array: Any, key: Any, result: Any, seconds: float | None = None, frame: Any = None) -> None:
    """``array[key]`` (DeviceArray's method, called from the frame above it, or ``frame`` where the
    caller knows it: the C road for kept views, which has no frame of its own) gave ``result``, in
    ``seconds`` where measured: charge the ledger of the array it views. (Run at every index of a
    tracked array: few calls.)"""
    window = _Window
    if window.skip:  # (a calm window's sampling: this charge is stood for by the next one taken)
        window.skip -= 1
        return
    ledger = _user_ledger(array, sys._getframe(2) if frame is None else frame)
    if ledger is None:
        return
    if type(result) is _DEVICE_ARRAY:
        if result._pending is None and type(key) is not _DEVICE_ARRAY:  # (a view: the common case)
            nbytes = result._device_data.nbytes
            if result._base is None:
                _inherit(result, ledger)
            _charge(ledger, ledger.fixed_s + nbytes * ledger.per_byte_s,
                    ledger.numpy_fixed_s + nbytes * ledger.numpy_per_byte_s)
            return
        nbytes = result.nbytes
        excess = 0.0
        if type(key) is _DEVICE_ARRAY and key.dtype.kind == "b":
            # A device mask: both read it whole as they copy what it selects (NumPy's pass over a
            # mask of 170 000 that selects 1% takes 50 us, longer than copying what it selects:
            # mandelbrot2's late steps), and the device counts its elements first, the host
            # reading the count back
            nbytes += key.nbytes
            excess = ledger.costs.upload_s
        if result._base is None and result._pending is None:
            _inherit(result, ledger)
        _charge(ledger, excess + ledger.fixed_s + nbytes * ledger.per_byte_s,
                ledger.numpy_fixed_s + nbytes * ledger.numpy_per_byte_s)
    else:  # an element read back: a round trip, or what it took where a copy read ahead served it
        costs = ledger.costs
        took = costs.upload_s if seconds is None or not _scalar_reads.take_served() else seconds
        _charge(ledger, took - costs.host_call_s, costs.host_call_s)


def _inherit(copy: Any, ledger: Ledger) -> None:
    """``b = a[mask]`` (a copy, not a view) of a tracked ``a``: ``b`` has its own ledger of
    ``a``'s origin, so a loop that keeps narrowing its array (mandelbrot2's ``Z = Z[I]``) keeps
    being charged, and a move learns the origin the array came from."""
    if id(copy) not in tracked:
        heir = _open(copy, ledger.origin, ledger.learned, ledger.costs)
        heir.excess, heir.total = ledger.excess, ledger.total  # (the charges of its line so far)
        heir.sources = ledger.sources


def charge_write(array: Any, key: Any, value: Any, frame: Any = None) -> None:
    """``array[key] = value`` ran (DeviceArray's method, called from the frame above it, or
    ``frame`` where the caller knows it: the C road for a view written back onto itself): charge
    the ledger of the array it writes."""
    window = _Window
    if window.skip:  # (a calm window's sampling)
        window.skip -= 1
        return
    ledger = _user_ledger(array, sys._getframe(2) if frame is None else frame)
    if ledger is None:
        return
    if type(value) is _DEVICE_ARRAY:
        root = _root(array)
        data = value._device_data  # (computed: its native's bytes, without the properties' walk)
        nbytes = value.nbytes if data is None else data.nbytes
        if _root(value) is not root and not any(_root(r) is root for r, _ in _ledgers_read_by([value])):
            # Device data computed from other arrays (correlation's products of ``data``, written
            # into ``corr``): were the written array NumPy's, this write would download the value
            # and wait for the work computing it. Moving the array saves nothing: not charged
            # (its source's charges decide whether that moves; once it has, its values are host data)
            _charge(ledger, 0.0, ledger.numpy_fixed_s + nbytes * ledger.numpy_per_byte_s)
            return
    elif _holds_device_arrays(key):
        return  # (the stand-in would download the index to size the write: not charged)
    else:
        try:
            nbytes = array._host_proxy()[key].nbytes
        except (IndexError, TypeError, ValueError):  # (a key only the device path takes: not charged)
            return
    # (host index arrays and values the write uploads are charged by the dispatcher: charge_moves)
    _charge(ledger, ledger.fixed_s + nbytes * ledger.per_byte_s,
            ledger.numpy_fixed_s + nbytes * ledger.numpy_per_byte_s)


def _holds_device_arrays(key: Any) -> bool:
    return type(key) is _DEVICE_ARRAY or (type(key) is tuple and any(type(k) is _DEVICE_ARRAY for k in key))


class _WindowState:
    """The charges of every tracked array since the window opened (a loop's work is often spread
    over several arrays: adi's four, lu's one). Threads add to it without a lock: a lost add only
    blurs an estimate; judging it, and moving, take ``_lock``. One instance, ``_Window``, with
    slots: every index charge reads and writes it, and a store to a class attribute invalidated
    the class's lookup caches at each charge."""

    __slots__ = ("opened", "excess", "events", "numpy_s", "stride", "skip", "weight")

    def __init__(self) -> None:
        self.opened = time.perf_counter()
        self.excess = 0.0
        self.events = 0
        self.numpy_s = 0.0  # (NumPy's estimated time for the work charged: views, reads, writes, kernels)
        self.stride = 1  # (calm windows: one index charge in ``stride`` is taken, on average; CALM)
        self.skip = 0  # (index charges still to pass before the next one taken)
        self.weight = 1  # (how many charges the next one taken stands for)

    def clear(self) -> None:
        """Close the window: the next charge opens one."""
        self.excess, self.events, self.numpy_s = 0.0, 0, 0.0

    def reset(self) -> None:
        """Close the window and take every charge again."""
        self.clear()
        self.stride, self.skip, self.weight = 1, 0, 1


#: the open window (judged, cleared and sampled in place)
_Window = _WindowState()


def charge_moves(devices: list[Any], nbytes: int) -> None:
    """A device call of ``devices`` moved ``nbytes`` of host data to the device, or of theirs to
    the host (``out=`` a host array): what their being on the device cost, shared among the
    tracked ones (cavity_flow's one device array among host arrays)."""
    ledgers = _ledgers_read_by(devices)
    for _, ledger in ledgers:
        # (added, not judged: the call has taken its operands' device memory; the next read or
        # write of a tracked array, where no call is half-way, judges the window)
        _add(ledger, ledger.costs.upload_time_s(nbytes) / len(ledgers))


def charge_conversion(array: Any, moving_s: float | None = None) -> None:
    """NumPy converted device ``array`` to a host array (``host[device_mask]``, a host ufunc of
    it): the download is time NumPy would not spend. Added to the window (and to the array's
    ledger, if it has one), not judged: the conversion is inside NumPy's call. The time the copy
    took (``moving_s``, measured after its wait for the device: that wait is work NumPy would have
    done too) where the transfer measured it apart; else the link's measured cost for its bytes
    (mandelbrot2's pageable downloads of 1-3 MB ran at 3 GB/s on the H200, the link's
    measured rate is 9)."""
    costs = array._backend.costs
    if costs is None:
        return
    nbytes = array.nbytes
    excess = moving_s if moving_s is not None and nbytes >= _transfer.SPLIT_BYTES else costs.upload_time_s(nbytes)
    _add(tracked.get(id(_root(array))), excess)
    state = _config.current()
    if state.backend is array._backend:
        frame, library = _callsite.caller(sys._getframe(1))
        if frame is not None and not library:
            learn_line(state, frame)


def charge_kernel(backend: Any, ops: int, nbytes: int, seconds: float = 0.0, computed: Any = None,
                  inputs: Any = ()) -> None:
    """A device kernel of ``ops`` elementwise operations wrote ``nbytes`` while arrays are tracked
    (a matrix product or a reduction: the bytes it read and wrote, since NumPy reads them too):
    what it cost beyond the ``ops`` passes NumPy would have made (a credit where the device is
    faster), added to the open window. The index work a window judges often comes with elementwise
    work on the same arrays, where the device wins (mandelbrot2's complex steps on 1M points):
    without it, a window counted only the device's index costs; correlation's column writes, one
    for each 50 MB product of device data, moved its result matrix to the host, where each write
    then downloaded the product. Only a window that index work
    opened takes it, so a program's earlier elementwise phases don't credit a later element loop.
    ``seconds``: what the launch took of this process's time, where measured (npgpu's work and the
    backend's call): the device's side is at least that. resnet's per-pixel map-reduce kernel took
    90 us of the H200's host against a launch's measured 34, and NumPy's two passes 72.
    ``computed``: the new array the kernel made (not a write into an array), whose memory owners
    ``inputs`` it read: where the program indexes it, its ledger learns them (``_sources``)."""
    if computed is not None and _by_memory:
        _note_computed(computed, inputs, nbytes)
    costs = backend.costs
    window = _Window
    if costs is not None and window.events:
        numpy_s = ops * (costs.host_call_s + costs.host_op_s(nbytes))
        window.excess += max(costs.device_op_s(nbytes), seconds) - numpy_s
        window.numpy_s += numpy_s


def _ledgers_read_by(devices: list[Any]) -> list[tuple[Any, Ledger]]:
    """(root, ledger) of the tracked arrays ``devices`` view or, pending, compute from."""
    found: dict[int, tuple[Any, Ledger]] = {}
    stack = list(devices)
    while stack:
        x = stack.pop()
        pending = x._pending
        if pending is not None:
            stack.extend(o for o in pending.operands if type(o) is _DEVICE_ARRAY)
            continue
        root = _root(x)
        ledger = tracked.get(id(root))
        if ledger is not None:
            found[id(root)] = (root, ledger)
    return list(found.values())


def _add(ledger: Ledger | None, excess: float, numpy_s: float = 0.0) -> None:
    """Add ``excess`` to ``ledger`` (if any) and the window, which opens at its first charge or
    added cost: not at import, nor across a pause."""
    if ledger is not None:
        ledger.excess += excess
        ledger.total += excess
    window = _Window
    if not window.events and not window.excess:
        window.opened = time.perf_counter()
        window.numpy_s = 0.0
    window.excess += excess
    window.numpy_s += numpy_s


def _charge(ledger: Ledger, excess: float, numpy_s: float) -> None:
    """Charge ``ledger`` ``excess`` for work NumPy would do in ``numpy_s``; judge the window once it
    holds WINDOW_EVENTS charges and MIN_WINDOW_S of wall time."""
    window = _Window
    if window.stride > 1:  # (a calm window's sample: it stands for the charges passed since the last)
        weight = window.weight
        excess *= weight
        numpy_s *= weight
        window.weight = _draws.randint(1, 2 * window.stride - 1)
        window.skip = window.weight - 1
    _add(ledger, excess, numpy_s)
    window.events = events = window.events + 1
    if events < WINDOW_EVENTS:
        return
    took = time.perf_counter() - window.opened
    if took < MIN_WINDOW_S:
        return
    with _lock:
        if window.events < WINDOW_EVENTS:  # (another thread judged it meanwhile)
            return
        moving = []
        # (a copy, one C call under the GIL: other threads open ledgers without this lock, and an
        # array's death removes its own from any thread; iterating the dict itself raised
        # "dictionary changed size during iteration" in one of eight threads doing fused work)
        ledgers = [ledger for ledger in tracked.copy().values() if ledger is not None]  # (not GATE's)
        spent, numpy_time = window.excess, window.numpy_s  # (the window's; ``numpy_s`` is this charge's)
        if spent >= SHARE * took or (spent >= FLOOR * took and (numpy_time <= NUMPY_SHARE * took
                                                               or spent >= OVER_NUMPY * numpy_time)):
            # (and arrays that had their turn earlier: adi's phases work on two arrays, then on two others)
            moving = [ledger for ledger in ledgers
                      if (ledger.excess >= MOVER * took or ledger.total >= SHARE * took)
                      and ledger.total >= AMORTIZED * ledger.move_s]
        for each in ledgers:
            each.excess = 0.0
        history.append((took, window.excess, window.events, len(moving), window.numpy_s))
        if not moving and window.excess <= -CALM * took:
            window.stride = min(2 * window.stride, STRIDE_MAX)
        else:
            window.stride, window.skip, window.weight = 1, 0, 1
        window.clear()  # (the next charge opens the next window)
    for each in moving:
        array = each.ref()
        if array is not None:
            migrate(array, each)


def migrate(root: Any, ledger: Ledger) -> bool:
    """Move ``root`` and its live views to the host and learn its origin; False where it stays
    (another thread moved it first, or its memory can't be viewed from a host copy)."""
    with _lock:
        if tracked.get(id(root)) is not ledger or type(root) is not _DEVICE_ARRAY:
            return False
        del tracked[id(root)]
        if ledger.origin is not None:
            ledger.learned[ledger.origin] = True
        for source in ledger.sources:  # (a computed array's: the origins of what it was computed from)
            source.learned[source.origin] = True
        if _other_threads():
            return False  # (another thread may be inside a call that holds this array's device memory)
        moved = _move(root)
    if moved:
        _report.record(MOVE, "host", rule=_report.MOVED_TO_HOST)
    return moved


def _other_threads() -> bool:
    """Whether a thread of the program's other than this one runs (a non-daemon thread: the
    program's workers and executors; libraries' background threads are daemons, as npgpu's
    staging workers are): arrays move only while there is none; else only origins are learned."""
    me = threading.current_thread()
    return any(t is not me and not t.daemon for t in threading.enumerate())

#: how the report names a move (a function-like row: the bytes it downloaded are its transfer)
MOVE = "residency: moved to the host"


def _move(root: Any) -> bool:
    backend = root._backend
    native = root._native  # (a pending root is computed first)
    if not root.flags.c_contiguous:
        return False  # (its host copy would not lay out its views' memory alike: only learned)
    _lazy.before_write(backend, native)  # the recorded work reading it runs on its device data
    arrays = [o for o in gc.get_objects() if type(o) is _DEVICE_ARRAY and o._backend is backend]
    host = _transfer.to_host(root, MOVE)
    if not host.flags.c_contiguous or not host.flags.owndata or not host.flags.writeable:
        host = numpy.array(host, order="C", copy=True)
    fronts = [(root, host)]
    for other in arrays:
        data = other._device_data
        if other is root or data is None:
            continue
        offset = backend.view_offset(data, native)
        if offset is None:
            continue
        try:
            view = numpy.ndarray(other.shape, other.dtype, buffer=host, offset=offset, strides=other.strides)
        except (TypeError, ValueError):
            return False  # (memory a host copy can't lay out: the root stays, only learned)
        fronts.append((other, view))
    for array, data in fronts:
        if array._readonly:
            data.flags.writeable = False
        array._device_data = data
        array._pending = None
        array._views = None  # (device views of the old data: they would keep its memory)
        set_class(array, ResidentArray)
    return True
