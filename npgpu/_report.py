"""Counters behind ``npgpu.report()``: calls on device and host, fallbacks, bytes and time moved.

Counted per function and per call site in user code (file:line, decided by ``_callsite``); fusion
adds kernel statistics. Each figure is what its column says: ``host`` is work NumPy did by
choice (placement, a library's call, host I/O), ``fallbk`` only work a device backend could not
do; ``xfer ms`` is time spent moving bytes and ``wait ms`` the time a transfer first waited for
device work queued before it (kernels, booked apart from the transfer).
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy

from . import _callsite
from ._errors import FallbackError, FallbackWarning
from ._ops import made_at_run_time


@dataclass
class Counts:
    device: int = 0
    host: int = 0
    fallback: int = 0
    bytes_to_device: int = 0
    bytes_to_host: int = 0
    transfer_seconds: float = 0.0  # moving bytes only
    device_wait_seconds: float = 0.0  # waiting, at a transfer, for the device work queued before it
    reasons: dict[str, int] = field(default_factory=dict)

    def add(self, other: Counts) -> None:
        self.device += other.device
        self.host += other.host
        self.fallback += other.fallback
        self.bytes_to_device += other.bytes_to_device
        self.bytes_to_host += other.bytes_to_host
        self.transfer_seconds += other.transfer_seconds
        self.device_wait_seconds += other.device_wait_seconds
        for reason, n in other.reasons.items():
            self.reasons[reason] = self.reasons.get(reason, 0) + n


_lock = threading.Lock()
# Raw events, aggregated only when a report is asked for, so recording stays cheap on the hot path:
# (function, call site, where, reason) -> count, and (function, call site, direction) ->
# [bytes, seconds moving them, seconds waiting for the device first].
_calls: dict[tuple[Any, tuple[str, int], str, str | None], int] = {}
_moves: dict[tuple[Any, tuple[str, int], str], list[float]] = {}
_kernels: dict[str, float] = defaultdict(float)
call_site = _callsite.report_site
_code_kind = _callsite.CODE_KIND


def _name(func: Any) -> str:
    if isinstance(func, str):
        return func
    module = getattr(func, "__module__", None) or ""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
    if module.startswith(("numpy.linalg", "numpy.fft", "numpy.random")):
        return f"{module.split('.')[1]}.{name}"
    return name


def _kept(func: Any) -> Any:
    """What the tables keep of ``func``: itself, or for a ufunc made at run time its name."""
    if type(func) is numpy.ufunc and made_at_run_time(func):
        return _name(func)
    return func


def record(func: Any, where: str, *, reason: str | None = None, rule: str | None = None,
           other_s: float | None = None) -> None:
    """Count one call of ``func`` that ran on the "device", on the "host" or as a "fallback";
    ``rule``: the placement rule that put it there (npgpu/_placement.py), ``other_s`` the
    estimated seconds of the other choice."""
    site = call_site()
    key = (_kept(func), site, where, reason)
    with _lock:
        _calls[key] = _calls.get(key, 0) + 1
        if rule is not None:
            cell = _rules.get((site, where, rule))
            if cell is None:
                cell = _rules[(site, where, rule)] = [0, 0.0, 0]
            cell[0] += 1
            if other_s is not None:
                cell[1] += other_s
                cell[2] += 1


#: the rules that place a call, as the report names them (npgpu/_placement.py applies them): per call
#: site, how many calls each rule placed and what the other choice would have cost by the measured costs
DEVICE_OPERANDS = "its operands are on the device"
ABOVE_THRESHOLD = "host data at least the upload threshold: moved to the device"
BELOW_THRESHOLD = "host data below the upload threshold: stays in NumPy"
FASTER_ON_HOST = "the backend runs it slower than NumPy (measured): NumPy runs it"
#: counted on the hot paths (the C operators, the recorder, indexing's short roads), which know no bytes
RECORDED = ("elementwise work, a reduction, a view or an indexed read or write of device arrays, recorded where "
            "it was called (no estimate)")
#: residency (npgpu/_residency.py): an array whose element and row work cost the device more than half
#: the time, by the measured costs, moved to the host; arrays made later where it was made stay in NumPy
MOVED_TO_HOST = "its element and row work ran faster in NumPy (measured costs): moved to the host"
LEARNED_ON_HOST = ("arrays made here, or arrays computed from them, moved to the host (residency, this enable()): "
                   "made in NumPy")
ONE_PASS_ON_HOST = ("a reduction of host data reads it once: its upload costs more than NumPy's pass (measured): "
                    "stays in NumPy")
#: residency: a small creation on a line where NumPy then downloaded a device array to combine with it
#: (``linspace(a, b, n)[device_index]``): made on the device, so the device array stays there
LEARNED_ON_DEVICE = ("a device array was downloaded to combine with what was made here (this enable()): "
                     "made on the device")
#: an array made from nothing (zeros, arange, linspace, ...), placed by the bytes it asks for
MADE_ON_DEVICE = "an array made from nothing at least the creation threshold: made on the device"
MADE_IN_NUMPY = "an array made from nothing below the creation threshold: made by NumPy"
RULES = (DEVICE_OPERANDS, ABOVE_THRESHOLD, BELOW_THRESHOLD, FASTER_ON_HOST, RECORDED, MOVED_TO_HOST, LEARNED_ON_HOST,
         ONE_PASS_ON_HOST, LEARNED_ON_DEVICE, MADE_ON_DEVICE, MADE_IN_NUMPY)
#: (call site, where, placement rule) -> [calls, estimated seconds of the other choice, calls estimated]
_rules: dict[tuple[tuple[str, int], str, str], list[Any]] = {}


# Calls on the hot paths (small host calls, recorded elementwise calls) are counted by each thread
# in its own table, without a lock. Keys hold only ints, which hash fast (a code object's hash is
# recomputed from its contents every time): (id(function), id(code), instruction offset, where).
# The objects behind the ids are kept in _objects; offsets become line numbers in reports.
_local = threading.local()
_fast_tables: list[dict[tuple[int, int, int, str], int]] = []
_objects: dict[int, Any] = {}


def thread_table() -> dict[tuple[int, int, int, str], int]:
    """This thread's lock-free table of call counts."""
    try:
        return _local.table
    except AttributeError:
        table = _local.table = {}
        with _lock:
            _fast_tables.append(table)
        return table


