"""Matrix products: square matmul, matrix-vector and a batched product, float64 and float32.

Parametrized over backend, size and dtype.
"""

from __future__ import annotations

from .common import BACKENDS, BackendBenchmark, random_array


class TimeMatmul(BackendBenchmark):
    params = [BACKENDS, [64, 512, 2048], ["float64", "float32"]]
    param_names = ["backend", "n", "dtype"]

    def setup(self, backend: str, n: int, dtype: str) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array((n, n), seed=1).astype(dtype))
        self.b = self.to_backend(random_array((n, n), seed=2).astype(dtype))
        self.v = self.to_backend(random_array(n, seed=3).astype(dtype))
        self.finish(self.a @ self.b)

    def time_matmul(self, backend: str, n: int, dtype: str) -> None:
        self.finish(self.a @ self.b)

    def time_matvec(self, backend: str, n: int, dtype: str) -> None:
        self.finish(self.a @ self.v)


class TimeBatchedMatmul(BackendBenchmark):
    params = [BACKENDS, [16, 64]]
    param_names = ["backend", "n"]

    def setup(self, backend: str, n: int) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array((1000, n, n), seed=4))
        self.finish(self.xp.matmul(self.a, self.a))

    def time_batched(self, backend: str, n: int) -> None:
        self.finish(self.xp.matmul(self.a, self.a))
