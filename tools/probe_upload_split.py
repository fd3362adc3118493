# ruff: noqa: B023  (each closure is timed before its loop variables change)
"""Can part of an upload skip the host copy? Staged upload alone against staged + page-locking.

``python tools/probe_upload_split.py``: for 64 and 256 MiB of NumPy data, GB/s (median of 9) of
(a) npgpu's staged upload, (b) cudaHostRegister + one DMA + unregister of the whole source, and
(c) a split: a fraction of the source page-locked in place and DMA'd on one thread while the
stager copies the rest through its pinned buffers on the others, at once.
"""

from __future__ import annotations

import statistics
import threading
import time

import cupy
import numpy

from npgpu.backends import get_backend

rt = cupy.cuda.runtime


def direct(src: numpy.ndarray, dst, stream) -> None:
    """Page-lock ``src`` where it is, DMA it, unlock it."""
    ptr, n = src.ctypes.data, src.nbytes
    rt.hostRegister(ptr, n, 0)
    try:
        rt.memcpyAsync(dst.data.ptr, ptr, n, 1, stream.ptr)
        stream.synchronize()
    finally:
        rt.hostUnregister(ptr)


def timed(fn, repeat: int = 9) -> float:
    times = []
    for _ in range(repeat):
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        fn()
        cupy.cuda.Device().synchronize()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    backend = get_backend("cupy")
    stream = cupy.cuda.Stream(non_blocking=True)
    for mib in (64, 256):
        n = mib << 20
        src = numpy.random.default_rng(0).integers(0, 255, n, dtype=numpy.uint8)
        dst = cupy.empty(n, numpy.uint8)
        stager = backend._stager_for_size(n)
        rows = {"staged": timed(lambda: stager.upload(src, dst)),
                "register whole": timed(lambda: direct(src, dst, stream))}
        page = 4096
        for fraction in (0.125, 0.25, 0.375, 0.5):
            cut = int(n * fraction) // page * page

            def split() -> None:
                side = threading.Thread(target=direct, args=(src[:cut], dst[:cut], stream))
                side.start()
                stager.upload(src[cut:], dst[cut:])
                side.join()

            rows[f"split {fraction:.3f} registered"] = timed(split)
        assert bool((dst[:16].get() == src[:16]).all()) and bool((dst[-16:].get() == src[-16:]).all())
        print(f"{mib} MiB: " + " | ".join(f"{k} {n / t / 1e9:.1f} GB/s" for k, t in rows.items()))


if __name__ == "__main__":
    main()
