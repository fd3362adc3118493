"""NumPy's floating-point error state (``np.errstate``, ``np.seterr``) honoured on the device.

A call records the errstate in force where the user made it; its kernel sets one flag byte per
checked operation and error category (only where an error happens), and the flags are read with
the result: at once when a category asks to raise, call, print or log, otherwise (``warn``, NumPy's
default) at the next point where the host waits for the device anyway (a download, a scalar read,
``npgpu.sync()``). Warnings and errors are NumPy's: the same class, message and order.
"""

from __future__ import annotations

import contextlib
import operator
import os
import sys
import threading
import warnings
from typing import Any

import numpy

from . import _callsite
from .kernels.ir import Apply
from .kernels.ufuncs import DIVIDE, INVALID, OVER, UNDER

# (category bit, NumPy's errstate key, the error's name in NumPy's messages), in NumPy's order
CATEGORIES = ((DIVIDE, "divide", "divide by zero"), (OVER, "over", "overflow"), (UNDER, "under", "underflow"),
              (INVALID, "invalid", "invalid value"))
#: Categories a kernel can detect. Underflow is not detected (NumPy ignores it by default; telling
#: an inexact tiny result from an exact one would cost every operation a second computation).
DETECTED = DIVIDE | OVER | INVALID
#: Flag bytes per checked operation: byte b is category 1 << b.
SLOT_BYTES = 4
_IMMEDIATE_MODES = frozenset({"raise", "call", "print", "log"})

try:  # NumPy 2: the errstate lives in a context variable; its value changes only when the state does
    from numpy._core.umath import _extobj_contextvar as _EXTOBJ
except ImportError:  # pragma: no cover - a NumPy without it: the state is read each time
    _EXTOBJ = None


class ErrState:
    """One errstate as the device needs it (interned: equal states are the same object).

    ``check``: the categories a kernel must detect (those not ``ignore``, underflow aside);
    ``immediate``: the categories whose mode needs the answer at once (raise, call, print, log).
    """

    __slots__ = ("modes", "call", "check", "immediate", "warning_context")

    def __init__(self, modes: dict[str, str], call: Any, warning_context: tuple[Any, ...] = ()) -> None:
        self.modes = {bit: modes[key] for bit, key, _ in CATEGORIES}
        self.call = call
        #: Python's warning machinery where the call was made (``_warning_context()``): a warning
        #: delivered later, outside a ``warnings.catch_warnings()`` block, is shown as it would have
        #: been inside it (filtered, or recorded in its list), as NumPy's own warning was
        self.warning_context = warning_context
        self.check = sum(bit for bit, mode in self.modes.items() if mode != "ignore") & DETECTED
        self.immediate = sum(bit for bit, mode in self.modes.items() if mode in _IMMEDIATE_MODES) & self.check

    def __repr__(self) -> str:
        modes = ", ".join(f"{key}={self.modes[bit]!r}" for bit, key, _ in CATEGORIES)
        return f"ErrState({modes})"


_interned: dict[tuple[Any, ...], ErrState] = {}
_INTERNED_MAX = 256
_INTERN_LOCK = threading.Lock()
#: [(context value, its ErrState) of the last state seen whose mode is only warn or ignore,
#:  (context value, ErrState) of the last state seen]: the C recorder reads entry 0 (a state that
#:  needs no immediate answer records as the default does); entries are replaced whole.
CACHE: list[tuple[Any, ErrState]] = []


_WARNINGS = warnings.__dict__  # (read by identity on every recording: filters and display hooks)


def _warning_context() -> tuple[Any, Any, Any]:
    """The objects a warnings.catch_warnings() block replaces: the filter list and the display hooks."""
    return _WARNINGS.get("filters"), _WARNINGS.get("_showwarnmsg_impl"), _WARNINGS.get("showwarning")


def _learn() -> ErrState:
    """The ErrState of NumPy's current errstate (and remember it as the last one seen)."""
    modes = numpy.geterr()
    call = numpy.geterrcall()
    context = _warning_context()
    key = (*(modes[key] for _, key, _ in CATEGORIES), id(call), *map(id, context))
    state = _interned.get(key)
    if state is None or state.call is not call or any(a is not b for a, b in zip(state.warning_context, context)):
        with _INTERN_LOCK:  # (threads learn states at once: the eviction and the insertion are one step)
            if len(_interned) >= _INTERNED_MAX:
                _interned.pop(next(iter(_interned)), None)
            state = _interned[key] = ErrState(modes, call, context)
    if _EXTOBJ is not None:
        # (the C recorder compares these items by identity: NumPy's context value, then the warnings')
        entry = (_EXTOBJ.get(), state, *context)
        if not state.immediate:
            CACHE[0] = entry
        CACHE[1] = entry
    return state


