# ruff: noqa: B023  (each closure is timed before its loop variables change)
"""E8 through npgpu's OpenCL backend on the first OpenCL GPU (or CPU): wall time with a sync, median.

``python tools/measure_opencl.py [n]``; compares with NumPy on the same machine.
``python tools/measure_opencl.py placement``: single operations (add, sin, sum) on device arrays and
on host inputs (upload included) against NumPy from 1e4 to 1e7 float64 elements: the measurements
behind the backend's creation and upload thresholds.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy

import npgpu


def e8(xp, a, b, c):
    return ((a * b + c) * a - b) / (c + 1.5) + xp.sqrt(xp.abs(a)) * 0.5 - xp.exp(-b)


def median_time(fn, repeat=10):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**7
    with npgpu.enable("opencl", threshold=0):
        backend = npgpu.asarray(numpy.zeros(1))._backend
        print(backend.describe())
        for dtype in ("float32", "float64"):
            hosts = [numpy.random.default_rng(s).random(n).astype(dtype) for s in (1, 2, 3)]
            a, b, c = (npgpu.asarray(h) for h in hosts)

            def fused():
                result = e8(npgpu, a, b, c)
                npgpu.sync()
                return result

            t_dev = median_time(fused)
            t_np = median_time(lambda: e8(numpy, *hosts), 3)
            same = numpy.allclose(npgpu.asnumpy(fused()), e8(numpy, *hosts), rtol=1e-5, atol=1e-6)
            print(f"E8 {dtype} n={n}: numpy {t_np * 1e3:.2f} ms, npgpu-opencl {t_dev * 1e3:.3f} ms "
                  f"({t_np / t_dev:.1f}x), {4 * hosts[0].nbytes / t_dev / 1e9:.0f} GB/s, same values: {same}")


def placement() -> None:
    ops = {"add": lambda xp, a, b: xp.add(a, b), "sin": lambda xp, a, b: xp.sin(a), "sum": lambda xp, a, b: xp.sum(a)}
    print("ms, median of 10 (device: arrays already on the device; upload: NumPy inputs moved for the one op)")
    print(f"{'n':>10} {'op':>4} {'numpy':>8} {'device':>8} {'upload':>8}")
    for n in (10**4, 10**5, 10**6, 2 * 10**6, 10**7):
        hosts = [numpy.random.default_rng(s).random(n) for s in (1, 2)]
        for name, op in ops.items():
            t_np = median_time(lambda: op(numpy, *hosts))
            with npgpu.enable("opencl", threshold=0):
                devs = [npgpu.asarray(h) for h in hosts]

                def on_device():
                    result = op(npgpu, *devs)
                    npgpu.sync()
                    return result

                def uploaded():
                    result = op(npgpu, *(npgpu.asarray(h) for h in hosts))
                    npgpu.sync()
                    return result

                t_dev, t_up = median_time(on_device), median_time(uploaded)
            print(f"{n:>10} {name:>4} {t_np * 1e3:>8.3f} {t_dev * 1e3:>8.3f} {t_up * 1e3:>8.3f}")


if __name__ == "__main__":
    if sys.argv[1:] == ["placement"]:
        placement()
    else:
        main()
