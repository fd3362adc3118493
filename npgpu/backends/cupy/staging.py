"""Pinned transfers: host data moved through page-locked buffers in chunks, on watched worker threads."""

from __future__ import annotations

import faulthandler
import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, wait
from time import monotonic
from typing import Any

import numpy

from ... import _errors


class _StagingWorkers:
    """Daemon threads that run a transfer's groups of chunks, and the wait for them, watched.

    The wait reports a worker that makes no progress for ``timeout`` seconds (a chunk not done):
    StagingTimeoutError naming the chunk, tracebacks of every thread on stderr, instead of a
    silent hang (one run on the GPU machine hung for 10 minutes at its first upload). An interrupt
    (KeyboardInterrupt) while waiting lets the workers finish first: they read or write memory
    the caller frees as the interrupt unwinds it. Memory of a transfer abandoned to a stuck worker
    is kept alive (``abandoned``), and a fresh set of threads takes the next transfers. The
    threads are daemons: a stuck one can't hold up the interpreter's exit.
    """

    #: Seconds a worker may spend on one chunk (4 MiB: about a millisecond) before it counts as stuck.
    timeout = 60.0

    def __init__(self, workers: int, name: str = "npgpu-pinned") -> None:
        self.workers = workers
        self.name = name
        self.abandoned: list[Any] = []
        self._queue: Any = None
        self._lock = threading.Lock()

    def _start(self) -> Any:
        jobs: Any = queue.SimpleQueue()
        for i in range(self.workers):
            threading.Thread(target=self._serve, args=(jobs,), name=f"{self.name}-{i}", daemon=True).start()
        return jobs

    def shutdown(self) -> None:
        """Let the threads end once they are idle (the next transfer starts new ones)."""
        with self._lock:
            jobs, self._queue = self._queue, None
        if jobs is not None:
            for _ in range(self.workers):
                jobs.put(None)

    @staticmethod
    def _serve(jobs: Any) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            future, fn, group, progress = job
            if not future.set_running_or_notify_cancel():
                continue
            progress[1] = monotonic()  # (time spent queued behind other transfers is no sign of a stuck worker)
            try:
                future.set_result(fn(group, progress))
            except BaseException as exc:  # (handed to the waiting caller, which raises it)
                future.set_exception(exc)

    def run(self, work: Callable[[Any, list[Any]], None], groups: list[list[Any]], what: str, keep: Any) -> None:
        """``work(group, progress)`` for every group, on the workers; returns once all are done.

        ``work`` sets ``progress[0]`` to the chunk it starts on and ``progress[1]`` to
        ``time.monotonic()`` then. ``keep``: what the workers' memory belongs to (kept alive
        if a worker is abandoned). Raises a worker's error, StagingTimeoutError for a stuck one."""
        with self._lock:
            if self._queue is None:
                self._queue = self._start()
            jobs = self._queue
        now = monotonic()
        progress = [[None, now] for _ in groups]
        futures: list[Future[None]] = []
        try:
            for group, state in zip(groups, progress, strict=True):
                future: Future[None] = Future()
                futures.append(future)
                jobs.put((future, work, group, state))
            self._wait(futures, progress, what, keep)
        except _errors.StagingTimeoutError:  # (the stuck worker is abandoned: no waiting for it)
            for future in futures:
                future.cancel()
            raise
        except BaseException:
            for future in futures:
                future.cancel()  # (groups not started yet never start)
            self._drain(futures, progress, what, keep)
            raise
        for future in futures:
            future.result()  # a worker's own error, once every worker has stopped

    def _wait(self, futures: list[Any], progress: list[list[Any]], what: str, keep: Any) -> None:
        poll = max(0.01, min(1.0, self.timeout / 4))
        while wait(futures, timeout=poll).not_done:
            now = monotonic()
            stuck = [(i, state) for i, (future, state) in enumerate(zip(futures, progress, strict=True))
                     if future.running() and now - state[1] > self.timeout]
            if stuck:
                self._abandon(stuck, what, keep, now)

    def _drain(self, futures: list[Any], progress: list[list[Any]], what: str, keep: Any) -> None:
        """Wait for the workers already running (interrupts deferred: their memory must outlive them)."""
        while True:
            try:
                self._wait(futures, progress, what, keep)
                return
            except KeyboardInterrupt:
                continue
            except _errors.StagingTimeoutError:
                return  # (abandoned: its memory is kept alive)

    def _abandon(self, stuck: list[tuple[int, list[Any]]], what: str, keep: Any, now: float) -> None:
        with self._lock:
            self.abandoned.append(keep)
            self._queue = None  # the next transfer starts fresh threads
        chunks = ", ".join(f"group {i} at bytes {state[0][0]}-{state[0][1]} for {now - state[1]:.0f} s"
                           if state[0] is not None else f"group {i} before its first chunk for {now - state[1]:.0f} s"
                           for i, state in stuck)
        sys.stderr.write(f"npgpu: a pinned staging worker is stuck ({what}: {chunks}); tracebacks of all threads:\n")
        sys.stderr.flush()
        try:
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        except (AttributeError, ValueError, OSError):  # (a stderr with no file descriptor: the process's own)
            faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        raise _errors.StagingTimeoutError(
            f"npgpu: {what} through the pinned staging threads made no progress in {self.timeout:.0f} s ({chunks}). "
            "Tracebacks of all threads went to stderr. The memory involved is kept alive and new threads take the "
            "next transfers. If this repeats, report it with the tracebacks; arrays smaller than "
            "CupyBackend.pinned_min_bytes move with one plain copy instead (raise it to avoid the staging threads).")


