"""Device memory: allocation and recycling of host memory on CPU devices, transfers, overlap."""

from __future__ import annotations

import math
from typing import Any

import numpy

from ..._weak import IdentityRef
from ..base import Backend, elements_overlap
from .array import CLArray, _is_f_contiguous, _span
from .routing import implements


def _like(a: CLArray, dtype: Any, order: str, shape: Any) -> tuple[Any, Any, str, CLArray | None]:
    """(shape, dtype, order, prototype) of a ``*_like`` call, NumPy's rules for a new ``shape``:
    'A' follows the prototype's contiguity, 'K' its axes when the number of dimensions is the same."""
    dtype = a.dtype if dtype is None else dtype
    if shape is None:
        return a.shape, dtype, order, a
    shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(shape)
    if order == "A":
        order = "F" if _is_f_contiguous(a) and not a.c_contiguous else "C"
    elif order == "K" and len(shape) != a.ndim:
        order = "C"
    return shape, dtype, order, a if order == "K" else None


def _memory_axes(shape: tuple[int, ...], order: str, like: CLArray | None) -> tuple[int, ...] | None:
    """The axes from outermost to innermost in memory for NumPy's ``order``; None for C order."""
    ndim = len(shape)
    if ndim < 2 or order == "C" or (order in ("A", "K") and like is None):
        return None
    if order == "F" or (order == "A" and _is_f_contiguous(like) and not like.c_contiguous):
        return tuple(reversed(range(ndim)))
    if order == "K":
        moving = [abs(s) for n, s in zip(like.shape, like.strides, strict=True) if n > 1]
        if all(moving[i] >= moving[i + 1] for i in range(len(moving) - 1)):
            return None
        return tuple(sorted(range(ndim), key=lambda axis: -abs(like.strides[axis]) if like.shape[axis] > 1 else 0))
    if order == "A":
        return None
    raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")



def aligned_empty(nbytes: int, alignment: int) -> numpy.ndarray:
    """``nbytes`` of host memory starting at a multiple of ``alignment`` bytes (a view of a slightly
    larger NumPy array): the alignment a CPU device asks of memory it uses in place
    (CL_DEVICE_MEM_BASE_ADDR_ALIGN: 128 bytes on PoCL). NumPy's memory is 16-byte aligned, a large
    array's 16 bytes past a page: with PyOpenCL alone, an add on 1M float64 took 645-850 us in such
    memory against 561-655 us aligned (PoCL, two runs, 2026-12-03)."""
    raw = numpy.empty(nbytes + alignment, numpy.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + nbytes]


class _Retiring(IdentityRef):
    """A reference to the view a host-backed buffer holds: when it dies, ``owner`` (the host
    memory) is retired."""

    __slots__ = ("owner",)


