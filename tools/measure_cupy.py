# ruff: noqa: B023  (each lambda is timed before its loop variables change)
"""Measurements behind the CuPy backend's defaults: transfer bandwidth and the placement threshold.

Run on a CUDA machine: ``python tools/measure_cupy.py``. Prints a table; nothing is hard-coded
from it without a note saying when and where it was measured.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cupy
import numpy

import npgpu
from npgpu.backends import get_backend


def best(fn, repeat=7):
    times = []
    for _ in range(repeat):
        cupy.cuda.get_current_stream().synchronize()
        t = time.perf_counter()
        fn()
        cupy.cuda.get_current_stream().synchronize()
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def transfers() -> None:
    backend = get_backend("cupy")
    print("transfer bandwidth (median of 7), GB/s; 'staged' = threaded pinned chunks, 'pinned dst' = DMA into pooled")
    print("pinned host memory, 'w8' = staged with 8 workers instead of one per core")
    print(f"{'MiB':>6} {'pageable h2d':>13} {'staged h2d':>11} {'w8 h2d':>7} {'pageable d2h':>13} "
          f"{'staged d2h':>11} {'pinned dst d2h':>15}")
    for mib in (1, 4, 16, 64, 256):
        host = numpy.random.default_rng(0).random(mib * (1 << 20) // 8)
        dev = cupy.asarray(host)
        nbytes = host.nbytes
        plain_up = best(lambda: cupy.asarray(host))
        ours_up = best(lambda: backend.from_host(host))
        plain_down = best(lambda: dev.get())
        backend.pinned_destination = True
        pinned_down = best(lambda: backend.to_host(dev))
        assert numpy.array_equal(backend.to_host(backend.from_host(host)), host)
        assert numpy.array_equal(backend.to_host(dev[::2]), host[::2])
        assert backend.to_host(dev).flags.writeable
        backend.pinned_destination = False
        staged_down = best(lambda: backend.to_host(dev))
        assert numpy.array_equal(backend.to_host(dev), host)
        backend.pinned_destination = True
        stager = backend._stager
        w8_up = None
        if stager is not None:
            saved = stager.workers
            stager.workers = 8
            w8_up = best(lambda: backend.from_host(host))
            stager.workers = saved
        w8 = f"{nbytes / w8_up / 1e9:>7.1f}" if w8_up else f"{'-':>7}"
        rates = [nbytes / t / 1e9 for t in (plain_up, ours_up, plain_down, staged_down, pinned_down)]
        up, staged, down, staged_d, pinned_d = rates
        print(f"{mib:>6} {up:>13.1f} {staged:>11.1f} {w8} {down:>13.1f} {staged_d:>11.1f} {pinned_d:>15.1f}")


def transfer_grid() -> None:
    """Host-to-device staging: chunk size x worker threads, against pinning the source in place."""
    from npgpu.backends.cupy.staging import _PinnedStager

    backend = get_backend("cupy")
    saved = backend._stager
    runtime = cupy.cuda.runtime
    print("\nh2d grid, GB/s (median of 7): staged through pinned chunks, and hostRegister of the source + one DMA")
    for mib in (64, 256):
        host = numpy.random.default_rng(0).random(mib * (1 << 20) // 8)
        nbytes = host.nbytes
        pageable = numpy.empty_like(host)
        copy_rate = nbytes / best(lambda: numpy.copyto(pageable, host)) / 1e9
        pinned = numpy.frombuffer(cupy.cuda.alloc_pinned_memory(nbytes), host.dtype, host.size)
        wc_memory = cupy.cuda.PinnedMemory(nbytes, runtime.hostAllocWriteCombined)
        pinned_wc = numpy.frombuffer(cupy.cuda.PinnedMemoryPointer(wc_memory, 0), host.dtype, host.size)
        row = [f"{mib} MiB: host memcpy one thread {copy_rate:.1f}"]
        for threads in (8, 16):
            parts = numpy.array_split(numpy.arange(host.size), threads)
            with ThreadPoolExecutor(threads) as pool:
                for label, target in (("pinned", pinned), ("write-combined pinned", pinned_wc)):
                    def parallel_copy() -> None:
                        list(pool.map(lambda p: numpy.copyto(target[p[0]:p[-1] + 1], host[p[0]:p[-1] + 1]), parts))

                    row.append(f"{threads} threads into {label} {nbytes / best(parallel_copy) / 1e9:.1f}")
        parts = numpy.array_split(numpy.arange(host.size), 8)
        for chunk_mib, workers, wc in ((4, 8, False), (4, 8, True), (8, 8, True), (16, 8, True), (4, 12, True),
                                       (4, 16, True), (2, 16, True)):
            backend._stager = _PinnedStager(cupy, chunk_mib << 20, workers, write_combined=wc)
            backend.from_host(host)
            t = best(lambda: backend.from_host(host))
            assert numpy.array_equal(backend.to_host(backend.from_host(host)), host)
            row.append(f"c{chunk_mib}w{workers}{' wc' if wc else ''} {nbytes / t / 1e9:.1f}")
            backend._stager._pool.shutdown()
        dst = cupy.empty(host.shape, host.dtype)

        def registered() -> None:
            runtime.hostRegister(host.ctypes.data, nbytes, 0)
            runtime.memcpy(dst.data.ptr, host.ctypes.data, nbytes, 1)
            runtime.hostUnregister(host.ctypes.data)

        row.append(f"hostRegister {nbytes / best(registered) / 1e9:.1f}")
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(8)]
        slices = [(int(p[0]) * 8, (int(p[-1]) + 1) * 8) for p in parts]

        def one(i: int) -> None:
            lo, hi = slices[i]
            runtime.memcpyAsync(dst.data.ptr + lo, host.ctypes.data + lo, hi - lo, 1, streams[i].ptr)
            streams[i].synchronize()

        with ThreadPoolExecutor(8) as threads:
            rate = nbytes / best(lambda: list(threads.map(one, range(8)))) / 1e9
        row.append(f"pageable on 8 threads {rate:.1f}")
        backend._stager = None  # the default stager
        backend.from_host(host)
        row.append(f"default {nbytes / best(lambda: backend.from_host(host)) / 1e9:.1f}")
        print("  " + " | ".join(row))
    backend._stager = saved


def threshold() -> None:
    print("\nplacement: a*b+c on host inputs, NumPy vs npgpu-cupy (upload + kernel), microseconds")
    print(f"{'n':>10} {'bytes in':>10} {'numpy':>10} {'npgpu':>10} {'npgpu dev-resident':>19}")
    for n in (10, 1000, 10_000, 100_000, 1_000_000, 10_000_000):
        rng = numpy.random.default_rng(1)
        a, b, c = (rng.random(n) for _ in range(3))
        t_np = best(lambda: a * b + c, 15)
        with npgpu.enable("cupy", threshold=0):
            t_up = best(lambda: npgpu.add(npgpu.multiply(a, b), c), 15)
            da, db, dc = (npgpu.asarray(x) for x in (a, b, c))
            t_dev = best(lambda: (da * db + dc, npgpu.sync()), 15)
        print(f"{n:>10} {3 * a.nbytes:>10} {t_np * 1e6:>10.1f} {t_up * 1e6:>10.1f} {t_dev * 1e6:>19.1f}")


def e8() -> None:
    from cupyx.profiler import benchmark

    print("\nE8 = ((a*b+c)*a-b)/(c+1.5) + sqrt(abs(a))*0.5 - exp(-b), n = 1e8, GPU time (CUDA events), ms")

    def e8_of(xp, a, b, c):
        return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)

    def e8_cupy(a, b, c):
        return e8_of(cupy, a, b, c)

    fused = cupy.fuse(e8_cupy)
    for dtype in ("float32", "float64"):
        n = 10**8
        a, b, c = (cupy.random.random(n, dtype=dtype) for _ in range(3))
        copy_src = cupy.empty(4 * n, dtype)
        copy_dst = cupy.empty_like(copy_src)
        t_copy = float(numpy.median(benchmark(lambda: cupy.copyto(copy_dst, copy_src), n_repeat=20).gpu_times))
        bandwidth = 2 * copy_src.nbytes / t_copy
        t_eager = float(numpy.median(benchmark(lambda: e8_of(cupy, a, b, c), n_repeat=10).gpu_times))
        t_fuse = float(numpy.median(benchmark(lambda: fused(a, b, c), n_repeat=20).gpu_times))
        with npgpu.enable("cupy"):
            da, db, dc = (npgpu.asarray(x) for x in (a, b, c))
            assert isinstance(da, npgpu.DeviceArray)
            ours = lambda: npgpu.asnumpy(e8_of(npgpu, da, db, dc)[:1])  # noqa: E731  (materializes)
            t_ours = float(numpy.median(benchmark(ours, n_repeat=20).gpu_times))

            def on_device() -> Any:  # (as cupy.fuse's: the result left on the device, nothing read back)
                result = e8_of(npgpu, da, db, dc)
                npgpu.sync()  # (runs the one fused kernel, and waits for it)
                return result

            t_device = float(numpy.median(benchmark(on_device, n_repeat=20).gpu_times))

            def launched() -> Any:  # (as cupy.fuse's call is timed: launched on the stream, not waited for)
                # (``_native`` runs the one fused kernel: queued on the current stream, which the events bound)
                return e8_of(npgpu, da, db, dc)._native

            run = benchmark(launched, n_repeat=20)
            t_launched, t_launch_cpu = float(numpy.median(run.gpu_times)), float(numpy.median(run.cpu_times))
            fuse_cpu = float(numpy.median(benchmark(lambda: fused(a, b, c), n_repeat=20).cpu_times))
            got = e8_of(npgpu, da, db, dc)
            head = [x[: 10**6].get() for x in (a, b, c)]  # NumPy's answer on the first million
            want = e8_of(numpy, *head)
            tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
            close = bool(numpy.allclose(got._native[: 10**6].get(), want, **tolerance))
            record = timeit_record(da, db)
            # Split the npgpu time: recording the 13 calls (CPU) and the fused kernel alone (GPU).
            from npgpu.lazy import materialize as lazy

            pending = e8_of(npgpu, da, db, dc)
            state = lazy._GraphState()
            graph = state.graph(pending, pending.dtype)
            backend = da._backend
            kernel_times = {}
            saved_options = backend.NVRTC_OPTIONS
            for label, options in (("fma off", saved_options), ("fma on", ())):
                backend.NVRTC_OPTIONS = options
                backend._kernels.clear()
                run = benchmark(lambda: backend.run_fused(graph, state.inputs, state.scalars, (n,)), n_repeat=20)
                kernel_times[label] = float(numpy.median(run.gpu_times))
            backend.NVRTC_OPTIONS = saved_options
            backend._kernels.clear()
            t_kernel = kernel_times["fma off"]
            t_record = float(numpy.median(benchmark(lambda: e8_of(npgpu, da, db, dc), n_repeat=20).cpu_times))
            share = 4 * a.nbytes / t_kernel / bandwidth
            fma = kernel_times["fma on"] * 1e3
            print(f"  {dtype}: npgpu fused kernel alone {t_kernel * 1e3:.3f} ms ({share:.0%} of copy; with FMA "
                  f"contraction {fma:.3f} ms); recording E8's 13 calls {t_record * 1e6:.0f} us")
            # (the figure timed as cupy.fuse's is: the events bound the CPU before the launch and the
            # kernel; on_device's also hold sync()'s wait and what follows it until the end event)
            print(f"  {dtype}: npgpu launched, not waited for, {t_launched * 1e3:.3f} ms GPU time (cupy.fuse "
                  f"{t_fuse * 1e3:.3f}), {t_launch_cpu * 1e6:.0f} us of CPU a call (cupy.fuse {fuse_cpu * 1e6:.0f}); "
                  f"synced {t_device * 1e3:.3f} ms")
        moved = 4 * a.nbytes
        print(f"  {dtype}: d2d copy {bandwidth / 1e12:.2f} TB/s | cupy eager {t_eager * 1e3:.2f} | cupy.fuse "
              f"{t_fuse * 1e3:.2f} | npgpu {t_ours * 1e3:.2f} ms with one element read back, {t_device * 1e3:.2f} "
              f"ms left on the device as cupy.fuse's = {moved / t_device / 1e12:.2f} TB/s "
              f"({moved / t_device / bandwidth:.0%} of copy) | same as NumPy: {close} | record one call: "
              f"{record:.2f} us")


def timeit_record(a, b) -> float:
    """CPU cost of recording one elementwise call (no launch), microseconds."""
    n = 20000
    t = time.perf_counter()
    for _ in range(n):
        a * b
    return (time.perf_counter() - t) / n * 1e6


if __name__ == "__main__":
    import sys

    print(npgpu.backends.get_backend("cupy").describe())
    sections = {"transfers": transfers, "grid": transfer_grid, "threshold": threshold, "e8": e8}
    for name in sys.argv[1:] or ["transfers", "threshold", "e8"]:
        sections[name]()
