"""The thread/task stress workload: tests/test_threads.py runs it briefly, tools/stress_threads.py at length.

Each worker (a thread, or an asyncio task) owns device arrays and runs the same steps on them and
on NumPy copies: fused elementwise chains, fused and plain reductions, indexing, in-place updates,
writes into views, syncs; it reads one array that all workers share and none writes. Every step's
answer is compared with NumPy's; a worker records the first difference (or error) and stops.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy

import npgpu

#: Sizes of the workers' arrays, cycled: different sizes give different kernels and buffers.
SIZES = (200_000, 150_001, 65_536)


def _check(what: str, got: Any, want: Any) -> None:
    got = numpy.asarray(got)
    want = numpy.asarray(want)
    if got.shape != want.shape or got.dtype != want.dtype:
        raise AssertionError(f"{what}: {got.dtype}{got.shape} where NumPy gives {want.dtype}{want.shape}")
    if want.dtype.kind in "biu":
        same = numpy.array_equal(got, want)
    else:  # (reductions add in another order than NumPy's pairwise sum)
        same = numpy.allclose(got, want, rtol=1e-11, atol=0, equal_nan=True)
    if not same:
        bad = numpy.flatnonzero(~numpy.isclose(got, want, rtol=1e-11, atol=0)) if got.shape else [0]
        i = int(bad[0]) if len(bad) else 0
        raise AssertionError(f"{what}: {got.ravel()[i]!r} at {i} where NumPy gives {want.ravel()[i]!r}")


class Worker:
    """One worker's arrays (device and NumPy) and its steps; ``step(i)`` runs step ``i``."""

    def __init__(self, seed: int, shared: Any, shared_host: numpy.ndarray) -> None:
        rng = numpy.random.default_rng(seed)
        n = SIZES[seed % len(SIZES)]
        self.host = {"a": rng.random(n), "b": rng.random(n) + 0.5, "k": rng.integers(0, 1000, n)}
        self.dev = {name: npgpu.asarray(value.copy()) for name, value in self.host.items()}
        self.shared, self.shared_host = shared, shared_host[:n]
        self.shared_view = shared[:n]
        self.seed = seed

    def both(self, fn: Callable[..., Any], what: str) -> Any:
        """``fn(xp, arrays)`` on the device arrays and on NumPy's, answers compared."""
        got = fn(npgpu, self.dev, self.shared_view)
        want = fn(numpy, self.host, self.shared_host)
        _check(what, got, want)
        return got

    def step(self, i: int) -> None:
        kind = i % 8
        if kind == 0:  # a fused chain whose result replaces an input (pending across steps)
            for d, s in ((self.dev, self.shared_view), (self.host, self.shared_host)):
                d["a"] = (d["a"] * 0.5 + 1.0) / 1.5 - 0.25 * d["a"] + s * 1e-3
        elif kind == 1:
            self.both(lambda xp, d, s: float((d["a"] * d["b"] - s).sum()), "sum of a fused graph")
        elif kind == 2:  # in place: a += expr runs straight into a
            for d in (self.dev, self.host):
                d["b"] += d["a"] * 0.125
            self.both(lambda xp, d, s: float(xp.max(d["b"])), "max after an in-place update")
        elif kind == 3:  # indexing: views, a strided view's sum, an element, a boolean mask
            self.both(lambda xp, d, s: xp.asarray(d["a"][7:5000:3] * 2.0), "strided view of a fused graph")
            self.both(lambda xp, d, s: float(d["a"][123]), "one element")
            self.both(lambda xp, d, s: float(d["b"][d["b"] > 1.0].sum()), "boolean-mask selection")
        elif kind == 4:  # writes into views of one's own arrays, then reads
            for d in (self.dev, self.host):
                d["a"][::7] = 0.5
                d["k"][10:20] = d["k"][20:30] + 1
            self.both(lambda xp, d, s: int(d["k"].sum()), "integer sum after writes into views")
        elif kind == 5:
            npgpu.sync()
            self.both(lambda xp, d, s: xp.asarray(d["a"]), "the whole array after sync")
        elif kind == 6:  # reads of the shared array, fused with one's own
            self.both(lambda xp, d, s: float(xp.mean(s * d["b"] + 1.0)), "mean over the shared array")
        else:
            self.both(lambda xp, d, s: xp.asarray(xp.where(d["a"] > 0.7, d["a"], -d["b"])), "where of two graphs")