class _PinnedStager:
    """Moves host data through page-locked buffers, in chunks, on several threads at once.

    Pageable copies ran at 3-10 GB/s on the H200 machine while pinned ones reach ~55 GB/s; the
    host memcpy into the pinned buffer then limits, so each worker takes a contiguous run of
    chunks and double-buffers: it fills one pinned buffer while the other one's DMA runs.
    """

    #: Measured on the H200 machine (tools/measure_cupy.py grid, three runs on 2026-11-30): 4 MiB
    #: chunks on 8 workers were among the fastest every time (64 MiB: 25-34 GB/s, 256 MiB: 32-44);
    #: 16 workers or 1-2 MiB chunks were slower. The host memcpy into pinned memory on 8 threads
    #: alone ran at 30-37 GB/s there, which bounds any staged upload.
    def __init__(self, cupy: Any, chunk_bytes: int = 4 << 20, workers: int | None = None,
                 write_combined: bool = False) -> None:
        self.cupy = cupy
        self.chunk = chunk_bytes
        self.workers = workers or max(1, min(8, os.cpu_count() or 2))
        #: Upload buffers allocated write-combined: the host only writes them and the DMA reads
        #: them, so the CPU's copy streams past its caches (downloads keep cached buffers: the
        #: host reads those, and reads of write-combined memory are slow).
        self.write_combined = write_combined
        self._local = threading.local()
        self._pool = _StagingWorkers(self.workers)
        self._device = cupy.cuda.Device().id

    def _slot(self, upload: bool = False) -> tuple[list[Any], list[numpy.ndarray], Any, list[Any]]:
        name = "up" if upload and self.write_combined else "slot"
        slot = getattr(self._local, name, None)
        if slot is None:
            cp = self.cupy
            cp.cuda.Device(self._device).use()
            if name == "up":
                flags = cp.cuda.runtime.hostAllocWriteCombined
                memory = [cp.cuda.PinnedMemoryPointer(cp.cuda.PinnedMemory(self.chunk, flags), 0) for _ in range(2)]
            else:
                memory = [cp.cuda.alloc_pinned_memory(self.chunk) for _ in range(2)]
            host = [numpy.frombuffer(m, numpy.uint8, self.chunk) for m in memory]
            slot = (memory, host, cp.cuda.Stream(non_blocking=True), [cp.cuda.Event(), cp.cuda.Event()])
            setattr(self._local, name, slot)
        return slot

    def _groups(self, nbytes: int) -> list[list[tuple[int, int]]]:
        chunks = [(start, min(start + self.chunk, nbytes)) for start in range(0, nbytes, self.chunk)]
        per = -(-len(chunks) // self.workers)
        return [chunks[i:i + per] for i in range(0, len(chunks), per)]

    def upload(self, src: numpy.ndarray, dst: Any) -> None:
        src_bytes = src.reshape(-1).view(numpy.uint8)
        base = dst.data.ptr
        memcpy = self.cupy.cuda.runtime.memcpyAsync

        def work(group: list[tuple[int, int]], progress: list[Any]) -> None:
            memory, host, stream, events = self._slot(upload=True)
            for i, (lo, hi) in enumerate(group):
                progress[0], progress[1] = (lo, hi), monotonic()
                j = i & 1
                events[j].synchronize()  # the DMA that last read buffer j has finished
                numpy.copyto(host[j][: hi - lo], src_bytes[lo:hi])
                memcpy(base + lo, memory[j].ptr, hi - lo, 1, stream.ptr)
                events[j].record(stream)
            stream.synchronize()

        self._pool.run(work, self._groups(src.nbytes), f"an upload of {src.nbytes} bytes", (src, dst))

    def download(self, src: Any, dst: numpy.ndarray) -> None:
        dst_bytes = dst.reshape(-1).view(numpy.uint8)
        base = src.data.ptr
        memcpy = self.cupy.cuda.runtime.memcpyAsync

        def work(group: list[tuple[int, int]], progress: list[Any]) -> None:
            memory, host, stream, events = self._slot()
            previous = None
            for i, (lo, hi) in enumerate(group):
                progress[0], progress[1] = (lo, hi), monotonic()
                j = i & 1
                memcpy(memory[j].ptr, base + lo, hi - lo, 2, stream.ptr)
                events[j].record(stream)
                if previous is not None:  # copy out the chunk before while this one's DMA runs
                    pj, plo, phi = previous
                    events[pj].synchronize()
                    numpy.copyto(dst_bytes[plo:phi], host[pj][: phi - plo])
                previous = (j, lo, hi)
            if previous is not None:
                pj, plo, phi = previous
                events[pj].synchronize()
                numpy.copyto(dst_bytes[plo:phi], host[pj][: phi - plo])

        self._pool.run(work, self._groups(src.nbytes), f"a download of {src.nbytes} bytes", (src, dst))