def first_count(table: dict[tuple[int, int, int, str], int], key: tuple[int, int, int, str], func: Any,
                code: Any) -> None:
    """Start a count: remember what the key's ids stand for."""
    _objects[key[0]] = func
    _objects[key[1]] = code
    table[key] = 1


def count(func: Any, where: str, frame: Any) -> None:
    """Count a call whose user frame the caller already knows (no stack walk, no lock)."""
    table = thread_table()
    code = frame.f_code
    if _code_kind.get(id(code)) != _callsite.USER:  # (a frame handed in from the standard library's thread)
        user, _ = _callsite.user_frame(frame)
        if user is None:
            record(func, where)
            return
        frame, code = user, user.f_code
    key = (id(func), id(code), frame.f_lasti, where)
    n = table.get(key)
    if n is None:
        first_count(table, key, func, code)
    else:
        table[key] = n + 1


def _line(code: Any, offset: int) -> int:
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return line
    return code.co_firstlineno


def record_transfer(direction: str, nbytes: int, seconds: float, func: Any = None, waited: float = 0.0) -> None:
    """Count bytes moved ("to_device" or "to_host"), the time moving them took (``seconds``) and
    the time the transfer first waited for device work queued before it (``waited``)."""
    key = (_kept(func) if func is not None else "<conversion to host>", call_site(), direction)
    with _lock:
        entry = _moves.setdefault(key, [0, 0.0, 0.0])
        entry[0] += nbytes
        entry[1] += seconds
        entry[2] += waited


def record_launch(ops: int, avoided: int, seconds: float) -> None:
    """A fused kernel ran ``ops`` operations, avoiding ``avoided`` bytes of temporaries, in
    ``seconds`` of CPU: ``record_kernel``'s four statistics, without its keyword dictionary (this
    runs at every launch)."""
    with _lock:
        kernels = _kernels
        kernels["kernels_launched"] += 1
        kernels["ops_fused"] += ops
        kernels["temporary_bytes_avoided"] += avoided
        kernels["fused_seconds"] += seconds


def record_kernel(stat: str, amount: float = 1, **more: float) -> None:
    """Fusion and code-generation statistics: kernels_launched, ops_fused, compile_seconds, ...
    (``more``: further statistics counted under the same lock, as one update)."""
    with _lock:
        _kernels[stat] += amount
        for name, value in more.items():
            _kernels[name] += value


# Small calls that a namespace function hands straight to NumPy: one counter per function, no
# call site. A counter is a cell read and reset as cell[0]: a one-element list for the Python
# wrappers, npgpu._speedups.Counter (a C integer) for the C ones. Increments from threads running
# at once can be lost; these are statistics, not fallbacks (those are always counted).
_host_counters: list[tuple[Any, Any]] = []
SMALL_CALLS_SITE = "(NumPy's own calls, site not recorded)"
#: What the row above holds (printed under the table when it appears).
SMALL_CALLS_NOTE = ("(NumPy's own calls, site not recorded): host calls NumPy ran at once, counted per function: "
                    "those below the placement thresholds, and on the numpy backend also array constructors and "
                    "random draws of any size")



