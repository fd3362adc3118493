"""Does starting a GPU runtime slow NumPy's own small calls, and loops of them, in the same process?

On the H200 machine the asv small-array suite timed NumPy's multiply at n = 10 000 at 6.3 us
under plain NumPy and 9.1 us after npgpu enabled CuPy, though both call the same NumPy function
on the same NumPy arrays. On the H100 (twenty-second session), NumPy loops of column updates
(NPBench's adi and syr2k, run as NumPy's own calls from their second call) took 4-5% longer
after the device's first call than NumPy's calls before it. This times a call, and a sweep of
column updates written for this probe, at each step of starting CuPy, in one process:
``python tools/probe_host_overhead.py``.
"""

from __future__ import annotations

import os
import threading
import timeit

import numpy


def _time(stmt: str, names: dict) -> float:
    """Least per-call time over 5 rounds of 7 repeats (the machine's noise is large)."""
    return min(min(timeit.repeat(stmt, globals=names, number=2000, repeat=7)) for _ in range(5)) / 2000 * 1e6


def _sweep(u: numpy.ndarray, p: numpy.ndarray, q: numpy.ndarray) -> None:
    """A forward sweep over the columns of a tridiagonal system's coefficients (each column from
    the one before it): 498 column updates of a 500 x 500 array, NumPy's small strided calls."""
    n = u.shape[0]
    for j in range(1, n - 1):
        denominator = 0.25 * p[1:n - 1, j - 1] + 2.0
        p[1:n - 1, j] = -0.5 / denominator
        q[1:n - 1, j] = (0.2 * u[j, 0:n - 2] + u[j, 1:n - 1] - 0.3 * q[1:n - 1, j - 1]) / denominator


def _sweep_ms() -> float:
    rng = numpy.random.default_rng(3)
    u, p, q = rng.random((500, 500)), numpy.zeros((500, 500)), numpy.zeros((500, 500))
    return min(timeit.repeat(lambda: _sweep(u, p, q), number=4, repeat=7)) / 4 * 1e3


def report(step: str) -> None:
    rows = []
    for n in (10, 1000, 10_000):
        a = numpy.random.default_rng(1).random(n)
        b = numpy.random.default_rng(2).random(n)
        out = numpy.empty(n)
        fresh = _time("f(a, b)", {"f": numpy.multiply, "a": a, "b": b})
        into = _time("f(a, b, out=o)", {"f": numpy.multiply, "a": a, "b": b, "o": out})
        rows.append(f"n={n}: {fresh:.2f} us (new result) {into:.2f} us (out=)")
    rows.append(f"sweep {_sweep_ms():.2f} ms")
    where = f"threads {threading.active_count()}, cpus {len(os.sched_getaffinity(0))}"
    print(f"{step:<34} " + " | ".join(rows) + f" | {where}", flush=True)


if __name__ == "__main__":
    report("plain NumPy")
    import cupy

    report("after import cupy")
    cupy.zeros(1)
    report("after a CUDA context exists")
    pinned = cupy.cuda.alloc_pinned_memory(64 << 20)
    report("after 64 MiB of pinned memory")
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(8)
    list(pool.map(abs, range(8)))
    report("with 8 idle pool threads")
    import npgpu

    with npgpu.enable("cupy"):
        report("inside npgpu.enable('cupy')")
        x = npgpu.asarray(numpy.zeros(8 << 20))  # 64 MiB: starts the pinned stager's threads
        npgpu.asnumpy(x)
        report("after a staged upload/download")
        float((x * 2.0 + 1.0).sum())
        report("after a fused kernel and a sum")
    report("after leaving npgpu.enable")
    report("plain NumPy again, same process")
