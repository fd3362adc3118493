"""Where the CPU time of one npgpu E8 call goes on a CUDA machine, phase by phase.

``python tools/probe_e8_cpu.py [n]``: medians over 200 calls at n elements (default 1e8) of
recording E8's 13 calls, materializing (graph lookup and launch), and waiting, against
``cupy.fuse``'s whole call; then the 15 most expensive functions of recording + launching
under cProfile (relative weights only: the profiler slows Python).
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import statistics
import sys
import time

import cupy
import numpy

import npgpu
from npgpu.lazy import materialize as lazy


def e8_of(xp, a, b, c):
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


def e8_cupy(a, b, c):
    return e8_of(cupy, a, b, c)


def pieces(da, db, dc, stream) -> None:
    """Median CPU time of each step from a recorded E8 to its launched kernel, done by hand in
    the order materialize does them, with the kernel waited for before the next iteration."""
    backend = da._backend
    steps: dict[str, list[float]] = {"walk+graph": [], "ndarray()": [], "args": [], "RawKernel call": [],
                                     "run_fused": []}
    kernel = None
    for i in range(201):
        pending = e8_of(npgpu, da, db, dc)
        t0 = time.perf_counter()
        state = lazy._GraphState()
        graph = state.graph(pending, pending.dtype)
        t1 = time.perf_counter()
        out = cupy.ndarray(pending.shape, pending.dtype)
        t2 = time.perf_counter()
        args = (*state.inputs, *state.scalars, out, numpy.int64(out.size))
        t3 = time.perf_counter()
        if kernel is None:
            backend.run_fused(graph, state.inputs, state.scalars, pending.shape)
            kernel, per_block = backend._kernels[graph]
            grid, block = ((out.size + per_block - 1) // per_block,), (backend.BLOCK,)
        kernel(grid, block, args)
        t4 = time.perf_counter()
        stream.synchronize()
        t5 = time.perf_counter()
        backend.run_fused(graph, state.inputs, state.scalars, pending.shape)
        t6 = time.perf_counter()
        stream.synchronize()
        lazy.discard(pending)
        del pending, out, args
        if i:
            for key, value in zip(steps, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t6 - t5)):
                steps[key].append(value)
    print("   pieces, median us of CPU: " + " | ".join(f"{k} {statistics.median(v) * 1e6:.1f}"
                                                        for k, v in steps.items()))


def main() -> None:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**8
    fused = cupy.fuse(e8_cupy)
    stream = cupy.cuda.get_current_stream()
    for dtype in ("float32", "float64"):
        a, b, c = (cupy.random.random(n, dtype=dtype) for _ in range(3))
        with npgpu.enable("cupy"):
            da, db, dc = (npgpu.asarray(x) for x in (a, b, c))
            e8_of(npgpu, da, db, dc)
            npgpu.sync()
            phases: dict[str, list[float]] = {"record": [], "launch": [], "wait": [], "whole": [], "fuse": [],
                                              "fuse launch": []}
            gc.disable()
            for _ in range(200):
                t0 = time.perf_counter()
                r = e8_of(npgpu, da, db, dc)
                t1 = time.perf_counter()
                lazy.materialize(r)
                t2 = time.perf_counter()
                stream.synchronize()
                t3 = time.perf_counter()
                phases["record"].append(t1 - t0)
                phases["launch"].append(t2 - t1)
                phases["wait"].append(t3 - t2)
                phases["whole"].append(t3 - t0)
                del r
                t0 = time.perf_counter()
                f = fused(a, b, c)
                t1 = time.perf_counter()
                stream.synchronize()
                t2 = time.perf_counter()
                phases["fuse launch"].append(t1 - t0)
                phases["fuse"].append(t2 - t0)
                del f
            gc.enable()
            row = " | ".join(f"{k} {statistics.median(v) * 1e6:.1f}" for k, v in phases.items())
            print(f"{dtype} n={n}: median us: {row}")
            pieces(da, db, dc, stream)
            profile = cProfile.Profile()
            profile.enable()
            for _ in range(300):
                r = e8_of(npgpu, da, db, dc)
                lazy.materialize(r)
                stream.synchronize()
            profile.disable()
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
