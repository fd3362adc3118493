"""Run asv benchmark classes without asv (no repository or environment needed), median of repeats.

Used on the GPU machine, where the working tree arrives without its git history:
``python tools/run_suite.py benchmarks.bench_fusion_gpu TimeE8GPU [--repeat 10]``.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import itertools
import os
import statistics
import sys
import time
from typing import Any


def _sample(fn: Any, combo: tuple[Any, ...], repeat: int) -> list[float]:
    """``repeat`` per-call times, each the mean of enough calls to last about 2 ms, with the
    garbage collector off while timing, as timeit and asv do (after CuPy's import a collection
    that lands in a microsecond-scale body dominates it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _timed(fn, combo, repeat)
    finally:
        if enabled:
            gc.enable()


def _timed(fn: Any, combo: tuple[Any, ...], repeat: int) -> list[float]:
    fn(*combo)  # warm-up
    start = time.perf_counter()
    fn(*combo)
    number = max(1, int(0.002 / max(time.perf_counter() - start, 1e-9)))
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn(*combo)
        times.append((time.perf_counter() - start) / number)
    return times


def run(module_name: str, class_name: str, repeat: int, rounds: int) -> None:
    """Time every parameter combination ``rounds`` times over (the CPU of a machine just started
    runs the first calls slower); report each combination's best round."""
    cls: Any = getattr(importlib.import_module(module_name), class_name)
    params = cls.params if isinstance(cls.params[0], list) else [cls.params]
    names = getattr(cls, "param_names", [f"p{i}" for i in range(len(params))])
    methods = [m for m in dir(cls) if m.startswith(("time_", "track_"))]
    print(f"{module_name}.{class_name}  ({', '.join(names)})")
    best: dict[tuple[Any, ...], list[float]] = {}
    for _ in range(rounds):
        for combo in itertools.product(*params):
            bench = cls()
            try:
                bench.setup(*combo)
            except NotImplementedError as skipped:
                best[combo] = []
                print(f"  {combo}: skipped ({skipped})")
                continue
            for method in methods:
                fn = getattr(bench, method)
                if method.startswith("track_"):
                    print(f"  {combo} {method}: {fn(*combo):.3f} {getattr(fn, 'unit', '')}")
                    continue
                times = _sample(fn, combo, repeat)
                previous = best.get((*combo, method))
                if previous is None or statistics.median(times) < statistics.median(previous):
                    best[(*combo, method)] = times
            if hasattr(bench, "teardown"):
                bench.teardown(*combo)
    for key, times in best.items():
        if times:
            *combo, method = key
            print(f"  {tuple(combo)} {method}: median {statistics.median(times) * 1e6:.2f} us, "
                  f"min {min(times) * 1e6:.2f} us")


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout root
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("module")
    parser.add_argument("classes", nargs="+")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1, help="time everything this many times over; keep the best")
    opts = parser.parse_args(argv)
    for class_name in opts.classes:
        run(opts.module, class_name, opts.repeat, opts.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
