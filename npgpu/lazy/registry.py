"""The pending-array registry: recorded calls (Pending, ScalarArg) and every pending array alive.

A pending device array holds a Pending: a recorded ufunc call whose operands are device arrays
(pending or not) and scalars. The registry finds the graphs a write or ``npgpu.sync()`` must
run first; see npgpu/lazy/materialize.py for the thread model.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy

from .. import _fperr
from .._weak import IdentityRef


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


class _Ref(IdentityRef):
    __slots__ = ("owner",)  # threading.get_ident() of the thread that recorded the array


_get_ident = threading.get_ident


class _PendingArrays:
    """Every pending array alive, as a set of weak references, so writes and sync() can find the
    graphs that must run first; an array that dies unused is simply forgotten: its reference's
    callback is the set's own C ``discard`` (npgpu/_weak.py: no Python code runs in a weakref
    callback, where an interrupt would be lost). Threads add and remove entries at once: each
    change is one set operation, and readers take a snapshot first."""

    def __init__(self) -> None:
        self._refs: set[_Ref] = set()
        self._forget = self._refs.discard  # one callback for every reference

    def add(self, array: Any) -> None:
        ref = _Ref(array, self._forget)
        ref.owner = _get_ident()
        self._refs.add(ref)

    def discard(self, array: Any) -> None:
        refs = self._refs
        for ref in weakref.getweakrefs(array):
            if type(ref) is _Ref:
                refs.discard(ref)

    def __len__(self) -> int:
        return len(self._refs)

    def __bool__(self) -> bool:
        return bool(self._refs)

    def alive(self, owner: int | None = None) -> list[Any]:
        """The pending arrays still alive (recorded by thread ``owner`` when given), as a list: the
        registry changes while it is used. (list() copies the values in one step; iterating the
        dict itself let another thread's recording break the loop: "dictionary changed size".)"""
        refs = list(self._refs)
        if owner is not None:
            refs = [ref for ref in refs if ref.owner == owner]
        return [array for array in [ref() for ref in refs] if array is not None]

    def __iter__(self) -> Any:
        return iter(self.alive())


_pending = _PendingArrays()
_refs, _forget = _pending._refs, _pending._forget


def discard(array: Any) -> None:
    """Forget a recorded array that will never be computed."""
    _pending.discard(array)


def pending_count() -> int:
    return len(_pending)