def run_in_threads(fn: Callable[[Any], None], args: Any, switch_interval: float | None = None) -> None:
    """``fn(arg)`` for each of ``args``, each in a thread of its own, all at once; returns once all
    ended (with ``sys.setswitchinterval(switch_interval)`` meanwhile, when given)."""
    old = sys.getswitchinterval()
    if switch_interval is not None:
        sys.setswitchinterval(switch_interval)
    try:
        pool = [threading.Thread(target=fn, args=(arg,)) for arg in args]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    finally:
        sys.setswitchinterval(old)


def _where(exc: BaseException) -> str:
    """The innermost frames an exception passed through, so that a failure in CI says where it came from."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return " <- ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in reversed(frames))


def run_threads(backend: str, threads: int = 8, steps: int = 40, switch_interval: float | None = 1e-5,
                seed: int = 0) -> list[str]:
    """``threads`` workers in threads, ``steps`` steps each; returns the problems (empty: NumPy's answers)."""
    problems: list[str] = []
    with npgpu.enable(backend, threshold=0):
        shared_host = numpy.random.default_rng(seed + 999).random(max(SIZES))
        shared = npgpu.asarray(shared_host.copy())
    start = threading.Barrier(threads)

    def work(k: int) -> None:
        try:
            with npgpu.enable(backend, threshold=0):  # (settings are per thread)
                worker = Worker(seed * 1000 + k, shared, shared_host)
                start.wait()
                for i in range(steps):
                    worker.step(i + k)  # (threads at different steps at any moment)
        except Exception as exc:  # (reported by the caller, with the worker and the step)
            problems.append(f"thread {k}: {type(exc).__name__}: {exc} at {_where(exc)}")

    run_in_threads(work, range(threads), switch_interval)
    with npgpu.enable(backend, threshold=0):
        _check("the shared array, read by every thread", npgpu.asarray(shared), shared_host)
    return problems


def run_tasks(backend: str, tasks: int = 8, steps: int = 24, seed: int = 0) -> list[str]:
    """The workload in asyncio tasks of one thread, yielding to each other inside every step."""
    problems: list[str] = []
    with npgpu.enable(backend, threshold=0):
        shared_host = numpy.random.default_rng(seed + 999).random(max(SIZES))
        shared = npgpu.asarray(shared_host.copy())

    async def task(k: int) -> None:
        try:
            with npgpu.enable(backend, threshold=0):  # (settings are per task)
                worker = Worker(seed * 1000 + k, shared, shared_host)
                for i in range(steps):
                    # a half-recorded expression while other tasks run (and sync) in this thread
                    pending = worker.dev["a"] * 1.0
                    await asyncio.sleep(0)
                    _check("a value recorded before the other tasks ran", pending, worker.host["a"])
                    worker.step(i + k)
                    await asyncio.sleep(0)
        except Exception as exc:
            problems.append(f"task {k}: {type(exc).__name__}: {exc} at {_where(exc)}")

    async def main() -> None:
        await asyncio.gather(*(task(k) for k in range(tasks)))

    asyncio.run(main())
    return problems


def timed(fn: Callable[..., list[str]], *args: Any, **kwargs: Any) -> tuple[list[str], float]:
    """``fn(*args, **kwargs)``'s problems and the seconds it took."""
    start = time.perf_counter()
    problems = fn(*args, **kwargs)
    return problems, time.perf_counter() - start
