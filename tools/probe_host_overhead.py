"""Does starting a GPU runtime slow NumPy's own small calls in the same process?

On the H200 machine the asv small-array suite timed NumPy's multiply at n = 10 000 at 6.3 us
under plain NumPy and 9.1 us after npgpu enabled CuPy, though both call the same NumPy function
on the same NumPy arrays. This times the call at each step of starting CuPy, in one process:
``python tools/probe_host_overhead.py``.
"""

from __future__ import annotations

import timeit

import numpy


def report(step: str) -> None:
    rows = []
    for n in (10, 1000, 10_000):
        a = numpy.random.default_rng(1).random(n)
        b = numpy.random.default_rng(2).random(n)
        out = numpy.empty(n)
        fresh = min(timeit.repeat("f(a, b)", globals={"f": numpy.multiply, "a": a, "b": b}, number=2000,
                                  repeat=7)) / 2000 * 1e6
        into = min(timeit.repeat("f(a, b, out=o)", globals={"f": numpy.multiply, "a": a, "b": b, "o": out},
                                 number=2000, repeat=7)) / 2000 * 1e6
        rows.append(f"n={n}: {fresh:.2f} us (new result) {into:.2f} us (out=)")
    print(f"{step:<34} " + " | ".join(rows), flush=True)


if __name__ == "__main__":
    report("plain NumPy")
    import cupy

    report("after import cupy")
    cupy.zeros(1)
    report("after a CUDA context exists")
    import npgpu

    with npgpu.enable("cupy"):
        report("inside npgpu.enable('cupy')")
        x = npgpu.asarray(numpy.zeros(8 << 20))  # 64 MiB: starts the pinned stager's threads
        npgpu.asnumpy(x)
        report("after a staged upload/download")
    report("after leaving npgpu.enable")
    report("plain NumPy again, same process")