def current() -> ErrState:
    """NumPy's errstate in force here (a context-variable read and identity tests, when seen last)."""
    if _EXTOBJ is not None:
        value = _EXTOBJ.get()
        last = CACHE[1]
        if (last[0] is value and last[2] is _WARNINGS.get("filters") and last[3] is _WARNINGS.get("_showwarnmsg_impl")
                and last[4] is _WARNINGS.get("showwarning")):
            return last[1]
    return _learn()


CACHE.extend([(None, ErrState(numpy.geterr(), None), None, None, None)] * 2)
_learn()


# -- what a launch reports -------------------------------------------------------------------

class Launch:
    """One kernel launch's error reports: per flag slot, the operation's name in NumPy's message
    (``labels``) and the call it reports for (``calls``: (ErrState, code, offset) -- the errstate
    it was made under and where; code None where unknown). ``global_reduce``: the last slot
    holds a CuPy reduction's whole-launch flags (see _decode_global_reduce). ``owners``: per
    slot, the slot it reports with (graph_owners), or None where each reports alone."""

    __slots__ = ("labels", "calls", "immediate", "base", "global_reduce", "nbytes", "owners")

    def __init__(self, labels: tuple[str, ...], calls: list[tuple[ErrState, Any, int]],
                 global_reduce: bool = False, owners: tuple[int, ...] | None = None) -> None:
        self.labels = labels
        self.calls = calls
        self.owners = owners
        self.immediate = any(map(_IMMEDIATE, map(_FIRST, calls)))
        self.base = 0
        self.global_reduce = global_reduce
        self.nbytes = SLOT_BYTES * len(labels)  # (its flag bytes)

    def extended(self, label: str, state: ErrState) -> Launch:
        """This launch with one more slot (a reduction's own), for a call made here."""
        owners = None if self.owners is None else (*self.owners, len(self.labels))
        return Launch(self.labels + (label,), self.calls + [(state, *_user_site())], self.global_reduce, owners)


def graph_labels(graph: Any) -> tuple[str, ...]:
    """The name NumPy's message gives each error node of ``graph`` (cached on the graph)."""
    labels = graph.__dict__.get("_error_labels")
    if labels is None:
        found = []
        for node in graph.error_nodes:
            if isinstance(node, Apply):
                found.append(node.ufunc.__name__)
            elif node in graph.outputs and isinstance(node.operand, Apply):
                found.append(node.operand.ufunc.__name__)  # a result stored narrower: NumPy names the ufunc
            else:
                found.append("cast")
        labels = graph.__dict__["_error_labels"] = tuple(found)
    return labels


def graph_owners(graph: Any) -> tuple[int, ...] | None:
    """Per error node of ``graph``, the slot whose report it joins: an output's cast into a
    narrower dtype joins the ufunc it stores (``sqrt(-1.0)`` into int64 memory is one call's
    "invalid value encountered in sqrt", reported once, as NumPy checks its flags once per call);
    None where every node reports alone (cached on the graph)."""
    owners = graph.__dict__.get("_error_owners", False)
    if owners is False:
        slot = {node: k for k, node in enumerate(graph.error_nodes)}
        found = tuple(slot.get(node.operand, k) if not isinstance(node, Apply) and node in graph.outputs else k
                      for k, node in enumerate(graph.error_nodes))
        owners = graph.__dict__["_error_owners"] = None if found == tuple(range(len(found))) else found
    return owners


_IMMEDIATE = operator.attrgetter("immediate")
_FIRST = operator.itemgetter(0)
_CALL = operator.attrgetter("errstate", "code", "lasti")


def fused_launch(graph: Any, pendings: list[Any]) -> Launch:
    """The reports of a fused graph whose error nodes come from the recorded calls ``pendings``
    (what they need of each, not the calls: those hold their operands' device memory)."""
    # (per launch: C-level loops, 1.3 us for E8's 11 checked calls)
    return Launch(graph_labels(graph), list(map(_CALL, map(pendings.__getitem__, graph.error_sources))),
                  owners=graph_owners(graph))


