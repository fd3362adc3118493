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


class TimeHostSumsOverAxes(BackendBenchmark):
    """A loop of 100 sums over a tuple of axes of host arrays (a convolution's per-pixel sums of a
    window times its weights): the small one (131 kB of float32) below every placement threshold,
    the large one (590 kB of float64) above the GPUs' upload thresholds, where the one-pass rule
    keeps a reduction in NumPy by the measured costs. Against the numpy row: what npgpu's road to
    NumPy's answer costs a call (resnet's 9408 such sums a call were 6 us each above NumPy's time)."""

    params = [BACKENDS, ["small float32", "large float64"]]
    param_names = ["backend", "product"]

    def setup(self, backend: str, product: str) -> None:
        self.setup_backend(backend)
        shape, dtype = ((8, 1, 1, 128, 32), "float32") if product == "small float32" else ((8, 3, 3, 32, 32), "float64")
        self.host = random_array(shape).astype(dtype)
        self.finish(self.xp.sum(self.host, axis=(1, 2, 3)))

    def time_loop(self, backend: str, product: str) -> None:
        for _ in range(100):
            self.xp.sum(self.host, axis=(1, 2, 3))
        self.sync()
