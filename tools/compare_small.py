# ruff: noqa: B023  (each lambda is timed before its loop variables change)
"""NumPy against npgpu on the asv small-array bodies, in interleaved rounds of one process.

``python tools/compare_small.py [backend ...]`` (default: cupy when usable, else opencl). The
H200 host's per-call times drift by up to 2x within one process (NumPy's own 0.4 us multiply
measured 0.37-0.70 us from step to step), so timing all of NumPy's rows and then all of npgpu's
compares two different machines. Here every round times each body under NumPy and under npgpu
back to back; the table gives the median over rounds of each round's best.
"""

from __future__ import annotations

import gc
import statistics
import sys
import timeit
from pathlib import Path

import numpy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import npgpu  # noqa: E402
from benchmarks.bench_dispatch import TimeSmallArrays, small_workload  # noqa: E402
from benchmarks.common import random_array  # noqa: E402
from npgpu.backends import unavailable_reason  # noqa: E402


def bodies(xp, a, b):
    holder = type("Holder", (), {"xp": xp, "a": a, "b": b})()
    n = a.size
    return {
        "workload": lambda: small_workload(xp, a, b),
        "single ufunc": lambda: xp.multiply(a, b),
        "other functions": lambda: TimeSmallArrays.time_other_functions(holder, "", n),
        "creation": lambda: TimeSmallArrays.time_creation(holder, "", n),
    }


def main() -> None:
    names = sys.argv[1:] or ["cupy" if unavailable_reason("cupy") is None else "opencl"]
    gc.disable()
    for backend in names:
        print(f"npgpu-{backend} against NumPy: median over 15 rounds of the best of 5, us")
        for n in (10, 1_000, 10_000):
            a, b = random_array(n, seed=1), random_array(n, seed=2)
            with npgpu.enable(backend):
                da, db = npgpu.asarray(a), npgpu.asarray(b)
                ours, theirs = bodies(npgpu, da, db), bodies(numpy, a, b)
                times: dict[str, dict[str, list[float]]] = {k: {"numpy": [], "npgpu": []} for k in ours}
                for _ in range(15):
                    for key in ours:
                        for label, body in (("numpy", theirs[key]), ("npgpu", ours[key])):
                            body()
                            number = max(1, int(2e-3 / max(timeit.timeit(body, number=1), 1e-7)))
                            best = min(timeit.repeat(body, number=number, repeat=5)) / number
                            times[key][label].append(best * 1e6)
            for key, t in times.items():
                mine, base = statistics.median(t["npgpu"]), statistics.median(t["numpy"])
                print(f"  n={n:<6} {key:<16} numpy {base:8.2f}  npgpu {mine:8.2f}  {100 * (mine / base - 1):+6.1f}%")


if __name__ == "__main__":
    main()