def call_launch(graph: Any, state: ErrState, extra: tuple[str, ...] = (), global_reduce: bool = False) -> Launch:
    """The reports of an eager call's graph (plus ``extra`` slots, e.g. "reduce"), all under
    ``state``, made where the user's code called npgpu."""
    labels = graph_labels(graph) + extra if graph is not None else extra
    owners = graph_owners(graph) if graph is not None else None
    if owners is not None and extra:
        owners = (*owners, *range(len(owners), len(labels)))
    return Launch(labels, [(state, *_user_site())] * len(labels), global_reduce, owners)


def _user_site() -> tuple[Any, int]:
    """(code, offset) of the innermost frame outside npgpu: the user's call ((None, 0) if none)."""
    frame, _ = _callsite.outside_npgpu(sys._getframe(1))
    return (None, 0) if frame is None else (frame.f_code, frame.f_lasti)


# -- the flags of the launches not yet read, per thread and backend --------------------------

class _Flags:
    """A device buffer of flag bytes and the launches that wrote into it since it was read;
    ``early``: a host copy of its first ``early_bytes`` queued before a download (see prefetch)."""

    __slots__ = ("buffer", "used", "launches", "early", "early_bytes")

    def __init__(self, buffer: Any) -> None:
        self.buffer = buffer
        self.used = 0
        self.launches: list[Launch] = []
        self.early: Any = None
        self.early_bytes = 0


#: Flag bytes per thread and backend: 64 Ki checked operations' worth before a forced read.
BUFFER_BYTES = 1 << 18
#: False: read the flags right after every launch, warnings included (measured against the default).
DEFER_WARNINGS = True


@contextlib.contextmanager
def read_after_each_launch() -> Any:
    """Within (process-wide): DEFER_WARNINGS off, the design measured against the default."""
    global DEFER_WARNINGS
    old, DEFER_WARNINGS = DEFER_WARNINGS, False
    try:
        yield
    finally:
        DEFER_WARNINGS = old
_local = threading.local()


def _flags(backend: Any) -> _Flags:
    table = getattr(_local, "flags", None)
    if table is None:
        table = _local.flags = {}
    flags = table.get(backend)
    if flags is None:
        flags = table[backend] = _Flags(backend.error_buffer(BUFFER_BYTES))
    return flags


def reserve(backend: Any, launch: Launch) -> tuple[Any, int]:
    """Room for ``launch``'s flags: (the backend's flag buffer, byte offset) for the kernel."""
    flags = _flags(backend)
    base = flags.used
    if base + launch.nbytes > BUFFER_BYTES:
        deliver(backend)
        base = flags.used
    launch.base = base
    flags.used = base + launch.nbytes
    flags.launches.append(launch)
    return flags.buffer, base


def launched(backend: Any, launch: Launch) -> None:
    """After ``launch``'s kernel was queued: read its flags now where its state asks for that."""
    if launch.immediate or not DEFER_WARNINGS:
        deliver(backend)


def pending(backend: Any) -> bool:
    """Whether launches on ``backend`` in this thread have flags not yet read."""
    table = getattr(_local, "flags", None)
    flags = None if table is None else table.get(backend)
    return flags is not None and bool(flags.launches)


def prefetch(backend: Any) -> None:
    """Before a download that waits for the device: queue the copy of the flags first, so that
    ``deliver`` right after it finds them on the host (no second wait for the device)."""
    table = getattr(_local, "flags", None)
    flags = None if table is None else table.get(backend)
    if flags is not None and flags.launches and flags.early_bytes != flags.used:
        flags.early = backend.read_errors_later(flags.buffer, flags.used)
        flags.early_bytes = flags.used


def deliver(backend: Any) -> None:
    """Read the flags of this thread's launches on ``backend`` and act on them as NumPy would
    (warn, raise FloatingPointError, call, print, log): a point where the host waits anyway."""
    table = getattr(_local, "flags", None)
    flags = None if table is None else table.get(backend)
    if flags is None or not flags.launches:
        return
    launches, used = flags.launches, flags.used
    early, early_bytes = flags.early, flags.early_bytes
    flags.launches, flags.used, flags.early, flags.early_bytes = [], 0, None, 0
    # (flags copied before the download that just waited for the device; else read them now)
    host = early if early_bytes == used else backend.read_errors(flags.buffer, used)
    if b"\x01" not in host.tobytes():  # (the usual answer; cheaper than host.any())
        return
    host = host.copy()  # (it may be the flags' own memory, cleared now)
    backend.clear_errors(flags.buffer, used)
    for launch in launches:
        report(launch, host[launch.base:launch.base + launch.nbytes])


