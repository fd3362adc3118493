"""Single ufunc calls on arrays already placed by the backend: the basic per-element throughput.

Parametrized over backend, size and ufunc; the device result is synchronized inside the timed body.
"""

from __future__ import annotations

from .common import BACKENDS, BackendBenchmark, random_array

SIZES = [1_000, 100_000, 10_000_000]
UNARY = ["sqrt", "exp", "sin", "log", "abs"]
BINARY = ["add", "multiply", "divide", "power", "maximum"]


class TimeUnary(BackendBenchmark):
    params = [BACKENDS, SIZES, UNARY]
    param_names = ["backend", "n", "ufunc"]

    def setup(self, backend: str, n: int, ufunc: str) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array(n))
        self.func = getattr(self.xp, ufunc)
        self.finish(self.func(self.a))  # compile the kernel before timing

    def time_ufunc(self, backend: str, n: int, ufunc: str) -> None:
        self.finish(self.func(self.a))


class TimeBinary(BackendBenchmark):
    params = [BACKENDS, SIZES, BINARY]
    param_names = ["backend", "n", "ufunc"]

    def setup(self, backend: str, n: int, ufunc: str) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array(n, seed=1))
        self.b = self.to_backend(random_array(n, seed=2))
        self.func = getattr(self.xp, ufunc)
        self.finish(self.func(self.a, self.b))

    def time_ufunc(self, backend: str, n: int, ufunc: str) -> None:
        self.finish(self.func(self.a, self.b))

    def time_with_scalar(self, backend: str, n: int, ufunc: str) -> None:
        self.finish(self.func(self.a, 1.5))


class TimeInplace(BackendBenchmark):
    params = [BACKENDS, SIZES]
    param_names = ["backend", "n"]

    def setup(self, backend: str, n: int) -> None:
        self.setup_backend(backend)
        self.a = self.to_backend(random_array(n, seed=3))
        self.a *= 1.0

    def time_iadd(self, backend: str, n: int) -> None:
        self.a += 1.0
        self.finish(self.a)


class TimeTransposed(BackendBenchmark):
    """Elementwise work on a transposed (F-ordered) operand: NumPy lays the result out as the
    operand is, and a device that walks the memory order reads and writes contiguous runs."""

    params = [BACKENDS, [1_000, 4_000_000]]
    param_names = ["backend", "n"]

    def setup(self, backend: str, n: int) -> None:
        self.setup_backend(backend)
        side = int(n**0.5)
        self.a = self.to_backend(random_array(side * side, seed=4).reshape(side, side))
        self.finish(self.a.T * 2.0 + 1.0)

    def time_chain(self, backend: str, n: int) -> None:
        self.finish(self.a.T * 2.0 + 1.0)

    def time_unary(self, backend: str, n: int) -> None:
        self.finish(self.xp.sqrt(self.a.T))
