"""Run asv benchmark classes without asv (no repository or environment needed), median of repeats.

Used on the GPU machine, where the working tree arrives without its git history:
``python tools/run_suite.py benchmarks.bench_fusion_gpu TimeE8GPU [--repeat 10]``.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import os
import statistics
import sys
import time
from typing import Any


def run(module_name: str, class_name: str, repeat: int) -> None:
    cls: Any = getattr(importlib.import_module(module_name), class_name)
    params = cls.params if isinstance(cls.params[0], list) else [cls.params]
    names = getattr(cls, "param_names", [f"p{i}" for i in range(len(params))])
    methods = [m for m in dir(cls) if m.startswith(("time_", "track_"))]
    print(f"{module_name}.{class_name}  ({', '.join(names)})")
    for combo in itertools.product(*params):
        bench = cls()
        try:
            bench.setup(*combo)
        except NotImplementedError as skipped:
            print(f"  {combo}: skipped ({skipped})")
            continue
        for method in methods:
            fn = getattr(bench, method)
            if method.startswith("track_"):
                print(f"  {combo} {method}: {fn(*combo):.3f} {getattr(fn, 'unit', '')}")
                continue
            fn(*combo)  # warm-up
            times = []
            for _ in range(repeat):
                start = time.perf_counter()
                fn(*combo)
                times.append(time.perf_counter() - start)
            print(f"  {combo} {method}: median {statistics.median(times) * 1e3:.4f} ms, min {min(times) * 1e3:.4f} ms")
        if hasattr(bench, "teardown"):
            bench.teardown(*combo)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout root
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("module")
    parser.add_argument("classes", nargs="+")
    parser.add_argument("--repeat", type=int, default=10)
    opts = parser.parse_args(argv)
    for class_name in opts.classes:
        run(opts.module, class_name, opts.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
