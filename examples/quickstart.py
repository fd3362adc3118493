"""npgpu in thirty seconds: the same NumPy code, accelerated where a device can run it.

Run from a checkout: python examples/quickstart.py [n]   (default 10 million points)

It runs where acceleration pays here: the backend "auto" picks (CuPy on a CUDA GPU, else an
OpenCL GPU), or, on a machine whose only OpenCL device is a CPU (PoCL), that CPU device, which
runs large fused elementwise work and reductions on all its cores. Where neither exists it runs
on NumPy and says what it would take. Its report shows what ran on the device, the fusion and
what moved.
"""

import os
import sys
import time

import numpy

try:
    import npgpu as np
except ImportError:  # a plain checkout, not yet `pip install -e .`: use the package next door
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import npgpu as np


def compute(xp, x, w):
    y = xp.sin(x) * 2.0 + x**2  # elementwise: fused into one kernel on a device
    return float((y * w).mean()), float(y.max())  # each a map-reduce kernel: only a scalar comes back


def pick_backend():
    """auto's choice, or the CPU's OpenCL device where auto passes over it (it pays for this work)."""
    why = np.explain()
    if why.choice != "numpy":
        return why.choice, f"'auto' picks {why.choice}: {why.reason}"
    opencl = next(c for c in why.candidates if c.name == "opencl")
    if opencl.usable:
        return "opencl", ("'auto' would pick numpy (no GPU here); this work pays on the CPU's OpenCL device, so it "
                          "asks for enable('opencl')")
    return "numpy", f"no device here: {why.reason}. To accelerate: {why.hint}"


def timed(xp, backend, x_host, w_host):
    with np.enable(backend):
        start = time.perf_counter()
        x = xp.linspace(0.0, 1.0, x_host.size)  # made on the device when it is large enough
        w = xp.asarray(w_host)  # host data: uploaded from the upload threshold
        result = compute(xp, x, w)
        np.sync()
        return result, time.perf_counter() - start


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
    x_host = numpy.linspace(0.0, 1.0, n)
    w_host = numpy.random.default_rng(0).random(n)
    backend, why = pick_backend()

    start = time.perf_counter()
    expected_mean, expected_peak = compute(numpy, x_host, w_host)
    numpy_seconds = time.perf_counter() - start
    timed(np, backend, x_host, w_host)  # a first run builds (and caches) the kernels
    np.report(reset=True)
    (mean, peak), npgpu_seconds = timed(np, backend, x_host, w_host)

    print(f"weighted mean of 2 sin(x) + x^2 over {n} points: {mean:.10f}   (NumPy: {expected_mean:.10f})")
    print(f"max: {peak:.12f}   (NumPy: {expected_peak:.12f})")
    print(f"ran on the {backend!r} backend: {why}")
    ratio = numpy_seconds / npgpu_seconds
    verdict = f"{ratio:.1f}x faster" if ratio >= 1 else f"{1 / ratio:.1f}x slower"
    print(f"time: npgpu {npgpu_seconds * 1e3:.1f} ms, NumPy {numpy_seconds * 1e3:.1f} ms ({verdict}; "
          "the second run, kernels built)")
    print()
    print(np.report())


if __name__ == "__main__":
    main()