def report(launch: Launch, flags: numpy.ndarray) -> None:
    """Act on one launch's flag bytes (``SLOT_BYTES`` per slot), slot by slot."""
    slots = flags.reshape(-1, SLOT_BYTES)
    owners = launch.owners
    joined: dict[int, int] = {}  # (owner slot -> the categories its slots raised, in slot order)
    for k in range(len(launch.labels)):
        row = slots[k]
        if launch.global_reduce and k == len(launch.labels) - 1:
            row = _decode_global_reduce(row)
        raised = sum(bit for b, (bit, _, _) in enumerate(CATEGORIES) if row[b])
        if raised:
            owner = k if owners is None else owners[k]
            joined[owner] = joined.get(owner, 0) | raised
    for k, raised in joined.items():
        state, code, offset = launch.calls[k]
        _handle(raised, launch.labels[k], state, code, offset)


def _decode_global_reduce(row: numpy.ndarray) -> numpy.ndarray:
    """A whole-launch reduction slot: bytes (a value reduced was not finite, was NaN, a result was
    inf, was NaN) -> categories: overflow where a result is inf though every value was finite,
    invalid where a result is NaN though no value was."""
    decoded = numpy.zeros(SLOT_BYTES, numpy.uint8)
    decoded[1] = row[2] and not row[0]
    decoded[3] = row[3] and not row[1]
    return decoded


def _handle(raised: int, label: str, state: ErrState, code: Any, offset: int) -> None:
    """NumPy's handling of the categories ``raised`` by one call (numpy/_core/src/umath/extobj.c)."""
    for bit, _, name in CATEGORIES:
        if not raised & bit:
            continue
        mode = state.modes[bit]
        message = f"{name} encountered in {label}"
        if mode == "warn":
            _warn(message, code, offset, state.warning_context)
        elif mode == "raise":
            raise FloatingPointError(message)
        elif mode == "call":
            if state.call is None:
                raise NameError(f"python callback specified for {name} (in  {label}) but no function found.")
            state.call(name, raised)
        elif mode == "print":
            sys.stderr.flush()
            os.write(2, f"Warning: {message}\n".encode())
        elif mode == "log":
            write = getattr(state.call, "write", None)
            if write is None or not callable(write):
                raise NameError(f"log specified for {name} (in {label}) but no object with write method found.")
            write(f"Warning: {message}\n")


_registries: dict[str, dict[Any, Any]] = {}
_modules: dict[str, str | None] = {}


def _warn(message: str, code: Any, offset: int, context: tuple[Any, ...] = ()) -> None:
    """A RuntimeWarning attributed to the user's line (``code`` at byte ``offset``: where NumPy's
    would be), else to the caller outside npgpu; shown through the warning ``context`` of the
    call (see ErrState.warning_context) when that differs from the one in force now."""
    now = _warning_context()
    if context and any(a is not b for a, b in zip(context, now)):
        _WARNINGS["filters"], _WARNINGS["_showwarnmsg_impl"], _WARNINGS["showwarning"] = context
        warnings._filters_mutated()  # type: ignore[attr-defined]
        try:
            _warn(message, code, offset)
        finally:
            _WARNINGS["filters"], _WARNINGS["_showwarnmsg_impl"], _WARNINGS["showwarning"] = now
            warnings._filters_mutated()  # type: ignore[attr-defined]
        return
    if code is None:
        warnings.warn(message, RuntimeWarning, stacklevel=_user_stacklevel())
        return
    filename = code.co_filename
    lineno = code.co_firstlineno
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            lineno = line
            break
    warnings.warn_explicit(message, RuntimeWarning, filename, lineno, module=_module_of(filename),
                           registry=_registries.setdefault(filename, {}))


def _module_of(filename: str) -> str | None:
    """The name of the loaded module from ``filename`` (what warning filters match), if any; code
    that comes from no file ("<string>" of python -c, "<ipython-input-1>") is __main__'s (without a
    module name, warn_explicit drops warnings of such code)."""
    if filename not in _modules:
        name = "__main__" if filename.startswith("<") else None
        for module_name, module in list(sys.modules.items()):
            if getattr(module, "__file__", None) == filename:
                name = module_name
                break
        _modules[filename] = name
    return _modules[filename]


def _user_stacklevel() -> int:
    """The stacklevel, for a warnings.warn in _warn, of the first frame outside npgpu."""
    _, passed = _callsite.outside_npgpu(sys._getframe(1))  # (from _warn's frame: stacklevel 1)
    return 1 + passed
