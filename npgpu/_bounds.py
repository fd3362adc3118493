"""Known value bounds of integer device memory: index arrays whose range is known need no check.

NumPy raises IndexError before it writes anything when an index array holds an element outside
its axis; CuPy wraps such an index around. So every indexed read or write by device index arrays
is checked first (``ArrayModuleBackend._check_index_bounds``): a kernel over each index array and
a read back, which waits for the device. mandelbrot2 writes ``N_[Xi[I], Yi[I]] = i + 1`` and
``Z_[Xi[I], Yi[I]] = Z[I]`` every step, its index arrays selected from ``np.mgrid``'s: two waits a
step that its CuPy port does not make.

The values a selection gathers are some of its source's values. So a gathered integer array
(``Xi[I]``, ``Xi[rows]``) is noted with its source's memory, and the first check that needs it
finds the bounds of that memory (its minimum and maximum: one read back), which then hold for
every array gathered from it while the memory keeps its values; an array gathered from one with
known bounds has them too (``Xi = Xi[I]`` step after step). A check then reads only bounds.

Bounds are kept per native (a view's hold for its own elements; a memory owner's, for every view of
it) while the memory keeps its values, as npgpu/_masks.py keeps mask positions:

- every write through npgpu into device memory calls ``written`` first (from
  ``lazy.materialize.before_write``), which forgets the bounds of memory the write may touch, and
  the notes of arrays gathered from it (their source no longer holds the values they came from);
- memory handed out (DLPack, CUDA's array interface: a library may write it) forgets them all;
- bounds are kept and used by one thread, the first that gathers an integer array; a write from any
  other thread forgets them all and ends the keeping for the process.

At most ``_MAX`` natives are remembered; an entry goes with its native (its weak reference's callback
is the table's own C ``pop``: no Python code runs in it).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from ._one_thread import OneThread

#: id of a native -> [weak reference to it, its backend, (lowest, highest) of its elements or None
#: while unknown, weak reference to the native it was gathered from or None]. A native is a memory
#: owner (a gathered array) or a view (``xi``, a row of ``np.mgrid``'s result): a view's own bounds
#: are tighter than its memory's.
_FACTS: dict[int, list[Any]] = {}
_MAX = 16
_thread = OneThread()


def _entry(native: Any, backend: Any) -> list[Any] | None:
    """What is kept for ``native``, or else for the memory owner it views."""
    for candidate in (native, getattr(native, "base", None)):
        if candidate is None:
            break
        entry = _FACTS.get(id(candidate))
        if entry is not None and entry[0]() is candidate and entry[1] is backend:
            return entry
    return None


def _store(native: Any, backend: Any, bounds: tuple[int, int] | None, source: Any) -> None:
    key = id(native)
    try:
        ref = weakref.ref(native, functools.partial(_FACTS.pop, key))  # (the reference is pop's default)
        source_ref = None if source is None else weakref.ref(source)
    except TypeError:  # (an object that takes no weak reference: nothing kept)
        return
    with _thread.lock:  # (another thread's write may clear the table meanwhile: then it stays clear)
        if _thread.ended:
            return
        if key not in _FACTS and len(_FACTS) >= _MAX:
            _FACTS.pop(next(iter(_FACTS.copy()), None), None)  # (the oldest)
        _FACTS[key] = [ref, backend, bounds, source_ref]


def gathered(backend: Any, source: Any, result: Any) -> None:
    """``result`` (a native) holds values gathered from native ``source`` (a selection by a mask or
    by index arrays): where it is integers in memory of its own, note where they came from."""
    if (not getattr(result, "ndim", 0) or result.dtype.kind not in "iu" or source.dtype.kind not in "iu"
            or getattr(result, "base", None) is not None or not _thread.mine()):
        return  # (a view's memory, or its owner, answers for it)
    known = _entry(source, backend)
    if known is not None and known[2] is not None:
        _store(result, backend, known[2], None)
    else:
        _store(result, backend, None, source)


def within(backend: Any, index: Any, size: int) -> bool:
    """Whether every element of integer native ``index`` is known to lie inside an axis of ``size``
    (from -size to size - 1): then its check can be skipped. Where it was gathered from a native
    (or a chain of them) whose bounds are not known yet, that native's are found (one read back)."""
    if not _FACTS or not _thread.mine():
        return False
    entry = _entry(index, backend)
    if entry is None:
        return False
    path = [entry]  # (the links followed: each gathered from the next, none written since)
    while path[-1][2] is None:
        source = path[-1][3]() if path[-1][3] is not None else None
        if source is None:
            return False
        found = _entry(source, backend)
        if found is None or any(found is link for link in path):
            bounds = backend.value_bounds(source)
            if bounds is None:
                return False
            _store(source, backend, bounds, None)
            found = [None, backend, bounds, None]
        path.append(found)
    bounds = path[-1][2]
    for link in path[:-1]:
        if _FACTS.get(id(link[0]())) is link:  # (a write may have dropped it while the bounds were read)
            link[2] = bounds
    low, high = bounds
    return -size <= low and high < size


def written(backend: Any, native: Any) -> None:
    """Memory of ``native`` on ``backend`` is about to be written: forget the bounds of memory it
    may overlap, and the notes of arrays gathered from such memory."""
    if not _FACTS:
        return
    if _thread.others_write(_FACTS):
        return
    for key, entry in list(_FACTS.items()):
        if entry[1] is not backend:
            continue
        kept = entry[0]()
        source = entry[3]() if entry[3] is not None else None
        if kept is None or backend.shares_memory(kept, native) or (
                source is not None and backend.shares_memory(source, native)):
            _FACTS.pop(key, None)


def handed_out() -> None:
    """A device array's memory was handed to other code, which may write it: forget every bound."""
    _FACTS.clear()


def reset() -> None:
    """Forget every bound and which thread keeps them (for tests)."""
    _thread.reset(_FACTS)


def known(backend: Any, native: Any) -> tuple[int, int] | None:
    """The bounds kept for ``native`` (or the memory it views), or None (for tests)."""
    entry = _entry(native, backend)
    return None if entry is None else entry[2]