def host_counter(func: Any, cell: Any = None) -> Any:
    """A counter of ``func``'s small host calls (``cell``, default a new ``[0]``), reported under
    the function's name."""
    if cell is None:
        cell = [0]
    _host_counters.append((func, cell))
    return cell


def _aggregate() -> tuple[dict[str, Counts], dict[str, Counts]]:
    functions: defaultdict[str, Counts] = defaultdict(Counts)
    sites: defaultdict[str, Counts] = defaultdict(Counts)
    for func, cell in _host_counters:
        if cell[0]:
            functions[_name(func)].host += cell[0]
            sites[SMALL_CALLS_SITE].host += cell[0]
    calls = list(_calls.items())
    for table in _fast_tables:
        for (func_id, code_id, offset, where), n in table.copy().items():  # (one C call: its thread counts on)
            code = _objects[code_id]
            calls.append(((_objects[func_id], (code.co_filename, _line(code, offset)), where, None), n))
    for (func, (filename, line), where, reason), n in calls:
        for counts in (functions[_name(func)], sites[_site(filename, line)]):
            setattr(counts, where, getattr(counts, where) + n)
            if reason is not None:
                counts.reasons[reason] = counts.reasons.get(reason, 0) + n
    for (func, (filename, line), direction), (nbytes, seconds, waited) in _moves.items():
        for counts in (functions[_name(func)], sites[_site(filename, line)]):
            attr = "bytes_" + direction
            setattr(counts, attr, getattr(counts, attr) + int(nbytes))
            counts.transfer_seconds += seconds
            counts.device_wait_seconds += waited
    return dict(functions), dict(sites)


def _site(filename: str, line: int) -> str:
    return f"{filename}:{line}" if line else filename


