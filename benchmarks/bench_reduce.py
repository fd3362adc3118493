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


class TimeReduceOrdered(BackendBenchmark):
    """Float sums in NumPy's order (npgpu/kernels/order.py) where that order costs a device its
    parallelism: a tall, narrow array summed along its long axis (one sequential fold per
    output, as NumPy's), its transpose, and a sliced block (a Dask chunk's view) summed whole."""

    params = [BACKENDS, ["tall axis 0", "transposed axis 1", "chunk view"]]
    param_names = ["backend", "case"]

    def setup(self, backend: str, case: str) -> None:
        self.setup_backend(backend, threshold=0)  # (on the device whatever the placement: its sums are timed)
        self.a = self.to_backend(random_array((1_000_000, 8)))
        self.run = {
            "tall axis 0": lambda: self.xp.sum(self.a, axis=0),
            "transposed axis 1": lambda: self.xp.sum(self.a.T, axis=1),
            "chunk view": lambda: self.xp.sum(self.a[1000:-1000, 1:7]),
        }[case]
        self.finish(self.run())

    def time_sum(self, backend: str, case: str) -> None:
        self.finish(self.run())
