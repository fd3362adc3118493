"""Sorting and what is built on it: sort, argsort, unique, median, searchsorted, bincount, histogram.

Device arrays in, results waited for. On a CPU OpenCL device the sorts run in NumPy by choice
(backends/opencl/sorting.HOST_ON_CPU); on GPUs they are PyOpenCL's radix sort.
"""

from __future__ import annotations

from typing import Any

import numpy

from .common import BACKENDS, BackendBenchmark, random_array

SIZES = [100_000, 10_000_000]
CALLS = ["sort", "argsort_stable", "sort_rows", "unique", "median", "searchsorted", "bincount", "histogram"]


class TimeSorting(BackendBenchmark):
    params = [BACKENDS, SIZES, CALLS]
    param_names = ["backend", "n", "call"]

    def setup(self, backend: str, n: int, call: str) -> None:
        self.setup_backend(backend, threshold=0)
        xp = self.xp
        a = self.to_backend(random_array(n))
        counts = self.to_backend(numpy.random.default_rng(1).integers(0, 1000, n))
        rows = self.to_backend(random_array((n // 1000, 1000), seed=2))
        edges = self.to_backend(numpy.sort(random_array(1000, seed=3)))
        calls: dict[str, Any] = {
            "sort": lambda: xp.sort(a),
            "argsort_stable": lambda: xp.argsort(a, kind="stable"),
            "sort_rows": lambda: xp.sort(rows, axis=1),
            "unique": lambda: xp.unique(counts),
            "median": lambda: xp.median(a),
            "searchsorted": lambda: xp.searchsorted(edges, a),
            "bincount": lambda: xp.bincount(counts),
            "histogram": lambda: xp.histogram(a, bins=100)[0],
        }
        self.call = calls[call]
        self.finish(self.call())

    def time_call(self, backend: str, n: int, call: str) -> None:
        self.finish(self.call())
