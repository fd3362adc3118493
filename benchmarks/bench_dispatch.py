"""Dispatch overhead: npgpu switched off against NumPy per call, and small arrays with acceleration on.

Small work should stay on the host, so these numbers should sit close to NumPy's (the design's invariant 3).
"""

from __future__ import annotations

from typing import Any

import numpy

from .common import BACKENDS, BackendBenchmark, npgpu, random_array


class TimeOffOverhead:
    """One call on a 10-element array: NumPy itself vs npgpu with acceleration off."""

    params = [["numpy", "npgpu-off"], ["add", "sin", "sum", "zeros", "concatenate", "getitem"]]
    param_names = ["module", "call"]

    def setup(self, module: str, call: str) -> None:
        self.state = npgpu.disable()
        xp: Any = numpy if module == "numpy" else npgpu
        a = numpy.arange(10.0)
        calls = {
            "add": lambda: a + a if xp is numpy else xp.add(a, a),
            "sin": lambda: xp.sin(a),
            "sum": lambda: xp.sum(a),
            "zeros": lambda: xp.zeros(10),
            "concatenate": lambda: xp.concatenate([a, a]),
            "getitem": lambda: a[3],
        }
        self.call = calls[call]

    def teardown(self, module: str, call: str) -> None:
        self.state.__exit__(None, None, None)

    def time_call(self, module: str, call: str) -> None:
        self.call()


def small_workload(xp: Any, a: Any, b: Any) -> float:
    """A typical handful of small-array operations ending in a scalar."""
    c = xp.sqrt(a * a + b * b)
    d = xp.where(c > 1.0, c - 1.0, 0.0)
    return float(xp.sum(d) + xp.max(c))


class TimeSmallArrays(BackendBenchmark):
    """Small arrays with acceleration on: placement should keep them on the host."""

    params = [BACKENDS, [10, 1_000, 10_000]]
    param_names = ["backend", "n"]

    def setup(self, backend: str, n: int) -> None:
        self.setup_backend(backend)
        self.a = self.xp.asarray(random_array(n, seed=1))
        self.b = self.xp.asarray(random_array(n, seed=2))
        small_workload(self.xp, self.a, self.b)

    def time_workload(self, backend: str, n: int) -> None:
        small_workload(self.xp, self.a, self.b)

    def time_single_ufunc(self, backend: str, n: int) -> None:
        self.xp.multiply(self.a, self.b)

    def time_creation(self, backend: str, n: int) -> None:
        """Arrays made from nothing and from host data at this size."""
        xp = self.xp
        xp.zeros(n)
        xp.arange(n)
        xp.asarray(self.a)
        xp.array([1.0, 2.0, 3.0])

    def time_other_functions(self, backend: str, n: int) -> None:
        """Functions without the reductions' shorter road: what the placement check costs."""
        xp, a, b = self.xp, self.a, self.b
        xp.where(a > b, a, b)
        xp.clip(a, 0.25, 0.75)
        xp.concatenate((a, b))
