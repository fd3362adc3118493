"""Reductions: full and along an axis, to a Python scalar (which includes the copy back).

Parametrized over backend, size and reduction.
"""

from __future__ import annotations

from .common import BACKENDS, BackendBenchmark, random_array

SIZES = [1_000, 100_000, 10_000_000]
REDUCTIONS = ["sum", "mean", "max", "std", "argmax"]


class TimeReduce(BackendBenchmark):
    params = [BACKENDS, SIZES, REDUCTIONS]
    param_names = ["backend", "n", "reduction"]

    def setup(self, backend: str, n: int, reduction: str) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array(n))
        self.func = getattr(self.xp, reduction)
        float(self.func(self.a))

    def time_full(self, backend: str, n: int, reduction: str) -> None:
        float(self.func(self.a))


class TimeReduceAxis(BackendBenchmark):
    params = [BACKENDS, [100, 1_000, 3_000], [0, 1]]
    param_names = ["backend", "side", "axis"]

    def setup(self, backend: str, side: int, axis: int) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array((side, side)))
        self.finish(self.xp.sum(self.a, axis=axis))

    def time_sum_axis(self, backend: str, side: int, axis: int) -> None:
        self.finish(self.xp.sum(self.a, axis=axis))