class Report:
    """A snapshot of the counters; ``print()`` it for a table, ``.as_dict()`` for machines."""

    def __init__(self, functions: dict[str, Counts], sites: dict[str, Counts], kernels: dict[str, float],
                 placement: str | None = None, rules: dict[str, dict[str, dict[str, Any]]] | None = None) -> None:
        self.functions = functions
        self.sites = sites
        self.kernels = kernels
        #: per call site, per "where: rule": calls and the other choice's estimated milliseconds
        #: (None where no costs were measured) for calls the dispatcher placed one by one
        self.rules = rules or {}
        #: where placement moves host data in the settings in force (npgpu/_placement.describe)
        self.placement = placement

    def totals(self) -> Counts:
        total = Counts()
        for counts in self.functions.values():
            total.add(counts)
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "functions": {k: asdict(v) for k, v in self.functions.items()},
            "call_sites": {k: asdict(v) for k, v in self.sites.items()},
            "kernels": dict(self.kernels),
            "totals": asdict(self.totals()),
            "placement": self.placement,
            "placement_rules": {site: dict(rules) for site, rules in self.rules.items()},
        }

    def _rules_table(self, limit: int = 30) -> list[str]:
        head = f"{'call site':<44} {'ran':<7} {'calls':>7} {'other ms':>9}  rule"
        lines = [head, "-" * len(head)]
        rows = [(site, rule, cell) for site, rules in self.rules.items() for rule, cell in rules.items()]
        rows.sort(key=lambda r: -r[2]["calls"])
        for site, rule, cell in rows[:limit]:
            where, why = rule.split(": ", 1)
            label = site if len(site) <= 44 else "..." + site[-41:]
            other = cell["other_choice_ms"]
            lines.append(f"{label:<44} {where:<7} {cell['calls']:>7} {'' if other is None else f'{other:9.2f}':>9}  "
                         f"{why}")
        if len(rows) > limit:
            lines.append(f"... {len(rows) - limit} more")
        return lines

    @staticmethod
    def _table(title: str, rows: dict[str, Counts], limit: int = 40) -> list[str]:
        head = (f"{title:<44} {'device':>7} {'host':>7} {'fallbk':>7} {'MB->dev':>9} {'MB->host':>9} {'xfer ms':>8} "
                f"{'wait ms':>8}")
        lines = [head, "-" * len(head)]
        ordered = sorted(rows.items(), key=lambda kv: -(kv[1].device + kv[1].host + kv[1].fallback))
        for key, c in ordered[:limit]:
            label = key if len(key) <= 44 else "..." + key[-41:]
            lines.append(
                f"{label:<44} {c.device:>7} {c.host:>7} {c.fallback:>7} {c.bytes_to_device / 1e6:>9.2f} "
                f"{c.bytes_to_host / 1e6:>9.2f} {c.transfer_seconds * 1e3:>8.2f} {c.device_wait_seconds * 1e3:>8.2f}"
            )
            for reason, n in sorted(c.reasons.items()):
                lines.append(f"    fallback x{n}: {reason}")
        if len(ordered) > limit:
            lines.append(f"... {len(ordered) - limit} more")
        return lines

    def summary(self) -> str:
        """One line: calls on the device, on the host and fallen back, bytes moved, fusion."""
        t = self.totals()
        calls = t.device + t.host + t.fallback
        share = f" ({100 * t.device / calls:.0f}% on the device)" if calls else ""
        kernels = self.kernels.get("kernels_launched", 0)
        fused = self.kernels.get("ops_fused", 0)
        fallbacks = "1 fallback" if t.fallback == 1 else f"{t.fallback} fallbacks"
        return (f"{t.device} calls on the device, {t.host} on the host, {fallbacks}{share}; "
                f"{t.bytes_to_device / 1e6:.2f} MB to the device, {t.bytes_to_host / 1e6:.2f} MB to the host "
                f"({t.transfer_seconds * 1e3:.2f} ms moving, {t.device_wait_seconds * 1e3:.2f} ms waiting for the "
                f"device); {kernels:g} fused kernels ran {fused:g} operations")

    def __str__(self) -> str:
        if not self.functions:
            return ("npgpu report: nothing recorded (acceleration off, or no calls yet; ufuncs on NumPy arrays are "
                    "NumPy's own calls and are not counted)") + (f"\n{self.placement}" if self.placement else "")
        lines = ["npgpu report: " + self.summary(), ""]
        lines += self._table("function", self.functions)
        lines += [""] + self._table("call site", self.sites)
        lines += ["", "host: NumPy ran it by choice (small or host-only work, a library's call); fallbk: a device "
                  "backend could not; xfer ms: moving bytes; wait ms: waiting at a transfer for device work queued "
                  "before it"]
        if SMALL_CALLS_SITE in self.sites:
            lines.append(SMALL_CALLS_NOTE)
        if self.placement:
            lines.append(self.placement)
        if self.rules:
            lines += ["", "why (calls placed one by one: the rule that placed them; other ms: what the other "
                      "choice would have cost by the measured costs)"] + self._rules_table()
        if self.kernels:
            lines += ["", "kernels: " + ", ".join(f"{k}={v:g}" for k, v in sorted(self.kernels.items()))]
        return "\n".join(lines)

    __repr__ = __str__


def report(reset: bool = False) -> Report:
    """What ran where since the last reset: per function, per call site, bytes moved, fusion."""
    with _lock:
        functions, sites = _aggregate()
        rules: dict[str, dict[str, dict[str, Any]]] = {}
        for ((filename, line), where, rule), (n, seconds, estimated) in _rules.items():
            rules.setdefault(_site(filename, line), {})[f"{where}: {rule}"] = {
                "calls": n, "other_choice_ms": seconds * 1e3 if estimated else None}
        for table in _fast_tables:
            for (_, code_id, offset, where), n in table.copy().items():  # (one C call: its thread counts on)
                if where == "device":
                    code = _objects[code_id]
                    cell = rules.setdefault(_site(code.co_filename, _line(code, offset)), {}).setdefault(
                        f"device: {RECORDED}", {"calls": 0, "other_choice_ms": None})
                    cell["calls"] += n
        snapshot = Report(functions, sites, dict(_kernels), rules=rules)
        if reset:
            for table in _fast_tables:
                table.clear()
            for _, cell in _host_counters:
                cell[0] = 0
            _calls.clear()
            _rules.clear()
            _moves.clear()
            _kernels.clear()
    return snapshot


# -- fallbacks ---------------------------------------------------------------------------------

logger = logging.getLogger("npgpu")


def notify(state: Any, key: Any, reason: str) -> None:
    """Tell the user about a fallback as ``on_fallback`` asks."""
    name = getattr(key, "__name__", repr(key))
    message = f"npgpu: {name} ran in NumPy on the host: {reason}"
    if state.on_fallback == "raise":
        raise FallbackError(message)
    if state.on_fallback == "warn":  # (at the user's line, as NumPy's warnings point at the caller's)
        warnings.warn(message, FallbackWarning, stacklevel=_callsite.user_stacklevel(sys._getframe()))
    elif state.on_fallback == "log":
        logger.warning(message)