class Memory(Backend):
    """Allocation (plain buffers, or host memory used in place on CPU devices, recycled),
    transfers and overlap."""

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, CLArray)

    def empty(self, shape: Any, dtype: Any = float) -> CLArray:
        shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(int(s) for s in shape)
        dtype = numpy.dtype(dtype)
        nbytes = max(math.prod(shape) * dtype.itemsize, 1)
        if nbytes > self.max_alloc_bytes:  # refused before anything is allocated (or overcommitted)
            raise self._no_memory(nbytes)
        cl = self._cl
        mf = cl.mem_flags
        try:
            if self.host_backed:
                # Host memory from NumPy's allocator (huge pages for large arrays) used in place by
                # the device: measured on PoCL at 1e7 float64, add into a new array 35 -> 12 ms,
                # upload 45 -> 12 ms, download 32 -> 8.5 ms.  The buffer keeps the host array alive.
                # The memory must outlive queued commands that use it: when the buffer dies its host
                # array is retired, and freed once a marker enqueued after it has completed.
                with self._lock:
                    self._collect()
                    owner = self._reuse(nbytes)
                # (the buffer holds a view, which dies with it; a reference to the view, kept in
                # _watched, holds the owner, and its callback, _retired.append, is C: see _weak.py)
                view = owner[:]
                buf = cl.Buffer(self.context, mf.READ_WRITE | mf.USE_HOST_PTR, hostbuf=view)
                ref = _Retiring(view, self._retired.append)
                ref.owner = owner
                self._watched.add(ref)
                del view
            else:
                buf = cl.Buffer(self.context, mf.READ_WRITE, nbytes)
        except MemoryError as exc:  # NumPy's: the host memory a CPU device computes in is exhausted
            raise self._no_memory(nbytes, str(exc)) from exc
        except cl.Error as exc:
            self._raise_fault(exc, "an allocation", nbytes)
        return CLArray(self, buf, shape, dtype)

    @implements(numpy.empty, kwargs=("dtype", "order"), complex_values=True)
    def empty_ordered(self, shape: Any, dtype: Any = float, order: str = "C", like: CLArray | None = None) -> CLArray:
        """``empty`` with NumPy's memory order: "C", "F", or for ``*_like``/copies "A" (F when
        ``like`` is Fortran-contiguous) and "K" (``like``'s order of axes in memory)."""
        shape = (int(shape),) if isinstance(shape, (int, numpy.integer)) else tuple(int(s) for s in shape)
        axes = _memory_axes(shape, order, like)
        if axes is None:
            return self.empty(shape, dtype)
        owner = self.empty(tuple(shape[axis] for axis in axes), dtype)
        where = numpy.argsort(axes)
        return CLArray(self, owner.data, shape, owner.dtype, tuple(owner.strides[k] for k in where), owner.offset)

    def from_host(self, array: numpy.ndarray) -> CLArray:
        # (numpy.ascontiguousarray would turn a 0-d array into a 1-d one)
        host = array if array.flags.c_contiguous else numpy.ascontiguousarray(array).reshape(array.shape)
        out = self.empty(host.shape, host.dtype)
        if host.size and self.host_backed:
            # (a new buffer's host memory, which no queued command uses: copied in place, no round trip)
            out.data.get_host_array((out.data.size,), numpy.uint8)[:host.nbytes] = host.reshape(-1).view(numpy.uint8)
        elif host.size:
            # The caller's own memory is copied before this returns: a copy still queued would read
            # whatever the caller writes there next (NumPy's asarray copies at once). A private
            # contiguous copy can go on in the background.
            try:
                self._cl.enqueue_copy(self.queue, out.data, host, is_blocking=host is array)
            except self._cl.Error as exc:
                self._raise_fault(exc, "an upload", host.nbytes)
        return out

    def to_host(self, native: CLArray) -> numpy.ndarray:
        a = native
        result = numpy.empty(a.shape, a.dtype)
        if a.size == 0:
            return result
        if self.host_backed:  # (the device's memory is host memory: copied from where it is)
            view = self.host_view(a)
            assert view is not None
            result[...] = view
            return result
        cl = self._cl
        try:
            if a.c_contiguous:
                cl.enqueue_copy(self.queue, result, a.data, src_offset=a.offset, is_blocking=True)
                return result
            lo, hi = _span(a)
            if hi - lo <= 2 * a.nbytes:
                # copy the touched span and let NumPy gather it: cheaper than a kernel + copy
                raw = numpy.empty(hi - lo, numpy.uint8)
                cl.enqueue_copy(self.queue, raw, a.data, src_offset=lo, is_blocking=True)
                result[...] = numpy.ndarray(a.shape, a.dtype, buffer=raw, offset=a.offset - lo, strides=a.strides)
                return result
        except cl.Error as exc:
            self._raise_fault(exc, "a download")
        return self.to_host(self.copy(a))

    def host_view(self, native: CLArray) -> numpy.ndarray | None:
        """On a CPU device the buffer is host memory (``host_backed``): the array itself, no copy
        (the view holds the buffer, so its memory is not recycled while the view lives)."""
        if not self.host_backed or native.size == 0:
            return None
        try:
            self.queue.finish()  # (the queue's work on it done)
        except self._cl.Error as exc:
            self._raise_fault(exc, "waiting for the device")
        memory = native.data.get_host_array((native.data.size,), numpy.uint8)
        return numpy.ndarray(native.shape, native.dtype, buffer=memory, offset=native.offset, strides=native.strides)

    def write(self, native: CLArray, host: numpy.ndarray) -> None:
        """Overwrite ``native`` with ``host``'s values: a contiguous one with one copy and no kernel
        (a fallback writes its result back this way also where kernels can't be built)."""
        if not (native.c_contiguous and host.shape == native.shape and host.dtype == native.dtype):
            super().write(native, host)
            return
        src = numpy.ascontiguousarray(host)
        if src.size and self.host_backed:
            view = self.host_view(native)  # (after the queued work that reads or writes it)
            assert view is not None
            view[...] = src
        elif src.size:
            try:
                self._cl.enqueue_copy(self.queue, native.data, src, dst_offset=native.offset, is_blocking=True)
            except self._cl.Error as exc:
                self._raise_fault(exc, "an upload", src.nbytes)

    #: Host memory of freed buffers kept for reuse (bytes): memory the kernels already touched
    #: costs no page faults again (a fresh 80 MB result paid 20-40 ms of them on PoCL).
    recycle_bytes = 512 << 20

    # Host memory of CPU devices moves retired -> in flight (behind a marker) -> spare -> reused.
    # _retired is appended to by weakref callbacks (the dead _Retiring references), which run in
    # whatever thread drops a buffer, at any time (also inside a locked section: a deque's append
    # needs no lock); everything else is read and changed under self._lock only. Memory is reused
    # only once a marker enqueued after its retirement has completed: every command that used it
    # was queued before that marker.

    def _reuse(self, nbytes: int) -> numpy.ndarray:
        """Host memory of ``nbytes`` for a new buffer (with ``self._lock`` held)."""
        spare = self._spare.get(nbytes)
        if spare:
            self._spare_bytes -= nbytes
            return spare.pop()
        return aligned_empty(nbytes, self.host_alignment)

    def _recycle(self, owners: list[numpy.ndarray]) -> None:
        """Keep host memory that no queued command uses any more, up to ``recycle_bytes`` (lock held)."""
        for owner in owners:
            if self._spare_bytes + owner.nbytes <= self.recycle_bytes:
                self._spare.setdefault(owner.nbytes, []).append(owner)
                self._spare_bytes += owner.nbytes

    #: retired host memory goes behind a marker once there are this many buffers or bytes of it (or
    #: at a sync): a marker is an OpenCL command, 25-45 us on PoCL, and a loop of small operations
    #: retires one buffer per operation
    retire_batch = 8
    retire_batch_bytes = 1 << 20

    def _collect(self, force: bool = False) -> None:
        """Recycle retired host memory that no queued command can still use (lock held); retired
        memory is put behind a marker in batches (``retire_batch``), or now when ``force``."""
        retired = self._retired
        if retired and (force or len(retired) >= self.retire_batch
                        or sum(ref.owner.nbytes for ref in list(retired)) >= self.retire_batch_bytes):
            batch = []
            while retired:
                ref = retired.popleft()
                self._watched.discard(ref)
                batch.append(ref.owner)
            self._in_flight.append((self._cl.enqueue_marker(self.queue), batch))
        complete = self._cl.command_execution_status.COMPLETE
        in_flight = self._in_flight
        while in_flight and in_flight[0][0].command_execution_status == complete:
            self._recycle(in_flight.popleft()[1])

    def sync(self) -> None:
        cl = self._cl
        try:
            with self._lock:
                self._collect(force=True)  # what was retired so far goes behind a marker that finish() waits for
            self.queue.finish()
            with self._lock:
                self._collect(force=True)
        except cl.Error as exc:
            self._raise_fault(exc, "waiting for the device")


    def may_share_memory(self, a: Any, b: Any) -> bool:
        if not (isinstance(a, CLArray) and isinstance(b, CLArray)) or a.data is not b.data:
            return False
        if a.size == 0 or b.size == 0:
            return False
        la, ha = _span(a)
        lb, hb = _span(b)
        return la < hb and lb < ha

    def shares_memory(self, a: Any, b: Any) -> bool:
        if not self.may_share_memory(a, b):
            return False
        return elements_overlap(a.offset, a.shape, a.strides, a.dtype.itemsize,
                                b.offset, b.shape, b.strides, b.dtype.itemsize)
