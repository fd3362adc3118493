"""Element reads in a loop (``for i in range(n): t += np.tanh(a[i, i])``): read ahead.

Each ``a[i, j]`` of a device array is a round trip: a download that waits for the device (about
20 us on a GPU, against NumPy's 0.1). Loops that read a device array element by element mostly
walk it with a constant step (a row, a column, the diagonal). Where one line of the program has
read the same memory three times, each address one and the same step past the last, the next
read fetches ``K`` elements along that step in one download (a strided view of the memory, as
many as stay inside it; ``K`` doubles per fetch from ``_FIRST`` to ``_MOST``), and the reads at
those addresses are served from the host copy until something else is read there. A line whose
copies keep being dropped by writes before they serve a read (a loop that writes what it reads
next) stops reading ahead: ``_WASTED`` such copies and it reads one element at a time.

The copy stays right while the memory keeps its values:

- every write through npgpu into device memory calls ``written`` first (from
  ``lazy.materialize.before_write``, the one call each write road makes), and a copy whose memory
  the write may touch is dropped; memory handed out to other code (DLPack, CUDA's array
  interface) drops every copy;
- a copy is of one native array (the memory's owner, by identity): a new buffer (``shape`` set,
  residency's move) is other memory;
- copies are kept and used by one thread, the first that reads ahead; a write from any other
  thread drops them all and ends reading ahead for the process (the rule of npgpu/_masks.py, for
  the same reason: another thread's write could fall between a check here and the copy's use);
- a read while launches with floating-point checks are unreported reads the device as before,
  so NumPy's warnings and errors come where they came (npgpu/_fperr.py delivers them at the wait).

A line is known by its code and bytecode offset. Python's specializing interpreter moves the
offset a frame reports for a subscript once, when it specializes the instruction (after about
eight runs): the line then starts afresh once.

Residency charges an element read that downloads as a round trip, and one served from a copy
the time it took (``take_served``; npgpu/_residency.py). Charged nothing, served reads kept
spmv's small arrays on the H200 (0.08x NumPy); charged a round trip each, they moved go_fast's
3.2 GB matrix to the host on a host whose small transfers took 42 us, though its diagonal was
served 4096 elements a download (0.80x NumPy, where staying gave 3.4x).

Counted in the report's kernel statistics: ``scalar_read_aheads`` (downloads of ``K``) and
``scalar_reads_served`` (reads answered from them).
"""

from __future__ import annotations

from typing import Any

from . import _fperr, _report
from ._one_thread import OneThread

#: elements fetched ahead at a line's first fetch, and at most (doubling per fetch)
_FIRST = 32
_MOST = 4096
#: lines remembered (the oldest forgotten first)
_MAX = 16
#: a line whose copies were dropped this many times before serving a read reads one element at a
#: time from then on (a loop that writes the memory between its reads: lu's ``A[j, j]``)
_WASTED = 2

#: (code id, bytecode offset) of the reading line -> _Line
_LINES: dict[tuple[int, int], _Line] = {}
#: the thread that reads ahead, and whether another thread's write ended the reading ahead
_thread = OneThread()
#: whether the last read was served from a copy (``take_served``). One flag, not per thread: reads
#: ahead are one thread's; a read another thread's charge takes, or one whose charge was sampled
#: away, is charged its own measured time instead of a round trip: an estimate blurred, no more
_served = False


class _Line:
    """What one line of the program has read: the memory (its owner's native), the last address
    and step, how many reads in a row kept the step, and the copy read ahead."""

    __slots__ = ("backend", "root", "dtype", "last", "step", "streak", "values", "start", "fetch", "used", "wasted")

    def __init__(self, backend: Any, root: Any, dtype: Any) -> None:
        self.backend, self.root, self.dtype = backend, root, dtype
        self.last: int | None = None
        self.step = 0
        self.streak = 0
        self.values: Any = None  # host copy of the elements at start, start + step, ...
        self.start = 0
        self.fetch = _FIRST
        self.used = 0  # reads served from the present copy
        self.wasted = 0  # copies dropped by a write before they served a read


def read(view: Any, root: Any, backend: Any, site: tuple[int, int], download: Any) -> Any:
    """The NumPy scalar 0-d native ``view`` holds, a view of ``root`` (the memory owner's native),
    read by the line ``site``: from the copy read ahead where it holds the address, else
    ``download(view)`` (one round trip) or a read ahead along the line's step."""
    if not backend.reads_ahead or not _thread.mine():
        return download(view)
    address = backend.address(view)
    line = _LINES.get(site)
    if line is None or line.root is not root or line.backend is not backend or line.dtype != view.dtype:
        line = _Line(backend, root, view.dtype)
        with _thread.lock:
            if len(_LINES) >= _MAX:
                _LINES.pop(next(iter(_LINES.copy()), None), None)
            _LINES[site] = line
    if line.wasted >= _WASTED:
        return download(view)
    values = line.values
    if values is not None and not _fperr.pending(backend):
        k, rest = divmod(address - line.start, line.step)
        if not rest and 0 <= k < len(values):
            global _served
            line.last = address
            line.used += 1
            _report.record_kernel("scalar_reads_served")
            _served = True
            return values[k]
    last = line.last
    step = 0 if last is None else address - last
    line.last = address
    if not step or step != line.step:
        line.step, line.streak, line.values = step, 1, None
        return download(view)
    line.streak += 1
    count = _room(backend, view, root, step, line.fetch) if line.streak >= 2 else 1
    if count < 2:
        return download(view)
    ahead = backend.strided_view(view, (count,), (step,))
    if ahead is None:
        return download(view)
    values = download(ahead)
    with _thread.lock:
        if _thread.ended or _LINES.get(site) is not line:  # (another thread's write came meanwhile)
            return values[0]
        line.values, line.start, line.used = values, address, 0
    line.fetch = min(2 * line.fetch, _MOST)
    _report.record_kernel("scalar_read_aheads")
    return values[0]


def take_served() -> bool:
    """Whether the last element read was served from a copy read ahead (then forgotten: the next
    read answers for itself)."""
    global _served
    served, _served = _served, False
    return served


def _room(backend: Any, view: Any, root: Any, step: int, wanted: int) -> int:
    """How many elements from ``view`` on, ``step`` bytes apart, lie inside ``root``'s memory
    (at most ``wanted``)."""
    itemsize = view.dtype.itemsize
    if step % itemsize:
        return 1
    low = high = backend.address(root)
    for n, stride in zip(root.shape, root.strides, strict=True):
        if n == 0:
            return 1
        reach = (n - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    address = backend.address(view)
    if not low <= address <= high:
        return 1
    room = (high - address) // step + 1 if step > 0 else (address - low) // -step + 1
    return max(1, min(wanted, room))


def written(backend: Any, native: Any) -> None:
    """Memory of ``native`` on ``backend`` is about to be written: drop the copies it may touch."""
    if not _LINES:
        return
    if _thread.others_write(_LINES):
        return
    for line in list(_LINES.values()):
        if line.values is not None and line.backend is backend and backend.shares_memory(line.root, native):
            line.values, line.fetch = None, _FIRST
            line.wasted += not line.used


def handed_out() -> None:
    """A device array's memory was handed to other code, which may write it: drop every copy."""
    _LINES.clear()


def reset() -> None:
    """Forget every line and which thread reads ahead (for tests)."""
    _thread.reset(_LINES)
