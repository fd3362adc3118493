"""Selections and writes by a boolean device mask used more than once: its true positions are
found once.

``a[mask]`` has as many elements as the mask has true ones, so a device must count them before it
can make the result: CuPy scans the mask and reads the count back, waiting for the device, at every
selection. Programs select several arrays by one mask (mandelbrot2: ``Xi[I]``, ``Yi[I]``, ``Z[I]``
and ``C[I]``, nine selections a step by two masks). At a mask's first selection its flat true
positions are found and kept (one scan and one read back), and every selection by it gathers them:
the result's size is known, so nothing waits after the first. A write by such a mask (mandelbrot1's
``Z[I] = Z[I]**2 + C[I]``) scatters into the positions.

Kept positions stay right while the mask's memory keeps its values:

- every write through npgpu into device memory calls ``written`` first (from
  ``lazy.materialize.before_write``, the one call each write road makes so that recorded work reads
  old values), and positions of a mask whose memory the write may touch are dropped;
- a mask's memory handed out (DLPack, CUDA's array interface: a library may write it) drops them all;
- a mask is known by its identity and its native array: a new buffer (``shape`` set, ``resize``,
  residency's move) is a new mask;
- positions are kept and used by one thread, the first that selects by a mask twice; a write from
  any other thread drops them all and ends the keeping for the process. (Another thread's write
  could otherwise fall between its ``written`` and the scan of a selection here, and leave stale
  positions kept; the lock orders the two: either the positions are stored first and the write
  drops them, or the write is seen first and they are never stored.)

At most ``_MAX`` masks are remembered, and only masks of at most ``_MAX_ELEMENTS`` elements (their
positions, 8 bytes a true element, stay on the device as long as the mask: at most 256 MiB in all);
a mask that dies is forgotten (its weak reference's callback
is the table's own C ``pop``: no Python code runs in it).
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

from ._one_thread import OneThread

#: id of a mask -> [weak reference to it, its native array, its backend, its flat true positions
#: (None until found)]
_SEEN: dict[int, list[Any]] = {}
_MAX = 8
_MAX_ELEMENTS = 1 << 22
#: the thread that keeps positions, and whether another thread's write ended the keeping
_thread = OneThread()


def positions(mask: Any, backend: Any) -> Any:
    """``mask``'s kept flat true positions (a native integer array), found at its first use; None
    where the caller indexes as usual (a backend that keeps none, a mask past ``_MAX_ELEMENTS``,
    another thread than the one keeping positions, or keeping ended by another thread's write).
    (Found at the first use, not the second: a selection by a new mask waits for its count either
    way, and CuPy's own masked selection then waited once more at the mask's second use.)"""
    if not backend.keeps_mask_positions or mask.size > _MAX_ELEMENTS or not _thread.mine():
        return None
    key = id(mask)
    native = mask._device_data
    entry = _SEEN.get(key)
    if entry is None or entry[0]() is not mask or entry[1] is not native or entry[2] is not backend:
        with _thread.lock:  # (another thread's write may clear the table, a mask's death pop from it, meanwhile:
            # the oldest is found in a copy, one C call)
            if len(_SEEN) >= _MAX:
                _SEEN.pop(next(iter(_SEEN.copy()), None), None)
            entry = _SEEN[key] = [weakref.ref(mask, functools.partial(_SEEN.pop, key)), native, backend, None]
    found = entry[3]
    if found is None:
        found = backend.mask_positions(native)
        with _thread.lock:
            if _thread.ended or _SEEN.get(key) is not entry:  # (another thread's write came meanwhile)
                return None
            entry[3] = found
    return found


def select(array: Any, mask: Any, backend: Any) -> Any:
    """``array[mask]``'s native result from kept positions, or None where the caller selects as
    usual (``positions``)."""
    found = positions(mask, backend)
    return None if found is None else backend.take_positions(array._device_data, found, mask.ndim)


def assign(array_native: Any, mask: Any, backend: Any) -> tuple[Any, tuple[int, ...]] | None:
    """For ``array[mask] = value``: the kept positions and the shape NumPy broadcasts the value to
    (the true count, then the array's dimensions past the mask's), or None where the caller writes
    as usual (``positions``; an array whose flattened rows would be a copy, not a view)."""
    if not backend.keeps_mask_positions or not array_native.flags.c_contiguous:
        return None
    found = positions(mask, backend)
    if found is None:
        return None
    return found, (found.size, *array_native.shape[mask.ndim:])


def written(backend: Any, native: Any) -> None:
    """Memory of ``native`` on ``backend`` is about to be written: forget masks it may overlap."""
    if not _SEEN:
        return
    if _thread.others_write(_SEEN):
        return
    for key, entry in list(_SEEN.items()):
        if entry[2] is backend and backend.shares_memory(entry[1], native):
            _SEEN.pop(key, None)


def handed_out() -> None:
    """A device array's memory was handed to other code, which may write it: forget every mask."""
    _SEEN.clear()


def reset() -> None:
    """Forget every mask and which thread keeps positions (for tests)."""
    _thread.reset(_SEEN)


def kept() -> int:
    """How many masks have positions kept (for tests)."""
    return sum(1 for entry in list(_SEEN.values()) if entry[3] is not None)
